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


def test_a_caller_waiting_for_the_model_goes_before_the_slots_next_decode() -> None:
    """The slots' thread takes the lock again right after letting it go; a caller that waits for it (an option
    question on the model's own context) gets it before the thread's next turn but one, not after the slots idle."""
    import threading
    import time

    from hf_rgda.llm.turns import Turns

    turns, turns_taken, stop = Turns(), [0], threading.Event()

    def slots_thread() -> None:
        while not stop.is_set():
            with turns.after_waiting():
                time.sleep(0.002)  # a decode
                turns_taken[0] += 1

    thread = threading.Thread(target=slots_thread)
    thread.start()
    try:
        time.sleep(0.02)
        before = turns_taken[0]
        with turns:
            during = turns_taken[0]
        assert before > 0 and during - before <= 2, (before, during)
    finally:
        stop.set()
        thread.join()


def test_parallel_option_is_checked_part_of_the_identity_and_one_by_default() -> None:
    assert LocalLLM("m.gguf").parallel == 1 and "parallel" not in LocalLLM("m.gguf").identity()
    llm = LocalLLM("m.gguf", parallel=4)
    assert llm.identity()["parallel"] == 4 and llm.max_concurrency == 4 and llm.asks_in_turn
    assert pickle.loads(pickle.dumps(llm)).max_concurrency == 4
    old = LocalLLM("m.gguf")
    state = old.__getstate__()
    for key in ("parallel", "max_concurrency"):
        state.pop(key, None)
    revived = LocalLLM.__new__(LocalLLM)
    revived.__setstate__(state)  # pickled before the option: one call at a time
    assert revived.parallel == 1 and revived.max_concurrency == 1
    # the slots guess tokens as the one-call engine does, by default
    assert llm.identity()["lookup"] == "auto" and LocalLLM("m.gguf", parallel=2, lookup="off").lookup == "off"
    for bad in ({"parallel": 0}, {"parallel": "4"}, {"parallel": 2, "plain_prefill": True}):
        with pytest.raises(ConfigError):
            LocalLLM("m.gguf", **bad)


def _conversation(llm: LocalLLM) -> list[object]:
    """Three turns of one conversation, a judge question after each: texts, token counts, option probabilities."""
    out: list[object] = []
    talk = [{"role": "system", "content": "You write biomedical sentences. " * 20}, *MESSAGES]
    for _ in range(3):
        c = asyncio.run(llm.complete(talk, schema=SCHEMA, params=GREEDY))
        o = asyncio.run(llm.option_probs([{"role": "user", "content": f"Is {c.text[:50]!r} about a disease? A or B."}],
                                         ["A", "B"], params={}))
        out.append((c.text, c.usage.prompt_tokens, c.usage.completion_tokens, o.probs["A"], o.probs["B"]))
        talk = [*talk, {"role": "assistant", "content": c.text}, {"role": "user", "content": "Two more, shorter."}]
    return out


@pytest.mark.slow
@needs_tiny
def test_calls_one_at_a_time_through_the_slots_get_the_one_call_engines_answers() -> None:
    """The prompt, stop rules, sampling chain and text are llama-cpp-python's own (its create_chat_completion run
    against a recorder): a first call, evaluated from scratch by either engine, gives the same tokens (the option
    questions go to the model's own context in both); later turns reuse the slots' cells (computed in other batch
    shapes than the one-call engine's, so only their form is compared)."""
    pytest.importorskip("llama_cpp")
    one = _conversation(load_llm(TINY, n_ctx=2048, kv_states_mb=0, lookup="off"))
    llm = load_llm(TINY, n_ctx=2048, parallel=3, lookup="off")
    try:
        turns = _conversation(llm)
        (text, prompt, completion, a, b), (text1, prompt1, completion1, a1, b1) = turns[0], one[0]
        assert (text, prompt, completion) == (text1, prompt1, completion1)
        assert a == pytest.approx(a1, abs=1e-6) and b == pytest.approx(b1, abs=1e-6)
        for text, prompt, completion, a, b in turns[1:]:
            assert text.startswith("{") and completion > 0 and 0 < a + b <= 1 + 1e-6
        stats = llm._slots.stats()
        assert set(stats["decodes_by_width"]) == {1} and stats["passes"] == sum(stats["decodes_by_width"].values())
        # the conversation's earlier turns were found in the slots, not evaluated again
        assert stats["prompt_evaluated"] < 400, stats
    finally:
        llm.close()


