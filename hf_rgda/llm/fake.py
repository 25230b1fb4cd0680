"""A scripted fake backend for unit tests, dry runs and throughput baselines.

Example:
    >>> import asyncio
    >>> fake = ScriptedLLM(lambda messages, schema, params: {"ok": True})
    >>> asyncio.run(fake.complete([{"role": "user", "content": "hi"}], schema=None, params={})).text
    '{"ok": true}'
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._exceptions import BackendError
from .base import LLM, Completion, Message, Usage

__all__ = ["ScriptedLLM"]

Handler = Callable[[Sequence[Message], Mapping[str, Any] | None, Mapping[str, Any]], Any]


class ScriptedLLM(LLM):
    """Answers every call with a scripted handler, or with the next item of a list.

    Args:
        handler: ``handler(messages, schema, params)`` returning a string (used as is), a JSON-able object
            (dumped), or an exception instance (raised); or an iterable of such answers, consumed in order.
        name: shown in the identity (so two scripts do not share cache entries).
        latency: seconds to sleep per call, to simulate a remote API.

    Attributes:
        calls: every ``(messages, schema, params)`` received, for assertions.
    """

    def __init__(self, handler: Handler | Iterable[Any], *, name: str = "scripted", latency: float = 0.0,
                 max_concurrency: int = 8) -> None:
        if callable(handler):
            self._handler: Handler = handler
        else:
            answers = list(handler)
            self._handler = lambda *_: answers.pop(0) if answers else BackendError("script exhausted")
        self.name = name
        self.latency = latency
        self.max_concurrency = max_concurrency
        self.calls: list[tuple[list[dict[str, str]], Any, dict[str, Any]]] = []

    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> Completion:
        self.calls.append(([dict(m) for m in messages], schema, dict(params)))
        if self.latency:
            await asyncio.sleep(self.latency)
        answer = self._handler(messages, schema, params)
        if isinstance(answer, BaseException):
            raise answer
        text = answer if isinstance(answer, str) else json.dumps(answer)
        prompt = sum(len(m["content"].split()) for m in messages)
        return Completion(text=text, usage=Usage(prompt, len(text.split())), seconds=self.latency)

    def identity(self) -> dict[str, Any]:
        return {"backend": "scripted", "name": self.name}

    def __getstate__(self) -> dict[str, Any]:
        # the recorded calls are observations, not configuration: they must not change the datasets hash
        return {k: v for k, v in self.__dict__.items() if k != "calls"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.calls = []
