"""Judges read by probability (hf_rgda.stages.rating): the 1-5 scale, the weighted scores, the questions, feedback
only before a refinement, the switch and the trace."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hf_rgda import ScriptedLLM, prompts
from hf_rgda.checking import Checker
from hf_rgda.config import AugmentConfig
from hf_rgda.llm.options import answer_schema
from hf_rgda.pipeline import Pipeline
from hf_rgda.records import Judgement, Seed, SeedResult, SeedTrace
from hf_rgda.schemas import AC_RUBRIC, GR_RUBRIC
from hf_rgda.stages.rating import (
    FRACTIONS,
    SCALE,
    by_probability,
    criteria_lines,
    criterion_score,
    expected_total,
    rate_with,
    read_verdict,
    scale_system,
)
from hf_rgda.summary import RunSummary
from hf_rgda.testing import FakeWorld, stage_of

SEED = Seed("s0", ("Germline", "mutations", "cause", "breast", "cancer", "."), ("O", "O", "O", "B-Disease",
                                                                                "I-Disease", "O"))


def test_the_scale_is_single_digits_mapped_to_fractions_of_the_maximum() -> None:
    assert SCALE == ("1", "2", "3", "4", "5") and all(len(k) == 1 for k in SCALE)
    assert FRACTIONS == {"1": 0.0, "2": 0.25, "3": 0.5, "4": 0.75, "5": 1.0}


@pytest.mark.parametrize(("probs", "top", "score"), [
    ({"5": 1.0}, 30, 30.0), ({"1": 1.0}, 30, 0.0), ({"3": 1.0}, 20, 10.0), ({"1": 0.5, "5": 0.5}, 30, 15.0),
    ({"4": 0.6, "5": 0.4}, 20, 17.0), ({"1": 0.2, "2": 0.2, "3": 0.2, "4": 0.2, "5": 0.2}, 15, 7.5)])
def test_a_criterion_scores_the_probability_weighted_mean(probs: dict[str, float], top: int, score: float) -> None:
    assert criterion_score(probs, top) == pytest.approx(score)


def test_a_verdict_read_by_probability_keeps_its_shape_and_distributions() -> None:
    dists = {name: {"4": 0.6, "5": 0.4} for name in AC_RUBRIC}  # 0.85 of each maximum
    v = read_verdict(dists, AC_RUBRIC)
    assert v.criteria == {"domain_alignment": 26, "semantic_consistency": 26, "entity_role_integrity": 21,
                          "tag_format_validation": 13}
    assert v.score == sum(v.criteria.values()) == 86 and v.feedback == {} and v.method == "probability"
    assert v.distributions == dists and expected_total(v, AC_RUBRIC) == pytest.approx(85.0)


@pytest.mark.parametrize(("stage", "rubric"), [("guidance_judge", GR_RUBRIC), ("composition_judge", AC_RUBRIC)])
def test_the_rating_prompt_reuses_the_rubric_of_the_judge(stage: str, rubric: dict[str, int]) -> None:
    judge = prompts.render(stage, types="Disease, Chemical")
    lines = criteria_lines(judge, rubric)
    system = scale_system(judge)
    assert list(lines) == list(rubric) and all(f"{name} (max {top}): " in lines[name] for name, top in rubric.items())
    assert all(line in system for line in lines.values()) and judge.splitlines()[0] in system
    assert "Disease, Chemical" in system and system.rstrip().endswith("nothing else.")
    assert "The rubric:\n" in system and "of this rubric at a time" in system
    with pytest.raises(ValueError, match="keyword_detection"):
        criteria_lines(judge, {**rubric, "keyword_detection": 99})


def test_one_rating_prompt_shows_both_rubrics_with_the_shared_header_lines_once() -> None:
    gr, ac = (prompts.render(s, types="Disease") for s in ("guidance_judge", "composition_judge"))
    system = scale_system(gr, ("new sentences", ac), title="a guide")
    assert system.count("Entity types of this dataset") == 1 and gr.splitlines()[0] in system
    assert ac.splitlines()[0] in system and "of one rubric at a time" in system
    guide, sentences = system.index("The rubric for a guide:\n1. context_abstraction"), system.index(
        "The rubric for new sentences:\n1. domain_alignment")
    assert guide < sentences and all(line in system for line in criteria_lines(ac, AC_RUBRIC).values())


def _run(rating: dict[str, float], reuses_prefix: bool = False, max_concurrency: int = 8,
         **cfg: Any) -> tuple[SeedResult, FakeWorld, ScriptedLLM]:
    """rgda on one seed; every rating question answered with ``rating``; ``llm.stage_names`` is each call's stage;
    ``reuses_prefix``: the backend says it keeps its KV prefix (as the local engine does); ``max_concurrency`` 1: it
    answers one call at a time (as the local engine does)."""
    world = FakeWorld()
    names: list[str] = []

    def handler(messages: Any, schema: Any, params: Any) -> Any:
        names.append(stage_of(list(messages)))
        if "answer" in schema["properties"] and stage_of(list(messages)) in ("guidance_judge", "composition_judge"):
            world.stages.append(stage_of(list(messages)))
            return rating
        return world(messages, schema, params)

    llm = ScriptedLLM(handler, max_concurrency=max_concurrency)
    llm.stage_names = names  # type: ignore[attr-defined]
    llm.reuses_prefix = reuses_prefix
    [r] = asyncio.run(Pipeline(AugmentConfig(**cfg), llm, Checker(("Disease",))).run([SEED]))
    return r, world, llm


def _calls(llm: ScriptedLLM, *stages: str) -> list[tuple[Any, Any]]:
    """The ``(messages, schema)`` of ``llm``'s calls of these stages."""
    return [(m, s) for (m, s, _), name in zip(llm.calls, llm.stage_names) if name in stages]  # type: ignore[attr-defined]


