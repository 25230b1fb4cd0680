"""Does a sentence make sense? A reading of the model's own token probabilities, for a gate that works with a small
model where its judges do not (the local 1.5B's AC judge ranks canaries at chance).

The sentence, detokenized, follows a neutral plain-text line naming the domain; the model's log-probability of each
of its tokens is read in one prompt evaluation (:meth:`hf_rgda.llm.LLM.text_logprobs`, no generation). A sentence's
*sense* is the mean of its ``k`` least likely tokens (default 3): garbled word order, clauses of two sentences
spliced, an entity moved where it has no business and off-domain text each put a few very unlikely tokens in a
sentence, which a mean over every token dilutes. The gate and the calibration scorer read it as a probability,
``exp(sense)`` (the geometric mean probability of those tokens), against an absolute threshold that calibration sets
per dataset and model. Read relative to the seed instead (``sense(row) - sense(seed)``) it ranked NCBI-disease's
canaries worse (``benchmarks/results/calibration/calibration_sense.json``: garbled 0.805 against 0.964 for the row alone).

Measured before this module (scratch probe, NCBI-disease dev, 40 sentences against 40 of each class, local 1.5B):
AUROC against good sentences, mean of all tokens / mean of the 3 least likely: garbled 0.989 / 0.969, spliced
0.777 / 0.817, another dataset's entity in place of this one's 0.544 / 0.831, off-domain 0.700 / 0.821; pooled
0.813 / 0.868. ``hf-rgda calibrate --scorers sense`` measures it on your data's canaries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .llm.base import LLM
from .tags import detokenize

__all__ = ["LEAST_LIKELY", "prefix", "sense", "sense_scores"]

#: how many of a sentence's least likely tokens its sense averages
LEAST_LIKELY = 3


def prefix(domain: str) -> str:
    """The plain-text line a sentence is read after."""
    return f"A sentence from {domain or 'a text corpus'}:\n"


def sense(logprobs: Sequence[float], k: int = LEAST_LIKELY) -> float:
    """The mean of the ``k`` lowest token logprobs (all of them for a shorter sentence; 0 for none).

    Example:
        >>> sense([-0.1, -5.0, -0.2, -3.0, -1.0])
        -3.0
    """
    low = sorted(logprobs)[:k]
    return sum(low) / len(low) if low else 0.0


async def sense_scores(llm: LLM, domain: str, sentences: Sequence[Sequence[str]]) -> list[float]:
    """``exp(sense)`` of each tokenized sentence under ``llm``, in (0, 1] (one prompt evaluation each, the prefix's
    cells reused)."""
    logprobs = await llm.text_logprobs(prefix(domain), [detokenize(t) for t in sentences])
    return [math.exp(sense(lp)) for lp in logprobs]
