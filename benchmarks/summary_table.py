"""Print the one-table summary that opens benchmarks/README.md, read from the results files (nothing typed by hand).

    python -m benchmarks.summary_table            # the Markdown table
    python scripts/readme_tables.py --check       # fails when the table in benchmarks/README.md is stale

Every row is one arm of ``row_ablation.py``: the same training seeds, encoder, optimizer steps and test split, with one
thing changed (what is added to the seed sentences). F1 is entity-level on the full test split, mean ± sd over the
training runs of ``results/row_ablation/row_ablation.json``.
"""

from __future__ import annotations

import json
import re
import statistics
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

#: the results folder: one folder per benchmark (``row_ablation/``, ``local_pipeline/``, ...)
RESULTS = Path(__file__).resolve().parent / "results"

#: (arm, how the rows were made) -> label; arms not named here are left out of the summary
LABELS: dict[tuple[str, str], str] = {
    ("seeds_only", ""): "seeds alone (no augmentation)",
    ("mr", ""): "MR: mention replacement, the seeds' own mentions",
    ("mr_train", ""): "MR from the whole train split's mentions",
    ("as_generated", "rgda@seeds"): "`rgda`, augmenter built from the seeds alone",
    ("as_generated", "rgda"): "`rgda`, augmenter built from the whole train split",
    ("gold_extra", ""): "as many real train sentences, gold tags (headroom)",
}
ORDER = list(LABELS.values())


_TAIL = re.compile(r"(?P<method>[^/]+)/seeds=(?P<seeds>\d+)/encoder=(?P<encoder>[^/]+/[^/]+)/epochs=\d+$")


def _experiment(key: str) -> dict[str, str]:
    """``rows.json:dataset/[protocol cell/]method/seeds=N/encoder=org/name/epochs=K`` -> its parts."""
    rows_file, _, path = key.partition(":")
    tail = _TAIL.search(path)
    assert tail, key
    return {"rows": rows_file, "dataset": path.split("/", 1)[0], **tail.groupdict()}


def _r3(x: float) -> str:
    """Three decimals, half up from the file's stored value (0.4855 -> 0.486, as the notebook writes it)."""
    return str(Decimal(str(x)).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))


def _where(results: Path, name: str) -> str:
    """The results file ``name`` (as row_ablation.py records its rows file) as ``results/<benchmark>/<name>``."""
    found = sorted(results.glob(f"*/{name}"))
    assert len(found) == 1, (name, found)
    return found[0].relative_to(results.parent).as_posix()


def rows(results: Path = RESULTS) -> list[dict[str, str]]:
    """One dict per table row, in table order; an arm measured in two experiments the same way is listed once."""
    data = json.loads((results / "row_ablation" / "row_ablation.json").read_text())
    out: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for key, exp in data["experiments"].items():
        info = _experiment(key)
        for arm, cell in exp["arms"].items():
            label = LABELS.get((arm, info["method"] if arm == "as_generated" else ""))
            if label is None:
                continue
            f1 = [r["f1"] for r in cell["runs"]]
            steps = {r["steps"] for r in cell["runs"]}
            assert len(steps) == 1, (key, arm, steps)
            sd = statistics.stdev(f1) if len(f1) > 1 else 0.0
            mean = statistics.fmean(f1)
            # the file's own rounded mean and sd, where it stores them, are what the notebook quotes
            mean, sd = cell.get("f1_mean", mean), cell.get("f1_sd", sd)
            step = steps.pop()
            row_key = (info["dataset"], info["seeds"], str(step), label)
            if row_key in out:
                continue
            out[row_key] = {
                "dataset": {"ncbi_disease": "NCBI-disease"}.get(info["dataset"], info["dataset"]),
                "seeds": info["seeds"], "steps": str(step), "arm": label, "added": str(cell["augmented"]),
                "f1": f"{_r3(mean)} ± {_r3(sd)} ({len(f1)} runs)",
                "encoder": info["encoder"].split("/")[-1], "machine": data["machine"],
                "source": f"`results/row_ablation/row_ablation.json` (rows: `{_where(results, info['rows'])}`)"
                if arm == "as_generated"
                else "`results/row_ablation/row_ablation.json`",
            }
    return sorted(out.values(), key=lambda r: (int(r["seeds"]), int(r["steps"]), ORDER.index(r["arm"])))


def table(results: Path = RESULTS) -> str:
    """The Markdown table."""
    header = ("| dataset | seeds | optimizer steps | what the seeds are trained with | rows added | F1 mean ± sd "
              "| encoder | machine | results file |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows(results):
        lines.append(f"| {r['dataset']} | {r['seeds']} | {r['steps']} | {r['arm']} | {r['added']} | {r['f1']} "
                     f"| {r['encoder']} | {r['machine']} | {r['source']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
