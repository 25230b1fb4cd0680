"""The local engine (hf_rgda.llm.local) on the tiny real model: the grammar checked after sampling keeps every
output inside the schema, falls back to the whole vocabulary when the sampled token is rejected, and is part of the
backend's identity; the CPU backend variants of a GGML_BACKEND_DL build are loaded."""

from __future__ import annotations

import asyncio
import json
import pickle

import pytest

from hf_rgda import load_llm
from hf_rgda._exceptions import ConfigError
from hf_rgda.checking import complete_items
from hf_rgda.checking.decode import text_loops
from hf_rgda.llm.base import Usage
from hf_rgda.llm.local import (
    SELF_COPY_TOKENS,
    KVState,
    KVStates,
    LocalLLM,
    LookupDraft,
    SelfCopy,
    cpu_backend,
    cpu_variants,
    load_cpu_backends,
    loops,
)
from hf_rgda.llm.local.lookup import lookup
from hf_rgda.schemas import guidance_schema, sentences_schema

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


def _state(ids: list[int], size: int = 10) -> KVState:
    import numpy as np

    return KVState(np.array(ids, dtype=np.intc), None, size, 0)


def test_kept_states_serve_the_longest_shared_prefix_and_evict_the_least_recent() -> None:
    states = KVStates(capacity_bytes=30)
    assert states and len(states) == 0  # an empty store is still a store (llama-cpp-python tests ``if cache:``)
    with pytest.raises(KeyError):
        states[[1, 2, 3]]
    states[[1, 2, 3, 99]] = _state([1, 2, 3])  # keyed by what the state holds, not the sampled tail
    states[[7, 8]] = _state([7, 8])
    assert states[[1, 2, 3, 4, 5]].key == (1, 2, 3) and states[[7, 9]].key == (7, 8)
    with pytest.raises(KeyError):
        states[[5, 1, 2]]  # no shared first token
    states[[1, 2, 3, 4]] = _state([1, 2, 3, 4])  # extends (1, 2, 3): the shorter one is redundant
    assert len(states) == 2 and states.best([1, 2, 3, 9])[0].key == (1, 2, 3, 4)
    states[[7, 8]]  # touched: (1, 2, 3, 4) is now the least recently used
    states[[4, 4]] = _state([4, 4])
    states[[5, 5]] = _state([5, 5])  # 40 bytes > 30: the least recently used goes
    assert [s for s in ([1, 2, 3, 4], [7, 8]) if s in states] == [[7, 8]] and states.nbytes <= 30
    states[[6]] = _state([6], size=31)  # larger than the whole budget: not kept
    assert [6] not in states


