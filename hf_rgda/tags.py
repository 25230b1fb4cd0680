"""Tag schemes, spans, label sets, ``ClassLabel`` ids and names, and the sentence tokenizer.

Spans are ``(start, end, label)`` with ``end`` exclusive, over token positions. Every scheme converts
through spans, so ``convert_tags(tags, "IOB2", "BILOU")`` is ``spans_to_tags(tags_to_spans(...))``.

Example:
    >>> tags_to_spans(["B-Disease", "I-Disease", "O"])
    [Span(start=0, end=2, label='Disease')]
    >>> spans_to_tags([Span(0, 2, "Disease")], 3, scheme="BILOU")
    ['B-Disease', 'L-Disease', 'O']
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ._exceptions import SchemaError

__all__ = [
    "SCHEMES",
    "TOKEN_SHAPES",
    "Span",
    "TokenStyle",
    "convert_tags",
    "detokenize",
    "entity_types",
    "format_inline",
    "label_names",
    "label_names_of",
    "parse_inline",
    "spans_to_tags",
    "tag_name",
    "tags_to_spans",
    "to_tag_names",
    "tokenize",
    "validate_tags",
]

SCHEMES = ("IOB1", "IOB2", "BIOES", "BILOU", "IO")
_PREFIXES = {
    "IOB1": ("B", "I"),
    "IOB2": ("B", "I"),
    "BIOES": ("B", "I", "E", "S"),
    "BILOU": ("B", "I", "L", "U"),
    "IO": ("I",),
}
_PTB_BRACKETS = r"-[LR][RSC]B-|"  # "-LRB-" etc.: Penn Treebank brackets, as SciERC writes "(" (models copy them)


class Span(NamedTuple):
    """An entity over token positions ``[start, end)``."""

    start: int
    end: int
    label: str


def _check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise SchemaError(f"unknown tag scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    return scheme


def _split(tag: str, pos: int) -> tuple[str, str]:
    if tag == "O":
        return "O", ""
    prefix, sep, label = tag.partition("-")
    if not sep or not label or len(prefix) != 1:
        raise SchemaError(f"token {pos}: malformed tag {tag!r} (expected 'O' or '<prefix>-<type>')")
    return prefix, label


def tags_to_spans(tags: Sequence[str], scheme: str = "IOB2", *, strict: bool = True) -> list[Span]:
    """Decode a tag sequence into spans.

    Args:
        tags: one tag per token, e.g. ``["B-PER", "I-PER", "O"]``.
        scheme: one of :data:`SCHEMES`.
        strict: raise :class:`SchemaError` on an ill-formed sequence (e.g. IOB2 ``I-X`` without ``B-X``);
            when False, such a tag opens a new entity instead.

    Returns:
        The spans, in order.
    """
    allowed = _PREFIXES[_check_scheme(scheme)]
    spans: list[Span] = []
    start, label = -1, ""

    def close(end: int) -> None:
        nonlocal start, label
        if start >= 0:
            spans.append(Span(start, end, label))
        start, label = -1, ""

    for i, tag in enumerate(tags):
        if tag == "O" and start < 0:  # the common case: outside, nothing open
            continue
        prefix, lab = _split(tag, i)
        if prefix != "O" and prefix not in allowed:
            raise SchemaError(f"token {i}: prefix {prefix!r} of {tag!r} is not part of {scheme}")
        inside = start >= 0 and lab == label
        if prefix == "O":
            if strict and scheme in ("BIOES", "BILOU") and start >= 0:
                raise SchemaError(f"token {i}: entity {label!r} opened at {start} is never closed")
            close(i)
        elif prefix in ("S", "U"):
            if strict and start >= 0 and scheme in ("BIOES", "BILOU"):
                raise SchemaError(f"token {i}: entity {label!r} opened at {start} is never closed")
            close(i)
            spans.append(Span(i, i + 1, lab))
        elif prefix == "B":
            if strict and scheme == "IOB1" and not inside:
                raise SchemaError(f"token {i}: IOB1 {tag!r} must directly follow an entity of the same type")
            if strict and start >= 0 and scheme in ("BIOES", "BILOU"):
                raise SchemaError(f"token {i}: entity {label!r} opened at {start} is never closed")
            close(i)
            start, label = i, lab
        elif prefix == "I":
            if not inside:
                if strict and scheme in ("IOB2", "BIOES", "BILOU"):
                    raise SchemaError(f"token {i}: {tag!r} does not continue an entity of type {lab!r}")
                close(i)
                start, label = i, lab
        else:  # E or L: last token of a multi-token entity
            if not inside:
                if strict:
                    raise SchemaError(f"token {i}: {tag!r} closes no open entity of type {lab!r}")
                close(i)
                start, label = i, lab
            close(i + 1)
    if strict and start >= 0 and scheme in ("BIOES", "BILOU"):
        raise SchemaError(f"token {len(tags)}: entity {label!r} opened at {start} is never closed")
    close(len(tags))
    return spans


def spans_to_tags(spans: Iterable[Span], length: int, scheme: str = "IOB2") -> list[str]:
    """Encode spans as tags.

    Args:
        spans: non-overlapping spans within ``[0, length)``.
        length: number of tokens.
        scheme: one of :data:`SCHEMES`.

    Raises:
        SchemaError: on overlapping, empty or out-of-range spans.
    """
    _check_scheme(scheme)
    tags = ["O"] * length
    prev_end, prev_label = -1, ""
    for sp in sorted(spans):
        if not 0 <= sp.start < sp.end <= length:
            raise SchemaError(f"span {tuple(sp)} is empty or outside a sentence of {length} tokens")
        if sp.start < prev_end:
            raise SchemaError(f"span {tuple(sp)} overlaps the previous span")
        n = sp.end - sp.start
        if scheme == "IO":
            body = ["I"] * n
        elif scheme == "IOB1":
            first = "B" if (sp.start == prev_end and sp.label == prev_label) else "I"
            body = [first] + ["I"] * (n - 1)
        elif scheme == "IOB2":
            body = ["B"] + ["I"] * (n - 1)
        else:
            single, last = ("S", "E") if scheme == "BIOES" else ("U", "L")
            body = [single] if n == 1 else ["B"] + ["I"] * (n - 2) + [last]
        tags[sp.start : sp.end] = [f"{p}-{sp.label}" for p in body]
        prev_end, prev_label = sp.end, sp.label
    return tags


def convert_tags(tags: Sequence[str], source: str, target: str, *, strict: bool = True) -> list[str]:
    """Re-encode ``tags`` from scheme ``source`` to scheme ``target`` (``strict=False``: read as
    :func:`tags_to_spans` reads leniently, e.g. a model's per-word predictions)."""
    return spans_to_tags(tags_to_spans(tags, source, strict=strict), len(tags), target)


def entity_types(labels: Iterable[str]) -> list[str]:
    """The entity types of a label list, in first-seen order: ``["O","B-PER","I-PER"] -> ["PER"]``."""
    seen: dict[str, None] = {}
    for lab in labels:
        if lab != "O":
            seen.setdefault(_split(lab, -1)[1], None)
    return list(seen)


def label_names(types: Iterable[str], scheme: str = "IOB2") -> list[str]:
    """The full label list of a scheme: ``["PER"] -> ["O", "B-PER", "I-PER"]``."""
    prefixes = _PREFIXES[_check_scheme(scheme)]
    return ["O"] + [f"{p}-{t}" for t in types for p in prefixes]


def tag_name(tag: Any, label_names: Sequence[str]) -> str:
    """One tag as its name: a name of ``label_names``, or a ``ClassLabel`` id into it.

    Raises:
        SchemaError: a name outside the label set, or an id out of its range.
    """
    if isinstance(tag, str):
        if tag not in label_names:
            raise SchemaError(f"tag {tag!r} is not in the label set {list(label_names)}")
        return tag
    if isinstance(tag, int) and 0 <= tag < len(label_names):
        return label_names[tag]
    raise SchemaError(f"tag id {tag!r} is outside the label set of {len(label_names)} labels")


def _class_label_names(ds: Any, tags_column: str) -> list[str] | None:
    """The names of a ``Sequence(ClassLabel)`` tag column of dataset ``ds``; None for a column of tag strings."""
    feature = getattr(ds.features[tags_column], "feature", None)
    names = getattr(feature, "names", None)
    return list(names) if names else None


def label_names_of(*datasets: Any, tags_column: str = "ner_tags") -> list[str]:
    """Label names from a ``ClassLabel`` feature, else the sorted union of string tags (``O`` first)."""
    seen: set[str] = set()
    for ds in datasets:
        names = _class_label_names(ds, tags_column)
        if names:
            return names
        seen.update(t for row in ds[tags_column][:] for t in row)
    return ["O", *sorted(seen - {"O"})]


def to_tag_names(ds: Any, tags_column: str = "ner_tags") -> list[list[str]]:
    """The tag column of dataset ``ds`` as names (``ClassLabel`` ids converted)."""
    names, rows = _class_label_names(ds, tags_column), ds[tags_column][:]  # [:]: the column read at once
    return [[tag_name(t, names) for t in r] for r in rows] if names else [list(r) for r in rows]


def validate_tags(
    tokens: Sequence[str], tags: Sequence[str], types: Iterable[str], scheme: str = "IOB2"
) -> list[Span]:
    """Check one tagged sentence and return its spans.

    Raises:
        SchemaError: empty sentence, length mismatch, empty token, unknown entity type or invalid scheme.
    """
    if len(tokens) == 0:
        raise SchemaError("empty sentence (no tokens)")
    if len(tokens) != len(tags):
        raise SchemaError(f"{len(tokens)} tokens but {len(tags)} tags")
    for i, tok in enumerate(tokens):
        if not isinstance(tok, str) or not tok.strip():
            raise SchemaError(f"token {i} is empty or not a string: {tok!r}")
    spans = tags_to_spans(tags, scheme)
    known = set(types)
    for sp in spans:
        if sp.label not in known:
            raise SchemaError(f"token {sp.start}: entity type {sp.label!r} is not in the label set {sorted(known)}")
    return spans


#: the shapes of token a split may keep whole (:class:`TokenStyle`), each with an example written whole
TOKEN_SHAPES: dict[str, str] = {
    "url": "http://t.co/x1",  # a web address: http(s):// or www., up to a space (a final . , ; : ! ? ) ] } ' " apart)
    "handle": "@user",  # a social-media handle
    "hashtag": "#tag",
    "decimal": "3.5",  # digits with a decimal point or thousands comma inside: 3.5, 1,000, 0.25
    "hyphen": "BRCA1-linked",  # a hyphenated word
    "clitic": "Huntington's",  # an apostrophe inside a word: the clitic stays on it
    "ptb_clitic": "'s",  # the Penn Treebank's way: "Huntington 's", "do n't" ('s 're 've 'll 'd 'm n't of their own)
}
_CLITIC = r"['’](?i:s|re|ve|ll|d|m)(?!\w)|(?i:n['’]t)(?!\w)"


class TokenStyle(NamedTuple):
    """Which token shapes (:data:`TOKEN_SHAPES`) a tokenizer keeps whole; every other one is split into word and
    punctuation pieces ("http : / / t . co / x1", "@ user", "3 . 5", "Prader - Willi", "Huntington ' s").

    The default keeps hyphenated words and clitics whole (``tokenize``'s own default); :meth:`pieces` keeps none
    (``split_hyphens``: NCBI-disease, FIN). A split's own style is learned from its tokens
    (:attr:`SplitStats.token_style <hf_rgda.checking.SplitStats>`) or given as text (:meth:`parse`).

    Example:
        >>> tokenize("@ana: 3.5 pts http://t.co/x1.", style=TokenStyle.parse("url+handle+decimal"))
        ['@ana', ':', '3.5', 'pts', 'http://t.co/x1', '.']
    """

    whole: tuple[str, ...] = ("hyphen", "clitic")

    @classmethod
    def pieces(cls) -> TokenStyle:
        """Every shape split into pieces (the old ``split_hyphens=True``)."""
        return cls(())

    @classmethod
    def of(cls, shapes: Iterable[str]) -> TokenStyle:
        """The style keeping ``shapes`` whole, in the order of :data:`TOKEN_SHAPES`.

        Raises:
            SchemaError: an unknown shape, or both clitic styles.
        """
        given = set(shapes)
        unknown = sorted(given - set(TOKEN_SHAPES))
        if unknown:
            raise SchemaError(f"unknown token shape(s) {unknown}; choose from {', '.join(TOKEN_SHAPES)}")
        if {"clitic", "ptb_clitic"} <= given:
            raise SchemaError("'clitic' (Huntington's whole) and 'ptb_clitic' (Huntington 's) exclude each other")
        return cls(tuple(x for x in TOKEN_SHAPES if x in given))

    @classmethod
    def parse(cls, text: str) -> TokenStyle:
        """From ``"url+handle+hashtag"`` (shapes joined by ``+``), ``"none"`` for :meth:`pieces`."""
        names = [] if text.strip() == "none" else [x.strip() for x in text.split("+")]
        return cls.of(names)

    def __str__(self) -> str:
        return "+".join(self.whole) or "none"

    @property
    def pattern(self) -> re.Pattern[str]:
        return _pattern(self.whole)


@functools.lru_cache(maxsize=32)
def _pattern(whole: tuple[str, ...]) -> re.Pattern[str]:
    """The tokenizer of a style: its whole shapes first, then words (joined across a hyphen or an apostrophe where
    those are whole), then one punctuation character at a time."""
    alts = [_PTB_BRACKETS.rstrip("|")]
    if "url" in whole:
        alts.append(r"(?:https?://|www\.)\S*[^\s.,;:!?)\]}'\"]")
    if "handle" in whole:
        alts.append(r"@\w+")
    if "hashtag" in whole:
        alts.append(r"#\w+")
    if "decimal" in whole:
        alts.append(r"\d+(?:[.,]\d+)+(?!\w)")
    if "ptb_clitic" in whole:
        alts.append(_CLITIC)
    joins = ("-" if "hyphen" in whole else "") + ("'’" if "clitic" in whole else "")
    word = r"(?:(?!(?i:n['’]t)(?!\w))\w)+" if "ptb_clitic" in whole else r"\w+"  # "do" of "don't"
    alts.append(word + (rf"(?:[{joins}]{word})*" if joins else ""))
    alts.append(r"[^\w\s]")
    return re.compile("|".join(alts))


def tokenize(text: str, *, split_hyphens: bool = False, style: TokenStyle | None = None) -> list[str]:
    """Split text into word and punctuation tokens; hyphenated words (and "Huntington's") stay whole unless
    ``split_hyphens`` (the convention of corpora such as NCBI-disease and FIN, which write "Prader - Willi" and
    "Bank ' s"). ``style`` (a :class:`TokenStyle`, e.g. the split's own) replaces both: the shapes it keeps whole
    (URLs, handles, hashtags, decimals, hyphenated words, clitics) stay one token, the others are split.

    Example:
        >>> tokenize("BRCA1-linked breast cancer (BC).")
        ['BRCA1-linked', 'breast', 'cancer', '(', 'BC', ')', '.']
        >>> tokenize("virtual reality -LRB- VR -RRB-")
        ['virtual', 'reality', '-LRB-', 'VR', '-RRB-']
        >>> tokenize("Huntington's BRCA1-linked cancer", split_hyphens=True)
        ['Huntington', "'", 's', 'BRCA1', '-', 'linked', 'cancer']
        >>> tokenize("Huntington's cancer doesn't", style=TokenStyle.of(["ptb_clitic"]))
        ['Huntington', "'s", 'cancer', 'does', "n't"]
    """
    if style is None:
        style = TokenStyle.pieces() if split_hyphens else TokenStyle()
    return style.pattern.findall(text)


_INLINE_RE = re.compile(r"\[([^\[\]]+)\]\(([^()\s]+)\)")


def parse_inline(text: str) -> tuple[list[str], list[str]]:
    """Tokens and IOB2 tags from a sentence with inline entities: ``"[breast cancer](Disease) is common ."``.

    Example:
        >>> parse_inline("Mutations cause [breast cancer](Disease).")
        (['Mutations', 'cause', 'breast', 'cancer', '.'], ['O', 'O', 'B-Disease', 'I-Disease', 'O'])
    """
    tokens: list[str] = []
    tags: list[str] = []
    pos = 0
    for m in _INLINE_RE.finditer(text):
        before = tokenize(text[pos : m.start()])
        tokens += before
        tags += ["O"] * len(before)
        words = tokenize(m.group(1))
        tokens += words
        tags += [f"B-{m.group(2)}"] + [f"I-{m.group(2)}"] * (len(words) - 1) if words else []
        pos = m.end()
    rest = tokenize(text[pos:])
    return tokens + rest, tags + ["O"] * len(rest)


def format_inline(tokens: Sequence[str], tags: Sequence[str], scheme: str = "IOB2") -> str:
    """The inverse of :func:`parse_inline` (tokens joined by spaces).

    Example:
        >>> format_inline(["Gout", "hurts"], ["B-Disease", "O"])
        '[Gout](Disease) hurts'
    """
    out, pos = [], 0
    for s in tags_to_spans(list(tags), scheme, strict=False):
        out += list(tokens[pos : s.start]) + [f"[{' '.join(tokens[s.start : s.end])}]({s.label})"]
        pos = s.end
    return " ".join(out + list(tokens[pos:]))


_NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", ")", "]", "}", "%", "'s"}
_NO_SPACE_AFTER = {"(", "[", "{"}


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens into readable text: ``["a", "(", "b", ")", "."] -> "a (b)."``."""
    if not tokens:
        return ""
    out = [tokens[0]]
    for prev, tok in itertools.pairwise(tokens):
        if tok not in _NO_SPACE_BEFORE and prev not in _NO_SPACE_AFTER:
            out.append(" ")
        out.append(tok)
    return "".join(out)
