"""The KV states the local engine keeps across calls (:class:`KVStates`): each call starts from the kept state that
shares the longest prefix with its prompt and evaluates only the rest (see :mod:`hf_rgda.llm.local.engine`)."""

from __future__ import annotations

import ctypes
from typing import Any

__all__ = ["KVState", "KVStates", "bytes_pointer", "common_prefix"]


def bytes_pointer(data: Any) -> Any:
    """A ``uint8_t *`` to the bytes of a numpy array, for llama.cpp's state functions."""
    return data.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))


def common_prefix(a: Any, b: Any) -> int:
    """How many tokens two token sequences share from their start: the KV entries one call can reuse from another."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class KVState:
    """One kept KV state: the tokens whose keys and values it holds and llama.cpp's serialised context."""

    __slots__ = ("data", "input_ids", "key", "n_tokens", "seed", "size")

    def __init__(self, input_ids: Any, data: Any, size: int, seed: int) -> None:
        self.input_ids, self.data, self.size, self.seed = input_ids, data, size, seed
        self.key: tuple[int, ...] = tuple(input_ids.tolist())
        self.n_tokens = len(self.key)


class KVStates:
    """The KV states calls left behind, by their tokens; the least recently used go first beyond ``capacity_bytes``.

    Plugged in as llama-cpp-python's ``Llama.cache``: ``states[prompt]`` is the kept state sharing the longest
    prefix with ``prompt`` (``KeyError`` if none shares a token), ``states[tokens] = state`` keeps one.
    ``restored`` counts the states calls started from.
    """

    def __init__(self, capacity_bytes: int = 512 << 20) -> None:
        from collections import OrderedDict

        self.capacity_bytes = capacity_bytes
        self._states: OrderedDict[tuple[int, ...], KVState] = OrderedDict()
        self.restored = 0

    @property
    def nbytes(self) -> int:
        return sum(s.size for s in self._states.values())

    def __len__(self) -> int:
        return len(self._states)

    def __bool__(self) -> bool:  # llama-cpp-python tests ``if self.cache:``; an empty store is still a store
        return True

    #: a kept state whose tokens differ from a new state's only in their last this many is dropped for it
    SIBLING_TOKENS = 64

    @classmethod
    def _covers(cls, key: tuple[int, ...], other: tuple[int, ...]) -> bool:
        """Whether the new state ``key`` makes the kept ``other`` redundant: ``other`` is a prefix of ``key``, or a
        sibling that parts from it within its last :attr:`SIBLING_TOKENS` tokens and after its first half (the
        questions of one verdict, which differ in their last line: one of them serves the next question as well,
        and the family no longer pushes the other seeds' states out)."""
        if len(other) <= len(key) and key[: len(other)] == other:
            return True
        shared = common_prefix(key, other)
        return shared >= len(other) - cls.SIBLING_TOKENS and 2 * shared > len(other)

    def best(self, tokens: Any) -> tuple[KVState | None, int]:
        """The kept state sharing the longest prefix with ``tokens``, and that prefix's length."""
        best, n = None, 0
        for key, state in self._states.items():
            if key and key[0] == tokens[0] and (m := common_prefix(key, tokens)) > n:
                best, n = state, m
        return best, n

    def __getitem__(self, tokens: Any) -> KVState:
        state = self.best(list(tokens))[0] if len(tokens) else None
        if state is None:
            raise KeyError("no kept state shares a prefix")
        self._states.move_to_end(state.key)
        return state

    def __contains__(self, tokens: Any) -> bool:
        return bool(len(tokens)) and self.best(list(tokens))[0] is not None

    def __setitem__(self, tokens: Any, state: KVState) -> None:
        key = state.key  # what the state holds (the last sampled token is never evaluated)
        if not key or state.size > self.capacity_bytes:
            return
        self._states.pop(key, None)
        for other in [k for k in self._states if self._covers(key, k)]:
            del self._states[other]
        self._states[key] = state
        while self.nbytes > self.capacity_bytes:
            self._states.popitem(last=False)