def test_a_sibling_state_that_differs_only_in_its_last_tokens_is_dropped_for_the_new_one() -> None:
    states, n = KVStates(capacity_bytes=1 << 20), KVStates.SIBLING_TOKENS
    body = list(range(1, 2 * n + 1))
    states[body + [900, 901]] = _state(body + [900])  # one criterion question of a verdict
    states[[5000 + i for i in range(3 * n)]] = _state([5000 + i for i in range(3 * n)])  # another seed's call
    states[body + [910, 911]] = _state(body + [910])  # the next criterion: the first is redundant now
    assert len(states) == 2 and states.best(body + [920])[0].key == tuple(body + [910])
    states[body[: n // 2] + [7] * n] = _state(body[: n // 2] + [7] * n)  # parts in the first half: kept
    states[body[:3] + [8] * (n + 10)] = _state(body[:3] + [8] * (n + 10))  # parts too early: kept as well
    assert len(states) == 4 and states.best(body)[1] == len(body)
    kept = KVStates(capacity_bytes=1 << 20)  # parts within its last 64 tokens but before its half: kept
    kept[list(range(40)) + [7] * 60] = _state(list(range(40)) + [7] * 60)
    kept[list(range(40)) + [8] * 10] = _state(list(range(40)) + [8] * 10)
    assert len(kept) == 2


def test_a_loop_is_a_short_cycle_repeated_over_enough_tokens() -> None:
    mark = [58, 35, 60, 35, 701, 11]  # "[Disease](Disease), " as six tokens
    assert loops([1, 2, 3] + mark * 4) and not loops([1, 2, 3] + mark * 3)  # 4 times: 24 tokens
    assert loops(list(range(6)) * 4) and not loops(list(range(10)) * 3)  # 24 tokens of period 6; 3 times is prose
    assert loops([9] * 24) and not loops([9] * 23)  # one token: 24 times
    assert not loops(list(range(100))) and not loops([1, 2] * 3 + list(range(30)))
    assert loops(list(range(16)) * 4) and not loops(list(range(17)) * 4)  # periods up to 16 tokens


def test_a_self_copy_is_48_tokens_written_again_in_order() -> None:
    sentence = list(range(100, 160))  # one item of 60 tokens
    fed = SelfCopy()
    answer = sentence + sentence
    ended = [n for n in range(1, len(answer) + 1) if fed(answer[:n])]
    assert ended[0] == 60 + 48  # the second copy's 48th token
    fed = SelfCopy()  # a shared phrase of 47 tokens is no copy, nor are tokens the answer had not written itself
    answer = sentence + [7] + sentence[:47] + [8] + list(range(300, 400))
    assert not any(fed(answer[:n]) for n in range(1, len(answer) + 1))


def test_only_a_list_of_sentences_is_ended_at_a_copy_of_itself() -> None:
    """The local backend asks its engine to end an answer copying itself only for a list of inline sentences: an
    entity list, typed segments, a guidance or a review repeats runs of tokens legitimately."""
    llm, asked = LocalLLM("a/b/c.gguf"), []

    def chat(messages, stop_copies=0, **kwargs):
        asked.append(stop_copies)
        return {"choices": [{"message": {"content": "{}"}}]}, Usage(1, 1, 0), 0.0

    llm._chat = chat
    for schema in [sentences_schema(("Disease",), 3, r) for r in ("inline", "entities", "segments")] + [
            guidance_schema(("Disease",)), None]:
        llm._run([{"role": "user", "content": "hi"}], schema, {})
    assert asked == [SELF_COPY_TOKENS, 0, 0, 0, 0] and SELF_COPY_TOKENS == 48


def test_kv_states_option_is_checked_and_not_part_of_the_identity() -> None:
    with pytest.raises(ConfigError, match="kv_states_mb"):
        LocalLLM("a/b/c.gguf", kv_states_mb=-1)
    assert LocalLLM("a/b/c.gguf", kv_states_mb=0).identity() == LocalLLM("a/b/c.gguf").identity()
    old = LocalLLM("a/b/c.gguf").__getstate__()
    old.pop("kv_states_mb")
    revived = LocalLLM.__new__(LocalLLM)
    revived.__setstate__(old)  # pickled before the option existed
    assert revived.kv_states_mb == 512


@pytest.mark.slow
@needs_tiny
def test_kept_kv_states_change_what_is_evaluated_not_what_is_written() -> None:
    """A conversation and other prompts in turn, greedy: with kept states the follow-ups start from the earlier
    turns' state (more prompt tokens reused), and every answer is the one a full evaluation gives.

    Exactly the same, because every cell a kept state brings back here was computed in a decode of two tokens or more
    and the tiny model's kernels sum such decodes alike however a prompt is split (``python -m
    benchmarks.batch_shapes``: bit-equal on the zen4 and the AMX modules). Cells computed one token at a time (an
    answer's, or a prompt already whole in the cache, whose last token is evaluated again alone) differ from a batch's
    in the last bits on every module, as llama.cpp documents for its own prompt cache: so the follow-ups quote a fixed
    answer, not the model's, and the other prompt changes each turn. The default model's repacked weights on the zen4
    module sum even batches of 2 and 7 otherwise, so there reuse changes what is written at near ties (the identity
    leaves kept states out all the same: llama-cpp-python's own prefix reuse mixes batch shapes without them)."""
    pytest.importorskip("llama_cpp")
    runs = {}
    for mb in (0, 64):
        llm = load_llm(TINY, n_ctx=2048, kv_states_mb=mb, lookup="off")
        talk = [{"role": "system", "content": "You write biomedical sentences. " * 20}, *MESSAGES]
        answers, reused = [], []
        for turn in range(3):
            other = [{"role": "system", "content": "You judge sentences carefully. " * 20},
                     {"role": "user", "content": f"Is asthma a disease? Answer in {turn + 3} words."}]
            c = asyncio.run(llm.complete(talk, schema=SCHEMA, params={"temperature": 0.0, "max_tokens": 120, "seed": 1}))
            o = asyncio.run(llm.complete(other, schema=None, params={"temperature": 0.0, "max_tokens": 12, "seed": 1}))
            answers += [c.text, o.text]
            reused.append(c.usage.cached_tokens)
            talk = [*talk, {"role": "assistant", "content": "Here are two sentences."},
                    {"role": "user", "content": "Two more, shorter."}]
        runs[mb] = (answers, reused, llm._llama.cache)
    assert runs[64][0] == runs[0][0]
    assert all(a.strip() for a in runs[0][0])
    assert runs[0][2] is None and runs[64][2].restored >= 2
    assert runs[64][1][1] > runs[0][1][1] and runs[64][1][2] > runs[0][1][2]


def test_the_grammar_is_checked_after_sampling_and_said_so_in_the_identity() -> None:
    """The engine with the grammar in llama-cpp-python's chain (whose identity had no ``grammar``) was removed: the
    engine kept says ``grammar="after_sampling"`` as it always did, so its cached answers stay its own, and a backend
    pickled with a removed option refuses to come back as another engine."""
    new = LocalLLM("a/b/c.gguf", lookup="off").identity()
    assert new == {"backend": "local", "model": "a/b/c.gguf", "n_ctx": 4096, "grammar": "after_sampling"}
    assert pickle.loads(pickle.dumps(LocalLLM("a/b/c.gguf"))).identity() == LocalLLM("a/b/c.gguf").identity()
    with pytest.raises(TypeError, match="grammar"):
        LocalLLM("a/b/c.gguf", grammar="in_chain")  # type: ignore[call-arg]
    state = LocalLLM("a/b/c.gguf").__getstate__()
    for key, value in (("grammar", "in_chain"), ("plain_prefill", True), ("parallel", 4)):
        revived = LocalLLM.__new__(LocalLLM)
        with pytest.raises(ConfigError, match=f"{key}={value!r}.*removed"):
            revived.__setstate__({**state, key: value})
    revived = LocalLLM.__new__(LocalLLM)
    revived.__setstate__({**state, "grammar": "after_sampling", "plain_prefill": False, "parallel": 1,
                          "max_concurrency": 1})  # pickled with the removed options at the values kept
    assert revived.identity() == LocalLLM("a/b/c.gguf").identity() and revived.max_concurrency == 1


def test_lookup_finds_the_latest_match_of_the_longest_tail() -> None:
    import numpy as np

    ids = np.array([1, 2, 3, 9, 8, 2, 3, 7, 6, 1, 2, 3], dtype=np.intc)
    assert lookup(ids, 2).tolist() == [9, 8]  # "1 2 3" (three tokens) beats the later "2 3"
    assert lookup(ids[:-1], 3).tolist() == [3, 9, 8]  # "1 2" occurs once before the tail
    assert lookup(np.array([4, 5, 4], dtype=np.intc), 5).tolist() == []  # one-token tails are not looked up...
    assert lookup(np.array([4, 5, 6, 4, 5], dtype=np.intc), 5).tolist() == [6, 4, 5]
    assert lookup(ids, 2, ngrams=(2,)).tolist() == [7, 6]  # ...and with two-token tails the latest match wins


def _drafter(costs: dict[int, float], kept: int, rejections: int, **kwargs: object) -> LookupDraft:
    d = LookupDraft(**kwargs)  # type: ignore[arg-type]
    for width, seconds in costs.items():
        d.timed(width, seconds)
    d.kept, d.rejections = kept, rejections
    return d


def test_the_drafter_guesses_as_many_tokens_as_its_timings_favour() -> None:
    # the Xeon's figures (a 4-token decode costs 1.8 single ones, a 5-token one 2.25) and guesses kept 4 times in
    # 5: 3 guesses (2.95 tokens expected in 0.113 s) beat 4 (3.36 in 0.144 s) and none (1 in 0.064 s)
    xeon = {1: 0.064, 2: 0.099, 3: 0.119, 4: 0.113, 5: 0.144}
    assert _drafter(xeon, kept=80, rejections=20, explore=0).best_width(4) == 3
    assert _drafter(xeon, kept=80, rejections=20, explore=0).best_width(2) == 2  # only 2 guesses in the context
    # guesses rarely kept: none
    assert _drafter(xeon, kept=10, rejections=90, explore=0).best_width(4) == 0
    # where a wide decode costs as much as its tokens one by one (arithmetic-bound), guessing never pays
    flat = {w: 0.037 * w for w in range(1, 6)}
    assert _drafter(flat, kept=80, rejections=20, explore=0).best_width(4) == 0
    # before any measurement, every width is tried once (the widest first), then the figures decide
    fresh = LookupDraft()
    assert fresh.best_width(4) == 4
    fresh.timed(5, 0.144)
    assert fresh.best_width(4) == 3
    # "always" checks every guess, "off" none; exploring tries each width in turn now and then
    assert LookupDraft(mode="always").best_width(3) == 3 and LookupDraft(mode="off").best_width(3) == 0
    d = _drafter(flat, kept=80, rejections=20, explore=2)
    assert [d.best_width(4) for _ in range(6)] == [0, 2, 0, 3, 0, 4]
    with pytest.raises(ValueError, match="mode"):
        LookupDraft(mode="sometimes")


def test_lookup_option_is_checked_part_of_the_identity_and_auto_by_default() -> None:
    with pytest.raises(ConfigError, match="lookup"):
        LocalLLM("a/b/c.gguf", lookup="sometimes")
    auto, off = LocalLLM("a/b/c.gguf"), LocalLLM("a/b/c.gguf", lookup="off")
    assert auto.lookup == "auto" and auto.identity() == {**off.identity(), "lookup": "auto"}
    assert "lookup" not in off.identity()  # the engine without guesses keeps the identity (and cached answers) it had
    old = auto.__getstate__()
    old.pop("lookup")
    revived = LocalLLM.__new__(LocalLLM)
    revived.__setstate__(old)  # pickled before the option: the engine without guesses it ran
    assert revived.lookup == "off" and revived.identity() == off.identity()


@pytest.mark.slow
@needs_tiny
def test_checked_guesses_leave_the_answers_a_sampled_distribution_and_the_cache_consistent() -> None:
    """With every guess checked, answers follow the schema, guesses are checked and most are kept (the answers copy
    the prompt), the KV cells after each call hold exactly the tokens ``input_ids`` says (a guess that was not kept
    leaves no cell behind), and an option question after it reads the same probabilities as without guesses."""
    pytest.importorskip("llama_cpp")
    import llama_cpp

    copy = [{"role": "user", "content": "Repeat this JSON exactly: {\"sentences\": [{\"text\": \"Asthma narrows the "
                                        "airways of children.\", \"entities\": []}, {\"text\": \"Asthma narrows the "
                                        "airways of adults.\", \"entities\": []}]}"}]
    probs = {}
    for mode in ("off", "always"):
        llm = load_llm(TINY, n_ctx=2048, kv_states_mb=0, lookup=mode)
        for seed in range(2):
            comp = asyncio.run(llm.complete(copy, schema=SCHEMA, params={"temperature": 1.0, "max_tokens": 200,
                                                                         "seed": seed}))
            assert _inside_schema(comp.text)
            llama = llm._llama
            mem = llama_cpp.llama_get_memory(llama._ctx.ctx)
            assert llama_cpp.llama_memory_seq_pos_max(mem, 0) == llama.n_tokens - 1
        question = [{"role": "user", "content": "Answer yes or no: is asthma a disease?"}]
        probs[mode] = asyncio.run(llm.option_probs(question, ["yes", "no"], params={"seed": 0})).probs
        d = llm._llama.lookup
        if mode == "always":
            assert d.checks > 5 and 0 < d.kept <= d.drafted and d.keep_rate > 0.5, d.stats()
            assert set(d.cost) >= {1} and any(w > 1 for w in d.cost)
        else:
            assert d is None and llm._llama.draft_model is None
    assert probs["always"] == probs["off"]


@pytest.mark.slow
@needs_tiny
def test_guesses_stop_at_the_end_of_the_context() -> None:
    """An answer that runs to the end of a small context (llama.cpp pads ``n_ctx`` beyond llama-cpp-python's token
    array) with guesses at every step ends where the engine without guesses ends, instead of writing guesses past
    the array."""
    pytest.importorskip("llama_cpp")
    messages = [{"role": "user", "content": "Repeat forever: " + "la " * 20}]
    used = {}
    for mode in ("off", "always"):
        llama = load_llm(TINY, n_ctx=160, kv_states_mb=0, lookup=mode)._load()
        out = llama.create_chat_completion(messages=messages, temperature=0.0, max_tokens=-1, seed=0)
        used[mode] = out["usage"]["completion_tokens"]
        if mode == "always":
            assert llama.lookup.checks > 0
    assert used["always"] == used["off"] > 100


@pytest.mark.slow
def test_cpu_backend_variants_load_when_the_build_has_them() -> None:
    pytest.importorskip("llama_cpp")
    registered = load_cpu_backends()
    if cpu_variants():  # GGML_BACKEND_DL build: the best variant is registered as the CPU backend
        assert "CPU" in registered and load_cpu_backends() == registered  # once per process
    else:  # CPU backend linked in: nothing to load
        assert registered == []
    assert "system_info" in cpu_backend()


_GREEDY = r'''
import json
from hf_rgda.llm.local import cpu_backend, load_cpu_variant
if MODULE:
    load_cpu_variant(MODULE)
import llama_cpp
from hf_rgda.llm.local import resolve_gguf
info = cpu_backend()
llm = llama_cpp.Llama(model_path=str(resolve_gguf(TINY_MODEL)), n_ctx=512, n_threads=1, verbose=False)
text = llm.create_completion("Asthma is a chronic disease of the", max_tokens=12, temperature=0.0)["choices"][0]["text"]
print("RESULT " + json.dumps({"system_info": info["system_info"], "text": text}))
'''


def _greedy(prefix: list[str], module: str | None = None) -> tuple[str, dict[str, str]]:
    import os
    import subprocess
    import sys

    code = _GREEDY.replace("TINY_MODEL", repr(TINY.split(":", 1)[1])).replace("MODULE", repr(module))
    proc = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    result = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and result, proc.stderr[-2000:]
    return proc.stderr, json.loads(result[0][len("RESULT "):])


def _cpu_flags() -> set[str]:
    from pathlib import Path

    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))


