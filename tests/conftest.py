"""Shared fixtures: offline, isolated caches, no API keys, and a stage-aware scripted LLM."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from hf_rgda import ScriptedLLM
from hf_rgda.schemas import AC_RUBRIC, GR_RUBRIC

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
_DISEASES = ["lung cancer", "type 2 diabetes", "Huntington disease", "melanoma", "asthma", "sickle cell anemia",
             "hepatitis", "glioma", "psoriasis", "leukemia", "ovarian cancer", "ataxia", "gout", "lupus"]
_FRAMES = ["Inherited variants of {g} raise the risk of {d} in adults", "A rare allele of {g} was linked to {d} in two families",
           "Loss of {g} function leads to early onset {d} in children", "Screening for {g} defects helps detect {d} sooner",
           "Researchers traced {d} in the cohort to a variant of {g}", "Mice lacking {g} developed {d} within weeks"]
_GENES = ["TP53", "APC", "MLH1", "CFTR", "HTT", "PTEN", "KRAS", "SOD1"]


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path_factory.mktemp("env")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(base / "datasets"))
    monkeypatch.setenv("HF_RGDA_CACHE", str(base / "responses.sqlite3"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    for key in list(os.environ):
        if key.endswith("_API_KEY") or key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
            monkeypatch.delenv(key)


def stage_of(messages: list[dict[str, str]]) -> str:
    system = messages[0]["content"]
    if len(messages) > 2:
        return "repair"
    for marker, stage in [("reviewer of sentence guides", "gr_judge"), ("reviewer of synthetic", "ac_judge"),
                          ("improve a sentence guide", "gr_refine"), ("revise synthetic", "ac_refine"),
                          ("abstract guide that another", "guidance"), ("from an abstract guide", "composer"),
                          ("rewrite tagged sentences", "seed_generation")]:
        if marker in system:
            return stage
    raise AssertionError(f"unknown stage: {system[:80]}")


class FakeWorld:
    """Stage-aware scripted answers: valid sentences, a guidance, and judge scores from a list.

    Args:
        gr_scores, ac_scores: total scores the judges give, round after round (last repeats).
        broken: stage names whose answer is garbage text.
    """

    def __init__(self, gr_scores: list[int] = [95], ac_scores: list[int] = [95], broken: tuple[str, ...] = ()) -> None:  # noqa: B006
        self.gr_scores, self.ac_scores, self.broken = list(gr_scores), list(ac_scores), broken
        self.counter = itertools.count()
        self.stages: list[str] = []

    def sentence(self) -> dict[str, Any]:
        i = next(self.counter)
        d, g = _DISEASES[i % len(_DISEASES)], _GENES[(i // len(_DISEASES)) % len(_GENES)]
        frame = _FRAMES[(i * 7) % len(_FRAMES)]
        return {"text": frame.format(g=g, d=d) + f" (case {i}).", "entities": [{"text": d, "type": "Disease"}]}

    @staticmethod
    def verdict(total: int, rubric: dict[str, int]) -> dict[str, Any]:
        out, left = {}, total
        for name, top in rubric.items():
            s = min(top, left)
            left -= s
            out[name] = {"feedback": f"fix {name}", "score": s}
        return out

    def __call__(self, messages: Any, schema: Any, params: Any) -> Any:
        stage = stage_of(list(messages))
        self.stages.append(stage)
        if stage in self.broken:
            return "Sure! Here are some sentences: {not json"
        if stage in ("seed_generation", "composer", "ac_refine", "repair"):
            n = schema["properties"]["sentences"]["minItems"]
            return {"sentences": [self.sentence() for _ in range(n)]}
        if stage in ("guidance", "gr_refine"):
            return {"context": "oncology genetics", "structure": "a gene variant causes a disease",
                    "entity_roles": [{"text": "breast cancer", "type": "Disease", "role": "outcome"}], "keywords": ["gene"]}
        scores = self.gr_scores if stage == "gr_judge" else self.ac_scores
        total = scores.pop(0) if len(scores) > 1 else scores[0]
        return self.verdict(total, GR_RUBRIC if stage == "gr_judge" else AC_RUBRIC)


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
    world = FakeWorld()
    world.counter = itertools.count(params["seed"] % 997)
    return world(messages, schema, params)
