from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hf_rgda import AugmentConfig, ScriptedLLM
from hf_rgda.cache import ResponseCache
from hf_rgda.calls import derive_seed
from hf_rgda.checking import Checker, complete_items
from hf_rgda.checking.decode import copies_item, text_loops
from hf_rgda.pipeline import Pipeline
from hf_rgda.records import Seed
from hf_rgda.schemas import GR_RUBRIC, guidance_schema, judge_schema, sentences_schema
from hf_rgda.stages.verdicts import parse_verdict

from .conftest import SEED_ROWS, FakeWorld, stage_of

SEEDS = [Seed(f"s{i}", tuple(t), tuple(g)) for i, (t, g) in enumerate(zip(SEED_ROWS["tokens"], SEED_ROWS["ner_tags"]))]


def run(world: FakeWorld, seeds: list[Seed] = SEEDS, cache: ResponseCache | None = None, **cfg: object):
    pipe = Pipeline(AugmentConfig(**cfg), ScriptedLLM(world), Checker(("Disease",)), cache=cache)
    return asyncio.run(pipe.run(seeds))


def test_rgda_stage_order_is_stage_major() -> None:
    world = FakeWorld()
    results = run(world)
    n = len(SEEDS)
    # one question per entity of each of its three sentences (each above verify_threshold: the seed's own entities,
    # the relative threshold's reference, are not asked)
    verify = ["entity_verify"] * (3 * n)
    assert world.stages == (["seed_generation"] * n + ["guidance"] * n + ["guidance_judge"] * n + ["composer"] * n + verify
                            + ["composition_judge"] * n)
    assert all(len(r.accepted) == 3 and not r.rejected and not r.failure for r in results)


def test_row_schedule_runs_each_seed_through_all_stages() -> None:
    world = FakeWorld()
    run(world, schedule="row")
    assert world.stages[:8] == ["seed_generation", "guidance", "guidance_judge", "composer", *["entity_verify"] * 3, "composition_judge"]


@pytest.mark.parametrize("reading", ["probability", "sample"])
@pytest.mark.parametrize(("scores", "rounds"), [([95], 1), ([60, 92], 2), ([10, 20, 30, 40], 3), ([90], 1)])
def test_refine_loop_stops_at_threshold_or_max_rounds(scores: list[int], rounds: int, reading: str) -> None:
    world = FakeWorld(gr_scores=scores, ac_scores=scores)
    [r] = run(world, seeds=SEEDS[:1], judge_reading=reading, threshold=90, probability_threshold=90)
    assert [j.score for j in r.judgements["guidance_judge"]] == scores[:rounds]
    assert len(r.judgements["composition_judge"]) == rounds
    assert world.stages.count("guidance_refine") == rounds - 1 and world.stages.count("composition_refine") == rounds - 1


def test_a_refinement_that_changes_nothing_ends_its_loop() -> None:
    """A small model often hands the guide (or the sentences) back verbatim; judging them again would only sample
    the judge's noise, so the loop ends on the last verdict, with a note."""

    class Stubborn(FakeWorld):
        def __call__(self, messages, schema, params):
            stage = stage_of(list(messages))
            if stage == "guidance_refine":
                self.stages.append(stage)
                return json.loads(messages[-1]["content"].split("Guide:\n", 1)[1].split("\n\nReviewer feedback", 1)[0])
            if stage == "composition_refine":
                self.stages.append(stage)
                body = messages[-1]["content"].split("Current sentences:\n", 1)[1].split("\n\nReviewer feedback", 1)[0]
                return {"sentences": json.loads(body)}
            return super().__call__(messages, schema, params)

    world = Stubborn(gr_scores=[10], ac_scores=[10])
    [r] = run(world, seeds=SEEDS[:1])
    assert world.stages.count("guidance_judge") == world.stages.count("guidance_refine") == 1
    assert world.stages.count("composition_judge") == world.stages.count("composition_refine") == 1
    assert "GR refinement round 1 returned the guide unchanged: loop stopped" in r.notes
    assert "AC refinement round 1 returned the sentences unchanged: loop stopped" in r.notes
    assert len(r.accepted) == 3 and r.superseded == 3  # the copies are accounted for, the originals kept


@pytest.mark.parametrize(("method", "gr", "ac", "guided"), [
    ("naive", False, False, False), ("gda", False, False, True), ("rgda-no-gr", False, True, True),
    ("rgda-no-ac", True, False, True), ("rgda", True, True, True)])