@pytest.mark.slow
@needs_tiny
def test_the_amx_module_runs_and_writes_what_the_avx512_module_writes() -> None:
    """On a CPU with AMX ggml picks the sapphirerapids module, whose prompt kernels use the tiles. Built from
    llama.cpp's source as it is, GCC 12 left the tiles unconfigured and its first prompt of more than one token died
    of SIGILL (scripts/llama_cpu_variants.py). The tiny model's weights (Q4_1) go through those kernels: it runs, and
    writes the greedy text of the AVX-512 module without AMX."""
    pytest.importorskip("llama_cpp")
    if "libggml-cpu-sapphirerapids.so" not in cpu_variants():
        pytest.skip("this llama.cpp build has no AMX module")
    if not {"amx_tile", "amx_int8", "avx512_bf16"} <= _cpu_flags():
        pytest.skip("this CPU has no AMX")
    _, amx = _greedy([])
    _, zen4 = _greedy([], "libggml-cpu-zen4.so")
    assert "AMX_INT8 = 1" in amx["system_info"] and "AMX_INT8" not in zen4["system_info"]
    assert amx["text"] == zen4["text"] and amx["text"].strip()


@pytest.mark.slow
@needs_tiny
def test_the_cached_build_runs_on_a_cpu_without_avx512() -> None:
    """The same build under QEMU's user-mode emulation of a Haswell CPU (AVX2, no AVX-512): ggml loads the haswell
    module and the tiny model writes what it writes on this machine's own kernels."""
    import shutil

    pytest.importorskip("llama_cpp")
    if not cpu_variants():
        pytest.skip("this llama.cpp build has the CPU backend linked in (HF_RGDA_CPU_VARIANTS=0): no variants to pick")
    if shutil.which("qemu-x86_64") is None:
        pytest.skip("qemu-user is not installed (bash scripts/setup.sh --dev installs it)")
    _, native = _greedy([])
    log, haswell = _greedy(["qemu-x86_64", "-cpu", "Haswell-v4"])
    assert "libggml-cpu-haswell.so" in log and "AVX2 = 1" in haswell["system_info"]
    assert "AVX512" not in haswell["system_info"]
    assert haswell["text"] == native["text"] and haswell["text"].strip()


