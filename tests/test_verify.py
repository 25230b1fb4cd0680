"""Entity verification: the cached option-probability call of the call seam, the question, the decisions from
scripted probabilities, the stage in the pipeline, its trace and summary."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset

from hf_rgda import AugmentConfig, ConfigError, RGDAAugmenter, RunSummary, ScriptedLLM
from hf_rgda.cache import ResponseCache
from hf_rgda.calls import Caller, derive_seed
from hf_rgda.checking import Checker, SplitStats
from hf_rgda.pipeline import Pipeline
from hf_rgda.records import Candidate, EntityVerdict, Seed, SeedResult, SeedTrace
from hf_rgda.stages.categories import BOUNDARY, FALLBACK, GROUPS, ORDINARY, question
from hf_rgda.tags import parse_inline

from .conftest import LABELS, SEED_ROWS, FakeWorld

SEED = Seed("s0", ("Gout", "flares", "are", "painful", "."), ("B-Disease", "O", "O", "O", "O"))
QUESTION = [{"role": "system", "content": "pick a letter"}, {"role": "user", "content": "Gout is: A) B) C)"}]


def test_choose_is_cached_counted_and_seeded(tmp_path: Path) -> None:
    """Same derived seed and accounting as any call; through the response cache, so a rerun pays nothing."""
    cfg = AugmentConfig(seed=7)
    llm = ScriptedLLM(lambda m, s, p: {"A": 0.8, "B": 0.2})
    cache = ResponseCache(tmp_path / "r.sqlite3")

    def ask(rnd: int | None) -> tuple[SeedResult, float]:
        r = SeedResult(SEED)
        got = asyncio.run(Caller(cfg, llm, cache).choose(r, "entity_verify", QUESTION, ("A", "B", "C"), rnd=rnd))
        return r, got.probs["A"]

    first, p = ask(2)
    assert round(p, 3) == 0.8 and len(llm.calls) == 1
    assert llm.calls[0][2] == {"seed": derive_seed(7, "s0", "entity_verify", "")}
    acc = first.accounting
    assert (acc.calls, acc.cached_calls, acc.stage_calls) == (1, 0, {"entity_verify": 1})
    assert acc.stage_usage["entity_verify/round2"]["calls"] == 1 and acc.prompt_tokens > 0
    again, p_again = ask(2)
    assert len(llm.calls) == 1 and p_again == p  # served from the cache
    assert (again.accounting.calls, again.accounting.cached_calls, again.accounting.prompt_tokens) == (1, 1, 0)


def test_one_call_asked_twice_at_once_is_paid_once(tmp_path: Path) -> None:
    """Two rows asking one question at the same time (the same key, both before the cache holds it): the second
    waits for the first and is served from the cache, so the backend is called once and a resumed run's cache holds
    every call it paid for."""

    class Slow(ScriptedLLM):
        async def option_probs(self, messages: Any, options: Any, *, params: Any) -> Any:
            await asyncio.sleep(0.05)  # in flight long enough for the second ask to arrive
            return await super().option_probs(messages, options, params=params)

    llm = Slow(lambda m, s, p: {"A": 0.8, "B": 0.2})
    caller, rs = Caller(AugmentConfig(), llm, ResponseCache(tmp_path / "r.sqlite3")), [SeedResult(SEED) for _ in "ab"]

    async def both() -> list[Any]:
        return await asyncio.gather(*(caller.choose(r, "entity_verify", QUESTION, ("A", "B")) for r in rs))

    first, second = asyncio.run(both())
    assert len(llm.calls) == 1 and first.probs == second.probs
    assert (rs[0].accounting.cached_calls, rs[1].accounting.cached_calls) == (0, 1)
    other = Caller(AugmentConfig(), Slow(lambda m, s, p: {"A": 0.8, "B": 0.2}))  # no cache: nothing is shared

    async def uncached() -> list[Any]:
        return await asyncio.gather(*(other.choose(r, "entity_verify", QUESTION, ("A", "B")) for r in rs))

    asyncio.run(uncached())
    assert len(other.llm.calls) == 2


def test_choose_without_cache_asks_every_time() -> None:
    llm = ScriptedLLM(lambda m, s, p: {"B": 1.0})
    caller, r = Caller(AugmentConfig(), llm), SeedResult(SEED)
    for _ in range(2):
        got = asyncio.run(caller.choose(r, "entity_verify", QUESTION, ("A", "B")))
        assert got.probs["B"] == 1.0 and not got.cached
    assert len(llm.calls) == 2 and r.accounting.calls == 2 and r.accounting.llm_seconds > 0


# ---------------------------------------------------------------- the question
def test_single_type_question_sets_the_type_against_its_domain_contrasts() -> None:
    q = question("BRCA1", "Disease", ["Disease"])
    assert q.text() == "\n".join([
        'In this sentence, "BRCA1" is:', "A) the name of a disease, disorder or syndrome",
        "B) the name of a gene or protein", "C) a chemical, drug or molecule", "D) a body part, cell or tissue",
        f"E) {BOUNDARY}", f"F) {ORDINARY}"])
    assert [o.kind for o in q.options] == ["asked", "confuser", "confuser", "confuser", "boundary", "ordinary"]


def test_multi_type_question_uses_the_other_types_and_descriptions() -> None:
    q = question("Acme Corp", "ORG", ["LOC", "ORG", "PER"], descriptions={"PER": "a person's name"})
    assert [o.text for o in q.options] == ["the name of an organization, such as a company or an institution",
                                           "the name of a place", "a person's name", GROUPS[1][3].text, BOUNDARY,
                                           ORDINARY]  # the news group's category the dataset lacks: MISC
    assert [o.kind for o in q.options] == ["asked", "type", "type", "confuser", "boundary", "ordinary"]
    # a type no group knows is described by its name; a dataset type covers the group's category it stands for
    q = question("aspirin", "Chemical", ["Chemical", "Disease", "CellLine"])
    assert [o.text for o in q.options][:4] == ["a chemical, drug or molecule",
                                               "the name of a disease, disorder or syndrome",
                                               "a Cell Line (an entity type of this dataset)",
                                               "the name of a gene or protein"]


def test_user_confusers_replace_the_defaults_but_never_the_ordinary_option() -> None:
    q = question("lupus", "Disease", ["Disease"], confusers=["a symptom"])
    assert [o.text for o in q.options] == ["the name of a disease, disorder or syndrome", "a symptom", BOUNDARY,
                                           ORDINARY]
    assert [o.text for o in question("x", "Widget", ["Widget"], confusers=[]).options][1:] == [BOUNDARY, ORDINARY]


def test_a_type_no_group_knows_gets_the_fallback_contrasts_alone() -> None:
    assert [o.text for o in question("x", "Widget", ["Widget"]).options][1:3] == list(FALLBACK)
    assert [o.kind for o in question("x", "Widget", ["Widget", "Gadget"]).options] == [
        "asked", "type", "boundary", "ordinary"]


def test_too_many_options_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="at most 26"):
        question("x", "T0", [f"T{i}" for i in range(30)])


# ---------------------------------------------------------------- the decisions
def scripted(verdicts: dict[str, dict[str, float]]) -> ScriptedLLM:
    """A backend answering the verifier's question about entity X with ``verdicts[X]`` (letters -> probability)."""

    def handler(messages: Any, schema: Any, params: Any) -> Any:
        entity = re.search(r'In this sentence, "(.+)" is:', messages[-1]["content"]).group(1)
        return verdicts[entity]

    return ScriptedLLM(handler)


