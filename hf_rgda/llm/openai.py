"""OpenAI and OpenAI-compatible servers (vLLM, TGI, llama.cpp's server) through the official SDK.

The key is read from ``OPENAI_API_KEY`` at the first call, never at import or construction. With a
``base_url`` and no key (a local server), a placeholder key is sent.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import AuthenticationError, BackendError, RateLimitError, TimeoutError
from .base import LLM, Completion, Message, Usage

__all__ = ["OpenAILLM"]


class OpenAILLM(LLM):
    """Chat completions with a strict JSON-schema response format.

    Args:
        model: model name, e.g. ``gpt-4o-mini``.
        base_url: API root of an OpenAI-compatible server, e.g. ``http://127.0.0.1:8000/v1``.
        timeout: seconds per request.
        max_retries: SDK-level retries on connection errors, 429 and 5xx.
        max_concurrency: calls in flight at once.
        schema_mode: ``"json_schema"`` (OpenAI strict structured output) or ``"json_object"`` (a JSON object
            plus ``schema``, as llama-cpp-python's server takes it). A server that rejects ``json_schema``
            switches the backend to ``json_object`` once, automatically.
    """

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = 120.0, max_retries: int = 2,
                 max_concurrency: int = 8, schema_mode: str = "json_schema") -> None:
        self.model = model
        self.schema_mode = schema_mode
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self._clients: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()  # an httpx client is bound to the loop that made it
        if loop not in self._clients:
            try:
                import openai
            except ImportError as err:
                raise ImportError("the openai backend needs the openai SDK: pip install 'hf_rgda[openai]'") from err
            key = os.environ.get("OPENAI_API_KEY") or ("not-needed" if self.base_url else None)
            if key is None:
                raise AuthenticationError("OPENAI_API_KEY is not set (or pass base_url for a local server)")
            self._clients[loop] = openai.AsyncOpenAI(
                api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
            )
        return self._clients[loop]

    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> Completion:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": float(params.get("temperature", 1.0)),
            "max_tokens": int(params.get("max_tokens", 768)),
            "seed": int(params.get("seed", 0)),
        }
        start = time.perf_counter()
        try:
            try:
                resp = await self._client().chat.completions.create(**kwargs, **self._format(schema))
            except openai.APIStatusError as err:
                if self.schema_mode != "json_schema" or "json_schema" not in str(err.message) or schema is None:
                    raise
                self.schema_mode = "json_object"  # the server speaks the older form
                resp = await self._client().chat.completions.create(**kwargs, **self._format(schema))
        except openai.AuthenticationError as err:
            raise AuthenticationError(f"{self.model}: authentication failed (HTTP {err.status_code})") from None
        except openai.RateLimitError as err:
            raise RateLimitError(f"{self.model}: rate limited (HTTP {err.status_code})") from None
        except openai.APITimeoutError:
            raise TimeoutError(f"{self.model}: no answer within {self.timeout} s") from None
        except openai.APIError as err:
            raise BackendError(f"{self.model}: {type(err).__name__}: {getattr(err, 'message', '')}"[:500]) from None
        choice = resp.choices[0]
        text = choice.message.content or ""
        if not text and getattr(choice.message, "refusal", None):
            raise BackendError(f"{self.model} refused: {choice.message.refusal}"[:500])
        u = resp.usage
        cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0 if u else 0
        usage = Usage(u.prompt_tokens, u.completion_tokens, cached) if u else Usage()
        return Completion(text=text, usage=usage, seconds=time.perf_counter() - start)

    def _format(self, schema: Mapping[str, Any] | None) -> dict[str, Any]:
        if schema is None:
            return {}
        if self.schema_mode == "json_object":
            return {"response_format": {"type": "json_object", "schema": dict(schema)}}
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "output", "schema": dict(schema), "strict": True}}}

    def identity(self) -> dict[str, Any]:
        return {"backend": "openai", "model": self.model, "base_url": self.base_url}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_clients"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clients = weakref.WeakKeyDictionary()
