"""What a rule sees of one candidate sentence: its tokens and tags, the seed, the checker's statistics and limits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, overload

from ..records import Candidate, Seed
from ..tags import Span, tags_to_spans
from .stats import SplitStats

__all__ = ["Occurrences", "SeedFacts", "Sentence", "Settings", "occurrences", "seed_facts"]

#: a sentence's words as a set that keeps their counts (see :func:`occurrences`)
Occurrences = frozenset[str | tuple[str, int]]


class Settings(Protocol):
    """What the rules read of the checker (:class:`~hf_rgda.checking.Checker` is one)."""

    types: tuple[str, ...]
    stats: SplitStats
    near_copy_ratio: float
    min_tokens: int
    min_context: int
    atypical_share: float
    atypical_min_outside: int
    edge_min_count: int
    representation: str
    likely_mention_quantile: float
    tagger_gate: Any  # a seed_tagger.MentionModel, or None


class SeedFacts(NamedTuple):
    """What the rules read of a seed, computed once per seed (see :func:`seed_facts`)."""

    spans: tuple[Span, ...]
    low: tuple[str, ...]  # its tokens lower-cased
    mention_words: tuple[tuple[str, ...], ...]  # per entity, in order: its words lower-cased
    mentions: frozenset[tuple[tuple[str, ...], str]]  # (words lower-cased, type) of each entity
    untagged: tuple[bool, ...]  # per token: outside every entity
    untagged_at: dict[str, tuple[int, ...]]  # per lower-cased word, where the seed has it outside every entity
    counts: Counter[str]  # its lower-cased words, with their counts
    occurrences: Occurrences  # its lower-cased words as a set that keeps their counts


def occurrences(words: Sequence[str]) -> Occurrences:
    """``words`` as a set that keeps their counts: a word's first use as itself, its next ones as ``(word, 1)``,
    ``(word, 2)``, ... The words two sentences share, as multisets, are then the intersection of their sets.

    Example:
        >>> occurrences(["of", "mice", "of"]) == {"of", "mice", ("of", 1)}
        True
    """
    return _occurrences(tuple(words))


@lru_cache(maxsize=2048)
def _occurrences(words: tuple[str, ...]) -> Occurrences:  # memoised: a seed's accepted rows are compared again
    out: set[str | tuple[str, int]] = set(words)
    if len(out) < len(words):  # number the repeats: a word's k-th use after its first is (word, k)
        seen: dict[str, int] = {}
        for word in words:
            k = seen.get(word)
            if k is None:
                seen[word] = 1
            else:
                out.add((word, k))
                seen[word] = k + 1
    return frozenset(out)


@lru_cache(maxsize=1024)
def seed_facts(seed: Seed) -> SeedFacts:
    """The seed's spans and words as the rules read them; cached, as every candidate of a seed reads them."""
    spans, low = tuple(seed.spans), tuple(t.lower() for t in seed.tokens)
    words = tuple(low[s.start : s.end] for s in spans)
    untagged = tuple(g == "O" for g in seed.tags)
    at: dict[str, list[int]] = {}
    for i, word in enumerate(low):
        if untagged[i]:
            at.setdefault(word, []).append(i)
    return SeedFacts(spans, low, words, frozenset((m, s.label) for m, s in zip(words, spans)), untagged,
                     {w: tuple(ix) for w, ix in at.items()}, Counter(low), occurrences(low))


_MISSING = object()
_T = TypeVar("_T")


class _once(Generic[_T]):  # a decorator, named as functools.cached_property is
    """``functools.cached_property`` without its lock: computed on first read, then an attribute of the instance.
    Python 3.11's takes a lock on every first read, and the rules read a few properties of each of thousands of
    sentences a run; a sentence is read by one thread."""

    def __init__(self, compute: Callable[[Any], _T]) -> None:
        self.compute, self.name, self.__doc__ = compute, compute.__name__, compute.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _once[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> _once[_T] | _T:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.compute(obj)
        return value


@dataclass
class Sentence:
    """One candidate sentence as the rules see it, with the seed it was written from and its accepted siblings."""

    tokens: list[str]
    tags: list[str]
    seed: Seed
    checker: Settings
    accepted: Sequence[Candidate] = ()
    forbid_seed_entities: bool = False
    shown: Sequence[Seed] = ()  # other sentences of the dataset the prompt showed (the composer's example item)
    ledger: Any = None  # what the run accepted from the other seeds (a variety.Ledger: the variety pass only)

    @_once
    def low(self) -> list[str]:
        return [t.lower() for t in self.tokens]

    @_once
    def occurrences(self) -> Occurrences:
        """Its lower-cased words as a set that keeps their counts (:func:`occurrences`)."""
        return occurrences(self.low)

    @_once
    def spans(self) -> list[Span]:
        return tags_to_spans(self.tags)

    @_once
    def accepted_low(self) -> list[list[str]]:
        """Each accepted sibling's words lower-cased (read once per sentence by the rules that compare with them)."""
        return [[t.lower() for t in other.tokens] for other in self.accepted]

    @_once
    def accepted_spans(self) -> list[list[Span]]:
        """Each accepted sibling's entities."""
        return [tags_to_spans(other.tags) for other in self.accepted]

    @_once
    def of_seed(self) -> SeedFacts:
        return seed_facts(self.seed)

    @_once
    def _positions(self) -> dict[str, list[int]]:
        at: dict[str, list[int]] = {}
        for i, word in enumerate(self.low):
            at.setdefault(word, []).append(i)
        return at

    @_once
    def _memo(self) -> dict[Any, Any]:
        return {}

    def where(self, word: str) -> list[int]:
        """The positions of ``word`` (lower-case) in the sentence, in order."""
        return self._positions.get(word, [])

    def memo(self, key: Any, compute: Callable[..., Any], *args: Any) -> Any:
        """``compute(self, *args)``, computed once per sentence under ``key``."""
        memo = self._memo
        got = memo.get(key, _MISSING)
        if got is _MISSING:
            got = memo[key] = compute(self, *args)
        return got

    def text(self, span: Span) -> str:
        return " ".join(self.tokens[span.start : span.end])

    def in_seed(self, span: Span) -> bool:
        """Whether the seed's own annotation has this entity, as this type (it then outranks the statistics)."""
        return (tuple(self.low[span.start : span.end]), span.label) in self.of_seed.mentions

    def retagged(self, tags: list[str]) -> Sentence:
        return replace(self, tags=tags)
