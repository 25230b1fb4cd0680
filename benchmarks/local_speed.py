"""The embedded engine's speed, A/B: a baseline commit against this checkout on the same NCBI-disease seeds.

Each arm is a checkout of the code (``git worktree add /tmp/base 8ae9ee0``) and a Python (a virtual environment; a
second one holds another llama.cpp build). The same ``--num-seeds`` seeds (``sample_seeds``, sample seed 0, as the
README's command draws them) run in chunks of ``--chunk`` seeds, as the README's main command runs them (rgda, its
defaults, one map batch, an empty response cache per chunk); the arms alternate chunk by chunk (A B, then B A, ...)
so load that comes and goes falls on both. Every chunk runs in a fresh process of its arm's Python in its arm's folder
(the code imported is the arm's own) and the results file is rewritten after every chunk, so it can be read while the
run goes on. Reported per arm: LLM seconds and wall seconds per accepted row, accepted rows per seed (mean and 95%
interval over seeds), completion tokens per accepted row, rejections by reason, and the accepted rows themselves
(``cells``: ``python benchmarks/silver.py --datasets ncbi_disease --rows benchmarks/results/local_speed/local_speed.json`` scores
them against the silver tagger). The load average before and after each chunk is kept: other work on the machine
slows both arms.

``--decode N`` instead measures generation under the composer's schema in one process: the engine's grammar after
sampling (``after_sampling``) and no grammar (``free``), interleaved, N completions each: tokens/s, the sampler's CPU time per token (thread time: robust to a loaded
machine), whether each output parses and fits the schema, and the prompt-processing speed of this build.

``--kernels NAME=LIBDIR[:MODULE] ...`` instead measures llama.cpp builds: each named folder of llama.cpp libraries (a
venv's ``llama_cpp/lib``, or any build's) is loaded in a fresh process through ``LLAMA_CPP_LIB_PATH`` (with
``:MODULE``, only that CPU backend variant module is loaded, as on a CPU whose best variant it is), and prompt
processing (512 tokens) and generation (32 tokens) are timed at ``--threads`` threads, the builds interleaved
``--reps`` times; each also writes a greedy completion, to show the kernels compute the same thing.

``--batches`` instead measures what one llama.cpp decode costs as it carries more tokens, on this venv's build, at
``--threads`` threads, in one process: B sequences one new token each (generation of B answers at once, after a
64-token prompt each: tokens/s over all of them), one sequence n new tokens at once with logits at every one (what a
draft verifier pays), and a prompt's next n tokens with logits for the last only (a judge question, a prompt's last
chunk). Were generation bound by reading the weights from memory, B sequences would cost about what one does. Each
measurement starts from an emptied cache (freed cells would widen what attention reads), medians of 3 rounds.

Usage:
    git worktree add /tmp/base 8ae9ee0
    python -m benchmarks.local_speed --arm base=/tmp/base::/tmp/portable_lib --arm main=. --num-seeds 20 --chunk 4
    python -m benchmarks.local_speed --arm a=/tmp/a --arm b=/tmp/b --first-seed 20 --num-seeds 20   # a fresh draw
    python -m benchmarks.local_speed --decode 4 --out benchmarks/results/local_speed/local_decode.json
    python -m benchmarks.local_speed --kernels portable=/tmp/portable/lib variants=.venv/lib/python3.11/site-packages/llama_cpp/lib \
        native=/tmp/nativelib haswell=.venv/lib/python3.11/site-packages/llama_cpp/lib:libggml-cpu-haswell.so
    python -m benchmarks.local_speed --batches --out benchmarks/results/local_speed/local_batches.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA_DIR,
    DOMAINS,
    MAIN_COMMAND_DOMAIN,
    ROOT,
    add_cpu_module,
    command,
    machine,
    use_cpu_module,
)

#: run in the arm's folder by the arm's Python (``python -c``): only names both the baseline and main export
WORKER = r'''
import json, sys, time
args = json.loads(sys.argv[1])
from hf_rgda import DEFAULT_LLM, AugmentConfig, RGDAAugmenter
from hf_rgda.recipe import augment, load_split, sample_seeds
split = load_split(args["data"], "train")
seeds = sample_seeds(split, args["num_seeds"], sample_seed=0).select(args["indices"])
cfg = AugmentConfig(method="rgda", domain=args["domain"], keep_originals=True, keep_rejected=True)
aug = RGDAAugmenter.from_dataset(split, llm=DEFAULT_LLM, config=cfg, cache=args["cache"])
run = augment(seeds, aug, batch_size=8, desc="rgda")
names = None
feat = run.rows.features["ner_tags"]
if hasattr(getattr(feat, "feature", None), "names"):
    names = feat.feature.names
per_seed, rows, rejected = [], [], []
for r in run.rows:
    if r["rgda_status"] == "original":
        per_seed.append(0)
    elif r["rgda_status"] == "accepted":
        per_seed[-1] += 1
        tags = [names[t] for t in r["ner_tags"]] if names else list(r["ner_tags"])
        rows.append({"tokens": list(r["tokens"]), "tags": tags})
    elif r["rgda_status"] == "rejected":  # what each gate dropped, to be read (the raw answer and the detail)
        t = json.loads(r["rgda_trace"] or "{}")
        rejected.append({"seed": args["indices"][len(per_seed) - 1], "reason": r["rgda_reason"], "raw": t.get("raw"),
                         "detail": t.get("detail")})
import os
from llama_cpp import llama_cpp as bindings
lib = str(bindings._base_path)  # llama_cpp/lib, or LLAMA_CPP_LIB_PATH (an arm run on another build)
print("RESULT " + json.dumps({"summary": run.summary.to_dict(), "per_seed": per_seed, "rows": rows, "rejected": rejected,
      "identity": aug.llm.identity(), "llama_cpp_lib": lib, "llama_cpp_modules": sorted(os.listdir(lib)),
      "system_info": bindings.llama_print_system_info().decode(errors="replace")}))
'''


#: one build's speed, run by this venv's Python with ``LLAMA_CPP_LIB_PATH`` set to the build's folder
KERNEL_WORKER = r'''
import json, sys, time
args = json.loads(sys.argv[1])
from hf_rgda.llm.local import load_cpu_backends, load_cpu_variant
if args["module"]:  # this variant alone, as ggml would pick it on a CPU where it scores best (before the import,
    load_cpu_variant(args["module"])  # whose bindings register the best module)
import llama_cpp
from llama_cpp import llama_cpp as bindings
lib = bindings._base_path
registered = load_cpu_backends()
llm = llama_cpp.Llama(model_path=args["model"], n_ctx=2048, n_threads=args["threads"], n_batch=512, verbose=False)
text = open(args["text"]).read() * 8
toks = llm.tokenize(text.encode())[:512]
pp, tg = [], []
for _ in range(args["reps"]):
    llm.reset()
    t = time.perf_counter(); llm.eval(toks); pp.append(len(toks) / (time.perf_counter() - t))
    t = time.perf_counter()
    for tok in toks[:32]:
        llm.eval([tok])
    tg.append(32 / (time.perf_counter() - t))
llm.reset()
greedy = llm.create_completion("Asthma is a chronic disease of the", max_tokens=16, temperature=0.0)["choices"][0]["text"]
print("RESULT " + json.dumps({"pp": pp, "tg": tg, "greedy": greedy,
      "system_info": llama_cpp.llama_print_system_info().decode(errors="replace"), "registered": registered,
      "modules": sorted(p.name for p in lib.glob("libggml-cpu*.so"))}))
'''


def kernels(args: argparse.Namespace) -> dict[str, Any]:
    """Prompt processing and generation speed of llama.cpp builds, interleaved, each in a fresh process."""
    from hf_rgda import DEFAULT_LLM
    from hf_rgda.llm.local import resolve_gguf

    model = str(resolve_gguf(DEFAULT_LLM.split(":", 1)[1]))
    builds = {}
    for spec in args.kernels:
        name, _, rest = spec.partition("=")
        folder, _, module = rest.partition(":")
        builds[name] = {"lib": str(Path(folder).resolve()), "module": module or None}
    out: dict[str, Any] = {"command": command("local_speed"), "machine": machine(), "model": DEFAULT_LLM,
                           "threads": args.threads or os.cpu_count(), "load_average_start": _load(), "builds": builds}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in builds}
    for rep in range(args.reps):
        for name, build in (builds.items() if rep % 2 == 0 else reversed(builds.items())):
            job = {"model": model, "threads": args.threads or os.cpu_count(), "reps": 1, "module": build["module"],
                   "text": str(ROOT / "hf_rgda" / "prompts" / "composer.md")}
            env = {**os.environ, "LLAMA_CPP_LIB_PATH": build["lib"], "HF_HUB_OFFLINE": "1"}
            proc = subprocess.run([sys.executable, "-c", KERNEL_WORKER, json.dumps(job)], env=env, capture_output=True,
                                  text=True, check=False)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode or not lines:
                raise RuntimeError(f"build {name} failed:\n{proc.stderr[-3000:]}")
            got = json.loads(lines[-1][len("RESULT "):])
            runs[name].append({**got, "load": _load()})
            print(name, round(got["pp"][0], 1), "pp t/s", round(got["tg"][0], 1), "tg t/s", repr(got["greedy"]), flush=True)
    for name, rs in runs.items():
        build = builds[name]
        build["prompt_tokens_per_s"] = [round(r["pp"][0], 1) for r in rs]
        build["gen_tokens_per_s"] = [round(r["tg"][0], 1) for r in rs]
        build["prompt_tokens_per_s_median"] = round(statistics.median(r["pp"][0] for r in rs), 1)
        build["gen_tokens_per_s_median"] = round(statistics.median(r["tg"][0] for r in rs), 1)
        build["greedy"] = rs[-1]["greedy"]
        build["system_info"] = rs[-1]["system_info"]
        build["modules"] = rs[-1]["modules"]
    base = next(iter(builds))
    out["prompt_speed_vs_" + base] = {name: round(b["prompt_tokens_per_s_median"] / builds[base]["prompt_tokens_per_s_median"], 3)
                                      for name, b in builds.items()}
    out["load_average_end"] = _load()
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_chunk(arm: dict[str, str], indices: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """One chunk of seeds through one arm, in a fresh process; its figures."""
    with tempfile.TemporaryDirectory(prefix="local_speed_") as tmp:
        domain = MAIN_COMMAND_DOMAIN if args.dataset == "ncbi_disease" else DOMAINS.get(args.dataset, args.dataset)
        job = {"data": str(args.data_dir / args.dataset), "num_seeds": args.first_seed + args.num_seeds,
               "indices": indices, "domain": domain, "cache": str(Path(tmp) / "cache.sqlite3")}
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(Path(tmp) / "datasets")}
        env.pop("PYTHONPATH", None)
        env.pop("LLAMA_CPP_LIB_PATH", None)
        if arm.get("lib"):  # the arm's llama.cpp build, when it is not its Python's own
            env["LLAMA_CPP_LIB_PATH"] = arm["lib"]
        load_before, start = _load(), time.perf_counter()
        proc = subprocess.run([arm["python"], "-c", WORKER, json.dumps(job)], cwd=arm["path"], env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"arm {arm['name']} failed on seeds {indices}:\n{proc.stderr[-3000:]}")
    out = json.loads(lines[-1][len("RESULT "):])
    s = out["summary"]
    return {"seeds": indices, "wall_seconds": round(wall, 1), "load_before": load_before, "load_after": _load(),
            "llm_seconds": s["llm_seconds"], "accepted": s["accepted"], "per_seed": out["per_seed"],
            # the augmentation's own wall time (llm_seconds sums the calls, which may overlap in an arm's engine)
            "run_wall_seconds": s.get("wall_seconds"),
            "completion_tokens": s["completion_tokens"], "prompt_tokens": s["prompt_tokens"],
            "cached_prompt_tokens": s["cached_prompt_tokens"], "rejected_by_reason": s["rejected_by_reason"],
            "failed_seeds": s["failed_seeds"], "identity": out["identity"], "llama_cpp_lib": out["llama_cpp_lib"],
            "llama_cpp_modules": out["llama_cpp_modules"], "system_info": out["system_info"],
            "rows": out["rows"], "rejected": out.get("rejected", [])}


def mean_interval(xs: list[float]) -> list[float] | None:
    """Mean and 95% t-interval (normal quantile from 30 on) of ``xs``."""
    if len(xs) < 2:
        return None
    t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 8: 2.36, 10: 2.26, 12: 2.20, 16: 2.13, 20: 2.09}
    q = next((v for k, v in sorted(t.items()) if len(xs) <= k), 1.96)
    half = q * statistics.stdev(xs) / math.sqrt(len(xs))
    return [round(statistics.mean(xs) - half, 3), round(statistics.mean(xs) + half, 3)]


def totals(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """An arm's figures over its finished chunks."""
    acc = sum(c["accepted"] for c in chunks)
    per_seed = [n for c in chunks for n in c["per_seed"]]
    llm, wall = sum(c["llm_seconds"] for c in chunks), sum(c["wall_seconds"] for c in chunks)
    comp = sum(c["completion_tokens"] for c in chunks)
    reasons: Counter[str] = Counter()
    for c in chunks:
        reasons.update(c["rejected_by_reason"])
    run_wall = sum(c.get("run_wall_seconds") or 0.0 for c in chunks)
    return {"seeds": len(per_seed), "accepted": acc, "llm_seconds": round(llm, 1), "wall_seconds": round(wall, 1),
            "run_wall_seconds": round(run_wall, 1),
            "run_wall_seconds_per_accepted_row": round(run_wall / acc, 2) if acc and run_wall else None,
            "llm_seconds_per_accepted_row": round(llm / acc, 2) if acc else None,
            "wall_seconds_per_accepted_row": round(wall / acc, 2) if acc else None,
            "accepted_per_seed": round(acc / len(per_seed), 3) if per_seed else None,
            "accepted_per_seed_95": mean_interval([float(n) for n in per_seed]),
            "completion_tokens": comp, "completion_tokens_per_accepted_row": round(comp / acc, 1) if acc else None,
            "prompt_tokens": sum(c["prompt_tokens"] for c in chunks),
            "cached_prompt_tokens": sum(c["cached_prompt_tokens"] for c in chunks),
            "rejected_by_reason": dict(reasons.most_common()), "failed_seeds": sum(c["failed_seeds"] for c in chunks)}


