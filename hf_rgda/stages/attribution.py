"""WHERE: leave-one-out attribution picks the seed's words to replace (the selector itself is
:class:`hf_rgda.attribution.AttributionSelector`)."""

from __future__ import annotations

from typing import Any

from ..records import SeedResult
from .registry import Stage, register

__all__ = ["Where"]


class Where:
    """Records the selector's word scores and chosen words on the seed (``r.attribution``).

    Args:
        selector: anything with ``attribute(tokens, tags)`` returning a
            :class:`~hf_rgda.attribution.WordAttribution`.
    """

    def __init__(self, selector: Any) -> None:
        self.selector = selector

    async def __call__(self, r: SeedResult) -> None:
        r.attribution = self.selector.attribute(list(r.seed.tokens), list(r.seed.tags)).to_dict()


register(Stage("where", "where", state=lambda s: Where(s.attribution), when=lambda cfg: cfg.uses_attribution))