@pytest.mark.slow
@needs_tiny
def test_the_sampler_ends_an_answer_caught_in_a_loop() -> None:
    """The tiny model asked for "la la la ..." at temperature 0 loops inside its first sentence: the sampler ends the
    answer at the loop instead of at ``max_tokens``, and the caller reads it as a loop cut in its first item."""
    pytest.importorskip("llama_cpp")
    llm = load_llm(TINY, n_ctx=2048, kv_states_mb=0, lookup="off")
    messages = [{"role": "system", "content": "You write JSON."},
                {"role": "user", "content": "Write one sentence that repeats the words 'la la' one hundred times: "
                                            + "la " * 14}]
    comp = asyncio.run(llm.complete(messages, schema=sentences_schema(("Disease",), 1, "inline"),
                                    params={"temperature": 0.0, "max_tokens": 300, "seed": 0}))
    assert llm._llama.last_sampler.looped and comp.usage.completion_tokens < 100
    items, cut = complete_items(comp.text)
    assert items == [] and text_loops(cut) and "la la la la" in cut


@pytest.mark.slow
@needs_tiny
def test_outputs_follow_the_schema() -> None:
    pytest.importorskip("llama_cpp")
    llm = load_llm(TINY, n_ctx=2048)
    rejected = 0
    for seed in range(4):
        comp = asyncio.run(llm.complete(MESSAGES, schema=SCHEMA,
                                        params={"temperature": 1.0, "max_tokens": 400, "seed": seed}))
        # llama-cpp-python's own grammar lets raw control characters into a string with maxLength (JSON forbids
        # them); the engine's grammar does not
        assert _inside_schema(comp.text, strict=True) and comp.usage.completion_tokens > 0
        sampler = llm._llama.last_sampler
        assert sampler is not None and sampler.sampled >= comp.usage.completion_tokens
        rejected += sampler.rejected
    assert rejected > 0  # the tiny model strays from the schema: the whole-vocabulary fallback ran
    # free text and option probabilities take llama-cpp-python's own path
    free = asyncio.run(llm.complete(MESSAGES, schema=None, params={"temperature": 0.0, "max_tokens": 8, "seed": 0}))
    assert free.text
    probs = asyncio.run(llm.option_probs([{"role": "user", "content": "Answer yes or no: is asthma a disease?"}],
                                         ["yes", "no"], params={"seed": 0}))
    assert probs.method == "logprobs" and list(probs.probs) == ["yes", "no"] and probs.top