@pytest.mark.slow
@needs_tiny
def test_guesses_checked_beside_other_calls_keep_each_answer_and_its_cells() -> None:
    """Calls sent together with every guess checked: most guesses of answers that copy their prompt are kept, every
    answer follows its schema and is the answer its call gets alone without guesses (greedy; a near tie may fall
    the other way in another batch shape, so most, not all), and each sequence's cells hold exactly its tokens."""
    pytest.importorskip("llama_cpp")
    import llama_cpp

    ask = ('Repeat this JSON exactly: {"sentences": [{"text": "WORD narrows the airways of children.", '
           '"entities": []}]}')
    asks = [[{"role": "user", "content": ask.replace("WORD", word)}] for word in ("Asthma", "Bronchitis", "Croup")]
    alone = load_llm(TINY, n_ctx=1024, kv_states_mb=0, lookup="off")
    expected = [asyncio.run(alone.complete(m, schema=SCHEMA, params=GREEDY)).text for m in asks]
    llm = load_llm(TINY, n_ctx=1024, parallel=3, lookup="always")

    async def together() -> list[object]:
        return await asyncio.gather(*[llm.complete(m, schema=SCHEMA, params=GREEDY) for m in asks])

    try:
        texts = [c.text for c in asyncio.run(together())]  # type: ignore[attr-defined]
        assert all(_inside_schema(t) for t in texts), texts
        assert sum(t == e for t, e in zip(texts, expected)) >= 2, (texts, expected)
        slots = llm._slots
        d = slots.lookup
        assert d.checks > 3 and d.kept > d.drafted / 4 and slots.unified, d.stats()
        assert max(slots.widths) == 3  # the three calls shared decodes
        mem = llama_cpp.llama_get_memory(slots.ctx.ctx)
        for s in slots.slots:  # no guess that was not kept left a cell behind
            assert llama_cpp.llama_memory_seq_pos_max(mem, s.seq) == len(s.tokens) - 1
    finally:
        llm.close()


@pytest.mark.slow
@needs_tiny
@pytest.mark.parametrize("lookup", ["off", "always"])  # a KV stream per sequence; one unified cache
def test_a_prefix_copied_into_a_sequence_replaces_the_cells_it_held(lookup: str) -> None:
    """A seed's next call finds a longer prefix in another sequence than in its own: the copy replaces the cells its
    sequence held (in one unified cache a copy adds cells, and the old prompt's cells at the same positions would be
    attended to as well). Each sequence's serialised state then holds as many cells as it has tokens."""
    pytest.importorskip("llama_cpp")
    import llama_cpp

    from hf_rgda.llm.slots import Request

    llm = load_llm(TINY, n_ctx=1024, parallel=2, lookup=lookup)
    try:
        engine = llm._load().slots
        first, second = "You write about asthma. " * 30, "You write about diabetes in older adults. " * 25

        def ask(system: str, user: str, seed: str) -> Request:
            return engine.submit(Request(messages=[{"role": "system", "content": system},
                                                   {"role": "user", "content": user}],
                                         chat={"temperature": 0.0, "max_tokens": 6, "seed": 0}, affinity=seed))

        ask(first, "One word.", "a")
        ask(second, "One word.", "b")
        ask(second, "Two words.", "a")  # its sequence held the first prompt; the second's cells are in b's
        assert engine.copies >= 1
        sizes = {s.seq: llama_cpp.llama_state_seq_get_size(engine.ctx.ctx, s.seq) / len(s.tokens)
                 for s in engine.slots}
        assert max(sizes.values()) < 1.05 * min(sizes.values()), sizes
    finally:
        llm.close()


