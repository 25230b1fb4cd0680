"""What a calibration will cost, found before it starts by rehearsing it: every scorer runs on every canary against
scripted answers (:class:`~hf_rgda.testing.FakeWorld`) under the real backend's identity, reading the response cache
but never writing it. The requests the rehearsal makes are those the real run will pay for (each answer the cache
holds is counted apart), with their prompts; the pipeline's one JSON re-ask, which a real model may need, is not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cache import ResponseCache
from ..llm.base import LLM, Completion, OptionProbs
from ..llm.fake import ScriptedLLM
from ..pricing import PriceTable
from ..testing import FakeWorld
from .build import Canary
from .judges import SCORERS, Judges, score_cell

__all__ = ["Estimate", "rehearse"]

CHARS_PER_TOKEN = 4  # the rough rule for English text; the estimate says it is one


@dataclass(frozen=True)
class Estimate:
    """The calls a calibration will make.

    Attributes:
        calls: requests the backend will be sent.
        cached: answers the response cache already holds (free).
        prompt_tokens: the prompts' tokens, estimated from their characters.
        completion_tokens: the answers' tokens at most (each call's cap; one token for an option question).
        usd: the dollars at most, from the price table; None for a backend without a price.
    """

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    usd: float | None

    def format(self) -> str:
        """One line for the terminal."""
        cost = "no price known for this backend" if self.usd is None else f"at most about ${self.usd:.4f}"
        return (f"estimate: {self.calls} calls to make ({self.cached} answers already in the cache), about "
                f"{self.prompt_tokens} prompt tokens and at most {self.completion_tokens} completion tokens; {cost}")


class _Rehearsal(LLM):
    """Scripted answers under ``real``'s identity and capabilities; never loads or calls ``real``."""

    def __init__(self, real: LLM) -> None:
        self.real = real
        self.world = ScriptedLLM(FakeWorld(), name="rehearsal", logprobs=real.has_logprobs, max_concurrency=64)
        self.max_concurrency = 64

    @property
    def has_logprobs(self) -> bool:  # type: ignore[override]
        return self.real.has_logprobs

    async def complete(self, messages: Any, *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]) -> Completion:
        return await self.world.complete(messages, schema=schema, params=params)

    async def option_probs(self, messages: Any, options: Sequence[str], *, params: Mapping[str, Any]) -> OptionProbs:
        return await self.world.option_probs(messages, options, params=params)

    def identity(self) -> dict[str, Any]:
        return self.real.identity()


class _Peek(ResponseCache):
    """A response cache read but never written."""

    def put(self, key: str, completion: Completion) -> None:
        pass


async def rehearse(llm: LLM, judges: Callable[[LLM, ResponseCache | None], Judges], scorers: Sequence[str],
                   canaries: Sequence[Canary], cache: ResponseCache | None,
                   prices: PriceTable | None = None) -> Estimate:
    """The :class:`Estimate` of scoring ``canaries`` with ``scorers`` on ``llm``.

    Args:
        judges: builds the judges of the run from a backend and a cache.
        cache: the run's response cache, or None.
    """
    fake = _Rehearsal(llm)
    dry = judges(fake, None if cache is None else _Peek(cache.path))
    cached = 0
    for name in scorers:
        cached += (await score_cell(SCORERS[name], dry, canaries))["cached_calls"]
    calls = fake.world.calls
    prompt = sum(len(m["content"]) for messages, _, _ in calls for m in messages) // CHARS_PER_TOKEN
    completion = sum(int(params.get("max_tokens", 1)) for _, _, params in calls)
    price = (prices or PriceTable.default()).lookup(llm.identity())
    usd = price.cost(prompt_tokens=prompt, completion_tokens=completion) if price.known else None
    return Estimate(len(calls), cached, prompt, completion, usd)
