"""Throughput of remote backends at concurrency 1 vs 16, against a local server with a fixed latency per request.

The server (hf_rgda.testing.providers, run as its own process) speaks the OpenAI wire format on 127.0.0.1 and answers
every request after ``--latency`` seconds with valid scripted answers for each pipeline stage: an honest stand-in
for a remote API, whose cost is waiting. The same seeds run through ``rgda`` with the real ``openai`` SDK stack
(no response cache) at each concurrency; the report gives sentences per second, the ratio, and the per-request
overhead of the client stack (wall time per request at concurrency 1 minus the latency; also measured with a
zero-latency server).

Usage:
    python -m benchmarks.remote_concurrency --seeds 24 --latency 0.2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from datasets import Dataset

from benchmarks.common import header
from hf_rgda import RGDAAugmenter
from hf_rgda.recipe import augment

GENES = ["BRCA1", "APC", "TP53", "MLH1", "CFTR", "HTT"]
DISEASES = [["breast", "cancer"], ["colon", "cancer"], ["cystic", "fibrosis"], ["melanoma"], ["asthma"], ["gout"]]


def seeds(n: int) -> Dataset:
    rows = {"tokens": [], "ner_tags": []}
    for i in range(n):
        d = DISEASES[i % len(DISEASES)]
        toks = ["Variants", "of", GENES[i % len(GENES)], "were", "found", "in", f"{i + 2}", "patients", "with", *d, "."]
        rows["tokens"].append(toks)
        rows["ner_tags"].append(["O"] * 9 + ["B-Disease"] + ["I-Disease"] * (len(d) - 1) + ["O"])
    return Dataset.from_dict(rows)


def run(ds: Dataset, latency: float, concurrency: int, method: str) -> dict:
    # the server runs in its own process so that it does not share the client's interpreter (GIL)
    proc = subprocess.Popen([sys.executable, "-m", "hf_rgda.testing.providers", "--latency", str(latency)],
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        aug = RGDAAugmenter("openai:bench-model", label_names=["O", "B-Disease", "I-Disease"], method=method,
                            cache=False, llm_options={"base_url": f"http://127.0.0.1:{port}/v1",
                                                      "max_concurrency": concurrency})
        summary = augment(ds, aug, batch_size=len(ds), load_from_cache_file=False).summary
    finally:
        proc.terminate()
        proc.wait(10)
    s, wall = summary.to_dict(), summary.wall_seconds
    requests = s["calls"]
    return {"concurrency": concurrency, "latency_s": latency, "wall_s": round(wall, 3), "requests": requests,
            "accepted": s["accepted"], "failed_seeds": s["failed_seeds"],
            "sentences_per_s": round(s["accepted"] / wall, 3), "wall_per_request_s": round(wall / requests, 4)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=24)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--method", default="rgda")
    p.add_argument("--concurrency", type=int, nargs=2, default=[1, 16])
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/remote_concurrency/remote_concurrency.json"))
    args = p.parse_args(argv)
    ds = seeds(args.seeds)
    lo, hi = (run(ds, args.latency, c, args.method) for c in args.concurrency)
    zero = run(ds, 0.0, 1, args.method)
    result = {
        **header("remote_concurrency", argv, note="no GPU; server and client on one machine"),
        "method": args.method, "seeds": args.seeds, "runs": [lo, hi],
        "throughput_ratio": round(hi["sentences_per_s"] / lo["sentences_per_s"], 2),
        "client_overhead_per_request_s": round(lo["wall_per_request_s"] - args.latency, 4),
        "zero_latency_run": zero,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
