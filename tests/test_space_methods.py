"""The Space on the public API: its menus come from the library, its switches are AugmentConfig's, and a request runs
end to end through the run recipe with a scripted backend put in the llm registry (no model is loaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hf_rgda import METHODS, ScriptedLLM
from hf_rgda.llm import BACKENDS
from hf_rgda.tags import parse_inline

from .conftest import stateless_handler

APP = Path(__file__).resolve().parents[1] / "spaces" / "app.py"
REMOTE = ("openai", "some-model", "sk-test", "http://127.0.0.1:9")


@pytest.fixture(scope="module")
def app():
    pytest.importorskip("gradio")
    spec = importlib.util.spec_from_file_location("hf_rgda_space_app", APP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "scripted", lambda model, **kw: ScriptedLLM(stateless_handler, name=model))


def test_menus_come_from_the_library(app) -> None:
    blocks = {b.elem_id: b for b in app.build().blocks.values() if getattr(b, "elem_id", None)}
    assert [value for _, value in blocks["method"].choices] == list(METHODS)
    assert [value for _, value in blocks["backend"].choices] == list(BACKENDS)


def test_examples_are_the_spaces_own(app) -> None:
    assert "shared" not in APP.read_text()  # no path into a data folder beside the repository
    for sentence, types, _ in app.EXAMPLES:
        _, tags = parse_inline(sentence)
        assert {t[2:] for t in tags if t != "O"} <= {t.strip() for t in types.split(",")}


def test_debate_review_switch(app) -> None:
    aug = app._augmenter(["Disease"], "rgda", False, True, *REMOTE, 2, "x", "")
    assert aug.config.method == "rgda" and aug.config.debate_review and not aug.config.where


def test_plain_methods_pass_through(app) -> None:
    aug = app._augmenter(["Disease"], "gda", False, False, *REMOTE, 2, "x", "")
    assert aug.config.method == "gda" and not aug.config.debate_review and not aug.config.where


def test_the_configurations_refusals_reach_the_page(app) -> None:
    import gradio as gr

    sentence = app.EXAMPLES[0][0]
    for method, where in (("biorda", False), ("rgda", True)):
        with pytest.raises(gr.Error, match="needs attribution_model"):
            app.augment(sentence, "Disease", "x", method, where, False, *REMOTE, 2, "")
    with pytest.raises(gr.Error, match="where=True applies to the guided methods"):
        app.augment(sentence, "Disease", "x", "naive", True, False, *REMOTE, 2, "")


def test_one_request_end_to_end(app, scripted) -> None:
    sentence, types, domain = app.EXAMPLES[0]
    status, guidance, gr_rounds, ac_rounds, result, rejected, download, heat, transcript, rows, report = app.augment(
        sentence, types, domain, "rgda", False, False, "scripted", "s", "", "", 2)
    assert status.startswith("**rgda** with ") and f": 2 accepted, {len(rejected)} rejected; " in status
    assert "context" in guidance and gr_rounds[0][:2] == [1, 95] and ac_rounds[0][0] == 1
    assert [label for _, label in result if label] == ["Disease", "Disease"]
    assert rows[0]["rgda_status"] == "original" and Path(download).read_text().count("\n") == 3
    assert heat == [] and transcript == []
    assert report["config"]["method"] == "rgda" and report["summary"]["accepted"] == 2


def test_a_verdict_that_passed_early_says_so(app) -> None:
    """With the local model a verdict stops asking once it passes (judge_early_pass): its score is the points of the
    criteria asked, and the page says so."""
    import json

    from hf_rgda.records import Judgement, SeedTrace

    early = Judgement(53, {"context_abstraction": 23, "entity_explanation": 15, "correct_relationship": 15}, {},
                      "probability", partial=True)
    full = Judgement(61, {"domain_alignment": 20, "semantic_consistency": 20, "entity_role_integrity": 12,
                          "tag_format_validation": 9}, {}, "probability")
    rows = [{"rgda_trace": json.dumps(SeedTrace(seed="s0", judgements={"guidance_judge": [early], "composition_judge": [full]}).to_json())}]
    stages = app._stages(rows)
    assert stages["gr"] == [[1, 53, ("passed early, the criteria asked: context_abstraction 23: ; "
                                     "entity_explanation 15: ; correct_relationship 15: ")]]
    assert stages["ac"][0][:2] == [1, 61] and not stages["ac"][0][2].startswith("passed early")
