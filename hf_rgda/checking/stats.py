"""Split statistics: what the checker and the composer's entity hints know of the dataset, computed once.

:class:`SplitStats` is one frozen value, built by :meth:`SplitStats.from_split` (``RGDAAugmenter.from_dataset``
calls it): per type, the words that end its mentions and those that open them; the words the split uses outside
entities; the texts it tags consistently (the lexicon); the entity-hint pool; the longest entity per type; the
hyphen style. The indices the
checker's rules look up (per type: its mentions ending in a letterless or a lowercase word, its heads lower-cased)
are derived from those once, on first use, and are not part of the pickled state: one check costs the same
whatever the split's size.

Example:
    >>> stats = SplitStats.from_split([["Gout", "hurts", "."]], [["B-Disease", "O", "O"]])
    >>> stats.heads, stats.max_entity_len
    ({'Disease': {'Gout': 1}}, {'Disease': 1})
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from typing import Any, NamedTuple

from ..tags import Span, TokenStyle, detokenize, tags_to_spans
from .tagger import MentionTagger

__all__ = ["SplitStats", "entity_inventory", "entity_length_limits", "entity_mentions", "is_letterless",
           "is_lowercase", "whole_shapes"]

Rows = Sequence[Sequence[str]]
CONTEXT_MIN_COUNT = 5  # a word counts as context once the split uses it this often outside entities
LEXICON_MIN_COUNT, LEXICON_MIN_RATE = 3, 0.9  # a lexicon text: used this often, tagged as one type this consistently
HINTS_PER_TYPE = 2000  # the entity-hint pool keeps the most frequent mentions of each type


def is_letterless(text: str) -> bool:
    """Whether ``text`` has no letter ("93 %", "163")."""
    return not any(c.isalpha() for c in text)


def is_lowercase(text: str) -> bool:
    """Whether ``text`` has a letter and no capital ("compliance")."""
    return any(c.isalpha() for c in text) and not any(c.isupper() for c in text)


class _Index(NamedTuple):
    """Lookups derived from the statistics, for rules that would otherwise rescan them on every check."""

    lower_heads: dict[str, frozenset[str]]  # per type, its heads lower-cased
    head_words: frozenset[str]  # every word that ends a mention of some type
    totals: dict[str, int]  # per type, its mentions
    letterless: dict[str, int]  # per type, its mentions ending in a letterless word
    lowercase: dict[str, int]  # per type, its mentions ending in a word without a capital
    lexicon_starts: dict[str, frozenset[int]]  # per first word of a lexicon text, the texts' lengths in words
    alone: dict[str, frozenset[str]]  # per type, the one-word mentions of its pool, lower-cased


@dataclass(frozen=True)
class SplitStats:
    """Statistics of a dataset split (IOB2 tags); every field empty means no statistics (their rules do nothing).

    Args:
        heads: per type, how often each word (case kept) ends one of its mentions.
        starts: per type, how often each word (case kept) opens one of its mentions of two words or more.
        context_words: how often each word used at least ``CONTEXT_MIN_COUNT`` times outside any entity is so used.
        lexicon: lower-cased entity text (tokens joined by spaces) -> type, for texts used at least
            ``LEXICON_MIN_COUNT`` times and tagged as that one type in at least ``LEXICON_MIN_RATE`` of their uses (a
            use inside a longer entity is not counted).
        mentions: per type, the pool the composer's entity hints are drawn from (see :func:`entity_mentions`).
        max_entity_len: per type, its longest mention in tokens.
        split_hyphens: the split writes hyphens as tokens of their own ("Prader - Willi", NCBI-disease) rather than
            inside words ("state-of-the-art", SciERC); generated sentences are tokenized the same way.
        whole_tokens: the shapes of :data:`~hf_rgda.tags.TOKEN_SHAPES` beyond hyphens that the split keeps as one
            token ("url", "handle", "hashtag", "decimal", "ptb_clitic"), learned by :func:`whole_shapes`; with
            ``split_hyphens`` they make :attr:`token_style`, the way generated sentences are tokenized.
        examples: up to :data:`EXAMPLES` of the split's sentences with an entity (:func:`example_sentences`): what
            the sense gate reads rows beside and sets its threshold from (:mod:`hf_rgda.sense`).
        tagger: the split's own mention tagger (:class:`~hf_rgda.checking.tagger.MentionTagger`), trained on its
            tags, with the reference the ``likely_mention`` rule takes its threshold from; None: that rule says nothing.
    """

    heads: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    starts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    context_words: Mapping[str, int] = field(default_factory=dict)
    lexicon: Mapping[str, str] = field(default_factory=dict)
    mentions: Mapping[str, Sequence[str]] = field(default_factory=dict)
    max_entity_len: Mapping[str, int] = field(default_factory=dict)
    split_hyphens: bool = False
    whole_tokens: tuple[str, ...] = ()
    examples: tuple[tuple[str, ...], ...] = ()
    tagger: MentionTagger | None = None

    def __post_init__(self) -> None:
        # sorted dicts and tuples, never sets: the pickled state (the datasets fingerprint) must not depend on
        # hash order; the hint pool keeps its order (the composer draws from it in order)
        norm = {"heads": {t: dict(sorted(h.items())) for t, h in sorted(self.heads.items())},
                "starts": {t: dict(sorted(h.items())) for t, h in sorted(self.starts.items())},
                "context_words": dict(sorted(self.context_words.items())),
                "lexicon": dict(sorted(self.lexicon.items())),
                "mentions": {t: tuple(m) for t, m in self.mentions.items()},
                "max_entity_len": dict(sorted(self.max_entity_len.items())), "split_hyphens": bool(self.split_hyphens),
                "whole_tokens": TokenStyle.of(self.whole_tokens).whole,
                "examples": tuple(tuple(str(w) for w in t) for t in self.examples)}
        for name, value in norm.items():
            object.__setattr__(self, name, value)

    @classmethod
    def from_split(cls, token_rows: Rows, iob2_rows: Rows, *, tagger: bool = True) -> SplitStats:
        """Every statistic of a split, its tags decoded once (leniently: a stray ``I-`` opens an entity); with
        ``tagger``, its mention tagger trained too (seconds on a few thousand sentences)."""
        spans = [tags_to_spans(list(tags), strict=False) for tags in iob2_rows]
        heads, starts, context = _edges_and_context(token_rows, iob2_rows, spans)
        return cls(heads=heads, starts=starts, context_words=context, lexicon=_lexicon(token_rows, spans),
                   mentions=_hint_pool(_inventory(token_rows, spans), HINTS_PER_TYPE),
                   max_entity_len=_longest(spans), split_hyphens=_splits_hyphens(token_rows),
                   whole_tokens=whole_shapes(token_rows), examples=example_sentences(token_rows, spans),
                   tagger=MentionTagger.fit(token_rows, iob2_rows) if tagger else None)

    @property
    def token_style(self) -> TokenStyle:
        """How the split writes its tokens: hyphenated words and clitics whole unless ``split_hyphens`` (a split
        writing "'s" as a token of its own, ``ptb_clitic``, keeps that instead), plus ``whole_tokens``."""
        return _token_style(bool(self.split_hyphens), tuple(self.whole_tokens))

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # the derived index is rebuilt on demand

    @cached_property
    def _index(self) -> _Index:
        def ending(label: str, shape: Any) -> int:
            return sum(c for h, c in self.heads[label].items() if shape(h))

        starts: dict[str, set[int]] = {}
        for text in self.lexicon:
            words = text.split(" ")
            starts.setdefault(words[0], set()).add(len(words))
        return _Index({t: frozenset(h.lower() for h in heads) for t, heads in self.heads.items()},
                      frozenset(w for heads in self.heads.values() for w in heads),
                      {t: sum(heads.values()) for t, heads in self.heads.items()},
                      {t: ending(t, is_letterless) for t in self.heads},
                      {t: ending(t, is_lowercase) for t in self.heads},
                      {w: frozenset(n) for w, n in starts.items()},
                      {t: frozenset(m.lower() for m in ms if " " not in m) for t, ms in self.mentions.items()})

    def tagged_alone(self, word: str, label: str) -> bool:
        """Whether the split tags ``word`` by itself as a ``label`` mention (one of its pool's one-word mentions, case
        ignored): NCBI-disease tags "cancer" alone, never "disease", which ends hundreds of its mentions.

        Example:
            >>> stats = SplitStats(mentions={"Disease": ("cancer", "Huntington disease")})
            >>> stats.tagged_alone("Cancer", "Disease"), stats.tagged_alone("disease", "Disease")
            (True, False)
        """
        return word.lower() in self._index.alone.get(label, frozenset())

    def lexicon_windows(self, words: Sequence[str]) -> list[tuple[int, int]]:
        """The ``(start, end)`` word ranges of ``words`` (lower-cased) that may spell a lexicon text, longest first
        (at most 8 words), then left to right: the ranges whose first word opens a text of that many words."""
        starts, longest = self._index.lexicon_starts, min(len(words), 8)
        if any(" " in w for w in words):  # a word with a space may join into any text: every range
            return [(i, i + n) for n in range(longest, 0, -1) for i in range(len(words) - n + 1)]
        opens = [(i, starts[w]) for i, w in enumerate(words) if w in starts]
        return [(i, i + n) for n in range(longest, 0, -1) for i, lengths in opens
                if n in lengths and i + n <= len(words)]

    def ends_mention(self, word: str, label: str) -> bool:
        """Whether the split ends some ``label`` mention with ``word`` (lower-case; heads compared lower-cased)."""
        return word in self._index.lower_heads.get(label, ())

    def stats_form(self, word: str) -> str:
        """The form whose statistics speak for ``word``: itself, or for a capitalized word the split never shows
        (statistics are case-kept, and "Study" opening a generated sentence may be rare in the split) its lowercase
        form. A capitalized word the split does show keeps its own counts (FIN tags "Lender" as PER, not "lender")."""
        if word in self.context_words or word in self._index.head_words:
            return word
        rest = word[1:]  # "Study", not "I" (a Roman numeral in FIN's "Venture I"), not "BRCA1"
        return word.lower() if word[:1].isupper() and rest.isalpha() and rest.islower() else word

    def atypical(self, head: str, label: str, share: float, min_outside: int) -> bool:
        """Whether the split uses ``head`` outside entities (at least ``min_outside`` times) and as the last word of a
        ``label`` mention in under ``share`` of those uses (no statistics: never atypical)."""
        head = self.stats_form(head)
        outside = self.context_words.get(head, 0)
        as_head = self.heads.get(label, {}).get(head, 0)
        return outside >= min_outside and label in self.heads and as_head < share * (as_head + outside)

    def head_share(self, word: str, label: str, types: Sequence[str]) -> float:
        """The share of the split's uses of ``word`` (its :meth:`stats_form`) that end a ``label`` mention, smoothed:
        ``(as label's last word + 1/K) / (as any of types' last word + outside entities + 1)``, K = ``len(types) + 1``
        (a word the split never shows gets 1/K). Outside uses count for words used at least ``CONTEXT_MIN_COUNT`` times
        so. The entity verifier's split evidence (``verify_split``) and ``benchmarks/calibration.py``'s ``split``
        scorer.

        Example:
            >>> stats = SplitStats(heads={"Disease": {"cancer": 9}}, context_words={"the": 50})
            >>> round(stats.head_share("cancer", "Disease", ["Disease"]), 3), round(stats.head_share("the", "Disease", ["Disease"]), 3)
            (0.95, 0.01)
        """
        word = self.stats_form(word)
        ends = {t: self.heads.get(t, {}).get(word, 0) for t in types}
        k = len(types) + 1
        return (ends.get(label, 0) + 1 / k) / (sum(ends.values()) + self.context_words.get(word, 0) + 1)

    def opens_rarely(self, word: str, label: str, share: float, min_outside: int) -> bool:
        """Whether the split uses ``word`` outside entities (at least ``min_outside`` times) and to open a
        ``label`` mention of two words or more in under ``share`` of those uses (no statistics: never)."""
        starts = self.starts.get(label, {})
        word = word if word in starts else self.stats_form(word)
        outside = self.context_words.get(word, 0)
        opens = starts.get(word, 0)
        return outside >= min_outside and label in self.starts and opens < share * (opens + outside)

    def rarely_ends(self, label: str, shape: str, share: float) -> bool:
        """Whether under ``share`` of the split's ``label`` mentions (among at least 50) end in a word of ``shape``
        (``"letterless"``: see :func:`is_letterless`; ``"lowercase"``: see :func:`is_lowercase`)."""
        index = self._index
        total = index.totals.get(label, 0)
        return total >= 50 and getattr(index, shape)[label] < share * total


@lru_cache(maxsize=64)
def _token_style(split_hyphens: bool, whole_tokens: tuple[str, ...]) -> TokenStyle:
    """:attr:`SplitStats.token_style` (read for every sentence the checker decodes)."""
    kept = [] if split_hyphens else ["hyphen"]
    if not split_hyphens and "ptb_clitic" not in whole_tokens:
        kept.append("clitic")
    return TokenStyle.of([*kept, *whole_tokens])


def entity_inventory(token_rows: Rows, tag_rows: Rows) -> dict[str, Counter[tuple[str, ...]]]:
    """Every entity mention of a split (IOB2 tags, read leniently), per type, as token tuples with their counts;
    types and mentions in first-seen order. The one inventory behind the entity hints (:func:`entity_mentions`)
    and the MR baseline's (:func:`hf_rgda.baselines.mention_inventory`)."""
    return _inventory(token_rows, [tags_to_spans(list(tags), strict=False) for tags in tag_rows])