def ratios(result: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """Each later arm's seconds per accepted row over the first arm's (the baseline), with the chunks both have run."""
    base, out = result["arms"][names[0]], {}
    for name in names[1:]:
        main = result["arms"][name]
        if base.get("llm_seconds_per_accepted_row") and main.get("llm_seconds_per_accepted_row"):
            out[f"{name}/{names[0]}"] = {
                key: round(main[key] / base[key], 3)
                for key in ("llm_seconds_per_accepted_row", "wall_seconds_per_accepted_row",
                            "run_wall_seconds_per_accepted_row") if main.get(key) and base.get(key)
            } | {"chunks_paired": min(len(result["chunks"][names[0]]), len(result["chunks"][name]))}
    return out


def ab(args: argparse.Namespace) -> dict[str, Any]:
    arms = []
    for spec in args.arm:
        name, _, rest = spec.partition("=")
        path, _, rest = rest.partition(":")
        python, _, lib = rest.partition(":")
        path = str(Path(path).resolve())
        arms.append({"name": name, "path": path, "python": python or sys.executable, "lib": lib or None,
                     "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=path, capture_output=True,
                                              text=True, check=False).stdout.strip()})
    result: dict[str, Any] = {"command": command("local_speed"), "machine": machine(), "load_average_start": _load(),
                              "arms": {a["name"]: {k: a[k] for k in ("path", "python", "lib", "commit")} for a in arms},
                              "chunks": {a["name"]: [] for a in arms}, "cells": {}}
    seeds = list(range(args.first_seed, args.first_seed + args.num_seeds))
    for i, start in enumerate(range(0, args.num_seeds, args.chunk)):
        indices = seeds[start:start + args.chunk]
        for arm in arms if i % 2 == 0 else arms[::-1]:
            print(f"chunk {i}: {arm['name']} on seeds {indices} (load {_load()})", flush=True)
            chunk = run_chunk(arm, indices, args)
            result["chunks"][arm["name"]].append(chunk)
            done = result["chunks"][arm["name"]]
            result["arms"][arm["name"]].update(totals(done))
            result["cells"][arm["name"]] = {"dataset": args.dataset, "rows": [r for c in done for r in c["rows"]]}
            result["ratio"] = ratios(result, [a["name"] for a in arms])
            result["load_average_end"] = _load()
            args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
            print(json.dumps({k: v for k, v in result["arms"][arm["name"]].items() if k != "rejected_by_reason"}),
                  flush=True)
    return result


