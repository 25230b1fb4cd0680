"""Shared fixtures: offline, isolated caches, no API keys, and a stage-aware scripted LLM."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from hf_rgda import ScriptedLLM
from hf_rgda.testing import FakeWorld, stage_of, stateless_answer

__all__ = ["LABELS", "SEED_ROWS", "FakeWorld", "stage_of", "stateless_handler"]

LABELS = ["O", "B-Disease", "I-Disease"]
SEED_ROWS = {
    "tokens": [
        ["Germline", "mutations", "in", "BRCA1", "cause", "breast", "cancer", "."],
        ["Patients", "with", "cystic", "fibrosis", "show", "chronic", "infection", "."],
        ["The", "gene", "is", "silenced", "in", "most", "tumours", "of", "the", "colon", "."],
    ],
    "ner_tags": [
        ["O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O"],
        ["O", "O", "B-Disease", "I-Disease", "O", "O", "B-Disease", "O"],
        ["O", "O", "O", "O", "O", "O", "B-Disease", "O", "O", "O", "O"],
    ],
}


@pytest.fixture(autouse=True)
def _isolate(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("env")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(base / "datasets"))
    monkeypatch.setenv("HF_RGDA_CACHE", str(base / "responses.sqlite3"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    if request.node.get_closest_marker("external"):
        return  # live provider tests (opt-in) keep the caller's keys
    for key in list(os.environ):
        if key.endswith("_API_KEY") or key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN") or key.startswith(
                ("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_")):
            monkeypatch.delenv(key)


@pytest.fixture
def world() -> FakeWorld:
    return FakeWorld()


@pytest.fixture
def fake_llm(world: FakeWorld) -> Iterator[ScriptedLLM]:
    yield ScriptedLLM(world, name="fake-world")


CALLS = {"n": 0}


def stateless_handler(messages: Any, schema: Any, params: Any) -> Any:
    """Like FakeWorld but a pure function of the call (its derived seed), so it hashes and forks cleanly."""
    CALLS["n"] += 1
    return stateless_answer(messages, schema, params)
