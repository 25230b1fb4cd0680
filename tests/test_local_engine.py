"""The local engine (hf_rgda.llm.engine) on the tiny real model: the grammar checked after sampling keeps every
output inside the schema, falls back to the whole vocabulary when the sampled token is rejected, and is part of the
backend's identity; the CPU backend variants of a GGML_BACKEND_DL build are loaded."""

from __future__ import annotations

import asyncio
import json
import pickle

import pytest

from hf_rgda import load_llm
from hf_rgda._exceptions import ConfigError
from hf_rgda.llm.engine import ENGINES, cpu_backend, cpu_variants, load_cpu_backends
from hf_rgda.llm.local import LocalLLM

from .test_local_integration import TINY, needs_tiny

SCHEMA = {"type": "object", "properties": {
    "sentences": {"type": "array", "minItems": 2, "maxItems": 2, "items": {
        "type": "object", "properties": {
            "text": {"type": "string", "maxLength": 80},
            "entities": {"type": "array", "maxItems": 3, "items": {
                "type": "object", "properties": {"text": {"type": "string", "maxLength": 30},
                                                 "type": {"type": "string", "enum": ["Disease"]}},
                "required": ["text", "type"], "additionalProperties": False}}},
        "required": ["text", "entities"], "additionalProperties": False}}},
    "required": ["sentences"], "additionalProperties": False}
MESSAGES = [{"role": "user", "content": "Write two sentences about asthma as JSON with their disease mentions."}]


def _inside_schema(text: str, *, strict: bool = True) -> bool:
    data = json.loads(text, strict=strict)
    assert set(data) == {"sentences"} and len(data["sentences"]) == 2
    for item in data["sentences"]:
        assert set(item) == {"text", "entities"} and len(item["text"]) <= 80 and len(item["entities"]) <= 3
        for ent in item["entities"]:
            assert set(ent) == {"text", "type"} and ent["type"] == "Disease" and len(ent["text"]) <= 30
    return True


def test_grammar_option_is_checked_and_part_of_the_identity() -> None:
    with pytest.raises(ConfigError, match="grammar"):
        LocalLLM("a/b/c.gguf", grammar="first")
    old = LocalLLM("a/b/c.gguf", grammar="in_chain").identity()
    assert old == {"backend": "local", "model": "a/b/c.gguf", "n_ctx": 4096}  # the old engine's cache stays its own
    new = LocalLLM("a/b/c.gguf").identity()
    assert new["grammar"] == "after_sampling" and new != old
    assert set(ENGINES) == {"after_sampling", "in_chain"}
    assert pickle.loads(pickle.dumps(LocalLLM("a/b/c.gguf", grammar="in_chain"))).grammar == "in_chain"


@pytest.mark.slow
def test_cpu_backend_variants_load_when_the_build_has_them() -> None:
    pytest.importorskip("llama_cpp")
    registered = load_cpu_backends()
    if cpu_variants():  # GGML_BACKEND_DL build: the best variant is registered as the CPU backend
        assert "CPU" in registered and load_cpu_backends() == registered  # once per process
    else:  # CPU backend linked in: nothing to load
        assert registered == []
    assert "system_info" in cpu_backend()


@pytest.mark.slow
@needs_tiny
@pytest.mark.parametrize("grammar", ENGINES)
def test_outputs_follow_the_schema(grammar: str) -> None:
    pytest.importorskip("llama_cpp")
    llm = load_llm(TINY, n_ctx=2048, grammar=grammar)
    rejected = 0
    for seed in range(4):
        comp = asyncio.run(llm.complete(MESSAGES, schema=SCHEMA,
                                        params={"temperature": 1.0, "max_tokens": 400, "seed": seed}))
        # llama-cpp-python's own grammar lets raw control characters into a string with maxLength (JSON forbids
        # them); the after-sampling engine's grammar does not
        assert _inside_schema(comp.text, strict=grammar == "after_sampling") and comp.usage.completion_tokens > 0
        sampler = llm._llama.last_sampler
        if grammar == "after_sampling":
            assert sampler is not None and sampler.sampled >= comp.usage.completion_tokens
            rejected += sampler.rejected
        else:
            assert sampler is None  # llama-cpp-python's own chain ran
    if grammar == "after_sampling":
        assert rejected > 0  # the tiny model strays from the schema: the whole-vocabulary fallback ran
    # free text and option probabilities take llama-cpp-python's own path
    free = asyncio.run(llm.complete(MESSAGES, schema=None, params={"temperature": 0.0, "max_tokens": 8, "seed": 0}))
    assert free.text
    probs = asyncio.run(llm.option_probs([{"role": "user", "content": "Answer yes or no: is asthma a disease?"}],
                                         ["yes", "no"], params={"seed": 0}))
    assert probs.method == "logprobs" and list(probs.probs) == ["yes", "no"] and probs.top
