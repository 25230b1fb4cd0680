"""Requests- and tokens-per-minute limits: one limiter per backend identity and limits in a process
(:func:`shared_limiter`), or, on a Ray cluster, limiters that ask one actor (:func:`use_limiters`,
:mod:`hf_rgda.scale`). :class:`~hf_rgda.llm.remote.RemoteLLM` waits on its limiter before each request.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Admission", "LimiterSource", "RateLimiter", "shared_limiter", "use_limiters"]


@dataclass
class Admission:
    """One admitted request: when it counts from (its admission, then its end) and its tokens; ``open`` until it is
    released (counted however old while open)."""

    at: float
    tokens: float
    open: bool = True


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits over a sliding window (60 seconds by default).

    A request counts from its admission (:meth:`acquire`) and, once it is over (:meth:`release`), from the moment it
    ended: the provider counts a request when it arrives, which is after its admission (a new client to build, a
    connection to open), so timing admissions alone let ``rpm + 1`` requests arrive within one window; counted while
    in flight and for a window from their end, no window of the provider's holds more than ``rpm`` of them.

    Usable from any event loop and thread at once (its state is guarded by a thread lock, never held across an
    ``await``): :func:`shared_limiter` gives the one limiter of a backend in this process.
    """

    def __init__(self, rpm: int | None, tpm: int | None, *, window: float = 60.0) -> None:
        self.rpm, self.tpm, self.window = rpm, tpm, window
        self._events: list[Admission] = []
        self._lock = threading.Lock()

    async def acquire(self, tokens: int) -> Any:
        """Wait until one more request of about ``tokens`` tokens fits in the window, then record it; returns the
        ticket to hand to :meth:`release` when the request is over (None without limits). A request stays counted
        until it is released: every acquire needs its release."""
        if not self.rpm and not self.tpm:
            return None
        while True:
            with self._lock:
                now = time.monotonic()
                self._events = [e for e in self._events if e.open or now - e.at < self.window]
                used = sum(e.tokens for e in self._events)
                fits_rpm = not self.rpm or len(self._events) < self.rpm
                fits_tpm = not self.tpm or not self._events or used + tokens <= self.tpm
                if fits_rpm and fits_tpm:
                    event = Admission(now, float(tokens))
                    self._events.append(event)
                    return event
                closed = [e.at for e in self._events if not e.open]
                wait = max(0.01, self.window - (now - min(closed))) if closed else 0.05  # else: until one ends
            await asyncio.sleep(wait)

    def release(self, ticket: Any) -> None:
        """The request of ``ticket`` (what :meth:`acquire` returned) is over, answered or failed: it counts from
        now, for one window."""
        if isinstance(ticket, Admission):
            with self._lock:
                ticket.at, ticket.open = max(ticket.at, time.monotonic()), False


_limiters: dict[tuple[Any, ...], RateLimiter] = {}
_limiters_lock = threading.Lock()
#: what makes a limiter (``source(identity key, rpm, tpm, window)``): this process's own, or one that asks elsewhere
LimiterSource = Callable[[str, int | None, int | None, float], RateLimiter]
_limiter_source: LimiterSource | None = None


def shared_limiter(identity: Mapping[str, Any], rpm: int | None, tpm: int | None, window: float) -> RateLimiter:
    """The process's one limiter for a backend identity and its limits (created at the first request)."""
    key = (json.dumps(identity, sort_keys=True, default=str), rpm, tpm, window)
    with _limiters_lock:
        if key not in _limiters:
            make = _limiter_source or (lambda _, r, t, w: RateLimiter(r, t, window=w))
            _limiters[key] = make(*key)
        return _limiters[key]


def use_limiters(source: LimiterSource | None) -> None:
    """Make every backend of this process take its ``rpm``/``tpm`` limiter from ``source(identity, rpm, tpm,
    window)`` from now on (``identity``: the backend identity as JSON text), or from this process again (None):
    :mod:`hf_rgda.scale` gives a cluster's workers limiters that ask one actor, so the limits hold cluster-wide."""
    global _limiter_source
    with _limiters_lock:
        _limiter_source = source
        _limiters.clear()


def _after_fork_in_child() -> None:
    """A forked worker keeps the limiters' history (the parent's recent requests still count) with fresh locks."""
    global _limiters_lock
    _limiters_lock = threading.Lock()
    for limiter in _limiters.values():
        limiter._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
