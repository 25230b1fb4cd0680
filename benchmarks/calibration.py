"""Calibration benchmark: how well each judge separates good canaries from defective ones (issue 17, item 4).

Per dataset, builds the canaries of ``canaries.py`` from the gold dev sentences and asks each chosen scorer for a
score in [0, 1] per canary of its level (higher = good); reports AUROC, the accuracy at a threshold chosen on the
other half of the canaries, the accuracy at the product's own threshold and a per-class breakdown (entity scorers
also per presented type), with every canary's score, the calls and tokens it took, the command, machine and commit, in
``benchmarks/results/calibration_<llm>.json``. One command per backend (``--llm``), so a user calibrates their own
API model; every call goes through a response cache (``--cache``), so a rerun is free.

Scorers (``--scorers``), each a function from a canary to a score, built per dataset by :data:`SCORERS`:

- ``ac``: the Augmentation Calibrator judge as the pipeline calls it, one sample at the judge temperature: the row is
  the one new sentence, its seed the original, the seed's guide (``build_guide``) the guide; total score / 100.
  The product's threshold: ``threshold`` (90).
- ``gr``: the Guidance Refiner judge on a guide canary and the sentence it abstracts; total score / 100.
- ``debate``: the rgda+debate review panel (``run_review``, one round, the default panel of 3: two reviewers) on the
  row; the mean reviewer total / 100. The product's threshold: ``debate_sigma`` (80).
- ``checker``: the deterministic checker on the row, repairs on (1 passed unchanged, 0.5 repaired, 0 rejected;
  the product's threshold 0.5: what the pipeline keeps); no LLM call, seconds for all canaries.
- ``entity``: the entity verification stage's probability of the presented type for the span under test, in its
  sentence (``hf_rgda.stages.verify``: the same question, options and call as the pipeline's, with the dataset's
  types and the default contrast categories). The product's threshold: ``verify_threshold``. Its held-out thresholds
  (``metrics.thresholds``) are what ``verify_threshold`` should be set from.
- ``ac-prob``, ``gr-prob``: the same judges read by probability (``judge_reading="probability"``,
  ``hf_rgda.stages.rating``: one 1-5 question per criterion, the probability-weighted total before rounding / 100).
  On a backend without logprobs each question is the sampling fallback's.
- ``verification``: entity verification as the pipeline applies it, the checker first: the entity canary's row
  through the checker (as ``checker``, the sentence before it in the file as its seed); a rejected row scores 0,
  an entity the split tags as its type consistently 1 (``verify_known``: the pipeline asks nothing about it), any
  other the ``entity`` probability. A canary presenting a type the dataset lacks (NCBI-disease's mentions shown
  as Genes) cannot come out of the pipeline, whose schema allows only the dataset's types, so the checker is not
  asked about it and it scores its ``entity`` probability alone. With ``--set verify_split=true`` the probability is
  combined with the split's head share as the stage combines them (``hf_rgda.stages.verify``).
- ``split``: no model at all, the split's statistics alone (``SplitStats.head_share``): the share of the train split's uses
  of the span's last word that end a mention of the presented type, smoothed. What the checker's lexicon and head
  rules know, as one number: a reference any entity judge should beat. No LLM call.
- ``debate-prob``: the same panel read by probability (each reviewer's verdict one 1-5 question per criterion, as
  ``ac-prob``); the mean of the reviewers' weighted totals before rounding / 100. The product's threshold:
  ``probability_threshold`` (50).

Type descriptions (``--descriptions``, the ``type_descriptions`` a user passes; they reach every prompt that
describes the types, the verifier's options included): ``none`` (the default), ``dataset`` (the benchmarks' own,
``local_pipeline.TYPE_DESCRIPTIONS``: FIN's PER covers the parties named by role), or ``examples`` (each type's
default description followed by its 4 most frequent distinct mentions in the train split, the canaries' sentences
left out: "(in this data, for example: ...)").

The statistics behind ``checker``, ``verification`` and ``split`` are those ``RGDAAugmenter.from_dataset`` computes
from the train split (the canaries' own sentences left out); ``--split-size N`` computes them from N train sentences
drawn with ``--seed`` instead, for what a user holding a few hundred labelled sentences has.

Any other option of the pipeline the scorers call: ``--set OPTION=VALUE`` (an ``AugmentConfig`` field, the value
read as JSON), for example ``--set verify_known=false`` to ask about the entities the split knows too. The overrides
are stored per dataset beside the figures (``config_overrides``).

A canary whose judge answer cannot be read (after the pipeline's one JSON re-ask) gets no score; it is counted under
``failed`` and left out of the figures.

Usage:
    python benchmarks/calibration.py --llm local:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --datasets ncbi_disease scierc fin --per-class 3 --scorers ac gr debate
    python benchmarks/calibration.py --llm local:... --datasets ncbi_disease scierc fin --per-class 20 --scorers entity
    python benchmarks/calibration.py --report benchmarks/results/calibration_local_default_entity.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import json
import os
import platform
import re
import statistics
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_rgda import DEFAULT_LLM, LLM, AugmentConfig, ResponseCache, RGDAAugmenter, RGDAError, load_llm
from hf_rgda.checking import Checker
from hf_rgda.pipeline import Pipeline, Stages
from hf_rgda.records import Candidate, Judgement, Seed, SeedResult
from hf_rgda.schemas import AC_RUBRIC, DEBATE_RUBRIC, GR_RUBRIC
from hf_rgda.stages.debate import ReviewResult, run_review
from hf_rgda.stages.rating import expected_total
from hf_rgda.stages.verify import with_split
from hf_rgda.tags import Span, label_names, tags_to_spans

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # the benchmarks are scripts: a sibling is imported by its module name
    sys.path.insert(0, str(BENCH))
from canaries import (
    THRESHOLD_RULE,
    Canary,
    Gold,
    auroc,
    build_canaries,
    build_guide,
    class_counts,
    domain,
    evaluate,
    load_gold,
)
from local_pipeline import TYPE_DESCRIPTIONS, _commit

Scorer = Callable[[Canary], Awaitable[float]]


class Judges:
    """The pipeline's judges for one dataset, each callable on one canary.

    Each calls one of the pipeline's stages on its own (:meth:`hf_rgda.pipeline.Pipeline.stages`): the GR and AC
    judges' first round, the debate agents' cached call and the entity verifier's question. Every call is the
    pipeline's own: same prompts, schema, judge temperature, derived seed (from the canary id) and response cache.

    Args:
        llm: the backend under calibration.
        gold: the dataset (its types and domain).
        cache: the response cache, or None.
        data_dir: the datasets' folder (the checker's train split).
        descriptions: the pipeline's ``type_descriptions``.
        overrides: ``AugmentConfig`` options that differ from the defaults (``--set``).
    """

    def __init__(self, llm: LLM, gold: Gold, cache: ResponseCache | None, data_dir: Path | None = None,
                 descriptions: dict[str, str] | None = None, overrides: dict[str, Any] | None = None,
                 split_size: int | None = None, seed: int = 0) -> None:
        self.gold, self.data_dir, self.llm = gold, data_dir, llm
        self.split_size, self.seed = split_size, seed
        self.config = AugmentConfig(method="rgda", domain=domain(gold.name), **(overrides or {}))
        checker = RGDAAugmenter(llm, label_names=label_names(gold.types), cache=False, config=self.config).checker()
        kw = {"cache": cache, "type_descriptions": descriptions}
        self.pipeline = Pipeline(dataclasses.replace(self.config, judge_reading="sample"), llm, checker, **kw)
        self.stages = self.pipeline.stages()
        self.prob_stages = Pipeline(dataclasses.replace(self.config, judge_reading="probability"), llm, checker,
                                    **kw).stages()
        self.spent: list[SeedResult] = []  # every canary's calls, for the cost figures
        self.details: dict[str, dict[str, Any]] = {}  # canary id -> what a scorer read beside its score

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
        await stages.composer.loop().judge(r, 1)
        return r.judgements["ac"][-1]

    async def _gr(self, canary: Canary, stages: Stages) -> Judgement:
        """The GR judge's first verdict on the guide canary of its sentence."""
        r = self._result(canary, canary.tokens, canary.tags)
        r.guidance = canary.guide
        await stages.guidance.loop().judge(r, 1)
        return r.judgements["gr"][-1]

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

    async def _review(self, canary: Canary, stages: Stages) -> ReviewResult[Candidate]:
        """The review panel's first round on the row (no revision), as the pipeline's ``debate_review`` runs it."""
        r = self._result(canary, canary.seed_tokens, canary.seed_tags)
        which = stages.which
        return await run_review(which.ask(r), r.seed.as_item(self.config.representation), [self._row(canary)],
                                dataclasses.replace(which.config, max_rounds=1), show=lambda c: c.raw,
                                revise=_no_revision, domain=self.config.domain, types=self.pipeline.checker.types,
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

    async def checker(self, canary: Canary) -> float:
        """The checker as the pipeline runs it (repairs on), on the row written from its seed: 1 passed unchanged,
        0.5 passed after a repair, 0 rejected. No LLM call. Seed entities may be reused (``forbid_seed_entities``
        off: neighbouring gold sentences share their mentions), so what is measured is the tagging rules."""
        row = self._row(canary)
        self.split_checker.check(row, Seed(canary.id, canary.seed_tokens, canary.seed_tags), [],
                                    forbid_seed_entities=False)
        return 0.0 if not row.ok else 0.5 if row.salvaged else 1.0

    async def split(self, canary: Canary) -> float:
        """The split's statistics alone: ``SplitStats.head_share`` of the span under test. No LLM call."""
        assert canary.span is not None
        _, end, label = canary.span
        return self.split_checker.stats.head_share(canary.tokens[end - 1], label, self.gold.types)

    @functools.cached_property
    def split_checker(self) -> Checker:
        """The checker ``RGDAAugmenter.from_dataset`` builds from the train split (without the sentences the canaries
        come from: FIN's dev is carved from train), or from ``split_size`` of its sentences drawn with ``seed``."""
        import random

        from hf_rgda.recipe import load_source

        assert self.data_dir is not None, "the checker scorer needs --data-dir"
        train = load_source(str(self.data_dir / self.gold.name))["train"]
        held = {tuple(t) for t, _ in self.gold.sentences}
        keep = [i for i, t in enumerate(train["tokens"]) if tuple(t) not in held]
        if self.split_size is not None and self.split_size < len(keep):
            keep = sorted(random.Random(f"{self.seed}/{self.gold.name}/split").sample(keep, self.split_size))
        return RGDAAugmenter.from_dataset(train.select(keep), llm=self.llm, cache=False, config=self.config).checker()

    async def entity(self, canary: Canary) -> float:
        """The entity verifier's probability of the presented type for the canary's span under test (the question's
        whole distribution, with each option's kind, is kept in ``details`` for the results)."""
        assert canary.span is not None  # an entity canary
        start, end, label = canary.span
        r = self._result(canary, canary.tokens, canary.tags)
        verify = self.stages.verify
        q = verify.question(canary.tokens, Span(start, end, label))
        probs = await verify.probabilities(r, canary.tokens, q)
        self.details[canary.id] = {"options": [[letter, o.kind, round(probs[letter], 4)]
                                               for letter, o in zip(q.letters, q.options)]}
        return probs[q.letters[0]]

    async def verification(self, canary: Canary) -> float:
        """The checker, then the entity verifier: 0 when the checker rejects the canary's row or changes the tags of
        its span under test (a repair: what was presented does not reach the output), 1 for an entity the split
        tags as its type consistently (``verify_known``: kept without a question), else ``entity``."""
        assert canary.span is not None
        start, end, label = canary.span
        if label in self.gold.types:
            before = [i for i in range(max(canary.source, 0)) if any(t != "O" for t in self.gold.sentences[i][1])]
            tokens, tags = self.gold.sentences[before[-1]] if before else ((), ())
            row = self._row(canary)
            self.split_checker.check(row, Seed(canary.id, tuple(tokens), tuple(tags)), [], forbid_seed_entities=False)
            if not row.ok or Span(start, end, label) not in tags_to_spans(row.tags):
                self.details[canary.id] = {"checker": row.reason if not row.ok else "; ".join(row.salvaged)}
                return 0.0
            if self.config.verify_known and self.split_checker.stats.lexicon.get(
                    " ".join(t.lower() for t in canary.tokens[start:end])) == label:
                self.details[canary.id] = {"known": True}
                return 1.0
        p = await self.entity(canary)
        if self.config.verify_split:  # as the stage scores it, with the split the checker was built from
            return with_split(p, self.split_checker.stats, canary.tokens, Span(start, end, label), self.gold.types)
        return p


async def _no_revision(feedback: list[tuple[Candidate, dict[str, Any]]], rnd: int) -> list[Candidate]:
    raise AssertionError("a one-round review never revises")


@dataclass(frozen=True)
class ScorerSpec:
    """A scorer: the canary level it reads, how it is built for a dataset, and the product's own threshold.

    Attributes:
        level: ``entity``, ``row`` or ``guide``.
        build: the scorer of a dataset's judges.
        threshold: the threshold the product applies to this score, from the run configuration.
    """

    level: str
    build: Callable[[Judges], Scorer]
    threshold: Callable[[AugmentConfig], float]

    def bind(self, judges: Judges) -> Scorer:
        """The scorer for ``judges``' dataset."""
        return self.build(judges)


SCORERS: dict[str, ScorerSpec] = {
    "ac": ScorerSpec("row", lambda j: j.ac, lambda cfg: cfg.threshold / 100),
    "gr": ScorerSpec("guide", lambda j: j.gr, lambda cfg: cfg.threshold / 100),
    "debate": ScorerSpec("row", lambda j: j.debate, lambda cfg: cfg.debate_sigma / 100),
    "entity": ScorerSpec("entity", lambda j: j.entity, lambda cfg: cfg.verify_threshold),
    "checker": ScorerSpec("row", lambda j: j.checker, lambda cfg: 0.5),
    "ac-prob": ScorerSpec("row", lambda j: j.ac_prob, lambda cfg: cfg.probability_threshold / 100),
    "gr-prob": ScorerSpec("guide", lambda j: j.gr_prob, lambda cfg: cfg.probability_threshold / 100),
    "verification": ScorerSpec("entity", lambda j: j.verification, lambda cfg: cfg.verify_threshold),
    "debate-prob": ScorerSpec("row", lambda j: j.debate_prob, lambda cfg: cfg.probability_threshold / 100),
    "split": ScorerSpec("entity", lambda j: j.split, lambda cfg: 0.5),
}


async def score_cell(spec: ScorerSpec, judges: Judges, canaries: Sequence[Canary]) -> dict[str, Any]:
    """Score every canary of the scorer's level (concurrently, within the backend's limit), evaluate the scores and
    sum the calls they took."""
    scorer = spec.bind(judges)
    judges.spent = []

    async def one(c: Canary) -> dict[str, Any]:
        try:
            score = round(await scorer(c), 4)
            typed = {"type": c.span[2]} if c.span is not None else {}
            return {"id": c.id, "label": c.label, **typed, "score": score, **judges.details.pop(c.id, {})}
        except RGDAError as err:  # an unreadable answer fails its canary, never the cell
            return {"id": c.id, "label": c.label, "score": None, "error": f"{type(err).__name__}: {err}"[:300]}

    rows = await asyncio.gather(*(one(c) for c in canaries if c.level == spec.level))
    scored = [x for x in rows if x["score"] is not None]
    seconds = sum(r.accounting.llm_seconds for r in judges.spent)
    metrics = evaluate([x["label"] for x in scored], [x["score"] for x in scored], spec.threshold(judges.config))
    if spec.level == "entity":
        metrics["per_type"] = per_type(scored)
        if spec is SCORERS["entity"]:  # a probability: the verification scorer mixes in the checker's 0 and 1
            metrics["auroc_type_rescaled"] = type_rescaled_auroc(scored)
    return {"canaries": len(rows), "failed": len(rows) - len(scored), "metrics": metrics,
            "calls": sum(r.accounting.calls for r in judges.spent),
            "cached_calls": sum(r.accounting.cached_calls for r in judges.spent),
            "prompt_tokens": sum(r.accounting.prompt_tokens for r in judges.spent),
            "completion_tokens": sum(r.accounting.completion_tokens for r in judges.spent),
            "llm_seconds": round(seconds, 1),
            "seconds_per_canary": round(seconds / len(rows), 2) if rows else None, "scores": rows}


def per_type(scored: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Entity canaries by the type they present: count, good count, mean score of the good ones, and AUROC of the
    type's canaries alone (None where a type has only good or only defective ones)."""
    out = {}
    for t in sorted({x["type"] for x in scored}):
        mine = [x for x in scored if x["type"] == t]
        good = [x["label"] == "good" for x in mine]
        value = auroc([x["score"] for x in mine], good) if 0 < sum(good) < len(good) else None
        out[t] = {"n": len(mine), "good": sum(good), "auroc": None if value is None else round(value, 4),
                  "mean_score_good": round(sum(x["score"] for x, g in zip(mine, good) if g) / sum(good), 4)
                  if any(good) else None}
    return out


def type_rescaled_auroc(scored: Sequence[dict[str, Any]]) -> float | None:
    """AUROC of the entity scores, each divided by the mean score of the good canaries presenting its type (a type
    without one: by the mean of all good canaries): what a reference per type (as ``verify_relative`` takes one per
    seed) would make of the scores, with the reference taken from the scored canaries themselves, so optimistic.
    No rescaling of a type's scores changes their order within the type: the per-type AUROCs (``per_type``) are what
    no threshold per type can improve."""
    good = [x for x in scored if x["label"] == "good"]
    if not good or len(good) == len(scored):
        return None
    overall = statistics.mean(x["score"] for x in good)
    means = {t: statistics.mean(x["score"] for x in good if x["type"] == t) for t in {x["type"] for x in good}}
    value = auroc([x["score"] / max(means.get(x["type"], overall), 1e-9) for x in scored],
                  [x["label"] == "good" for x in scored])
    return None if value is None else round(value, 4)


def report(paths: Sequence[Path]) -> None:
    """Print the ``entity`` scorer's figures of results files, the rescaled AUROC recomputed from its stored scores;
    and, per dataset whose files hold the ``verification``, ``entity`` and ``split`` scores of the same canaries,
    :func:`combined_auroc`."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for path, (name, entry) in ((p, x) for p in paths for x in json.loads(p.read_text())["datasets"].items()):
        for scorer, cell in entry.get("scorers", {}).items():
            scored = [x for x in cell["scores"] if x["score"] is not None]
            found.setdefault(name, {}).setdefault(scorer, {x["id"]: x["score"] for x in scored if "id" in x})
            found[name].setdefault("good", {}).update({x["id"]: x["label"] == "good" for x in scored if "id" in x})
            if scorer != "entity":  # the model's probability alone (see type_rescaled_auroc)
                continue
            kinds = ", ".join(f"{t} {v['auroc']}" for t, v in cell["metrics"]["per_type"].items())
            print(f"{path.name} {name}/{scorer}: AUROC {cell['metrics']['auroc']}; rescaled per type "
                  f"{type_rescaled_auroc(scored)}; within each type: {kinds}")
    for name, scores in found.items():
        if {"verification", "entity", "split"} <= set(scores):
            print(f"{name}: verification as deployed {combined_auroc(scores, None)}; with the split scorer in place "
                  f"of the model {combined_auroc(scores, 1.0)}; with the geometric mean of both {combined_auroc(scores, 0.5)}")


def combined_auroc(scores: dict[str, dict[str, Any]], weight: float | None) -> float | None:
    """AUROC of the ``verification`` scorer with the model's probability P (``entity``) replaced by
    ``P ** (1 - weight) * S ** weight``, S the ``split`` score (``weight`` None: P as deployed), for the canaries the
    checker and the lexicon do not decide (those keep their 0 or 1). Computed from stored scores, no call.

    Example:
        >>> s = {"verification": {"a": 0.3, "b": 0.0, "c": 0.2}, "entity": {"a": 0.3, "b": 0.9, "c": 0.2},
        ...      "split": {"a": 0.1, "b": 0.9, "c": 0.9}, "good": {"a": True, "b": False, "c": False}}
        >>> combined_auroc(s, None), combined_auroc(s, 1.0)
        (1.0, 0.5)
    """
    ids = [i for i in scores["verification"] if i in scores["entity"] and i in scores["split"]]

    def one(i: str) -> float:
        v = scores["verification"][i]
        if v in (0.0, 1.0) or weight is None:
            return v
        return 0.001 + 0.998 * scores["entity"][i] ** (1 - weight) * scores["split"][i] ** weight

    value = auroc([one(i) for i in ids], [scores["good"][i] for i in ids])
    return None if value is None else round(value, 4)


def type_descriptions(kind: str, gold: Gold, data_dir: Path) -> dict[str, str]:
    """The ``type_descriptions`` of ``--descriptions kind`` for ``gold``'s dataset (module docstring)."""
    if kind == "none":
        return {}
    if kind == "dataset":
        return dict(TYPE_DESCRIPTIONS.get(gold.name, {}))
    from hf_rgda.recipe import load_source
    from hf_rgda.stages.categories import describe
    from hf_rgda.tags import detokenize, tags_to_spans, to_tag_names

    train = load_source(str(data_dir / gold.name))["train"]
    held, counts = {tuple(t) for t, _ in gold.sentences}, {}
    for tokens, tags in zip(train["tokens"], to_tag_names(train)):
        if tuple(tokens) not in held:
            for s in tags_to_spans(tags):
                text = detokenize(tokens[s.start : s.end])
                counts.setdefault(s.label, {}).setdefault(text, 0)
                counts[s.label][text] += 1
    out = {}
    for t in gold.types:
        seen: dict[str, str] = {}
        for text in sorted(counts.get(t, {}), key=lambda x: -counts[t][x]):  # stable: first seen among equals
            seen.setdefault(text.lower(), text)
            if len(seen) == 4:
                break
        examples = ", ".join(f'"{x}"' for x in seen.values())
        out[t] = describe(t) + (f" (in this data, for example: {examples})" if examples else "")
    return out


async def run_dataset(llm: LLM, gold: Gold, canaries: Sequence[Canary], scorers: Sequence[str],
                      cache: ResponseCache | None, data_dir: Path | None = None,
                      descriptions: dict[str, str] | None = None,
                      overrides: dict[str, Any] | None = None, split_size: int | None = None,
                      seed: int = 0) -> dict[str, Any]:
    """Every chosen scorer's cell for one dataset."""
    judges = Judges(llm, gold, cache, data_dir, descriptions, overrides, split_size, seed)
    try:
        return {name: await score_cell(SCORERS[name], judges, canaries) for name in scorers}
    finally:
        await llm.aclose()


def _option(text: str) -> tuple[str, Any]:
    """``--set``'s ``OPTION=VALUE``, checked against :class:`AugmentConfig`'s fields."""
    name, eq, value = text.partition("=")
    if not eq or name not in {f.name for f in dataclasses.fields(AugmentConfig)}:
        raise argparse.ArgumentTypeError(f"{text!r}: expected OPTION=VALUE with an AugmentConfig option")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def default_out(llm: str) -> Path:
    """``benchmarks/results/calibration_<backend>-<model file stem>.json``."""
    backend, _, model = llm.partition(":")
    slug = re.sub(r"[^a-z0-9.]+", "-", f"{backend}-{Path(model).stem}".lower()).strip("-")
    return Path("benchmarks/results") / f"calibration_{slug}.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llm", default=DEFAULT_LLM, help="any backend spec, e.g. openai:gpt-4o-mini")
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc", "fin"])
    p.add_argument("--per-class", type=int, default=3, help="canaries per defect class (good: as many as all defects)")
    p.add_argument("--scorers", nargs="+", default=["ac", "gr", "debate"], choices=list(SCORERS))
    p.add_argument("--seed", type=int, default=0, help="the canaries' seed")
    p.add_argument("--cache", type=Path, default=Path("benchmarks/.cache/calibration.sqlite3"))
    p.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/calibration_<llm>.json")
    p.add_argument("--descriptions", choices=["none", "dataset", "examples"], default="none",
                   help="the type_descriptions passed to the pipeline (module docstring)")
    p.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE", type=_option,
                   help="an AugmentConfig option of the pipeline the scorers call (VALUE read as JSON, else as a "
                        "string), e.g. --set verify_known=false; repeatable")
    p.add_argument("--split-size", type=int, default=None, metavar="N",
                   help="the checker's and the split scorer's statistics from N train sentences (default: all)")
    p.add_argument("--report", type=Path, nargs="+", default=None, metavar="RESULTS",
                   help="print the entity scorer's figures of results files (no call is made) and exit")
    args = p.parse_args(argv)
    if args.report is not None:
        report(args.report)
        return 0
    overrides = dict(args.set)
    out = args.out or default_out(args.llm)
    results = json.loads(out.read_text()) if out.exists() else {}
    command = "python benchmarks/calibration.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results.setdefault("commands", [])
    if command not in results["commands"]:  # several invocations (scorers, datasets) may fill one results file
        results["commands"].append(command)
    results.update({"command": command, "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
                    "llm": args.llm, "commit": _commit(), "threshold_rule": THRESHOLD_RULE})
    llm = load_llm(args.llm)
    golds = [load_gold(args.data_dir, name, args.seed) for name in args.datasets]
    canaries = build_canaries(golds, args.per_class, args.seed)
    cache = ResponseCache(args.cache)
    for gold in golds:
        mine = [c for c in canaries if c.dataset == gold.name]
        entry = results.setdefault("datasets", {}).setdefault(gold.name, {})
        descriptions = type_descriptions(args.descriptions, gold, args.data_dir)
        entry.update({"dev": gold.source, "per_class": args.per_class, "seed": args.seed,
                      "canaries": class_counts(mine), "type_descriptions": descriptions,
                      "config_overrides": overrides, "split_size": args.split_size})
        print(f"{gold.name} ({gold.source}): " + "; ".join(
            f"{n} {sum(c.level == SCORERS[n].level for c in mine)} canaries" for n in args.scorers), flush=True)
        cells = asyncio.run(run_dataset(llm, gold, mine, args.scorers, cache, args.data_dir, descriptions, overrides,
                                        args.split_size, args.seed))
        entry.setdefault("scorers", {}).update(cells)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
        for name, cell in cells.items():
            m = cell["metrics"]
            print(f"{gold.name}/{name}: AUROC {m['auroc']}, held-out accuracy {m['heldout_accuracy']} (thresholds "
                  f"{m['thresholds']}), accuracy at the product's {m['product_threshold']} "
                  f"{m['accuracy_at_product_threshold']}; {cell['canaries']} canaries, {cell['failed']} failed, "
                  f"{cell['seconds_per_canary']} s each", flush=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
