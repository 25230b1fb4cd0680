"""The llama.cpp engine behind :class:`~hf_rgda.llm.local.LocalLLM`: CPU kernels chosen at run time, grammar checked
after sampling.

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

**Kernels chosen at run time.** ``scripts/setup.sh`` builds llama.cpp with ``GGML_BACKEND_DL`` and
``GGML_CPU_ALL_VARIANTS``, the list cut to seven x86-64 levels (``x64``, ``haswell``, ``alderlake``, ``skylakex``,
``icelake``, ``zen4``, ``sapphirerapids``: AMX tiles for prompts, its tile configuration made a constant first;
``scripts/llama_cpu_variants.py``): one CPU backend module per level
(``libggml-cpu-haswell.so``, ...) installed next to ``libllama`` (``scripts/llama_cpu_variants.cmake``). Nothing in
llama-cpp-python loads them (setup.sh adds the call to the bindings of the wheel it installs,
``scripts/llama_wheel_backends.py``, for ``llama_cpp.server`` and users' own scripts; a wheel built otherwise lacks
it), and llama.cpp's default search looks beside the executable (Python's) and in the working directory, so
:func:`load_cpu_backends` calls ``ggml_backend_load_all_from_path`` on llama-cpp-python's library folder once, before
the first model, in the libggml that libllama links: ggml scores each variant against the CPU and loads the best
(``GGML_BACKEND_PATH`` adds one more module, as in llama.cpp). A build without variants (the CPU
backend linked in) needs nothing and is left alone. :func:`load_cpu_variant` registers one module of the user's choice
instead (to time or test one level's kernels on a CPU that has a better one).

**Prompts on the plain layout.** llama.cpp repacks quantised weights at load (``use_extra_bufts``): on x86-64
Qwen2.5's Q4_K matrices become interleaved blocks whose kernels generate faster and evaluate a prompt's tokens
slower than the plain layout's. :class:`PlainPrefill` keeps a second copy of the model in the plain layout for
prompts and hands the KV cells to the repacked copy, which generates (``LocalLLM(plain_prefill=True)``; off by
default: see its docstring).

**Guesses checked in one decode.** With a :class:`~hf_rgda.llm.lookup.LookupDraft` (``LocalLLM(lookup="auto")``, the
default one call at a time), llama-cpp-python's generation loop (its ``draft_model`` hook) evaluates the sampled token
together with the tokens that followed the context's last few tokens where they stood before, with logits at each
(``_eval_all_logits``), samples at each position in turn and drops the cells after the first guess that differs from
its sampled token. The drafter is told each decode's width and time and how many guesses were kept.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .kvstates import KVState, KVStates, common_prefix
from .lookup import LookupDraft
from .prefill import PlainPrefill, bytes_pointer
from .stops import SelfCopy, loops

__all__ = ["ENGINES", "GrammarAfterSampling", "KVStates", "PlainPrefill", "common_prefix", "cpu_backend", "cpu_variants",
           "load_cpu_backends", "load_cpu_variant", "make_llama"]

#: ``grammar``: where the JSON schema's grammar is applied. ``after_sampling`` (default): sample, check the token,
#: fall back to the whole vocabulary only when it is rejected; ``in_chain``: llama-cpp-python's own chain, the grammar
#: over the whole vocabulary before top-k at every token (slower, kept as an option).
ENGINES = ("after_sampling", "in_chain")

#: llama-cpp-python's JSON-schema converter writes a string with ``maxLength`` (every string of the composer's schema)
#: with ``char ::= [^"\\] | ...``, which lets raw control characters (a newline) into a JSON string, where JSON
#: forbids them; its unbounded ``string`` rule excludes them. The engine's grammar uses the strict character class.
_LOOSE_CHAR = 'char ::= [^"\\\\] |'
_STRICT_CHAR = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


_backends_lock = threading.Lock()
_backends_loaded: list[str] = []


def _lib_dir() -> Path:
    """The folder llama-cpp-python loaded libllama from (its package's ``lib``, or ``LLAMA_CPP_LIB_PATH``)."""
    from llama_cpp import llama_cpp as bindings

    return Path(bindings._base_path)


def cpu_variants(lib_dir: Path | None = None) -> list[str]:
    """The CPU backend variant modules installed next to libllama (empty for a build with the CPU backend linked in)."""
    return sorted(p.name for p in (lib_dir or _lib_dir()).glob("libggml-cpu-*.so"))


def load_cpu_backends() -> list[str]:
    """Load the best CPU backend variant once per process when the build has them (``GGML_BACKEND_DL``).

    Returns the names of the registered backends (``["CPU"]`` once loaded; empty for a build without variants).
    """
    with _backends_lock:
        if _backends_loaded:
            return list(_backends_loaded)
        lib = _lib_dir()
        if not cpu_variants(lib):
            return []
        # through libllama's handle: a wheel holds copies, not links, so libggml.so (what llama_cpp._ggml opens) and
        # libggml.so.0 (what libllama needs) are two libraries with two backend registries; dlsym on libllama's
        # handle finds the one libllama uses
        from llama_cpp import llama_cpp as bindings

        ggml = bindings._lib
        ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
        if ggml.ggml_backend_reg_count() == 0:
            ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
            ggml.ggml_backend_load_all_from_path(str(lib).encode())
        ggml.ggml_backend_reg_get.restype = ctypes.c_void_p
        ggml.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
        ggml.ggml_backend_reg_name.restype = ctypes.c_char_p
        ggml.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
        names = [ggml.ggml_backend_reg_name(ggml.ggml_backend_reg_get(i)).decode()
                 for i in range(ggml.ggml_backend_reg_count())]
        _backends_loaded.extend(names)
        return names


def load_cpu_variant(module: str) -> list[str]:
    """Register one CPU backend variant module (``libggml-cpu-zen4.so``, ...) alone, as ggml would on a CPU where it
    scores best: to run or time one level's kernels on a machine that has a better one (benchmarks, tests).

    Must come before ``llama_cpp`` is imported: the bindings setup.sh installs register the best module on import,
    and the first CPU backend registered is the one models run on. libllama is opened here first from the folder
    llama-cpp-python will open it from (the same file, so the same library and backend registry).
    """
    import importlib.util
    import sys

    if "llama_cpp.llama_cpp" in sys.modules:
        raise RuntimeError("load_cpu_variant must run before llama_cpp is imported (its import registers the best "
                           "CPU module)")
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    spec = importlib.util.find_spec("llama_cpp")
    if override is None and (spec is None or spec.origin is None):
        raise RuntimeError("llama_cpp is not installed")
    lib = Path(override) if override is not None else Path(spec.origin).parent / "lib"
    if not (lib / module).is_file():
        raise ValueError(f"{module} is not in {lib} (modules there: {', '.join(cpu_variants(lib)) or 'none'})")
    ggml = ctypes.CDLL(str(lib / "libllama.so"))  # as llama_cpp opens it on Linux (RTLD_LOCAL)
    ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load.restype = ctypes.c_void_p
    if not ggml.ggml_backend_load(str(lib / module).encode()):
        raise RuntimeError(f"ggml could not load {lib / module} (does this CPU have its instructions?)")
    return load_cpu_backends()


def cpu_backend() -> dict[str, Any]:
    """What the engine runs on: the variant modules installed and the CPU features ggml's loaded backend uses."""
    import llama_cpp

    return {"variants": cpu_variants(), "registered": load_cpu_backends(),
            "system_info": llama_cpp.llama_print_system_info().decode(errors="replace")}


class GrammarAfterSampling:
    """llama.cpp's grammar-based rejection sampling: a drop-in for llama-cpp-python's ``LlamaSampler`` in
    ``Llama.sample`` (``.sample(ctx, idx)`` samples *and* accepts, like ``llama_sampler_sample``). It also ends an
    answer caught in a loop (:func:`~hf_rgda.llm.stops.loops`) or copying itself
    (:class:`~hf_rgda.llm.stops.SelfCopy`), returning the end-of-generation token instead of the next one (``looped``
    says it did); the cut answer is read as one cut at ``max_tokens`` (:meth:`hf_rgda.calls.Caller.ask`).

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
        self.looped = False  # the answer was ended in a loop or a copy of itself (see hf_rgda.llm.stops)

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
        """llama-cpp-python's ``Llama`` whose grammar sampler runs after the chain (see :class:`GrammarAfterSampling`).

        ``grammar_after_sampling`` switches per instance; the last sampler built is kept for its counters.
        """

        grammar_after_sampling = True
        last_sampler: Any = None
        #: the next answer ends where its last this many tokens stand earlier in it (:class:`~hf_rgda.llm.stops.SelfCopy`;
        #: 0: never); :class:`~hf_rgda.llm.local.LocalLLM` sets it for one call at a time, for sentence lists
        stop_copies = 0
        #: the plain-layout copy that evaluates long prompts (:class:`PlainPrefill`), or None
        prefill: PlainPrefill | None = None
        #: the parallel slots that answer calls on this model (:class:`~hf_rgda.llm.slots.SlotEngine`), or None
        slots: Any = None

        #: the context whose last logits the next :meth:`sample` reads when it is not this one's (a prefill's)
        _logits_ctx: Any = None

        #: the prompt-lookup drafter (:class:`~hf_rgda.llm.lookup.LookupDraft`), also llama-cpp-python's
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
            self._logits_ctx = None
            self._evals += 1
            lookup = self.lookup
            if lookup is None or self._evals == 1:
                return self._eval_prompt(tokens)
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
                self._eval_prompt(tokens)
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

        def _eval_prompt(self, tokens: Sequence[int]) -> None:
            if self.prefill is None or len(tokens) < self.prefill.MIN_TOKENS:
                return super().eval(tokens)
            self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
            self.prefill.prefill(self, tokens)
            self._logits_ctx = self.prefill.ctx  # the prompt's last logits are there
            # and not here: a next call with the same prompt evaluates its last token again instead of sampling
            # from logits this context does not have
            self._requires_eval = True
            return None

        def close(self) -> None:
            if self.slots is not None:
                self.slots.close()
                self.slots = None
            if self.prefill is not None:
                self.prefill.close()
                self.prefill = None
            super().close()

        def sample(self, *args: Any, **kwargs: Any) -> Any:
            if self._logits_ctx is None:
                return super().sample(*args, **kwargs)
            own, self._ctx = self._ctx, self._logits_ctx  # llama-cpp-python's sample reads ``self._ctx``'s logits
            try:
                return super().sample(*args, **kwargs)
            finally:
                self._ctx, self._logits_ctx = own, None

        def _init_sampler(self, *args: Any, grammar: Any = None, copies: int | None = None, **kwargs: Any) -> Any:
            """llama-cpp-python's sampler chain, the grammar after it; ``copies``: the :class:`SelfCopy` stop's
            length (default :attr:`stop_copies`, which llama-cpp-python's own generation loop cannot pass)."""
            if grammar is None or not self.grammar_after_sampling:
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


def make_llama(*, grammar: str = "after_sampling", kv_states_mb: int = 0, plain_prefill: bool = False,
               lookup: str = "off", **kwargs: Any) -> Any:
    """A llama-cpp-python ``Llama`` on the best CPU backend, with the grammar where ``grammar`` says (:data:`ENGINES`)
    and, with ``kv_states_mb``, up to that many MiB of :class:`KVStates` kept across calls."""
    if grammar not in ENGINES:
        from .._exceptions import ConfigError

        raise ConfigError(f"local engine grammar={grammar!r}: expected one of {', '.join(ENGINES)}")
    load_cpu_backends()
    if not _class:
        _class.append(_llama_class())
    llama = _class[0](**kwargs)
    llama.grammar_after_sampling = grammar == "after_sampling"
    if kv_states_mb > 0:
        llama.set_cache(KVStates(kv_states_mb << 20))
    if plain_prefill:
        llama.prefill = PlainPrefill(llama, kwargs["model_path"])
    if lookup != "off":
        llama.lookup = llama.draft_model = LookupDraft(mode=lookup)
    return llama
