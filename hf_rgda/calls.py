"""The call seam: every LLM call a stage makes goes through :meth:`Caller.ask` (a JSON answer) or
:meth:`Caller.choose` (the probabilities of a fixed set of short answers, :meth:`~hf_rgda.llm.LLM.option_probs`).

A call's parameters carry a seed derived from the run seed and the call's identity (:func:`derive_seed`), so answers
never depend on scheduling; the response cache answers first when it can; an answer that is not JSON is re-asked once
with the parse error; every call is counted on its seed's :class:`~hf_rgda.records.Accounting`. Building the messages
(:func:`system_prompts`, :func:`build_messages`, :func:`reask_messages`) is pure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from . import prompts
from ._exceptions import ParseError
from .cache import ResponseCache, cache_key, option_probs_key
from .checking import parse_json
from .config import AugmentConfig
from .llm.base import LLM, Completion, OptionProbs
from .records import SeedResult

__all__ = ["Caller", "Messages", "add_section", "build_messages", "derive_seed", "reask_messages", "section",
           "system_prompts"]

log = logging.getLogger(__name__)

Messages = list[dict[str, str]]
_Answer = TypeVar("_Answer", Completion, OptionProbs)

#: the stages whose system prompt is rendered from the run's domain, types and output format
_WRITERS = ("seed_generation", "guidance", "guidance_refine", "composer", "composition_refine")
_JUDGES = ("guidance_judge", "composition_judge")


def derive_seed(base: int, *parts: object) -> int:
    """A per-call seed that depends only on the run seed and the call's identity, not on scheduling."""
    return _derived(base, tuple(map(str, parts)))


