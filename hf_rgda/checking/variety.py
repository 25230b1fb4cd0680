"""Rules for variety: accepted rows differ in their entities and their wording, within a seed and across the run.

Four rows of :data:`~hf_rgda.checking.rules.RULES`:

- ``same_entities``: a row tagging the same entities (texts and types) as another accepted for its seed, where the
  stage asks for new entities (a seed generation's versions of the seed keep the seed's entities by design);
- ``near_duplicate``: a row ``near_copy_ratio`` similar or more to another accepted for its seed;
- ``cross_seed_duplicate``: a row ``near_copy_ratio`` similar or more to a row accepted from another seed;
- ``repeated_entity``: a new entity (not the seed's own) whose text and type the run has already accepted
  ``max_entity_repeats`` times.

The first two read the seed's accepted rows, as every rule does. The last two read the :class:`Ledger` of what was
accepted from the other seeds, which only the variety pass has (:meth:`Checker.vary
<hf_rgda.checking.Checker.vary>`, run by the pipeline once every seed of a batch is finished, in seed order, so
the outcome does not depend on which seed's calls returned first); in a seed's own checks they say nothing.

The scope of the ledger: what one augmenter object accepted in one process. Its batches share it (batch after
batch, as ``datasets.map`` feeds them), a batch's seeds computed again replace their earlier rows in it (a second map
of the same seeds gives the same rows), and ``num_proc`` workers each keep their own: with ``num_proc=4`` a near
duplicate of a row another worker accepted is not seen, nor its uses of an entity counted.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..tags import Span
from .sentence import Occurrences, Sentence, occurrences

__all__ = ["Ledger", "cross_seed_duplicate", "entity_set", "near_duplicate", "repeated_entity", "same_entities",
           "similar", "similarity_bound"]

#: one accepted row in the ledger: its words lower-cased and their :func:`~.sentence.occurrences`
Words = tuple[tuple[str, ...], Occurrences]


@dataclass
class Ledger:
    """What the run accepted so far, per seed (module docstring: its scope).

    Attributes:
        rows: seed key -> its accepted rows (:data:`Words`).
        uses: seed key -> its accepted new entities, ``(type, text lower-cased)`` -> rows.
        max_repeats: how often the run accepts one new entity (text and type); 0: no cap.
    """

    max_repeats: int = 0
    rows: dict[str, list[Words]] = field(default_factory=dict)
    uses: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    _total: Counter[tuple[str, str]] = field(default_factory=Counter)
    # every row in ledger order (seeds as ``rows`` lists them, each seed's rows in order) with its seed, and where
    # each word occurrence is: :meth:`sharing` counts the words a sentence shares with every row at once
    _order: list[tuple[str, Words]] = field(default_factory=list, init=False, repr=False, compare=False)
    _index: dict[str | tuple[str, int], list[int]] = field(default_factory=dict, init=False, repr=False,
                                                           compare=False)

    def __post_init__(self) -> None:
        if self.rows:  # a ledger given its rows: indexed from them
            self._reindex()

    def forget(self, key: str) -> None:
        """Drop seed ``key``'s rows (it is being computed again)."""
        if self.rows.pop(key, None) is not None:
            self._reindex()
        self._total.subtract(self.uses.pop(key, Counter()))

    def add(self, key: str, s: Sentence) -> None:
        """Record ``s``, accepted for seed ``key``."""
        row = (tuple(s.low), s.occurrences)
        last = next(reversed(self.rows), None)
        new_seed = key not in self.rows  # a new seed goes last in ledger order, as its row does
        self.rows.setdefault(key, []).append(row)
        if new_seed or last == key:  # the row is the ledger's last: indexed as it comes
            self._put(key, row)
        else:  # an earlier seed's row added after another seed's: ledger order is no longer arrival order
            self._reindex()
        new = Counter(new_entities(s))
        self.uses.setdefault(key, Counter()).update(new)
        self._total.update(new)

    def spent(self) -> dict[str, set[str]]:
        """The new entities the run has accepted ``max_repeats`` times, by type (texts lower-cased): a row with one
        more is rejected (``repeated_entity``), so the composer's entity hints leave them out."""
        out: dict[str, set[str]] = {}
        for (label, text), n in self._total.items():
            if self.max_repeats and n >= self.max_repeats:
                out.setdefault(label, set()).add(text)
        return out

    def count(self, entity: tuple[str, str]) -> int:
        """How many accepted rows carry ``entity`` (``(type, text lower-cased)``)."""
        return self._total[entity]

    def sharing(self, mine: Occurrences, key: str, ratio: float) -> list[Words]:
        """The rows of seeds other than ``key``, in ledger order, that share enough words with a sentence whose
        :func:`~.sentence.occurrences` are ``mine`` to be ``ratio`` similar to it (:func:`similarity_bound`, the
        bound :func:`similar` checks first).

        Only rows that can are looked at (prefix filtering, as similarity joins do): a row ``ratio`` similar to
        ``m`` words shares at least ``ratio * m / (2 - ratio)`` of them (it has at least as many words as it
        shares), so it holds one of any ``m - least + 1`` of them: the rows holding the sentence's rarest words in
        the run are the candidates, and each is counted exactly. A run's rows are not all read per sentence."""
        m, order = len(mine), self._order
        if not m or not order:
            return []
        least = math.ceil(ratio * m / (2.0 - ratio) - 1e-9)  # the fewest of the m words a similar row shares
        if least <= 0:
            ids: Iterable[int] = range(len(order))
        else:
            index = self._index
            rarest = sorted((index.get(word, ()) for word in mine), key=len)[: m - least + 1]
            ids = sorted(set().union(*rarest))
        near = []
        for n in ids:
            seed, row = order[n]
            if seed != key and 2.0 * len(row[1] & mine) / (len(row[1]) + m) >= ratio:
                near.append(row)
        return near

    def _put(self, key: str, row: Words) -> None:
        n = len(self._order)
        self._order.append((key, row))
        index = self._index
        for word in row[1]:
            index.setdefault(word, []).append(n)

    def _reindex(self) -> None:
        self._order, self._index = [], {}
        for key, rows in self.rows.items():
            for row in rows:
                self._put(key, row)


