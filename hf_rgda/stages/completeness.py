"""The completeness check: a mention of one of the dataset's types that a row leaves untagged is found, also where
the mention is new to the split (which the checker's ``known_mention`` and ``untagged_mention`` rules cannot see).

For each row that passed the entity verifier, the split's statistics propose at most :data:`PROPOSALS` untagged
spans (:func:`proposals`: a span ending in a word the split uses to end a mention, or in a new term-like word, each
with a type), and with ``mention_listing`` on the model also lists the sentence's mentions (one call, texts copied
from the sentence: measured worse and dearer with the 1.5B, so off by default). Each candidate is one question of
the entity verifier (:meth:`~hf_rgda.stages.verify.Verify.probability`), read as P(its type); one whose P reaches
``verify_threshold`` (the absolute one: neither the seed-relative threshold nor ``verify_split`` lowers the bar for
calling a row incomplete) is an untagged mention: the row is rejected (``mention_check/untagged_mention``, the
detail naming the text, type and probability). Reading P(any of the dataset's types) instead was measured worse
(FIN: the 1.5B puts most of an ordinary word's mass on the four type options). What the listing names outside the
sentence, over a tagged entity or of another type is passed over; so is a candidate the verifier does not confirm.

It runs where ``check_mentions`` is on (unset: the backend's own, on for the local model); ``hf-rgda calibrate``'s
scorer ``mentions`` reads it on the canaries, whose classes ``mention_untagged`` and ``novel_untagged`` leave a mention
untagged (the second one absent from the augmenter's split). Measured: docs/decisions/completeness.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from .. import prompts
from ..checking import SplitStats
from ..records import Candidate, SeedResult
from ..tags import Span, detokenize, tags_to_spans
from ..words import FUNCTION_WORDS
from .base import Run
from .registry import Stage, register
from .verify import Verify

__all__ = ["STAGE", "Completeness", "find_span", "mention_schema", "proposals", "scored_proposals"]

STAGE = "mention_check"


def mention_schema(types: Sequence[str], max_items: int = 12) -> dict[str, Any]:
    """The listing's answer: ``{"mentions": [{"text": ..., "type": one of types}, ...]}``."""
    item = {"type": "object", "properties": {"text": {"type": "string"}, "type": {"enum": list(types)}},
            "required": ["text", "type"], "additionalProperties": False}
    return {"type": "object", "properties": {"mentions": {"type": "array", "items": item, "maxItems": max_items}},
            "required": ["mentions"], "additionalProperties": False}


def find_span(tokens: Sequence[str], text: str) -> tuple[int, int] | None:
    """Where ``text`` stands in ``tokens`` as whole tokens (case and spacing ignored, so "Prader-Willi" is found as
    the split writes it, "Prader - Willi"; the first place), or None.

    Example:
        >>> find_span(["Risk", "of", "Prader", "-", "Willi", "syndrome", "."], "prader-willi Syndrome")
        (2, 6)
    """
    target = "".join(text.split()).lower()
    for i in range(len(tokens)) if target else ():
        joined = ""
        for j in range(i, len(tokens)):
            joined += tokens[j].lower()
            if joined == target:
                return i, j + 1
            if len(joined) >= len(target) or not target.startswith(joined):
                break
    return None


def candidates(tokens: Sequence[str], tags: Sequence[str], listed: Any, types: Sequence[str]) -> list[Span]:
    """The listed mentions that stand in the sentence outside every tagged entity, as spans (once each)."""
    tagged = {i for s in tags_to_spans(tags) for i in range(s.start, s.end)}
    out: list[Span] = []
    for item in listed.get("mentions", []) if isinstance(listed, dict) else []:
        if not isinstance(item, dict) or item.get("type") not in types or not str(item.get("text", "")).strip():
            continue
        where = find_span(tokens, str(item["text"]))
        if where is None or tagged & set(range(*where)) or any((s.start, s.end) == where for s in out):
            continue
        out.append(Span(where[0], where[1], item["type"]))
    return out


#: candidates the split's statistics propose a row at most (each one verifier question)
PROPOSALS = 4


def _new_term(word: str, stats: SplitStats, first: bool = False) -> float:
    """How much a word the split never writes outside or at the end of an entity looks like a term: 0.5 with a digit
    or a capital after its first letter ("MEN1", "IDDM"), 0.4 with a capital opening it where it does not open the
    sentence ("Willebrand"), 0.3 with six letters or more ("aniridia"); else (and for a word the split writes) 0."""
    form = stats.stats_form(word)
    if form in stats.context_words or any(form in h for h in stats.heads.values()):
        return 0.0
    if any(c.isdigit() or c.isupper() for c in word[1:]):
        return 0.5
    if word[:1].isupper() and not first:
        return 0.4
    return 0.3 if word.isalpha() and len(word) >= 6 else 0.0


