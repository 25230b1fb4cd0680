"""The scorers: each of the pipeline's judges (and its checker) called on one canary, giving a score in [0, 1]
(higher = good), and :func:`score_cell`, which scores every canary of a scorer's level and evaluates the scores.

Each judge calls one stage of the pipeline on its own (:meth:`hf_rgda.pipeline.Pipeline.stages`): the same prompts,
schema, judge temperature, derived seed (from the canary id) and response cache as an augmentation run. Scorers:

- ``entity``: the entity verifier's score of the span under test as the stage thresholds it (P(type); with
  ``verify_split`` combined with the split's head share). Sets ``verify_threshold``.
- ``verification``: the stage as deployed, the checker first: a row the checker rejects (or whose span it retags)
  scores 0, an entity the split knows (``Verify.known``) 1, any other its ``entity`` score.
- ``checker``: the deterministic checker on the row, repairs on: 1 passed unchanged, 0.5 repaired, 0 rejected.
- ``split``: the split's statistics alone (``SplitStats.head_share`` of the span's last word). No call.
- ``ac``, ``gr``: the AC judge on a row written from its seed, the GR judge on a guide; one sampled verdict, total
  / 100. Set ``threshold``. ``ac-prob``, ``gr-prob``: the same read by probability (one 1-5 question per criterion,
  the weighted total before rounding / 100). Set ``probability_threshold``.
- ``debate``, ``debate-prob``: the review panel's first round on the row (one round, no revision), the mean
  reviewer total / 100, sampled or read by probability. Set ``debate_sigma`` and ``probability_threshold``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._exceptions import RGDAError
from ..cache import ResponseCache
from ..checking import Checker, SplitStats
from ..checking.sentence import seed_facts
from ..config import AugmentConfig
from ..llm.base import LLM
from ..pipeline import Pipeline
from ..records import Candidate, Judgement, Seed, SeedResult
from ..schemas import AC_RUBRIC, DEBATE_RUBRIC, GR_RUBRIC
from ..stages import Stages
from ..stages.debate import ReviewResult, run_review
from ..stages.rating import expected_total
from ..tags import Span, detokenize, tags_to_spans
from .build import Canary, Gold
from .defects import build_guide
from .scoring import evaluate, sig4

__all__ = ["SCORERS", "Judges", "ScorerSpec", "score_cell"]

Scorer = Callable[[Canary], Awaitable[float]]


class Judges:
    """The pipeline's judges for one dataset, each callable on one canary.

    Args:
        llm: the backend under calibration.
        gold: the dataset (its types and domain).
        config: the run configuration (its ``domain`` defaults to the gold's).
        stats: the statistics of the split an augmentation run would use (the checker's, the verifier's
            ``verify_known`` and ``verify_split``); None: none.
        cache: the response cache, or None.
        descriptions: the pipeline's ``type_descriptions``.
        confusers: the entity verifier's contrast categories (default: its own).
    """

    def __init__(self, llm: LLM, gold: Gold, config: AugmentConfig | None = None, stats: SplitStats | None = None,
                 cache: ResponseCache | None = None, descriptions: Mapping[str, str] | None = None,
                 confusers: Sequence[str] | None = None) -> None:
        self.gold, self.llm = gold, llm
        config = (config or AugmentConfig(method="rgda")).for_backend(llm)
        self.config = config if config.domain else dataclasses.replace(config, domain=gold.domain)
        self.checker = Checker(gold.types, stats or SplitStats(), self.config.near_copy_ratio,
                               salvage=self.config.salvage, tokens=self.config.token_style,
                               likely_mention_quantile=self.config.likely_mention_quantile)
        kw: dict[str, Any] = {"cache": cache, "type_descriptions": descriptions, "confusers": confusers}
        self.pipeline = Pipeline(dataclasses.replace(self.config, judge_reading="sample"), llm, self.checker, **kw)
        self.stages = self.pipeline.stages()
        self.prob_stages = Pipeline(dataclasses.replace(self.config, judge_reading="probability",  # full scores
                                                        judge_early_pass=False), llm, self.checker, **kw).stages()
        self.spent: list[SeedResult] = []  # every canary's calls, for the cost figures
        self.details: dict[str, dict[str, Any]] = {}  # canary id -> what a scorer read beside its score
        self.reader = self.stages["sense"].reader  # the gate's own reader, as a run makes it

    def _result(self, canary: Canary, tokens: Sequence[str], tags: Sequence[str]) -> SeedResult:
        r = SeedResult(Seed(canary.id, tuple(tokens), tuple(tags)))
        self.spent.append(r)
        return r

    def _row(self, canary: Canary) -> Candidate:
        item = Seed(canary.id, canary.tokens, canary.tags).as_item(self.config.representation)
        return Candidate(raw=item, tokens=list(canary.tokens), tags=list(canary.tags))

    async def _ac(self, canary: Canary, stages: Stages) -> Judgement:
        """The AC judge's first verdict on the row as the one new sentence written from its seed."""
        r = self._result(canary, canary.seed_tokens, canary.seed_tags)
        r.guidance = build_guide(canary.seed_tokens, canary.seed_tags, self.config.domain)
        r.accepted = [self._row(canary)]
        loop = stages["composer"].loop()
        await loop.judge(r, 1)
        return loop.verdicts(r)[-1]

    async def _gr(self, canary: Canary, stages: Stages) -> Judgement:
        """The GR judge's first verdict on the guide canary of its sentence."""
        r = self._result(canary, canary.tokens, canary.tags)
        r.guidance = canary.guide
        loop = stages["guidance"].loop()
        await loop.judge(r, 1)
        return loop.verdicts(r)[-1]

    async def ac(self, canary: Canary) -> float:
        """The AC judge's total / 100, one sampled verdict."""
        return (await self._ac(canary, self.stages)).score / 100

    async def gr(self, canary: Canary) -> float:
        """The GR judge's total / 100, one sampled verdict."""
        return (await self._gr(canary, self.stages)).score / 100

    async def ac_prob(self, canary: Canary) -> float:
        """The AC judge read by probability: its weighted total before rounding / 100."""
        return expected_total(await self._ac(canary, self.prob_stages), AC_RUBRIC) / 100

    async def gr_prob(self, canary: Canary) -> float:
        """The GR judge read by probability: its weighted total before rounding / 100."""
        return expected_total(await self._gr(canary, self.prob_stages), GR_RUBRIC) / 100

    async def mentions(self, canary: Canary) -> float:
        """The completeness check on the row: 1 - the largest P(type) the verifier gives an untagged span the split's
        statistics propose or the model lists (1: none)."""
        r = self._result(canary, canary.seed_tokens, canary.seed_tags)
        found = await self.stages["mention_check"].found(r, self._row(canary))
        self.details[canary.id] = {"untagged": [[detokenize(canary.tokens[s.start:s.end]), s.label, round(p, 3)]
                                                for s, p in found]}
        return 1 - max((p for _, p in found), default=0.0)

    async def sense(self, canary: Canary) -> float:
        """The row's sense read as a probability (:mod:`hf_rgda.sense`): its least likely tokens after the split's
        example sentences, no generation."""
        if not self.llm.scores_text:
            raise RGDAError(f"{type(self.llm).__name__} cannot score a given text (no prompt logprobs)")
        (score,) = await self.reader.scores([canary.tokens])
        return score

    async def sense_gate(self, canary: Canary) -> float:
        """The sense gate as the pipeline meets a row: 0 where the checker rejects it (a looping, garbled or
        entity-less sentence never reaches the gate), else :meth:`sense`."""
        return 0.0 if await self.check(canary) == 0 else await self.sense(canary)

    async def threshold(self, spec: ScorerSpec) -> float:
        """The threshold the product applies to ``spec``'s score: the sense gate's is the split's own where
        ``sense_threshold`` is 0 (the reference sentences' quantile, read here)."""
        if spec.option == "likely_mention_quantile":  # the rule's cutoff, from the split's own sentences
            tagger, share = self.checker.stats.tagger, self.config.likely_mention_quantile
            return round(1 - tagger.cutoff(share), 4) if tagger and share else 0.0  # off: the rule passes all
        if spec.option == "sense_threshold" and not self.config.sense_threshold and self.llm.scores_text:
            return await self.reader.threshold() or 0.0
        return spec.threshold(self.config)

    async def _review(self, canary: Canary, stages: Stages) -> ReviewResult[Candidate]:
        """The review panel's first round on the row (no revision), as the pipeline's ``debate_review`` runs it."""
        r = self._result(canary, canary.seed_tokens, canary.seed_tags)
        which = stages["debate"]
        return await run_review(which.ask(r), r.seed.as_item(self.config.representation), [self._row(canary)],
                                dataclasses.replace(which.config, max_rounds=1), show=lambda c: c.raw,
                                revise=_no_revision, domain=self.config.domain, types=self.checker.types,
                                choose=which.choose(r))

    async def debate(self, canary: Canary) -> float:
        """The review panel's mean reviewer total / 100 for the row, after one round, each verdict sampled."""
        result = await self._review(canary, self.stages)
        ((_, history),) = result.accepted + result.rejected
        return statistics.fmean(history[-1]) / 100

    async def debate_prob(self, canary: Canary) -> float:
        """The review panel read by probability: the mean of the reviewers' weighted totals before rounding / 100."""
        result = await self._review(canary, self.prob_stages)
        verdicts = [Judgement(0, {}, {}, "probability", e["content"]["distributions"]) for e in result.transcript]
        return statistics.fmean(expected_total(v, DEBATE_RUBRIC) for v in verdicts) / 100

    async def check(self, canary: Canary) -> float:
        """The checker as the pipeline runs it (repairs on), on the row written from its seed: 1 passed unchanged,
        0.5 passed after a repair, 0 rejected. No call. Seed entities may be reused (``forbid_seed_entities`` off:
        neighbouring sentences share their mentions), so what is measured is the tagging rules."""
        row = self._row(canary)
        self.checker.check(row, Seed(canary.id, canary.seed_tokens, canary.seed_tags), [], forbid_seed_entities=False)
        return 0.0 if not row.ok else 0.5 if row.salvaged else 1.0

    async def tagger(self, canary: Canary) -> float:
        """The checker's ``likely_mention`` rule read as a score: 1 - the split tagger's probability for the row's
        most likely untagged word (the seed's untagged words aside, as the rule reads them); 1 without a tagger. No
        call."""
        tagger = self.checker.stats.tagger
        if tagger is None:
            return 1.0
        skip = frozenset(seed_facts(Seed(canary.id, canary.seed_tokens, canary.seed_tags)).untagged_at)
        found = tagger.most_likely(canary.tokens, canary.tags, skip=skip)
        if found is not None:
            self.details[canary.id] = {"word": canary.tokens[found[0]], "p": round(found[1], 4)}
        return 1 - found[1] if found else 1.0

    async def split(self, canary: Canary) -> float:
        """The split's statistics alone: ``SplitStats.head_share`` of the span under test. No call."""
        assert canary.span is not None
        _, end, label = canary.span
        return self.checker.stats.head_share(canary.tokens[end - 1], label, self.gold.types)

    async def entity(self, canary: Canary) -> float:
        """The entity verifier's score of the canary's span under test, as the stage thresholds it (the question's
        whole distribution, with each option's kind, is kept in ``details``)."""
        assert canary.span is not None  # an entity canary
        span = Span(*canary.span)
        r = self._result(canary, canary.tokens, canary.tags)
        verify = self.stages["entity_verify"]
        q = verify.question(canary.tokens, span)
        got = await verify.answer(r, canary.tokens, q)
        probs = got.probs
        self.details[canary.id] = {"options": [[letter, o.kind, round(probs[letter], 4)]
                                               for letter, o in zip(q.letters, q.options)], "mass": round(got.mass, 4)}
        if not verify.answered(got):  # the stage calls it unverified and rejects its row: the lowest score
            return 0.0
        return verify.score(canary.tokens, span, probs[q.letters[0]])

    async def verification(self, canary: Canary) -> float:
        """The checker, then the entity verifier: 0 when the checker rejects the canary's row or changes the tags of
        its span under test (what was presented does not reach the output), 1 for an entity the stage knows
        (``Verify.known``: kept without a question), else :meth:`entity`. A type the dataset lacks cannot come out of
        the pipeline (its schema allows only the dataset's types): such a canary is scored by the verifier alone."""
        assert canary.span is not None
        span = Span(*canary.span)
        if span.label in self.gold.types:
            before = [i for i in range(max(canary.source, 0)) if any(t != "O" for t in self.gold.sentences[i][1])]
            tokens, tags = self.gold.sentences[before[-1]] if before else ((), ())
            row = self._row(canary)
            self.checker.check(row, Seed(canary.id, tuple(tokens), tuple(tags)), [], forbid_seed_entities=False)
            if not row.ok or span not in tags_to_spans(row.tags):
                self.details[canary.id] = {"checker": row.reason if not row.ok else "; ".join(row.salvaged)}
                return 0.0
            if self.stages["entity_verify"].known(canary.tokens, span):
                self.details[canary.id] = {"known": True}
                return 1.0
        return await self.entity(canary)


async def _no_revision(feedback: list[tuple[Candidate, dict[str, Any]]], rnd: int) -> list[Candidate]:
    raise AssertionError("a one-round review never revises")


@dataclass(frozen=True)
class ScorerSpec:
    """A scorer: the canary level it reads, how it is built for a dataset, and the option it calibrates.

    Attributes:
        level: ``entity``, ``row`` or ``guide``.
        build: the scorer of a dataset's judges.
        option: the :class:`~hf_rgda.AugmentConfig` option its threshold sets ('' for none).
        scale: the option's value per unit of score (100 for the 0-100 judge scores).
        fixed: the threshold the product applies when it has no option (the checker keeps what scores 0.5).
        sets: whether its threshold is recommended for ``option`` (the verification scorer's scores mix the
            checker's and the split's verdicts in: it is measured against ``verify_threshold``, not used to set it).
    """

    level: str
    build: Callable[[Judges], Scorer]
    option: str = ""
    scale: int = 1
    fixed: float = 0.5
    sets: bool = True

    def threshold(self, config: AugmentConfig) -> float:
        """The threshold the product applies to this score under ``config``."""
        return getattr(config, self.option) / self.scale if self.option else self.fixed


SCORERS: dict[str, ScorerSpec] = {
    "entity": ScorerSpec("entity", lambda j: j.entity, "verify_threshold"),
    "verification": ScorerSpec("entity", lambda j: j.verification, "verify_threshold", sets=False),
    "checker": ScorerSpec("row", lambda j: j.check),
    "split": ScorerSpec("entity", lambda j: j.split),
    "ac": ScorerSpec("row", lambda j: j.ac, "threshold", 100),
    "gr": ScorerSpec("guide", lambda j: j.gr, "threshold", 100),
    "ac-prob": ScorerSpec("row", lambda j: j.ac_prob, "probability_threshold", 100),
    "gr-prob": ScorerSpec("guide", lambda j: j.gr_prob, "probability_threshold", 100),
    "debate": ScorerSpec("row", lambda j: j.debate, "debate_sigma", 100),
    "debate-prob": ScorerSpec("row", lambda j: j.debate_prob, "probability_threshold", 100),
    "sense": ScorerSpec("row", lambda j: j.sense, "sense_threshold"),
    "sense-gate": ScorerSpec("row", lambda j: j.sense_gate, "sense_threshold", sets=False),
    "mentions": ScorerSpec("row", lambda j: j.mentions),
    "tagger": ScorerSpec("row", lambda j: j.tagger, "likely_mention_quantile", sets=False),
}


async def score_cell(spec: ScorerSpec, judges: Judges, canaries: Sequence[Canary],
                     advance: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Score every canary of the scorer's level (concurrently, within the backend's limit; ``advance`` after each),
    evaluate the scores and sum the calls they took. A canary whose answer cannot be read (after the pipeline's one
    JSON re-ask) gets no score: it is counted under ``failed`` and left out of the figures."""
    scorer = spec.build(judges)
    judges.spent = []

    async def one(c: Canary) -> dict[str, Any]:
        try:
            score = sig4(await scorer(c))  # significant digits: a sense reading is ~1e-5
            typed = {"type": c.span[2]} if c.span is not None else {}
            return {"id": c.id, "label": c.label, **typed, "score": score, **judges.details.pop(c.id, {})}
        except RGDAError as err:  # an unreadable answer fails its canary, never the cell
            return {"id": c.id, "label": c.label, "score": None, "error": f"{type(err).__name__}: {err}"[:300]}
        finally:
            advance()

    rows = await asyncio.gather(*(one(c) for c in canaries if c.level == spec.level))
    scored = [x for x in rows if x["score"] is not None]
    seconds = sum(r.accounting.llm_seconds for r in judges.spent)
    metrics = evaluate([x["label"] for x in scored], [x["score"] for x in scored], await judges.threshold(spec))
    return {"canaries": len(rows), "failed": len(rows) - len(scored), "metrics": metrics,
            "calls": sum(r.accounting.calls for r in judges.spent),
            "cached_calls": sum(r.accounting.cached_calls for r in judges.spent),
            "prompt_tokens": sum(r.accounting.prompt_tokens for r in judges.spent),
            "completion_tokens": sum(r.accounting.completion_tokens for r in judges.spent),
            "llm_seconds": round(seconds, 1),
            "seconds_per_canary": round(seconds / len(rows), 2) if rows else None, "scores": rows}