def test_methods_select_stages(method: str, gr: bool, ac: bool, guided: bool) -> None:
    world = FakeWorld()
    [r] = run(world, seeds=SEEDS[:1], method=method)
    assert ("guidance_judge" in world.stages) is gr and ("composition_judge" in world.stages) is ac
    assert ("composer" in world.stages) is guided
    assert len(r.accepted) == 3


def test_garbage_output_fails_that_seed_only() -> None:
    world = FakeWorld(broken=("guidance",))
    results = run(world)
    assert all(r.failure.startswith("guidance: ParseError") for r in results)
    assert all(not r.accepted for r in results)


@pytest.mark.parametrize(("stage", "cfg"), [("entity_verify", {"verify_threshold": 1.0}),
                                            ("entity_verify", {"method": "naive", "verify_threshold": 1.0}),
                                            ("debate_review", {"debate_review": True})])
def test_a_seed_whose_verification_or_review_raises_keeps_no_accepted_row(stage: str, cfg: dict) -> None:
    """Issue 31: on 8ae9ee0 a seed whose entity verification or debate review raised was counted failed, yet the
    sentences it held (never verified, never reviewed) came out accepted (composer.finish ran for failed seeds). A
    failed seed now keeps no accepted sentence, with a note saying how many were withheld. (verify_threshold 1.0: the
    world's 0.95 is below it, so the seed's own entity, the question that fails, is asked as the reference.)"""
    from hf_rgda import ServerError

    world = FakeWorld()

    def handler(messages, schema, params):
        if stage_of(list(messages)) == stage and "cystic fibrosis" in messages[-1]["content"]:
            return ServerError("HTTP 503: overloaded")
        return world(messages, schema, params)

    pipe = Pipeline(AugmentConfig(**cfg), ScriptedLLM(handler), Checker(("Disease",)))
    results = asyncio.run(pipe.run(SEEDS))
    [bad] = [r for r in results if r.failure]
    assert bad.seed.key == "s1" and bad.failure.startswith(f"{stage}: ServerError")
    assert bad.accepted == [] and any("withheld" in n for n in bad.notes)
    assert all(r.accepted for r in results if r is not bad)


def test_an_unexpected_error_fails_its_seed_only(caplog: pytest.LogCaptureFixture) -> None:
    """A bug-shaped exception (not an LLM answer) in one seed's call is that seed's failure, named and logged with
    key-shaped text redacted; the other seeds finish."""
    world = FakeWorld()

    def handler(messages, schema, params):
        if stage_of(list(messages)) == "guidance" and "cystic fibrosis" in messages[-1]["content"]:
            raise UnicodeEncodeError("utf-8", "x", 0, 1, "sk-" + "secret123456789 surrogates not allowed")
        return world(messages, schema, params)

    pipe = Pipeline(AugmentConfig(), ScriptedLLM(handler), Checker(("Disease",)))
    results = asyncio.run(pipe.run(SEEDS))
    [bad] = [r for r in results if r.failure]
    assert bad.seed.key == "s1" and not bad.accepted
    assert bad.failure.startswith("guidance: unexpected UnicodeEncodeError") and "sk-secret" not in bad.failure
    assert all(len(r.accepted) == 3 for r in results if r is not bad)
    assert "s1" in caplog.text and "sk-secret" not in caplog.text


def test_a_half_surrogate_pair_in_an_answer_is_replaced() -> None:
    """A small model may cut an emoji in two ("\\ud83c" with no low half). The pipeline must carry on: the next
    prompt and its cache key have to encode as UTF-8."""
    world, judged_asked = FakeWorld(), []

    def handler(messages, schema, params):
        if stage_of(list(messages)) == "guidance":
            return '{"context": "oncology \\ud83c genetics", "structure": "x \\ud83c\\udf89", "entity_roles": [], ' \
                   '"keywords": ["gene"]}'
        if stage_of(list(messages)) == "guidance_judge":
            judged_asked.append(messages)
        return world(messages, schema, params)

    llm = ScriptedLLM(handler)
    pipe = Pipeline(AugmentConfig(), llm, Checker(("Disease",)))
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert not r.failure and len(r.accepted) == 3
    judged = judged_asked[0][-1]["content"]
    assert "oncology \ufffd genetics" in judged and "x \U0001f389" in judged  # the lone half replaced, a pair joined
    judged.encode("utf-8")


