"""What every benchmark needs, written once: the results file's header (command, commit, machine), the datasets
(loading, their domains, their sentences as tag names) and the seed key the library gives a seed row.

The benchmarks are a package run from the repository root (``python -m benchmarks.protocol ...``), so they import the
library and each other by module path (no edit of the import path), and use the library's public names only.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_rgda.recipe import load_source
from hf_rgda.records import seed_key
from hf_rgda.tags import to_tag_names

__all__ = ["DATA_DIR", "DOMAINS", "MAIN_COMMAND_DOMAIN", "ROOT", "Sentence", "add_cpu_module", "command", "commit",
           "composer_tokens", "decode_probe", "header", "llama_context", "load", "machine", "parser", "seed_key", "sentences",
           "use_cpu_module", "write_results"]

ROOT = Path(__file__).resolve().parents[1]
#: where the benchmark datasets live (a folder per dataset: ``train.jsonl``, ``test.jsonl``)
DATA_DIR = ROOT.parent / "shared" / "data"
#: each benchmark dataset's domain, as the LLM methods are told it
DOMAINS = {
    "ncbi_disease": "biomedical research abstracts (PubMed) with disease mentions",
    "scierc": "computer science research abstracts (AI, NLP, vision)",
    "fin": "financial agreements and SEC filings",
}
#: the ``--domain`` of the README's main command (NCBI-disease), which the local-engine benchmarks run as it is
MAIN_COMMAND_DOMAIN = "biomedical research abstracts (disease mentions)"
#: a sentence as tokens and tag names
Sentence = tuple[tuple[str, ...], tuple[str, ...]]


def command(module: str, argv: Sequence[str] | None = None) -> str:
    """How this run was started: ``python -m benchmarks.<module> <arguments>``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["python -m", f"benchmarks.{module.rsplit('.', 1)[-1]}", *args])


def commit() -> str:
    """The code measured: ``BENCHMARK_COMMIT`` where the sender of a copy of the tree set it (a device machine's copy
    carries a git folder that need not be at the commit sent), else the short hash of HEAD, flagged when ``hf_rgda/``
    has uncommitted edits."""
    if os.environ.get("BENCHMARK_COMMIT"):
        return os.environ["BENCHMARK_COMMIT"]
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", *args], capture_output=True, text=True, check=False, cwd=ROOT).stdout
        dirty = git("status", "--porcelain", "hf_rgda").strip()
        return git("rev-parse", "--short", "HEAD").strip() + ("+uncommitted changes in hf_rgda/" if dirty else "")
    except OSError:
        return "unknown"


def cpu_model() -> str:
    """The CPU's model name as Linux reports it (``/proc/cpuinfo``), or ``""`` where it does not: the same two cores
    were an AMD EPYC on some sessions' machines and an Intel Xeon on others, and llama.cpp's kernels differ between
    them."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def gpu() -> str:
    """``"GPU: <name>"`` for each GPU ``nvidia-smi`` lists, else ``"no GPU"``."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, check=False, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "no GPU"
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return f"GPU: {', '.join(names)}" if names else "no GPU"


def machine(note: str | None = None) -> str:
    """The machine in one line: architecture, CPU cores (and their model, where known) and ``note`` (default: the
    GPU, or "no GPU")."""
    note = gpu() if note is None else note
    model = cpu_model()
    return (f"{platform.machine()}, {os.cpu_count()} CPU cores" + (f" ({model})" if model else "")
            + (f", {note}" if note else ""))


def header(module: str, argv: Sequence[str] | None = None, note: str | None = None) -> dict[str, str]:
    """The results file's header: ``command``, ``commit`` and ``machine``."""
    return {"command": command(module, argv), "commit": commit(), "machine": machine(note)}


