"""DEVELOPING.md's recipes, done: a new stage, two files (its module and its prompt) in a folder the library loads,
runs in a method end to end with the scripted world, its record round-tripping through the trace; a new checker rule with its repair, added to the
table in one place, rejects or repairs as its row says; a new backend, one class and one entry of the selector's
table, runs a method by its string name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset

from hf_rgda import LLM, RGDAAugmenter, ScriptedLLM, prompts, stages
from hf_rgda.checking import Checker, rules
from hf_rgda.checking.sentence import Sentence
from hf_rgda.checking.table import Example, Finding, Repair, Rule
from hf_rgda.llm import BACKENDS, Completion, Usage
from hf_rgda.records import Candidate, SeedTrace

from .conftest import LABELS, SEED_ROWS, FakeWorld, stage_of

# ---------------------------------------------------------------- add a stage
#: the toy stage's module: its record, its pure message builder and parser, its scripted answer and its place
TONE_MODULE = '''
from dataclasses import dataclass

from hf_rgda import prompts
from hf_rgda._exceptions import ParseError
from hf_rgda.stages import Stage, register


@dataclass
class Tone:
    """The seed's tone, as the model said it, and the seed's length."""

    tone: str
    words: int


def build(run, r):
    return run.messages("tone", sentence=r.seed.text)


def parse(run, r, data):
    if not isinstance(data, dict) or not isinstance(data.get("tone"), str):
        raise ParseError("no tone", raw=str(data))
    return Tone(data["tone"], len(r.seed.tokens))


register(Stage("tone", "tone", system=lambda name, common: prompts.render(name, domain=common["domain"]),
               build=build, parse=parse, record=Tone,
               schema=lambda run, r: {"type": "object", "properties": {"tone": {"type": "string"}}},
               scripted=lambda world, messages, schema, params: {"tone": "clinical"},
               after="variants", methods=("naive",)))
'''

#: the toy stage's prompt
TONE_PROMPT = """You read sentences from $domain and say the tone of each in one word (clinical, hopeful, alarmed, ...).
Answer with a JSON object: {"tone": "<the word>"}."""


@pytest.fixture
def toy_stage(tmp_path: Path) -> Iterator[str]:
    """A stage added as two files, its module and its prompt, in a folder the library loads."""
    folder = tmp_path / "toy_stages"
    folder.mkdir()
    (folder / "tone.py").write_text(TONE_MODULE)
    (folder / "tone.md").write_text(TONE_PROMPT)
    assert stages.load(folder) == ["tone"]
    yield "tone"
    stages.unload(folder)


def test_a_new_stage_is_its_module_and_its_prompt(toy_stage: str) -> None:
    """Loaded, the stage runs in its method's plan where it placed itself, its calls carry the system prompt of its
    own file, the scripted world answers it from its declaration, and its record rides in the trace, typed."""
    assert stages.PLANS["naive"][stages.PLANS["naive"].index("variants") + 1] == "tone"
    assert "tone" not in stages.PLANS["rgda"]
    world = FakeWorld()
    llm = ScriptedLLM(world, name="toy")
    aug = RGDAAugmenter(label_names=LABELS, method="naive", llm=llm, domain="clinical reports")
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    traces = [t for v in out["rgda_trace"] if (t := SeedTrace.read(v)) is not None]
    assert len(traces) == 3 and world.stages.count("tone") == 3
    assert [(t.records["tone"].tone, t.records["tone"].words) for t in traces] == [
        ("clinical", len(toks)) for toks in SEED_ROWS["tokens"]]
    assert all(t.accounting.stage_calls["tone"] == 1 and not t.failure for t in traces)
    systems = [m[0]["content"] for m, _, _ in llm.calls if stage_of(m) == "tone"]
    assert systems and all(s.startswith("You read sentences from clinical reports and say the tone") for s in systems)
    assert out["rgda_status"].count("accepted") == 9  # the method's own stages are unchanged


def test_a_stage_whose_answer_does_not_parse_fails_its_seed_alone(toy_stage: str) -> None:
    world = FakeWorld()

    def answer(messages: Any, schema: Any, params: Any) -> Any:
        if stage_of(messages) == "tone" and "cystic" in messages[-1]["content"]:
            return {"mood": "?"}
        return world(messages, schema, params)

    aug = RGDAAugmenter(label_names=LABELS, method="naive", llm=ScriptedLLM(answer, name="toy-broken"))
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    traces = [t for v in out["rgda_trace"] if (t := SeedTrace.read(v)) is not None]
    assert [t.failure.split(":")[0] for t in traces] == ["", "tone", ""]
    assert [bool(t.records) for t in traces] == [True, False, True]


def test_an_unloaded_stage_is_gone(tmp_path: Path) -> None:
    folder = tmp_path / "toy_stages"
    folder.mkdir()
    (folder / "tone.py").write_text(TONE_MODULE)
    (folder / "tone.md").write_text(TONE_PROMPT)
    stages.load(folder)
    stages.unload(folder)
    assert "tone" not in stages.STAGES and "tone" not in stages.PLANS["naive"] and "tone" not in prompts.names()


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
