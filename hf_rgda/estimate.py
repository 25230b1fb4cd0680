"""What a run will cost, found before it starts by rehearsing it: the run's own code runs against scripted answers
(:class:`~hf_rgda.testing.FakeWorld`) under the real backend's identity and capabilities, reading the response cache
but never writing it. The requests the rehearsal makes are those the real run will send (each answer the cache holds
is counted apart), with their prompts; where the scripted answers end a loop (a judge's refine rounds, a repair), a
real model may take more rounds, and the pipeline's one JSON re-ask is not counted.

One estimator for both commands: ``hf-rgda calibrate`` (:func:`hf_rgda.canaries.estimate.rehearse`) and
``hf-rgda augment --dry-run`` (:func:`rehearse_run`).
"""

from __future__ import annotations

import copy
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cache import ResponseCache
from .llm.base import LLM, Completion, OptionProbs
from .llm.fake import ScriptedLLM
from .pricing import PriceTable
from .testing import FakeWorld

__all__ = ["CHARS_PER_TOKEN", "Estimate", "PeekCache", "Rehearsal", "estimate_of", "rehearse_run"]

CHARS_PER_TOKEN = 4  # the rough rule for English text; the estimate says it is one


@dataclass(frozen=True)
class Estimate:
    """The calls a run will make.

    Attributes:
        calls: requests the backend will be sent.
        cached: answers the response cache already holds (free).
        prompt_tokens: the prompts' tokens, estimated from their characters.
        completion_tokens: the answers' tokens at most (each call's cap; one token for an option question).
        usd: the dollars at most, from the price table; None for a backend without a price ("unpriced", not $0).
    """

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    usd: float | None

    def format(self) -> str:
        """One line for the terminal."""
        cost = ("unpriced (no price known for this backend; --prices FILE sets one)" if self.usd is None
                else f"at most about ${self.usd:.4f}")
        return (f"estimate: {self.calls} calls to make ({self.cached} answers already in the cache), about "
                f"{self.prompt_tokens} prompt tokens and at most {self.completion_tokens} completion tokens; {cost}")


class Rehearsal(LLM):
    """Scripted answers under ``real``'s identity and capabilities; never loads or calls ``real``."""

    def __init__(self, real: LLM) -> None:
        self.real = real
        self.world = ScriptedLLM(FakeWorld(), name="rehearsal", logprobs=real.has_logprobs, max_concurrency=64)
        self.max_concurrency = 64
        self.representation, self.max_repairs = real.representation, real.max_repairs

    @property
    def has_logprobs(self) -> bool:  # type: ignore[override]
        return self.real.has_logprobs

    @property
    def asks_in_turn(self) -> bool:
        return self.real.asks_in_turn

    @property
    def reuses_prefix(self) -> bool:  # type: ignore[override]
        return self.real.reuses_prefix

    async def complete(self, messages: Any, *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]) -> Completion:
        return await self.world.complete(messages, schema=schema, params=params)

    async def option_probs(self, messages: Any, options: Sequence[str], *, params: Mapping[str, Any]) -> OptionProbs:
        return await self.world.option_probs(messages, options, params=params)

    def identity(self) -> dict[str, Any]:
        return self.real.identity()


class PeekCache(ResponseCache):
    """A response cache read but never written: opened read-only, and where its file does not exist, not at all (a
    dry run creates nothing)."""

    def _open(self) -> sqlite3.Connection:
        # without a write-ahead log beside it every answer is in the file: read it as immutable, which creates no
        # -wal and -shm files (a read-only connection to a WAL database does, and cannot remove them)
        wal = self.path.with_name(self.path.name + "-wal").exists()
        return sqlite3.connect(f"{self.path.resolve().as_uri()}?{'mode=ro' if wal else 'immutable=1'}", uri=True,
                               timeout=60, check_same_thread=False)

    def check(self) -> None:
        """Read the cache (when its file exists), so that a file that is no cache stops the dry run as it would the
        run (:class:`~hf_rgda.ConfigError`), and close it again."""
        if self.path.exists():
            super().check(write=False)

    def get(self, key: str) -> Completion | None:
        return super().get(key) if self.path.is_file() else None

    def put(self, key: str, completion: Completion) -> None:
        pass


def estimate_of(fakes: Sequence[Rehearsal], cached: int, prices: PriceTable | None = None) -> Estimate:
    """The :class:`Estimate` of the calls the rehearsals ``fakes`` were sent (``cached``: those the cache held);
    each backend priced by its own entry."""
    table = prices or PriceTable.default()
    calls = prompt = completion = 0
    usd: float | None = 0.0
    for fake in fakes:
        sent = fake.world.calls
        p = sum(len(m["content"]) for messages, _, _ in sent for m in messages) // CHARS_PER_TOKEN
        c = sum(int(params.get("max_tokens", 1)) for _, _, params in sent)
        price = table.lookup(fake.identity())
        if sent and not price.known:
            usd = None
        elif usd is not None:
            usd += price.cost(prompt_tokens=p, completion_tokens=c)
        calls, prompt, completion = calls + len(sent), prompt + p, completion + c
    return Estimate(calls, cached, prompt, completion, usd)


def rehearse_run(augmenter: Any, seeds: Any, *, batch_size: int = 8, prices: PriceTable | None = None,
                 cache: bool | str | os.PathLike[str] | None = None) -> Estimate:
    """The :class:`Estimate` of ``seeds.map(augmenter, batched=True, batch_size=batch_size)``: the augmenter's
    pipeline run batch by batch on rehearsals of its backends, the response cache read only; nothing is written
    (no ``datasets`` cache, no failure ledger, no response cache file) and ``augmenter`` is left as it was (its
    ledger of accepted rows included).

    Args:
        cache: the response cache to read, as :class:`~hf_rgda.RGDAAugmenter`'s ``cache`` (True: the default
            one; False: none); None: the augmenter's own.

    Raises:
        ConfigError: the cache file exists and is no response cache.
    """
    from .calls import run_sync
    from .checking.variety import Ledger
    from .records import SeedTrace
    from .summary import RunSummary

    dry = copy.copy(augmenter)
    dry.llm = Rehearsal(augmenter.llm)
    dry.debate_llms = [Rehearsal(x) for x in augmenter.debate_llms]
    dry._ledger_of_rows = Ledger(augmenter.config.max_entity_repeats)  # the rehearsal's rows are no real run's
    dry._memo = {}  # nor its readings
    path = augmenter.cache_path if cache is None else "" if cache is False else "default" if cache is True else cache
    peek = PeekCache(None if path == "default" else path) if path else None
    if peek is not None:
        peek.check()
    summary = RunSummary()
    try:
        for start in range(0, len(seeds), batch_size):
            batch = seeds[start:start + batch_size]
            rows = dry._seeds(batch, list(range(start, start + len(batch[augmenter.tokens_column]))))
            for r in run_sync(dry._pipeline(cache=peek, progress=False).run(rows)):
                summary.add(SeedTrace.of(r, dry.config.method))
    finally:
        if peek is not None:
            peek.close()
    return estimate_of([dry.llm, *dry.debate_llms], summary.to_dict()["cached_calls"], prices)
