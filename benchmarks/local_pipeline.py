"""Benchmark of the local pipeline: yield, rejections, cost and judge behaviour per method.

For each dataset, samples seeds with at least one entity (fixed sample seed), runs every method through
``RGDAAugmenter`` with one shared response cache (methods that make the same call, e.g. GDA and R-GDA's first
guidance, pay for it once), and writes after every (dataset, method) cell, so a stop loses nothing and a rerun
resumes from the cache. ``--schedules`` adds the stage-major vs row-major comparison (same seeds, same run,
separate caches so neither reuses the other's answers).

Usage (the committed results come from the command in results/local_pipeline.json's "command"):
    python benchmarks/local_pipeline.py --data-dir ../shared/data --datasets ncbi_disease scierc --num-seeds 20
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from hf_rgda import DEFAULT_LLM, RGDAAugmenter, RunSummary
from hf_rgda.data import load_ner, sample_rows

DOMAINS = {
    "ncbi_disease": "biomedical research abstracts (PubMed) with disease mentions",
    "scierc": "computer science research abstracts (AI, NLP, vision)",
    "fin": "financial agreements and SEC filings",
}
METHODS = ["naive", "gda", "rgda-no-gr", "rgda-no-ac", "rgda"]


def run_cell(seeds, aug: RGDAAugmenter) -> dict:
    start = time.perf_counter()
    out = seeds.map(aug, batched=True, batch_size=len(seeds), load_from_cache_file=False)
    wall = time.perf_counter() - start
    summary = RunSummary.from_traces(out["rgda_trace"])
    summary.wall_seconds = wall
    accepted = out.filter(lambda s: s == "accepted", input_columns="rgda_status")
    d = summary.to_dict()
    paid = max(1, d["llm_calls"] - d["cached_calls"])
    d["seconds_per_accepted"] = round(d["llm_seconds"] / d["accepted"], 1) if d["accepted"] else None
    d["tokens_per_accepted"] = round((d["prompt_tokens"] + d["completion_tokens"]) / d["accepted"]) if d["accepted"] else None
    d["seconds_per_seed"] = round(wall / len(seeds), 1)
    d["paid_calls"] = paid
    d["examples"] = [{"tokens": r["tokens"], "entities": [(t, g) for t, g in zip(r["tokens"], r["ner_tags"]) if g != "O"]}
                     for r in accepted.select(range(min(10, len(accepted))))]
    return d


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc"])
    p.add_argument("--methods", nargs="+", default=METHODS)
    p.add_argument("--num-seeds", type=int, default=20)
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--llm", default=DEFAULT_LLM)
    p.add_argument("--schedules", action="store_true", help="also time stage-major vs row-major scheduling (rgda)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/local_pipeline.json"))
    p.add_argument("--cache", type=Path, default=Path("benchmarks/.cache/local_pipeline.sqlite3"))
    args = p.parse_args(argv)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.update({"command": "python benchmarks/local_pipeline.py " + " ".join(argv or sys.argv[1:]),
                    "machine": f"{platform.machine()}, {__import__('os').cpu_count()} CPU cores, no GPU",
                    "llm": args.llm})
    results.setdefault("cells", {})
    for name in args.datasets:
        split = load_ner(str(args.data_dir / name))["train"]
        seeds = sample_rows(split, args.num_seeds, args.sample_seed, min_entities=1)
        runs = [(m, "stage", args.cache) for m in args.methods]
        if args.schedules:
            runs += [("rgda", s, args.cache.with_name(f"schedule_{s}_{name}.sqlite3")) for s in ("stage", "row")]
        for method, schedule, cache in runs:
            key = f"{name}/{method}" + (f"/schedule={schedule}" if cache != args.cache else "")
            if results["cells"].get(key, {}).get("complete"):
                continue
            aug = RGDAAugmenter.from_dataset(split, llm=args.llm, method=method, schedule=schedule, cache=cache,
                                             keep_rejected=True, domain=DOMAINS.get(name, ""))
            cell = run_cell(seeds, aug)
            cell["complete"] = True
            results["cells"][key] = cell
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))
            print(f"{key}: accepted {cell['accepted']} ({cell['accepted_per_seed']}/seed), "
                  f"{cell['seconds_per_seed']} s/seed, rejected {cell['rejected_by_reason']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