def verify(rows: list[str], verdicts: dict[str, dict[str, float]], *, types: tuple[str, ...] = ("Disease",),
           stats: SplitStats | None = None, **cfg: Any) -> tuple[SeedResult, ScriptedLLM]:
    """The verifier stage of a guided run over candidate rows written inline (``"[gout](Disease) hurts ."``), at a
    threshold of 0.5 unless told otherwise (the decisions below are written for it), absolute unless
    ``verify_relative`` is given."""
    cfg.setdefault("verify_threshold", 0.5)
    cfg.setdefault("verify_relative", 0.0)
    llm = scripted(verdicts)
    pipe = Pipeline(AugmentConfig(**cfg), llm, Checker(types, stats or SplitStats(), salvage=cfg.get("salvage", True)))
    r = SeedResult(Seed("s", *map(tuple, parse_inline("Germline mutations in BRCA1 cause [breast cancer](Disease) ."))))
    r.accepted = [Candidate(raw=row, tokens=t, tags=g) for row in rows for t, g in [parse_inline(row)]]
    asyncio.run(pipe.stages()["entity_verify"](r))
    return r, llm


TWO = "Variants of TP53 raise the risk of [glioma](Disease) and of [glutamate](Disease) in adults ."
SURE, ORDINARY_WORD = {"A": 0.9, "F": 0.1}, {"A": 0.2, "F": 0.8}