def entity_mentions(token_rows: Rows, tag_rows: Rows, *, per_type: int = HINTS_PER_TYPE) -> dict[str, list[str]]:
    """Distinct entity texts per type (IOB2 tags), most frequent first (at most ``per_type``): the pool the
    composer's entity hints are drawn from."""
    return _hint_pool(entity_inventory(token_rows, tag_rows), per_type)


def entity_length_limits(tag_rows: Rows, scheme: str = "IOB2") -> dict[str, int]:
    """Longest entity (in tokens) per type over a split: the checker rejects longer generated entities."""
    return _longest([tags_to_spans(list(tags), scheme, strict=False) for tags in tag_rows])


def _inventory(token_rows: Rows, spans: Sequence[Sequence[Span]]) -> dict[str, Counter[tuple[str, ...]]]:
    inv: dict[str, Counter[tuple[str, ...]]] = {}
    for tokens, row in zip(token_rows, spans):
        for s in row:
            inv.setdefault(s.label, Counter())[tuple(tokens[s.start : s.end])] += 1
    return inv


def _hint_pool(inventory: Mapping[str, Counter[tuple[str, ...]]], per_type: int) -> dict[str, list[str]]:
    pool = {}
    for label, mentions in sorted(inventory.items()):
        texts: Counter[str] = Counter()
        for tokens, n in mentions.items():  # first-seen order: ties keep it
            texts[detokenize(tokens)] += n
        pool[label] = [text for text, _ in texts.most_common(per_type)]
    return pool