@pytest.mark.parametrize(("reading", "error"), [("sample", "ParseError"), ("probability", "BackendError")])
def test_judge_garbage_keeps_unrefined_output(reading: str, error: str) -> None:
    world = FakeWorld(broken=("composition_judge",))
    [r] = run(world, seeds=SEEDS[:1], judge_reading=reading)
    assert not r.failure and len(r.accepted) == 3
    assert any(n.startswith(f"composition_judge: {error}") for n in r.notes)


def test_invalid_sentences_are_repaired_once_then_rejected() -> None:
    calls = {"composer": 0}

    def handler(messages, schema, params):
        stage = stage_of(list(messages))
        if stage in ("composer", "repair") and messages[1]["content"].startswith("Guide:"):
            calls["composer"] += 1
            n = schema["properties"]["sentences"]["minItems"]
            bad = {"text": "Germline mutations in BRCA1 cause breast cancer .", "entities": [{"text": "breast cancer", "type": "Disease"}]}
            good = {"text": "Inherited PTEN variants raise the risk of glioma in adults .", "entities": [{"text": "glioma", "type": "Disease"}]}
            return {"sentences": ([good] + [bad] * (n - 1)) if calls["composer"] == 1 else [bad] * n}
        return FakeWorld()(messages, schema, params)

    pipe = Pipeline(AugmentConfig(method="gda"), ScriptedLLM(handler), Checker(("Disease",)))
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert calls["composer"] == 2  # one composer call, one targeted re-ask
    assert len(r.accepted) == 1
    reasons = [c.reason for s, c in r.rejected if s == "composer"]
    assert reasons == ["seed_entity_reused"] * 4


def pipeline_with_backends_own(option: str, own: Any, given: Any, handler: Any) -> Pipeline:
    """A gda pipeline on a scripted backend whose own ``option`` is ``own``, the configuration giving ``given``
    (None: unset); the resolved value is checked: the one given wins, else the backend's."""
    llm = ScriptedLLM(handler)
    setattr(llm, option, own)
    pipe = Pipeline(AugmentConfig(method="gda", **{option: given}), llm, Checker(("Disease",)))
    assert getattr(pipe.cfg, option) == (own if given is None else given)
    return pipe


@pytest.mark.parametrize(("own", "given", "asked"), [(0, None, 1), (0, 1, 2), (1, None, 2), (1, 0, 1)])
def test_an_unset_max_repairs_is_the_backends_own(own: int, given: int | None, asked: int) -> None:
    """``max_repairs`` unset takes the backend's ``max_repairs`` (the local model's 0: its re-asks repeat the fault);
    a value given wins either way."""
    calls = {"composer": 0}

    def handler(messages, schema, params):
        if stage_of(list(messages)) in ("composer", "repair") and messages[1]["content"].startswith("Guide:"):
            calls["composer"] += 1
            n = schema["properties"]["sentences"]["minItems"]
            return {"sentences": [{"text": "Germline mutations in BRCA1 cause breast cancer .",
                                   "entities": [{"text": "breast cancer", "type": "Disease"}]}] * n}
        return FakeWorld()(messages, schema, params)

    pipe = pipeline_with_backends_own("max_repairs", own, given, handler)
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert calls["composer"] == asked and not r.accepted


@pytest.mark.parametrize(("own", "given", "written"), [(1, None, 4), (0, None, 3), (1, 0, 3), (0, 2, 5)])
def test_spare_sentences_are_asked_and_the_first_num_augmented_kept(own: int, given: int | None, written: int) -> None:
    """The composer writes ``num_augmented`` + ``spare_sentences`` (unset: the backend's own; the local model's 1);
    a seed keeps the first ``num_augmented`` rows to pass every check, and each further one is recorded as
    ``variety/spare``, never silently dropped."""
    asked: list[int] = []

    def handler(messages, schema, params):
        if stage_of(list(messages)) == "composer":
            asked.append(schema["properties"]["sentences"]["minItems"])
        return FakeWorld()(messages, schema, params)

    pipe = pipeline_with_backends_own("spare_sentences", own, given, handler)
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert asked == [written]
    assert len(r.accepted) == 3
    spare = [c for s, c in r.rejected if c.reason == "spare"]
    composed = written - sum(1 for s, c in r.rejected if s == "composer")
    assert len(spare) == composed - 3 and all(s == "variety" for s, c in r.rejected if c.reason == "spare")
    assert all("has its 3 rows" in c.detail for c in spare)


