"""LLM backends and the string selector.

Example:
    >>> llm = load_llm("openai:gpt-5.5", base_url="http://127.0.0.1:8000/v1")
    >>> llm.identity()["backend"]
    'openai'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._exceptions import ConfigError
from .base import LLM, Completion, Message, OptionProbs, Usage
from .fake import ScriptedLLM

__all__ = ["BACKENDS", "EXAMPLE_MODELS", "LLM", "Completion", "Message", "OptionProbs", "ScriptedLLM", "Usage", "load_llm"]


def _local(model: str, **kw: Any) -> LLM:
    from .local import LocalLLM

    return LocalLLM(model, **kw)


def _openai(model: str, **kw: Any) -> LLM:
    from .openai import OpenAILLM

    return OpenAILLM(model, **kw)


def _anthropic(model: str, **kw: Any) -> LLM:
    from .anthropic import AnthropicLLM

    return AnthropicLLM(model, **kw)


def _gemini(model: str, **kw: Any) -> LLM:
    from .gemini import GeminiLLM

    return GeminiLLM(model, **kw)


#: backend name -> factory(model, **options)
BACKENDS: dict[str, Callable[..., LLM]] = {"local": _local, "openai": _openai, "anthropic": _anthropic,
                                           "gemini": _gemini}

#: a current model of each API backend, for help texts and examples: the model the installed SDK (openai 3.54,
#: anthropic 2.12, google-genai 3.4) uses in its own examples; tests/test_providers.py checks the SDKs still list them
EXAMPLE_MODELS: dict[str, str] = {"openai": "gpt-5.5", "anthropic": "claude-sonnet-5-5", "gemini": "gemini-3.8-flash"}


def load_llm(spec: str | LLM, **options: Any) -> LLM:
    """Build a backend from ``"<backend>:<model>"`` (an :class:`LLM` instance is returned unchanged).

    Args:
        spec: e.g. ``"local:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"``,
            ``"local:/models/x.gguf"``, ``"openai:gpt-5.5"``, ``"anthropic:claude-sonnet-5-5"`` or
            ``"gemini:gemini-3.8-flash"`` (see :data:`EXAMPLE_MODELS`).
        **options: passed to the backend (``base_url``, ``n_ctx``, ...).
    """
    if isinstance(spec, LLM):
        return spec
    backend, sep, model = spec.partition(":")
    if not sep or not model:
        raise ConfigError(f"LLM {spec!r}: expected '<backend>:<model>' with backend one of {', '.join(BACKENDS)}")
    if backend not in BACKENDS:
        raise ConfigError(f"LLM {spec!r}: unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[backend](model, **{k: v for k, v in options.items() if v is not None})
