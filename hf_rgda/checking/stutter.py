"""The checker's ``stutter`` rule and its repair: a word or phrase a small model wrote again right after itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from operator import eq

from ..records import Candidate
from ..tags import Span, spans_to_tags, tags_to_spans
from .sentence import Sentence
from .table import Finding

__all__ = ["find_stutter", "keep_one_copy", "stutter"]


def stutter(s: Sentence) -> str | None:
    """A word or phrase written three times in a row, or an entity's words twice in a row ("treating influenza
    influenza influenza infections", "hypobetalipoproteinemia hypobetalipoproteinemia": the 1.5B, NCBI-disease). On
    the gold test sentences of NCBI-disease, SciERC and FIN it fires once, on a FIN signature block ("/ s / Peter
    Case Peter Case Title : Chief"; ``benchmarks/checker_gold.py``); a plain phrase twice is prose ("New York , New
    York")."""
    found = find_stutter(s.tokens, s.spans, s.low)
    if found is None:
        return None
    start, k, copies = found
    return f"{' '.join(s.tokens[start : start + k])!r} is written {copies} times in a row"


def find_stutter(tokens: Sequence[str], spans: Sequence[Span],
                 low: Sequence[str] | None = None) -> tuple[int, int, int] | None:
    """The first place where 1 to 3 words (one of them a word of 3 letters or more) are written three times in a
    row (in any case), or twice as written where an entity is one copy or holds both: ``(start, words per copy,
    copies)``, or None. ``low``: the tokens lower-cased, where the caller has them.

    Example:
        >>> find_stutter("the cancer Cancer cancer grew".split(), [])
        (1, 1, 3)
        >>> find_stutter("in New York , New York".split(), [])  # a phrase twice is prose
        >>> find_stutter("patterns of AND and OR".split(), [Span(2, 3, "Generic")])  # "AND" is not "and"
    """
    low = [t.lower() for t in tokens] if low is None else list(low)
    if not any(any(map(eq, low, low[k:])) for k in (1, 2, 3)):
        return None  # no word comes again 1 to 3 words later: no copy starts anywhere
    # a copy starts where a word comes again 1 to 3 words later: the only places worth the full look
    starts = sorted({i for k in (1, 2, 3) for i, (a, b) in enumerate(zip(low, low[k:])) if a == b})
    for i in starts:
        for k in (1, 2, 3):
            unit = low[i : i + k]
            if len(unit) < k or not any(w.isalpha() and len(w) >= 3 for w in unit):
                continue
            copies = 1
            while low[i + copies * k : i + (copies + 1) * k] == unit:
                copies += 1
            if copies >= 3:
                return i, k, copies
            end = i + 2 * k
            if (copies == 2 and list(tokens[i : i + k]) == list(tokens[i + k : end])
                    and any((sp.start, sp.end) in ((i, i + k), (i + k, end)) or sp.start <= i < end <= sp.end
                            for sp in spans)):
                return i, k, copies
    return None


def keep_one_copy(cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
    """Of a word or phrase written several times in a row keep one copy, with the tags of its most tagged copy
    (the first on a tie); a tag left inside no entity opens one."""
    hit = find_stutter(s.tokens, s.spans)
    if hit is None:
        return None
    start, k, copies = hit
    toks, tags = list(cand.tokens), list(cand.tags)
    runs = [tags[start + c * k : start + (c + 1) * k] for c in range(copies)]
    kept = max(range(copies), key=lambda c: (sum(g != "O" for g in runs[c]), -c))
    tags = tags[:start] + runs[kept] + tags[start + copies * k :]
    toks = toks[: start + k] + toks[start + copies * k :]
    tags = spans_to_tags(tags_to_spans(tags, strict=False), len(tags))  # an I- whose B- was dropped opens the entity
    cand.tokens, cand.tags = toks, tags
    cand.salvaged.append(f"{found.rule.name}: kept one of {copies} copies of {' '.join(toks[start : start + k])!r}")
    return replace(s, tokens=toks, tags=tags)