@pytest.mark.parametrize(("own", "given", "asks"), [(True, None, 2), (False, None, 1), (True, False, 1), (False, True, 2)])
def test_a_seed_the_gates_leave_short_is_topped_up_by_a_fresh_ask(own: bool, given: bool | None, asks: int) -> None:
    """``top_up`` (unset: the backend's own, the local model's on): a seed left short of ``num_augmented`` after
    the gates is asked once more with the composer's own request (no conversation about the rejected sentences) for
    the missing and spare sentences, sampled anew (its own salt); what it writes must not repeat the kept rows, and
    the gates after it read the new ones. A seed with its rows is not asked again."""
    requests: list[tuple[list, dict]] = []
    good = ["Inherited PTEN variants raise the risk of glioma in adults .", "Carriers of MLH1 variants developed gout early ."]
    ents = ["glioma", "gout"]
    bad = {"text": "Germline mutations in BRCA1 cause breast cancer .", "entities": [{"text": "breast cancer", "type": "Disease"}]}

    def handler(messages, schema, params):
        if stage_of(list(messages)) in ("composer", "composer_top_up"):
            requests.append((list(messages), dict(params)))
            n = schema["properties"]["sentences"]["minItems"]
            if len(requests) == 1:  # the first answer: one good sentence, the rest reuse the seed's entity
                return {"sentences": [{"text": good[0], "entities": [{"text": ents[0], "type": "Disease"}]}] + [bad] * (n - 1)}
            return {"sentences": [{"text": t, "entities": [{"text": e, "type": "Disease"}]}  # a new one, a copy
                                  for t, e in zip(good[1::-1], ents[1::-1])][:n]}
        return FakeWorld()(messages, schema, params)

    llm = ScriptedLLM(handler)
    llm.top_up, llm.max_repairs = own, 0
    pipe = Pipeline(AugmentConfig(method="gda", top_up=given), llm, Checker(("Disease",)))
    assert pipe.cfg.top_up == int(own if given is None else given)  # on or off, as before it counted: once or never
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert len(requests) == asks
    if asks == 1:
        assert len(r.accepted) == 1
        return
    (first, p1), (second, p2) = requests
    assert len(second) == len(first) == 2 and second[0] == first[0]  # the composer's request, no conversation
    assert first[1]["content"].endswith("Write 3 new sentences.") and second[1]["content"].endswith("Write 2 new sentences.")
    assert p1.get("seed") != p2.get("seed")  # sampled anew
    assert [" ".join(c.tokens) for c in r.accepted] == [good[0], good[1]]  # the top-up's new row kept
    assert [c for s, c in r.rejected if s == "composer_top_up" and "Inherited" in str(c.raw)]  # its copy rejected
    assert all(c.verified for c in r.accepted)  # the verifier after it in the plan read the new row
    assert r.accounting.stage_calls["composer_top_up"] == 1  # counted under its own name
    requests.clear()  # a seed whose first answer gives it its rows is not asked again
    full = ScriptedLLM(lambda m, s, p: {"sentences": [{"text": t, "entities": [{"text": e, "type": "Disease"}]}
                                                       for t, e in zip(good + [good[0].replace("glioma", "lupus")],
                                                                       ents + ["lupus"])]}
                       if stage_of(list(m)) in ("composer", "composer_top_up") and not requests.append((list(m), dict(p)))
                       else FakeWorld()(m, s, p))
    full.top_up = True
    [r] = asyncio.run(Pipeline(AugmentConfig(method="gda"), full, Checker(("Disease",))).run(SEEDS[:1]))
    assert len(requests) == 1 and len(r.accepted) == 3


