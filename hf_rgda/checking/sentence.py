"""What a rule sees of one candidate sentence: its tokens and tags, the seed, and the checker's statistics and limits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

from ..records import Candidate, Seed
from ..tags import Span, tags_to_spans
from .stats import SplitStats

__all__ = ["Sentence", "Settings"]


class Settings(Protocol):
    """What the rules read of the checker (:class:`~hf_rgda.checking.Checker` is one)."""

    types: tuple[str, ...]
    stats: SplitStats
    near_copy_ratio: float
    min_tokens: int
    min_context: int
    atypical_share: float
    atypical_min_outside: int


@dataclass
class Sentence:
    """One candidate sentence as the rules see it, with the seed it was written from and its accepted siblings."""

    tokens: list[str]
    tags: list[str]
    seed: Seed
    checker: Settings
    accepted: Sequence[Candidate] = ()
    forbid_seed_entities: bool = False

    @cached_property
    def low(self) -> list[str]:
        return [t.lower() for t in self.tokens]

    @cached_property
    def spans(self) -> list[Span]:
        return tags_to_spans(self.tags)

    @cached_property
    def seed_low(self) -> list[str]:
        return [t.lower() for t in self.seed.tokens]

    @cached_property
    def seed_mentions(self) -> set[tuple[tuple[str, ...], str]]:
        """The seed's own annotation: (lower-cased mention words, type) for each of its entities."""
        return {(tuple(self.seed_low[s.start : s.end]), s.label) for s in self.seed.spans}

    def text(self, span: Span) -> str:
        return " ".join(self.tokens[span.start : span.end])

    def in_seed(self, span: Span) -> bool:
        """Whether the seed's own annotation has this entity, as this type (it then outranks the statistics)."""
        return (tuple(self.low[span.start : span.end]), span.label) in self.seed_mentions

    def retagged(self, tags: list[str]) -> Sentence:
        return replace(self, tags=tags)
