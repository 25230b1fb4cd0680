"""DEVELOPING.md's recipes, done: a new stage declared and registered in one place runs in a method end to end with
the scripted world, its record round-tripping through the trace; a new checker rule with its repair, added to the
table in one place, rejects or repairs as its row says; a new backend, one class and one entry of the selector's
table, runs a method by its string name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from datasets import Dataset

from hf_rgda import LLM, RGDAAugmenter, ScriptedLLM
from hf_rgda._exceptions import ParseError
from hf_rgda.checking import Checker, rules
from hf_rgda.checking.sentence import Sentence
from hf_rgda.checking.table import Example, Finding, Repair, Rule
from hf_rgda.llm import BACKENDS, Completion, Usage
from hf_rgda.messages import chat
from hf_rgda.records import RECORD_TYPES, Candidate, SeedTrace
from hf_rgda.stages import PLANS, STAGES, Stage, register

from .conftest import LABELS, SEED_ROWS, FakeWorld, stage_of


# ---------------------------------------------------------------- add a stage
@dataclass
class Tone:
    """The toy stage's record: the seed's tone, as the model said it, and the seed's length."""

    tone: str
    words: int


def build(run: Any, r: Any) -> list[dict[str, str]]:
    return chat("Say the tone of the sentence.", r.seed.text)


def parse(run: Any, r: Any, data: Any) -> Tone:
    if not isinstance(data, dict) or not isinstance(data.get("tone"), str):
        raise ParseError("no tone", raw=str(data))
    return Tone(data["tone"], len(r.seed.tokens))


TONE = Stage("tone", "tone", build=build, parse=parse, record=Tone,
             schema=lambda run, r: {"type": "object", "properties": {"tone": {"type": "string"}}})


@pytest.fixture
def toy_stage(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stage]:
    """The toy stage registered, and run by ``naive`` after its seed generation."""
    register(TONE)
    monkeypatch.setitem(PLANS, "naive", (*PLANS["naive"], "tone"))
    yield TONE
    STAGES.pop("tone")
    RECORD_TYPES.pop("tone")


def test_a_new_stage_runs_end_to_end_and_its_record_rides_in_the_trace(toy_stage: Stage) -> None:
    world = FakeWorld()

    def answer(messages: Any, schema: Any, params: Any) -> Any:
        return {"tone": "clinical"} if stage_of(messages) == "tone" else world(messages, schema, params)

    aug = RGDAAugmenter(label_names=LABELS, method="naive", llm=ScriptedLLM(answer, name="toy"))
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    traces = [t for v in out["rgda_trace"] if (t := SeedTrace.read(v)) is not None]
    assert len(traces) == 3
    assert [t.records["tone"] for t in traces] == [Tone("clinical", len(toks)) for toks in SEED_ROWS["tokens"]]
    assert all(t.accounting.stage_calls["tone"] == 1 and not t.failure for t in traces)
    assert out["rgda_status"].count("accepted") == 9  # the method's own stages are unchanged


def test_a_stage_whose_answer_does_not_parse_fails_its_seed_alone(toy_stage: Stage) -> None:
    def answer(messages: Any, schema: Any, params: Any) -> Any:
        if stage_of(messages) == "tone":
            return {"mood": "?"} if "cystic" in messages[-1]["content"] else {"tone": "plain"}
        return FakeWorld()(messages, schema, params)

    aug = RGDAAugmenter(label_names=LABELS, method="naive", llm=ScriptedLLM(answer, name="toy-broken"))
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    traces = [t for v in out["rgda_trace"] if (t := SeedTrace.read(v)) is not None]
    assert [t.failure.split(":")[0] for t in traces] == ["", "tone", ""]
    assert [bool(t.records) for t in traces] == [True, False, True]


# ---------------------------------------------------------------- add a rule
def shouting(s: Sentence) -> str | None:
    """A word in capitals (four letters or more) outside the entities that the seed does not write so."""
    i = next((i for i, t in enumerate(s.tokens) if len(t) > 3 and t.isupper() and s.tags[i] == "O"
              and t not in s.seed.tokens), None)
    return None if i is None else f"{s.tokens[i]!r} is shouted"


def calm_down(cand: Candidate, found: Finding, s: Sentence) -> Sentence | None:
    """Write the shouted words in lower case."""
    cand.tokens = [t.lower() if len(t) > 3 and t.isupper() and g == "O" else t for t, g in zip(cand.tokens, cand.tags)]
    cand.salvaged.append(f"{found.rule.name}: lower-cased")
    return Sentence(cand.tokens, cand.tags, s.seed, s.checker, s.accepted, s.forbid_seed_entities)


SHOUTING = Rule("shouting", shouting, "a word in capitals the seed does not have",
                Example("Carriers of the variant VERY often develop [gout](Disease) in adults ."),
                repair=Repair("writes it in lower case", calm_down))


def test_a_new_rule_rejects_or_repairs_as_its_row_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "RULES", (*rules.RULES, SHOUTING))
    ex = SHOUTING.example
    cand, _ = ex.candidates()
    Checker(ex.types).check(cand, ex.seed_record(), [], forbid_seed_entities=True)
    assert (cand.reason, cand.detail) == ("shouting", "'VERY' is shouted")
    cand, _ = ex.candidates()
    Checker(ex.types, salvage=True).check(cand, ex.seed_record(), [], forbid_seed_entities=True)
    assert cand.ok and "very" in cand.tokens and cand.salvaged == ["shouting: lower-cased"]


# ---------------------------------------------------------------- add a backend
class WorldLLM(LLM):
    """A toy backend: the scripted world behind the one async primitive (a real one calls its API here, its SDK
    imported lazily and its key read at the first call)."""

    def __init__(self, model: str, **options: Any) -> None:
        self.model, self.world = model, FakeWorld()

    async def complete(self, messages: Any, *, schema: Any, params: Any) -> Completion:
        import json

        answer = self.world(messages, schema, params)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Completion(text=text, usage=Usage(len(str(messages).split()), len(text.split())))

    def identity(self) -> dict[str, Any]:
        return {"backend": "world", "model": self.model}


def test_a_new_backend_is_one_class_and_one_entry_of_the_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "world", WorldLLM)
    aug = RGDAAugmenter("world:v1", label_names=LABELS, method="gda", verify_entities=False)
    assert isinstance(aug.llm, WorldLLM) and aug.llm.identity() == {"backend": "world", "model": "v1"}
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    assert out["rgda_status"].count("accepted") == 9
    assert aug.llm.world.stages.count("composer") == 3  # the method ran its stages through the new backend