@pytest.mark.parametrize("asks", [2, 4])
def test_a_seed_still_short_is_asked_again_with_another_example_item(asks: int) -> None:
    """``top_up=2`` (the local model's own): a seed the first fresh ask leaves short is asked once more, sampled
    anew and showing the next in-domain seed as its example item; the first ask is as it was before it counted (its
    sampling seed the stage's own), no ask is counted as a judge round, and none is made once the seed has its
    rows (``top_up=4`` too)."""
    requests: list[tuple[list, dict]] = []

    def handler(messages, schema, params):
        if stage_of(list(messages)) in ("composer", "composer_top_up"):
            requests.append((list(messages), dict(params)))
            n = schema["properties"]["sentences"]["minItems"]
            good = {1: "Carriers of MLH1 variants developed gout early .", 2: "Lupus was diagnosed in three siblings ."}
            ents = {1: "gout", 2: "Lupus"}
            if len(requests) in good:  # the first top-up's one good sentence, the second's; the rest no entity
                k = len(requests)
                return {"sentences": [{"text": good[k], "entities": [{"text": ents[k], "type": "Disease"}]}]
                        + [{"text": "Nothing to see here .", "entities": []}] * (n - 1)}
            return {"sentences": [{"text": "Inherited PTEN variants raise the risk of glioma in adults .",
                                   "entities": [{"text": "glioma", "type": "Disease"}]}]
                    + [{"text": "Nothing here either .", "entities": []}] * (n - 1)}
        return FakeWorld()(messages, schema, params)

    llm = ScriptedLLM(handler)
    llm.top_up, llm.max_repairs = asks, 0
    pipe = Pipeline(AugmentConfig(method="gda"), llm, Checker(("Disease",)))
    [r, *_] = asyncio.run(pipe.run(SEEDS[:1], examples=SEEDS))
    assert len(requests) == 3 and len(r.accepted) == 3
    (first, p1), (second, p2), (third, p3) = requests
    assert len({p1.get("seed"), p2.get("seed"), p3.get("seed")}) == 3  # each sampled anew
    shown = [m[1]["content"].split("Example item from this dataset:")[1].split("Task:")[0] for m in (first, second, third)]
    assert shown[0] == shown[1] and "cystic fibrosis" in shown[1]  # the composer's example, then the first top-up's
    assert "tumours of the colon" in shown[2]  # the second top-up shows the next seed as its example
    assert third[1]["content"].endswith("Write 1 new sentences.")
    assert r.accounting.stage_calls["composer_top_up"] == 2
    assert p2["seed"] == derive_seed(0, SEEDS[0].key, "composer_top_up", "")  # the first ask's seed, as before
    assert [k for k in r.accounting.stage_usage if k.startswith("composer_top_up")] == ["composer_top_up"]


@pytest.mark.parametrize(("own", "given"), [(True, None), (False, None), (True, False), (False, True)])
def test_an_unset_check_mentions_is_the_backends_own(own: bool, given: bool | None) -> None:
    """``check_mentions`` unset takes the backend's (the local model's: on); a value given wins either way, and the
    completeness stage runs exactly where the resolved value is on."""
    stages: list[str] = []

    def handler(messages, schema, params):
        stages.append(stage_of(list(messages)))
        return FakeWorld()(messages, schema, params)

    pipe = pipeline_with_backends_own("check_mentions", own, given, handler)
    assert (pipe.stages().step("mention_check") is not None) is pipe.cfg.check_mentions


def test_an_answer_cut_at_max_tokens_keeps_its_complete_sentences() -> None:
    """A small model at a low ``max_tokens`` stops inside the last sentence (the JSON unterminated). Its complete
    sentences are kept without a re-ask; the cut one is a rejection (``cut_off``) and goes to the repair."""
    world, asked = FakeWorld(), []

    def handler(messages, schema, params):
        stage = stage_of(list(messages))
        asked.append((stage, len(messages)))
        answer = world(messages, schema, params)
        if stage in ("seed_generation", "composer") and len(messages) == 2:
            text = json.dumps(answer)
            return text[: text.index("}, {") + 4] + '"text": "Inherited PTEN var'  # one whole item, then the cut
        return answer

    pipe = Pipeline(AugmentConfig(method="gda"), ScriptedLLM(handler), Checker(("Disease",)))
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert not r.failure and len(r.accepted) == 3
    cut = [(s, c) for s, c in r.rejected if c.reason == "cut_off"]
    assert [s for s, _ in cut] == ["seed_generation", "composer"]
    assert cut[0][1].raw == '{"text": "Inherited PTEN var' and "max_tokens is 768" in cut[0][1].detail
    assert [s for s, n in asked].count("seed_generation") == 1  # no re-ask for valid JSON
    assert ("repair", 4) in asked  # the composer's repair asked for the missing two


