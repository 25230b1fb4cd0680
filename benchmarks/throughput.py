"""Throughput of the augmenter itself: a zero-latency scripted backend, NCBI-disease seeds, method ``rgda``.

The backend is :func:`hf_rgda.testing.stateless_answer` in a :class:`~hf_rgda.ScriptedLLM` (answers made
instantly, a pure function of each call), so what is measured is the library: prompt building, parsing, the
checker, the stages' bookkeeping, the rows ``datasets`` writes. Every call of the fake is timed (:class:`TimedLLM`:
its handler and its own bookkeeping), and that cost is reported beside the rates.
``ds.map(aug, batched=True, batch_size=64)``, no response cache, output written to a temporary Arrow file. Four
measurements:

- accepted rows/s and seeds/s in one process, and with ``num_proc=2``;
- seconds per seed with the split statistics (checker, entity hints) of a 50,000-sentence split vs a
  5,000-sentence split, in one run (the big split is the train split repeated with every alphabetic word
  perturbed per copy, so its vocabulary, mentions and lexicon grow with it);
- peak RSS of a run of 10,000 seeds vs 1,000 seeds, each in its own process: the process's own high-water mark
  (``VmHWM`` of ``/proc/self/status``; ``resource.getrusage`` maxrss elsewhere, which on Linux also counts the
  parent's memory at the fork: it read 395 MB for a run that peaks at 217 MB). ``ScriptedLLM`` keeps every
  call's messages in ``calls`` (a test aid: about 4.5 KB a call, 225 MB at 10,000 seeds), which these runs drop
  so that what is measured is the library's memory; ``--keep-call-log`` keeps it.

The augmenter's ``datasets`` fingerprint (a hash of its pickled state, statistics included) is computed before
the clock starts and handed to ``map``: it is paid once per ``map`` call, not per seed (reported as
``fingerprint_s``: 0.02 s with a 5,000-sentence split's statistics, 0.13 s with 50,000's). The runs of the first
two pairs alternate ``--repeats`` times and each keeps its fastest (other work on the machine only ever adds
time; every run's seconds per seed are listed). Seeds beyond the split's sentences with entities are perturbed
copies of them (the same perturbation).

Usage:
    python -m benchmarks.throughput --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from datasets import Dataset, disable_progress_bars
from datasets.fingerprint import Hasher

from benchmarks.common import DATA_DIR, ROOT, command, commit
from hf_rgda import RGDAAugmenter, ScriptedLLM
from hf_rgda.testing import stateless_answer


class _NoLog(list):
    """A call log that keeps nothing (see ``--keep-call-log``)."""

    def append(self, item: Any) -> None:
        pass


class TimedLLM(ScriptedLLM):
    """:class:`~hf_rgda.ScriptedLLM` answering with ``stateless_answer``, with a clock around each of its calls (the
    fake's own bookkeeping included: its call record, word counts, reading its answer into option probabilities):
    the scripted backend's own cost."""

    def __init__(self) -> None:
        super().__init__(stateless_answer, name="throughput")
        self.seconds, self.count = 0.0, 0

    async def complete(self, messages: Any, *, schema: Any, params: Any) -> Any:
        start = time.perf_counter()
        try:
            return await super().complete(messages, schema=schema, params=params)
        finally:
            self.seconds += time.perf_counter() - start
            self.count += 1

    async def option_probs(self, messages: Any, options: Any, *, params: Any) -> Any:
        start = time.perf_counter()
        try:
            return await super().option_probs(messages, options, params=params)
        finally:
            self.seconds += time.perf_counter() - start
            self.count += 1


def _suffix(copy: int) -> str:
    """The letters appended to every alphabetic word of copy ``copy`` (none for the original)."""
    return "".join(chr(ord("a") + int(d)) for d in str(copy)) if copy else ""


def grown(rows: Sequence[Mapping[str, list[str]]], n: int) -> Dataset:
    """``n`` rows: ``rows`` in order, then perturbed copies of them (copy k appends ``_suffix(k)`` to each word)."""
    out: dict[str, list[list[str]]] = {"tokens": [], "ner_tags": []}
    for i in range(n):
        row, end = rows[i % len(rows)], _suffix(i // len(rows))
        out["tokens"].append([t + end if t.isalpha() else t for t in row["tokens"]])
        out["ner_tags"].append(list(row["ner_tags"]))
    return Dataset.from_dict(out)


def read_split(data_dir: Path) -> list[dict[str, list[str]]]:
    with (data_dir / "ncbi_disease" / "train.jsonl").open() as fh:
        return [json.loads(line) for line in fh]


#: the configurations measured (``--workload``): the library's defaults, and the rgda pipeline as issue 16 measured
#: it before the entity verifier and the probability-read judges existed (5 scripted calls per seed instead of 15)
WORKLOADS: dict[str, dict[str, Any]] = {"default": {}, "no-verification": {"verify_entities": False,
                                                                           "judge_reading": "sample"}}


def augment(split: Dataset, seeds: Dataset, num_proc: int = 1, *, call_log: bool = True,
            workload: str = "default") -> dict[str, Any]:
    """One ``map`` over ``seeds`` with statistics from ``split``: rates, the backend's cost, the run summary."""
    llm = TimedLLM()
    if not call_log:
        llm.calls = _NoLog()
    start = time.perf_counter()
    aug = RGDAAugmenter.from_dataset(split, llm=llm, method="rgda", cache=False, **WORKLOADS[workload])
    stats_s = time.perf_counter() - start
    start = time.perf_counter()
    fingerprint = Hasher.hash(aug)  # what map would hash first: once per call, and larger with larger statistics
    fingerprint_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        out = seeds.map(aug, batched=True, batch_size=64, num_proc=num_proc if num_proc > 1 else None,
                        load_from_cache_file=False, cache_file_name=f"{tmp}/out.arrow", new_fingerprint=fingerprint)
        wall = time.perf_counter() - start
        accepted = sum(s == "accepted" for s in out["rgda_status"])
    res = {"seeds": len(seeds), "split_sentences": len(split), "num_proc": num_proc, "statistics_s": round(stats_s, 3),
           "fingerprint_s": round(fingerprint_s, 3), "wall_s": round(wall, 3), "accepted": accepted,
           "accepted_rows_per_s": round(accepted / wall, 1),
           "seeds_per_s": round(len(seeds) / wall, 1), "seconds_per_seed": round(wall / len(seeds), 5)}
    if num_proc == 1:  # the backend's clock and the summary live in the workers otherwise
        res.update(backend_s=round(llm.seconds, 3), backend_calls=llm.count,
                   backend_share=round(llm.seconds / wall, 3), failed_seeds=aug.summary.failed_seeds)
    return res


def fastest(runs: Sequence[Callable[[], dict[str, Any]]], repeats: int) -> list[dict[str, Any]]:
    """Each of ``runs`` ``repeats`` times, alternating; per run its fastest result, with every result's s/seed."""
    results: list[list[dict[str, Any]]] = [[] for _ in runs]
    for _ in range(repeats):
        for run, out in zip(runs, results):
            out.append(run())
    return [{**min(out, key=lambda r: r["seconds_per_seed"]),
             "runs_seconds_per_seed": [r["seconds_per_seed"] for r in out]} for out in results]


def memory_run(data_dir: Path, n: int, call_log: bool, workload: str) -> dict[str, Any]:
    """Peak RSS of one process that augments ``n`` seeds (run in a fresh interpreter by :func:`memory`)."""
    rows = read_split(data_dir)
    seeds = grown([r for r in rows if any(t != "O" for t in r["ner_tags"])], n)
    res = augment(Dataset.from_list(rows), seeds, call_log=call_log, workload=workload)
    return {**res, "call_log": call_log, "peak_rss_mb": peak_rss_mb()}


def peak_rss_mb() -> float:
    """This process's peak resident memory: ``VmHWM`` (its own address space's high-water mark) where Linux gives
    it, else ``ru_maxrss`` (KiB on Linux)."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def memory(data_dir: Path, n: int, call_log: bool, workload: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.throughput", "--data-dir", str(data_dir), "--memory-run", str(n),
           "--workload", workload]
    cmd += ["--keep-call-log"] if call_log else []
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--seeds", type=int, default=1000, help="seeds of the throughput runs (one process, num_proc=2)")
    p.add_argument("--scale-seeds", type=int, default=1000,
                   help="seeds of the 5k- and 50k-sentence split runs (fewer make the ratio noisy: a fixed per-run cost)")
    p.add_argument("--splits", type=int, nargs=2, default=[5000, 50000], help="small and big split sizes")
    p.add_argument("--repeats", type=int, default=5, help="alternating runs of each pair (the fastest kept)")
    p.add_argument("--memory-seeds", type=int, nargs=2, default=[1000, 10000], help="seeds of the two memory runs")
    p.add_argument("--keep-call-log", action="store_true", help="memory runs keep ScriptedLLM's log of every call")
    p.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/throughput[_WORKLOAD].json")
    p.add_argument("--workload", choices=list(WORKLOADS), default="default",
                   help="the library's defaults, or rgda without the entity verifier and with one-sample judges")
    p.add_argument("--memory-run", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    suffix = "" if args.workload == "default" else "_" + args.workload.replace("-", "_")
    args.out = args.out or ROOT / "benchmarks" / "results" / f"throughput{suffix}.json"
    disable_progress_bars()
    if args.memory_run:
        print(json.dumps(memory_run(args.data_dir, args.memory_run, args.keep_call_log, args.workload)))
        return 0
    load_before = os.getloadavg()  # other work on the machine slows every run: shown beside the results
    rows = read_split(args.data_dir)
    train = Dataset.from_list(rows)
    seeds = grown([r for r in rows if any(t != "O" for t in r["ner_tags"])], args.seeds)
    run = partial(augment, workload=args.workload)
    one, two = fastest([partial(run, train, seeds), partial(run, train, seeds, num_proc=2)], args.repeats)
    few, splits = seeds.select(range(args.scale_seeds)), [grown(rows, n) for n in args.splits]
    scale = fastest([partial(run, split, few) for split in splits], args.repeats)
    mem = [memory(args.data_dir, n, args.keep_call_log, args.workload) for n in args.memory_seeds]
    result = {
        "command": command("throughput", argv),
        "commit": commit(),  # the library measured (flagged when hf_rgda/ has edits)
        "machine": {"platform": platform.platform(), "machine": platform.machine(), "processor": _processor(),
                    "python": platform.python_version(), "cpu_count": os.cpu_count(),
                    "load_average_1_5_15_min": {"before": load_before, "after": os.getloadavg()}},
        "workload": {args.workload: WORKLOADS[args.workload]}, "one_process": one, "num_proc_2": two, "split_scale": scale,
        "split_scale_ratio": round(scale[1]["seconds_per_seed"] / scale[0]["seconds_per_seed"], 3),
        "memory": mem, "memory_ratio": round(mem[1]["peak_rss_mb"] / mem[0]["peak_rss_mb"], 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0


def _processor() -> str:
    """The CPU's model name (runs on two machines of one kind can differ by half: see the README)."""
    info = Path("/proc/cpuinfo")
    lines = info.read_text().splitlines() if info.is_file() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), platform.processor())


