"""OpenAI and OpenAI-compatible servers (vLLM, TGI, llama.cpp's server) through the official SDK.

Structured output is OpenAI's strict JSON-schema response format, on Chat Completions for every model (OpenAI
recommends the Responses API for its reasoning models, and Chat Completions serves them structured outputs too:
``docs/providers.md`` records the decision). What a request carries follows the model's
:class:`~hf_rgda.llm.capabilities.Capabilities` record: the reasoning models (gpt-5 family, o-series) get
``max_completion_tokens`` with room for hidden reasoning, a ``reasoning_effort``, no temperature and no logprobs
(:meth:`option_probs` samples); other names, OpenAI-compatible servers included, keep ``max_tokens``, the
stage temperature and logprobs. A rejection the record did not predict is adapted to once (see
:class:`~hf_rgda.llm.capabilities.Adaptive`). A server that rejects it (llama-cpp-python's
takes ``{"type": "json_object", "schema": ...}``) switches the backend to that form once, automatically; the switch
is live state, like the HTTP clients: it is not pickled, so it never changes an augmenter's ``datasets`` fingerprint.
The key is read from ``OPENAI_API_KEY`` at the first call; with a ``base_url`` and no key (a local server) a
placeholder is sent. Several ``base_url`` values are used round-robin.

Example:
    >>> llm = OpenAILLM("gpt-5.5", base_url=["http://10.0.0.5:8000/v1", "http://10.0.0.6:8000/v1"])
    >>> llm.identity()["backend"]
    'openai'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from .._exceptions import (
    AuthenticationError,
    BackendError,
    ConfigError,
    ConnectionError,
    RateLimitError,
    RefusalError,
    TimeoutError,
)
from .base import Completion, Usage
from .capabilities import Adaptive
from .remote import RemoteLLM, import_sdk, retry_after_of, status_error

__all__ = ["OpenAILLM"]

SCHEMA_MODES = ("json_schema", "json_object")


def _sdk() -> Any:
    return import_sdk("openai", "openai", "openai")


class OpenAILLM(Adaptive, RemoteLLM):
    """Chat completions with a strict JSON-schema response format.

    Args:
        model: model name, e.g. ``gpt-5.5``.
        schema_mode: ``"json_schema"`` (strict structured output) or ``"json_object"`` (llama.cpp's server form).
        capabilities: overrides of the model's :class:`~hf_rgda.llm.capabilities.Capabilities` record, e.g.
            ``{"reasoning_effort": "medium"}`` or ``{"logprobs": False}``.
        **options: see :class:`~hf_rgda.llm.remote.RemoteLLM` (``base_url``, ``timeout``, ``max_concurrency``,
            ``rpm``, ``tpm``, ``retry``, ``api_key``).
    """

    backend = "openai"
    key_env = ("OPENAI_API_KEY",)
    live_fields = (*RemoteLLM.live_fields, *Adaptive.ADAPTIVE_LIVE, "_json_object")

    def __init__(self, model: str, *, schema_mode: str = "json_schema", capabilities: Mapping[str, Any] | None = None,
                 **options: Any) -> None:
        if schema_mode not in SCHEMA_MODES:
            raise ConfigError(f"schema_mode={schema_mode!r}; choose one of {', '.join(SCHEMA_MODES)}")
        self.schema_mode = schema_mode
        super().__init__(model, **options)
        self._setup_capabilities(capabilities)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), **self._capability_identity()}

    def _init_live(self) -> None:
        super()._init_live()
        self._json_object = self.schema_mode == "json_object"  # True once a server rejected json_schema

    def _new_client(self, api_key: str | None, base_url: str | None, query: Mapping[str, str]) -> Any:
        return _sdk().AsyncOpenAI(api_key=api_key, base_url=base_url, default_query=dict(query) or None,
                                timeout=self.timeout, max_retries=0)

    async def _request(self, client: Any, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
                       params: Mapping[str, Any]) -> Completion:
        openai = _sdk()

        async def send() -> Any:
            with self._sdk_errors(passthrough=True):
                return await client.chat.completions.create(**self._kwargs(messages, params), **self._format(schema))

        def learn(err: Exception) -> bool:
            if not isinstance(err, openai.APIStatusError):
                return False
            if self._learn(_rejected_param(err), err.status_code, err.message):
                return True
            if self._json_object or schema is None or err.status_code == 429 or "json_schema" not in str(err.message):
                return False
            self._json_object = True  # the server speaks the older form
            return True

        with self._sdk_errors():
            resp = await self._adapting(send, learn)
        if not resp.choices:
            raise BackendError(f"{self.model}: the answer has no choices")
        choice = resp.choices[0]
        text = choice.message.content or ""
        refusal = getattr(choice.message, "refusal", None)
        if refusal or (not text and choice.finish_reason == "content_filter"):
            raise RefusalError(f"{self.model} refused: {refusal or choice.finish_reason}"[:500])
        return Completion(text=text, usage=_usage(resp.usage))

    async def _top_logprobs(self, client: Any, messages: list[dict[str, str]], params: Mapping[str, Any],
                            n: int) -> tuple[list[tuple[str, float]], Usage]:
        """``logprobs``/``top_logprobs`` of one output token at temperature 0 (llama.cpp's server returns them too).

        Raises:
            LogprobsUnavailable: the model rejected the request's logprobs (or another parameter of it): the
                caller samples instead.
        """
        openai = _sdk()

        async def send() -> Any:
            kwargs = self._kwargs(messages, {"temperature": 0.0, "max_tokens": 1, "seed": params.get("seed", 0)})
            kwargs[self.caps.token_param] = 1  # one token: no room for reasoning is asked for here
            with self._sdk_errors(passthrough=True):
                return await client.chat.completions.create(**kwargs, logprobs=True, top_logprobs=n)

        def learn(err: Exception) -> bool:
            return isinstance(err, openai.APIStatusError) and self._learn(_rejected_param(err), err.status_code,
                                                                           err.message)

        with self._sdk_errors():
            resp = await self._adapting(send, learn, logprobs=True)
        content = getattr(resp.choices[0].logprobs, "content", None) if resp.choices else None
        if not content:
            raise BackendError(f"{self.model}: the answer carries no logprobs (the server does not return them)")
        first = content[0]
        top = [(t.token, t.logprob) for t in first.top_logprobs or []]
        if first.token not in {token for token, _ in top}:
            top.append((first.token, first.logprob))
        return top, _usage(resp.usage)

    def _kwargs(self, messages: list[dict[str, str]], params: Mapping[str, Any]) -> dict[str, Any]:
        """The request's parameters as the model's capability record allows them."""
        caps = self.caps
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  caps.token_param: caps.cap(int(params.get("max_tokens", 768))),
                                  "seed": int(params.get("seed", 0))}
        kwargs.update(caps.sampling(params))
        if caps.reasoning_effort:
            kwargs["reasoning_effort"] = caps.reasoning_effort
        return kwargs

    @contextlib.contextmanager
    def _sdk_errors(self, *, passthrough: bool = False) -> Iterator[None]:
        """Map the SDK's errors to the library's (``passthrough``: let HTTP status errors through, for adapting)."""
        openai = _sdk()
        try:
            yield
        except openai.APIStatusError as err:
            if passthrough:
                raise
            raise status_error({401: AuthenticationError, 403: AuthenticationError, 429: RateLimitError},
                               err.status_code, f"{self.model}: HTTP {err.status_code}: {err.message}",
                               retry_after_of(err.response)) from None
        except openai.APITimeoutError:
            raise TimeoutError(f"{self.model}: no answer within {self.timeout} s") from None
        except openai.APIConnectionError as err:
            raise ConnectionError(f"{self.model}: connection failed: {err.message}") from None
        except openai.APIError as err:  # a response the SDK could not read
            raise BackendError(f"{self.model}: {type(err).__name__}: {err.message}"[:500]) from None

    def _format(self, schema: Mapping[str, Any] | None) -> dict[str, Any]:
        if schema is None:
            return {}
        if self._json_object:
            return {"response_format": {"type": "json_object", "schema": dict(schema)}}
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "output", "schema": dict(schema), "strict": True}}}


#: the parameters an ``unsupported_parameter``/``unsupported_value`` answer may name that the record can change
_ADAPTABLE = ("max_tokens", "temperature", "top_p", "logprobs", "top_logprobs", "reasoning_effort")


def _rejected_param(err: Any) -> str | None:
    """The parameter an HTTP 400 rejects as unsupported (OpenAI's ``code``/``param`` fields), if any."""
    if getattr(err, "status_code", 0) != 400:
        return None
    body = getattr(err, "body", None)
    detail = body.get("error", body) if isinstance(body, dict) else {}
    code, param = (detail.get("code"), detail.get("param")) if isinstance(detail, dict) else (None, None)
    if code in ("unsupported_parameter", "unsupported_value") and param in _ADAPTABLE:
        return str(param)
    return None


def _usage(u: Any) -> Usage:
    """Token counts of a chat completion's ``usage`` (absent on some compatible servers)."""
    if not u:
        return Usage()
    cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0
    return Usage(u.prompt_tokens or 0, u.completion_tokens or 0, cached)
