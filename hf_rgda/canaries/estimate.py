"""What a calibration will cost, found before it starts by rehearsing it (:mod:`hf_rgda.estimate`, the one
estimator): every scorer runs on every canary against scripted answers under the real backend's identity, reading the
response cache but never writing it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..cache import ResponseCache
from ..estimate import Estimate, PeekCache, Rehearsal, estimate_of
from ..llm.base import LLM
from ..pricing import PriceTable
from .build import Canary
from .judges import SCORERS, Judges, score_cell

__all__ = ["rehearse"]


async def rehearse(llm: LLM, judges: Callable[[LLM, ResponseCache | None], Judges], scorers: Sequence[str],
                   canaries: Sequence[Canary], cache: ResponseCache | None,
                   prices: PriceTable | None = None) -> Estimate:
    """The :class:`Estimate` of scoring ``canaries`` with ``scorers`` on ``llm``.

    Args:
        judges: builds the judges of the run from a backend and a cache.
        cache: the run's response cache, or None.
    """
    fake = Rehearsal(llm)
    peek = None if cache is None else PeekCache(cache.path)
    dry = judges(fake, peek)
    cached = 0
    try:
        for name in scorers:
            cached += (await score_cell(SCORERS[name], dry, canaries))["cached_calls"]
    finally:
        if peek is not None:
            peek.close()
    return estimate_of([fake], cached, prices)
