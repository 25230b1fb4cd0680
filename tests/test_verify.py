"""Entity verification: the cached option-probability call of the call seam, the question, the decisions from
scripted probabilities, the stage in the pipeline, its trace and summary."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hf_rgda import AugmentConfig, ConfigError, ScriptedLLM
from hf_rgda.cache import ResponseCache
from hf_rgda.calls import Caller, derive_seed
from hf_rgda.records import Seed, SeedResult
from hf_rgda.stages.categories import BOUNDARY, FALLBACK, GROUPS, ORDINARY, question

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
