"""The lock two llama.cpp contexts of one model take in turns (:class:`Turns`): the parallel slots' thread
(:mod:`hf_rgda.llm.slots`) and the model's own context, which answers option questions
(:class:`~hf_rgda.llm.local.LocalLLM`)."""

from __future__ import annotations

import threading
import time

__all__ = ["Turns"]


class Turns:
    """The lock the slots' thread and the model's own context take in turns: an outside caller waiting for it goes
    before the thread's next decode (a plain lock is not fair: the thread, which takes it again microseconds after
    letting it go, would keep it while the option questions wait)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = threading.Lock()
        self.waiting = 0

    def __enter__(self) -> None:
        with self._count:
            self.waiting += 1
        self._lock.acquire()
        with self._count:
            self.waiting -= 1

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def after_waiting(self) -> Turns:
        """The lock, once the callers waiting for it have had it (for the slots' thread)."""
        while self.waiting:
            time.sleep(0.0005)
        return self