def test_a_passing_verdict_costs_one_token_per_criterion_and_asks_no_feedback() -> None:
    r, world, llm = _run({"5": 0.9, "4": 0.1}, reuses_prefix=True)  # 0.975 of each maximum: passes 90
    assert [j.score for j in r.judgements["guidance_judge"]] == [99] and [j.score for j in r.judgements["composition_judge"]] == [97]
    assert all(j.method == "probability" and j.feedback == {} for j in r.judgements["guidance_judge"] + r.judgements["composition_judge"])
    asked = _calls(llm, "guidance_judge", "composition_judge")
    assert len(asked) == len(GR_RUBRIC) + len(AC_RUBRIC) and all(s == answer_schema(SCALE) for _, s in asked)
    gr = [m for m, _ in _calls(llm, "guidance_judge")]
    shared = scale_system(prompts.render("guidance_judge", types="Disease"),
                          ("new sentences", prompts.render("composition_judge", types="Disease")), title="a guide")
    assert {m[0]["content"] for m in gr} == {m[0]["content"] for m, _ in asked} == {shared}  # one prompt, both judges
    ac = [m for m, _ in _calls(llm, "composition_judge")]  # the AC judge's message opens as the GR judge's: one KV prefix
    assert ac[0][1]["content"].startswith(gr[0][1]["content"].split("\n\nCriterion:")[0] + "\n\nNew sentences:")
    assert [m[-1]["content"].rsplit("Criterion:\n", 1)[1].split(" ")[0] for m in gr] == list(GR_RUBRIC)
    usage = r.accounting.stage_usage["guidance_judge/round1"]
    assert usage["calls"] == len(GR_RUBRIC) and usage["completion_tokens"] == len(GR_RUBRIC)
    assert "guidance_feedback" not in world.stages and "composition_feedback" not in world.stages


@pytest.mark.parametrize(("reuses_prefix", "method"), [(False, "rgda"), (True, "rgda-no-ac")])
def test_each_judge_rates_under_its_own_rubric_where_sharing_would_buy_nothing(reuses_prefix: bool,
                                                                               method: str) -> None:
    """A backend that keeps no prefix (a remote API) would only pay for the other rubric, and a run with one loop
    has no second judge to share with."""
    r, _, llm = _run({"5": 1.0}, reuses_prefix=reuses_prefix, method=method)
    own = scale_system(prompts.render("guidance_judge", types="Disease"))
    assert [j.score for j in r.judgements["guidance_judge"]] == [100]
    assert {m[0]["content"] for m, _ in _calls(llm, "guidance_judge")} == {own}
    if method == "rgda":
        assert {m[0]["content"] for m, _ in _calls(llm, "composition_judge")} == {
            scale_system(prompts.render("composition_judge", types="Disease"))}


