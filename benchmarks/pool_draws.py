"""One scorer's canaries of one class, pooled over several calibration draws (issue #57).

A class with few canaries a draw (FIN's ``novel_untagged``: 3-8, since its source split holds most of its dev
mentions) gives an AUROC that one canary moves by a quarter. This reads the calibration results files of several
draws (``benchmarks.calibration --seed S``), and reports each draw's AUROC of the class against the good canaries and
how many the product's threshold catches, then all draws together, each canary's score taken less its own draw's
product threshold (the threshold is the split's own, so it moves with the draw). No call. Example::

    python -m benchmarks.pool_draws --dataset fin --scorer tagger --label novel_untagged \\
        --out benchmarks/results/calibration/tagger_fin_novel_pooled.json \\
        benchmarks/results/calibration/calibration_tagger_seed{1,2,3}.json \\
        benchmarks/results/calibration/calibration_tagger_fin_seed{4,5,6,7,8}.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hf_rgda.canaries.scoring import auroc

from .common import command, write_results


def pool(results: list[dict[str, Any]], dataset: str, scorer: str, label: str) -> dict[str, Any]:
    """Each draw's figures and the pooled ones (scores less their draw's threshold; a lower score is more suspect)."""
    draws, good_all, bad_all = [], [], []
    for result in results:
        cell = result["datasets"][dataset]
        scored = cell["scorers"][scorer]
        t = scored["metrics"]["product_threshold"]
        good = [x["score"] for x in scored["scores"] if x["label"] == "good"]
        bad = [x["score"] for x in scored["scores"] if x["label"] == label]
        value = auroc(good + bad, [True] * len(good) + [False] * len(bad)) if good and bad else None
        draws.append({"seed": cell["seed"], "good": len(good), label: len(bad), "threshold": t,
                      "auroc": None if value is None else round(value, 4), "caught": sum(x < t for x in bad)})
        good_all += [x - t for x in good]
        bad_all += [x - t for x in bad]
    value = auroc(good_all + bad_all, [True] * len(good_all) + [False] * len(bad_all)) if good_all and bad_all else None
    return {"dataset": dataset, "scorer": scorer, "label": label, "draws": draws,
            "pooled": {"good": len(good_all), label: len(bad_all), "auroc": None if value is None else round(value, 4),
                       "caught": sum(x < 0 for x in bad_all), "kept": sum(x >= 0 for x in good_all)}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", type=Path, help="calibration results files, one a draw")
    p.add_argument("--dataset", required=True)
    p.add_argument("--scorer", required=True)
    p.add_argument("--label", required=True, help="the defect class, e.g. novel_untagged")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    out = pool([json.loads(f.read_text()) for f in args.files], args.dataset, args.scorer, args.label)
    print(f"| draw | good/{args.label} | AUROC | caught at the product's threshold |\n|---|---|---|---|")
    for d in out["draws"]:
        print(f"| {d['seed']} | {d['good']}/{d[args.label]} | {d['auroc']} | {d['caught']}/{d[args.label]} |")
    q = out["pooled"]
    print(f"| all {len(out['draws'])} | {q['good']}/{q[args.label]} | {q['auroc']} | {q['caught']}/{q[args.label]} |")
    if args.out:
        write_results(args.out, {"command": command("pool_draws", argv), "files": [str(f) for f in args.files], **out})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