def _longest(spans: Sequence[Sequence[Span]]) -> dict[str, int]:
    limits: dict[str, int] = {}
    for row in spans:
        for s in row:
            limits[s.label] = max(limits.get(s.label, 0), s.end - s.start)
    return limits


def _edges_and_context(token_rows: Rows, tag_rows: Rows, spans: Sequence[Sequence[Span]],
                       ) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]], dict[str, int]]:
    heads: dict[str, Counter[str]] = {}
    starts: dict[str, Counter[str]] = {}
    outside: Counter[str] = Counter()
    for tokens, tags, row in zip(token_rows, tag_rows, spans):
        for s in row:
            heads.setdefault(s.label, Counter())[str(tokens[s.end - 1])] += 1
            if s.end - s.start > 1:
                starts.setdefault(s.label, Counter())[str(tokens[s.start])] += 1
        outside.update(str(t) for t, g in zip(tokens, tags) if g == "O")
    context = {w: c for w, c in outside.items() if c >= CONTEXT_MIN_COUNT and not is_letterless(w)}
    return heads, starts, context


def _lexicon(token_rows: Rows, spans: Sequence[Sequence[Span]]) -> dict[str, str]:
    tagged: dict[tuple[str, ...], Counter[str]] = {}
    for tokens, row in zip(token_rows, spans):
        for s in row:
            tagged.setdefault(tuple(str(t).lower() for t in tokens[s.start : s.end]), Counter())[s.label] += 1
    lengths: dict[str, list[int]] = {}  # per first word, the lengths of the tagged texts it opens
    for m in tagged:
        lengths.setdefault(m[0], []).append(len(m))
    uses: Counter[tuple[str, ...]] = Counter()
    for tokens, row in zip(token_rows, spans):
        low = [str(t).lower() for t in tokens]
        exact = {(s.start, s.end) for s in row}
        for i, word in enumerate(low):
            for n in sorted(set(lengths.get(word, ()))):
                m = tuple(low[i : i + n])
                if len(m) == n and m in tagged and ((i, i + n) in exact or not any(
                        s.start <= i and i + n <= s.end and s.end - s.start > n for s in row)):
                    uses[m] += 1
    out = {}
    for m, labels in tagged.items():
        label, count = labels.most_common(1)[0]
        if uses[m] >= LEXICON_MIN_COUNT and count >= LEXICON_MIN_RATE * uses[m] and not is_letterless("".join(m)):
            out[" ".join(m)] = label
    return out


