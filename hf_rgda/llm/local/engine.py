"""The llama.cpp engine behind :class:`~hf_rgda.llm.local.LocalLLM`: llama-cpp-python's ``Llama`` with the grammar
checked after sampling, KV states kept across calls and guesses checked in one decode, on the CPU kernels
:mod:`~hf_rgda.llm.local.cpu` chose. What it overrides or reads of llama-cpp-python's private internals is listed, with
the version it was checked against, in ``tests/test_llama_internals.py``.

**Grammar after sampling.** llama-cpp-python (0.3.36) puts a JSON schema's grammar into its sampler chain before
top-k, so every generated token runs the grammar over the whole vocabulary (151,936 entries for Qwen2.5): 35% of the
generation speed under the composer's schema. llama.cpp's own common sampler (``common/sampling.cpp``,
``common_sampler_sample``) samples from the chain first, checks only the sampled token against the grammar, and applies
the grammar to the whole vocabulary and samples again only when that token is rejected. :class:`GrammarAfterSampling`
does the same through llama.cpp's C API (``llama_sampler_apply`` on a one-token array, ``llama_sampler_accept``), and
:func:`make_llama` hands it to llama-cpp-python's own generation loop, which keeps its KV prefix reuse, stop rules and
chat templates unchanged. Outputs follow the grammar as before (a rejected token is never accepted), with strings
that keep JSON's ban on raw control characters (see ``_STRICT_CHAR``); the tokens sampled differ (the random stream is
consumed differently), so the engine is part of the backend's identity.

**KV states kept across calls.** llama-cpp-python reuses the KV state only for the prefix a prompt shares with the
call just before it; with stages run seed by seed, a repair re-ask (the earlier request, its answer, then the
rejections) or a seed's next judge question finds another seed's prompt there and evaluates its whole prefix again.
:class:`KVStates` keeps the state each call leaves behind (``llama_state_get_data``: the used KV cells, about 28 KB a
token for Qwen2.5-1.5B), least recently used first out beyond its byte budget, and the next call starts from the kept
state that shares the longest prefix with its prompt (llama-cpp-python's ``cache`` hook), evaluating only the rest.
The logits a restored state would need are recomputed: llama-cpp-python always evaluates at least the prompt's last
token. As with the prefix reuse llama-cpp-python already does, a reused KV entry was computed in another batch shape,
so the floating-point sums may differ in the last bits from a full evaluation (llama.cpp documents the same of its
server's prompt cache). How much depends on the CPU module (``python -m benchmarks.batch_shapes``): on the AMX module
decodes of two tokens or more give equal sums however a prompt is split and only one-token decodes (an answer's
tokens) differ; on the zen4 module the default model's repacked weights sum decodes of 2 and 7 tokens otherwise too.

**Guesses checked in one decode.** With a :class:`~hf_rgda.llm.local.lookup.LookupDraft` (``LocalLLM(lookup="auto")``,
the default), llama-cpp-python's generation loop (its ``draft_model`` hook) evaluates the sampled token
together with the tokens that followed the context's last few tokens where they stood before, with logits at each
(``_eval_all_logits``), samples at each position in turn and drops the cells after the first guess that differs from
its sampled token. The drafter is told each decode's width and time and how many guesses were kept.
"""

from __future__ import annotations

import ctypes
import math
import time
from collections.abc import Sequence
from typing import Any

from .cpu import load_cpu_backends
from .kvstates import KVState, KVStates, bytes_pointer
from .lookup import LookupDraft
from .stops import SelfCopy, loops

__all__ = ["GrammarAfterSampling", "make_llama"]

#: llama-cpp-python's JSON-schema converter writes a string with ``maxLength`` (every string of the composer's schema)
#: with ``char ::= [^"\\] | ...``, which lets raw control characters (a newline) into a JSON string, where JSON
#: forbids them; its unbounded ``string`` rule excludes them. The engine's grammar uses the strict character class.
_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_STRICT_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


