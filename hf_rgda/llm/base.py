"""The backend seam: one base class with one async primitive.

A backend turns chat messages plus a JSON schema into a :class:`Completion`. Caching, retries of
parsing and accounting live outside the backends (see :mod:`hf_rgda.cache` and :mod:`hf_rgda.pipeline`).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LLM", "Completion", "Message", "Usage"]

Message = Mapping[str, str]


@dataclass(frozen=True)
class Usage:
    """Token counts of one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass(frozen=True)
class Completion:
    """What a backend returns.

    Attributes:
        text: the raw model output (JSON text when a schema was given).
        usage: token counts.
        seconds: wall time of the call.
        cached: True when served from the response cache instead of the backend.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    cached: bool = False


class LLM(abc.ABC):
    """Base class of every backend.

    Subclasses implement :meth:`complete` and :meth:`identity`; they must create live clients lazily
    (never in ``__init__``) and drop them in ``__getstate__`` so that augmenters hash and pickle.
    """

    #: how many calls the pipeline may have in flight at once for this backend
    max_concurrency: int = 1

    @abc.abstractmethod
    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> Completion:
        """Run one chat completion.

        Args:
            messages: chat messages (``role``, ``content``); never mutated.
            schema: JSON schema the output must follow, or None for free text.
            params: generation parameters: ``temperature``, ``max_tokens``, ``seed``.

        Raises:
            BackendError: (or a subclass) when the call fails.
        """

    async def aclose(self) -> None:
        """Release the live resources bound to the running event loop (HTTP clients); the backend stays usable."""

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """Everything that determines this backend's outputs (no secrets): used for cache keys and hashing."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.identity().items())
        return f"{type(self).__name__}({args})"