def test_an_answer_ended_copying_itself_keeps_its_sentences_and_names_the_copy() -> None:
    """The local engine ends an answer that writes one of its sentences again word for word (``SelfCopy``): the
    complete sentences are kept without a re-ask, and the cut one is rejected as a ``duplicate``, not as a cut at
    ``max_tokens``."""
    world, asked = FakeWorld(), []

    def handler(messages, schema, params):
        stage = stage_of(list(messages))
        asked.append(stage)
        answer = world(messages, schema, params)
        if stage == "seed_generation":
            first = answer["sentences"][0]
            words = first["text"].split()
            assert len(words) >= 8
            return json.dumps({"sentences": [first]})[:-2] + ', {"text": "' + " ".join(words[:8])
        return answer

    pipe = Pipeline(AugmentConfig(method="gda"), ScriptedLLM(handler), Checker(("Disease",)))
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert not r.failure and asked.count("seed_generation") == 1 and r.accepted
    [c] = [c for s, c in r.rejected if s == "seed_generation"]
    assert c.reason == "duplicate" and "copies an earlier one" in c.detail and "max_tokens" not in c.detail
    # a copy is 8 words of a sentence's text in order, or its opening words; a shared phrase or an entity list is not
    first = {"text": "Mutations of the BRCA1 gene raise the risk of breast cancer ."}
    assert copies_item('{"text": "We saw that mutations of the BRCA1 gene raise the risk', [first])
    assert copies_item('{"text": "Mutations of the BRCA1', [first])
    assert not copies_item('{"text": "We saw that mutations of the BRCA1', [first])
    assert not copies_item('{"text": "Mutations of the BRCA1 gene can raise the risk of', [first])
    listed = {"text": "BRCA1 and TP53 variants cause breast cancer .", "entities": [
        {"text": "BRCA1", "type": "Gene"}, {"text": "TP53", "type": "Gene"}, {"text": "breast cancer", "type": "Disease"}]}
    assert not copies_item('{"text": "Carriers of TP53 or BRCA1 develop breast cancer .", "entities": [{"text": "BRCA1", '
                           '"type": "Gene"}, {"text": "TP53", "type": "Gene"}, {"text": "breast cancer", "type": "Dis',
                           [listed])


def test_an_answer_ended_in_a_loop_inside_its_first_sentence_is_not_asked_again() -> None:
    """The local engine ends an answer caught in a loop ("[Disease](Disease), [Disease](Disease), ..."): with no
    complete sentence, the seed generation keeps none and asks nothing again (a looping model mostly loops again);
    the cut sentence is a ``looping`` rejection."""
    world, asked = FakeWorld(), []
    loop = '{"sentences": [{"text": "G6PD deficiency is linked to ' + "[Disease](Disease), " * 4

    def handler(messages, schema, params):
        stage = stage_of(list(messages))
        asked.append(stage)
        return loop if stage == "seed_generation" else world(messages, schema, params)

    pipe = Pipeline(AugmentConfig(method="gda"), ScriptedLLM(handler), Checker(("Disease",)))
    [r] = asyncio.run(pipe.run(SEEDS[:1]))
    assert not r.failure and asked.count("seed_generation") == 1 and r.accepted
    [c] = [c for s, c in r.rejected if s == "seed_generation"]
    assert c.reason == "looping" and c.raw.startswith('{"text": "G6PD') and "stopped inside it" in c.detail
    # an answer cut at max_tokens inside its first sentence, without a loop, is asked again as before
    assert complete_items('{"sentences": [{"text": "Gout is') == ([], '{"text": "Gout is')
    assert not text_loops('{"text": "Gout is') and text_loops(loop)


