"""What every remote (HTTP API) backend shares: concurrency, rate limits, retries, key handling, redaction.

A provider module implements :meth:`RemoteLLM._request` (one attempt, SDK errors mapped to the library's
:class:`~hf_rgda.BackendError` subclasses, ``retry_after`` filled from the response) and :meth:`RemoteLLM._new_client`;
one whose API returns logprobs also sets ``has_logprobs`` and implements ``_top_logprobs`` (checked when the
class is created).
This class adds, per running event loop: a semaphore (``max_concurrency``), a requests- and tokens-per-minute
limiter, and bounded retries with exponential backoff and full jitter that honour ``Retry-After``. SDK-level
retries are switched off so that there is one retry policy, visible in the config.

Secrets: keys are read from the environment at the first call, kept out of ``identity()``, ``repr``,
``__getstate__`` and every message the library raises or logs (:func:`redact`).
"""

from __future__ import annotations

import abc
import asyncio
import collections
import logging
import os
import random
import time
import urllib.parse
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .._exceptions import AuthenticationError, BackendError, ConfigError
from .._secrets import redact
from .base import LLM, Completion, Message, OptionProbs
from .options import check_options, top_logprobs_of

__all__ = ["RateLimiter", "RemoteLLM", "RetryPolicy"]

log = logging.getLogger(__name__)
T = TypeVar("T")

@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter.

    Attributes:
        max_attempts: attempts per call, the first included.
        base_delay: seconds before the first retry (doubled each time, then jittered down to 0..delay).
        max_delay: cap of one wait, ``Retry-After`` included (a server asking for longer fails the call).
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 60.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``; None when no attempt is left."""
        if attempt >= self.max_attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_delay else None
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits over a sliding 60-second window (one per event loop)."""

    def __init__(self, rpm: int | None, tpm: int | None, *, window: float = 60.0) -> None:
        self.rpm, self.tpm, self.window = rpm, tpm, window
        self._events: collections.deque[tuple[float, int]] = collections.deque()
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int) -> None:
        """Wait until one more request of about ``tokens`` tokens fits in the window, then record it."""
        if not self.rpm and not self.tpm:
            return
        async with self._lock:
            while True:
                now = time.monotonic()
                while self._events and now - self._events[0][0] >= self.window:
                    self._events.popleft()
                used = sum(t for _, t in self._events)
                fits_rpm = not self.rpm or len(self._events) < self.rpm
                fits_tpm = not self.tpm or not self._events or used + tokens <= self.tpm
                if fits_rpm and fits_tpm:
                    self._events.append((now, tokens))
                    return
                await asyncio.sleep(max(0.01, self.window - (now - self._events[0][0])))


def estimate_tokens(messages: Sequence[Message], max_tokens: int) -> int:
    """A rough token count for rate limiting: 4 characters a token, plus the completion cap."""
    return sum(len(m["content"]) for m in messages) // 4 + max_tokens


