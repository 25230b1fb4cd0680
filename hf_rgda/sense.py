"""Does a sentence make sense? A reading of the model's own token probabilities, for a gate that works with a small
model where its judges do not (the local 1.5B's AC judge ranks canaries at chance).

The sentence, detokenized, follows a few of the split's own sentences under a plain line naming the domain (the
*shots*: :attr:`SplitStats.examples <hf_rgda.checking.SplitStats>`), and the model's log-probability of each of its
tokens is read in one prompt evaluation (:meth:`hf_rgda.llm.LLM.text_logprobs`, no generation). A sentence's *sense*
is the mean of its ``k`` least likely tokens (default 3): garbled word order, clauses of two sentences spliced, an
entity moved where it has no business and off-domain text each put a few very unlikely tokens in a sentence, which a
mean over every token dilutes. A score is that read as a probability, ``exp(sense)``.

The gate's threshold comes from the split too: the other example sentences are read the same way and a row scoring
below their ``quantile`` (default 0.1) is rejected, so the bar is the data's own, for any domain and model, with no
calibration run; ``sense_threshold`` above 0 sets an absolute one instead. Readings are kept in the response cache
(:func:`hf_rgda.cache.text_key`): a rerun reads nothing again.

Why these choices, with figures (three datasets' canaries, local 1.5B): ``docs/decisions/sense-gate.md``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

from .cache import ResponseCache, text_key
from .llm.base import LLM
from .tags import detokenize

__all__ = ["LEAST_LIKELY", "QUANTILE", "SHOTS", "Reader", "prefix", "quantile", "sense", "sense_scores"]

#: how many of a sentence's least likely tokens its sense averages
LEAST_LIKELY = 3
#: how many of the split's example sentences stand before the sentence read
SHOTS = 4
#: the share of the split's own sentences a row may read below and still pass
QUANTILE = 0.1


def prefix(domain: str, shots: Sequence[Sequence[str]] = ()) -> str:
    """The plain text a sentence is read after: a line naming the domain, then the ``shots`` one a line.

    Example:
        >>> prefix("clinical notes", [["Gout", "hurts", "."]])
        'Sentences from clinical notes:\\nGout hurts.\\n'
    """
    where = domain or "a text corpus"
    if not shots:
        return f"A sentence from {where}:\n"
    return f"Sentences from {where}:\n" + "".join(f"{detokenize(t)}\n" for t in shots)


def sense(logprobs: Sequence[float], k: int = LEAST_LIKELY) -> float:
    """The mean of the ``k`` lowest token logprobs (all of them for a shorter sentence; 0 for none).

    Example:
        >>> sense([-0.1, -5.0, -0.2, -3.0, -1.0])
        -3.0
    """
    low = sorted(logprobs)[:k]
    return sum(low) / len(low) if low else 0.0


def quantile(scores: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``scores`` (linear between order statistics, as ``numpy.quantile``).

    Example:
        >>> quantile([0.1, 0.2, 0.3, 0.4, 0.5], 0.1)
        0.14
    """
    if not scores:
        raise ValueError("no scores")
    import numpy

    return round(float(numpy.quantile(scores, q)), 12)


async def _logprobs(llm: LLM, head: str, texts: Sequence[str], cache: ResponseCache | None) -> list[list[float]]:
    """Each text's token logprobs after ``head``, from the cache where it holds them (the rest read in one call)."""
    identity = llm.identity()
    keys = [text_key(identity, head, t) for t in texts] if cache is not None else []
    out: list[list[float] | None] = [cache.get_logprobs(k) for k in keys] if cache is not None else [None] * len(texts)
    todo = [i for i, x in enumerate(out) if x is None]
    if todo:
        read = await llm.text_logprobs(head, [texts[i] for i in todo])
        for i, lp in zip(todo, read):
            out[i] = list(lp)
            if cache is not None:
                cache.put_logprobs(keys[i], lp)
    return [x or [] for x in out]


async def sense_scores(llm: LLM, domain: str, sentences: Sequence[Sequence[str]], *,
                       shots: Sequence[Sequence[str]] = (), cache: ResponseCache | None = None) -> list[float]:
    """``exp(sense)`` of each tokenized sentence under ``llm`` after :func:`prefix`, in (0, 1] (one prompt
    evaluation each, the prefix's cells reused; none for a reading ``cache`` holds)."""
    read = await _logprobs(llm, prefix(domain, shots), [detokenize(t) for t in sentences], cache)
    return [math.exp(sense(lp)) for lp in read]


class Reader:
    """The sense readings of one run: its shots, and the threshold its reference sentences set.

    Args:
        llm: the backend (one that :attr:`~hf_rgda.llm.LLM.scores_text`).
        domain: the data's domain.
        examples: the split's example sentences (:attr:`SplitStats.examples <hf_rgda.checking.SplitStats>`): the
            first :data:`SHOTS` stand before every sentence read, the rest are the reference.
        q: the reference's quantile that is the threshold.
        threshold: an absolute threshold instead (above 0).
        cache: where readings are kept.
    """

    def __init__(self, llm: LLM, domain: str, examples: Sequence[Sequence[str]], *, q: float = QUANTILE,
                 threshold: float = 0.0, cache: ResponseCache | None = None) -> None:
        self.llm, self.domain, self.q, self.cache = llm, domain, q, cache
        self.shots, self.reference = list(examples[:SHOTS]), list(examples[SHOTS:])
        self._threshold: float | None = threshold if threshold > 0 else None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None

    async def scores(self, sentences: Sequence[Sequence[str]]) -> list[float]:
        """Each sentence's score after the shots."""
        return await sense_scores(self.llm, self.domain, sentences, shots=self.shots, cache=self.cache)

    async def threshold(self) -> float | None:
        """The absolute threshold, else the reference's quantile (read once a reader); None without reference
        sentences."""
        if self._threshold is not None or not self.reference:
            return self._threshold
        loop = asyncio.get_running_loop()  # a pipeline's batches each run in their own event loop
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:  # the seeds of a batch ask at once: the reference is read by the first
            if self._threshold is None:
                self._threshold = quantile(await self.scores(self.reference), self.q)
        return self._threshold
