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

``--against COMMIT`` measures one thing instead: seeds per second in one process of this checkout's library
against COMMIT's (a git worktree under ``benchmarks/.gen/``), each run a fresh interpreter running
``throughput_run.py`` with ``PYTHONPATH`` on one side's tree (the same driver, seeds and clock; no call log), the
sides alternated ABBA for ``--repeats`` rounds in one run, and the ratio reported with the machine and its load.
Each side's accepted rows are hashed: a change meant to be faster only shows the same digest as before.
With ``--checker-replays N`` it times the checker alone instead (the run's checks recorded, then made again N
times without the pipeline around them; ``throughput_run.time_checker``): the checker's share of a run is about a
fifth, so a change to it moves the whole run's ratio by less than this machine's noise between rounds.

Usage:
    python -m benchmarks.throughput --data-dir ../shared/data
    python -m benchmarks.throughput --against 8ae9ee0 --seeds 1000 --repeats 4
    python -m benchmarks.throughput --against 8ae9ee0 --seeds 1000 --repeats 4 --checker-replays 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from datasets import Dataset, disable_progress_bars

from benchmarks.common import DATA_DIR, ROOT, command, commit
from benchmarks.throughput_run import WORKLOADS, augment, grown, read_split, seed_rows

RUN = Path(__file__).with_name("throughput_run.py")


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
    res = augment(Dataset.from_list(rows), seed_rows(rows, n), call_log=call_log, workload=workload)
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


def one_run(tree: Path, data_dir: Path, seeds: int, workload: str, options: Sequence[str] = (),
            checker_replays: int = 0) -> dict[str, Any]:
    """One run of ``throughput_run.py`` in a fresh interpreter whose ``hf_rgda`` is ``tree``'s (``-P``: the script's
    own folder is not on the path, so nothing but ``PYTHONPATH`` says where the library comes from); ``options``:
    ``KEY=JSON`` configuration options beyond the workload's; ``checker_replays``: time the checker alone
    (``throughput_run.time_checker``)."""
    cmd = [sys.executable, "-P", str(RUN), "--data-dir", str(data_dir.resolve()), "--seeds", str(seeds),
           "--workload", workload, *(f"--option={o}" for o in options),
           *(["--checker-replays", str(checker_replays)] if checker_replays else [])]
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tree, env=env)
    res = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(res["hf_rgda"]) != (tree / "hf_rgda").resolve():
        raise SystemExit(f"the run imported hf_rgda from {res['hf_rgda']}, not from {tree}")
    return res


def alternated(other: str, repeats: int,
               run: Callable[[str, Path], dict[str, Any]]) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """``run(side, tree)`` for this checkout ("this") and commit ``other`` (a git worktree of it under
    ``benchmarks/.gen/``), ``repeats`` rounds, the two sides' order swapped every round (ABBA...), so that load on
    the machine falls on both alike: ``other``'s full commit and each side's runs."""
    from benchmarks.protocol200 import full_commit, worktree  # git worktrees of a commit, made once

    full = full_commit(other)
    trees = {"this": ROOT, other: worktree(full)}
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in trees}
    for k in range(repeats):
        for side in list(trees)[:: 1 if k % 2 == 0 else -1]:
            runs[side].append(run(side, trees[side]))
    return full, runs


def against(other: str, data_dir: Path, seeds: int, workload: str, repeats: int,
            this_options: Sequence[str] = ()) -> dict[str, Any]:
    """This checkout's library against commit ``other``'s (a git worktree of it under ``benchmarks/.gen/``), the
    same driver, seeds and clock, one fresh process per run: ``repeats`` rounds, the two sides' order swapped every
    round (ABBA...), so that load on the machine falls on both alike. Per side every run's seconds per seed, its
    fastest and median; the ratio of seeds per second (this / other) of the fastest runs, of the medians, per round
    and the rounds' paired median with its interval (:func:`paired_ratio`). ``this_options``: ``KEY=JSON``
    configuration options set on this checkout's side alone (what an option costs against ``other``)."""
    full, runs = alternated(other, repeats, lambda side, tree: one_run(
        tree, data_dir, seeds, workload, this_options if side == "this" else ()))
    sides = {}
    for side, out in runs.items():
        per_seed = [r["seconds_per_seed"] for r in out]
        if len({(r["accepted"], r["accepted_digest"]) for r in out}) != 1:
            raise SystemExit(f"{side}: its runs accepted different rows: {[r['accepted_digest'] for r in out]}")
        sides[side] = {"commit": commit() if side == "this" else full[:7], **min(out, key=lambda r: r["seconds_per_seed"]),
                       "runs_seconds_per_seed": per_seed, "median_seconds_per_seed": statistics.median(per_seed)}
    this, base = sides["this"], sides[other]
    by_round = [b / a for a, b in zip(this["runs_seconds_per_seed"], base["runs_seconds_per_seed"])]
    return {"seeds": seeds, "repeats": repeats, "this_options": list(this_options), "this": this, "against": base,
            "ratio_seeds_per_s_fastest": round(base["seconds_per_seed"] / this["seconds_per_seed"], 3),
            "ratio_seeds_per_s_median": round(base["median_seconds_per_seed"] / this["median_seconds_per_seed"], 3),
            "ratio_seeds_per_s_by_round": [round(x, 3) for x in by_round],
            **paired_ratio(by_round),
            "same_rows_accepted": this["accepted_digest"] == base["accepted_digest"]}