def batches(args: argparse.Namespace, steps: int = 24, reps: int = 3, prompt: int = 64) -> dict[str, Any]:
    """Tokens/s of one decode by what it carries: B sequences' next tokens; one sequence's n next tokens, logits at
    each; a prompt's next n tokens, logits for the last only (medians of ``reps`` rounds)."""
    import llama_cpp as L

    from hf_rgda import DEFAULT_LLM
    from hf_rgda.llm.local import cpu_backend, load_cpu_backends, resolve_gguf

    load_cpu_backends()
    threads, load_start = args.threads or os.cpu_count() or 1, _load()
    model = L.llama_model_load_from_file(str(resolve_gguf(DEFAULT_LLM.split(":", 1)[1])).encode(),
                                         L.llama_model_default_params())
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max, cp.kv_unified = 4096, 512, 512, 4, True
    cp.n_threads = cp.n_threads_batch = threads
    ctx = L.llama_init_from_model(model, cp)
    batch = L.llama_batch_init(512, 0, 4)
    mem = L.llama_get_memory(ctx)

    def decode_(items: list[tuple[int, int, int]], logits: bool = True) -> None:  # (token, position, sequence)
        batch.n_tokens = len(items)
        for i, (tok, pos, seq) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.seq_id[i][0] = tok, pos, 1, seq
            batch.logits[i] = 1 if logits or i == len(items) - 1 else 0
        if L.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")

    def timed(make: Any, n_steps: int, logits: bool = True) -> float:
        """Seconds of ``n_steps`` decodes, each a fresh context's: the cache emptied and a prompt per sequence
        (else the freed cells of earlier rounds widen what attention reads, and later rounds run slower)."""
        L.llama_memory_clear(mem, True)
        decode_([(100 + i % 50, i, seq) for seq in range(4) for i in range(prompt)], logits=False)
        start = time.perf_counter()
        for k in range(n_steps):
            decode_(make(k), logits)
        return time.perf_counter() - start

    sequences: dict[str, list[float]] = {str(b): [] for b in (1, 2, 3, 4)}
    tokens: dict[str, list[float]] = {str(n): [] for n in (1, 2, 4, 8, 16, 32)}
    chunks: dict[str, list[float]] = {str(n): [] for n in (8, 16, 32, 64, 128, 256)}
    for _ in range(reps):
        for b in (1, 2, 3, 4):
            seconds = timed(lambda k, b=b: [(500 + k, prompt + k, seq) for seq in range(b)], steps)
            sequences[str(b)].append(b * steps / seconds)
        for n in (1, 2, 4, 8, 16, 32):
            n_steps = max(4, steps * 4 // n)
            seconds = timed(lambda k, n=n: [(600 + j, prompt + k * n + j, 0) for j in range(n)], n_steps)
            tokens[str(n)].append(n * n_steps / seconds)
        for n in (8, 16, 32, 64, 128, 256):  # a prompt's next n tokens, logits for the last only (a judge question)
            n_steps = max(2, 256 // n)
            seconds = timed(lambda k, n=n: [(700 + j, prompt + k * n + j, 0) for j in range(n)], n_steps, logits=False)
            chunks[str(n)].append(n * n_steps / seconds)
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    med = {name: {k: round(statistics.median(v), 1) for k, v in d.items()} for name, d in
           (("sequences", sequences), ("tokens", tokens), ("chunks", chunks))}
    out = {"command": command("local_speed"), "machine": machine(), "model": DEFAULT_LLM, "threads": threads,
           "engine": cpu_backend(), "load_average_start": load_start, "load_average_end": _load(),
           "prompt_tokens_per_sequence": prompt,
           "tokens_per_s_by_sequences": med["sequences"], "tokens_per_s_by_tokens_of_one_sequence": med["tokens"],
           "prompt_tokens_per_s_by_chunk": med["chunks"],
           "throughput_vs_one_sequence": {k: round(v / med["sequences"]["1"], 2) for k, v in med["sequences"].items()},
           "rounds": {"sequences": sequences, "tokens": tokens, "chunks": chunks}}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("tokens_per_s_by_sequences", "tokens_per_s_by_tokens_of_one_sequence",
                                          "prompt_tokens_per_s_by_chunk", "throughput_vs_one_sequence")}))
    return out