def _splits_hyphens(token_rows: Rows) -> bool:
    alone = inside = 0
    for tokens in token_rows:
        for i, t in enumerate(tokens):
            if (t == "-" and 0 < i < len(tokens) - 1 and str(tokens[i - 1])[-1:].isalnum()
                    and str(tokens[i + 1])[:1].isalnum()):
                alone += 1
            elif "-" in t[1:-1]:
                inside += 1
    return alone > inside


#: a token of each learnable shape written whole, as :func:`~hf_rgda.tags.tokenize` would keep it
_WHOLE = {"url": re.compile(r"(?:https?://|www\.)\S+$", re.IGNORECASE), "handle": re.compile(r"@\w+$"),
          "hashtag": re.compile(r"#\w+$"), "decimal": re.compile(r"\d+(?:[.,]\d+)+$"),
          "ptb_clitic": re.compile(r"(?:['’](?:s|re|ve|ll|d|m)|n['’]t)$", re.IGNORECASE)}
_CLITIC_ENDS = frozenset(["s", "t", "re", "ve", "ll", "d", "m"])
WHOLE_MIN_COUNT = 2  # a shape is kept whole on this much evidence at least, and more than its pieces


def whole_shapes(token_rows: Rows) -> tuple[str, ...]:
    """The token shapes the split keeps whole (``"url"``, ``"handle"``, ``"hashtag"``, ``"decimal"``,
    ``"ptb_clitic"``): those written as one token at least ``WHOLE_MIN_COUNT`` times and more often than in pieces
    ("http" ":" ..., "@" "user", "#" "tag", "3" "." "5", "Bank" "'" "s" or a clitic inside a word, "Bank's"). A split
    without the evidence keeps the old tokenization: each shape in pieces, clitics as its hyphens.

    Example:
        >>> whole_shapes([["@ana", "paid", "3.5", "%", "via", "http://t.co/x"], ["@bo", "got", "1,000", "."]])
        ('handle', 'decimal')
    """
    whole: Counter[str] = Counter()
    pieces: Counter[str] = Counter()
    for row in token_rows:
        tokens = [str(t) for t in row]
        for i, t in enumerate(tokens):
            nxt, after = (tokens[i + 1] if i + 1 < len(tokens) else ""), (tokens[i + 2] if i + 2 < len(tokens) else "")
            shape = next((name for name, rx in _WHOLE.items() if rx.match(t)), None)
            if shape is not None:
                whole[shape] += 1
            elif "'" in t[1:-1] or "’" in t[1:-1]:
                pieces["ptb_clitic"] += 1  # "Bank's": clitics stay inside words
            low = t.lower()
            if (low in ("http", "https") and nxt == ":") or (low == "www" and nxt == "."):
                pieces["url"] += 1
            elif t in ("@", "#") and nxt[:1].isalnum():
                pieces["handle" if t == "@" else "hashtag"] += 1
            elif t.isdigit() and nxt in (".", ",") and after.isdigit():
                pieces["decimal"] += 1
            elif t in ("'", "’") and nxt.lower() in _CLITIC_ENDS:
                pieces["ptb_clitic"] += 1
    return tuple(s for s in _WHOLE if whole[s] >= WHOLE_MIN_COUNT and whole[s] > pieces[s])


#: how many example sentences the statistics keep (the sense gate's shots and reference)
EXAMPLES = 24


def example_sentences(token_rows: Rows, spans: Sequence[Sequence[Span]], n: int = EXAMPLES) -> tuple[tuple[str, ...], ...]:
    """Up to ``n`` sentences of the split that tag an entity and read as a sentence (8 to 40 tokens), spread evenly
    over it in its order (no randomness: the same split gives the same examples).

    Example:
        >>> rows = [["Gout", "is", "a", "common", "form", "of", "painful", "arthritis", "."]] * 3
        >>> spans = [[Span(0, 1, "Disease")]] * 3
        >>> len(example_sentences(rows, spans, n=2))
        2
    """
    pool = [tuple(str(w) for w in t) for t, s in zip(token_rows, spans) if s and 8 <= len(t) <= 40]
    if len(pool) <= n:
        return tuple(pool)
    return tuple(pool[i * len(pool) // n] for i in range(n))
