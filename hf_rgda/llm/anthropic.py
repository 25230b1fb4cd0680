"""Anthropic's Messages API through the official SDK.

Structured output is tool use: one tool whose ``input_schema`` is the stage's JSON schema, forced with
``tool_choice``; the tool's input is the answer. The static system prompt carries ``cache_control`` so that
repeated stages read it from Anthropic's prompt cache (reported as cached tokens). The key is read from
``ANTHROPIC_API_KEY`` at the first call.

What a request carries follows the model's :class:`~hf_rgda.llm.capabilities.Capabilities` record: the models
after Claude Opus 4.6 take no ``temperature``/``top_p``/``top_k`` (it is not sent), and the ones that think by
default (the Claude 5 generation) get ``thinking: {"type": "disabled"}``, since forced tool use is refused while
thinking is on. A rejection the record did not predict is adapted to once (see
:class:`~hf_rgda.llm.capabilities.Adaptive`).

Example:
    >>> AnthropicLLM("claude-sonnet-5-5").identity()
    {'backend': 'anthropic', 'model': 'claude-sonnet-5-5'}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .._exceptions import (
    AuthenticationError,
    BackendError,
    ConnectionError,
    RateLimitError,
    RefusalError,
    ServerError,
    TimeoutError,
)
from .base import Completion, Usage
from .capabilities import Adaptive
from .remote import RemoteLLM, import_sdk, retry_after_of, status_error

__all__ = ["AnthropicLLM"]

_TOOL = "write_answer"


def _sdk() -> Any:
    return import_sdk("anthropic", "anthropic", "anthropic")


class AnthropicLLM(Adaptive, RemoteLLM):
    """Claude models with tool-use structured output and prompt caching of the system prompt.

    Args:
        model: e.g. ``claude-sonnet-5-5``.
        cache_system: mark the system prompt ``cache_control: ephemeral``.
        send_temperature: send the stage's temperature (as a raw body field: the SDK no longer types it). The
            paper's Claude 3.7 Sonnet takes it; set False for models that reject sampling parameters (they then
            sample at the API default, 1.0, and the judges lose their low temperature). The model's capability
            record decides first: current models never get it.
        capabilities: overrides of the model's :class:`~hf_rgda.llm.capabilities.Capabilities` record.
        **options: see :class:`~hf_rgda.llm.remote.RemoteLLM`.
    """

    backend = "anthropic"
    key_env = ("ANTHROPIC_API_KEY",)
    keyless_with_base_url = False
    has_logprobs = False  # the Messages API returns none: option_probs samples (hf_rgda.llm.base.sample_option_probs)
    live_fields = (*RemoteLLM.live_fields, *Adaptive.ADAPTIVE_LIVE)

    def __init__(self, model: str, *, cache_system: bool = True, send_temperature: bool = True,
                 capabilities: Mapping[str, Any] | None = None, **options: Any) -> None:
        self.cache_system = cache_system
        self.send_temperature = send_temperature
        super().__init__(model, **options)
        self._setup_capabilities(capabilities)

    def _new_client(self, api_key: str | None, base_url: str | None, query: Mapping[str, str]) -> Any:
        return _sdk().AsyncAnthropic(api_key=api_key, base_url=base_url, default_query=dict(query) or None,
                                timeout=self.timeout, max_retries=0)

    def _body(self, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
              params: Mapping[str, Any]) -> dict[str, Any]:
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        caps = self.caps
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": caps.cap(int(params.get("max_tokens", 768))),
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"],
        }
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if self.cache_system:
                block["cache_control"] = {"type": "ephemeral"}
            body["system"] = [block]
        extra: dict[str, Any] = caps.sampling(params)  # raw body fields: the SDK no longer types them
        if not self.send_temperature:
            extra.pop("temperature", None)
        elif "temperature" in extra:  # Anthropic's range is 0..1
            extra["temperature"] = min(1.0, extra["temperature"])
        if extra:
            body["extra_body"] = extra
        if caps.thinking_off:
            body["thinking"] = {"type": "disabled"}
        if schema is not None:
            body["tools"] = [{"name": _TOOL, "description": "Write the answer in the required structure.",
                              "input_schema": dict(schema)}]
            body["tool_choice"] = {"type": "tool", "name": _TOOL}
        return body

    async def _request(self, client: Any, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
                       params: Mapping[str, Any]) -> Completion:
        anthropic = _sdk()

        def learn(err: Exception) -> bool:
            return isinstance(err, anthropic.APIStatusError) and self._learn(
                _rejected_param(err.status_code, str(err.message)), err.status_code, err.message)

        try:
            resp = await self._adapting(lambda: client.messages.create(**self._body(messages, schema, params)), learn)
        except anthropic.APIStatusError as err:
            raise status_error({401: AuthenticationError, 403: AuthenticationError, 429: RateLimitError,
                                529: ServerError}, err.status_code, f"{self.model}: HTTP {err.status_code}: {err.message}",
                               retry_after_of(err.response)) from None
        except anthropic.APITimeoutError:
            raise TimeoutError(f"{self.model}: no answer within {self.timeout} s") from None
        except anthropic.APIConnectionError as err:
            raise ConnectionError(f"{self.model}: connection failed: {err.message}") from None
        except anthropic.APIError as err:
            raise BackendError(f"{self.model}: {type(err).__name__}: {err.message}"[:500]) from None
        if resp.stop_reason == "refusal":
            raise RefusalError(f"{self.model} refused to answer")
        text = self._text(resp.content, structured=schema is not None)
        u = resp.usage
        cached = (getattr(u, "cache_read_input_tokens", 0) or 0)
        written = (getattr(u, "cache_creation_input_tokens", 0) or 0)
        # Anthropic counts cache reads and writes outside input_tokens; Usage.prompt_tokens is the whole prompt
        return Completion(text=text, usage=Usage(u.input_tokens + cached + written, u.output_tokens, cached))

    def _text(self, content: list[Any], *, structured: bool) -> str:
        if structured:
            for block in content:
                if block.type == "tool_use" and block.name == _TOOL:
                    return json.dumps(block.input, ensure_ascii=False)
        texts = [block.text for block in content if block.type == "text"]
        if structured and not texts:
            raise BackendError(f"{self.model}: the answer has neither the tool call nor text")
        return "".join(texts)  # a structured call answered in text: the pipeline parses or re-asks

    def identity(self) -> dict[str, Any]:
        extra = {"cache_system": False} if not self.cache_system else {}
        if not self.send_temperature:
            extra["send_temperature"] = False
        return {**super().identity(), **extra, **self._capability_identity()}


_DEPRECATED = re.compile(r"`(temperature|top_p|top_k)` is deprecated")


def _rejected_param(status: int, message: str) -> str | None:
    """The parameter an HTTP 400 ``invalid_request_error`` rejects, by its message (Anthropic sends no ``param``)."""
    if status != 400:
        return None
    if m := _DEPRECATED.search(message):
        return m.group(1)
    if "cannot both be specified" in message:
        return "top_p"
    if "Thinking may not be enabled when tool_choice forces tool use" in message:
        return "thinking"
    return None
