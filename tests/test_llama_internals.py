"""What the local engine (``hf_rgda/llm/local/``) overrides or reads of llama-cpp-python beyond its documented API,
pinned to the version it was checked against.

The engine subclasses ``llama_cpp.Llama`` (``engine.py``: its generation loop runs our sampler, drafter and KV-state
store through hooks llama-cpp-python does not document) and reads private attributes of it and of its ``_internals``
(``backend.py``, ``cpu.py``). An upgrade may rename or rewire any of them, and the failure would show far away (an
answer outside its schema, a wrong KV cell, a slower run), so every such name is listed here and checked by name,
signature or source line; a new version fails :func:`test_the_installed_version_is_the_one_checked` even when every
name is still there.

On an upgrade: read the new ``llama_cpp/llama.py`` (``Llama.__init__``, ``eval``, ``_init_sampler``, ``sample``,
``generate``, ``_create_completion``'s cache block) and ``_internals.py`` around each name below, run the engine's
slow tests (``tests/test_local_engine.py``, ``tests/test_text_logprobs.py``, ``tests/test_local_integration.py``,
``-m slow``), then set :data:`CHECKED` and the pin in ``pyproject.toml`` (the ``local`` extra) to the new version.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

llama_cpp = pytest.importorskip("llama_cpp")

#: the llama-cpp-python version every entry below was checked against
CHECKED = "0.3.36"
RECHECK = (f"the local engine was checked against llama-cpp-python {CHECKED}: re-check what "
           "tests/test_llama_internals.py lists (its docstring says how)")

#: ``Llama`` methods the engine overrides or calls, with the parameters it passes or receives by name
METHODS: dict[str, tuple[str, ...]] = {
    # engine.py: overridden; the grammar is taken out of the chain and checked after it (GrammarAfterSampling)
    "_init_sampler": ("top_k", "top_p", "min_p", "typical_p", "temp", "repeat_penalty", "frequency_penalty",
                      "presence_penalty", "tfs_z", "mirostat_mode", "mirostat_eta", "mirostat_tau", "penalize_nl",
                      "logits_processor", "grammar"),
    # engine.py: overridden (counts the decodes of one generation: the first evaluates the prompt)
    "generate": ("tokens",),
    # engine.py: overridden (a decode with guesses goes through _eval_all_logits)
    "eval": ("tokens",),
    # engine.py: overridden (KVState instead of LlamaState: no copy of the score rows)
    "save_state": (),
    "load_state": ("state",),
    # engine.py: KVStates plugged in as the cache
    "set_cache": ("cache",),
    # backend.py
    "create_chat_completion": ("messages", "response_format", "temperature", "max_tokens", "seed", "logits_processor"),
    "tokenize": ("text", "add_bos", "special"),
    "detokenize": ("tokens",),
    "n_vocab": (),
}

#: attributes ``Llama.__init__`` sets that the engine reads or writes (engine.py, backend.py)
ATTRIBUTES = ("_ctx", "_batch", "_model", "_n_vocab", "_n_ctx", "_seed", "_requires_eval", "n_tokens", "input_ids",
              "cache", "draft_model", "n_batch")

#: source lines of ``Llama`` whose behaviour the engine's overrides rely on: {method: (line, why)}
SOURCE: dict[str, tuple[tuple[str, str], ...]] = {
    "generate": (
        ("self._sampler = self._init_sampler(", "one sampler per generation, built by the overridden _init_sampler"),
        ("self.eval(tokens)", "every decode of a generation goes through the overridden eval"),
        ("self.draft_model(", "the drafter (LookupDraft) is called as the draft_model hook"),
        ("self.sample(", "each position is sampled in turn, guesses included"),
        ("token != self._input_ids[sample_idx]", "a guess is dropped where it differs from the token sampled"),
    ),
    "sample": (("self._sampler.sample(self._ctx, ridx)", "GrammarAfterSampling.sample(ctx, idx) samples and accepts"),),
    "_create_completion": (
        ("self.cache[prompt_tokens]", "KVStates answers the kept state sharing the longest prefix"),
        ("self.load_state(cache_item)", "the overridden load_state restores a KVState"),
        ("self.save_state()", "the overridden save_state keeps the KV cells, not the score rows"),
    ),
    "eval": (("self._batch.set_batch(", "_eval_all_logits decodes as eval does, logits at every token"),),
}

#: ``llama_cpp._internals`` (and grammar) members the engine uses: {class: (attributes set in __init__, methods)}
INTERNALS: dict[str, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {
    "LlamaContext": (("ctx",), {"kv_cache_seq_rm": ("seq_id", "p0", "p1"), "decode": ("batch",)}),
    "LlamaBatch": ((), {"set_batch": ("batch", "n_past", "logits_all")}),
    "LlamaModel": (("vocab",), {}),
    "LlamaSampler": (("sampler",), {"close": ()}),
}
#: LlamaGrammar's private text and root rule, rewritten into the engine's own grammar sampler (engine.py)
GRAMMAR_ATTRIBUTES = ("_grammar", "_root")

#: llama.cpp C functions and types the engine calls through the bindings (engine.py, backend.py, cpu.py)
C_API = ("llama_sampler_init_grammar", "llama_sampler_apply", "llama_sampler_accept", "llama_sampler_free",
         "llama_token_data", "llama_token_data_array", "llama_token_data_p", "llama_vocab_eos", "llama_vocab_eot",
         "llama_get_logits_ith", "llama_state_get_size", "llama_state_get_data", "llama_state_set_data",
         "llama_print_system_info", "LogitsProcessorList")
#: private names of the bindings module ``llama_cpp.llama_cpp`` (cpu.py: the loaded library and its folder)
BINDINGS = ("_lib", "_base_path")


def _lost_parameters(function: object, names: tuple[str, ...]) -> list[str]:
    params = inspect.signature(function).parameters  # type: ignore[arg-type]
    return [p for p in names if p not in params]


def _unset(cls: type, attributes: tuple[str, ...]) -> list[str]:
    """The ``attributes`` that ``cls.__init__`` never assigns (``self.x = ...`` or ``self.x: T = ...``)."""
    source = inspect.getsource(cls.__init__)
    return [a for a in attributes if not re.search(rf"self\.{a}\s*(:[^=\n]*)?=", source)]


def _missing_lines(function: object, lines: tuple[tuple[str, str], ...]) -> list[str]:
    source = inspect.getsource(function)  # type: ignore[arg-type]
    return [f"{line!r} ({why})" for line, why in lines if line not in source]


def test_the_installed_version_is_the_one_checked() -> None:
    assert llama_cpp.__version__ == CHECKED, f"llama-cpp-python {llama_cpp.__version__} is installed; {RECHECK}"
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    pins = re.findall(r"llama-cpp-python(?:\[[a-z,]+\])?==([0-9.]+)", pyproject)
    assert pins == [CHECKED], f"pyproject.toml pins llama-cpp-python {pins}; {RECHECK}"


@pytest.mark.parametrize("name", sorted(METHODS))
def test_the_llama_methods_the_engine_overrides_or_calls_keep_their_parameters(name: str) -> None:
    method = getattr(llama_cpp.Llama, name, None)
    assert callable(method), f"Llama.{name} is gone; {RECHECK}"
    lost = _lost_parameters(method, METHODS[name])
    assert not lost, f"Llama.{name} lost the parameters {lost}; {RECHECK}"


def test_the_llama_attributes_the_engine_reads_are_still_set() -> None:
    missing = _unset(llama_cpp.Llama, ATTRIBUTES)
    assert not missing, f"Llama.__init__ no longer sets {missing}; {RECHECK}"
    assert isinstance(inspect.getattr_static(llama_cpp.Llama, "_input_ids"), property), (
        f"Llama._input_ids is no longer a property; {RECHECK}")


@pytest.mark.parametrize("method", sorted(SOURCE))
def test_the_llama_lines_the_engine_hooks_into_are_still_there(method: str) -> None:
    missing = _missing_lines(getattr(llama_cpp.Llama, method), SOURCE[method])
    assert not missing, f"Llama.{method} changed: {'; '.join(missing)} not found; {RECHECK}"


@pytest.mark.parametrize("name", sorted(INTERNALS))
def test_the_internals_the_engine_uses_are_still_there(name: str) -> None:
    from llama_cpp import _internals

    cls = getattr(_internals, name, None)
    assert cls is not None, f"llama_cpp._internals.{name} is gone; {RECHECK}"
    attributes, methods = INTERNALS[name]
    missing = _unset(cls, attributes)
    assert not missing, f"{name}.__init__ no longer sets {missing}; {RECHECK}"
    for method, expected in methods.items():
        assert callable(getattr(cls, method, None)), f"{name}.{method} is gone; {RECHECK}"
        lost = _lost_parameters(getattr(cls, method), expected)
        assert not lost, f"{name}.{method} lost the parameters {lost}; {RECHECK}"


def test_the_grammar_and_the_c_api_the_engine_uses_are_still_there() -> None:
    from llama_cpp import llama_cpp as bindings
    from llama_cpp.llama_grammar import LlamaGrammar

    grammar = LlamaGrammar.from_string('root ::= "a"', verbose=False)
    missing = [a for a in GRAMMAR_ATTRIBUTES if not hasattr(grammar, a)]
    assert not missing, f"LlamaGrammar no longer has {missing}; {RECHECK}"
    missing = [f for f in C_API if not hasattr(llama_cpp, f)]
    assert not missing, f"llama_cpp no longer exports {missing}; {RECHECK}"
    missing = [f for f in BINDINGS if not hasattr(bindings, f)]
    assert not missing, f"llama_cpp.llama_cpp no longer has {missing}; {RECHECK}"
    assert [f for f in ("id", "logit", "p") if f not in dict(llama_cpp.llama_token_data._fields_)] == [], RECHECK
    assert [f for f in ("data", "size", "selected", "sorted")
            if f not in dict(llama_cpp.llama_token_data_array._fields_)] == [], RECHECK


class _Upgraded:
    """A stand-in for a ``Llama`` whose next version renamed what the engine relies on."""

    def __init__(self) -> None:
        self._context = None
        self.n_tokens: int = 0

    def eval(self, ids: list[int]) -> None:
        self._decode(ids)

    def _decode(self, ids: list[int]) -> None:
        return None


def test_the_checks_report_what_an_upgrade_renamed() -> None:
    assert _lost_parameters(_Upgraded.eval, ("tokens",)) == ["tokens"]
    assert _lost_parameters(_Upgraded.eval, ("ids",)) == []
    assert _unset(_Upgraded, ("_ctx", "n_tokens", "_context")) == ["_ctx"]
    assert _missing_lines(_Upgraded.eval, (("self._batch.set_batch(", "why"), ("self._decode(ids)", "why"))) == [
        "'self._batch.set_batch(' (why)"]