class GrammarAfterSampling:
    """llama.cpp's grammar-based rejection sampling: a drop-in for llama-cpp-python's ``LlamaSampler`` in
    ``Llama.sample`` (``.sample(ctx, idx)`` samples *and* accepts, like ``llama_sampler_sample``). It also ends an
    answer caught in a loop (:func:`~hf_rgda.llm.local.stops.loops`) or copying itself
    (:class:`~hf_rgda.llm.local.stops.SelfCopy`), returning the end-of-generation token instead of the next one
    (``looped`` says it did); the cut answer is read as one cut at ``max_tokens`` (:meth:`hf_rgda.calls.Caller.ask`).

    Args:
        chain: the sampler chain without the grammar (a llama-cpp-python ``LlamaSampler``; it is kept alive here).
        vocab: the model's ``llama_vocab`` pointer.
        grammar: the GBNF text and its root rule.
        copies: end the answer where its last this many tokens stand earlier in it (:class:`SelfCopy`); 0: never.
    """

    def __init__(self, chain: Any, vocab: Any, n_vocab: int, grammar: str, root: str = "root",
                 copies: int = 0) -> None:
        import llama_cpp
        import numpy as np

        self._c = llama_cpp
        self.chain = chain
        self.grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), root.encode())
        if not self.grammar:
            raise ValueError("llama.cpp could not parse the grammar")
        self.n_vocab = n_vocab
        dtype = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        assert dtype.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)
        self._ids = np.arange(n_vocab, dtype=np.int32)
        self._cur = np.zeros(n_vocab, dtype=dtype)
        self._cur_p = self._cur.ctypes.data_as(llama_cpp.llama_token_data_p)
        self.rejected = 0  # tokens the grammar rejected after sampling (each cost one whole-vocabulary pass)
        self.sampled = 0
        eos = int(llama_cpp.llama_vocab_eos(vocab))
        self._eos = eos if eos >= 0 else int(llama_cpp.llama_vocab_eot(vocab))  # < 0: no loop is ended
        self._history: list[int] = []
        self._copy = SelfCopy(copies) if copies > 0 else None
        self.looped = False  # the answer was ended in a loop or a copy of itself (see hf_rgda.llm.local.stops)

    def _fill(self, ctx: Any, idx: int) -> Any:
        import numpy as np

        logits = self._c.llama_get_logits_ith(ctx.ctx, idx)
        if not logits:
            raise RuntimeError(f"llama.cpp has no logits at output {idx}")
        self._cur["id"] = self._ids
        self._cur["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        self._cur["p"] = 0.0
        return self._c.llama_token_data_array(data=self._cur_p, size=self.n_vocab, selected=-1, sorted=False)

    def _allowed(self, token: int) -> bool:
        one = self._c.llama_token_data(id=token, logit=1.0, p=0.0)
        arr = self._c.llama_token_data_array(data=ctypes.pointer(one), size=1, selected=-1, sorted=False)
        self._c.llama_sampler_apply(self.grammar, ctypes.byref(arr))
        return not math.isinf(one.logit)

    def sample(self, ctx: Any, idx: int = -1) -> int:
        chain = self.chain.sampler
        arr = self._fill(ctx, idx)
        self._c.llama_sampler_apply(chain, ctypes.byref(arr))
        token = int(arr.data[arr.selected].id)
        self.sampled += 1
        if not self._allowed(token):  # rejected: the grammar over the whole vocabulary, then the chain again
            self.rejected += 1
            arr = self._fill(ctx, idx)
            self._c.llama_sampler_apply(self.grammar, ctypes.byref(arr))
            self._c.llama_sampler_apply(chain, ctypes.byref(arr))
            if arr.selected < 0 or math.isinf(arr.data[arr.selected].logit):
                raise RuntimeError("the grammar allows no token here")
            token = int(arr.data[arr.selected].id)
        self._history.append(token)
        # ended here: the answer is read as one cut at max_tokens (Caller.ask)
        if self._eos >= 0 and (loops(self._history) or (self._copy is not None and self._copy(self._history))):
            self.looped = True
            return self._eos
        self._c.llama_sampler_accept(self.grammar, token)
        self._c.llama_sampler_accept(chain, token)
        return token

    def accept(self, token: int) -> None:
        self._c.llama_sampler_accept(self.grammar, token)
        self._c.llama_sampler_accept(self.chain.sampler, token)

    def close(self) -> None:
        if self.grammar:
            self._c.llama_sampler_free(self.grammar)
            self.grammar = None
        self.chain.close()

    def __del__(self) -> None:
        try:
            self.close()
        except (AttributeError, TypeError):  # at interpreter shutdown the bindings may be gone
            return


def _llama_class() -> type:
    from llama_cpp import Llama

    class _EngineLlama(Llama):  # type: ignore[misc, valid-type]
        """llama-cpp-python's ``Llama`` whose grammar sampler runs after the chain (see :class:`GrammarAfterSampling`);
        the last sampler built is kept for its counters."""

        last_sampler: Any = None
        #: the next answer ends where its last this many tokens stand earlier in it
        #: (:class:`~hf_rgda.llm.local.stops.SelfCopy`; 0: never); :class:`~hf_rgda.llm.local.LocalLLM` sets it for
        #: one call at a time, for sentence lists
        stop_copies = 0

        #: the prompt-lookup drafter (:class:`~hf_rgda.llm.local.lookup.LookupDraft`), also llama-cpp-python's
        #: ``draft_model`` hook; None: no drafting
        lookup: LookupDraft | None = None
        #: the check under way: (tokens before its decode, guesses in it)
        _check: tuple[int, int] | None = None
        #: decodes since this generation began (the first evaluates the prompt)
        _evals = 0

        def generate(self, *args: Any, **kwargs: Any) -> Any:
            self._check, self._evals = None, 0
            return (yield from super().generate(*args, **kwargs))

        def eval(self, tokens: Sequence[int]) -> None:
            self._evals += 1
            lookup = self.lookup
            if lookup is None or self._evals == 1:
                return super().eval(tokens)
            if self._check is not None:  # how far the last check got: the sampled tokens that matched its guesses
                start, drafted = self._check
                lookup.checked(max(0, min(drafted, self.n_tokens - start - 1)), drafted)
                self._check = None
            pending, lookup.pending = lookup.pending, 0
            # only the guesses the context has room for (llama.cpp may pad n_ctx beyond llama-cpp-python's arrays)
            room = max(1, min(self._n_ctx, len(self.input_ids)) - self.n_tokens)
            if pending and len(tokens) > room:
                tokens = list(tokens)[:room]
            begin = time.perf_counter()
            if pending and len(tokens) > 1:
                self._eval_all_logits(tokens)
                self._check = (self.n_tokens - len(tokens), len(tokens) - 1)
            else:
                super().eval(tokens)
            lookup.timed(len(tokens), time.perf_counter() - begin)
            return None

        def _eval_all_logits(self, tokens: Sequence[int]) -> None:
            """One decode of the sampled token and the guesses after it, with logits at every one (llama-cpp-python's
            ``eval`` with ``logits_all`` would also copy them into its score rows, which only ``logits_all`` sizes)."""
            self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
            n_past = self.n_tokens
            self._batch.set_batch(batch=tokens, n_past=n_past, logits_all=True)
            self._ctx.decode(self._batch)
            self.input_ids[n_past: n_past + len(tokens)] = tokens
            self.n_tokens += len(tokens)
            self._requires_eval = False

        def _init_sampler(self, *args: Any, grammar: Any = None, copies: int | None = None, **kwargs: Any) -> Any:
            """llama-cpp-python's sampler chain, the grammar after it; ``copies``: the :class:`SelfCopy` stop's
            length (default :attr:`stop_copies`, which llama-cpp-python's own generation loop cannot pass)."""
            if grammar is None:
                return super()._init_sampler(*args, grammar=grammar, **kwargs)
            chain = super()._init_sampler(*args, grammar=None, **kwargs)
            text = grammar._grammar.replace(_LOOSE_CHAR, _STRICT_CHAR)
            self.last_sampler = GrammarAfterSampling(chain, self._model.vocab, self._n_vocab, text, grammar._root,
                                                     copies=self.stop_copies if copies is None else copies)
            return self.last_sampler

        def save_state(self) -> KVState:
            """The context's KV state for :class:`KVStates`, without llama-cpp-python's copy of its score rows
            (``n_batch`` x vocabulary floats, 311 MB for Qwen2.5, unused without ``logits_all``). The bytes go into
            an uninitialised array: a ctypes array would be zeroed first (a 900-token state is 25.8 MB), only to be
            overwritten by llama.cpp's copy."""
            import llama_cpp
            import numpy as np

            ctx = self._ctx.ctx
            size = llama_cpp.llama_state_get_size(ctx)
            data = np.empty(int(size), dtype=np.uint8)
            n = int(llama_cpp.llama_state_get_data(ctx, bytes_pointer(data), size))
            if n > size:
                raise RuntimeError("llama.cpp wrote more state than it sized")
            return KVState(self.input_ids[: self.n_tokens].copy(), data, n, self._seed)

        def load_state(self, state: Any) -> None:
            if not isinstance(state, KVState):
                return super().load_state(state)
            import llama_cpp

            if llama_cpp.llama_state_set_data(self._ctx.ctx, bytes_pointer(state.data), state.size) != state.size:
                raise RuntimeError("llama.cpp could not restore a kept KV state")
            self.input_ids[: state.n_tokens] = state.input_ids
            self.n_tokens = state.n_tokens
            self._requires_eval = True
            self._seed = state.seed
            if isinstance(self.cache, KVStates):
                self.cache.restored += 1
            self.last_restored = state
            return None

        #: the kept state the last call started from (set by :meth:`load_state`; the caller resets it)
        last_restored: KVState | None = None

    return _EngineLlama


_class: list[type] = []


def make_llama(*, kv_states_mb: int = 0, lookup: str = "off", **kwargs: Any) -> Any:
    """A llama-cpp-python ``Llama`` (``kwargs``) on the best CPU backend, with the grammar after sampling, with
    ``kv_states_mb`` up to that many MiB of :class:`~hf_rgda.llm.local.kvstates.KVStates` kept across calls, and with
    ``lookup`` (a :class:`~hf_rgda.llm.local.lookup.LookupDraft` mode) guesses checked in one decode."""
    load_cpu_backends()
    if not _class:
        _class.append(_llama_class())
    llama = _class[0](**kwargs)
    if kv_states_mb > 0:
        llama.set_cache(KVStates(kv_states_mb << 20))
    if lookup != "off":
        llama.lookup = llama.draft_model = LookupDraft(mode=lookup)
    return llama
