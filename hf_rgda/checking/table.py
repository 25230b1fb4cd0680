"""The rows of the checker's table: :class:`Rule` (a named check, its description, :class:`Repair` and group), the
:class:`Example` each row carries (a seed and a sentence the rule fires on), and the :class:`Finding` the checker
reports. The table itself, :data:`~hf_rgda.checking.rules.RULES`, the checks and the repairs are in :mod:`.rules`."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from ..records import Candidate, Seed
from ..tags import Span, parse_inline
from .sentence import Sentence
from .stats import SplitStats
from .variety import Ledger

__all__ = ["Example", "Finding", "Fix", "Repair", "Rule", "first_failure"]

#: ``fix(candidate, finding, sentence)``: repair ``candidate`` in place (recording it in ``candidate.salvaged``) and
#: return the repaired sentence, or None where the repair does not apply (the rule then rejects it)
Fix = Callable[[Candidate, "Finding", Sentence], "Sentence | None"]


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
    shown: tuple[str, ...] = ()  # other sentences of the dataset the prompt showed
    representation: str = ""  # the output format the prompts showed (the checker's ``representation``)
    others: tuple[str, ...] = ()  # rows the run accepted from other seeds (the variety pass's ledger)
    max_entity_repeats: int = 0  # the ledger's cap on one new entity
    tagger_gate: Any = None  # the checker's tagger gate (a MentionModel: seed_tagger_mention)

    def ledger(self) -> Ledger | None:
        """The variety pass's ledger holding :attr:`others` (None without them: a seed's own checks)."""
        if not self.others:
            return None
        ledger = Ledger(self.max_entity_repeats)
        seed = Seed("another seed", (), ())
        for row in self.others:
            tokens, tags = parse_inline(row)
            ledger.add(seed.key, Sentence(tokens, tags, seed, None))  # type: ignore[arg-type]  # no rule runs on it
        return ledger

    def seed_record(self) -> Seed:
        tokens, tags = parse_inline(self.seed)
        return Seed("example", tuple(tokens), tuple(tags))

    def shown_records(self) -> tuple[Seed, ...]:
        return tuple(Seed(f"shown{i}", tuple(t), tuple(g)) for i, (t, g) in enumerate(map(parse_inline, self.shown)))

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
        repair: what ``salvage=True`` does instead of rejecting (None: it rejects).
        group: "" for a sentence rule; an entity rule's group (consecutive rules of a group run entity by entity).
    """

    name: str
    check: Callable[..., str | None]
    description: str
    example: Example
    repair: Repair | None = None
    group: str = ""


@dataclass(frozen=True)
class Repair:
    """What ``salvage=True`` does where a rule fires, instead of rejecting (:meth:`Checker._salvage
    <hf_rgda.checking.Checker>` applies it).

    Args:
        text: what it does, in words (the README's rule table).
        fix: the repair; consecutive rules of the table that share one ``fix`` are repaired in one pass, until none
            fires or ``fix`` declines.
        unless: ``unless(sentence, entity)``: where the evidence is mixed and the rule rejects instead (an entity
            rule's repair).
    """

    text: str
    fix: Fix
    unless: Callable[[Sentence, Span], bool] | None = None

    def apply(self, cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
        """Repair ``cand`` for ``found``: the repaired sentence, or None where it does not apply."""
        if self.unless is not None and found.span is not None and self.unless(s, found.span):
            return None
        return self.fix(cand, found, s)


class Finding(NamedTuple):
    """The first rule a sentence fails, why, and the entity it fails on (None for a sentence rule)."""

    rule: Rule
    detail: str
    span: Span | None


def first_failure(s: Sentence, rules: tuple[Rule, ...]) -> Finding | None:
    """The first of ``rules`` that ``s`` fails, in table order. The verdict of a rule with a repair is kept on ``s``
    (the checker asks the whole table, then salvage the rules with a repair, of the same sentence; a repair makes a
    new sentence)."""
    for group, run in _runs(rules):
        if not group:
            for rule in run:
                detail = rule.check(s) if rule.repair is None else s.memo(rule.name, rule.check)
                if detail is not None:
                    return Finding(rule, detail, None)
            continue
        for span in s.spans:
            for rule in run:
                detail = rule.check(s, span) if rule.repair is None else s.memo((rule.name, span), rule.check, span)
                if detail is not None:
                    return Finding(rule, detail, span)
    return None


@lru_cache(maxsize=8)
def _runs(rules: tuple[Rule, ...]) -> list[tuple[str, tuple[Rule, ...]]]:
    """The table in runs: each sentence rule alone, consecutive entity rules of one group together."""
    return [(group, tuple(run)) for group, run in itertools.groupby(rules, key=lambda r: r.group)]