def proposals(tokens: Sequence[str], tags: Sequence[str], stats: SplitStats, types: Sequence[str],
              limit: int = PROPOSALS) -> list[Span]:
    """Untagged spans the split's statistics say may be mentions, most likely first, at most ``limit``: each ends in
    a word the split mostly uses to end a mention of a type (its smoothed head share at least 0.3, seen twice), or in a
    new term-like word (:func:`_new_term`, every type); one span runs back over the content words before it (no
    function word or punctuation, at most the type's longest mention), one is that word alone where it is a new term,
    the split tags it alone (:meth:`~hf_rgda.checking.SplitStats.tagged_alone`: "disease" ends hundreds of
    NCBI-disease's mentions and is never one by itself) or it follows a tagged entity (a tag stopping short of the
    name's last word); none without statistics.
    The verifier then asks
    about each; a new mention the model's listing misses is found this way.

    Example:
        >>> stats = SplitStats(heads={"Disease": {"syndrome": 30}}, context_words={"the": 90, "of": 80, "risk": 9},
        ...                    max_entity_len={"Disease": 4})
        >>> proposals("The risk of Sotos syndrome .".split(), ["O"] * 6, stats, ["Disease"])
        [Span(start=3, end=5, label='Disease'), Span(start=3, end=4, label='Disease')]
    """
    return [span for span, _ in scored_proposals(tokens, tags, stats, types, limit)]


def scored_proposals(tokens: Sequence[str], tags: Sequence[str], stats: SplitStats, types: Sequence[str],
                     limit: int = PROPOSALS) -> list[tuple[Span, float]]:
    """:func:`proposals` with each span's prior: the smoothed head share of its last word (or the new-term score),
    plus 0.01 a word; the order is the prior's, highest first."""
    if not stats.heads and not stats.context_words:  # no statistics: nothing is known to be new or a head
        return []
    tagged = {i for s in tags_to_spans(list(tags)) for i in range(s.start, s.end)}

    def content(i: int) -> bool:
        w = tokens[i]
        return i not in tagged and any(c.isalnum() for c in w) and w.lower() not in FUNCTION_WORDS

    scored: dict[Span, float] = {}
    for end in range(len(tokens)):
        if not content(end):
            continue
        word = tokens[end]
        form, new = stats.stats_form(word), None  # neither depends on the type: computed once a word
        for label in types:
            seen = stats.heads.get(label, {}).get(form, 0)
            if seen < 2 and new is None:
                new = _new_term(word, stats, end == 0)
            prior = stats.head_share(word, label, types) if seen >= 2 else new
            if prior < 0.3:
                continue
            start = end
            while start > 0 and content(start - 1) and end - start + 1 < stats.max_entity_len.get(label, 4):
                start -= 1
            spans = {Span(start, end + 1, label)} if start < end else set()
            # a head the split never tags alone ("disease") is none, unless it follows an entity ("[IGT] disease":
            # the split's mention is "IGT disease", the row's tag stops short)
            if seen < 2 or stats.tagged_alone(word, label) or end - 1 in tagged:
                spans.add(Span(end, end + 1, label))
            for span in spans:
                scored[span] = max(scored.get(span, 0.0), prior + 0.01 * (span.end - span.start))
    return [(span, scored[span]) for span in sorted(scored, key=lambda s: (-scored[s], s))[:limit]]


class Completeness:
    """The check's pass over the seed's accepted rows not checked yet (``Candidate.completed``)."""

    def __init__(self, run: Run, verify: Verify) -> None:
        self.run, self.verify = run, verify

    async def found(self, r: SeedResult, c: Candidate) -> list[tuple[Span, float]]:
        """Each candidate span of the row (the split's proposals, and with ``mention_listing`` the model's listing)
        the verifier answered, with its P(type); the caller compares it with the threshold."""
        checker = self.run.checker
        spans: list[Span] = []
        if self.run.config.mention_listing:
            msgs = self.run.messages(STAGE, sentence=detokenize(c.tokens))
            listed, _ = await self.run.caller.ask(r, STAGE, msgs, mention_schema(checker.types), salt=" ".join(c.tokens))
            spans = candidates(c.tokens, c.tags, listed, checker.types)
        spans += [s for s in proposals(c.tokens, c.tags, checker.stats, checker.types) if s not in spans]
        probs = await asyncio.gather(*(self.verify.probability(r, c.tokens, s) for s in spans))
        return [(s, p) for s, p in zip(spans, probs) if p is not None]

    async def __call__(self, r: SeedResult) -> None:
        todo = [c for c in r.accepted if c.ok and not c.completed]
        if not todo:
            return
        found = await asyncio.gather(*(self.found(r, c) for c in todo))
        t = self.run.config.verify_threshold
        for c, spans in zip(todo, found):
            c.completed = True
            missed = [(s, p) for s, p in spans if p >= t]
            if missed:
                s, p = max(missed, key=lambda x: x[1])
                r.rejected.append((STAGE, c.reject("untagged_mention", f"{detokenize(c.tokens[s.start:s.end])!r} "
                                                   f"left untagged: P({s.label}) {p:.2f} >= {t}")))
        r.accepted = [c for c in r.accepted if c.ok]


def _system(name: str, common: dict[str, str]) -> str:
    return prompts.render(name, domain=common["domain"], types=common["types"], type_notes=common["type_notes"])


register(Stage(STAGE, "find untagged mentions", system=_system,
               state=lambda s: Completeness(s.run, s["entity_verify"]), when=lambda cfg: cfg.check_mentions,
               scripted=lambda world, messages, schema, params: world.listing(messages)))