def test_a_verified_entity_stays_and_every_verdict_is_recorded() -> None:
    r, llm = verify([TWO], {"glioma": SURE, "glutamate": {"A": 0.5, "F": 0.5}}, verify_threshold=0.5)
    assert len(llm.calls) == 2 and len(r.accepted) == 1 and r.accepted[0].verified and not r.rejected
    assert r.entity_verdicts == [EntityVerdict("glioma", "Disease", 0.9, "verified", ORDINARY),
                                 EntityVerdict("glutamate", "Disease", 0.5, "verified", ORDINARY)]


def test_below_the_threshold_an_ordinary_word_is_untagged_and_the_row_kept() -> None:
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": ORDINARY_WORD}, verify_threshold=0.5)
    (c,) = r.accepted
    assert c.tags.count("B-Disease") == 1 and c.tags[c.tokens.index("glutamate")] == "O"
    assert c.salvaged == [("unverified_entity: untagged 'glutamate' ('glutamate' as Disease: P = 0.20 < 0.5; most "
                           f"likely: {ORDINARY})")]
    assert [v.decision for v in r.entity_verdicts] == ["verified", "untagged"]


@pytest.mark.parametrize(("seed_p", "decision"), [(0.9, "untagged"), (0.2, "verified"), (0.5, "untagged")])
def test_the_threshold_is_relative_to_the_seeds_own_entities(seed_p: float, decision: str) -> None:
    """t = min(verify_threshold, verify_relative x the mean P of the seed's entities): 0.25, 0.1, 0.25 here, so
    glutamate's 0.2 stays where the model gives the seed's own Disease 0.2 (a model that gives this dataset's correct
    entities low probabilities does not lose them all)."""
    verdicts = {"glioma": SURE, "glutamate": {"A": 0.2, "F": 0.8}, "breast cancer": {"A": seed_p, "F": 1 - seed_p}}
    r, llm = verify([TWO], verdicts, verify_threshold=0.25, verify_relative=0.5)
    asked = [re.search(r'"(.+)" is:', m[-1]["content"]).group(1) for m, _, _ in llm.calls]
    assert sorted(asked) == ["breast cancer", "glioma", "glutamate"]  # the seed's own entity once
    assert r.entity_verdicts[1].decision == decision