def table(r: Mapping[str, Any]) -> str:
    one, two, (small, big), (lo, hi) = r["one_process"], r["num_proc_2"], r["split_scale"], r["memory"]
    lines = ["| measurement | value | target |", "|---|---|---|",
             f"| accepted rows/s, one process ({one['seeds']} seeds) | {one['accepted_rows_per_s']} | >= 500 |",
             f"| seeds/s, one process | {one['seeds_per_s']} | |",
             (f"| scripted backend's own time, one process | {one['backend_s']} s of {one['wall_s']} s "
              f"({one['backend_share']:.1%}, {one['backend_calls']} calls) | |"),
             f"| accepted rows/s, num_proc=2 | {two['accepted_rows_per_s']} | >= 1000 |",
             f"| seeds/s, num_proc=2 | {two['seeds_per_s']} | |",
             f"| s/seed, {small['split_sentences']}-sentence split | {small['seconds_per_seed']} | |",
             f"| s/seed, {big['split_sentences']}-sentence split | {big['seconds_per_seed']} | |",
             f"| ratio big/small split | {r['split_scale_ratio']} | <= 1.2 |",
             f"| peak RSS, {lo['seeds']} seeds | {lo['peak_rss_mb']} MB | |",
             f"| peak RSS, {hi['seeds']} seeds | {hi['peak_rss_mb']} MB | |",
             f"| ratio | {r['memory_ratio']} | <= 1.2 |"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
