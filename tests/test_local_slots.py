"""The local engine's parallel slots (hf_rgda.llm.slots): the option's checks and identity; on the tiny real model,
calls sent one at a time through the slots get the one-call engine's answers, calls sent together share decodes and
still follow their schema, and one call's failure is its own."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from hf_rgda import load_llm
from hf_rgda._exceptions import BackendError, ConfigError
from hf_rgda.llm.local import LocalLLM

from .test_local_engine import MESSAGES, SCHEMA, _inside_schema
from .test_local_integration import TINY, needs_tiny

GREEDY = {"temperature": 0.0, "max_tokens": 120, "seed": 1}


def test_parallel_option_is_checked_part_of_the_identity_and_one_by_default() -> None:
    assert LocalLLM("m.gguf").parallel == 1 and "parallel" not in LocalLLM("m.gguf").identity()
    llm = LocalLLM("m.gguf", parallel=4)
    assert llm.identity()["parallel"] == 4 and llm.max_concurrency == 4 and llm.asks_in_turn
    assert pickle.loads(pickle.dumps(llm)).max_concurrency == 4
    old = LocalLLM("m.gguf")
    state = old.__getstate__()
    for key in ("parallel", "max_concurrency", "_slots"):
        state.pop(key, None)
    revived = LocalLLM.__new__(LocalLLM)
    revived.__setstate__(state)  # pickled before the option: one call at a time
    assert revived.parallel == 1 and revived.max_concurrency == 1
    for bad in ({"parallel": 0}, {"parallel": "4"}, {"parallel": 2, "lookup": "auto"},
                {"parallel": 2, "plain_prefill": True}):
        with pytest.raises(ConfigError):
            LocalLLM("m.gguf", **bad)


def _conversation(llm: LocalLLM) -> list[object]:
    """Three turns of one conversation, a judge question after each: texts, option probabilities, token counts."""
    out: list[object] = []
    talk = [{"role": "system", "content": "You write biomedical sentences. " * 20}, *MESSAGES]
    for _ in range(3):
        c = asyncio.run(llm.complete(talk, schema=SCHEMA, params=GREEDY))
        o = asyncio.run(llm.option_probs([{"role": "user", "content": f"Is {c.text[:50]!r} about a disease? A or B."}],
                                         ["A", "B"], params={}))
        out += [c.text, (c.usage.prompt_tokens, c.usage.completion_tokens), sorted(o.probs)]
        talk = [*talk, {"role": "assistant", "content": c.text}, {"role": "user", "content": "Two more, shorter."}]
    return out


@pytest.mark.slow
@needs_tiny
def test_calls_one_at_a_time_through_the_slots_get_the_one_call_engines_answers() -> None:
    """The prompt, stop rules, sampling chain and text are llama-cpp-python's own (its create_chat_completion run
    against a recorder), and a sequence decoded alone computes what the one-call engine computes."""
    pytest.importorskip("llama_cpp")
    one = _conversation(load_llm(TINY, n_ctx=2048, kv_states_mb=0))
    llm = load_llm(TINY, n_ctx=2048, parallel=3)
    try:
        assert _conversation(llm) == one
        stats = llm._slots.stats()
        assert set(stats["decodes_by_width"]) == {1}
        # the conversation's earlier turns were found in the slots, not evaluated again
        assert stats["prompt_evaluated"] < 400, stats
    finally:
        llm._llama.close()


@pytest.mark.slow
@needs_tiny
def test_calls_sent_together_share_decodes_follow_their_schema_and_fail_alone() -> None:
    pytest.importorskip("llama_cpp")
    llm = load_llm(TINY, n_ctx=1024, parallel=3)
    params = {"temperature": 0.8, "max_tokens": 400}
    asks = [[{"role": "user", "content": f"Write two sentences about disease number {i} as JSON."}] for i in range(5)]

    async def together() -> list[object]:
        calls = [llm.complete(m, schema=SCHEMA, params={**params, "seed": i}) for i, m in enumerate(asks)]
        calls.append(llm.complete([{"role": "user", "content": "word " * 1100}], schema=SCHEMA, params=params))
        calls.append(llm.option_probs(asks[0], ["A", "B"], params={}))
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        *answers, too_long, option = asyncio.run(together())
        assert isinstance(too_long, BackendError) and "context window" in str(too_long)
        # every answer the model finished follows the schema (the tiny model may loop, and a loop is cut short)
        finished = [a.text for a in answers if a.text.rstrip().endswith("}")]  # type: ignore[union-attr]
        assert len(finished) >= 2 and all(_inside_schema(t) for t in finished), [a.text for a in answers]  # type: ignore[union-attr]
        assert all(a.text.startswith("{") for a in answers)  # type: ignore[union-attr]
        assert 0 < sum(option.probs.values()) <= 1 + 1e-6  # type: ignore[union-attr]
        widths = llm._slots.stats()["decodes_by_width"]
        assert widths.get(3, 0) > 20, widths  # three calls in one decode, most of the way
        # the slots keep working after the failed call: a greedy answer, the same from a fresh one-call engine
        again = asyncio.run(llm.complete(MESSAGES, schema=SCHEMA, params=GREEDY)).text
        fresh = asyncio.run(load_llm(TINY, n_ctx=1024, kv_states_mb=0).complete(MESSAGES, schema=SCHEMA,
                                                                                params=GREEDY)).text
        assert again == fresh
    finally:
        llm._llama.close()
    with pytest.raises(BackendError, match="closed"):
        asyncio.run(llm.complete(MESSAGES, schema=SCHEMA, params=GREEDY))
