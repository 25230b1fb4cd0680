"""Entity verification: the cached option-probability call of the call seam."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hf_rgda import AugmentConfig, ScriptedLLM
from hf_rgda.cache import ResponseCache
from hf_rgda.calls import Caller, derive_seed
from hf_rgda.records import Seed, SeedResult

SEED = Seed("s0", ("Gout", "flares", "are", "painful", "."), ("B-Disease", "O", "O", "O", "O"))
QUESTION = [{"role": "system", "content": "pick a letter"}, {"role": "user", "content": "Gout is: A) B) C)"}]


def test_choose_is_cached_counted_and_seeded(tmp_path: Path) -> None:
    """Same derived seed and accounting as any call; through the response cache, so a rerun pays nothing."""
    cfg = AugmentConfig(seed=7)
    llm = ScriptedLLM(lambda m, s, p: {"A": 0.8, "B": 0.2})
    cache = ResponseCache(tmp_path / "r.sqlite3")

    def ask(rnd: int | None) -> tuple[SeedResult, float]:
        r = SeedResult(SEED)
        got = asyncio.run(Caller(cfg, llm, cache).choose(r, "entity_verify", QUESTION, ("A", "B", "C"), rnd=rnd))
        return r, got.probs["A"]

    first, p = ask(2)
    assert round(p, 3) == 0.8 and len(llm.calls) == 1
    assert llm.calls[0][2] == {"seed": derive_seed(7, "s0", "entity_verify", "")}
    acc = first.accounting
    assert (acc.calls, acc.cached_calls, acc.stage_calls) == (1, 0, {"entity_verify": 1})
    assert acc.stage_usage["entity_verify/round2"]["calls"] == 1 and acc.prompt_tokens > 0
    again, p_again = ask(2)
    assert len(llm.calls) == 1 and p_again == p  # served from the cache
    assert (again.accounting.calls, again.accounting.cached_calls, again.accounting.prompt_tokens) == (1, 1, 0)


def test_choose_without_cache_asks_every_time() -> None:
    llm = ScriptedLLM(lambda m, s, p: {"B": 1.0})
    caller, r = Caller(AugmentConfig(), llm), SeedResult(SEED)
    for _ in range(2):
        got = asyncio.run(caller.choose(r, "entity_verify", QUESTION, ("A", "B")))
        assert got.probs["B"] == 1.0 and not got.cached
    assert len(llm.calls) == 2 and r.accounting.calls == 2 and r.accounting.llm_seconds > 0
