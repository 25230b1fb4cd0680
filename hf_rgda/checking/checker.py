"""``Checker``: the deterministic quality floor every generated sentence must pass before any judge sees it.

Example:
    >>> from hf_rgda.records import Candidate, Seed
    >>> seed = Seed("k", ("Gout", "flares", "are", "painful", "."), ("B-Disease", "O", "O", "O", "O"))
    >>> cand = Candidate(raw=None, tokens=["Lupus", "."], tags=["B-Disease", "O"])
    >>> Checker(("Disease",)).check(cand, seed, [], forbid_seed_entities=True).reason
    'too_short'
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..records import Candidate, Seed, SeedResult
from ..tags import TokenStyle
from . import rules as table
from .sentence import Sentence
from .stats import SplitStats
from .table import Rule, first_failure
from .variety import Ledger

__all__ = ["Checker", "salvage"]


@dataclass(frozen=True)
class Checker:
    """Runs the rules of :data:`~hf_rgda.checking.rules.RULES` in order; the first that fires rejects the sentence.

    Args:
        types: the dataset's entity types.
        stats: the split's statistics (see :class:`SplitStats`); without them, the rules that need them do nothing.
        near_copy_ratio: token-sequence similarity to the seed at or above which a sentence is a near copy.
        min_tokens: shortest acceptable sentence.
        min_context: fewest tokens outside entities (a bare entity or a list of entities is no training sentence).
        atypical_share: a type "rarely" ends its mentions in a word (``atypical_head``) or a shape of word
            (``no_letters``, ``lowercase_name``) used in under this share of them.
        atypical_min_outside: fewest uses outside entities that make a word evidence for ``atypical_head`` (the
            floor keeps rare words out of the rule; ``benchmarks/checker_gold.py --atypical-min-outside N``
            measures what a floor rejects of the gold test sentences); also the floor of ``boundary_extended``.
        edge_min_count: fewest uses as the last word of a type's mentions that make the untagged word after an
            entity evidence of a cut name (``boundary_cut``).
        representation: the output format the prompts showed ("inline", "entities", "segments"), whose example's
            entities ``format_example`` looks for; "" (default): not known, and that rule says nothing.
        salvage: repair instead of reject where the fix is certain and local (each row's ``repair``, applied as the
            row says); each repair is listed in the candidate's ``salvaged``, and the row must still pass every rule
            afterwards.
        tokens: how generated sentences are tokenized (the configuration's ``tokenizer`` when the user chose one);
            None: as the split writes its tokens (:attr:`SplitStats.token_style`).
        likely_mention_quantile: the share of the split's own sentences the ``likely_mention`` rule would reject
            (its threshold: the split tagger's :meth:`~hf_rgda.checking.tagger.MentionTagger.cutoff`); 0: off.
        tagger_gate: a tagger fine-tuned on the seeds (:class:`~hf_rgda.TaggerGate`, or any
            :class:`~hf_rgda.checking.seed_tagger.MentionModel`) the ``seed_tagger_mention`` rule asks; None: off.
    """

    types: tuple[str, ...]
    stats: SplitStats = field(default_factory=SplitStats)
    near_copy_ratio: float = 0.85
    min_tokens: int = 4
    min_context: int = 3
    atypical_share: float = 0.05
    atypical_min_outside: int = 10
    edge_min_count: int = 5
    salvage: bool = False
    representation: str = ""
    tokens: TokenStyle | None = None
    likely_mention_quantile: float = 0.1
    tagger_gate: Any = None

    @property
    def split_hyphens(self) -> bool:
        """Whether generated sentences are decoded with hyphens as tokens of their own, as the split writes them."""
        return "hyphen" not in self.token_style.whole

    @property
    def token_style(self) -> TokenStyle:
        """How generated sentences are tokenized: ``tokens``, else the split's own way."""
        return self.tokens if self.tokens is not None else self.stats.token_style

    def check(self, cand: Candidate, seed: Seed, accepted: Sequence[Candidate], *,
              forbid_seed_entities: bool, shown: Sequence[Seed] = (), ledger: Ledger | None = None) -> Candidate:
        """Reject ``cand`` (in place) with the first failed rule; ``accepted`` are its already-kept siblings, ``shown``
        the other sentences of the dataset its prompt showed, ``ledger`` what the run accepted from other seeds."""
        if not cand.ok:
            return cand
        sentence = Sentence(cand.tokens, cand.tags, seed, self, accepted, forbid_seed_entities, shown, ledger)
        found = first_failure(sentence, table.RULES)
        if found is not None and self.salvage:  # a sentence no rule fails has nothing to repair
            repaired = self._salvage(cand, sentence)
            if repaired is not sentence:  # none repaired: the rule that failed it fails it still
                found = first_failure(repaired, table.RULES)
        return cand.reject(found.rule.name, found.detail) if found else cand

    def vary(self, rs: Sequence[SeedResult], ledger: Ledger, *, forbid_seed_entities: bool,
             keep: int | None = None) -> None:
        """The variety pass (:mod:`~hf_rgda.checking.variety`) over finished seeds, in order: each accepted row
        against its seed's rows kept before it and the ``ledger`` of the other seeds' (which it joins when it
        passes); a row failing :data:`~hf_rgda.checking.rules.VARIETY_RULES` is rejected, recorded under the
        stage ``variety``. With ``keep``, a seed's rows past its first ``keep`` to pass are rejected as ``spare``
        (the composer's ``spare_sentences``) before they join the ledger; where it has more than ``keep``, the rows
        no ``same_entities`` repair changed are taken first. The seeds' earlier rows in ``ledger`` (a
        batch computed again) are dropped first."""
        for r in rs:
            ledger.forget(r.seed.key)
        for r in rs:
            kept: list[Candidate] = []
            # more rows than kept (spare sentences): a row that kept the entities the model wrote goes before one
            # given a sibling's pool mentions (same_entities' repair): its entities fit the sentence around them
            order = sorted(r.accepted, key=_swapped) if keep is not None and len(r.accepted) > keep else r.accepted
            for c in order:
                if keep is not None and len(kept) >= keep:
                    r.rejected.append(("variety", c.reject("spare", f"a spare sentence: the seed has its {keep} rows")))
                    continue
                s = Sentence(c.tokens, c.tags, r.seed, self, kept, forbid_seed_entities, (), ledger)
                found = first_failure(s, table.VARIETY_RULES)
                if found is not None:
                    r.rejected.append(("variety", c.reject(found.rule.name, found.detail)))
                    continue
                kept.append(c)
                ledger.add(r.seed.key, s)
            r.accepted = kept

    def _salvage(self, cand: Candidate, s: Sentence) -> Sentence:
        return salvage(cand, s, table.RULES)


def _swapped(c: Candidate) -> bool:
    return any(x.startswith("same_entities:") for x in c.salvaged)


def salvage(cand: Candidate, s: Sentence, rules: tuple[Rule, ...]) -> Sentence:
    """The repairs of ``rules`` (the checker's table under ``salvage=True``), each recorded in ``cand.salvaged``: pass
    by pass (the consecutive rows that share one repair), the row's repair of the first of them the sentence fails,
    until none fails or the repair declines (then the checks reject it). Returns ``s`` for the repaired ``cand``."""
    for run in _repair_passes(rules):
        while (bad := first_failure(s, run)) and bad.rule.repair is not None and (
                fixed := bad.rule.repair.apply(cand, bad, s)) is not None:
            s = fixed
    return s


@functools.lru_cache(maxsize=4)
def _repair_passes(rules: tuple[Rule, ...]) -> list[tuple[Rule, ...]]:
    """The rows with a repair, in table order, in runs of consecutive rows that share one ``fix``."""
    repairable = [r for r in rules if r.repair is not None]
    return [tuple(run) for _, run in itertools.groupby(repairable, key=lambda r: r.repair.fix)]  # type: ignore[union-attr]