def test_the_seeds_reference_is_asked_only_when_a_decision_needs_it() -> None:
    """The seed's threshold is at most verify_threshold: where every entity scores at least that, each is verified
    whatever the seed's reference would be, so its question is not asked; one entity below, and it is asked (once per
    seed, however many rows follow)."""
    verdicts = {"glioma": SURE, "glutamate": {"A": 0.3, "F": 0.7}, "breast cancer": {"A": 0.9, "F": 0.1}}
    r, llm = verify([TWO], verdicts, verify_threshold=0.25, verify_relative=0.5)
    asked = [re.search(r'"(.+)" is:', m[-1]["content"]).group(1) for m, _, _ in llm.calls]
    assert sorted(asked) == ["glioma", "glutamate"] and [v.decision for v in r.entity_verdicts] == ["verified"] * 2
    verdicts["glutamate"] = {"A": 0.2, "F": 0.8}  # below 0.25: the reference is asked (t = min(0.25, 0.5 x 0.9))
    r, llm = verify([TWO, TWO.replace("adults", "children")], verdicts, verify_threshold=0.25, verify_relative=0.5)
    asked = [re.search(r'"(.+)" is:', m[-1]["content"]).group(1) for m, _, _ in llm.calls]
    assert asked.count("breast cancer") == 1 and r.entity_verdicts[1].decision == "untagged"


def test_just_below_the_threshold_is_below() -> None:
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": {"A": 0.4999, "F": 0.5001}}, verify_threshold=0.5)
    assert r.entity_verdicts[1].decision == "untagged"


def test_an_untagged_row_must_pass_the_checker_again() -> None:
    r, _ = verify(["Mice lacking the protein developed [glutamate](Disease) within weeks ."], {"glutamate": ORDINARY_WORD})
    assert not r.accepted and [(s, c.reason) for s, c in r.rejected] == [("entity_verify", "no_entity")]
    # strictly: a text the split always tags is not tagged back, the row is rejected instead (with the lexicon's
    # entities asked about: verify_known off)
    stats = SplitStats(lexicon={"glutamate": "Disease"})
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": ORDINARY_WORD}, stats=stats, verify_known=False)
    assert [(s, c.reason) for s, c in r.rejected] == [("entity_verify", "known_mention")]


def test_an_entity_the_split_tags_consistently_is_kept_without_a_question() -> None:
    """verify_known (the default): the lexicon's entity of the same type is known, asked nothing and kept, whatever
    the model would have said; the lexicon's text under another type, and every other entity, are asked."""
    stats = SplitStats(lexicon={"glutamate": "Disease"})
    r, llm = verify([TWO], {"glioma": SURE, "glutamate": ORDINARY_WORD}, stats=stats)
    assert len(llm.calls) == 1 and len(r.accepted) == 1 and not r.rejected
    assert r.accepted[0].tags == parse_inline(TWO)[1] and r.accepted[0].verified
    assert r.entity_verdicts == [EntityVerdict("glutamate", "Disease", None, "known"),
                                 EntityVerdict("glioma", "Disease", 0.9, "verified", ORDINARY)]
    r, llm = verify([TWO], {"glioma": SURE, "glutamate": ORDINARY_WORD}, stats=SplitStats(lexicon={"glutamate": "Gene"}),
                    types=("Disease", "Gene"))
    assert len(llm.calls) == 2 and [v.decision for v in r.entity_verdicts] == ["verified", "untagged"]
    # a row whose every entity is known asks nothing at all, not even the seed's reference question
    r, llm = verify([TWO], {}, stats=SplitStats(lexicon={"glutamate": "Disease", "glioma": "Disease"}),
                    verify_relative=0.5)
    assert llm.calls == [] and len(r.accepted) == 1 and {v.decision for v in r.entity_verdicts} == {"known"}
    summary = RunSummary()
    summary.add(SeedTrace.from_json(json.loads(json.dumps(SeedTrace.of(r, "rgda").to_json()))))  # as a run reads it
    ev = summary.to_dict()["entity_verification"]
    assert (ev["entities"], ev["known"], ev["verified"], ev["mean_probability"]) == (2, 2, 0, None)