def _failing_sampler(llama: object, bad_seed: int) -> None:
    """``llama``'s samplers for calls seeded ``bad_seed`` raise when asked for a token."""
    original = llama._init_sampler  # type: ignore[attr-defined]

    class Broken:
        def sample(self, ctx: object, idx: int) -> int:
            raise RuntimeError("the sampler broke")

        def close(self) -> None:
            return None

    def init(**kwargs: object) -> object:
        return Broken() if llama._seed == bad_seed else original(**kwargs)  # type: ignore[attr-defined]

    llama._init_sampler = init  # type: ignore[attr-defined]


@pytest.mark.slow
@needs_tiny
def test_calls_sent_together_share_decodes_follow_their_schema_and_fail_alone() -> None:
    pytest.importorskip("llama_cpp")
    llm = load_llm(TINY, n_ctx=1024, parallel=3)
    _failing_sampler(llm._load(), bad_seed=99)
    params = {"temperature": 0.8, "max_tokens": 400}
    asks = [[{"role": "user", "content": f"Write two sentences about disease number {i} as JSON."}] for i in range(5)]

    async def together() -> list[object]:
        calls = [llm.complete(m, schema=SCHEMA, params={**params, "seed": i}) for i, m in enumerate(asks)]
        calls.append(llm.complete([{"role": "user", "content": "word " * 1100}], schema=SCHEMA, params=params))
        calls.append(llm.complete(asks[0], schema=SCHEMA, params={**params, "seed": 99}))
        calls.append(llm.option_probs(asks[0], ["A", "B"], params={}))
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        *answers, too_long, broken, option = asyncio.run(together())
        assert isinstance(too_long, BackendError) and "context window" in str(too_long)
        assert isinstance(broken, BackendError) and "sampler broke" in str(broken)
        # every answer the model finished follows the schema (the tiny model may loop, and a loop is cut short)
        finished = [a.text for a in answers if a.text.rstrip().endswith("}")]  # type: ignore[union-attr]
        assert len(finished) >= 2 and all(_inside_schema(t) for t in finished), [a.text for a in answers]  # type: ignore[union-attr]
        assert all(a.text.startswith("{") for a in answers)  # type: ignore[union-attr]
        assert 0 < sum(option.probs.values()) <= 1 + 1e-6  # type: ignore[union-attr]
        stats = llm._slots.stats()
        assert max(stats["decodes_by_width"]) == 3, stats  # three calls in one decode
        # the slots keep working after the failed calls
        again = asyncio.run(llm.complete(MESSAGES, schema=SCHEMA, params=GREEDY))
        assert again.text.startswith("{") and again.usage.completion_tokens > 0
    finally:
        llm.close()
    # closed: the next call loads the model again
    assert llm._llama is None
    assert asyncio.run(llm.option_probs(asks[0], ["A", "B"], params={})).probs
    llm.close()


@pytest.mark.slow
@needs_tiny
def test_closing_the_backend_fails_the_calls_under_way_and_frees_the_model() -> None:
    pytest.importorskip("llama_cpp")
    llm = load_llm(TINY, n_ctx=1024, parallel=2)
    asks = [[{"role": "user", "content": f"Write two sentences about disease number {i} as JSON."}] for i in range(4)]

    async def close_soon() -> list[object]:
        calls = [llm.complete(m, schema=SCHEMA, params={"temperature": 0.8, "max_tokens": 600, "seed": i})
                 for i, m in enumerate(asks)]

        async def closer() -> None:
            while llm._slots is None or not llm._slots.widths:  # the first decode carried the first calls
                await asyncio.sleep(0.01)
            await asyncio.to_thread(llm.close)

        return await asyncio.gather(*calls, closer(), return_exceptions=True)

    *answers, closed = asyncio.run(close_soon())
    assert closed is None
    failed = [a for a in answers if isinstance(a, BackendError)]
    assert failed and all("closed" in str(a) for a in failed), answers
    assert llm._llama is None and llm._slots is None
