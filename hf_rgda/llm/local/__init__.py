"""The local backend: a GGUF model run by llama.cpp in this process (:class:`LocalLLM`, ``load_llm("local:...")``).

Its one face is this package; its rooms, each with its own docstring:

- :mod:`.backend`: :class:`LocalLLM`, the :class:`~hf_rgda.llm.LLM` the pipeline calls, and :func:`resolve_gguf`.
- :mod:`.engine`: llama-cpp-python's ``Llama`` with the schema's grammar checked after sampling, KV states kept
  across calls and prompt-lookup guesses checked in one decode (:func:`make_llama`).
- :mod:`.kvstates`, :mod:`.lookup`, :mod:`.stops`: the kept KV states, the drafter of guesses, the rules that end an
  answer caught in a loop or copying itself.
- :mod:`.cpu`: the CPU kernels chosen at run time.

The engine subclasses llama-cpp-python's ``Llama`` and reads some of its private attributes; the list, with the
version it was checked against, is ``tests/test_llama_internals.py``, which fails on an upgrade that changes them.
Importing this package does not import ``llama_cpp`` (:func:`load_cpu_variant` must run before it is).
"""

from __future__ import annotations

from .backend import LocalLLM, resolve_gguf, top_indices
from .cpu import cpu_backend, cpu_variants, load_cpu_backends, load_cpu_variant
from .engine import GrammarAfterSampling, make_llama
from .kvstates import KVState, KVStates, common_prefix
from .lookup import LookupDraft
from .stops import SELF_COPY_TOKENS, SelfCopy, loops, sentence_list

__all__ = ["SELF_COPY_TOKENS", "GrammarAfterSampling", "KVState", "KVStates", "LocalLLM", "LookupDraft", "SelfCopy",
           "common_prefix", "cpu_backend", "cpu_variants", "load_cpu_backends", "load_cpu_variant", "loops",
           "make_llama", "resolve_gguf", "sentence_list", "top_indices"]