def test_with_verify_split_the_splits_head_share_weighs_in() -> None:
    """verify_split: the threshold applies to sqrt(P x head share). A word the split ends Disease mentions with keeps
    a doubtful P; one it uses only outside entities loses a confident one. Off (the default), P alone decides."""
    stats = SplitStats(heads={"Disease": {"glioma": 19}}, context_words={"glutamate": 39})
    verdicts = {"glioma": {"A": 0.3, "F": 0.7}, "glutamate": {"A": 0.6, "F": 0.4}}
    r, _ = verify([TWO], verdicts, stats=stats, verify_threshold=0.5)
    assert [v.decision for v in r.entity_verdicts] == ["untagged", "verified"]
    r, _ = verify([TWO], verdicts, stats=stats, verify_threshold=0.5, verify_split=True)
    # glioma: sqrt(0.3 x 19.5 / 20) = 0.54; glutamate: sqrt(0.6 x 0.5 / 40) = 0.09
    assert [v.decision for v in r.entity_verdicts] == ["verified", "untagged"]
    assert [v.probability for v in r.entity_verdicts] == [0.3, 0.6]  # the verdict keeps the model's P
    (c,) = r.accepted
    detail = f"'glutamate' as Disease: P = 0.60, with the split 0.09 < 0.5; most likely: {ORDINARY}"
    assert c.salvaged == [f"unverified_entity: untagged 'glutamate' ({detail})"]
    # the seed's reference is read the same way: its "cancer" is a head the split never shows (share 1/2)
    verdicts["breast cancer"] = {"A": 0.5, "F": 0.5}
    r, llm = verify([TWO], verdicts, stats=stats, verify_threshold=0.9, verify_relative=0.5, verify_split=True)
    assert len(llm.calls) == 3  # t = min(0.9, 0.5 x sqrt(0.5 x 0.5)) = 0.25
    assert [v.decision for v in r.entity_verdicts] == ["verified", "untagged"]


@pytest.mark.parametrize("alternative", ["E", "B"])  # a cut or extended span; another type of the dataset
def test_a_span_or_a_type_error_rejects_the_row(alternative: str) -> None:
    types = ("Disease", "Gene")
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": {"A": 0.1, alternative: 0.9}}, types=types)
    assert not r.accepted and [v.decision for v in r.entity_verdicts] == ["verified", "rejected"]
    ((stage, c),) = r.rejected
    assert (stage, c.reason) == ("entity_verify", "unverified_entity")
    assert c.detail.startswith("'glutamate' as Disease: P = 0.10 < 0.5; most likely: ")


def test_the_rejection_names_the_entity_that_rejects_the_row() -> None:
    r, _ = verify([TWO], {"glioma": {"A": 0.3, "E": 0.7}, "glutamate": ORDINARY_WORD})
    assert [v.decision for v in r.entity_verdicts] == ["rejected", "rejected"]
    assert r.rejected[0][1].detail == f"'glioma' as Disease: P = 0.30 < 0.5; most likely: {BOUNDARY}"


def test_without_salvage_every_entity_below_the_threshold_rejects_its_row() -> None:
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": ORDINARY_WORD}, salvage=False)
    assert not r.accepted and r.rejected[0][1].reason == "unverified_entity"


def test_one_question_per_text_and_type_and_each_row_once() -> None:
    row = "Both [gout](Disease) and [gout](Disease) flares were linked to [lupus](Disease) in the cohort ."
    r, llm = verify([row], {"gout": ORDINARY_WORD, "lupus": SURE})
    assert len(llm.calls) == 2 and r.accepted[0].tags.count("B-Disease") == 1
    asyncio.run(Pipeline(AugmentConfig(), llm, Checker(("Disease",))).stages()["entity_verify"](r))
    assert len(llm.calls) == 2  # already verified: not asked again


# ---------------------------------------------------------------- in the pipeline
def test_verification_off_makes_no_call(world: FakeWorld) -> None:
    pipe = Pipeline(AugmentConfig(verify_entities=False), ScriptedLLM(world), Checker(("Disease",)))
    asyncio.run(pipe.run([SEED]))
    assert world.stages and "entity_verify" not in world.stages


