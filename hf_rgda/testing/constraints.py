"""The providers' request constraints, as the scripted server enforces them (the table in ``docs/providers.md``).

:func:`violation` reads one request body the way the provider would and returns the rejection the provider sends
(``(status, error body)``), or None. Each rule names its row in the docs table (``Rule.row``), and
``tests/test_provider_fakes.py`` proves each row through the official SDKs. Model families are matched by name,
like the backends' capability records (:mod:`hf_rgda.llm.capabilities`), but written separately here: the fake
checks the backends, it does not share their assumptions.

Example:
    >>> violation("openai", "gpt-5.5", {"model": "gpt-5.5", "max_tokens": 10})[1]["error"]["code"]
    'unsupported_parameter'
    >>> violation("openai", "Qwen2.5-7B-Instruct", {"max_tokens": 10}) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RULES", "Rule", "violation"]

Body = Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """One row: requests to ``provider`` models matching ``model`` that ``check`` finds fault with are rejected."""

    row: str
    provider: str
    model: str  # a regular expression searched in the lower-cased model name
    check: Callable[[Body, str], tuple[int, dict[str, Any]] | None]


# ---------------------------------------------------------------- the providers' error bodies
def openai_error(message: str, param: str | None, code: str | None, status: int = 400) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def anthropic_error(message: str, status: int = 400) -> tuple[int, dict[str, Any]]:
    return status, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def gemini_error(message: str, status: int = 400) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}


# ---------------------------------------------------------------- OpenAI
_OPENAI_REASONING = r"^(gpt-5|o\d)"


def _max_tokens(body: Body, model: str) -> Any:
    if "max_tokens" in body:
        return openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                            "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
    return None


def _openai_temperature(body: Body, model: str) -> Any:
    t = body.get("temperature")
    if t is not None and float(t) != 1.0:
        return openai_error(f"Unsupported value: 'temperature' does not support {t} with this model. Only the "
                            "default (1) value is supported.", "temperature", "unsupported_value")
    return None


def _unsupported(param: str) -> Callable[[Body, str], Any]:
    def check(body: Body, model: str) -> Any:
        if body.get(param) not in (None, False):
            return openai_error(f"Unsupported parameter: '{param}' is not supported with this model.", param,
                                "unsupported_parameter")
        return None
    return check


def _effort(body: Body, model: str) -> Any:
    effort = body.get("reasoning_effort")
    if re.match(r"^o\d", model):
        allowed: tuple[str, ...] = ("low", "medium", "high")
    elif re.match(r"^gpt-5(-|$)", model):
        allowed = ("minimal", "low", "medium", "high")
    else:
        allowed = ("none", "low", "medium", "high", "xhigh")
    if effort is not None and effort not in allowed:
        return openai_error(f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this model. "
                            f"Supported values are: {', '.join(repr(a) for a in allowed)}.", "reasoning_effort",
                            "unsupported_value")
    return None


def _strict_schema(body: Body, model: str) -> Any:
    fmt = body.get("response_format") or {}
    spec = fmt.get("json_schema") or {}
    if fmt.get("type") != "json_schema" or not spec.get("strict"):
        return None
    for where, node in _objects(spec.get("schema") or {}, ()):
        if node.get("additionalProperties") is not False:
            return openai_error(f"Invalid schema for response_format '{spec.get('name')}': In context={where}, "
                                "'additionalProperties' is required to be supplied and to be false.",
                                "response_format", None)
    return None


def _objects(node: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every object schema in ``node`` with its path, as OpenAI's ``context=`` names it."""
    if not isinstance(node, dict):
        return
    if node.get("type") == "object":
        yield path, node
    for key, child in (node.get("properties") or {}).items():
        yield from _objects(child, (*path, "properties", key))
    if "items" in node:
        yield from _objects(node["items"], (*path, "items"))


# ---------------------------------------------------------------- Anthropic
_ANTHROPIC_NO_SAMPLING = r"^claude-(opus-4-([7-9]|\d\d)|(sonnet|opus|haiku|fable|mythos)-([5-9]|\d\d))"
_ANTHROPIC_THINKS = r"^claude-((sonnet|opus|haiku|fable|mythos)-([5-9]|\d\d))"


def _deprecated(param: str) -> Callable[[Body, str], Any]:
    def check(body: Body, model: str) -> Any:
        value = body.get(param)
        if value is not None and not (param == "temperature" and float(value) == 1.0):
            return anthropic_error(f"`{param}` is deprecated for this model.")
        return None
    return check


