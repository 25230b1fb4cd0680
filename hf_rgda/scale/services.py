"""What the runs on a Ray cluster share, and where: the response cache, the failure ledger and the secrets given in
code on the driver's node; the ``rpm``/``tpm`` limiters once for the cluster.

Two actors, neither needing a CPU (a head started with ``--num-cpus 0`` can hold them):

* the store (:class:`Store`), one per driver, on its node, started at its first run and living as long as it:
  the SQLite response cache and the failure ledger the augmenter names there, the secrets given in code, and each
  run's receipts. A worker asks it for every cached answer and hands it every paid one before using it, so a call
  answered once, on any node, is not paid again on a rerun or a retry elsewhere; a failed seed is recorded in the
  driver's ledger exactly as on one machine.
* the limits (:class:`Limits`), one detached actor per cluster (``hf_rgda_limits`` in namespace ``hf_rgda``), shared
  by every driver: one :class:`~hf_rgda.llm.limits.RateLimiter` per backend identity and limits, which every
  worker's requests wait on (:func:`~hf_rgda.llm.limits.use_limiters`), so ``rpm``/``tpm`` hold for the cluster. It
  holds no secret.

A key given in code (``api_key``, a ``base_url``'s password) never travels in a pickle, a ``runtime_env`` or a log:
the augmenter's pickled state holds only its registry id (:mod:`hf_rgda._secrets`); the driver hands the secret to
the store by an actor call, and each worker asks the store for it by that id and registers it in its own process.
Keys read from the environment are read from each worker node's own environment.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .._secrets import register_secret, registered_secret
from ..cache import ResponseCache, default_cache_path
from ..failures import FailureLedger, ledger_folder
from ..llm.base import Completion
from ..llm.limits import RateLimiter, use_limiters

__all__ = ["LIMITS_ACTOR", "NAMESPACE", "ClusterServices", "Limits", "Store"]


class Store:
    """The store actor's class, one per driver: the response caches and failure ledgers of the driver's runs (the
    files each run's augmenter names), the secrets given in code, and each run's receipts (``run`` tells them apart).
    """

    def __init__(self) -> None:
        self.runs: dict[str, tuple[ResponseCache | None, FailureLedger]] = {}
        self.caches: dict[str, ResponseCache] = {}  # by file: one connection per thread, kept across runs
        self.secrets: dict[str, str] = {}
        self.rows: dict[str, set[int]] = collections.defaultdict(set)
        self.workers: dict[str, dict[int, str]] = collections.defaultdict(dict)
        self.stops: dict[str, BaseException] = {}
        self._lock = threading.Lock()

    def begin(self, run: str, cache_path: str | None, ledger_path: str) -> None:
        """``run`` starts, its response cache in ``cache_path`` (None: none) and its ledger in ``ledger_path``."""
        with self._lock:
            cache = self.caches.setdefault(cache_path, ResponseCache(cache_path)) if cache_path else None
            self.runs[run] = (cache, FailureLedger(ledger_path))

    def get(self, run: str, key: str) -> Completion | None:
        cache = self.runs[run][0]
        return cache.get(key) if cache is not None else None

    def put(self, run: str, key: str, completion: Completion) -> None:
        cache = self.runs[run][0]
        if cache is not None:
            cache.put(key, completion)

    def size(self, run: str) -> int:
        cache = self.runs[run][0]
        return len(cache) if cache is not None else 0

    def token(self, run: str, ident: str) -> str:
        return self.runs[run][1].token(ident)

    def record(self, run: str, ident: str, failed: list[str]) -> None:
        with self._lock:  # one batch's new token at a time (any of them does: each is new)
            self.runs[run][1].record(ident, failed)

    def hold(self, sid: str, value: str) -> None:
        self.secrets[sid] = value

    def secret(self, sid: str) -> str | None:
        return self.secrets.get(sid)

    def hello(self, run: str, pid: int, node: str) -> None:
        """A worker process started serving ``run`` (``pid`` on node ``node``)."""
        with self._lock:
            self.workers[run][pid] = node

    def done(self, run: str, rows: list[int]) -> None:
        """A batch of these seed rows of ``run`` came back from a worker."""
        with self._lock:
            self.rows[run].update(rows)

    def stopped(self, run: str, err: BaseException) -> None:
        """A worker's batch of ``run`` raised what stops a run (the first one is kept)."""
        with self._lock:
            self.stops.setdefault(run, err)

    def outcome(self, run: str) -> tuple[list[int], dict[int, str], BaseException | None]:
        """``run``'s seed rows done, its worker processes, and what stopped it (if anything did)."""
        with self._lock:
            return sorted(self.rows[run]), dict(self.workers[run]), self.stops.get(run)

    def forget(self, run: str) -> None:
        with self._lock:
            for table in (self.runs, self.rows, self.workers, self.stops):
                table.pop(run, None)


class Limits:
    """The limits actor's class (an async actor): one rate limiter per backend identity and limits, and the
    requests in flight (admitted, not yet released) by number."""

    def __init__(self) -> None:
        self.limiters: dict[tuple[str, int | None, int | None, float], RateLimiter] = {}
        self.open: dict[int, tuple[RateLimiter, Any]] = {}
        self.numbers = itertools.count()

    async def ready(self) -> bool:
        return True

    async def acquire(self, key: str, rpm: int | None, tpm: int | None, window: float, tokens: int) -> int | None:
        """Return once one more request of ``tokens`` tokens fits this backend's limits, cluster-wide: the number to
        release it by (None without limits)."""
        limiter = self.limiters.setdefault((key, rpm, tpm, window), RateLimiter(rpm, tpm, window=window))
        ticket = await limiter.acquire(tokens)
        if ticket is None:
            return None
        number = next(self.numbers)
        self.open[number] = (limiter, ticket)
        return number

    async def release(self, number: int) -> None:
        """The request admitted as ``number`` is over: it counts from now (a worker killed mid-request never
        releases; its request stays counted, which errs on the provider's side)."""
        if (held := self.open.pop(number, None)) is not None:
            held[0].release(held[1])


class ClusterLimiter(RateLimiter):
    """A worker's limiter of one backend: it waits on the limits actor (no local window) and tells it when a
    request is over."""

    def __init__(self, actor: Any, key: str, rpm: int | None, tpm: int | None, window: float) -> None:
        super().__init__(rpm, tpm, window=window)
        self.actor, self.key = actor, key

    async def acquire(self, tokens: int) -> int | None:
        """The limits actor's number for the admitted request (None without limits)."""
        if not self.rpm and not self.tpm:
            return None
        return await self.actor.acquire.remote(self.key, self.rpm, self.tpm, self.window, tokens)

    def release(self, ticket: Any) -> None:
        if ticket is not None:
            self.actor.release.remote(ticket)  # not waited on: the actor times it when it arrives, a little later


class StoreCache(ResponseCache):
    """A worker's response cache: every read and write goes to the store actor on the driver's node."""

    def __init__(self, store: Any, run: str) -> None:
        super().__init__(Path(os.devnull))  # no file of its own
        self.store, self.run = store, run

    def get(self, key: str) -> Completion | None:
        return ray.get(self.store.get.remote(self.run, key))

    def put(self, key: str, completion: Completion) -> None:
        ray.get(self.store.put.remote(self.run, key, completion))  # stored before the answer is used: a retry finds it

    def __len__(self) -> int:
        return ray.get(self.store.size.remote(self.run))


class StoreLedger(FailureLedger):
    """A worker's failure ledger: the driver's, through the store actor."""

    def __init__(self, store: Any, run: str) -> None:
        super().__init__(os.devnull)
        self.store, self.run = store, run

    def token(self, ident: str) -> str:
        return ray.get(self.store.token.remote(self.run, ident))

    def record(self, ident: str, failed: Sequence[str]) -> None:
        ray.get(self.store.record.remote(self.run, ident, list(failed)))


@dataclass
class ClusterServices:
    """Handles on a run's actors, pickled into every worker (no secret in them: the ids only).

    Attributes:
        store, limits: the actors.
        run: this run's id (a driver's runs share its store).
        secret_ids: the registry ids of the secrets the augmenter's backends were given in code.
        cached: whether the run has a response cache.
    """

    store: Any
    limits: Any
    run: str
    secret_ids: tuple[str, ...] = ()
    cached: bool = True

    @classmethod
    def start(cls, augmenter: Any) -> ClusterServices:
        """The services of a run of ``augmenter``: the driver's store (started on this, the driver's, node at its
        first run, living as long as the driver), serving the cache and ledger files the augmenter names as this
        process resolves them, and handed the secrets its backends were given in code; and the cluster's limits
        actor (a detached actor every driver shares, started by the first)."""
        cache = _cache_file(augmenter.cache_path)
        ledger = ledger_folder(cache or default_cache_path())
        job = ray.get_runtime_context().get_job_id()
        with _stores_lock:
            if job not in _stores:
                here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
                _stores[job] = ray.remote(num_cpus=0, max_concurrency=16, scheduling_strategy=here)(Store).remote()
            store = _stores[job]
        run = uuid.uuid4().hex
        limits = ray.remote(Limits).options(name=LIMITS_ACTOR, namespace=NAMESPACE, lifetime="detached",
                                            get_if_exists=True, num_cpus=0, max_restarts=-1,
                                            max_concurrency=1000).remote()
        sids = tuple(sorted({sid for llm in _backends(augmenter) if (sid := getattr(llm, "_secret_id", None))}))
        for sid in sids:
            value = registered_secret(sid)
            if value is not None:
                store.hold.remote(sid, value)  # an actor call's argument: not in the actor's creation record
        ray.get([store.begin.remote(run, str(cache) if cache else None, str(ledger)), limits.ready.remote()])
        return cls(store, limits, run, sids, cache is not None)

    def attach(self, augmenter: Any) -> None:
        """In a worker: register the secrets given in code, take limiters from the limits actor, and serve
        ``augmenter``'s cache and ledger from the store."""
        for sid in self.secret_ids:
            value = ray.get(self.store.secret.remote(sid))
            if value is not None:
                register_secret(sid, value)
        limits = self.limits
        use_limiters(lambda key, rpm, tpm, window: ClusterLimiter(limits, key, rpm, tpm, window))
        augmenter.serve_from(StoreCache(self.store, self.run) if self.cached else None,
                             StoreLedger(self.store, self.run))
        self.store.hello.remote(self.run, os.getpid(), ray.get_runtime_context().get_node_id())

    def done(self, rows: Iterable[int]) -> None:
        """In a worker: the receipt of a batch of seed rows."""
        ray.get(self.store.done.remote(self.run, [int(r) for r in rows]))

    def stopped(self, err: BaseException) -> None:
        """In a worker: hand the store what stopped a batch (an :class:`~hf_rgda.RGDAError`, its message redacted)."""
        ray.get(self.store.stopped.remote(self.run, err.with_traceback(None)))

    def outcome(self) -> tuple[list[int], dict[int, str], BaseException | None]:
        """The seed rows whose batch came back, the worker processes (pid: node id) that served the run, and what
        stopped a batch (None if nothing did)."""
        return ray.get(self.store.outcome.remote(self.run))

    def stop(self) -> None:
        """The run is over: the store forgets its receipts (the actors stay for the driver's next run)."""
        self.store.forget.remote(self.run)


#: the limits actor's name and namespace (one per cluster, shared by every driver)
LIMITS_ACTOR, NAMESPACE = "hf_rgda_limits", "hf_rgda"
_stores: dict[str, Any] = {}  # a driver's store, by its job
_stores_lock = threading.Lock()


def _cache_file(cache_path: str) -> Path | None:
    """The response cache file an augmenter's ``cache_path`` names in this process (None: no cache)."""
    if not cache_path:
        return None
    return default_cache_path() if cache_path == "default" else Path(cache_path)


def _backends(augmenter: Any) -> list[Any]:
    return [augmenter.llm, *getattr(augmenter, "debate_llms", [])]

