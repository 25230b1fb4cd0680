"""Prompt-lookup drafting for the local engine (:mod:`hf_rgda.llm.local.engine`): guess the next tokens from the context
itself and have the model check them in one decode.

The pipeline's answers repeat their prompts: a row keeps the seed's words around the entities it changes, an entity
is copied from the guidance, the JSON keys and marks come back every item. When the last few tokens written also
stand earlier in the context, the tokens that followed them there are a cheap guess at what comes next
(prompt-lookup decoding). The engine evaluates the sampled token and up to ``max_tokens`` such guesses in one decode,
with logits at each, and samples at each position in turn: a guess is kept only while it equals the token sampled
before it, so every output token is sampled from the model's own distribution, the random stream and the grammar
consumed token by token as without guesses (the output follows the same distribution, computed in a wider batch,
whose floating-point sums differ slightly: near ties can fall the other way).

Whether a guess pays depends on the machine. A decode of n tokens reads the weights once; where generation waits on
memory (a Xeon of this project's: four tokens in one decode cost 1.6 single decodes) a guess kept one time in two
pays, where it waits on arithmetic (an EPYC of this project's: 2.7) it does not. :class:`LookupDraft` therefore
measures as it goes: the seconds of decodes by their width and how many guesses are kept, and guesses only
as many tokens as its measurements say buy more tokens a second than none (trying every width now and then, so the
figures follow the machine's load).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LookupDraft", "lookup"]


def lookup(ids: Any, max_tokens: int, ngrams: tuple[int, ...] = (4, 3, 2)) -> Any:
    """The tokens that followed the last occurrence, before the end, of the context's last n tokens (the longest n
    of ``ngrams`` that occurs), at most ``max_tokens``; empty where none occurs.

    Example:
        >>> import numpy as np
        >>> lookup(np.array([5, 6, 7, 8, 9, 1, 5, 6, 7]), 3).tolist()
        [8, 9, 1]
        >>> lookup(np.array([5, 6, 7, 2, 6, 7, 3, 6, 7]), 2).tolist()  # the latest occurrence
        [3, 6]
        >>> lookup(np.array([1, 2, 3]), 4).tolist()
        []
    """
    import numpy as np

    ids = np.asarray(ids)
    size = ids.shape[0]
    for n in ngrams:
        if size <= n:
            continue
        tail = ids[size - n:]
        # occurrences that start before the tail and leave at least one token after them
        windows = np.lib.stride_tricks.sliding_window_view(ids[: size - 1], n)
        hits = np.flatnonzero((windows == tail).all(axis=1))
        if hits.size:
            start = int(hits[-1]) + n
            return ids[start: start + max_tokens].copy()
    return ids[:0].copy()


class LookupDraft:
    """A prompt-lookup drafter for llama-cpp-python's generation loop (its ``draft_model`` hook) that drafts only
    where its own measurements say it pays.

    Args:
        max_tokens: the most guesses checked in one decode. Past two tokens a decode's width costs little on the
            Xeon (5 tokens 1.8-2.1 single decodes, 9 tokens 2.1-2.5, by the hour), and the answers copy runs longer
            than 4 tokens (a row's unchanged words): 8 needs 7% fewer decodes than 4 in the main command
            (``docs/decisions/lookup.md``). The widths checked are still chosen by the measurements.
        mode: ``"auto"`` (guess as many tokens as the measurements favour, none included), ``"always"`` (guess up to
            ``max_tokens`` wherever the context has a match; for measurements), or ``"off"``.
        explore: every this many-th chance to guess tries a width the measurements have not favoured, so a figure
            measured under load is measured again.

    The engine reports each generation decode (:meth:`timed`) and each check of guesses (:meth:`checked`).
    """

    MODES = ("auto", "always", "off")

    def __init__(self, max_tokens: int = 8, mode: str = "auto", explore: int = 16) -> None:
        if mode not in self.MODES:
            raise ValueError(f"lookup mode {mode!r}: expected one of {', '.join(self.MODES)}")
        if max_tokens < 1:
            raise ValueError(f"lookup max_tokens={max_tokens} must be 1 or more")
        self.max_tokens = max_tokens
        self.mode = mode
        self.explore = explore
        #: width of a decode (tokens) -> [decodes, seconds]; generation decodes only
        self.cost: dict[int, list[float]] = {}
        self.chances = 0  # times the context had a match
        self.drafted = 0  # guesses evaluated
        self.kept = 0  # guesses equal to the token sampled before them
        self.checks = 0  # decodes that checked guesses
        self.rejections = 0  # checks that ended at a guess that was not kept
        self.pending = 0  # guesses in the decode about to run

    # -- measurements -------------------------------------------------------------------------------------------
    def timed(self, width: int, seconds: float) -> None:
        """One generation decode of ``width`` tokens took ``seconds``."""
        c = self.cost.setdefault(width, [0.0, 0.0])
        c[0] += 1
        c[1] += seconds
        if c[0] > 64:  # a moving figure: the machine's load changes
            c[0] /= 2
            c[1] /= 2

    def checked(self, kept: int, drafted: int) -> None:
        """A decode checked ``drafted`` guesses and ``kept`` of them were kept (the first ``kept``)."""
        self.checks += 1
        self.drafted += drafted
        self.kept += kept
        if kept < drafted:
            self.rejections += 1

    def seconds(self, width: int) -> float | None:
        c = self.cost.get(width)
        return c[1] / c[0] if c and c[0] else None

    @property
    def keep_rate(self) -> float | None:
        """The chance that a guess is kept given the guesses before it were (the geometric model's estimate)."""
        trials = self.kept + self.rejections
        return self.kept / trials if trials else None

    def best_width(self, available: int) -> int:
        """How many of ``available`` guesses to check: the width whose expected tokens a second are highest."""
        if self.mode == "off" or available == 0:
            return 0
        if self.mode == "always":
            return available
        self.chances += 1
        unmeasured = [m for m in range(available + 1) if self.seconds(m + 1) is None]
        rate = self.keep_rate
        if unmeasured or rate is None:
            return unmeasured[-1] if unmeasured else available
        if self.explore and self.chances % self.explore == 0:
            return 1 + (self.chances // self.explore) % available  # each width in turn
        best, best_speed = 0, 0.0
        for m in range(available + 1):
            expected = 1 + sum(rate ** j for j in range(1, m + 1))
            speed = expected / self.seconds(m + 1)  # type: ignore[operator]
            if speed > best_speed:
                best, best_speed = m, speed
        return best

    # -- llama-cpp-python's draft hook ---------------------------------------------------------------------------
    def __call__(self, input_ids: Any, /, **_: Any) -> Any:
        guesses = lookup(input_ids, self.max_tokens) if self.mode != "off" else input_ids[:0]
        guesses = guesses[: self.best_width(len(guesses))]
        self.pending = len(guesses)
        return guesses

    def stats(self) -> dict[str, Any]:
        """The drafter's figures, for benchmarks."""
        return {"mode": self.mode, "max_tokens": self.max_tokens, "chances": self.chances, "checks": self.checks,
                "drafted": self.drafted, "kept": self.kept, "keep_rate": self.keep_rate,
                "seconds_by_width": {w: round(self.seconds(w) or 0.0, 5) for w in sorted(self.cost)}}
