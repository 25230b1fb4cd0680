"""The defect classes of the calibration canaries and how each is made from one gold sentence (see :mod:`.build`).

Wrong type in a one-type dataset (NCBI-disease): the row schema's ``enum`` holds only ``Disease`` and the decoder
rejects any other type before a judge sees the row, so a row-level ``wrong_type`` cannot occur and is not built; the
error that does occur, something of another category tagged as the one type, is ``name_like`` and
``ordinary_phrase``. At the entity level a gold mention is presented as a confuser category (:data:`CONFUSERS`):
a verifier whose probability follows the category, not the salience of a name, must reject "breast cancer" as a
Gene. Guides are not checked against the type list after the schema, so ``guide_wrong_type`` uses a confuser there.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..stages.base import squeeze
from ..tags import Span, detokenize, spans_to_tags, tags_to_spans

__all__ = ["BUILDERS", "CONFUSERS", "LEVELS", "Context", "Sentence", "build_guide", "fits", "guide_defect"]

ENTITY_DEFECTS = ("wrong_type", "ordinary_phrase", "name_like", "boundary_cut", "boundary_extended")
ROW_DEFECTS = (*ENTITY_DEFECTS, "mention_untagged", "seed_copy", "looped", "garbled", "truncated", "off_domain",
               "novel_untagged", "entity_swapped", "clauses_spliced")
GUIDE_DEFECTS = ("guide_wrong_type", "guide_missing_entity", "guide_entity_not_in_sentence", "guide_empty_context")
LEVELS = {"entity": ENTITY_DEFECTS, "row": ROW_DEFECTS, "guide": GUIDE_DEFECTS}
#: categories a one-type dataset's mention is presented as for ``wrong_type`` (never the dataset's own types)
CONFUSERS = {"ncbi_disease": ("Gene", "Chemical", "Anatomy")}
DEFAULT_CONFUSERS = ("Person", "Organization", "Location", "Chemical")
GUIDE_STRUCTURE = "A statement that relates its subject, an action or finding, and its object, with their modifiers."
MIN_TOKENS, MAX_CHARS = 6, 320  # a sentence the pipeline could emit (the composer schema caps text at 320 characters)
STOPWORDS = frozenset((
    "a", "an", "the", "and", "or", "but", "nor", "of", "in", "on", "at", "to", "for", "from", "by", "with", "without",
    "into", "onto", "over", "under", "about", "as", "than", "then", "that", "this", "these", "those", "there", "here",
    "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "is", "are", "was", "were", "be", "been",
    "being", "has", "have", "had", "do", "does", "did", "not", "no", "can", "could", "may", "might", "must", "shall",
    "should", "will", "would", "its", "it", "their", "they", "them", "he", "she", "his", "her", "we", "our", "you",
    "your", "i", "also", "such", "both", "each", "either", "all", "any", "some", "most", "more", "less", "very",
    "only", "other", "same", "so"))
CUT_AFTER = frozenset(("a", "an", "the", "to", "of", "with", "and", "in", "for", "by", "than", "from", "that"))
Sentence = tuple[tuple[str, ...], tuple[str, ...]]
Built = tuple[Sequence[str], Sequence[str], Span | None]


def fits(tokens: Sequence[str]) -> bool:
    """At least :data:`MIN_TOKENS` tokens and at most :data:`MAX_CHARS` characters of text."""
    return len(tokens) >= MIN_TOKENS and len(detokenize(tokens)) <= MAX_CHARS


def _text(tokens: Sequence[str], s: Span) -> str:
    return detokenize(tokens[s.start : s.end])


def build_guide(tokens: Sequence[str], tags: Sequence[str], domain: str) -> dict[str, Any]:
    """A correct guide of a gold sentence, in the guidance stage's format: the domain as context, a generic
    structure, every gold mention with its type, and up to five content words outside the mentions as keywords."""
    spans = tags_to_spans(tags)
    inside = {i for s in spans for i in range(s.start, s.end)}
    words = [t for i, t in enumerate(tokens) if i not in inside and _content(t)]
    return {"context": domain, "structure": GUIDE_STRUCTURE,
            "entity_roles": [_role(_text(tokens, s), s.label) for s in spans],
            "keywords": list(dict.fromkeys(words))[:5]}


def _role(text: str, label: str) -> dict[str, str]:
    return {"text": text, "type": label, "role": f"a {label} this sentence mentions"}


# ---------------------------------------------------------------- builders: one per class, None when not applicable
@dataclass(frozen=True)
class Context:
    """What a builder may use besides its sentence.

    Attributes:
        name, types: the dataset's name and entity types.
        mentions: lower-cased gold mention texts (never tagged as a defect: the gold tags them somewhere).
        sentences: the dataset's gold sentences (guide defects draw other mentions from them).
        level: ``entity``, ``row`` or ``guide``.
        others: the other datasets' gold sentences (``off_domain``).
        domain: the data's domain, the context of a guide.
        source: the augmenter's source split (the statistics' sentences), lower-cased, one sentence a line padded
            with spaces (:attr:`Gold.source_text <hf_rgda.canaries.Gold>`): ``novel_untagged`` leaves untagged only
            a mention it does not hold.
    """

    name: str
    types: tuple[str, ...]
    mentions: frozenset[str]
    sentences: Sequence[Sentence]
    level: str
    others: Sequence[Sentence]
    domain: str = ""
    source: str = ""

    def in_source(self, words: Sequence[str]) -> bool:
        """Whether the source split holds ``words`` anywhere, tagged or not (lower-cased, as whole tokens)."""
        return f" {' '.join(words).lower()} " in self.source

    def wrong_types(self, label: str) -> list[str]:
        """The types ``wrong_type`` may present a ``label`` mention as (see the module docstring)."""
        types = [t for t in self.types if t != label]
        if types or self.level == "row":
            return types
        return [t for t in CONFUSERS.get(self.name, DEFAULT_CONFUSERS) if t not in self.types]


def _content(tok: str) -> bool:
    return tok.isalpha() and len(tok) >= 3 and tok.lower() not in STOPWORDS


def _free(tags: Sequence[str], start: int, end: int) -> bool:
    """Tokens ``start..end`` are O and so is one token on each side: a span there touches no mention."""
    return all(tags[i] == "O" for i in range(max(0, start - 1), min(len(tags), end + 1)))


def _with_span(tokens: Sequence[str], tags: Sequence[str], span: Span, drop: Span | None = None) -> Built:
    spans = [s for s in tags_to_spans(tags) if s != drop] + [span]
    return tokens, spans_to_tags(sorted(spans), len(tokens)), span


def _good(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    spans = tags_to_spans(tags)
    return (tokens, tags, rng.choice(spans)) if spans else None


def _wrong_type(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    spans = tags_to_spans(tags)
    if not spans:
        return None
    s = rng.choice(spans)
    others = ctx.wrong_types(s.label)
    return _with_span(tokens, tags, Span(s.start, s.end, rng.choice(others)), drop=s) if others else None


def _ordinary_phrase(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    found = [(i, i + n) for n in (1, 2) for i in range(len(tokens) - n + 1)
             if _free(tags, i, i + n) and all(_content(t) and t.islower() for t in tokens[i : i + n])
             and detokenize(tokens[i : i + n]).lower() not in ctx.mentions]
    if not found:
        return None
    start, end = rng.choice(found)
    return _with_span(tokens, tags, Span(start, end, rng.choice(ctx.types)))


def _name_like(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    def name_like(t: str) -> bool:  # "BRCA1", "WASP", "Borrower"; not "-RRB-", "4GB" or "The"
        acronym = sum(c.isupper() for c in t) >= 2
        return (t[:1].isalpha() and t.isalnum() and (acronym or (t[0].isupper() and t[1:].islower() and len(t) >= 3))
                and t.lower() not in STOPWORDS)

    found = [i for i in range(1, len(tokens)) if _free(tags, i, i + 1) and name_like(tokens[i])
             and tokens[i].lower() not in ctx.mentions]
    if not found:
        return None
    i = rng.choice(found)
    return _with_span(tokens, tags, Span(i, i + 1, rng.choice(ctx.types)))


def _boundary_cut(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    def wordy(i: int) -> bool:
        return any(c.isalnum() for c in tokens[i])

    found = [(s, cut) for s in tags_to_spans(tags) if s.end - s.start >= 2
             for cut in (Span(s.start + 1, s.end, s.label), Span(s.start, s.end - 1, s.label))
             if wordy(s.start if cut.start > s.start else s.end - 1) and wordy(cut.start) and wordy(cut.end - 1)]
    if not found:
        return None
    s, cut = rng.choice(found)
    return _with_span(tokens, tags, cut, drop=s)


def _boundary_extended(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    found = [(s, Span(s.start + d0, s.end + d1, s.label)) for s in tags_to_spans(tags)
             for d0, d1, i in ((-1, 0, s.start - 1), (0, 1, s.end))
             if 0 <= i < len(tokens) and tags[i] == "O" and any(c.isalpha() for c in tokens[i])]
    if not found:
        return None
    s, wider = rng.choice(found)
    return _with_span(tokens, tags, wider, drop=s)


def _mention_untagged(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    spans = tags_to_spans(tags)
    if not spans:
        return None
    s = rng.choice(spans)
    return tokens, spans_to_tags([x for x in spans if x != s], len(tokens)), s


def _looped(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    def boundary(i: int) -> bool:
        return i == len(tags) or not tags[i].startswith("I-")

    n = 4
    found = [i for i in range(len(tokens) - n + 1) if boundary(i) and boundary(i + n)
             and sum(any(c.isalpha() for c in t) for t in tokens[i : i + n]) >= 3]
    if not found or not tags_to_spans(tags):
        return None
    i = rng.choice(found)
    return (list(tokens[: i + n]) + list(tokens[i : i + n]) * 2 + list(tokens[i + n :]),
            list(tags[: i + n]) + list(tags[i : i + n]) * 2 + list(tags[i + n :]), None)


def _garbled(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    found = [i for i, t in enumerate(tokens) if tags[i] == "O" and t.isalpha() and len(t) >= 4]
    if not found or not tags_to_spans(tags):
        return None
    i = rng.choice(found)
    return [*tokens[:i], tokens[i][: len(tokens[i]) // 2] + "\ufffd", *tokens[i + 1 :]], tags, None


def _truncated(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    spans = tags_to_spans(tags)
    found = [i for i in range(max(len(tokens) // 2, MIN_TOKENS - 1), len(tokens) - 2)
             if tokens[i].lower() in CUT_AFTER and tags[i] == "O" and any(s.end <= i for s in spans)]
    if not found:
        return None
    i = rng.choice(found)
    return tokens[: i + 1], tags[: i + 1], None


def _off_domain(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    found = [t for t, _ in ctx.others if fits(t) and sum(w.isalpha() for w in t) >= MIN_TOKENS]
    if not found:
        return None
    other = rng.choice(found)
    return other, ["O"] * len(other), None


def _novel_untagged(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    """A mention left untagged whose text the source split nowhere holds (so the split's lexicon, the checker's
    ``known_mention``, cannot know it), another mention of the row kept tagged; none whose text another mention of
    the row repeats (``untagged_mention`` would see it)."""
    spans = tags_to_spans(tags)
    texts = Counter(tuple(t.lower() for t in tokens[s.start : s.end]) for s in spans)
    found = [s for s in spans if texts[tuple(t.lower() for t in tokens[s.start : s.end])] == 1
             and not ctx.in_source(tokens[s.start : s.end]) and any(c.isalpha() for c in _text(tokens, s))]
    if len(spans) < 2 or not found:
        return None
    s = rng.choice(found)
    return tokens, spans_to_tags([x for x in spans if x != s], len(tokens)), s


def _entity_swapped(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    """Fluent nonsense: a mention and another part of the sentence change places, each keeping its tags (the tags
    stay right, the sense goes): a mention of another type where the row has one, else one or two lower-case
    content words outside every mention ("Germline [breast cancer] in BRCA1 cause mutations .")."""
    spans = tags_to_spans(tags)
    words = [Span(i, i + n, "O") for n in (1, 2) for i in range(len(tokens) - n + 1)
             if _free(tags, i, i + n) and all(_content(t) and t.islower() for t in tokens[i : i + n])]
    pairs = [(s, o) for s in spans for o in spans if s.label < o.label and _text(tokens, s) != _text(tokens, o)]
    if not pairs:
        pairs = [(s, w) for s in spans for w in words if w.end <= s.start - 1 or s.end + 1 <= w.start]
    if not pairs:
        return None
    a, b = sorted(rng.choice(pairs))
    pieces = [(tokens[: a.start], tags[: a.start]), (tokens[b.start : b.end], tags[b.start : b.end]),
              (tokens[a.end : b.start], tags[a.end : b.start]), (tokens[a.start : a.end], tags[a.start : a.end]),
              (tokens[b.end :], tags[b.end :])]
    new = [t for p, _ in pieces for t in p]
    return None if _written(ctx, new) else (new, [g for _, p in pieces for g in p], None)


def _written(ctx: Context, tokens: Sequence[str]) -> bool:
    """Whether ``tokens`` are a sentence of the dataset as it is (a swap or a splice that made a real sentence)."""
    return any(tuple(t) == tuple(tokens) for t, _ in ctx.sentences)


#: words two sentences are spliced at (``clauses_spliced``): each opens a clause or a phrase
PIVOTS = frozenset(("in", "of", "with", "by", "and", "that", "which", "is", "are", "was", "were", "to", "for"))


def _clauses_spliced(ctx: Context, tokens: Sequence[str], tags: Sequence[str], rng: random.Random) -> Built | None:
    """Fluent nonsense: the sentence's opening up to a word in :data:`PIVOTS`, then another sentence's rest from the
    same word ("Germline mutations in | the colon cause ..."), every mention with its gold tags; the opening keeps a
    mention and both parts hold at least three tokens."""
    spans = tags_to_spans(tags)
    cuts = [i for i in range(3, len(tokens) - 2) if tokens[i].lower() in PIVOTS and tags[i] == "O"
            and any(s.end <= i for s in spans)]
    found = [(i, k, j) for k, (other, other_tags) in enumerate(ctx.sentences) if tuple(other) != tuple(tokens)
             for i in cuts for j in range(2, len(other) - 3)
             if other[j].lower() == tokens[i].lower() and other_tags[j] == "O"]
    rng.shuffle(found)
    for i, k, j in found:
        other, other_tags = ctx.sentences[k]
        if not _written(ctx, [*tokens[:i], *other[j:]]):
            return [*tokens[:i], *other[j:]], [*tags[:i], *other_tags[j:]], None
    return None


BUILDERS: dict[str, Callable[[Context, Sequence[str], Sequence[str], random.Random], Built | None]] = {
    "good": _good, "wrong_type": _wrong_type, "ordinary_phrase": _ordinary_phrase, "name_like": _name_like,
    "boundary_cut": _boundary_cut, "boundary_extended": _boundary_extended, "mention_untagged": _mention_untagged,
    "seed_copy": _good, "looped": _looped, "garbled": _garbled, "truncated": _truncated, "off_domain": _off_domain,
    "novel_untagged": _novel_untagged, "entity_swapped": _entity_swapped, "clauses_spliced": _clauses_spliced,
}


def guide_defect(ctx: Context, label: str, guide: dict[str, Any], tokens: Sequence[str],
                  rng: random.Random) -> dict[str, Any] | None:
    """``guide`` with the defect ``label`` injected, or None when this sentence cannot carry it."""
    roles = [dict(r) for r in guide["entity_roles"]]
    k = rng.randrange(len(roles))
    if label == "guide_empty_context":
        return {**guide, "context": ""}
    if label == "guide_missing_entity":
        return {**guide, "entity_roles": roles[:k] + roles[k + 1 :]}
    if label == "guide_wrong_type":
        others = ctx.wrong_types(roles[k]["type"])
        if not others:
            return None
        roles[k] = _role(roles[k]["text"], rng.choice(others))
        return {**guide, "entity_roles": roles}
    # guide_entity_not_in_sentence: another mention of the same type, from the dataset, that the sentence lacks
    squeezed = squeeze(detokenize(tokens))
    pool = sorted({_text(t, s) for t, g in ctx.sentences for s in tags_to_spans(g) if s.label == roles[k]["type"]})
    pool = [m for m in pool if squeeze(m) not in squeezed]
    if not pool:
        return None
    roles[k]["text"] = rng.choice(pool)
    return {**guide, "entity_roles": roles}
