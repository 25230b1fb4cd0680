"""What each provider's model families accept, as data: one :class:`Capabilities` record per family.

A remote backend picks its record from the model name (:func:`capabilities_for`) and builds every request from
it: the name of the token cap, whether the stage temperature is sent, whether next-token logprobs exist, the
reasoning effort to ask for, and the extra room the cap leaves for hidden reasoning tokens. The table is in
``docs/providers.md`` with its sources. A name no row matches gets the provider's default record, which is
today's request shape (``max_tokens``, the stage temperature, logprobs): what OpenAI-compatible servers
(vLLM, TGI, llama.cpp's) and older models take.

A user overrides any field through ``llm_options={"capabilities": {...}}``; the override is part of the backend's
identity (and so of cache keys and fingerprints). A rejection the record did not predict (an HTTP 400 naming an
unsupported parameter) is handled once by :class:`Adaptive`: the parameter is dropped or renamed for the rest of
the run, logged once and listed in ``backend.adaptations``; that learned state is live, never pickled or hashed.

Example:
    >>> capabilities_for("openai", "gpt-5.5").token_param
    'max_completion_tokens'
    >>> capabilities_for("openai", "Qwen2.5-7B-Instruct").logprobs
    True
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .._exceptions import ConfigError
from .base import Message, OptionProbs, sample_option_probs

__all__ = ["FAMILIES", "Adaptive", "Capabilities", "LogprobsUnavailable", "adapted", "capabilities_for"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class Capabilities:
    """What one model family accepts.

    Attributes:
        family: the row's name (shown in summaries and in ``docs/providers.md``).
        token_param: the output-cap parameter: ``"max_tokens"`` or ``"max_completion_tokens"`` (OpenAI; the other
            providers have one name each).
        temperature: send the stage's temperature; False: the model takes only its default (it is not sent).
        top_p: send ``top_p`` when a stage sets one; False: never sent.
        logprobs: next-token logprobs exist; False: :meth:`~hf_rgda.llm.LLM.option_probs` samples instead.
        reasoning_effort: the effort asked for (OpenAI ``reasoning_effort``, Gemini 3 ``thinking_level``); None: not
            sent (the model's default, or a model that does not reason).
        reasoning_tokens: added to every call's token cap, room for hidden reasoning tokens (a reasoning model's cap
            counts them: a tight cap ends in an empty answer).
        thinking_off: Anthropic: send ``thinking: {"type": "disabled"}`` (models that think by default reject the
            forced tool use the structured output relies on).
        structured: the structured-output form (``"json_schema"``, ``"tool"``, ``"response_json_schema"``).
    """

    family: str = "default"
    token_param: str = "max_tokens"
    temperature: bool = True
    top_p: bool = True
    logprobs: bool = True
    reasoning_effort: str | None = None
    reasoning_tokens: int = 0
    thinking_off: bool = False
    structured: str = "json_schema"

    def cap(self, max_tokens: int) -> int:
        """The token cap to send for a stage cap of ``max_tokens``."""
        return int(max_tokens) + self.reasoning_tokens

    def sampling(self, params: Mapping[str, Any]) -> dict[str, float]:
        """The sampling parameters of ``params`` this family accepts: ``temperature`` (default 1.0) and ``top_p``
        (only when given), each left out where the family refuses it."""
        out: dict[str, float] = {}
        if self.temperature:
            out["temperature"] = float(params.get("temperature", 1.0))
        if self.top_p and "top_p" in params:
            out["top_p"] = float(params["top_p"])
        return out


_REASONING: dict[str, Any] = {"token_param": "max_completion_tokens", "temperature": False, "top_p": False,
                              "logprobs": False}
_SAMPLING_GONE: dict[str, Any] = {"temperature": False, "top_p": False, "logprobs": False, "structured": "tool"}

#: provider -> ordered (model-name pattern, record); the first match wins, the provider's "default" row otherwise
FAMILIES: dict[str, tuple[tuple[str, Capabilities], ...]] = {
    "openai": (
        (r"^gpt-5(\.\d+)?-chat", Capabilities("openai-gpt-5-chat", **_REASONING, reasoning_tokens=0)),
        (r"^(gpt-5(\.\d+)?|o\d)-pro", Capabilities("openai-reasoning-pro", **_REASONING, reasoning_tokens=4096)),
        (r"^(gpt-5|o\d)", Capabilities("openai-reasoning", **_REASONING, reasoning_effort="low",
                                       reasoning_tokens=2048)),
        (r"", Capabilities("openai-chat")),
    ),
    "anthropic": (
        (r"^claude-(sonnet|opus|haiku)-([5-9]|\d\d)", Capabilities("anthropic-thinks-by-default", **_SAMPLING_GONE,
                                                                   thinking_off=True)),
        (r"^claude-opus-4-([7-9]|\d\d)", Capabilities("anthropic-no-sampling", **_SAMPLING_GONE)),
        (r"", Capabilities("anthropic", logprobs=False, structured="tool")),
    ),
    "gemini": (
        (r"^gemini-([3-9]|\d\d)", Capabilities("gemini-3", temperature=False, logprobs=False, reasoning_effort="low",
                                               reasoning_tokens=2048, structured="response_json_schema")),
        (r"^gemini-2\.5", Capabilities("gemini-2.5", logprobs=False, reasoning_tokens=2048,
                                       structured="response_json_schema")),
        (r"", Capabilities("gemini", structured="response_json_schema")),
    ),
}
_FIELDS = {f.name for f in dataclasses.fields(Capabilities)}


def capabilities_for(backend: str, model: str, overrides: Mapping[str, Any] | None = None) -> Capabilities:
    """The record of ``backend``'s family for ``model``, with ``overrides`` (field -> value) applied.

    Raises:
        ConfigError: an override names no field of :class:`Capabilities`.
    """
    rows = FAMILIES.get(backend, ((r"", Capabilities(backend or "default")),))
    caps = next(c for pattern, c in rows if re.search(pattern, model.lower()))
    if not overrides:
        return caps
    unknown = sorted(set(overrides) - _FIELDS)
    if unknown:
        raise ConfigError(f"capabilities: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_FIELDS))}")
    return dataclasses.replace(caps, **dict(overrides))


#: a rejected parameter -> the change that removes it (None: nothing this library sends can be changed for it)
_FIXES: dict[str, dict[str, Any]] = {
    "max_tokens": {"token_param": "max_completion_tokens"},
    "temperature": {"temperature": False},
    "top_p": {"top_p": False},
    "top_k": {"top_p": False},
    "logprobs": {"logprobs": False},
    "top_logprobs": {"logprobs": False},
    "reasoning_effort": {"reasoning_effort": None},
    "thinking_level": {"reasoning_effort": None},
    "thinking": {"thinking_off": True},
}


def adapted(caps: Capabilities, param: str) -> Capabilities | None:
    """``caps`` changed so that the rejected ``param`` is no longer sent; None when nothing would change."""
    fix = _FIXES.get(param)
    if fix is None:
        return None
    new = dataclasses.replace(caps, **fix)
    return None if new == caps else new


class LogprobsUnavailable(Exception):  # a control-flow signal, never raised to users
    """The model answered a logprobs request with a rejection: read the options by sampling instead."""


class Adaptive:
    """Mixin of the remote backends: the configured record, the adaptations learned during a run, and the
    per-model logprobs switch. Subclasses call :meth:`_setup_capabilities` in ``__init__`` and list
    ``ADAPTIVE_LIVE`` in their ``live_fields``."""

    backend: str
    model: str
    capabilities: Capabilities
    _capability_overrides: dict[str, Any]

    ADAPTIVE_LIVE = ("_live_caps", "adaptations")

    def _setup_capabilities(self, overrides: Mapping[str, Any] | None) -> None:
        self._capability_overrides = dict(overrides or {})
        self.capabilities = capabilities_for(self.backend, self.model, self._capability_overrides)

    def _init_live(self) -> None:
        super()._init_live()  # type: ignore[misc]
        self._live_caps: Capabilities | None = None
        self.adaptations: list[str] = []  # what this run learned, e.g. "temperature dropped (HTTP 400: ...)"

    @property
    def caps(self) -> Capabilities:
        """The record in force: the configured one, or what this run adapted it to."""
        return self._live_caps or self.capabilities

    @property
    def has_logprobs(self) -> bool:  # type: ignore[override]
        """Per model (and per run, after an adaptation), not per class."""
        return self.caps.logprobs

    async def _adapting(self, send: Callable[[], Awaitable[_T]], learn: Callable[[Exception], bool], *,
                        logprobs: bool = False) -> _T:
        """``send()``, asked again after each rejection ``learn`` learns from: the one adapt-once flow of the remote
        backends. ``send`` builds its request from what the backend knows now (the record in force) and raises its
        SDK's errors as they are; ``learn(err)`` is True when the rejection changed what the backend sends
        (:meth:`_learn`: a parameter the record stops sending; OpenAI's also the older structured-output form). Each
        retry follows such a change, of which there are finitely many, so it ends; any other error propagates as
        ``send`` raised it, for the backend to map.

        Args:
            logprobs: an option-probability request: once the record has no logprobs, :class:`LogprobsUnavailable`
                sends the caller to sampling.
        """
        while True:
            try:
                return await send()
            except Exception as err:
                if not learn(err):
                    raise
                if logprobs and not self.caps.logprobs:
                    raise LogprobsUnavailable("logprobs") from None

    def _learn(self, param: str | None, status: int, message: object) -> bool:
        """Whether a rejection (HTTP ``status``) of ``param`` (None: it names none the backend can change) changed the
        record (:meth:`_adapt`)."""
        return bool(param) and self._adapt(str(param), f"HTTP {status}: {message}")

    def _adapt(self, param: str, message: str) -> bool:
        """Learn that ``param`` is rejected; True when the record changed (the caller then tries once more)."""
        new = adapted(self.caps, param)
        if new is None:
            return False
        self._live_caps = new
        what = "renamed to max_completion_tokens" if param == "max_tokens" else "dropped"
        note = f"{param} {what}: {message}"[:300]
        self.adaptations.append(note)
        log.warning("%s %s rejected a parameter the capability table did not predict; for the rest of this run %s",
                    self.backend, self.model, note)
        return True

    def _capability_identity(self) -> dict[str, Any]:
        """The overrides, for ``identity()`` (a configured record that differs from the table's changes outputs)."""
        return {"capabilities": dict(sorted(self._capability_overrides.items()))} if self._capability_overrides else {}

    async def option_probs(self, messages: Sequence[Message], options: Sequence[str], *,
                           params: Mapping[str, Any]) -> OptionProbs:
        try:
            return await super().option_probs(messages, options, params=params)  # type: ignore[misc]
        except LogprobsUnavailable:
            return await sample_option_probs(self, messages, options, params)  # type: ignore[arg-type]