def checker_against(other: str, data_dir: Path, seeds: int, workload: str, repeats: int, replays: int,
                    this_options: Sequence[str] = ()) -> dict[str, Any]:
    """The checker alone, this checkout's against ``other``'s: each side's run records the checks of one ``map``
    and makes them again ``replays`` times (``throughput_run.time_checker``); ``repeats`` rounds, sides swapped
    every round as in :func:`against`. The ratio is of checks per second (this / other) over the whole run's checks
    (the two sides check different numbers of rows where their rules differ: both counts are reported)."""
    full, runs = alternated(other, repeats, lambda side, tree: one_run(
        tree, data_dir, seeds, workload, this_options if side == "this" else (), checker_replays=replays))
    sides = {}
    for side, out in runs.items():
        if len({r["verdicts_digest"] for r in out}) != 1:
            raise SystemExit(f"{side}: its runs' checks gave different verdicts: {[r['verdicts_digest'] for r in out]}")
        sides[side] = {"commit": commit() if side == "this" else full[:7], **min(out, key=lambda r: r["checker_s"]),
                       "runs_checker_s": [r["checker_s"] for r in out]}
    this, base = sides["this"], sides[other]
    by_round = [b / a for a, b in zip(this["runs_checker_s"], base["runs_checker_s"])]
    return {"seeds": seeds, "repeats": repeats, "replays": replays, "this_options": list(this_options), "this": this,
            "against": base,
            "ratio_checker_s_fastest": round(base["checker_s"] / this["checker_s"], 3),
            "ratio_checker_s_by_round": [round(x, 3) for x in by_round], **paired_ratio(by_round),
            "per_check_ratio": round(base["checker_us_per_check"] / this["checker_us_per_check"], 3),
            "same_verdicts": this["verdicts_digest"] == base["verdicts_digest"]}


def paired_ratio(by_round: Sequence[float], resamples: int = 10_000) -> dict[str, Any]:
    """The rounds' ratios read as pairs (each round ran both sides back to back, so the machine's load of the moment
    falls on both): their median and its 95% bootstrap interval over rounds. On a machine whose speed drifts from
    run to run the fastest run of each side can come from different moments; the paired median cannot."""
    import random

    rng = random.Random(0)
    medians = sorted(statistics.median(rng.choices(by_round, k=len(by_round))) for _ in range(resamples))
    return {"ratio_paired_median": round(statistics.median(by_round), 3),
            "ratio_paired_median_ci95": [round(medians[int(0.025 * resamples)], 3),
                                         round(medians[int(0.975 * resamples) - 1], 3)]}