def test_refined_sentences_are_verified_before_the_judge_sees_them() -> None:
    world = FakeWorld(ac_scores=[10, 95])
    asyncio.run(Pipeline(AugmentConfig(), ScriptedLLM(world), Checker(("Disease",))).run([SEED]))
    after = world.stages[world.stages.index("composition_judge"):]
    assert after == ["composition_judge", "composition_feedback", "composition_refine", "entity_verify", "entity_verify", "entity_verify",
                     "composition_judge"]


def test_naive_rows_are_verified(world: FakeWorld) -> None:
    asyncio.run(Pipeline(AugmentConfig(method="naive"), ScriptedLLM(world), Checker(("Disease",))).run([SEED]))
    # the 3 rows' entities; the seed's own is asked only when one of them is below verify_threshold
    assert world.stages == ["seed_generation"] + ["entity_verify"] * 3


def test_trace_and_summary_carry_the_verdicts(tmp_path: Path) -> None:
    ds = Dataset.from_dict(SEED_ROWS)
    llm = ScriptedLLM(FakeWorld(entity_prob=0.2))  # every entity below: "an ordinary word" -> untagged -> no_entity

    def run() -> tuple[Any, RGDAAugmenter]:  # the absolute threshold alone (relative to the seed's 0.2, all stay)
        aug = RGDAAugmenter(label_names=LABELS, llm=llm, cache=tmp_path / "r.sqlite3", method="gda",
                            verify_relative=0.0)
        return ds.map(aug, batched=True, load_from_cache_file=False), aug

    out, aug = run()
    d = aug.summary.to_dict()
    assert d["accepted"] == 0 and d["rejected_by_reason"] == {"no_entity": 9}
    assert d["entity_verification"] == {"entities": 9, "known": 0, "verified": 0, "untagged": 9, "rejected": 0,
                                        "unverified": 0, "rows_rejected": 9, "mean_probability": 0.2,
                                        "probability_histogram": {"0.2": 9}}
    assert "entity verification: 9 entities, 0 known to the split, 0 verified, 9 untagged" in aug.summary.format()
    trace = SeedTrace.read(out["rgda_trace"][0])
    assert trace is not None and trace.verification[0].decision == "untagged" and trace.verification[0].probability == 0.2
    assert RunSummary.from_traces(out["rgda_trace"]).to_dict()["entity_verification"] == d["entity_verification"]
    paid = len(llm.calls)
    _, again = run()  # a rerun: every call, the verifier's included, from the cache
    assert len(llm.calls) == paid and again.summary.to_dict()["entity_verification"] == d["entity_verification"]
    assert again.summary.accounting.cached_calls == again.summary.accounting.calls > 0


def test_a_backend_without_logprobs_verifies_by_sampling(world: FakeWorld) -> None:
    """The sampling fallback (Anthropic): each question costs ``samples`` (5) completions; the world answers 'A'."""
    pipe = Pipeline(AugmentConfig(method="naive"), ScriptedLLM(world, logprobs=False), Checker(("Disease",)))
    (r,) = asyncio.run(pipe.run([SEED]))
    assert world.stages == ["seed_generation"] + ["entity_verify"] * 15  # 3 rows, 5 samples each (all above: no reference)
    assert len(r.accepted) == 3 and {(v.probability, v.decision) for v in r.entity_verdicts} == {(1.0, "verified")}


# ---------------------------------------------------------------- an answer that names no option
class NoOption(FakeWorld):
    """A world whose answer to the entity verifier's question names no option: its next token is "The" (sampled:
    the answer "The")."""

    def entity_dist(self, messages: Any) -> dict[str, float]:
        return {"The": 0.9}


