"""The repairs the checker's table rows carry (:class:`~hf_rgda.checking.table.Repair`): what ``salvage=True`` does
where a rule fires, and where the evidence is too mixed for it (the ``unless`` predicates). The repair that tags a
known mention is beside its rule in :mod:`.rules` (it reads the rule's own search)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import replace

from ..records import Candidate
from ..tags import Span, tags_to_spans
from .sentence import Sentence
from .table import Finding

__all__ = ["head_ends_another_type", "head_typical_elsewhere", "keep_one_sentence", "letterless_elsewhere",
           "sentence_breaks", "swap_entities", "untag"]

#: a swapped-in entity is drawn from the first this many mentions of its type (the most frequent)
SWAP_FROM = 50


def sentence_breaks(toks: Sequence[str]) -> list[int]:
    """Indices of tokens ending a sentence that another follows ("... word . Next")."""
    return [i for i in range(1, len(toks) - 1)
            if toks[i] in (".", "!", "?") and toks[i - 1].isalpha() and toks[i - 1].islower() and len(toks[i - 1]) > 2
            and toks[i + 1][:1].isupper() and toks[i + 1].isalpha()]


def keep_one_sentence(cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
    """Of several sentences keep the one with the most entities (the first on a tie); None where an entity crosses a
    break."""
    toks, tags = cand.tokens, cand.tags
    cuts = sentence_breaks(toks)
    bounds = list(zip([0, *(c + 1 for c in cuts)], [c + 1 for c in cuts] + [len(toks)]))
    spans = tags_to_spans(tags)
    if not cuts or any(a < sp.start < b < sp.end for sp in spans for a, b in bounds):
        return None
    a, b = max(bounds, key=lambda ab: (sum(ab[0] <= sp.start < ab[1] for sp in spans), -ab[0]))
    cand.tokens, cand.tags = toks[a:b], tags[a:b]
    cand.salvaged.append(f"{found.rule.name}: kept sentence {bounds.index((a, b)) + 1} of {len(bounds)}")
    return replace(s, tokens=cand.tokens, tags=cand.tags)


def untag(cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
    """Untag the entity ``found`` flags (the rest of the row stays)."""
    span = found.span
    if span is None:  # the untag rules are entity rules: never so
        return None
    cand.tags = cand.tags[: span.start] + ["O"] * (span.end - span.start) + cand.tags[span.end :]
    cand.salvaged.append(f"{found.rule.name}: untagged {' '.join(cand.tokens[span.start : span.end])!r} "
                         f"({found.detail})")
    return s.retagged(cand.tags)


def _others(s: Sentence, span: Span) -> list[str]:
    return [t for t in s.checker.stats.heads if t != span.label]


def letterless_elsewhere(s: Sentence, span: Span) -> bool:
    """Another type does end mentions in words without letters (a LOC's postcode)."""
    return any(not s.checker.stats.rarely_ends(t, "letterless", s.checker.atypical_share) for t in _others(s, span))


def head_ends_another_type(s: Sentence, span: Span) -> bool:
    """The entity's last word ends mentions of another type ("lender" as ORG; FIN tags it PER)."""
    return any(s.checker.stats.heads[t].get(s.tokens[span.end - 1]) for t in _others(s, span))


def head_typical_elsewhere(s: Sentence, span: Span) -> bool:
    """The entity's last word is not atypical of another type ("natural language processing" as Material:
    "processing" ends Task mentions)."""
    c = s.checker
    return any(not c.stats.atypical(s.tokens[span.end - 1], t, c.atypical_share, c.atypical_min_outside)
               for t in _others(s, span))


def swap_entities(cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
    """Put in place of each of the row's entities another mention of its type from the split's pool, one that
    neither the seed, this row nor the seed's rows kept before it tag: a row whose wording is new but whose entities
    repeat a sibling's becomes a row with entities of its own (the small model writes the guide's entity into every
    sentence it is asked for). The choice is fixed by the row's words; None where a type has no unused mention."""
    pool = s.checker.stats.mentions
    used = {" ".join(words) for words, _ in s.of_seed.mentions}  # lower-cased already
    for low, spans in [(s.low, s.spans), *zip(s.accepted_low, s.accepted_spans)]:
        used.update(" ".join(low[sp.start:sp.end]) for sp in spans)
    pick = zlib.crc32(" ".join(s.low).encode())
    tokens: list[str] = []
    tags: list[str] = []
    at, swapped = 0, []
    for span in s.spans:
        options = [m for m in pool.get(span.label, ())[:SWAP_FROM] if m.lower() not in used]
        if not options:
            return None
        new = options[pick % len(options)]
        used.add(new.lower())
        words = new.split(" ")
        tokens += cand.tokens[at:span.start] + words
        tags += cand.tags[at:span.start] + [f"B-{span.label}"] + [f"I-{span.label}"] * (len(words) - 1)
        swapped.append(f"{' '.join(cand.tokens[span.start:span.end])!r} -> {new!r}")
        at = span.end
    cand.tokens, cand.tags = tokens + cand.tokens[at:], tags + cand.tags[at:]
    cand.salvaged.append(f"{found.rule.name}: {', '.join(swapped)} (from the split's mentions of the same types)")
    return replace(s, tokens=cand.tokens, tags=cand.tags)
