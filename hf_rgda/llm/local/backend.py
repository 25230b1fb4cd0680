""":class:`LocalLLM`: local GGUF models through llama-cpp-python, with JSON-schema-constrained decoding.

The model is named the way users online name it, ``ORG/REPO/FILE.gguf``, and resolved through
``huggingface_hub`` (which finds it in the local cache offline, see :mod:`hf_rgda.provision`), or given
as a path to a ``.gguf`` file. llama.cpp keeps the KV state of the previous prompt and reuses the
longest shared prefix, so prompts are written static-first and the pipeline runs stage by stage.

Option probabilities are the next token's logits, read by a logits processor during a one-token completion:
the same numbers as llama.cpp's ``logprobs``, without ``logits_all=True`` (which keeps a vocabulary-wide row per
context position: 2.5 GB for Qwen2.5 at ``n_ctx=4096``) and with the KV prefix reused like any call.

The engine (:mod:`hf_rgda.llm.local.engine`) checks a schema's grammar after sampling, as llama.cpp's own server
does, and runs on the best CPU kernels the build has for this machine (:mod:`hf_rgda.llm.local.cpu`).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..._exceptions import BackendError, ConfigError
from ..base import LLM, Completion, Message, OptionProbs, Usage
from ..options import check_options, top_logprobs_of
from .engine import make_llama
from .kvstates import common_prefix
from .lookup import LookupDraft
from .stops import SELF_COPY_TOKENS, sentence_list

__all__ = ["LocalLLM", "resolve_gguf", "top_indices"]

#: the engine's grammar, checked after sampling: a constant of the identity since the engine with the grammar in
#: llama-cpp-python's chain (whose identity had no ``grammar``) was removed (docs/decisions/grammar-after-sampling.md),
#: so the answers cached under it stay this engine's
GRAMMAR = "after_sampling"
#: engine options removed (issue #55) with the value that is the engine kept: a pickled backend with another refuses
REMOVED = {"grammar": GRAMMAR, "plain_prefill": False, "parallel": 1}


def resolve_gguf(model: str) -> Path:
    """Path of a GGUF file given as a path or as ``ORG/REPO/FILE.gguf`` on the Hub (or its local cache)."""
    path = Path(model).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return path
    parts = model.split("/")
    if len(parts) < 3 or not model.endswith(".gguf"):
        raise ConfigError(f"local model {model!r}: give a path to a .gguf file or 'ORG/REPO/FILE.gguf'")
    from huggingface_hub import hf_hub_download

    repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
    try:
        return Path(hf_hub_download(repo_id=repo_id, filename=filename))
    except Exception as err:  # huggingface_hub raises many types; all mean "not available"
        raise ConfigError(
            f"local model {model!r} is not in the Hugging Face cache and could not be downloaded "
            f"({type(err).__name__}). Offline, provision it first: `hf-rgda provision`."
        ) from err


def top_indices(values: Any, n: int) -> Any:
    """The indices of the ``n`` largest ``values``, largest first, equal values in index order: what
    ``np.argsort(-values, kind="stable")[:n]`` gives, with a partition instead of a sort of the whole vocabulary
    (151,936 logits for Qwen2.5, read at every option question).

    Example:
        >>> import numpy as np
        >>> top_indices(np.array([0.5, 2.0, 0.5, 1.0, 2.0]), 3).tolist()
        [1, 4, 3]
    """
    import numpy as np

    neg = -np.asarray(values)
    k = min(n, neg.size)
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    bound = neg[np.argpartition(neg, k - 1)[:k]].max()  # the k-th smallest of -values
    candidates = np.flatnonzero(neg <= bound)  # every value at least as large, ties at the bound included, in order
    return candidates[np.argsort(neg[candidates], kind="stable")][:k]


def _top_tokens(llama: Any, logits: Any, n: int) -> list[tuple[str, float]]:
    """The ``n`` most likely next tokens of one row of logits, as ``(text, logprob)`` (llama.cpp's own reading)."""
    import numpy as np

    row = np.asarray(logits, dtype=np.float64)
    logprobs = row - row.max()
    logprobs -= np.log(np.exp(logprobs).sum())
    best = top_indices(logprobs, n)
    return [(llama.detokenize([int(i)]).decode("utf-8", errors="replace"), float(logprobs[i])) for i in best]


def _logprob_of(logits: Any, token: int, n_vocab: int) -> float:
    """``token``'s log-probability under one row of llama.cpp's logits (a C float pointer)."""
    import numpy as np

    row = np.ctypeslib.as_array(logits, shape=(n_vocab,)).astype(np.float64)
    top = row.max()
    return float(row[token] - top - np.log(np.exp(row - top).sum()))


class LocalLLM(LLM):
    """A llama.cpp model running in this process.

    Args:
        model: path to a ``.gguf`` file or ``ORG/REPO/FILE.gguf``.
        n_ctx: context window in tokens.
        n_threads: CPU threads (default: all cores).
        kv_states_mb: MiB of KV states kept across calls (:class:`~hf_rgda.llm.local.kvstates.KVStates`): a call
            starts from the kept state sharing the longest prefix with its prompt, so a repair re-ask or a seed's next
            question evaluates only its new tokens. 0 keeps llama-cpp-python's reuse of the previous call's prefix
            alone. Not part of the identity (it changes what is evaluated, not what is asked).
        lookup: prompt-lookup drafting (:mod:`~hf_rgda.llm.local.lookup`): ``"auto"`` (default) checks guesses taken
            from the context where the engine's own timings say a wider decode buys more tokens a second,
            ``"always"`` wherever the context has a match, ``"off"`` never. Every output token is sampled from the
            model's next-token distribution as without guesses, but a decode of several tokens computes it through
            another batch shape, whose sums differ (near ties fall the other way), so the tokens sampled differ and
            the option is part of the identity; with ``"auto"`` the widths follow the machine's timings, so a rerun
            on a fresh cache is not reproducible token for token (the response cache keeps the first answers, so a
            resumed run is consistent; ``"off"`` reproduces). On by default: on the Xeon of the A/B
            (docs/decisions/lookup.md) ``"auto"`` brings the README's main command from 171.1 s to 134.0 s of LLM
            time and took 9% off an A/B's seconds per accepted row (run 19); the silver precision of its rows pools
            to 0.820 over three draws against 0.825 without guesses (A/B runs 14-16 and 19).

    The engine options the A/B runs rejected (the grammar in llama-cpp-python's chain, prompts on a plain-layout copy
    of the weights, parallel slots) were removed in issue #55; their records are in docs/decisions/.
    """

    has_logprobs = True
    scores_text = True
    reuses_prefix = True
    #: inline entity marks: with the local 1.5B, more accepted rows for fewer completion tokens than a sentence plus an
    #: entity list, and no entity missing from its sentence (docs/decisions/inline-representation.md)
    representation = "inline"
    #: no targeted re-asks: the local 1.5B writes the rejected sentence's fault again (a near copy, a malformed mark,
    #: the prompt's words) and its re-asks cost as much as the first ask (docs/decisions/local-no-repairs.md)
    max_repairs = 0
    #: one sentence beyond num_augmented from the composer: its gates (sense, completeness, variety, the entity
    #: verifier) pass about half of the 1.5B's sentences; three spare ones gave no more rows (38 against 37 of 20
    #: seeds): a short seed is mostly one bad sample, which the top-up asks again (docs/decisions/top-up.md)
    spare_sentences = 1
    #: the completeness check: the 1.5B leaves mentions untagged, new ones too (docs/decisions/completeness.md)
    check_mentions = True
    #: a seed the gates leave short is asked again, afresh, twice at most: its short seeds are mostly one bad sample
    #: (docs/decisions/top-up.md)
    top_up = 2

    def __init__(self, model: str, *, n_ctx: int = 4096, n_threads: int | None = None, kv_states_mb: int = 512,
                 lookup: str = "auto") -> None:
        if lookup not in LookupDraft.MODES:
            raise ConfigError(f"local backend lookup={lookup!r}: expected one of {', '.join(LookupDraft.MODES)}")
        self.lookup = lookup
        self.model = model
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        if kv_states_mb < 0:
            raise ConfigError(f"local backend kv_states_mb={kv_states_mb} must be 0 or more")
        self.kv_states_mb = kv_states_mb
        self._llama: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._llama is None:
            try:
                import llama_cpp  # noqa: F401
            except ImportError as err:
                raise ImportError("the local backend needs llama-cpp-python: pip install 'hf_rgda[local]'") from err
            self._llama = make_llama(
                kv_states_mb=self.kv_states_mb,
                lookup=self.lookup,
                model_path=str(resolve_gguf(self.model)),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads or os.cpu_count() or 1,
                verbose=False,
            )
        return self._llama

    def _chat(self, messages: list[dict[str, str]], stop_copies: int = 0,
              **kwargs: Any) -> tuple[dict[str, Any], Usage, float]:
        """One ``create_chat_completion`` under the lock: (response, usage with the reused KV prefix, seconds);
        ``stop_copies``: the engine's ``stop_copies`` for this call."""
        with self._lock:
            llama = self._load()
            previous = list(llama._input_ids[: llama.n_tokens])  # the KV state the last call left behind
            llama.last_restored = None
            llama.stop_copies = stop_copies
            start = time.perf_counter()
            try:
                out = llama.create_chat_completion(messages=messages, **kwargs)
            except (RuntimeError, ValueError) as err:
                raise BackendError(f"llama.cpp failed: {err}") from err
            finally:
                llama.stop_copies = 0
            seconds = time.perf_counter() - start
            usage = out.get("usage") or {}
            prompt = list(llama._input_ids[: usage.get("prompt_tokens", 0)])
            restored = getattr(llama, "last_restored", None)
        reused = max(common_prefix(previous, prompt), common_prefix(restored.key, prompt) if restored else 0)
        tokens = Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0), reused)
        return out, tokens, seconds

    def _run(self, messages: list[dict[str, str]], schema: Mapping[str, Any] | None, params: Mapping[str, Any]) -> Completion:
        kwargs = {"response_format": {"type": "json_object", "schema": dict(schema)} if schema is not None else None,
                  "temperature": float(params.get("temperature", 1.0)), "max_tokens": int(params.get("max_tokens", 768)),
                  "seed": int(params.get("seed", 0))}
        # a list of sentences ends where it starts copying itself (hf_rgda.llm.local.stops)
        copies = SELF_COPY_TOKENS if sentence_list(schema) else 0
        out, usage, seconds = self._chat(messages, stop_copies=copies, **kwargs)
        return Completion(text=out["choices"][0]["message"]["content"] or "", usage=usage, seconds=seconds)

    def _option_run(self, messages: list[dict[str, str]], options: tuple[str, ...], params: Mapping[str, Any],
                    n: int) -> OptionProbs:
        """One output token at temperature 0; its logits are captured before sampling and read as logprobs."""
        from llama_cpp import LogitsProcessorList

        tops: list[list[tuple[str, float]]] = []

        def capture(_ids: Any, logits: Any) -> Any:  # a logits processor that only reads
            if not tops:
                tops.append(_top_tokens(self._llama, logits, n))
            return logits

        _, usage, seconds = self._chat(messages, temperature=0.0, max_tokens=1, seed=int(params.get("seed", 0)),
                                       logits_processor=LogitsProcessorList([capture]))
        if not tops:
            raise BackendError("llama.cpp sampled no token: no logits to read")
        return OptionProbs.from_top(tops[0], options, usage=usage, seconds=seconds)

    def _score_texts(self, prefix: str, texts: Sequence[str]) -> list[list[float]]:
        """Each text's token logprobs after ``prefix``: the prefix's KV cells are kept from the previous call where
        they match, and the rest (the prefix's last token at least, whose logits predict the text's first) is one
        decode with logits at every position (the engine's ``_eval_all_logits``)."""
        import llama_cpp

        out = []
        with self._lock:
            llama = self._load()
            head = llama.tokenize(prefix.encode(), add_bos=True, special=False)
            for text in texts:
                body = llama.tokenize(text.encode(), add_bos=False, special=False)
                if not body:
                    out.append([])
                    continue
                if len(head) + len(body) > min(self.n_ctx, llama.n_batch):
                    raise BackendError(f"text to score is {len(head) + len(body)} tokens, over the batch of "
                                       f"{min(self.n_ctx, llama.n_batch)}")
                keep = min(common_prefix(list(llama._input_ids[: llama.n_tokens]), head), len(head) - 1)
                llama.n_tokens = keep
                batch = (head + body)[keep:]
                llama._eval_all_logits(batch)
                rows = []
                for j, token in enumerate(body):  # the logits of the token before each text token predict it
                    ptr = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, len(head) - keep - 1 + j)
                    rows.append((ptr, token))
                out.append([_logprob_of(ptr, token, llama.n_vocab()) for ptr, token in rows])
        return out

    async def text_logprobs(self, prefix: str, texts: Sequence[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._score_texts, prefix, list(texts))

    async def complete(
        self, messages: Sequence[Message], *, schema: Mapping[str, Any] | None, params: Mapping[str, Any]
    ) -> Completion:
        return await asyncio.to_thread(self._run, [dict(m) for m in messages], schema, params)

    async def option_probs(self, messages: Sequence[Message], options: Sequence[str], *,
                           params: Mapping[str, Any]) -> OptionProbs:
        """Read from the next-token logits of this process's model: no ``logits_all``, the KV prefix is reused."""
        opts, n = check_options(options), top_logprobs_of(params)
        return await asyncio.to_thread(self._option_run, [dict(m) for m in messages], opts, params, n)

    def close(self) -> None:
        """Free the model and its context (the next call loads the model again)."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
            self._llama = None

    def identity(self) -> dict[str, Any]:
        """What decides the tokens written: the model, the context, the engine's grammar and, when on, prompt lookup
        (the engine without guesses keeps the identity, and cached answers, it had before the option)."""
        extra = {"lookup": self.lookup} if self.lookup != "off" else {}
        return {"backend": "local", "model": self.model, "n_ctx": self.n_ctx, "grammar": GRAMMAR, **extra}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_llama"] = None
        state.pop("_lock")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        for key, kept in REMOVED.items():
            if (value := state.pop(key, kept)) != kept:
                raise ConfigError(f"this local backend was pickled with {key}={value!r}, an engine option removed "
                                  "since (issue #55); build it again")
        state.pop("max_concurrency", None)  # pickled with the parallel slots' own
        state.setdefault("kv_states_mb", 512)
        state.setdefault("lookup", "off")  # pickled before the option: the engine it was
        self.__dict__.update(state)
        self._lock = threading.Lock()