#: the fake of each backend: the local engine's scripted stand-in (its logprobs read as a top list), and each
#: provider's wire protocol (ProviderServer): OpenAI and Gemini read logprobs, Anthropic and the models without them
#: sample (5 answers a question)
BACKENDS = {"scripted": None, "openai": "gpt-4o-mini", "gemini": "gemini-2.0-flash", "anthropic": "claude-haiku-4-5",
            "openai-sampled": "gpt-5.5", "gemini-sampled": "gemini-3.8-flash"}


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_answer_that_names_no_option_verifies_nothing(backend: str) -> None:
    """Under verify_min_mass of the answer on the options: the entity is unverified and its row rejected
    (unanswered_entity), whatever the seed-relative threshold (the options' renormalised P is uniform, 1/6, and
    the seed's own entities answered alike would make it pass). At 2096b68 all 9 entities were "verified"."""
    from hf_rgda.testing.providers import ProviderServer

    ds = Dataset.from_dict(SEED_ROWS)
    provider = backend.split("-")[0]

    def run(llm: Any, **options: Any) -> dict[str, Any]:
        aug = RGDAAugmenter(llm, label_names=LABELS, method="gda", cache=False, keep_rejected=True,
                            llm_options=options)
        out = ds.map(aug, batched=True, load_from_cache_file=False)
        reasons = {r["rgda_reason"] for r in out if r["rgda_status"] == "rejected"}
        assert reasons == {"entity_verify/unanswered_entity"}, reasons
        trace = SeedTrace.read(out["rgda_trace"][0])
        assert trace is not None and {(v.decision, v.probability) for v in trace.verification} == {("unverified", None)}
        return aug.summary.to_dict()

    if backend == "scripted":
        d = run(ScriptedLLM(NoOption()))
    else:
        pytest.importorskip({"openai": "openai", "anthropic": "anthropic", "gemini": "google.genai"}[provider])
        from hf_rgda.llm.remote import RetryPolicy

        served = NoOption().serve()
        with ProviderServer(served["responder"], logprobs=served["logprobs"]) as srv:
            d = run(f"{provider}:{BACKENDS[backend]}", base_url=srv.url(provider), api_key="k-test",
                    retry=RetryPolicy(max_attempts=2, base_delay=0.05, max_delay=1))
    assert d["accepted"] == 0 and d["rejected_by_reason"] == {"unanswered_entity": 9}
    ev = d["entity_verification"]
    assert (ev["entities"], ev["verified"], ev["unverified"], ev["rows_rejected"], ev["mean_probability"]) == (
        9, 0, 9, 9, None)


def test_an_unanswered_entity_rejects_its_row_and_the_detail_says_why() -> None:
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": {"The": 0.7, "A": 0.1}})
    assert not r.accepted and [v.decision for v in r.entity_verdicts] == ["verified", "unverified"]
    ((stage, c),) = r.rejected
    assert (stage, c.reason) == ("entity_verify", "unanswered_entity")
    assert c.detail == "'glutamate' as Disease: the answer named no option (0.10 of it on the options < verify_min_mass 0.5)"
    # at least verify_min_mass on the options is an answer, read as before (renormalised over the options)
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": {"A": 0.45, "F": 0.1, "The": 0.45}})
    assert [v.decision for v in r.entity_verdicts] == ["verified", "verified"] and len(r.accepted) == 1
    r, _ = verify([TWO], {"glioma": SURE, "glutamate": {"A": 0.45, "F": 0.1, "The": 0.45}}, verify_min_mass=0.6)
    assert [v.decision for v in r.entity_verdicts] == ["verified", "unverified"] and not r.accepted


def test_an_unanswered_seed_entity_is_left_out_of_the_seeds_reference() -> None:
    """The seed's own entity answered with no option says nothing of how the model rates this dataset: without a
    reference the threshold is verify_threshold (0.25), so glutamate's 0.2 is below it (with the uniform 1/6 as the
    reference it would have been min(0.25, 0.5 x 0.17) = 0.08, and passed)."""
    verdicts = {"glioma": SURE, "glutamate": {"A": 0.2, "F": 0.8}, "breast cancer": {"The": 1.0}}
    r, llm = verify([TWO], verdicts, verify_threshold=0.25, verify_relative=0.5)
    assert len(llm.calls) == 3 and [v.decision for v in r.entity_verdicts] == ["verified", "untagged"]