def test_cache_makes_second_run_free(tmp_path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    first = run(FakeWorld(), cache=cache)
    world = FakeWorld()
    second = run(world, cache=cache)
    assert world.stages == []
    assert [len(r.accepted) for r in second] == [len(r.accepted) for r in first]
    assert all(r.accounting.cached_calls == r.accounting.calls for r in second)


def test_judgement_parse_clamps_and_requires_every_criterion() -> None:
    data = FakeWorld.verdict(100, GR_RUBRIC)
    data["context_abstraction"]["score"] = 999
    assert parse_verdict(data, GR_RUBRIC).criteria["context_abstraction"] == 30
    del data["keyword_detection"]
    with pytest.raises(Exception, match="keyword_detection"):
        parse_verdict(data, GR_RUBRIC)


def test_schemas_constrain_types_and_scores() -> None:
    s = sentences_schema(["Disease", "Gene"], 3)
    ent = s["properties"]["sentences"]["items"]["properties"]["entities"]["items"]
    assert ent["properties"]["type"]["enum"] == ["Disease", "Gene"]
    assert s["properties"]["sentences"]["minItems"] == s["properties"]["sentences"]["maxItems"] == 3
    assert judge_schema(GR_RUBRIC)["properties"]["keyword_detection"]["properties"]["score"]["enum"] == [0, 5, 10, 15]
    assert guidance_schema(["Disease"])["properties"]["entity_roles"]["items"]["properties"]["type"]["enum"] == ["Disease"]
    assert sum(GR_RUBRIC.values()) == 100


def test_seeds_without_entities_are_skipped_by_default() -> None:
    empty = Seed("e", ("No", "entity", "here", "at", "all", "."), ("O",) * 6)
    world = FakeWorld()
    [r] = run(world, seeds=[empty])
    assert r.skipped and not r.accepted and world.stages == []
    [r] = run(FakeWorld(), seeds=[empty], skip_entityless=False, method="naive")
    assert not r.skipped


def test_composer_sees_substituted_entities_and_dataset_hints() -> None:
    """The composer's guide shows a same-type entity from the inventory wherever the guidance wrote the seed's own
    (in any casing), and further hints that include neither; entity_hints=0 restores the paper's composer (the
    original entity texts listed as never to reuse)."""
    seen: dict[str, str] = {}
    ent = SEEDS[0].entities[0]["text"]

    def handler(messages, schema, params):
        stage = stage_of(list(messages))
        if stage == "guidance":
            return {"context": f"genetics of {ent.upper()}", "structure": f"a variant causes {ent}",
                    "entity_roles": [{"text": ent, "type": "Disease", "role": "outcome"}], "keywords": [ent]}
        if stage == "composer":
            seen["composer"] = messages[1]["content"]
        return FakeWorld()(messages, schema, params)

    mentions = {"Disease": ["asthma", "gout", ent, "lupus", "glioma"]}

    def compose(hints: int) -> str:
        asyncio.run(Pipeline(AugmentConfig(method="gda", entity_hints=hints), ScriptedLLM(handler),
                             Checker(("Disease",)), mentions=mentions).run(SEEDS[:1]))
        return seen["composer"]

    text = compose(2)
    guide = json.loads(text.split("\n\n")[0].removeprefix("Guide:\n"))
    sub = guide["entity_roles"][0]["text"]
    assert ent.lower() not in json.dumps(guide).lower() and sub in mentions["Disease"]
    assert guide["keywords"] == [sub] and guide["structure"] == f"a variant causes {sub}"
    assert guide["context"] == f"genetics of {sub}"  # matched case-insensitively
    hints = json.loads(text.split("(vary the entities across sentences):\n")[1].split("\n")[0])
    assert len(hints["Disease"]) == 2 and not {ent, sub} & set(hints["Disease"])
    assert compose(2) == text  # fixed per seed

    plain = compose(0)
    assert ent in plain and "original entity texts (never reuse)" in plain.lower() and "vary the entities" not in plain
    mentions.clear()  # nothing to draw from (e.g. one typed-in sentence): the never-reuse instruction instead
    assert "original entity texts (never reuse)" in compose(2).lower()


def test_the_composer_draws_no_entity_the_run_has_used_up() -> None:
    """A new entity the run's ledger holds ``max_entity_repeats`` times would get its row rejected by the variety
    pass (``repeated_entity``): the composer's substitutes and hints leave it out, and use it again only where the
    cap is off."""
    from hf_rgda.checking.sentence import Sentence
    from hf_rgda.checking.variety import Ledger

    seen: list[str] = []

    def handler(messages, schema, params):
        if stage_of(list(messages)) == "composer":
            seen.append(messages[1]["content"])
        return FakeWorld()(messages, schema, params)

    mentions = {"Disease": ["asthma", "gout", "lupus", "glioma"]}
    other = Seed("other", ("Gout", "flares", "."), ("B-Disease", "O", "O"))

    def drawn(cap: int) -> set[str]:
        ledger = Ledger(cap)
        for _ in range(2):  # another seed's rows used "asthma" and "glioma" twice each
            for text in ("asthma", "glioma"):
                ledger.add(other.key, Sentence(["Some", text, "here", "."], ["O", "B-Disease", "O", "O"], other, None))
        seen.clear()
        asyncio.run(Pipeline(AugmentConfig(method="gda", entity_hints=3), ScriptedLLM(handler), Checker(("Disease",)),
                             mentions=mentions, ledger=ledger).run(SEEDS[:1]))
        return {m for m in mentions["Disease"] if m in seen[0]}

    assert drawn(2) == {"gout", "lupus"}  # used up at a cap of 2
    assert drawn(3) == drawn(0) == set(mentions["Disease"])  # under the cap, or none: every one may be drawn


def test_the_composer_view_skips_the_entity_pattern_only_where_it_cannot_match() -> None:
    """``_may_name`` rules a text out only when no seed entity's first word occurs in it in any case (ASCII text):
    the pattern is then not compiled; where it says no, the pattern would not have matched either."""
    from hf_rgda.stages.composer import _entity_pattern, _may_name

    seed = Seed("s", ("Mutations", "cause", "lung", "cancer", "and", "gout", "."),
                ("O", "O", "B-Disease", "I-Disease", "O", "B-Disease", "O"))
    pattern, firsts = _entity_pattern(seed), {"lung", "gout"}
    for text in ["oncology and asthma", "a lungfish", "LUNG  CANCER", "Gouty", "cause of GOUT", "lung", "gout\u00e9"]:
        if not _may_name(text, firsts):
            assert not pattern.search(text), text
    assert not _may_name("oncology and asthma", firsts)
    assert _may_name("cause of GOUT", firsts) and _may_name("LUNG  CANCER", firsts)
    assert _may_name("an \u00e9ruption", firsts)  # not ASCII: the pattern decides


def test_entity_mentions_most_frequent_first() -> None:
    from hf_rgda.checking import entity_mentions

    rows = [["a", "gout", "b"], ["x", "gout"], ["lung", "cancer", "y"]]
    tags = [["O", "B-Disease", "O"], ["O", "B-Disease"], ["B-Disease", "I-Disease", "O"]]
    assert entity_mentions(rows, tags) == {"Disease": ["gout", "lung cancer"]}


def test_progress_bars_name_each_stage(capsys: pytest.CaptureFixture[str]) -> None:
    pipe = Pipeline(AugmentConfig(), ScriptedLLM(FakeWorld(gr_scores=[10, 95])), Checker(("Disease",)), progress=True)
    asyncio.run(pipe.run(SEEDS[:2]))
    err = capsys.readouterr().err
    for label in ("seed generation", "guidance", "GR judge, round 1", "GR refine, round 1", "GR judge, round 2",
                  "compose", "AC judge, round 1"):
        assert label + ":" in err, label


def test_a_run_stopping_error_cancels_the_other_seeds_calls() -> None:
    """An AuthenticationError on one seed's call stops the run at once: the other seeds' calls in flight are
    cancelled (here they would never return) and the error propagates."""
    from hf_rgda import AuthenticationError

    class OneRejectedRestHang(ScriptedLLM):
        async def complete(self, messages, *, schema, params):
            if "cystic fibrosis" in messages[-1]["content"]:
                raise AuthenticationError("the key was rejected")
            await asyncio.sleep(3600)

    pipe = Pipeline(AugmentConfig(), OneRejectedRestHang([]), Checker(("Disease",)))
    with pytest.raises(AuthenticationError, match="rejected"):
        asyncio.run(asyncio.wait_for(pipe.run(SEEDS), 30))


def test_entity_pool_draws_like_the_plain_filters() -> None:
    """The pool squeezes each mention once and reads only as far as a draw needs; what it returns is what filtering
    the whole inventory returns (case and spacing variants of an excluded text included)."""
    from hf_rgda.stages.base import squeeze
    from hf_rgda.stages.composer import EntityPool

    names = [f"disease {i}" for i in range(40)] + ["Gout", "gout", "g out", "lupus", "asthma"] * 3
    pool = EntityPool({"Disease": names})
    for n in (1, 5, 39, 60, 500):
        for unless, taken in [({"gout"}, {"lupus"}), ({"disease0", "disease1"}, set()), (set(), {"asthma"})]:
            want = [m for m in names if squeeze(m) not in unless and m not in taken][:n]
            assert pool.first("Disease", n, unless=unless, taken=taken) == want
            assert pool.head("Disease", n, unless=unless) == [m for m in names[:n] if squeeze(m) not in unless]
    assert pool.first("Gene", 5, unless=set(), taken=set()) == [] and pool.head("Gene", 5, unless=set()) == []


def test_a_stage_ruled_out_by_its_condition_is_passed_over_group_stages_too() -> None:
    """One place asks a stage's ``when`` (``Stages.step``), for a group stage (a judge loop) as for any other (the
    pipeline asked a group stage's itself); test_methods_select_stages runs the plans it gives."""
    from hf_rgda.stages import STAGES

    stages = Pipeline(AugmentConfig(method="rgda-no-gr", verify_entities=False), ScriptedLLM(FakeWorld()),
                      Checker(("Disease",))).stages()
    assert STAGES["guidance_judge"].group and stages.step("guidance_judge") is None
    assert STAGES["composition_judge"].group and stages.step("composition_judge") is not None
    assert stages.step("entity_verify") is None and stages.step("composer") is not None
