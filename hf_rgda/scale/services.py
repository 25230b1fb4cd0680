"""What a run on a Ray cluster shares, served from the driver's node: the response cache, the failure ledger, the
``rpm``/``tpm`` limiters and the secrets given in code.

Two actors, both pinned to the node the driver runs on and needing no CPU (a head started with ``--num-cpus 0``
takes them):

* the store (:class:`Store`): the driver's SQLite response cache and its failure ledger, the secrets given in code,
  and the receipts of the batches done. A worker asks it for every cached answer and hands it every paid one, so a
  call answered once, on any node, is not paid again on a rerun or a retry elsewhere; a failed seed is recorded in
  the driver's ledger exactly as on one machine.
* the limits (:class:`Limits`): one :class:`~hf_rgda.llm.remote.RateLimiter` per backend identity and limits, which
  every worker's requests wait on (:func:`~hf_rgda.llm.remote.use_limiters`), so ``rpm``/``tpm`` hold for the
  cluster.

A key given in code (``api_key``, a ``base_url``'s password) never travels in a pickle, a ``runtime_env`` or a log:
the augmenter's pickled state holds only its registry id (:mod:`hf_rgda._secrets`); the driver hands the secret to
the store by an actor call, and each worker asks the store for it by that id and registers it in its own process.
Keys read from the environment are read from each worker node's own environment.
"""

from __future__ import annotations

import os
import threading
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
from ..llm.remote import RateLimiter, use_limiters

__all__ = ["ClusterServices", "Limits", "Store"]


class Store:
    """The store actor's class: the driver's response cache and failure ledger, the secrets given in code, receipts.

    Args:
        cache_path: the response cache file, or None for a run without a cache.
        ledger_path: the failure ledger's folder.
    """

    def __init__(self, cache_path: str | None, ledger_path: str) -> None:
        self.cache = ResponseCache(cache_path) if cache_path is not None else None
        self.ledger = FailureLedger(ledger_path)
        self.secrets: dict[str, str] = {}
        self.rows: set[int] = set()
        self.workers: dict[int, str] = {}
        self.stop: BaseException | None = None
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        return self.cache.get(key) if self.cache is not None else None

    def put(self, key: str, completion: Completion) -> None:
        if self.cache is not None:
            self.cache.put(key, completion)

    def size(self) -> int:
        return len(self.cache) if self.cache is not None else 0

    def token(self, ident: str) -> str:
        return self.ledger.token(ident)

    def record(self, ident: str, failed: list[str]) -> None:
        with self._lock:  # one batch's new token at a time (any of them does: each is new)
            self.ledger.record(ident, failed)

    def hold(self, sid: str, value: str) -> None:
        self.secrets[sid] = value

    def secret(self, sid: str) -> str | None:
        return self.secrets.get(sid)

    def hello(self, pid: int, node: str) -> None:
        """A worker process started serving the run (``pid`` on node ``node``)."""
        with self._lock:
            self.workers[pid] = node

    def done(self, rows: list[int]) -> None:
        """A batch of these seed rows came back from a worker."""
        with self._lock:
            self.rows.update(rows)

    def receipts(self) -> tuple[list[int], dict[int, str]]:
        """The seed rows done and the worker processes seen."""
        with self._lock:
            return sorted(self.rows), dict(self.workers)

    def stopped(self, err: BaseException) -> None:
        """A worker's batch raised what stops a run (the first one is kept)."""
        with self._lock:
            self.stop = self.stop or err

    def stop_reason(self) -> BaseException | None:
        return self.stop


class Limits:
    """The limits actor's class (an async actor): one rate limiter per backend identity and limits."""

    def __init__(self) -> None:
        self.limiters: dict[tuple[str, int | None, int | None, float], RateLimiter] = {}

    async def acquire(self, key: str, rpm: int | None, tpm: int | None, window: float, tokens: int) -> None:
        """Return once one more request of ``tokens`` tokens fits this backend's limits, cluster-wide."""
        limiter = self.limiters.setdefault((key, rpm, tpm, window), RateLimiter(rpm, tpm, window=window))
        await limiter.acquire(tokens)


class ClusterLimiter(RateLimiter):
    """A worker's limiter of one backend: it waits on the limits actor (no local window)."""

    def __init__(self, actor: Any, key: str, rpm: int | None, tpm: int | None, window: float) -> None:
        super().__init__(rpm, tpm, window=window)
        self.actor, self.key = actor, key

    async def acquire(self, tokens: int) -> None:
        if self.rpm or self.tpm:
            await self.actor.acquire.remote(self.key, self.rpm, self.tpm, self.window, tokens)


