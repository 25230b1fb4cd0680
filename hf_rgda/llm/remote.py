"""What every remote (HTTP API) backend shares: concurrency, rate limits, retries, key handling, redaction.

A provider module implements :meth:`RemoteLLM._request` (one attempt, SDK errors mapped to the library's
:class:`~hf_rgda.BackendError` subclasses, ``retry_after`` filled from the response) and :meth:`RemoteLLM._new_client`;
one whose API returns logprobs also sets ``has_logprobs`` and implements ``_top_logprobs`` (checked at class creation).
This class adds a semaphore per running event loop (``max_concurrency``), a requests- and tokens-per-minute limiter
shared by every event loop and thread of the process, and bounded retries with exponential backoff and full jitter that
honour ``Retry-After`` (SDK-level retries are off: one retry policy, visible in the config).

Limits and ``datasets.map``: each map batch runs in an event loop of its own, one batch after another; the
``rpm``/``tpm`` limiter is one per process for each backend identity (backend, model, base URLs) and limits, so it
holds across batches, and it counts a request until it is over (:class:`~hf_rgda.llm.limits.RateLimiter`), so the provider, which counts
arrivals, never sees more than ``rpm`` in a window. Under ``num_proc=N`` every worker process has its own limiter: the
provider sees up to N times the limits (divide them by N). On a Ray cluster (:mod:`hf_rgda.scale`) every worker's
limiter asks one actor (:func:`~hf_rgda.llm.limits.use_limiters`): the limits hold for the cluster, timed at admission. The seeds of one
batch run concurrently, so the requests in flight are at most ``max_concurrency`` and, in practice, about
``batch_size`` times the calls one seed makes at once: raise ``batch_size`` along with ``max_concurrency``.

Secrets: keys are read from the environment at the first call. A key given in code (``api_key``) and the credentials
of a ``base_url`` (``http://user:password@host/v1``, or a query such as ``?api-key=...``) are held in the process's secret registry
(:mod:`hf_rgda._secrets`) under an id derived from the backend's public identity: the pickled state (what ``datasets``
hashes into its fingerprint and sends to ``num_proc`` workers) has the id only, so the fingerprint does not depend on
the key, and the workers find the secret in the memory they inherit (fork) or in the ``HF_RGDA_SECRET_<id>``
variable (spawn, forkserver); a worker that finds neither stops with an :class:`~hf_rgda.AuthenticationError` that
says so (never a silent fallback to another key). The base URLs kept and shown are without their user info and
the query's credential parameters (a parameter such as ``api-version`` stays: it is part of the identity); the user
info is put back only in the URL handed to the SDK, the query's parameters are handed to it apart from the URL (the
SDK sends them with every request), and a filter on the HTTP stack's loggers
(:func:`~hf_rgda._secrets.install_log_redaction`) scrubs user info and every known key from their records at every
level. Secrets are kept out of ``identity()``, ``repr``, ``__getstate__`` and every message raised or logged (:func:`redact`).
"""

from __future__ import annotations

import abc
import asyncio
import json
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
from .._secrets import (
    install_log_redaction,
    public_url,
    query_secrets,
    redact,
    register_secret,
    registered_secret,
    secret_id,
    split_url,
)
from .base import LLM, Completion, Message, OptionProbs
from .limits import RateLimiter, shared_limiter
from .options import check_options, top_logprobs_of

__all__ = ["RemoteLLM", "RetryPolicy"]

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


def estimate_tokens(messages: Sequence[Message], max_tokens: int) -> int:
    """A rough token count for rate limiting: 4 characters a token, plus the completion cap."""
    return sum(len(m["content"]) for m in messages) // 4 + max_tokens


