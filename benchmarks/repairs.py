"""What the targeted repair re-asks buy with the local default LLM: the same NCBI-disease seeds run twice through
`rgda` in one process, first with ``max_repairs=1`` (one re-ask per writing stage and seed, the rejected sentences
shown with their reasons), then with ``max_repairs=0``, on one response cache, so the second run answers every call
the two share from the cache and asks only what differs (the AC judge's questions where the repaired sentences
changed what it reads).

Reported per setting: accepted rows, LLM seconds (a cached call counts the seconds it took when it was asked), calls
(cached ones included), the completion tokens of the calls asked in that run (the second run's cached calls count
none) and rejections by reason; and for the repairs: their calls, the rows they added, the sentences they
wrote that were rejected (by reason: the difference of the two runs' rejections) and the seconds per row they added.

Usage:
    python -m benchmarks.repairs --num-seeds 12 --out benchmarks/results/repairs/repairs.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, MAIN_COMMAND_DOMAIN, ROOT, header


def run_setting(seeds: Any, split: Any, cache: Path, max_repairs: int) -> dict[str, Any]:
    from hf_rgda import DEFAULT_LLM, AugmentConfig, RGDAAugmenter
    from hf_rgda.recipe import augment

    cfg = AugmentConfig(method="rgda", domain=MAIN_COMMAND_DOMAIN, max_repairs=max_repairs, keep_originals=True,
                        keep_rejected=True)
    aug = RGDAAugmenter.from_dataset(split, llm=DEFAULT_LLM, config=cfg, cache=str(cache))
    run = augment(seeds, aug, batch_size=8, desc=f"rgda, max_repairs={max_repairs}")
    s = run.summary.to_dict()
    rows = [" ".join(r["tokens"]) for r in run.rows if r["rgda_status"] == "accepted"]
    return {"max_repairs": max_repairs, "accepted": s["accepted"],
            "llm_seconds": round(s["llm_seconds"] + s["cached_seconds"], 1),
            "calls": s["calls"], "stage_calls": s["stage_calls"], "completion_tokens": s["completion_tokens"],
            "rejected_by_reason": s["rejected_by_reason"], "rows": rows}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--num-seeds", type=int, default=12)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "repairs" / "repairs.json")
    args = p.parse_args(argv)

    from hf_rgda.recipe import load_split, sample_seeds

    split = load_split(str(args.data_dir / "ncbi_disease"), "train")
    seeds = sample_seeds(split, args.num_seeds, sample_seed=0)
    out: dict[str, Any] = {**header("repairs", argv), "num_seeds": args.num_seeds}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "responses.sqlite3"
        out["settings"] = [run_setting(seeds, split, cache, n) for n in (1, 0)]
    on, off = out["settings"]
    added = on["accepted"] - off["accepted"]
    rejected = Counter(on["rejected_by_reason"])
    rejected.subtract(off["rejected_by_reason"])
    seconds = round(on["llm_seconds"] - off["llm_seconds"], 1)
    out["repairs"] = {
        "calls": on["calls"] - off["calls"], "rows_added": added,
        "sentences_rejected_by_reason": {k: v for k, v in rejected.items() if v},
        "llm_seconds": seconds, "llm_seconds_per_row_added": round(seconds / added, 1) if added > 0 else None,
        "llm_seconds_per_accepted_row": {"with": round(on["llm_seconds"] / max(on["accepted"], 1), 2),
                                         "without": round(off["llm_seconds"] / max(off["accepted"], 1), 2)}}
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(out["repairs"], indent=1))


if __name__ == "__main__":
    main()
