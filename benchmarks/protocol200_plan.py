"""The 200-seed protocol's plan: each dataset's PLAN cells in order, what of them is committed, and the hours left.

Read from the committed files alone (chunk headers' ``seconds``, the results' runs' ``seconds``); nothing is run. A
cell's hours left are its missing chunks at the median time of the chunks already made of the same method (the same
generator where it has any, else another generator's, else another dataset's: marked) and its missing training runs at
the median time of the dataset's runs so far (those of CPU machines, where the job runs). Times are those measured by
whatever ran them (the chunk headers name the machine); a training run beside other work can take several times its
time alone.

    python -m benchmarks.protocol200 plan [--readme]
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any


def chunk_times(out: Path) -> dict[tuple[str, str, str], list[float]]:
    """The ``seconds`` of every committed chunk, read once, keyed by (dataset, method, generator commit[:12]) (the
    layout of ``Protocol.chunk_path``)."""
    found: dict[tuple[str, str, str], list[float]] = {}
    for path in sorted(out.glob("*/*@seeds/*/chunk-*.jsonl.gz")):
        with gzip.open(path, "rt") as fh:
            seconds = float(json.loads(fh.readline())["seconds"])
        dataset, method, commit12 = path.parts[-4], path.parts[-3].removesuffix("@seeds"), path.parts[-2]
        found.setdefault((dataset, method, commit12), []).append(seconds)
    return found


def _rate(times: dict[tuple[str, str, str], list[float]], dataset: str, method: str,
          commit12: str) -> tuple[float | None, str]:
    """A chunk's time for a cell: the median of its own chunks, else of the method's other generators' on the dataset
    (†), else of the method's on other datasets (‡); none where the method has no chunk anywhere."""
    for mark, keep in (("", lambda d, m, c: (d, m, c) == (dataset, method, commit12)),
                       ("†", lambda d, m, c: (d, m) == (dataset, method)),
                       ("‡", lambda d, m, c: m == method and d != dataset)):
        pooled = [s for key, secs in times.items() if keep(*key) for s in secs]
        if pooled:
            return statistics.median(pooled), mark
    return None, ""


def plan_report(out: Path, plan: dict[str, list[str]], *, chunks: int, runs: int,
                full_commit: Callable[[str], str],
                parse_cell: Callable[[str], tuple[str, str | None, bool]]) -> tuple[str, dict[str, Any]]:
    """The plan's table (cells not yet complete, in PLAN order, with their hours left) and what it was made of."""
    times = chunk_times(out)
    lines = ["| dataset | cell | chunks made | runs | hours left (est.) |", "|---|---|---|---|---|"]
    data: dict[str, Any] = {"chunks_per_cell": chunks, "runs_per_cell": runs, "datasets": {}}
    total_left = 0.0
    marked, unmeasured = False, 0
    for dataset, cells in plan.items():
        results_path = out / f"{dataset}.json"
        results = json.loads(results_path.read_text())["cells"] if results_path.exists() else {}
        by_cell = {c["cell"]: c for c in results.values() if "cell" in c}
        every = [r for c in by_cell.values() for r in c.get("runs", [])]
        # the job's runs (a CPU machine's): runs made on a lent GPU (device_protocol200.sh) take seconds
        run_secs = [r["seconds"] for r in every if "no GPU" in r.get("machine", "no GPU")] or [r["seconds"] for r in every]
        per_run = statistics.median(run_secs) if run_secs else None
        counted: set[tuple[str, str]] = set()  # a generator's chunks are made once for all its cells
        done, spent, rows = [], 0.0, []
        for cell in cells:
            method, generator, _ = parse_cell(cell)
            made = need = 0
            gen_left: float | None = 0.0
            mark = ""
            if generator is not None:
                commit12 = full_commit(generator)[:12]
                own = times.get((dataset, method, commit12), [])
                made, need = len(own), chunks
                if (method, commit12) not in counted:
                    counted.add((method, commit12))
                    spent += sum(own)
                    rate, mark = _rate(times, dataset, method, commit12)
                    gen_left = (chunks - made) * rate if rate is not None else None
            cell_runs = by_cell.get(cell, {}).get("runs", [])
            spent += sum(r["seconds"] for r in cell_runs)
            train_left = (runs - len(cell_runs)) * per_run if per_run is not None else None
            if made >= need and len(cell_runs) >= runs:
                done.append(cell)
                continue
            left = None if gen_left is None or train_left is None else gen_left + train_left
            total_left += left or 0.0
            marked |= bool(mark)
            unmeasured += left is None
            shown = f"{made}/{need}" if need else "—"
            hours = f"{left / 3600:.1f}{mark}" if left is not None else "unmeasured"
            lines.append(f"| {dataset} | {cell} | {shown} | {len(cell_runs)}/{runs} | {hours} |")
            rows.append({"cell": cell, "chunks_made": made if need else None, "runs": len(cell_runs),
                         "hours_left": round(left / 3600, 2) if left is not None else None, "rate_from": mark or None})
        data["datasets"][dataset] = {"complete": done, "hours_measured": round(spent / 3600, 1),
                                     "training_run_seconds_median": per_run, "left": rows}
    foot = [f"{d} {len(v['complete'])} of {len(plan[d])} ({v['hours_measured']} h measured)"
            for d, v in data["datasets"].items()]
    left = f"{total_left / 3600:.1f} h" + (f" and {unmeasured} cells unmeasured" if unmeasured else "")
    text = "\n".join(lines) + f"\n\nLeft: {left}. Complete: " + ", ".join(foot) + "."
    if marked:
        text += " †: another generator's chunks of the method; ‡: another dataset's."
    data["hours_left"], data["cells_unmeasured"] = round(total_left / 3600, 1), unmeasured
    return text, data