def machine_info(load_before: tuple[float, ...]) -> dict[str, Any]:
    return {"platform": platform.platform(), "machine": platform.machine(), "processor": _processor(),
            "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "load_average_1_5_15_min": {"before": load_before, "after": os.getloadavg()}}


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
    p.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/throughput/throughput[_WORKLOAD].json")
    p.add_argument("--workload", choices=list(WORKLOADS), default="default",
                   help="the library's defaults, or rgda without the entity verifier and with one-sample judges")
    p.add_argument("--against", metavar="COMMIT", default=None,
                   help="only this: one-process seeds/s of this checkout against COMMIT's library, alternated in one run "
                        "(--seeds, --repeats; default out: benchmarks/results/throughput/against_COMMIT.json)")
    p.add_argument("--this-option", action="append", default=[], metavar="KEY=JSON",
                   help="--against: a configuration option set on this checkout's side alone, its value as JSON "
                        "(repeatable), e.g. likely_mention_quantile=0: what an option costs")
    p.add_argument("--checker-replays", type=int, default=0, metavar="N",
                   help="--against: time the checker alone instead, each run's checks made again N times (default "
                        "out: benchmarks/results/throughput/checker_against_COMMIT.json)")
    p.add_argument("--memory-run", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.this_option and not args.against:
        p.error("--this-option applies to --against runs")
    for option in args.this_option:
        key, eq, value = option.partition("=")
        try:
            json.loads(value)
        except json.JSONDecodeError:
            eq = ""
        if not (key and eq):
            p.error(f"--this-option {option!r}: expected KEY=JSON, e.g. likely_mention_quantile=0 or "
                    "representation='\"inline\"'")
    if args.checker_replays and not args.against:
        p.error("--checker-replays applies to --against runs")
    if args.checker_replays < 0:
        p.error(f"--checker-replays {args.checker_replays}: give 1 or more replays")
    if args.against:
        load_before = os.getloadavg()
        options = "".join("_" + re.sub(r"\W+", "-", o).strip("-") for o in args.this_option)
        if args.checker_replays:
            res = checker_against(args.against, args.data_dir, args.seeds, args.workload, args.repeats,
                                  args.checker_replays, args.this_option)
            name, show = f"checker_against_{args.against}{options}", checker_table
        else:
            res = against(args.against, args.data_dir, args.seeds, args.workload, args.repeats, args.this_option)
            name, show = f"against_{args.against}{options}", against_table
        out = args.out or ROOT / "benchmarks" / "results" / "throughput" / f"{name}.json"
        result = {"command": command("throughput", argv), "commit": commit(), "machine": machine_info(load_before),
                  "workload": {args.workload: WORKLOADS[args.workload]}, **res}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(show(result))
        return 0
    suffix = "" if args.workload == "default" else "_" + args.workload.replace("-", "_")
    args.out = args.out or ROOT / "benchmarks" / "results" / "throughput" / f"throughput{suffix}.json"
    disable_progress_bars()
    if args.memory_run:
        print(json.dumps(memory_run(args.data_dir, args.memory_run, args.keep_call_log, args.workload)))
        return 0
    load_before = os.getloadavg()  # other work on the machine slows every run: shown beside the results
    rows = read_split(args.data_dir)
    train = Dataset.from_list(rows)
    seeds = seed_rows(rows, args.seeds)
    run = partial(augment, workload=args.workload)
    one, two = fastest([partial(run, train, seeds), partial(run, train, seeds, num_proc=2)], args.repeats)
    few, splits = seeds.select(range(args.scale_seeds)), [grown(rows, n) for n in args.splits]
    scale = fastest([partial(run, split, few) for split in splits], args.repeats)
    mem = [memory(args.data_dir, n, args.keep_call_log, args.workload) for n in args.memory_seeds]
    result = {
        "command": command("throughput", argv),
        "commit": commit(),  # the library measured (flagged when hf_rgda/ has edits)
        "machine": machine_info(load_before),
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


def against_table(r: Mapping[str, Any]) -> str:
    this, base = r["this"], r["against"]
    lines = ["| library | seeds/s (fastest) | s/seed, every run | accepted rows |", "|---|---|---|---|"]
    named = {"this": f"{this['commit']} with {', '.join(r['this_options'])}" if r.get("this_options") else this["commit"],
             "against": base["commit"]}
    lines += [f"| {named[side]} | {s['seeds_per_s']} | {', '.join(map(str, s['runs_seconds_per_seed']))} | "
              f"{s['accepted']} ({s['accepted_digest']}) |" for side, s in (("this", this), ("against", base))]
    lines.append(f"ratio of seeds/s, this / {base['commit']}: fastest {r['ratio_seeds_per_s_fastest']}, median "
                 f"{r['ratio_seeds_per_s_median']}, paired median {r['ratio_paired_median']} "
                 f"(95% {r['ratio_paired_median_ci95'][0]}-{r['ratio_paired_median_ci95'][1]}), by round "
                 f"{r['ratio_seeds_per_s_by_round']} "
                 f"({r['machine']['processor']}, {r['machine']['cpu_count']} cores, load "
                 f"{r['machine']['load_average_1_5_15_min']['before'][0]:.1f})")
    return "\n".join(lines)


def checker_table(r: Mapping[str, Any]) -> str:
    this, base = r["this"], r["against"]
    lines = ["| library | checks | checker s (fastest of rounds) | us a check | every round |", "|---|---|---|---|---|"]
    with_options = f" with {', '.join(r['this_options'])}" if r.get("this_options") else ""
    lines += [f"| {s['commit']}{with_options if s is this else ''} | {s['checks']} | {s['checker_s']} | "
              f"{s['checker_us_per_check']} | {', '.join(map(str, s['runs_checker_s']))} |" for s in (this, base)]
    lines.append(f"checker time, {base['commit']} / this: fastest {r['ratio_checker_s_fastest']}, paired median "
                 f"{r['ratio_paired_median']} (95% {r['ratio_paired_median_ci95'][0]}-{r['ratio_paired_median_ci95'][1]}); "
                 f"per check {r['per_check_ratio']}; {'the same' if r['same_verdicts'] else 'other'} verdicts "
                 f"({r['machine']['processor']}, {r['machine']['cpu_count']} cores)")
    return "\n".join(lines)


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