def entity_set(words: Sequence[str], spans: Sequence[Span]) -> frozenset[tuple[str, str]]:
    """A row's entities as ``(type, text lower-cased)``."""
    return frozenset((s.label, " ".join(words[s.start : s.end]).lower()) for s in spans)


def new_entities(s: Sentence) -> set[tuple[str, str]]:
    """The row's entities whose text is none of its seed's mentions (those a seed generation keeps)."""
    seed = {" ".join(m) for m in s.of_seed.mention_words}
    return {(label, text) for label, text in entity_set(s.low, s.spans) if text not in seed}


def similarity_bound(occ: Occurrences, mine: Occurrences) -> float:
    """difflib's ``quick_ratio`` of two sentences' words (their :func:`~.sentence.occurrences`): an upper bound of ``ratio``,
    the words both share as multisets, without building the matcher; the slow ``ratio`` is only needed where this
    bound reaches the threshold."""
    total = len(occ) + len(mine)
    return 2.0 * len(occ & mine) / total if total else 1.0


def similar(low: Sequence[str], occ: Occurrences | None, words: Sequence[str], ratio: float,
            mine: Occurrences | None = None) -> bool:
    """Whether ``words`` are ``ratio`` similar or more to ``low`` (lower-cased words): the same words, or difflib's
    ratio of the two sequences. Cheapest first: the bound of the lengths (difflib's ``real_quick_ratio``: no more
    words shared than the shorter has), the words both share (:func:`similarity_bound`), the ratio. ``occ``,
    ``mine``: the :func:`~.sentence.occurrences` of ``low`` and of ``words`` where the caller has them (None: made
    when needed)."""
    n, m = len(low), len(words)
    if n == m and tuple(words) == tuple(low):
        return True
    if 2.0 * min(n, m) / (n + m) < ratio:
        return False
    shared = (occurrences(low) if occ is None else occ) & (occurrences(words) if mine is None else mine)
    return 2.0 * len(shared) / (n + m) >= ratio and difflib.SequenceMatcher(a=low, b=words).ratio() >= ratio


# ---------------------------------------------------------------- rules
def same_entities(s: Sentence) -> str | None:
    if not s.forbid_seed_entities or not s.spans:
        return None
    mine = entity_set(s.low, s.spans)
    for low, spans in zip(s.accepted_low, s.accepted_spans):
        if entity_set(low, spans) == mine:
            texts = ", ".join(sorted(text for _, text in mine))
            return f"tags the same entities as another output for this seed ({texts})"
    return None


def near_duplicate(s: Sentence) -> str | None:
    ratio = s.checker.near_copy_ratio
    for other, low in zip(s.accepted, s.accepted_low):
        if low != s.low and similar(low, None, s.low, ratio, s.occurrences):  # the same words: duplicate's
            return f"{ratio:.0%} similar or more to another output for this seed: {' '.join(other.tokens)!r}"
    return None


def cross_seed_duplicate(s: Sentence) -> str | None:
    if s.ledger is None:
        return None
    ratio = s.checker.near_copy_ratio
    words, mine = tuple(s.low), s.occurrences
    for low, occ in s.ledger.sharing(mine, s.seed.key, ratio):  # the rows the words shared allow, in order
        if similar(low, occ, words, ratio, mine):
            return f"{ratio:.0%} similar or more to a row accepted from another seed: {' '.join(low)!r}"
    return None


def repeated_entity(s: Sentence) -> str | None:
    if s.ledger is None or not s.ledger.max_repeats:
        return None
    for label, text in sorted(new_entities(s)):
        if s.ledger.count((label, text)) >= s.ledger.max_repeats:
            return (f"{text!r} as {label} is in {s.ledger.count((label, text))} accepted rows already "
                    f"(max_entity_repeats {s.ledger.max_repeats})")
    return None
