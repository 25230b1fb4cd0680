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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def chunk_seconds(out: Path, dataset: str, method: str, commit12: str | None = None) -> list[float]:
    """The ``seconds`` of every committed chunk of ``method`` on ``dataset`` (of one generator where given)."""
    folder = out / dataset / f"{method}@seeds"
    found = []
    for path in sorted(folder.glob(f"{commit12 or '*'}/chunk-*.jsonl.gz")):
        with gzip.open(path, "rt") as fh:
            found.append(float(json.loads(fh.readline())["seconds"]))
    return found


def plan_report(out: Path, plan: dict[str, list[str]], *, chunks: int, runs: int,
                full_commit: Callable[[str], str], parse_cell: Callable[[str], tuple[str, str | None, bool]],
                recheck_of: Callable[[str], Sequence[str]]) -> tuple[str, dict[str, Any]]:
    """The plan's table (cells not yet complete, in PLAN order, with their hours left) and what it was made of."""
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
                own = chunk_seconds(out, dataset, method, commit12)
                made, need = len(own), chunks
                if (method, commit12) not in counted:
                    counted.add((method, commit12))
                    spent += sum(own)
                    rate = statistics.median(own) if own else None
                    if rate is None and (other := chunk_seconds(out, dataset, method)):
                        rate, mark = statistics.median(other), "†"
                    if rate is None:
                        others = [s for d in plan if d != dataset for s in chunk_seconds(out, d, method)]
                        rate, mark = (statistics.median(others), "‡") if others else (None, "")
                    gen_left = (chunks - made) * rate if rate is not None else None
            have = len(by_cell.get(cell, {}).get("runs", []))
            spent += sum(r["seconds"] for r in by_cell.get(cell, {}).get("runs", []))
            train_left = (runs - have) * per_run if per_run is not None else None
            if made >= need and have >= runs:
                done.append(cell)
                continue
            left = None if gen_left is None or train_left is None else gen_left + train_left
            total_left += left or 0.0
            marked |= bool(mark)
            unmeasured += left is None
            shown = f"{made}/{need}" if need else "—"
            hours = f"{left / 3600:.1f}{mark}" if left is not None else "unmeasured"
            lines.append(f"| {dataset} | {cell} | {shown} | {have}/{runs} | {hours} |")
            rows.append({"cell": cell, "chunks_made": made if need else None, "runs": have,
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