def decode(args: argparse.Namespace) -> dict[str, Any]:
    """Generation speed under the composer's schema, with and without the grammar, interleaved, in this process."""
    import llama_cpp

    from hf_rgda import DEFAULT_LLM
    from hf_rgda.llm.local import cpu_backend, make_llama, resolve_gguf

    call = json.loads((ROOT / "tests" / "snapshots" / "pipeline.json").read_text())["rgda"]["calls"][0]
    llama = make_llama(model_path=str(resolve_gguf(DEFAULT_LLM.split(":", 1)[1])), n_ctx=4096,
                       n_threads=args.threads or os.cpu_count(), verbose=False)
    timers: list[list[float]] = []
    init = llama._init_sampler

    class Timed:  # the sampler's thread time per token
        def __init__(self, inner: Any) -> None:
            self.inner, self.times = inner, []
            timers.append(self.times)

        def sample(self, ctx: Any, idx: int = -1) -> int:
            t = time.thread_time()
            token = self.inner.sample(ctx, idx)
            self.times.append(time.thread_time() - t)
            return token

    llama._init_sampler = lambda *a, **kw: Timed(init(*a, **kw))
    out: dict[str, Any] = {"command": command("local_speed"), "machine": machine(), "load_average_start": _load(),
                           "engine": cpu_backend(), "runs": {}}
    for rep in range(args.decode):
        for mode in ("free", "after_sampling"):
            kw = {} if mode == "free" else {"response_format": {"type": "json_object", "schema": call["schema"]}}
            llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
            start = time.perf_counter()
            res = llama.create_chat_completion(messages=call["messages"], temperature=1.0, max_tokens=768,
                                               seed=1000 + rep, **kw)
            seconds = time.perf_counter() - start
            perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
            text, n = res["choices"][0]["message"]["content"], res["usage"]["completion_tokens"]
            out["runs"].setdefault(mode, []).append({
                "completion_tokens": n, "seconds": round(seconds, 2), "tokens_per_second": round(n / seconds, 1),
                "sampler_ms_per_token": round(1000 * statistics.mean(timers[-1]), 3),
                "prompt_tokens_processed": perf.n_p_eval,
                "prompt_tokens_per_second": round(perf.n_p_eval / perf.t_p_eval_ms * 1000, 1) if perf.t_p_eval_ms else None,
                "valid": _fits(text, call["schema"]), "load": _load()})
            print(mode, out["runs"][mode][-1], flush=True)
    out["summary"] = {mode: {"tokens_per_second": round(sum(r["completion_tokens"] for r in runs)
                                                        / sum(r["seconds"] for r in runs), 1),
                             "sampler_ms_per_token": round(statistics.mean(r["sampler_ms_per_token"] for r in runs), 3),
                             "valid": f"{sum(r['valid'] for r in runs)}/{len(runs)}"}
                      for mode, runs in out["runs"].items()}
    out["load_average_end"] = _load()
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