class StoreCache(ResponseCache):
    """A worker's response cache: every read and write goes to the store actor on the driver's node."""

    def __init__(self, store: Any) -> None:
        super().__init__(Path(os.devnull))  # no file of its own
        self.store = store

    def get(self, key: str) -> Completion | None:
        return ray.get(self.store.get.remote(key))

    def put(self, key: str, completion: Completion) -> None:
        ray.get(self.store.put.remote(key, completion))  # stored before the answer is used: a retry finds it

    def __len__(self) -> int:
        return ray.get(self.store.size.remote())


class StoreLedger(FailureLedger):
    """A worker's failure ledger: the driver's, through the store actor."""

    def __init__(self, store: Any) -> None:
        super().__init__(os.devnull)
        self.store = store

    def token(self, ident: str) -> str:
        return ray.get(self.store.token.remote(ident))

    def record(self, ident: str, failed: Sequence[str]) -> None:
        ray.get(self.store.record.remote(ident, list(failed)))


@dataclass
class ClusterServices:
    """Handles on one run's actors, pickled into every worker (no secret in them: the ids only).

    Attributes:
        store, limits: the actors.
        secret_ids: the registry ids of the secrets the augmenter's backends were given in code.
        cached: whether the run has a response cache.
    """

    store: Any
    limits: Any
    secret_ids: tuple[str, ...] = ()
    cached: bool = True

    @classmethod
    def start(cls, augmenter: Any) -> ClusterServices:
        """Start the actors of a run of ``augmenter`` on this (the driver's) node, with its cache and ledger files as
        this process resolves them, and hand them the secrets its backends were given in code."""
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        cache = _cache_file(augmenter.cache_path)
        ledger = ledger_folder(cache or default_cache_path())
        store = ray.remote(num_cpus=0, max_concurrency=16, scheduling_strategy=here)(Store).remote(
            str(cache) if cache else None, str(ledger))
        limits = ray.remote(num_cpus=0, max_concurrency=1000, scheduling_strategy=here)(Limits).remote()
        sids = tuple(sorted({sid for llm in _backends(augmenter) if (sid := getattr(llm, "_secret_id", None))}))
        for sid in sids:
            value = registered_secret(sid)
            if value is not None:
                store.hold.remote(sid, value)  # an actor call's argument: not in the actor's creation record
        ray.get(store.size.remote())  # both placed and answering before any worker asks
        return cls(store, limits, sids, cache is not None)

    def attach(self, augmenter: Any) -> None:
        """In a worker: register the secrets given in code, take limiters from the limits actor, and serve
        ``augmenter``'s cache and ledger from the store."""
        for sid in self.secret_ids:
            value = ray.get(self.store.secret.remote(sid))
            if value is not None:
                register_secret(sid, value)
        limits = self.limits
        use_limiters(lambda key, rpm, tpm, window: ClusterLimiter(limits, key, rpm, tpm, window))
        augmenter.serve_from(StoreCache(self.store) if self.cached else None, StoreLedger(self.store))
        self.store.hello.remote(os.getpid(), ray.get_runtime_context().get_node_id())

    def done(self, rows: Iterable[int]) -> None:
        """Receipt for a batch of seed rows."""
        ray.get(self.store.done.remote([int(r) for r in rows]))

    def receipts(self) -> tuple[list[int], dict[int, str]]:
        """The seed rows whose batch came back, and the worker processes (pid: node id) that served the run."""
        return ray.get(self.store.receipts.remote())

    def stopped(self, err: BaseException) -> None:
        """In a worker: hand the store what stopped a batch (an :class:`~hf_rgda.RGDAError`, its message redacted)."""
        ray.get(self.store.stopped.remote(err.with_traceback(None)))

    def stop_reason(self) -> BaseException | None:
        """What stopped a worker's batch, if anything did."""
        return ray.get(self.store.stop_reason.remote())

    def stop(self) -> None:
        for actor in (self.store, self.limits):
            ray.kill(actor)


def _cache_file(cache_path: str) -> Path | None:
    """The response cache file an augmenter's ``cache_path`` names in this process (None: no cache)."""
    if not cache_path:
        return None
    return default_cache_path() if cache_path == "default" else Path(cache_path)


def _backends(augmenter: Any) -> list[Any]:
    return [augmenter.llm, *getattr(augmenter, "debate_llms", [])]

