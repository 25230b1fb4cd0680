"""A scripted fake backend for unit tests, dry runs and throughput baselines.

Example:
    >>> import asyncio
    >>> fake = ScriptedLLM(lambda messages, schema, params: {"ok": True})
    >>> asyncio.run(fake.complete([{"role": "user", "content": "hi"}], schema=None, params={})).text
    '{"ok": true}'
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._exceptions import BackendError
from .base import LLM, Completion, Message, OptionProbs, Usage
from .options import answer_schema, check_options

__all__ = ["ScriptedLLM"]

Handler = Callable[[Sequence[Message], Mapping[str, Any] | None, Mapping[str, Any]], Any]


class ScriptedLLM(LLM):
    """Answers every call with a scripted handler, or with the next item of a list.

    :meth:`option_probs` asks the handler too, with the schema of one answer (``answer_schema(options)``): with
    ``logprobs=True`` it must answer ``{token: probability}``, read like a backend's next-token top list
    (``method="scripted"``); with ``logprobs=False`` the fake behaves like a backend without logprobs and the
    sampling fallback asks it ``samples`` times through :meth:`complete` (answers like ``{"answer": "A"}``).

    Args:
        handler: ``handler(messages, schema, params)`` returning a string (used as is), a JSON-able object
            (dumped), or an exception instance (raised); or an iterable of such answers, consumed in order.
        name: shown in the identity (so two scripts do not share cache entries).
        latency: seconds to sleep per call, to simulate a remote API.
        logprobs: whether :meth:`option_probs` reads a scripted distribution (else: the sampling fallback).

    Attributes:
        calls: every ``(messages, schema, params)`` received, for assertions.
    """

    def __init__(self, handler: Handler | Iterable[Any], *, name: str = "scripted", latency: float = 0.0,
                 max_concurrency: int = 8, logprobs: bool = True) -> None:
        if callable(handler):
            self._handler: Handler = handler
        else:
            answers = list(handler)
            self._handler = lambda *_: answers.pop(0) if answers else BackendError("script exhausted")
        self.name = name
        self.latency = latency
        self.max_concurrency = max_concurrency
        self.logprobs = logprobs
        self.calls: list[tuple[list[dict[str, str]], Any, dict[str, Any]]] = []

    @property
    def has_logprobs(self) -> bool:  # type: ignore[override]
        return self.logprobs

    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> Completion:
        answer = await self._answer(messages, schema, params)
        text = answer if isinstance(answer, str) else json.dumps(answer)
        return Completion(text=text, usage=Usage(_words(messages), len(text.split())), seconds=self.latency)

    async def option_probs(self, messages: Sequence[Message], options: Sequence[str], *,
                           params: Mapping[str, Any]) -> OptionProbs:
        if not self.logprobs:
            return await super().option_probs(messages, options, params=params)
        opts = check_options(options)
        answer = await self._answer(messages, answer_schema(opts), params)
        if not isinstance(answer, Mapping) or not all(_is_prob(p) for p in answer.values()):
            raise BackendError(f"scripted answer to option_probs must be {{token: probability}}, got {answer!r}"[:500])
        top = [(str(token), math.log(p)) for token, p in answer.items() if p > 0]
        return OptionProbs.from_top(top, opts, method="scripted", usage=Usage(_words(messages), 1),
                                    seconds=self.latency)

    async def _answer(self, messages: Sequence[Message], schema: Mapping[str, Any] | None,
                      params: Mapping[str, Any]) -> Any:
        """Record the call, wait the latency, ask the handler; a scripted exception is raised."""
        self.calls.append(([dict(m) for m in messages], schema, dict(params)))
        if self.latency:
            await asyncio.sleep(self.latency)
        answer = self._handler(messages, schema, params)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def identity(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name, **({} if self.logprobs else {"logprobs": False})}

    def __getstate__(self) -> dict[str, Any]:
        # the recorded calls are observations, not configuration: they must not change the datasets hash
        return {k: v for k, v in self.__dict__.items() if k != "calls"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.calls = []


def _words(messages: Sequence[Message]) -> int:
    """The fake's prompt token count: words."""
    return sum(_count(m["content"]) for m in messages)


@functools.lru_cache(maxsize=1024)
def _count(text: str) -> int:
    """Words of one message (memoised: a run sends the same system prompt and judge context many times)."""
    return len(text.split())


def _is_prob(p: Any) -> bool:
    return isinstance(p, (int, float)) and not isinstance(p, bool) and 0 <= p <= 1