def _fits(text: str, schema: dict[str, Any]) -> bool:
    """Whether ``text`` is strict JSON of the composer's schema's shape (sentences of text and typed entities)."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    items = data.get("sentences") if isinstance(data, dict) else None
    n = schema["properties"]["sentences"]["minItems"]
    types = set(schema["properties"]["sentences"]["items"]["properties"]["entities"]["items"]["properties"]["type"]["enum"])
    return (set(data) == {"sentences"} and isinstance(items, list) and len(items) == n
            and all(isinstance(it, dict) and set(it) == {"text", "entities"} and isinstance(it["text"], str)
                    and all(set(e) == {"text", "type"} and e["type"] in types for e in it["entities"]) for it in items))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arm", action="append", default=[],
                   help="NAME=PATH[:PYTHON[:LIBDIR]]: a checkout, the Python that runs it (default: this venv's) and "
                        "the llama.cpp build it loads (default: its Python's own; LIBDIR sets LLAMA_CPP_LIB_PATH)")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--dataset", default="ncbi_disease", help="a folder under --data-dir (the README's main command: "
                   "ncbi_disease, with its domain line)")
    p.add_argument("--num-seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=0,
                   help="the place of the first seed in the sample (20: the 20 after the A/B's own, a fresh draw)")
    p.add_argument("--chunk", type=int, default=4, help="seeds per run (the README's command runs 4)")
    p.add_argument("--decode", type=int, default=0, help="measure generation under the composer's schema instead")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--kernels", nargs="+", default=[], metavar="NAME=LIBDIR[:MODULE]",
                   help="measure llama.cpp builds instead (the first is the ratios' baseline)")
    p.add_argument("--reps", type=int, default=3, help="--kernels: rounds over the builds")
    p.add_argument("--batches", action="store_true",
                   help="measure one decode's cost by the sequences and tokens it carries instead")
    p.add_argument("--out", type=Path, default=None)
    add_cpu_module(p, "--batches, --decode: run on this CPU backend variant alone (libggml-cpu-zen4.so, "
                      "...) instead of the best one (--kernels: NAME=LIBDIR:MODULE; the A/B's arms: their own)")
    args = p.parse_args(argv)
    if args.cpu_module and not (args.batches or args.decode):
        p.error("--cpu-module is for --batches and --decode (--kernels: NAME=LIBDIR:MODULE)")
    use_cpu_module(args)
    default = ("local_kernels.json" if args.kernels else "local_decode.json" if args.decode
               else "local_batches.json" if args.batches else "local_speed.json")
    args.out = args.out or ROOT / "benchmarks" / "results" / "local_speed" / default
    if args.batches:
        batches(args)
        return 0
    if args.kernels:
        kernels(args)
        return 0
    if args.decode:
        decode(args)
        return 0
    if not args.arm:  # one arm alone: its rows and figures, to set beside an earlier run's baseline (no ratios)
        p.error("give the arms: --arm base=/tmp/base --arm main=.")
    ab(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