def test_feedback_is_asked_only_below_the_threshold_with_rounds_left() -> None:
    r, world, llm = _run({"4": 1.0}, max_rounds=3, probability_threshold=90)  # 75 < 90: refined twice, judged 3x
    assert [j.score for j in r.judgements["guidance_judge"]] == [75, 75, 75]
    assert world.stages.count("guidance_feedback") == world.stages.count("guidance_refine") == 2
    assert [bool(j.feedback) for j in r.judgements["guidance_judge"]] == [True, True, False]
    assert r.judgements["guidance_judge"][0].feedback == {name: f"fix {name}" for name in GR_RUBRIC}
    feedback = [m for m, s in _calls(llm, "guidance_judge") if "answer" not in s["properties"]]
    assert feedback[0][0]["content"] == prompts.render("guidance_judge", types="Disease")
    assert "Scores:\n- context_abstraction: 23/30\n" in feedback[0][-1]["content"]
    refine = _calls(llm, "guidance_refine")[0][0][-1]["content"]
    assert "- context_abstraction (23/30): fix context_abstraction" in refine


@pytest.mark.parametrize(("threshold", "probability_threshold", "rounds"), [(70, 90, 3), (90, 70, 1)])
def test_a_verdict_read_by_probability_stops_the_loop_at_the_probability_threshold(
        threshold: int, probability_threshold: int, rounds: int) -> None:
    r, world, _ = _run({"4": 1.0}, max_rounds=3, threshold=threshold, probability_threshold=probability_threshold)
    assert [j.score for j in r.judgements["guidance_judge"]] == [75] * rounds  # 75: below 90, at or above 70
    assert world.stages.count("guidance_refine") == rounds - 1
    cfg = AugmentConfig(threshold=threshold, probability_threshold=probability_threshold)
    assert (cfg.threshold_for("probability"), cfg.threshold_for("sample")) == (probability_threshold, threshold)


@pytest.mark.parametrize(("reading", "logprobs", "expected"), [
    ("auto", True, True), ("auto", False, False), ("probability", False, True), ("sample", True, False)])
def test_the_switch(reading: str, logprobs: bool, expected: bool) -> None:
    llm = ScriptedLLM(FakeWorld(), logprobs=logprobs)
    assert by_probability(AugmentConfig(judge_reading=reading), llm) is expected


def test_sample_reading_is_the_one_sampled_verdict() -> None:
    r, world, _ = _run({"1": 1.0}, judge_reading="sample")
    assert [j.score for j in r.judgements["guidance_judge"]] == [95] and r.judgements["guidance_judge"][0].method == "sample"
    assert "guidance_feedback" not in world.stages


def test_the_trace_records_the_reading() -> None:
    r, _, _ = _run({"4": 0.5, "5": 0.5}, method="rgda-no-ac")
    data = json.loads(json.dumps(SeedTrace.of(r, "rgda-no-ac").to_json()))
    assert data["gr"][0]["method"] == "probability"
    assert data["gr"][0]["distributions"]["keyword_detection"] == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.5, "5": 0.5}
    assert SeedTrace.from_json(data).judgements["guidance_judge"] == r.judgements["guidance_judge"]
    old = {k: v for k, v in data["gr"][0].items() if k not in ("method", "distributions")}
    assert SeedTrace.from_json({**data, "gr": [old]}).judgements["guidance_judge"][0] == Judgement(old["score"], old["criteria"], old["feedback"])


def _rate(dists: dict[str, dict[str, float]], rubric: dict[str, int], pass_at: int | None) -> tuple[Judgement, list[str]]:
    """``rate_with`` over scripted distributions: the verdict and the criteria asked, in order."""
    asked: list[str] = []

    async def choose(messages: Any, name: str) -> dict[str, float]:
        asked.append(name)
        return dists[name]

    lines = {name: f"{name} (max {top}): x" for name, top in rubric.items()}
    return asyncio.run(rate_with(choose, [{"role": "user", "content": "u"}], "system", lines, rubric, pass_at)), asked


def test_a_verdict_passing_early_asks_the_largest_criteria_until_their_points_reach_the_threshold() -> None:
    dists = {name: {"4": 1.0} for name in GR_RUBRIC}  # 3/4 of each maximum: 23 + 15 + 15 = 53 >= 50
    v, asked = _rate(dists, GR_RUBRIC, 50)
    assert asked == ["context_abstraction", "entity_explanation", "correct_relationship"]
    assert v.partial and v.score == 53 and v.criteria == {"context_abstraction": 23, "entity_explanation": 15,
                                                          "correct_relationship": 15}
    assert set(v.distributions) == set(asked)
    full, every = _rate(dists, GR_RUBRIC, None)
    assert every == list(GR_RUBRIC) and not full.partial and full.score == 75  # 23 + 11 + 11 + 15 + 15


