"""The rows of the checker's table: :class:`Rule` (a named check, its description, repair and group), the
:class:`Example` each row carries (a seed and a sentence the rule fires on), and the :class:`Finding` the checker
reports. The table itself, :data:`~hf_rgda.checking.rules.RULES`, and the checks are in :mod:`.rules`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..records import Candidate, Seed
from ..tags import Span, parse_inline
from .stats import SplitStats

__all__ = ["Example", "Finding", "Rule"]


@dataclass(frozen=True)
class Example:
    """A seed and a sentence written from it (both with inline entities: ``"[gout](Disease) hurts ."``), and the
    split statistics, types and accepted siblings the rule needs to fire on it."""

    candidate: str
    seed: str = "Germline mutations in BRCA1 cause [breast cancer](Disease) ."
    stats: SplitStats = field(default_factory=SplitStats)
    types: tuple[str, ...] = ("Disease",)
    accepted: tuple[str, ...] = ()
    forbid_seed_entities: bool = True

    def seed_record(self) -> Seed:
        tokens, tags = parse_inline(self.seed)
        return Seed("example", tuple(tokens), tuple(tags))

    def candidates(self) -> tuple[Candidate, list[Candidate]]:
        """The sentence and its accepted siblings, as decoded candidates."""
        def candidate(text: str) -> Candidate:
            tokens, tags = parse_inline(text)
            return Candidate(raw=text, tokens=tokens, tags=tags)

        return candidate(self.candidate), [candidate(a) for a in self.accepted]


@dataclass(frozen=True, eq=False)  # compared and hashed as itself (tables of rules are cached by identity)
class Rule:
    """One row of the checker's table.

    Args:
        name: the reason a sentence it rejects carries.
        check: ``check(sentence)``, or for an entity rule ``check(sentence, entity)``: why it fails, or None.
        description: what it rejects (one line).
        example: a seed and a sentence it fires on.
        repair: what ``salvage=True`` does instead of rejecting ("" if nothing).
        group: "" for a sentence rule; an entity rule's group (consecutive rules of a group run entity by entity).
    """

    name: str
    check: Callable[..., str | None]
    description: str
    example: Example
    repair: str = ""
    group: str = ""


class Finding(NamedTuple):
    """The first rule a sentence fails, why, and the entity it fails on (None for a sentence rule)."""

    rule: Rule
    detail: str
    span: Span | None
