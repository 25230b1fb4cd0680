"""Several calls decoded together: the local engine's parallel slots (``LocalLLM(parallel=N)``).

Where generation waits on memory, one decode that carries the next token of several sequences costs little more than
one that carries one: every token reads the same weights (on the Xeon, 4 sequences give 2.44x the tokens a second
of one; on the EPYC 1.27x: ``python -m benchmarks.local_speed --batches``, docs/decisions/parallel-slots.md). The
pipeline already runs the seeds of a batch concurrently, stage by stage, so their calls arrive together.

:class:`SlotEngine` answers up to N calls at once from one llama.cpp context. Its thread admits each waiting call
into a free sequence (the one its seed used last when free, so a seed's next question continues its last prompt),
evaluates the prompt past the longest prefix any sequence holds (copied in: the seeds of a stage share their system
prompt), then decodes the next token of every generating call in one batch, with the guesses of a prompt-lookup
drafter after each where they pay (:meth:`~hf_rgda.llm.lookup.LookupDraft.plan`), samples each with its own sampler
chain and grammar (:class:`~hf_rgda.llm.engine.GrammarAfterSampling`), and repeats (option questions go to the
model's own context: :class:`~hf_rgda.llm.local.LocalLLM`). Prompts, stop rules, sampling parameters and the returned
text are those of llama-cpp-python's ``create_chat_completion`` for the same messages (:mod:`.chatrequest`), so a call
sent alone to a fresh engine without guesses gets the one-call engine's tokens. Decoded beside others or with guesses,
a sequence's logits come from another batch shape, whose sums differ slightly, so the tokens sampled may differ too
(part of the backend's identity), and which calls share a decode depends on when they arrive: with more than one slot
a run is not reproducible token for token, and the response cache keeps the first answer.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from .chatrequest import chat_request
from .kvstates import common_prefix
from .lookup import LookupDraft, lookup
from .turns import Turns

__all__ = ["Request", "SlotEngine", "chat_request"]


@dataclass(eq=False)
class Request:
    """One call for the slot engine: the chat request, then what the engine made of it and what came of it.

    Args:
        messages: the chat messages.
        chat: keyword arguments of ``create_chat_completion`` (temperature, max_tokens, seed, response_format).
        affinity: calls with the same affinity (a seed's) run in the same sequence while it is free.

    The engine's thread fills the rest (its context is touched by that thread alone, so closing the engine first
    stops it): the prompt's tokens, the sampler's arguments (:func:`chat_request`), the answer.
    """

    messages: list[dict[str, str]] = field(default_factory=list)
    chat: dict[str, Any] = field(default_factory=dict)
    affinity: str = ""
    prompt: list[int] = field(default_factory=list)
    #: keyword arguments of llama-cpp-python's ``Llama._init_sampler``
    sampling: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    #: completion-token cap (0: what the context has room for; cut to that room)
    max_tokens: int = 0
    #: stop strings (the text ends before the first one)
    stop: list[bytes] = field(default_factory=list)
    #: end the answer where its last this many tokens stand earlier in it (:class:`~hf_rgda.llm.stops.SelfCopy`)
    copies: int = 0
    #: the completion's tokens (the end-of-generation token excluded)
    tokens: list[int] = field(default_factory=list)
    text: str = ""
    #: prompt tokens whose KV cells were found in a sequence (not evaluated again)
    reused: int = 0
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    # engine state while it runs
    sampler: Any = None
    _multibyte: int = 0


@dataclass(eq=False)
class _Slot:
    seq: int
    #: the tokens whose KV cells the slot's sequence holds, positions 0, 1, ...
    tokens: list[int] = field(default_factory=list)
    req: Request | None = None
    #: the token sampled last, to be evaluated in the next decode (None: not generating)
    pending: int | None = None
    used: float = 0.0


class SlotEngine:
    """Up to ``n_slots`` calls answered at once on ``llama``'s model (see the module's docstring).

    Args:
        llama: the ``Llama`` whose model, tokenizer, chat template and sampler chains the engine uses (its own context
            is not touched).
        n_slots: calls answered at once (sequences decoded together).
        n_ctx: each call's context window in tokens (without ``lookup`` each sequence has a stream of that many cells,
            and llama.cpp splits a decode over sequence ids that are not consecutive into one pass over the weights
            per run; with it the sequences share one cache of ``n_slots`` times as many).
        lookup: a prompt-lookup drafter (:class:`~hf_rgda.llm.lookup.LookupDraft`): each generating sequence's
            guesses go into the decode that carries its sampled token, as many as :meth:`LookupDraft.plan` says pay
            (None: no guesses).
        lock: a :class:`~hf_rgda.llm.turns.Turns` held around every decode and sampler the engine's thread runs (the model's other
            context, which answers option questions, takes it too: two contexts computing at once only slow each
            other down).
    """

    def __init__(self, llama: Any, n_slots: int, n_ctx: int, lookup: LookupDraft | None = None,
                 lock: Any = None) -> None:
        import llama_cpp
        from llama_cpp import _internals as internals

        self._c = llama_cpp
        self.llama, self.n_slots, self.n_ctx = llama, n_slots, n_ctx
        self.lookup, self._lock = lookup, lock if lock is not None else Turns()
        params = llama_cpp.llama_context_params.from_buffer_copy(llama.context_params)
        # without guesses, a stream of n_ctx cells per sequence: a sequence's attention reads its own cells only (in
        # one unified cache every decode reads every sequence's cells), and a prefix moves between streams by copying
        # the stream. With guesses, one unified cache: llama.cpp splits a decode over streams into sub-batches of as
        # many tokens from each sequence, so sequences checking different numbers of guesses would take one pass over
        # the weights per sub-batch (docs/decisions/parallel-slots.md)
        self.unified = lookup is not None
        params.n_ctx, params.n_seq_max, params.kv_unified = n_ctx * n_slots, n_slots, self.unified
        # a decode carries a token of every call and its guesses
        params.n_batch = max(params.n_batch, n_slots * (1 + (lookup.max_tokens if lookup is not None else 0)))
        params.n_ubatch = max(params.n_ubatch, n_slots)
        self.ctx = internals.LlamaContext(model=llama._model, params=params, verbose=False)
        self.n_batch = int(params.n_batch)
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._mem = llama_cpp.llama_get_memory(self.ctx.ctx)
        #: the sequences (a call holds one while it runs)
        self.slots = [_Slot(i) for i in range(n_slots)]
        self._owner: dict[str, _Slot] = {}  # the sequence each affinity used last
        self._queue: deque[Request] = deque()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: decodes by how many sequences' tokens they carried (generation), prompt tokens evaluated, prefix copies
        self.widths: dict[int, int] = {}
        self.prompt_evaluated = 0
        self.copies = 0
        self.passes = 0  # passes over the weights the generation decodes took (see _step)
        #: seconds in prompt evaluation (admissions), in generation decodes, in sampling and ending calls
        self.prompt_s = self.decode_s = self.sample_s = 0.0

    # -- the callers' side ---------------------------------------------------------------------------------------

    def submit(self, req: Request) -> Request:
        """Queue ``req``, wait until it is answered and return it.

        Raises:
            ValueError: the prompt does not fit a call's context.
            RuntimeError: llama.cpp failed on it, or the engine was closed.
        """
        with self._cv:
            if self._closed:
                raise RuntimeError("the local engine is closed")
            self._queue.append(req)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="hf_rgda-slots", daemon=True)
                self._thread.start()
            self._cv.notify()
        while not req.done.wait(1.0):  # a thread that died without answering (it fails every call first)
            if not (self._thread and self._thread.is_alive()) and not req.done.is_set():
                raise RuntimeError("the local engine's thread is gone")
        if req.error is not None:
            raise req.error
        return req

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the thread (calls still waiting fail) and free the context."""
        with self._cv:
            self._closed = True
            self._cv.notify()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._batch is not None:
            self._c.llama_batch_free(self._batch)
            self._batch = None
        if self.ctx is not None:
            self.ctx.close()
            self.ctx = None

    def stats(self) -> dict[str, Any]:
        """Decodes by width (sequences in one generation decode), prompt tokens evaluated, prefix copies."""
        return {"slots": self.n_slots, "decodes_by_width": dict(sorted(self.widths.items())), "passes": self.passes,
                "prompt_evaluated": self.prompt_evaluated, "prefix_copies": self.copies,
                "prompt_s": round(self.prompt_s, 2), "decode_s": round(self.decode_s, 2),
                "sample_s": round(self.sample_s, 2),
                "lookup": self.lookup.stats() if self.lookup is not None else None}

    # -- the engine's thread -------------------------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            self._serve()
        except BaseException as err:  # a bug here must not leave callers waiting: all of them fail
            with self._cv:
                self._closed = True
                waiting = list(self._queue) + [s.req for s in self.slots if s.req is not None]
                self._queue.clear()
            for req in waiting:
                if not req.done.is_set():
                    self._finish(req, RuntimeError(f"the local engine stopped: {type(err).__name__}: {err}"))
            raise

    def _serve(self) -> None:
        while True:
            with self._cv:
                while not self._closed and not self._queue and not self._generating():
                    self._cv.wait()
                if self._closed:
                    for req in list(self._queue) + [s.req for s in self.slots if s.req is not None]:
                        self._finish(req, RuntimeError("the local engine was closed"))
                    self._queue.clear()
                    return
                admit = []
                free = self.n_slots - sum(s.req is not None for s in self.slots)
                while self._queue and len(admit) < free:
                    admit.append(self._queue.popleft())
            with self._lock.after_waiting():
                for req in admit:
                    self._start(req)
                if self._generating():
                    self._step()

    def _generating(self) -> list[_Slot]:
        return [s for s in self.slots if s.req is not None and s.pending is not None]

    def _finish(self, req: Request, error: BaseException | None = None) -> None:
        for s in self.slots:
            if s.req is req:
                s.req, s.pending, s.used = None, None, time.perf_counter()
        if req.sampler is not None and hasattr(req.sampler, "close"):
            req.sampler.close()
        req.sampler = None
        req.error = error
        req.done.set()

    def _decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """One llama.cpp decode of ``(token, position, sequence, logits)`` items."""
        if len(items) > self.n_batch:
            raise RuntimeError(f"a decode of {len(items)} tokens exceeds the batch of {self.n_batch}")
        b = self._batch
        b.n_tokens = len(items)
        for i, (tok, pos, seq, logits) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.seq_id[i][0], b.logits[i] = tok, pos, 1, seq, logits
        rc = self._c.llama_decode(self.ctx.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def _place(self, req: Request) -> _Slot:
        """The idle sequence for ``req``, then given the longest prefix of its prompt any sequence holds.

        The sequence is the one the call's ``affinity`` (its seed) used last, when idle: a seed's next question
        continues its last prompt there, and one seed's call never overwrites another's. Otherwise an idle sequence
        that holds nothing but a prefix of the prompt (nothing is lost), else the least recently used. A longer
        prefix held elsewhere (the stage's system prompt, written by the first seed to ask) is copied in
        (:meth:`_copy`)."""
        prompt = req.prompt
        idle = [s for s in self.slots if s.req is None]
        scored = [(common_prefix(s.tokens, prompt), s) for s in self.slots]
        best, src = max(scored, key=lambda x: x[0])
        mine = self._owner.get(req.affinity) if req.affinity else None
        whole = [s for n, s in scored if s.req is None and n == best and n == len(s.tokens) and n > 0]
        if mine is not None and mine.req is None:
            dst = mine
        elif whole:
            dst = whole[0]
        else:
            dst = min(idle, key=lambda s: (bool(s.tokens), s.used))
        if best > common_prefix(dst.tokens, prompt):
            self._copy(src, dst, best)
        if req.affinity:  # one owner a sequence: the map stays as small as the slots
            self._owner = {k: v for k, v in self._owner.items() if v is not dst}
            self._owner[req.affinity] = dst
        keep = common_prefix(dst.tokens, prompt)
        req.reused = keep
        keep = min(keep, len(prompt) - 1)  # the last prompt token is evaluated again: its logits are needed
        self._c.llama_memory_seq_rm(self._mem, dst.seq, keep, -1)
        del dst.tokens[keep:]
        dst.req = req
        return dst

    def _copy(self, src: _Slot, dst: _Slot, n: int) -> None:
        """``dst`` holds ``src``'s first ``n`` tokens (a whole-stream copy, or in one unified cache the cells
        shared, then cut). ``dst``'s own cells go first: in one cache a copy adds ``src``'s cells to ``dst``'s, and
        two cells at one position would both be attended to."""
        self._c.llama_memory_seq_rm(self._mem, dst.seq, 0, -1)
        self._c.llama_memory_seq_cp(self._mem, src.seq, dst.seq, -1, -1)
        self._c.llama_memory_seq_rm(self._mem, dst.seq, n, -1)
        dst.tokens = src.tokens[:n]
        self.copies += 1

    def _prepare(self, req: Request) -> None:
        """The prompt's tokens, stop strings and sampler arguments from the chat request."""
        chat_request(self.llama, req)
        if len(req.prompt) >= self.n_ctx:
            raise ValueError(f"Requested tokens ({len(req.prompt)}) exceed context window of {self.n_ctx}")

    def _start(self, req: Request) -> None:
        slot = None
        try:
            self._prepare(req)
            slot = self._place(req)
            self.llama.set_seed(req.seed)
            req.sampler = self.llama._init_sampler(**req.sampling, copies=req.copies)
            room = self.n_ctx - len(req.prompt)
            req.max_tokens = room if req.max_tokens <= 0 else min(req.max_tokens, room)
            todo = req.prompt[len(slot.tokens):]
            begin = time.perf_counter()
            for i in range(0, len(todo), self.n_batch):
                chunk = todo[i : i + self.n_batch]
                base = len(slot.tokens)
                last = i + len(chunk) == len(todo)
                self._decode([(t, base + j, slot.seq, last and j == len(chunk) - 1) for j, t in enumerate(chunk)])
                slot.tokens.extend(chunk)
                self.prompt_evaluated += len(chunk)
            idx = (len(todo) - 1) % self.n_batch
            self.prompt_s += time.perf_counter() - begin
            self._sample(slot, idx)
        except Exception as err:  # noqa: BLE001 - the call fails, the engine goes on
            if slot is not None:  # what its cells hold is no longer known
                self._c.llama_memory_seq_rm(self._mem, slot.seq, 0, -1)
                slot.tokens = []
            self._finish(req, err)

    def _guesses(self, gen: list[_Slot]) -> list[list[int]]:
        """Each generating sequence's guesses at the tokens after its sampled one (prompt lookup over its prompt and
        answer), as many as the drafter's plan says pay, within its ``max_tokens`` and its context."""
        if self.lookup is None:
            return [[] for _ in gen]
        import numpy as np

        found = []
        for s in gen:
            req = s.req
            # the guesses' cells within the context, and the answer within max_tokens (its sampled token included)
            room = max(0, min(self.n_ctx - len(s.tokens) - 1, req.max_tokens - len(req.tokens) - 1,  # type: ignore[union-attr]
                              (self.n_batch - len(gen)) // len(gen)))
            ids = np.fromiter((*s.tokens, s.pending), dtype=np.int64, count=len(s.tokens) + 1)
            found.append(lookup(ids, self.lookup.max_tokens)[:room].tolist() if room else [])
        plan = self.lookup.plan([len(f) for f in found], len(gen))
        return [f[:n] for f, n in zip(found, plan)]

    def _step(self) -> None:
        gen = self._generating()
        try:
            guesses = self._guesses(gen)
        except Exception:  # noqa: BLE001 - a drafter's fault costs its guesses, not the calls
            guesses = [[] for _ in gen]
        self.widths[len(gen)] = self.widths.get(len(gen), 0) + 1
        # llama.cpp splits a decode over streams into runs of consecutive sequence ids, one pass over the weights each
        ids = sorted(s.seq for s in gen)
        self.passes += 1 if self.unified else 1 + sum(b != a + 1 for a, b in pairwise(ids))
        items, starts = [], []
        for s, guess in zip(gen, guesses):  # the sampled token, then the guesses after it, logits at each
            starts.append(len(items))
            items += [(t, len(s.tokens) + j, s.seq, True) for j, t in enumerate([s.pending, *guess])]
        begin = time.perf_counter()
        try:
            self._decode(items)  # type: ignore[arg-type]
        except Exception as err:  # noqa: BLE001 - every call in the decode fails; their slots are emptied
            for s in gen:
                self._c.llama_memory_seq_rm(self._mem, s.seq, 0, -1)
                s.tokens = []
                self._finish(s.req, err)  # type: ignore[arg-type]
            return
        decoded = time.perf_counter()
        self.decode_s += decoded - begin
        if self.lookup is not None:
            self.lookup.timed(len(items), decoded - begin)
        for s, guess, first in zip(gen, guesses, starts):
            req = s.req
            try:
                kept = self._sample_guesses(s, guess, first)
            except Exception as err:  # noqa: BLE001 - this call fails, the others go on
                kept = None
                if req is not None and not req.done.is_set():
                    self._finish(req, err)
            if guess:
                if kept is not None and s.req is req:  # an answer that ended here says nothing of the guesses
                    self.lookup.checked(kept, len(guess))  # type: ignore[union-attr]
                # the cells of the guesses not kept (and of those after an answer's end) go
                self._c.llama_memory_seq_rm(self._mem, s.seq, len(s.tokens), -1)
        self.sample_s += time.perf_counter() - decoded

    def _sample_guesses(self, s: _Slot, guess: list[int], first: int) -> int:
        """Sample at the sampled token's logits (output ``first``), then at each guess's while the token sampled
        before it equals it (its cells were computed from the right tokens): how many guesses were kept."""
        req = s.req
        for j in range(len(guess) + 1):
            s.tokens.append(s.pending)  # type: ignore[arg-type]
            s.pending = None
            self._sample(s, first + j)
            if s.req is not req or j == len(guess) or s.pending != guess[j]:
                return j
        return len(guess)

    def _sample(self, slot: _Slot, idx: int) -> None:
        """Sample ``slot``'s next token from the logits at output ``idx`` and end the call where llama-cpp-python's
        ``_create_completion`` would (end of generation, a stop string, ``max_tokens``)."""
        req = slot.req
        assert req is not None
        llama = self.llama
        token = req.sampler.sample(self.ctx, idx)
        if self._c.llama_vocab_is_eog(llama._model.vocab, token):
            return self._end(req, llama.detokenize(req.tokens, prev_tokens=req.prompt))
        req.tokens.append(token)
        text = llama.detokenize(req.tokens, prev_tokens=req.prompt)
        for k, char in enumerate(text[-3:]):  # a character's bytes still to come (llama-cpp-python's rule)
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    req._multibyte = num - k
        if len(slot.tokens) >= self.n_ctx:  # no room for this token's cells (the multibyte rule runs past max_tokens)
            return self._end(req, text)
        if req._multibyte > 0:
            req._multibyte -= 1
            slot.pending = token
            return None
        stops = [s for s in req.stop if s in text]
        if stops:
            return self._end(req, text[: text.index(stops[0])])
        if len(req.tokens) >= req.max_tokens:
            return self._end(req, text)
        slot.pending = token
        return None

    def _end(self, req: Request, text: bytes) -> None:
        req.text = text.decode("utf-8", errors="ignore")
        self._finish(req)
