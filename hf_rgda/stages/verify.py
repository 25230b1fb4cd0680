"""Entity verification: one multiple-choice question per tagged entity of every sentence the checker passed (built
in :mod:`.categories`), read as the probability of the entity's type (:meth:`hf_rgda.calls.Caller.choose`: one
token at temperature 0), before the AC judge sees the sentences.

The threshold, per seed: ``t = min(verify_threshold, verify_relative * ref)``, where ``ref`` is the mean P(type)
the model gives the seed's own (gold) entities, each asked the same question once (a model's P for a correct entity
differs by dataset: the local 1.5B gives NCBI-disease's Diseases 0.44 on average, SciERC's six types 0.13, FIN's
0.22, so one absolute threshold cannot serve); ``t = verify_threshold`` when ``verify_relative`` is 0 or the seed
has no entity. Since ``t <= verify_threshold``, the seed's reference questions are asked only when an entity scores
below ``verify_threshold`` (else every entity is verified whatever ``ref`` is): the same decisions, fewer calls.
The decision rule, entity by entity:

- P(type) >= t: the entity is **verified**;
- P(type) < t and the most likely other option is a contrast category or "an ordinary word or phrase" (it is no
  entity of any type of the dataset: a gene name in a disease dataset that leaves genes untagged, a common word):
  under ``salvage`` the entity is **untagged** and the rest of the row stays, but the row must then pass every rule
  of the checker again, strictly (no repair may tag the entity back; a row left without entities fails
  ``no_entity``), else it is rejected with that rule's reason;
- P(type) < t and the most likely other option is another type of the dataset (a mistyped entity: untagging it
  would teach that it is no entity) or a cut or extended span (untagging it would leave the name untagged), or
  ``salvage`` is off: the row is **rejected** (``unverified_entity``, the detail naming the entity, its type, P and
  the most likely other option);
- the answer names no option: under ``verify_min_mass`` (0.5) of the model's next-token probability went to the
  options' letters (``OptionProbs.mass``: a top list led by "The", say), or under that share of the sampled answers
  named one. The options' renormalised probabilities then say nothing (a top list without any letter reads as
  uniform, 1/6 each, which the seed-relative threshold could pass), so the entity is **unverified**: it never counts
  as verified, nothing is known of the alternative either (untagging it could teach that a name is no entity), and
  its row is **rejected** (``unanswered_entity``, the detail naming the entity and the mass). Its verdict records no
  P. A seed's own entity answered so is left out of the seed's reference (none left: ``t = verify_threshold``).

An entity whose text the split tags as its type consistently (the checker's lexicon, :class:`~hf_rgda.checking.
SplitStats`: used at least 3 times, tagged so at least 90% of them) is **known** and asked nothing when
``verify_known`` is on (the default): the dataset's convention outranks the model's everyday sense of a word.
NCBI-disease tags "tumor" in "tumor suppressor gene" as Disease 17 times out of 17 and a disease name that names a
gene ("the APC gene") as Disease; the model calls them no disease, and untagging them only got the row rejected by
the checker's ``known_mention`` rule.

With ``verify_split`` on, an entity is judged by ``sqrt(P(type) x S)`` instead of P(type), S the share of the
split's uses of its last word that end a mention of its type (:meth:`~hf_rgda.checking.SplitStats.head_share`):
the count the checker's head rules read, which ranks calibration canaries better than the local 1.5B's question on
every benchmark dataset (``benchmarks/calibration.py --scorers split``). The seed's reference is read the same way,
so the threshold rule is unchanged; the verdict still records P.

A row with an entity to reject is rejected whole; the same text tagged the same way twice in a row is asked about
once. Each verdict goes to the seed's ``entity_verdicts`` (the trace's ``verification``); rows the stage rejects
are recorded under the stage ``entity_verify``. The stage asks only about sentences it has not seen
(``Candidate.verified``), so the pipeline runs it again after each stage that writes new ones (an AC refinement,
a debate revision).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Mapping, Sequence

from .. import prompts
from ..checking import Checker, SplitStats
from ..llm.base import OptionProbs
from ..records import Candidate, EntityVerdict, SeedResult
from ..tags import Span, detokenize, tags_to_spans
from .base import Run
from .categories import UNTAGGABLE, Option, Question, question
from .registry import Stage, register

__all__ = ["STAGE", "Verify", "with_split"]

STAGE = "entity_verify"
register(Stage(STAGE, "verify entities", system=lambda name, common: prompts.render(name, domain=common["domain"]),
               state=lambda s: Verify(s.run, descriptions=s.descriptions, confusers=s.confusers,
                                      # a row is re-checked as the stage that wrote it was: biorda's by WHICH's checker
                                      checker=s["debate"].floor if s.run.config.method == "biorda" else None,
                                      forbid_seed_entities=s.run.config.uses_guidance),
               when=lambda cfg: cfg.verify_entities,
               scripted=lambda world, messages, schema, params: world.entity_answer(messages, params)))

#: one question of a row: the spans it covers (one text, one type) and the question
_Asked = tuple[list[Span], Question]


class Verify:
    """The entity verification stage, over the seed's accepted sentences not verified yet (``r.accepted``).

    Args:
        run: what the run's stages share.
        descriptions: ``{type: description}`` (``type_descriptions``).
        confusers: contrast categories instead of the defaults (:func:`~.categories.default_confusers`).
        checker: the checker a row must pass again after an untag (default: the run's), applied without salvage.
        forbid_seed_entities: as the stage that wrote the sentences was checked (False for seed generation).
    """

    def __init__(self, run: Run, *, descriptions: Mapping[str, str] | None = None,
                 confusers: Sequence[str] | None = None, checker: Checker | None = None,
                 forbid_seed_entities: bool = True) -> None:
        self.run, self.descriptions, self.confusers = run, dict(descriptions or {}), confusers
        self.recheck = dataclasses.replace(checker or run.checker, salvage=False)
        self.forbid_seed_entities = forbid_seed_entities
        self._refs: dict[str, float | None] = {}  # seed key -> mean P(type) of its own answered entities
        self._options: dict[str, tuple[Option, ...]] = {}  # type -> its question's options

    def question(self, tokens: Sequence[str], span: Span) -> Question:
        """The question about ``span`` of the sentence ``tokens`` (its options made once per type)."""
        entity = detokenize(tokens[span.start : span.end])
        if span.label not in self._options:
            self._options[span.label] = question(entity, span.label, self.run.checker.types, self.descriptions,
                                                 self.confusers).options
        return Question(entity, self._options[span.label])

    async def answer(self, r: SeedResult, tokens: Sequence[str], q: Question) -> OptionProbs:
        """The model's answer to ``q`` about the sentence ``tokens`` (a call counted on ``r``): each option letter's
        probability and the mass the answer put on the options (:meth:`answered`)."""
        msgs = self.run.messages(STAGE, sentence=detokenize(tokens), question=q.text())
        return await self.run.caller.choose(r, STAGE, msgs, q.letters)

    async def probabilities(self, r: SeedResult, tokens: Sequence[str], q: Question) -> dict[str, float]:
        """Each option letter's probability for ``q`` about the sentence ``tokens`` (a call counted on ``r``)."""
        return (await self.answer(r, tokens, q)).probs

    def answered(self, answer: OptionProbs) -> bool:
        """Whether ``answer`` names an option: at least ``verify_min_mass`` of it went to the options' letters."""
        return answer.mass >= self.run.config.verify_min_mass

    async def probability(self, r: SeedResult, tokens: Sequence[str], span: Span) -> float | None:
        """P(``span``'s type) as the stage reads it, or None where the answer names no option (:meth:`answered`)."""
        q = self.question(tokens, span)
        got = await self.answer(r, tokens, q)
        return got.probs[q.letters[0]] if self.answered(got) else None

    def score(self, tokens: Sequence[str], span: Span, p: float) -> float:
        """What the threshold is applied to: P(type) ``p``, or with ``verify_split`` :func:`with_split`."""
        if not self.run.config.verify_split:
            return p
        return with_split(p, self.run.checker.stats, tokens, span, self.run.checker.types)

    async def threshold(self, r: SeedResult) -> float:
        """The seed's threshold (module docstring); its reference questions are asked once per seed (cached)."""
        cfg = self.run.config
        if not cfg.verify_relative or not r.seed.spans:
            return cfg.verify_threshold
        if r.seed.key not in self._refs:
            groups = _by_text(r.seed.tokens, r.seed.spans)
            ps = await asyncio.gather(*(self.probability(r, r.seed.tokens, spans[0]) for spans in groups))
            scores = [self.score(r.seed.tokens, spans[0], p) for spans, p in zip(groups, ps) if p is not None]
            self._refs[r.seed.key] = sum(scores) / len(scores) if scores else None
        ref = self._refs[r.seed.key]
        return cfg.verify_threshold if ref is None else min(cfg.verify_threshold, cfg.verify_relative * ref)

    async def __call__(self, r: SeedResult) -> None:
        todo = [c for c in r.accepted if c.ok and not c.verified]
        if not todo:
            return
        asked = {id(c): self._questions(r, c) for c in todo}
        flat = [(c, spans, q) for c in todo for spans, q in asked[id(c)]]
        answers = await asyncio.gather(*(self.answer(r, c.tokens, q) for c, _, q in flat))
        t = await self._threshold_for(r, [self.score(c.tokens, spans[0], a.probs[q.letters[0]])
                                          for (c, spans, q), a in zip(flat, answers) if self.answered(a)])
        it = iter(answers)
        kept: list[Candidate] = []
        for c in r.accepted:
            if id(c) in asked:
                self._decide(r, c, [(spans, q, next(it)) for spans, q in asked[id(c)]], kept, t)
            if c.ok:
                kept.append(c)
        r.accepted = kept

    async def _threshold_for(self, r: SeedResult, scores: Sequence[float]) -> float:
        """The threshold the entities scoring ``scores`` are decided at, its reference questions asked only when a
        decision needs them: the seed's threshold is at most ``verify_threshold``, so where every entity scores at
        least that (or none was asked: all known) each is verified whatever the seed's reference would be."""
        if all(s >= self.run.config.verify_threshold for s in scores):
            return self.run.config.verify_threshold
        return await self.threshold(r)

    def _questions(self, r: SeedResult, c: Candidate) -> list[_Asked]:
        """One question per distinct (text, type) of the row, with the spans it covers; a known entity (module
        docstring) gets its verdict here instead."""
        asked = []
        for spans in _by_text(c.tokens, tags_to_spans(c.tags)):
            s = spans[0]
            if self.known(c.tokens, s):
                r.entity_verdicts.append(EntityVerdict(detokenize(c.tokens[s.start : s.end]), s.label, None, "known"))
            else:
                asked.append((spans, self.question(c.tokens, s)))
        return asked

    def known(self, tokens: Sequence[str], span: Span) -> bool:
        """Whether ``span`` is an entity the split tags as its type consistently and ``verify_known`` is on."""
        lexicon = self.run.checker.stats.lexicon
        return self.run.config.verify_known and lexicon.get(
            " ".join(str(t).lower() for t in tokens[span.start : span.end])) == span.label

    def _decide(self, r: SeedResult, c: Candidate, asked: list[tuple[list[Span], Question, OptionProbs]],
                kept: Sequence[Candidate], t: float) -> None:
        """Apply the decision rule of the module docstring to row ``c``, recording every verdict on ``r``."""
        cfg, c.verified = self.run.config, True
        unanswered = [(spans, q, a) for spans, q, a in asked if not self.answered(a)]
        answers = [(spans, q, a.probs) for spans, q, a in asked if self.answered(a)]
        low = [(spans, q, probs) for spans, q, probs in answers if self.score(c.tokens, spans[0], probs[q.letters[0]]) < t]
        untag = cfg.salvage and not unanswered and all(q.alternative(probs).kind in UNTAGGABLE for _, q, probs in low)
        for spans, q, a in asked:
            if not self.answered(a):
                r.entity_verdicts.append(EntityVerdict(q.entity, spans[0].label, None, "unverified"))
                continue
            below = any(spans is s for s, _, _ in low)
            decision = "verified" if not below else "untagged" if untag else "rejected"
            r.entity_verdicts.append(EntityVerdict(q.entity, spans[0].label, round(a.probs[q.letters[0]], 4), decision,
                                                   q.alternative(a.probs).text))
        if unanswered:  # the detail names the first entity whose answer named no option
            _, q, a = unanswered[0]
            r.rejected.append((STAGE, c.reject("unanswered_entity", f"{q.entity!r} as {unanswered[0][0][0].label}: the "
                                               f"answer named no option ({a.mass:.2f} of it on the options < "
                                               f"verify_min_mass {cfg.verify_min_mass:g})")))
            return
        if not low:
            return
        if not untag:  # the detail names the entity that rejects the row
            spans, q, probs = next((x for x in low if x[1].alternative(x[2]).kind not in UNTAGGABLE), low[0])
            r.rejected.append((STAGE, c.reject("unverified_entity", self._detail(c.tokens, spans[0], q, probs, t))))
            return
        tags = list(c.tags)
        for spans, q, probs in low:
            for s in spans:
                tags[s.start : s.end] = ["O"] * (s.end - s.start)
            c.salvaged.append(f"unverified_entity: untagged {q.entity!r} ({self._detail(c.tokens, spans[0], q, probs, t)})")
        c.tags = tags
        self.recheck.check(c, r.seed, kept, forbid_seed_entities=self.forbid_seed_entities)
        if not c.ok:
            r.rejected.append((STAGE, c))

    def _detail(self, tokens: Sequence[str], span: Span, q: Question, probs: Mapping[str, float], t: float) -> str:
        p = probs[q.letters[0]]
        split = f", with the split {self.score(tokens, span, p):.2f}" if self.run.config.verify_split else ""
        return f"{q.entity!r} as {span.label}: P = {p:.2f}{split} < {t:.3g}; most likely: {q.alternative(probs).text}"


def with_split(p: float, stats: SplitStats, tokens: Sequence[str], span: Span, types: Sequence[str]) -> float:
    """``verify_split``'s score of ``span`` in ``tokens``: the geometric mean of the model's P(type) ``p`` and the
    split's head share of the span's last word (:meth:`~hf_rgda.checking.SplitStats.head_share`)."""
    return math.sqrt(p * stats.head_share(tokens[span.end - 1], span.label, types))


def _by_text(tokens: Sequence[str], spans: Sequence[Span]) -> list[list[Span]]:
    """``spans`` grouped by (text, type), in order of first occurrence: one question per group."""
    groups: dict[tuple[tuple[str, ...], str], list[Span]] = {}
    for s in spans:
        groups.setdefault((tuple(tokens[s.start : s.end]), s.label), []).append(s)
    return list(groups.values())