def test_a_verdict_below_the_threshold_asks_every_criterion_in_the_rubrics_order() -> None:
    v, asked = _rate({name: {"2": 1.0} for name in AC_RUBRIC}, AC_RUBRIC, 50)  # a quarter of each: 26 < 50
    assert sorted(asked) == sorted(AC_RUBRIC) and not v.partial and list(v.criteria) == list(AC_RUBRIC)
    assert v == read_verdict({name: {"2": 1.0} for name in AC_RUBRIC}, AC_RUBRIC)


def test_passing_early_never_changes_a_decision() -> None:
    """Over random distributions and thresholds: a verdict passes early only if the full verdict passes, every full
    pass is still a pass, and a verdict that did not pass early is the full verdict."""
    import random

    rnd = random.Random(7)
    for _ in range(400):
        rubric = rnd.choice([GR_RUBRIC, AC_RUBRIC])
        dists = {}
        for name in rubric:
            w = [rnd.random() ** 3 for _ in SCALE]
            dists[name] = {k: x / sum(w) for k, x in zip(SCALE, w)}
        t = rnd.randint(0, 100)
        full, _ = _rate(dists, rubric, None)
        early, asked = _rate(dists, rubric, t)
        assert (early.score >= t) == (full.score >= t)
        if early.partial:
            assert t <= early.score <= full.score and len(asked) < len(rubric)
            assert all(full.criteria[n] == p for n, p in early.criteria.items())
        else:
            assert early == full


def test_the_local_backends_verdicts_pass_early_and_are_counted_apart() -> None:
    """One call at a time (the local engine): a passing verdict stops asking; the summary keeps its lower-bound
    score out of the score histograms and counts it as passed early."""
    r, world, llm = _run({"4": 1.0}, max_concurrency=1)  # GR 23 + 15 + 15 = 53; AC 23 + 23 + 19 = 65 >= 50
    gr, ac = r.judgements["guidance_judge"], r.judgements["composition_judge"]
    assert [(j.score, j.partial) for j in gr] == [(53, True)] and [(j.score, j.partial) for j in ac] == [(65, True)]
    assert len(_calls(llm, "guidance_judge")) == 3 and len(_calls(llm, "composition_judge")) == 3
    assert r.accounting.stage_usage["guidance_judge/round1"]["calls"] == 3
    data = json.loads(json.dumps(SeedTrace.of(r, "rgda").to_json()))
    assert data["gr"][0]["partial"] is True and SeedTrace.from_json(data).judgements["guidance_judge"] == gr
    summary = RunSummary()
    summary.add(SeedTrace.from_json(data))
    d = summary.to_dict()
    assert d["judge_passed_early"] == {"ac_round1": 1, "gr_round1": 1} and d["judge_scores"] == {}
    assert "gr_round1: 1 passed early" in summary.format()
    assert "guidance_feedback" not in world.stages


@pytest.mark.parametrize(("max_concurrency", "early"), [(8, True), (1, False)])
def test_every_criterion_is_asked_where_asking_one_by_one_would_cost_time_or_when_switched_off(
        max_concurrency: int, early: bool) -> None:
    r, _, llm = _run({"4": 1.0}, max_concurrency=max_concurrency, judge_early_pass=early)
    assert [(j.score, j.partial) for j in r.judgements["guidance_judge"]] == [(75, False)]
    assert len(_calls(llm, "guidance_judge")) == len(GR_RUBRIC) and len(_calls(llm, "composition_judge")) == len(AC_RUBRIC)


def test_a_failing_verdict_of_the_local_backend_asks_every_criterion_and_its_feedback() -> None:
    r, world, llm = _run({"2": 1.0}, max_concurrency=1, max_rounds=2)  # 26 < 50: refined once, judged twice
    assert [(j.score, j.partial) for j in r.judgements["guidance_judge"]] == [(26, False), (26, False)]
    assert world.stages.count("guidance_feedback") == 1
    rated = [m for m, s in _calls(llm, "guidance_judge") if "answer" in s["properties"]]
    assert len(rated) == 2 * len(GR_RUBRIC)


def test_a_partial_verdict_refuses_what_needs_every_criterion() -> None:
    v, _ = _rate({name: {"4": 1.0} for name in GR_RUBRIC}, GR_RUBRIC, 50)
    with pytest.raises(ValueError, match="passed early"):
        expected_total(v, GR_RUBRIC)
    with pytest.raises(ValueError, match="passed early"):
        v.feedback_text(GR_RUBRIC)