class RemoteLLM(LLM):
    """Base of the HTTP API backends.

    Args:
        model: the provider's model name.
        base_url: API root; a list of roots is used round-robin (one model served by several servers).
        timeout: seconds per request.
        max_concurrency: requests in flight at once (per event loop, i.e. per map batch).
        rpm, tpm: requests / tokens per minute (None: unlimited), held by one limiter per process for this backend
            identity (see the module's docstring for ``num_proc``).
        retry: the retry policy.
        api_key: a key given in code (else the provider's environment variable is read at the first call); it
            reaches ``num_proc`` workers through the process's secret registry, never through the pickled state.
        key_from_env: whether the environment's key may be sent; ``False`` for a ``base_url`` a web demo's visitor
            chose: only ``api_key`` or the URL's own credentials go there.
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
    #: attributes holding live state (set by :meth:`_init_live`) or secrets: never pickled, so never part of a
    #: fingerprint
    live_fields: tuple[str, ...] = ("_clients", "_loop_state", "_rng", "_next_url", "retries", "_api_key", "_url_auth",
                                    "_url_query")
    #: seconds of the ``rpm``/``tpm`` sliding window (a test may shorten it on an instance)
    rate_window: float = 60.0
    #: why the SDK cannot send a base URL's query parameters ("" where it can): such a URL is refused
    no_query: str = ""
    #: the secret registry id of the secrets given in code; set (and pickled) only when there are some
    _secret_id: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A provider that claims logprobs must implement ``_top_logprobs(client, messages, params, n)``: one attempt
        at the first output token's top ``n`` ``(token, logprob)`` pairs and the usage (checked at class creation)."""
        super().__init_subclass__(**kwargs)
        if cls.has_logprobs and not callable(getattr(cls, "_top_logprobs", None)):
            raise TypeError(f"{cls.__name__} sets has_logprobs but does not implement _top_logprobs")

    def __init__(self, model: str, *, base_url: str | Sequence[str] | None = None, timeout: float = 120.0,
                 max_concurrency: int = 8, rpm: int | None = None, tpm: int | None = None,
                 retry: RetryPolicy | None = None, max_retries: int | None = None, api_key: str | None = None,
                 key_from_env: bool = True) -> None:
        if not model:
            raise ConfigError(f"{self.backend}: a model name is required")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency={max_concurrency} must be at least 1")
        for name, limit in (("rpm", rpm), ("tpm", tpm)):
            if limit is not None and (not isinstance(limit, int) or limit < 1):
                raise ConfigError(f"{name}={limit!r} (--{name}) must be a whole number of at least 1, or unset for "
                                  "no limit")
        self.model = model
        urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
        self.base_urls: list[str] = []
        self._url_auth: dict[str, str] = {}  # base URL (as kept) -> its user info
        self._url_query: dict[str, str] = {}  # base URL (as kept) -> its whole query, where it holds a credential
        for u in urls:
            if self.no_query and urllib.parse.urlsplit(u).query:
                raise ConfigError(f"{self.backend}: a base_url with a query (?...) cannot be used: {self.no_query}")
            public, userinfo, query = split_url(u.rstrip("/"))
            self.base_urls.append(public)
            if userinfo:
                self._url_auth[public] = userinfo
            if query:
                self._url_query[public] = query
        self.timeout = float(timeout)
        self.max_concurrency = max_concurrency
        self.rpm, self.tpm = rpm, tpm
        self.retry = retry or RetryPolicy(**({"max_attempts": max_retries + 1} if max_retries is not None else {}))
        self._api_key = api_key
        self.key_from_env = bool(key_from_env)
        if api_key or self._url_auth or self._url_query:
            self._secret_id = secret_id({"backend": self.backend, "model": self.model, "base_urls": self.base_urls})
            self._register_secrets()
        self._init_live()

    def _init_live(self) -> None:
        self._clients: weakref.WeakKeyDictionary[Any, dict[str | None, Any]] = weakref.WeakKeyDictionary()
        self._loop_state: weakref.WeakKeyDictionary[Any, tuple[asyncio.Semaphore, RateLimiter]] = (
            weakref.WeakKeyDictionary())
        self._next_url = 0
        self._rng = random.Random()
        self.retries = 0  # attempts beyond the first, over this object's life (for reports and tests)

    # ---------------------------------------------------------------- secrets and identity
    def _register_secrets(self) -> None:
        if self._secret_id and (self._api_key or self._url_auth or self._url_query):
            register_secret(self._secret_id, json.dumps({"api_key": self._api_key, "url_auth": self._url_auth,
                                                         "url_query": self._url_query}))

    def _given_secrets(self) -> None:
        """In a copy made by unpickling (a ``num_proc`` worker): fetch the secrets given in code from the registry."""
        if not self._secret_id or self._api_key or self._url_auth or self._url_query:
            return
        raw = registered_secret(self._secret_id)
        if raw is None:
            raise AuthenticationError(
                f"{self.backend}: the api_key or base_url credentials given in code did not reach this process (it "
                "started before they were registered, or outside the process that made the backend); set "
                f"{' or '.join(self.key_env) or 'the key'} in the environment instead")
        given = json.loads(raw)
        self._api_key, self._url_auth = given.get("api_key"), dict(given.get("url_auth") or {})
        self._url_query = dict(given.get("url_query") or {})

    def _key(self) -> str | None:
        self._given_secrets()
        if self._api_key:
            return self._api_key
        env = [os.environ[n] for n in self.key_env if self.key_from_env and os.environ.get(n)]
        if env or (self.base_urls and self.keyless_with_base_url):
            return env[0] if env else "not-needed"
        raise AuthenticationError(f"{self.backend}: no API key: set {' or '.join(self.key_env)}" if self.key_from_env
                                  else f"{self.backend}: no API key given (the environment's is not sent to this URL)")

    def _secrets(self) -> list[str]:
        userinfo = [part for u in self._url_auth.values() for part in (u, u.split(":", 1)[-1])]  # not the user name
        query = [v for q in self._url_query.values() for v in query_secrets(q)]
        found = [self._api_key or "", *userinfo, *query] + [os.environ.get(n, "") for n in self.key_env]
        return sorted({s for s in found if s and s != "not-needed"}, key=len, reverse=True)

    def _sdk_target(self, base_url: str | None) -> tuple[str | None, dict[str, str]]:
        """What the SDK is given for ``base_url``: the URL with its user info and without its query (a query left in
        it ends up before each request's path), and the query's parameters, which the SDK sends with each request."""
        if base_url is None:
            return None, {}
        self._given_secrets()
        parts = urllib.parse.urlsplit(base_url)
        query = self._url_query.get(base_url, parts.query)
        url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        if userinfo := self._url_auth.get(base_url):
            scheme, rest = url.split("://", 1)
            url = f"{scheme}://{userinfo}@{rest}"
        return url, dict(urllib.parse.parse_qsl(query, keep_blank_values=True))

    def identity(self) -> dict[str, Any]:
        ident: dict[str, Any] = {"backend": self.backend, "model": self.model}
        if self.base_urls:
            urls = [public_url(u) for u in self.base_urls]
            ident["base_url"] = urls[0] if len(urls) == 1 else urls
        return ident

    def __getstate__(self) -> dict[str, Any]:
        self._register_secrets()  # the object pickled last (hashed, sent to workers) is the one its copies find
        return {k: v for k, v in self.__dict__.items() if k not in self.live_fields}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._api_key = None
        self._url_auth, self._url_query = {}, {}
        self._init_live()

    # ---------------------------------------------------------------- live state, per event loop
    def _client(self, base_url: str | None) -> Any:
        loop = asyncio.get_running_loop()  # SDK clients hold an httpx client bound to the loop that made it
        per_loop = self._clients.setdefault(loop, {})
        if base_url not in per_loop:
            per_loop[base_url] = self._new_client(self._key(), *self._sdk_target(base_url))
            install_log_redaction()  # after the SDK's import, so its loggers exist
        return per_loop[base_url]

    async def aclose(self) -> None:
        for client in self._clients.pop(asyncio.get_running_loop(), {}).values():
            await self._close_client(client)

    async def _close_client(self, client: Any) -> None:
        await client.close()

    def _state(self) -> tuple[asyncio.Semaphore, RateLimiter]:
        """This event loop's semaphore and the process's limiter of this backend."""
        loop = asyncio.get_running_loop()
        if loop not in self._loop_state:
            limiter = shared_limiter(self.identity(), self.rpm, self.tpm, self.rate_window)
            self._loop_state[loop] = (asyncio.Semaphore(self.max_concurrency), limiter)
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
                ticket = None
                try:
                    client = self._client(url := self._pick_url())  # made first: the limits time requests as they go
                    ticket = await limiter.acquire(estimate_tokens(msgs, max_tokens))
                    start = time.perf_counter()
                    result = await request(client)
                    return result, time.perf_counter() - start
                except BackendError as err:
                    error = self._clean(err)
                finally:
                    limiter.release(ticket)
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
    def _new_client(self, api_key: str | None, base_url: str | None, query: Mapping[str, str]) -> Any:
        """Create the provider SDK's async client (SDK retries off) for ``base_url`` (no query in it), sending the
        parameters ``query`` with every request."""

    @abc.abstractmethod
    async def _request(self, client: Any, messages: list[dict[str, str]], schema: Mapping[str, Any] | None,
                       params: Mapping[str, Any]) -> Completion:
        """One attempt; raise :class:`~hf_rgda.BackendError` subclasses (with ``status`` and ``retry_after``)."""


def import_sdk(module: str, backend: str, extra: str) -> Any:
    """Import a provider SDK lazily, or raise an ImportError that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"the {backend} backend needs {module}: pip install 'hf_rgda[{extra}]'") from err


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
