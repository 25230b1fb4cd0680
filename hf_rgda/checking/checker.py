"""``Checker``: the deterministic quality floor every generated sentence must pass before any judge sees it.

Example:
    >>> from hf_rgda.records import Candidate, Seed
    >>> seed = Seed("k", ("Gout", "flares", "are", "painful", "."), ("B-Disease", "O", "O", "O", "O"))
    >>> cand = Candidate(raw=None, tokens=["Lupus", "."], tags=["B-Disease", "O"])
    >>> Checker(("Disease",)).check(cand, seed, [], forbid_seed_entities=True).reason
    'too_short'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..records import Candidate, Seed
from ..tags import spans_to_tags, tags_to_spans
from .rules import UNTAG_RULES, Finding, first_failure, known_untagged, sentence_breaks
from .sentence import Sentence
from .stats import SplitStats

__all__ = ["Checker"]


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
        salvage: repair instead of reject where the fix is certain and local (each rule's ``repair``); each repair
            is listed in the candidate's ``salvaged``, and the row must still pass every rule afterwards.
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

    @property
    def split_hyphens(self) -> bool:
        """Whether generated sentences are decoded with hyphens as tokens of their own, as the split writes them."""
        return self.stats.split_hyphens

    def check(self, cand: Candidate, seed: Seed, accepted: Sequence[Candidate], *,
              forbid_seed_entities: bool) -> Candidate:
        """Reject ``cand`` (in place) with the first failed rule; ``accepted`` are its already-kept siblings."""
        if not cand.ok:
            return cand
        sentence = Sentence(cand.tokens, cand.tags, seed, self, accepted, forbid_seed_entities)
        if self.salvage:
            sentence = self._salvage(cand, sentence)
        found = first_failure(sentence)
        return cand.reject(found.rule.name, found.detail) if found else cand

    def _salvage(self, cand: Candidate, s: Sentence) -> Sentence:
        """Deterministic repairs (``salvage=True``), each recorded in ``cand.salvaged``: of several sentences keep the
        one with the most entities; untag every entity an :data:`~hf_rgda.checking.rules.UNTAG_RULES` rule flags
        (the rest of the row stays), unless it may be a mistyped entity of another type (then it is left for the
        checks to reject); tag every known mention left untagged. Returns ``s`` for the repaired ``cand``."""
        if self._keep_one_sentence(cand):
            s = replace(s, tokens=cand.tokens, tags=cand.tags)
        while (bad := first_failure(s, UNTAG_RULES)) and self._untag(cand, bad):
            s = s.retagged(cand.tags)
        while known := s.memo("known_untagged", known_untagged):
            cand.tags = spans_to_tags([*tags_to_spans(cand.tags), known], len(cand.tokens))
            cand.salvaged.append(f"known_mention: tagged {' '.join(cand.tokens[known.start : known.end])!r} as "
                                 f"{known.label} (the split tags it so)")
            s = s.retagged(cand.tags)
        return s

    def _keep_one_sentence(self, cand: Candidate) -> bool:
        """Of several sentences in ``cand``, keep the one with the most entities (the first on a tie); False where
        there is one sentence, or an entity crosses a break."""
        toks, tags = cand.tokens, cand.tags
        cuts = sentence_breaks(toks)
        if not cuts:
            return False
        bounds = list(zip([0, *(c + 1 for c in cuts)], [c + 1 for c in cuts] + [len(toks)]))
        spans = tags_to_spans(tags)
        if any(a < s.start < b < s.end for s in spans for a, b in bounds):
            return False
        a, b = max(bounds, key=lambda ab: (sum(ab[0] <= s.start < ab[1] for s in spans), -ab[0]))
        cand.tokens, cand.tags = toks[a:b], tags[a:b]
        cand.salvaged.append(f"several_sentences: kept sentence {bounds.index((a, b)) + 1} of {len(bounds)}")
        return True

    def _untag(self, cand: Candidate, bad: Finding) -> bool:
        """Untag the entity ``bad`` flags and record it; False (nothing done) where it may be an entity of another
        type, since untagging it would teach that it is no entity."""
        s, rule = bad.span, bad.rule.name
        if s is None:  # the untag rules are entity rules: never so
            return False
        head, stats, others = cand.tokens[s.end - 1], self.stats, [t for t in self.stats.heads if t != s.label]
        if rule == "atypical_head" and any(
                not stats.atypical(head, t, self.atypical_share, self.atypical_min_outside) for t in others):
            return False  # "natural language processing" as Material: "processing" ends Task mentions
        if rule == "no_letters" and any(not stats.rarely_ends(t, "letterless", self.atypical_share) for t in others):
            return False  # another type does have number-only mentions (a LOC's postcode)
        if rule == "lowercase_name" and any(stats.heads[t].get(head) for t in others):
            return False  # the word ends mentions of another type ("lender" as ORG; FIN tags it PER)
        cand.tags = cand.tags[: s.start] + ["O"] * (s.end - s.start) + cand.tags[s.end :]
        cand.salvaged.append(f"{rule}: untagged {' '.join(cand.tokens[s.start : s.end])!r} ({bad.detail})")
        return True