def _both_samplers(body: Body, model: str) -> Any:
    if body.get("temperature") is not None and body.get("top_p") is not None:
        return anthropic_error("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
    return None


def _forced_tool_while_thinking(body: Body, model: str) -> Any:
    forced = (body.get("tool_choice") or {}).get("type") in ("tool", "any")
    thinking = (body.get("thinking") or {}).get("type")
    on = thinking in ("enabled", "adaptive") or (thinking is None and re.search(_ANTHROPIC_THINKS, model))
    if forced and on:
        return anthropic_error("Thinking may not be enabled when tool_choice forces tool use.")
    return None


def _thinking_enabled(body: Body, model: str) -> Any:
    if (body.get("thinking") or {}).get("type") == "enabled":
        return anthropic_error('"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
                               'and "output_config.effort" to control thinking behavior.')
    return None


# ---------------------------------------------------------------- Gemini
_GEMINI_NO_LOGPROBS = r"^gemini-(2\.5|[3-9]|\d\d)"


def _gen(body: Body) -> Mapping[str, Any]:
    return body.get("generationConfig") or {}


def _thinking(body: Body) -> tuple[Any, Any]:
    """``(level, budget)`` of the thinking config; the API reads proto JSON, camelCase or snake_case (the SDK sends
    the latter inside ``thinkingConfig``)."""
    cfg = _gen(body).get("thinkingConfig") or {}
    return cfg.get("thinkingLevel", cfg.get("thinking_level")), cfg.get("thinkingBudget", cfg.get("thinking_budget"))


def _logprobs(body: Body, model: str) -> Any:
    if _gen(body).get("responseLogprobs"):
        return gemini_error(f"Logprobs is not enabled for models/{model}")
    return None


def _thinking_level_before_3(body: Body, model: str) -> Any:
    if _thinking(body)[0]:
        return gemini_error("thinking_level is not supported by this model.")
    return None


def _level_and_budget(body: Body, model: str) -> Any:
    level, budget = _thinking(body)
    if level and budget is not None:
        return gemini_error("You can only set one of thinking budget and thinking level.")
    return None


def _budget_from_3_5(body: Body, model: str) -> Any:
    level, budget = _thinking(body)
    if budget is not None and not level:
        return gemini_error("thinking_budget is not supported by this model. Use thinking_level instead.")
    return None


def _proto_schema_keywords(body: Body, model: str) -> Any:
    schema = _gen(body).get("responseSchema")
    for where, node in _objects(schema or {}, ()):
        if "additionalProperties" in node:
            at = ".".join(("generation_config.response_schema", *where))
            return gemini_error(f"Invalid JSON payload received. Unknown name \"additionalProperties\" at '{at}': "
                                "Cannot find field.")
    return None


#: every enforced row, in the order of the docs table; the first violation found is the answer
RULES: tuple[Rule, ...] = (
    Rule("openai-max-tokens", "openai", _OPENAI_REASONING, _max_tokens),
    Rule("openai-temperature", "openai", _OPENAI_REASONING, _openai_temperature),
    Rule("openai-top-p", "openai", _OPENAI_REASONING, _unsupported("top_p")),
    Rule("openai-logprobs", "openai", _OPENAI_REASONING, _unsupported("logprobs")),
    Rule("openai-reasoning-effort", "openai", _OPENAI_REASONING, _effort),
    Rule("openai-effort-non-reasoning", "openai", r"^(gpt-4|gpt-3\.5)", _unsupported("reasoning_effort")),
    Rule("openai-strict-schema", "openai", r"", _strict_schema),
    Rule("anthropic-temperature", "anthropic", _ANTHROPIC_NO_SAMPLING, _deprecated("temperature")),
    Rule("anthropic-top-p", "anthropic", _ANTHROPIC_NO_SAMPLING, _deprecated("top_p")),
    Rule("anthropic-top-k", "anthropic", _ANTHROPIC_NO_SAMPLING, _deprecated("top_k")),
    Rule("anthropic-both-samplers", "anthropic", r"^claude-(sonnet-4-5|opus-4-1)", _both_samplers),
    Rule("anthropic-forced-tool-thinking", "anthropic", r"^claude-", _forced_tool_while_thinking),
    Rule("anthropic-thinking-enabled", "anthropic", _ANTHROPIC_THINKS, _thinking_enabled),
    Rule("gemini-logprobs", "gemini", _GEMINI_NO_LOGPROBS, _logprobs),
    Rule("gemini-thinking-level", "gemini", r"^gemini-(1|2)\.", _thinking_level_before_3),
    Rule("gemini-level-and-budget", "gemini", r"^gemini-", _level_and_budget),
    Rule("gemini-budget-3-5", "gemini", r"^gemini-(3\.[5-9]|[4-9]|\d\d)", _budget_from_3_5),
    Rule("gemini-response-schema", "gemini", r"^gemini-", _proto_schema_keywords),
)


def violation(provider: str, model: str, body: Body) -> tuple[int, dict[str, Any]] | None:
    """The provider's rejection of ``body`` sent for ``model`` (``(status, error body)``), or None if it passes."""
    name = model.lower()
    for rule in RULES:
        if rule.provider == provider and re.search(rule.model, name):
            found = rule.check(body, name)
            if found is not None:
                return found
    return None