@functools.lru_cache(maxsize=4096)
def _derived(base: int, parts: tuple[str, ...]) -> int:  # memoised: a seed's questions share one identity
    digest = hashlib.sha256(json.dumps([base, *parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def system_prompts(config: AugmentConfig, types: Sequence[str], type_notes: str = "") -> dict[str, str]:
    """The system prompt of every stage that writes, judges or verifies (the debate renders its own, one per
    persona)."""
    common = {"domain": config.domain or "the domain of the given sentence", "types": ", ".join(types),
              "type_notes": type_notes, "output_format": prompts.template(f"{config.representation}_format")}
    systems = {name: prompts.render(name, **common) for name in _WRITERS}
    systems.update({name: prompts.render(name, types=common["types"]) for name in _JUDGES})
    systems["entity_verify"] = prompts.render("entity_verify", domain=common["domain"])
    return systems


def section(name: str, value: Any) -> str:
    """One titled section of a user message (``sentence`` becomes ``"Sentence:\\n..."``); a value that is not text
    is written as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"{name.replace('_', ' ').capitalize()}:\n{text}"


def build_messages(system: str, **sections: Any) -> Messages:
    """The system prompt and one user message of titled sections (:func:`section`)."""
    return [{"role": "system", "content": system},
            {"role": "user", "content": "\n\n".join(section(k, v) for k, v in sections.items())}]


def add_section(messages: Messages, name: str, value: Any) -> Messages:
    """``messages`` (not mutated) with one more section at the end of the last message."""
    return [*messages[:-1], {**messages[-1], "content": f"{messages[-1]['content']}\n\n{section(name, value)}"}]


def reask_messages(messages: Messages, answer: str, error: ParseError) -> Messages:
    """The conversation again, with the unreadable answer and the parse error, asking for JSON."""
    return [*messages, {"role": "assistant", "content": answer[:4000]},
            {"role": "user", "content": prompts.template("json_reask") + f"\n\nThe error: {error}"}]


class Caller:
    """The cached, counted calls of one run (one per event loop: it holds the backend's concurrency limit).

    Args:
        config: the run configuration (temperatures, token cap, run seed).
        llm: the backend every stage uses unless a call names another (the debate's agents).
        cache: the response cache, or None to call the backend every time.
    """

    def __init__(self, config: AugmentConfig, llm: LLM, cache: ResponseCache | None = None) -> None:
        self.config, self.llm, self.cache = config, llm, cache
        self._sem = asyncio.Semaphore(max(1, llm.max_concurrency))

    async def ask(self, r: SeedResult, stage: str, messages: Messages, schema: dict[str, Any], *, judge: bool = False,
                  salt: object = "", rnd: int | None = None, llm: LLM | None = None) -> tuple[Any, str]:
        """One call of ``stage`` for seed ``r``: the parsed JSON answer and its text.

        Args:
            judge: sample at the judges' temperature.
            salt: what tells this call from the seed's other calls of the same stage (a round, a repair attempt).
            rnd: the judge or debate round the call is counted under (default: ``salt`` when it is a number).
            llm: the backend to ask (default: the run's).

        Raises:
            ParseError: the answer to the re-ask is not JSON either.
            BackendError: the backend failed.
        """
        rnd = rnd if rnd is not None else salt if isinstance(salt, int) else None
        llm = llm or self.llm
        text = await self._complete(r, stage, messages, schema, self._params(r, stage, salt, judge), rnd, llm)
        try:
            return parse_json(text), text
        except ParseError as err:
            params = self._params(r, stage, f"{salt}/json", judge)
            text = await self._complete(r, stage, reask_messages(messages, text, err), schema, params, rnd, llm)
            return parse_json(text), text

    def _params(self, r: SeedResult, stage: str, salt: object, judge: bool) -> dict[str, Any]:
        cfg = self.config
        return {"temperature": cfg.judge_temperature if judge else cfg.temperature, "max_tokens": cfg.max_tokens,
                "seed": derive_seed(cfg.seed, r.seed.key, stage, salt)}

    async def choose(self, r: SeedResult, stage: str, messages: Messages, options: Sequence[str], *,
                     salt: object = "", rnd: int | None = None, llm: LLM | None = None) -> OptionProbs:
        """One option-probability call of ``stage`` for seed ``r`` (:meth:`~hf_rgda.llm.LLM.option_probs`: one
        output token at temperature 0 where the backend has logprobs), cached and counted like :meth:`ask`.

        Args:
            options: the short answers, e.g. ``("A", "B", "C")``.
            salt, rnd, llm: as for :meth:`ask`.

        Raises:
            BackendError: the backend failed.
        """
        llm, params = llm or self.llm, {"seed": derive_seed(self.config.seed, r.seed.key, stage, salt)}
        key = option_probs_key(llm.identity(), messages, options, params) if self.cache is not None else ""
        return await self._paid(r, stage, rnd, key, lambda c: c.get_option_probs(key), ResponseCache.put_option_probs,
                                lambda: llm.option_probs(messages, options, params=params))

    async def _complete(self, r: SeedResult, stage: str, messages: Messages, schema: dict[str, Any],
                        params: dict[str, Any], rnd: int | None, llm: LLM) -> str:
        key = cache_key(llm.identity(), messages, schema, params) if self.cache is not None else ""
        comp = await self._paid(r, stage, rnd, key, lambda c: c.get(key), ResponseCache.put,
                                lambda: llm.complete(messages, schema=schema, params=params))
        return comp.text

    async def _paid(self, r: SeedResult, stage: str, rnd: int | None, key: str,
                    get: Callable[[ResponseCache], _Answer | None], put: Callable[[ResponseCache, str, _Answer], None],
                    call: Callable[[], Awaitable[_Answer]]) -> _Answer:
        """The cache's answer under ``key``, else ``call()`` within the backend's concurrency limit (timed when the
        backend does not time it, then stored); counted on ``r`` either way."""
        got = get(self.cache) if self.cache is not None else None
        if got is None:
            async with self._sem:
                start = time.perf_counter()
                got = await call()
            if not got.seconds:
                got = dataclasses.replace(got, seconds=time.perf_counter() - start)
            if self.cache is not None:
                put(self.cache, key, got)
            log.debug("%s %s: %.1f s, %d+%d tokens", r.seed.key, stage, got.seconds, got.usage.prompt_tokens,
                      got.usage.completion_tokens)
        r.accounting.record(stage, got, rnd)
        return got
