"""Google Gemini through the official ``google-genai`` SDK.

Structured output is Gemini's response schema: ``response_mime_type="application/json"`` with the stage's JSON
schema as ``response_json_schema``. The system prompt goes in ``system_instruction``. The key is read from
``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``) at the first call.

What a request carries follows the model's :class:`~hf_rgda.llm.capabilities.Capabilities` record: Gemini 3 and
later get a ``thinking_level`` (not the older ``thinking_budget``), Google's recommended default temperature (the
stage temperature is not sent) and room in ``max_output_tokens`` for thinking; models whose API answers
"Logprobs is not enabled" read option probabilities by sampling. A rejection the record did not predict is
adapted to once (see :class:`~hf_rgda.llm.capabilities.Adaptive`).

Example:
    >>> GeminiLLM("gemini-3.8-flash").identity()
    {'backend': 'gemini', 'model': 'gemini-3.8-flash'}
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from .._exceptions import AuthenticationError, BackendError, ConnectionError, RateLimitError, RefusalError, TimeoutError
from .base import Completion, Usage
from .capabilities import Adaptive
from .remote import RemoteLLM, retry_after_of, status_error

__all__ = ["GeminiLLM"]

_REFUSALS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}


def _sdk() -> tuple[Any, Any, Any]:
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError as err:
        raise ImportError("the gemini backend needs google-genai: pip install 'hf_rgda[gemini]'") from err
    return genai, types, errors


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeout errors, connection errors) of the HTTP stacks the SDK may use."""
    import importlib

    timeouts: list[type[BaseException]] = [asyncio.TimeoutError]
    drops: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):  # the SDK uses whichever is installed
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(mod.TimeoutException)
        drops.append(mod.TransportError)
    try:
        import aiohttp

        timeouts.append(aiohttp.ServerTimeoutError)
        drops.append(aiohttp.ClientError)
    except ImportError:
        pass
    return tuple(timeouts), tuple(drops)


