"""The Space's method menu maps the combinations onto the augmenter's configuration (no model is loaded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "spaces" / "app.py"


@pytest.fixture(scope="module")
def app():
    pytest.importorskip("gradio")
    spec = importlib.util.spec_from_file_location("hf_rgda_space_app", APP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rgda_plus_debate_turns_on_the_review_panel(app) -> None:
    aug = app._augmenter(["Disease"], "rgda+debate", "openai", "some-model", "sk-test", "http://127.0.0.1:9", 2, "x")
    assert aug.config.method == "rgda" and aug.config.debate_review and aug.config.debate_agents == 3
    assert not aug.config.where


def test_where_combinations_need_an_attribution_model(app) -> None:
    import gradio as gr

    for method in ("biorda", "rgda+where"):
        with pytest.raises(gr.Error, match="attribution model"):
            app._augmenter(["Disease"], method, "openai", "m", "sk-test", "http://127.0.0.1:9", 2, "x", where="")


def test_plain_methods_pass_through(app) -> None:
    aug = app._augmenter(["Disease"], "gda", "openai", "m", "sk-test", "http://127.0.0.1:9", 2, "x")
    assert aug.config.method == "gda" and not aug.config.debate_review and not aug.config.where


def test_entity_hints_come_from_a_dataset_with_the_same_types(app) -> None:
    if not (app.DATA / "ncbi_disease" / "train.jsonl").is_file():
        pytest.skip("benchmark data not beside the repository")
    aug = app._augmenter(["Disease"], "rgda", "openai", "m", "sk-test", "http://127.0.0.1:9", 2, "x")
    assert len(aug.mentions["Disease"]) > 100
    other = app._augmenter(["Gadget"], "rgda", "openai", "m", "sk-test", "http://127.0.0.1:9", 2, "x")
    assert other.mentions == {}