def write_results(path: Path, result: dict[str, Any]) -> None:
    """Write a benchmark's ``result`` to ``path`` (its folder made) as indented JSON, and print it."""
    import json

    text = json.dumps(result, indent=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(text)


def add_cpu_module(p: argparse.ArgumentParser, help: str = "") -> None:
    """``--cpu-module MODULE``: run on one CPU backend variant of the llama.cpp build instead of the best one."""
    p.add_argument("--cpu-module", default=None, metavar="MODULE",
                   help=help or "run on this CPU backend variant alone (libggml-cpu-zen4.so, ...) instead of the best one")


def use_cpu_module(args: argparse.Namespace) -> None:
    """Register ``args.cpu_module`` alone, before anything imports llama_cpp (whose bindings register the best one)."""
    if args.cpu_module:
        from hf_rgda.llm.local import load_cpu_variant

        load_cpu_variant(args.cpu_module)


def llama_context(path: str, threads: int, *, n_ctx: int = 4096) -> tuple[Any, Any]:
    """A llama.cpp model and context through its C API, set up as llama-cpp-python's ``Llama`` sets them (batches
    of 512, flash attention off), the weights repacked at load (llama.cpp's default)."""
    import llama_cpp as L

    mp = L.llama_model_default_params()
    mp.use_extra_bufts = True
    model = L.llama_model_load_from_file(str(path).encode(), mp)
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch = n_ctx, 512, 512
    cp.n_threads = cp.n_threads_batch = threads
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    return model, L.llama_init_from_model(model, cp)


def composer_tokens(model: Any, n: int) -> list[int]:
    """The first ``n`` tokens of the composer prompt's text under ``model``'s vocabulary: a prompt of the pipeline's."""
    import llama_cpp as L

    vocab = L.llama_model_get_vocab(model)
    text = (ROOT / "hf_rgda" / "prompts" / "composer.md").read_text(encoding="utf-8").encode()
    ids = (L.llama_token * 4096)()
    return list(ids[: L.llama_tokenize(vocab, text, len(text), ids, 4096, True, True)])[:n]


def decode_probe(reps: int = 9, widths: Sequence[int] = (1, 9)) -> dict[str, Any]:
    """What a decode of the embedded default model costs on this machine now: the median seconds of a decode of
    ``widths`` tokens after a 300-token prompt (the library's prompt texts), through the local backend's own engine (its kernels, and logits at
    every position as its prompt-lookup checks). The host of this project's machines is shared, and the same engine's
    one-token decode has taken from 0.068 s to 0.114 s on the same idle machine within one hour; a single timing
    such as the main command's is read against this one, taken right after it."""
    import statistics
    import time

    from hf_rgda import DEFAULT_LLM
    from hf_rgda.llm.local import LocalLLM

    llama = LocalLLM(DEFAULT_LLM.split(":", 1)[1], lookup="always", kv_states_mb=0)._load()
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "hf_rgda" / "prompts").glob("*.md")))
    tokens = llama.tokenize(text.encode())[: 300 + max(widths)]
    if len(tokens) < 300 + max(widths):
        raise RuntimeError(f"the prompts make {len(tokens)} tokens, fewer than the probe's {300 + max(widths)}")
    llama.reset()
    llama.eval(tokens[:300])
    base, seconds = llama.n_tokens, {w: [] for w in widths}
    for _ in range(reps):
        for w in widths:
            llama._ctx.kv_cache_seq_rm(-1, base, -1)
            llama.n_tokens = base
            start = time.perf_counter()
            if w == 1:
                llama._eval_prompt(tokens[300:301])
            else:
                llama._eval_all_logits(tokens[300 : 300 + w])
            seconds[w].append(time.perf_counter() - start)
    return {"reps": reps, "prompt_tokens": base,
            "median_seconds_by_width": {w: round(statistics.median(v), 4) for w, v in seconds.items()}}


def load(data_dir: Path, name: str) -> Any:
    """Dataset ``name``'s ``DatasetDict`` from ``data_dir``."""
    return load_source(str(data_dir / name))


def sentences(split: Any) -> list[Sentence]:
    """A split's sentences as tokens and tag names (``ClassLabel`` ids converted)."""
    return [(tuple(t), tuple(g)) for t, g in zip(split["tokens"], to_tag_names(split, "ner_tags"))]


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's argument parser, described by its docstring's first line, with the options every dataset
    benchmark takes: ``--data-dir`` (default ``../shared/data``) and ``--datasets`` (default all three)."""
    p = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=list(DOMAINS))
    return p