class GeminiLLM(Adaptive, RemoteLLM):
    """Gemini models with a provider-enforced response schema.

    Args:
        model: e.g. ``gemini-3.8-flash``.
        capabilities: overrides of the model's :class:`~hf_rgda.llm.capabilities.Capabilities` record, e.g.
            ``{"reasoning_effort": "minimal"}`` (a ``thinking_level``).
        **options: see :class:`~hf_rgda.llm.remote.RemoteLLM`.
    """

    backend = "gemini"
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    keyless_with_base_url = False
    no_query = ("the google-genai SDK's HttpOptions take no query parameters, so they would never be sent; give the "
                "key as api_key or in GEMINI_API_KEY instead")
    live_fields = (*RemoteLLM.live_fields, *Adaptive.ADAPTIVE_LIVE)

    def __init__(self, model: str, *, capabilities: Mapping[str, Any] | None = None, **options: Any) -> None:
        super().__init__(model, **options)
        self._setup_capabilities(capabilities)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), **self._capability_identity()}

    def _new_client(self, api_key: str | None, base_url: str | None, query: Mapping[str, str]) -> Any:
        genai, types, _ = _sdk()
        http = types.HttpOptions(timeout=int(self.timeout * 1000), retry_options=types.HttpRetryOptions(attempts=1),
                                 **({"base_url": base_url} if base_url else {}))  # one retry policy: ours
        return genai.Client(api_key=api_key, http_options=http)

    async def _close_client(self, client: Any) -> None:
        await client.aio.aclose()

    def _config(self, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
                params: Mapping[str, Any]) -> Any:
        _, types, _ = _sdk()
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        caps = self.caps
        kw: dict[str, Any] = {"max_output_tokens": caps.cap(int(params.get("max_tokens", 768))),
                              "seed": int(params.get("seed", 0))}
        kw.update(caps.sampling(params))
        if caps.reasoning_effort:
            kw["thinking_config"] = types.ThinkingConfig(thinking_level=caps.reasoning_effort.upper())
        if system:
            kw["system_instruction"] = system
        if schema is not None:
            kw["response_mime_type"] = "application/json"
            kw["response_json_schema"] = dict(schema)
        return types.GenerateContentConfig(**kw)

    @staticmethod
    def _contents(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
        role = {"user": "user", "assistant": "model"}
        return [{"role": role[m["role"]], "parts": [{"text": m["content"]}]} for m in messages if m["role"] != "system"]

    async def _request(self, client: Any, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
                       params: Mapping[str, Any]) -> Completion:
        return self._completion(await self._generate(client, messages, lambda: self._config(messages, schema, params)))

    async def _top_logprobs(self, client: Any, messages: list[dict[str, str]], params: Mapping[str, Any],
                            n: int) -> tuple[list[tuple[str, float]], Usage]:
        """``response_logprobs`` with ``logprobs=n`` of one output token at temperature 0.

        Models without logprobs answer HTTP 400 ("Logprobs is not enabled for models/..."): the record learns it and
        :class:`~hf_rgda.llm.capabilities.LogprobsUnavailable` sends the caller to sampling.
        """
        single = {"temperature": 0.0, "max_tokens": 1, "seed": params.get("seed", 0)}
        update = {"response_logprobs": True, "logprobs": n, "max_output_tokens": 1}
        resp = await self._generate(client, messages,
                                    lambda: self._config(messages, None, single).model_copy(update=update), logprobs=True)
        usage = self._completion(resp).usage
        result = getattr(resp.candidates[0], "logprobs_result", None)
        steps = getattr(result, "top_candidates", None) or []
        chosen = getattr(result, "chosen_candidates", None) or []
        if not steps and not chosen:
            raise BackendError(f"{self.model}: the answer carries no logprobs (finish reason "
                               f"{_name(getattr(resp.candidates[0], 'finish_reason', None))})")
        top = [(c.token or "", c.log_probability) for c in (steps[0].candidates or [])] if steps else []
        if chosen and chosen[0].token not in {token for token, _ in top}:
            top.append((chosen[0].token or "", chosen[0].log_probability))
        return top, usage

    async def _generate(self, client: Any, messages: list[dict[str, str]], config: Callable[[], Any], *,
                        logprobs: bool = False) -> Any:
        """A ``generate_content`` call with the configuration ``config()`` makes from the record in force, asked again
        after a rejection the record adapts to (:meth:`~hf_rgda.llm.capabilities.Adaptive._adapting`), the SDK's
        errors mapped to the library's."""
        _, _, errors = _sdk()
        timeouts, drops = _transport_errors()

        def learn(err: Exception) -> bool:
            if not isinstance(err, errors.APIError):
                return False
            status = int(getattr(err, "code", 0) or 0)
            return self._learn(_rejected_param(status, str(err.message or "")), status, err.message)

        try:
            return await self._adapting(lambda: client.aio.models.generate_content(
                model=self.model, contents=self._contents(messages), config=config()), learn, logprobs=logprobs)
        except errors.APIError as err:
            status = int(getattr(err, "code", 0) or 0)
            raise status_error({400: _bad_key_or_request(err), 401: AuthenticationError, 403: AuthenticationError,
                                429: RateLimitError}, status, f"{self.model}: HTTP {status}: {err.message or err.status}",
                               retry_after_of(getattr(err, "response", None))) from None
        except timeouts:
            raise TimeoutError(f"{self.model}: no answer within {self.timeout} s") from None
        except drops as err:
            raise ConnectionError(f"{self.model}: connection failed: {type(err).__name__}") from None

    def _completion(self, resp: Any) -> Completion:
        feedback = getattr(resp, "prompt_feedback", None)
        if feedback is not None and getattr(feedback, "block_reason", None):
            raise RefusalError(f"{self.model} refused: prompt blocked ({_name(feedback.block_reason)})")
        if not resp.candidates:
            raise BackendError(f"{self.model}: the answer has no candidates")
        cand = resp.candidates[0]
        reason = _name(getattr(cand, "finish_reason", None))
        parts = getattr(getattr(cand, "content", None), "parts", None) or []
        text = "".join(p.text for p in parts if getattr(p, "text", None))
        if reason in _REFUSALS and not text:
            raise RefusalError(f"{self.model} refused: finish reason {reason}")
        u = resp.usage_metadata
        usage = Usage(getattr(u, "prompt_token_count", 0) or 0, getattr(u, "candidates_token_count", 0) or 0,
                      getattr(u, "cached_content_token_count", 0) or 0) if u else Usage()
        return Completion(text=text, usage=usage)


def _rejected_param(status: int, message: str) -> str | None:
    """The parameter a Gemini HTTP 400 rejects, by its message (the API names no ``param`` field)."""
    if status != 400:
        return None
    if "Logprobs is not enabled" in message or "Logprobs is not supported" in message:
        return "logprobs"
    if "thinking_level is not supported" in message or "thinking level is not supported" in message.lower():
        return "thinking_level"
    return None


def _name(value: Any) -> str:
    return str(getattr(value, "name", value) or "")


def _bad_key_or_request(err: Any) -> type[BackendError]:
    """Gemini answers a bad key with HTTP 400 ``API_KEY_INVALID``; other 400s are plain request errors."""
    text = str(getattr(err, "details", "")) + str(err.message)
    return AuthenticationError if "API_KEY_INVALID" in text or "API key not valid" in text else BackendError
