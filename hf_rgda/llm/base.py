"""The backend seam: one base class, one async primitive, and the option probabilities built on it.

A backend turns chat messages plus a JSON schema into a :class:`Completion`. Caching, retries of
parsing and accounting live outside the backends (see :mod:`hf_rgda.cache` and :mod:`hf_rgda.calls`).

:meth:`LLM.option_probs` asks a question with a fixed set of short answers and returns how likely each is
(:class:`OptionProbs`): read from next-token logprobs where the model has them (local llama.cpp, OpenAI's chat models
and compatible servers, Gemini 2.0), else by the sampling fallback defined here (Anthropic, OpenAI's reasoning
models, Gemini 2.5 and 3: ``has_logprobs`` is per model, see :mod:`hf_rgda.llm.capabilities`). The matching rule is
in :mod:`hf_rgda.llm.options`.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .options import answer_schema, check_options, probs_from_answers, probs_from_top, samples_of

__all__ = ["LLM", "Completion", "Message", "OptionProbs", "Usage", "sample_option_probs"]

Message = Mapping[str, str]

_SAMPLE_MAX_TOKENS = 64  # room for {"answer": "<option>"}, also as a tool call


@dataclass(frozen=True)
class Usage:
    """Token counts of one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens)


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


@dataclass(frozen=True)
class OptionProbs:
    """What :meth:`LLM.option_probs` returns; ``usage``, ``seconds`` and ``cached`` read like a :class:`Completion`.

    Attributes:
        probs: option -> probability, in the order the options were given, summing to 1.
        method: ``"logprobs"`` (next-token log probabilities), ``"samples"`` (the sampling fallback) or
            ``"scripted"`` (the scripted fake's distribution).
        mass: how much of the evidence named an option: the matched next-token probability, or the share of
            samples that answered with an option (see :mod:`hf_rgda.llm.options`).
        top: the ``(token, logprob)`` list it was read from (empty for samples).
        usage: token counts, summed over the calls made.
        seconds: wall time of the calls, summed.
        cached: True when served from the response cache instead of the backend.
    """

    probs: dict[str, float]
    method: str
    mass: float = 1.0
    top: tuple[tuple[str, float], ...] = ()
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    cached: bool = False

    @classmethod
    def from_top(cls, top: Sequence[tuple[str, float | None]], options: Sequence[str], *, method: str = "logprobs",
                 usage: Usage | None = None, seconds: float = 0.0) -> OptionProbs:
        """Read the options' probabilities from a next-token top list (:func:`~hf_rgda.llm.options.probs_from_top`)."""
        pairs = tuple((str(token), float(lp)) for token, lp in top if lp is not None)
        probs, mass = probs_from_top(pairs, check_options(options))
        return cls(probs, method, mass, pairs, usage or Usage(), seconds)


class LLM(abc.ABC):
    """Base class of every backend.

    Subclasses implement :meth:`complete` and :meth:`identity`; they must create live clients lazily
    (never in ``__init__``) and drop them in ``__getstate__`` so that augmenters hash and pickle.
    """

    #: how many calls the pipeline may have in flight at once for this backend
    max_concurrency: int = 1
    @property
    def asks_in_turn(self) -> bool:
        """Whether a seed's questions asked one after another take no longer than asked at once, so a judge may ask
        its criteria in turn and stop early (``judge_early_pass``): a backend that answers one call at a time."""
        return self.max_concurrency == 1

    #: whether :meth:`option_probs` reads next-token logprobs (else it is the sampling fallback, several calls); the
    #: remote backends answer per model (a property over their capability record)
    has_logprobs: bool = False
    #: whether a call's evaluated prompt prefix is kept for the next calls at no extra cost (llama.cpp in this process):
    #: the judges then lay out their prompts to share it (:data:`hf_rgda.stages.judge.SHARED_RATING`); a remote API
    #: would only pay for the longer prompt
    reuses_prefix: bool = False
    #: what the generating stages ask this backend to write under ``representation="auto"``
    #: (:meth:`hf_rgda.config.AugmentConfig.for_backend`)
    representation: str = "entities"
    #: targeted re-asks of rejected sentences under an unset ``max_repairs`` (:meth:`~hf_rgda.config.AugmentConfig.for_backend`)
    max_repairs: int = 1

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

    #: whether :meth:`text_logprobs` reads the model's own token probabilities of a given text
    scores_text: bool = False

    async def text_logprobs(self, prefix: str, texts: Sequence[str]) -> list[list[float]]:
        """The log-probability of each token of each of ``texts`` when it follows ``prefix`` as plain text (no chat
        template): one prompt evaluation a text, no generation. A backend that cannot read them (the chat APIs
        return no prompt logprobs) raises ``NotImplementedError``; :attr:`scores_text` says which can."""
        raise NotImplementedError(f"{type(self).__name__} cannot score a given text")

    async def option_probs(self, messages: Sequence[Message], options: Sequence[str], *,
                           params: Mapping[str, Any]) -> OptionProbs:
        """How likely each of a fixed set of short answers is, as the model's next token.

        Backends with logprobs override this: one call at temperature 0 for one output token, the top
        ``params["top_logprobs"]`` next tokens (default 20) read by the rule of :mod:`hf_rgda.llm.options`.
        This default is the fallback for backends without logprobs: :func:`sample_option_probs`.

        Args:
            messages: chat messages asking the question; never mutated.
            options: the answers, e.g. ``["A", "B", "C", "D", "E"]`` or ``["yes", "no"]``; single tokens match best.
            params: ``seed``; ``top_logprobs`` (logprobs backends, 1 to 20); ``samples`` (the fallback).

        Raises:
            ConfigError: bad options or parameters.
            BackendError: (or a subclass) when a call fails, or the backend answers without logprobs.
        """
        return await sample_option_probs(self, messages, options, params)

    async def aclose(self) -> None:
        """Release the live resources bound to the running event loop (HTTP clients); the backend stays usable."""

    @abc.abstractmethod
    def identity(self) -> dict[str, Any]:
        """Everything that determines this backend's outputs (no secrets): used for cache keys and hashing."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.identity().items())
        return f"{type(self).__name__}({args})"


async def sample_option_probs(llm: LLM, messages: Sequence[Message], options: Sequence[str],
                              params: Mapping[str, Any]) -> OptionProbs:
    """The fallback for backends without logprobs: the frequencies of ``k`` sampled answers.

    Cost: ``k = params["samples"]`` (default 5) full calls of :meth:`LLM.complete`, each paying the whole prompt
    plus a short structured answer (``{"answer": "<option>"}``, about 10-30 output tokens), so about ``k`` times the
    prompt tokens of one logprobs call; they run concurrently within the backend's ``max_concurrency``. Answers
    are drawn at temperature 1 (the model's own distribution) with seeds ``seed, seed + 1, ...``; the
    probabilities come in steps of ``1/k``, and an answer naming no option is left out (``mass`` is the share
    that named one).
    """
    opts = check_options(options)
    k, seed = samples_of(params), int(params.get("seed", 0))
    schema = answer_schema(opts)
    comps = await asyncio.gather(*(llm.complete(messages, schema=schema, params={
        "temperature": 1.0, "max_tokens": _SAMPLE_MAX_TOKENS, "seed": seed + i}) for i in range(k)))
    probs, mass = probs_from_answers([c.text for c in comps], opts)
    return OptionProbs(probs, "samples", mass, (), sum((c.usage for c in comps), Usage()),
                       sum(c.seconds for c in comps))