class RemoteLLM(LLM):
    """Base of the HTTP API backends.

    Args:
        model: the provider's model name.
        base_url: API root; a list of roots is used round-robin (one model served by several servers).
        timeout: seconds per request.
        max_concurrency: requests in flight at once (per event loop).
        rpm, tpm: requests / tokens per minute (None: unlimited).
        retry: the retry policy.
        api_key: a key given in code (else the provider's environment variable is read at the first call).
    """

    #: provider name used in identities and price lookups
    backend: str = ""
    #: environment variables searched for the key, in order
    key_env: tuple[str, ...] = ()
    #: whether a base_url alone (a local server) may go without a key
    keyless_with_base_url: bool = True
    #: whether the API returns next-token logprobs (else :meth:`option_probs` is the sampling fallback)
    has_logprobs: bool = False
    extra: str = ""
    #: attributes holding live state (set by :meth:`_init_live`): never pickled, so never part of a fingerprint
    live_fields: tuple[str, ...] = ("_clients", "_loop_state", "_rng", "_next_url", "retries", "_api_key")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A provider that claims logprobs must implement ``_top_logprobs(client, messages, params, n)``: one attempt
        at the first output token's top ``n`` ``(token, logprob)`` pairs and the usage (checked at class creation)."""
        super().__init_subclass__(**kwargs)
        if cls.has_logprobs and not callable(getattr(cls, "_top_logprobs", None)):
            raise TypeError(f"{cls.__name__} sets has_logprobs but does not implement _top_logprobs")

    def __init__(self, model: str, *, base_url: str | Sequence[str] | None = None, timeout: float = 120.0,
                 max_concurrency: int = 8, rpm: int | None = None, tpm: int | None = None,
                 retry: RetryPolicy | None = None, max_retries: int | None = None, api_key: str | None = None) -> None:
        if not model:
            raise ConfigError(f"{self.backend}: a model name is required")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency={max_concurrency} must be at least 1")
        self.model = model
        urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
        self.base_urls: list[str] = [u.rstrip("/") for u in urls]
        self.timeout = float(timeout)
        self.max_concurrency = max_concurrency
        self.rpm, self.tpm = rpm, tpm
        self.retry = retry or RetryPolicy(**({"max_attempts": max_retries + 1} if max_retries is not None else {}))
        self._api_key = api_key
        self._init_live()

    def _init_live(self) -> None:
        self._clients: weakref.WeakKeyDictionary[Any, dict[str | None, Any]] = weakref.WeakKeyDictionary()
        self._loop_state: weakref.WeakKeyDictionary[Any, tuple[asyncio.Semaphore, RateLimiter]] = (
            weakref.WeakKeyDictionary())
        self._next_url = 0
        self._rng = random.Random()
        self.retries = 0  # attempts beyond the first, over this object's life (for reports and tests)

    # ---------------------------------------------------------------- secrets and identity
    def _key(self) -> str | None:
        if self._api_key:
            return self._api_key
        for name in self.key_env:
            if os.environ.get(name):
                return os.environ[name]
        if self.base_urls and self.keyless_with_base_url:
            return "not-needed"
        raise AuthenticationError(f"{self.backend}: no API key: set {' or '.join(self.key_env)}")

    def _secrets(self) -> list[str]:
        found = [self._api_key or ""] + [os.environ.get(n, "") for n in self.key_env]
        return [s for s in found if s and s != "not-needed"]

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"backend": self.backend, "model": self.model}
        if self.base_urls:
            urls = [_public_url(u) for u in self.base_urls]
            ident["base_url"] = urls[0] if len(urls) == 1 else urls
        return ident

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in self.live_fields}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._api_key = None
        self._init_live()

    # ---------------------------------------------------------------- live state, per event loop
    def _client(self, base_url: str | None) -> Any:
        loop = asyncio.get_running_loop()  # SDK clients hold an httpx client bound to the loop that made it
        per_loop = self._clients.setdefault(loop, {})
        if base_url not in per_loop:
            per_loop[base_url] = self._new_client(self._key(), base_url)
        return per_loop[base_url]

    async def aclose(self) -> None:
        for client in self._clients.pop(asyncio.get_running_loop(), {}).values():
            await self._close_client(client)

    async def _close_client(self, client: Any) -> None:
        await client.close()

    def _state(self) -> tuple[asyncio.Semaphore, RateLimiter]:
        loop = asyncio.get_running_loop()
        if loop not in self._loop_state:
            self._loop_state[loop] = (asyncio.Semaphore(self.max_concurrency), RateLimiter(self.rpm, self.tpm))
        return self._loop_state[loop]

    def _pick_url(self) -> str | None:
        if not self.base_urls:
            return None
        url = self.base_urls[self._next_url % len(self.base_urls)]
        self._next_url += 1
        return url

    # ---------------------------------------------------------------- the primitives
    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> Completion:
        msgs = [dict(m) for m in messages]
        comp, seconds = await self._attempts(msgs, int(params.get("max_tokens", 768)),
                                             lambda client: self._request(client, msgs, schema, params))
        return Completion(comp.text, comp.usage, seconds)

    async def option_probs(self, messages: Sequence[Message], options: Sequence[str], *,
                           params: Mapping[str, Any]) -> OptionProbs:
        if not self.has_logprobs:
            return await super().option_probs(messages, options, params=params)
        opts, n = check_options(options), top_logprobs_of(params)
        msgs = [dict(m) for m in messages]
        top_logprobs = self._top_logprobs  # type: ignore[attr-defined]  # present: see __init_subclass__
        (top, usage), seconds = await self._attempts(msgs, 1, lambda client: top_logprobs(client, msgs, params, n))
        return OptionProbs.from_top(top, opts, usage=usage, seconds=seconds)

    async def _attempts(self, msgs: list[dict[str, str]], max_tokens: int,
                        request: Callable[[Any], Awaitable[T]]) -> tuple[T, float]:
        """``request(client)`` under the concurrency and rate limits, retried by the policy; (result, seconds)."""
        sem, limiter = self._state()
        attempt = 0
        while True:
            attempt += 1
            async with sem:
                await limiter.acquire(estimate_tokens(msgs, max_tokens))
                start = time.perf_counter()
                try:
                    result = await request(self._client(url := self._pick_url()))
                    return result, time.perf_counter() - start
                except BackendError as err:
                    error = self._clean(err)
            wait = self.retry.delay(attempt, error.retry_after, self._rng) if error.retryable else None
            if wait is None:
                raise error from None
            self.retries += 1
            log.warning("%s %s (%s): attempt %d failed: %s; retrying in %.1f s", self.backend, self.model, url,
                        attempt, error, wait)
            await asyncio.sleep(wait)

    def _clean(self, err: BackendError) -> BackendError:
        """The same error with every secret removed from its message."""
        return type(err)(redact(str(err), self._secrets()), status=err.status, retry_after=err.retry_after)

    @abc.abstractmethod
    def _new_client(self, api_key: str | None, base_url: str | None) -> Any:
        """Create the provider SDK's async client (SDK retries off)."""

    @abc.abstractmethod
    async def _request(self, client: Any, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
                       params: Mapping[str, Any]) -> Completion:
        """One attempt; raise :class:`~hf_rgda.BackendError` subclasses (with ``status`` and ``retry_after``)."""


def retry_after_of(response: Any) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header of an httpx-like response, if any."""
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def status_error(cls_by_status: Mapping[int, type[BackendError]], status: int, message: str,
                 retry_after: float | None) -> BackendError:
    """The library error for an HTTP status: the mapped class, 5xx -> ServerError, else BackendError."""
    from .._exceptions import ServerError

    cls = cls_by_status.get(status) or (ServerError if status >= 500 else BackendError)
    return cls(message[:500], status=status, retry_after=retry_after)


def _public_url(url: str) -> str:
    """``url`` without user info or query (where a key could be written): the identity reaches summaries and cards."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))
