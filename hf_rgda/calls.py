"""The call seam: every LLM call a stage makes goes through :meth:`Caller.ask` (a JSON answer) or
:meth:`Caller.choose` (the probabilities of a fixed set of short answers, :meth:`~hf_rgda.llm.LLM.option_probs`).

A call's parameters carry a seed derived from the run seed and the call's identity (:func:`derive_seed`), so answers
never depend on scheduling; the response cache answers first when it can; an answer that is not JSON is re-asked once
with the parse error; every call is counted on its seed's :class:`~hf_rgda.records.Accounting`. Building the messages
(:mod:`hf_rgda.messages`, :func:`reask_messages`) is pure.

Every call carries its stage's name as metadata while the backend answers it (:func:`call_of`, a context variable
of the asyncio task making the call): a scripted backend (the test world of :mod:`hf_rgda.testing`) answers by it
in this process, and by the prompt template over the wire, never by the prompt's wording.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, NamedTuple, TypeVar

from . import prompts
from ._exceptions import ParseError
from .cache import ResponseCache, cache_key, option_probs_key
from .checking import complete_items, parse_json
from .checking.decode import copies_item, text_loops
from .config import AugmentConfig
from .llm.base import LLM, Completion, OptionProbs
from .messages import Messages, follow_up
from .records import SeedResult

__all__ = ["CallInfo", "Caller", "Partial", "call_of", "derive_seed", "reask_messages", "run_sync"]

log = logging.getLogger(__name__)

_Answer = TypeVar("_Answer", Completion, OptionProbs)
_T = TypeVar("_T")


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to its end from synchronous code (a ``datasets.map`` call, the CLI): on a new event loop, or on a
    new loop in a worker thread when called inside a running one (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class Partial(dict):  # type: ignore[type-arg]
    """A list answer that stopped inside an item (``max_tokens`` reached, or the local engine ended a loop or a copy
    of the answer's own words): its complete items (none when it looped inside the first), in :attr:`cut_off` the
    text of the item it stopped in, in :attr:`looped` whether that text loops
    (:func:`~hf_rgda.checking.decode.text_loops`) and in :attr:`copied` whether it ends copying a complete item
    (:func:`~hf_rgda.checking.decode.copies_item`)."""

    def __init__(self, key: str, items: list[Any], cut_off: str, looped: bool = False, copied: bool = False) -> None:
        super().__init__({key: items})
        self.cut_off, self.looped, self.copied = cut_off, looped, copied


class CallInfo(NamedTuple):
    """A call's metadata: its stage's name and what tells it from the seed's other calls of that stage."""

    stage: str
    salt: str


#: the metadata of the call being made: set while the backend answers, in the asyncio task that awaits it (each
#: task, and so each seed's concurrent calls, sees its own)
_CALL: contextvars.ContextVar[CallInfo | None] = contextvars.ContextVar("hf_rgda_call", default=None)


def call_of() -> CallInfo | None:
    """The metadata of the pipeline call a backend is answering, read in the answering code's context (a scripted
    backend's handler); None outside a pipeline call, or in a thread or process the call's context does not reach
    (a server answering over the wire)."""
    return _CALL.get()


def derive_seed(base: int, *parts: object) -> int:
    """A per-call seed that depends only on the run seed and the call's identity, not on scheduling."""
    return _derived(base, tuple(map(str, parts)))


@functools.lru_cache(maxsize=4096)
def _derived(base: int, parts: tuple[str, ...]) -> int:  # memoised: a seed's questions share one identity
    digest = hashlib.sha256(json.dumps([base, *parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def reask_messages(messages: Messages, answer: str, error: ParseError) -> Messages:
    """The conversation again, with the unreadable answer and the parse error, asking for JSON."""
    return follow_up(messages, answer[:4000], prompts.template("json_reask") + f"\n\nThe error: {error}")


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
        self._keys: dict[str, asyncio.Lock] = {}  # a cached call's key -> held while it is paid for

    async def ask(self, r: SeedResult, stage: str, messages: Messages, schema: dict[str, Any], *, judge: bool = False,
                  salt: object = "", rnd: int | None = None, llm: LLM | None = None,
                  partial: str | None = None) -> tuple[Any, str]:
        """One call of ``stage`` for seed ``r``: the parsed JSON answer and its text.

        Args:
            judge: sample at the judges' temperature.
            salt: what tells this call from the seed's other calls of the same stage (a round, a repair attempt).
            rnd: the judge or debate round the call is counted under (default: ``salt`` when it is a number).
            llm: the backend to ask (default: the run's).
            partial: the answer is ``{partial: [items]}``: one that stops inside an item (``max_tokens`` reached,
                or the local engine ended a loop or a copy of itself) keeps its complete items, returned as a :class:`Partial`, instead
                of being asked again; so does one that stops in a loop inside its first item (with no items).

        Raises:
            ParseError: the answer to the re-ask is not JSON either.
            BackendError: the backend failed.
        """
        rnd = rnd if rnd is not None else salt if isinstance(salt, int) else None
        llm = llm or self.llm
        text = await self._complete(r, CallInfo(stage, str(salt)), messages, schema,
                                    self._params(r, stage, salt, judge), rnd, llm)
        try:
            return parse_json(text), text
        except ParseError as err:
            items, cut = complete_items(text, partial) if partial else ([], "")
            looped = bool(cut) and text_loops(cut)
            copied = bool(cut) and not looped and copies_item(cut, items)
            if items or looped:  # a looping model asked again mostly loops again
                log.info("%s: the answer stopped inside item %d (%s); %d complete ones kept", stage, len(items) + 1,
                         "a loop" if looped else "a copy" if copied else "cut", len(items))
                return Partial(partial or "", items, cut, looped, copied), text
            params = self._params(r, stage, f"{salt}/json", judge)
            text = await self._complete(r, CallInfo(stage, f"{salt}/json"), reask_messages(messages, text, err), schema,
                                        params, rnd, llm)
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
        return await self._paid(r, CallInfo(stage, str(salt)), messages, rnd, key, lambda c: c.get_option_probs(key),
                                lambda c, k, a: c.put_option_probs(k, a),  # the cache's own: a dry run's reads only
                                lambda: llm.option_probs(messages, options, params=params))

    async def _complete(self, r: SeedResult, info: CallInfo, messages: Messages, schema: dict[str, Any],
                        params: dict[str, Any], rnd: int | None, llm: LLM) -> str:
        key = cache_key(llm.identity(), messages, schema, params) if self.cache is not None else ""
        comp = await self._paid(r, info, messages, rnd, key, lambda c: c.get(key), lambda c, k, a: c.put(k, a),
                                lambda: llm.complete(messages, schema=schema, params=params))
        return comp.text

    async def _paid(self, r: SeedResult, info: CallInfo, messages: Messages, rnd: int | None, key: str,
                    get: Callable[[ResponseCache], _Answer | None], put: Callable[[ResponseCache, str, _Answer], None],
                    call: Callable[[], Awaitable[_Answer]]) -> _Answer:
        """The cache's answer under ``key``, else ``call()`` within the backend's concurrency limit (timed when the
        backend does not time it, in flight with its metadata ``info``, then stored); counted on ``r`` either way.
        The same call asked again while it is in flight (two rows asking one question at once) waits for it and is
        served from the cache: it is paid once."""
        if self.cache is None or not key:
            return await self._pay(r, info, messages, rnd, key, None, put, call)
        got = get(self.cache)
        if got is None:
            async with self._keys.setdefault(key, asyncio.Lock()):
                got = get(self.cache)  # paid meanwhile by the call this one waited for
                if got is None:
                    return await self._pay(r, info, messages, rnd, key, None, put, call)
        return await self._pay(r, info, messages, rnd, key, got, put, call)

    async def _pay(self, r: SeedResult, info: CallInfo, messages: Messages, rnd: int | None, key: str,
                   got: _Answer | None, put: Callable[[ResponseCache, str, _Answer], None],
                   call: Callable[[], Awaitable[_Answer]]) -> _Answer:
        """``got`` (the cache's answer), else ``call()`` paid and stored; counted on ``r``."""
        stage = info.stage
        if got is None:
            async with self._sem:
                start = time.perf_counter()
                token = _CALL.set(info)
                try:
                    got = await call()
                finally:
                    _CALL.reset(token)
            if not got.seconds:
                got = dataclasses.replace(got, seconds=time.perf_counter() - start)
            if self.cache is not None:
                put(self.cache, key, got)
            log.debug("%s %s: %.1f s, %d+%d tokens", r.seed.key, stage, got.seconds, got.usage.prompt_tokens,
                      got.usage.completion_tokens)
        r.accounting.record(stage, got, rnd)
        return got
