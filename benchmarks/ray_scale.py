"""Rows per second on a Ray cluster of one worker node against two, against a server with a fixed latency per
request, at the same per-node concurrency; and what Ray costs against ``datasets.map`` on one node.

The cluster is local (``ray.cluster_utils.Cluster``): a head with no CPUs (it holds the run's store and limits
actors) and worker nodes of one CPU each, so each node runs one worker, one batch of ``--batch-size`` seeds at a
time, its calls at once up to the backend's ``max_concurrency``: the same concurrency per node in every
configuration. The server (``hf_rgda.testing.providers``, its own process) answers every request after
``--latency`` seconds with the scripted world's answers, an honest stand-in for a remote API whose cost is waiting.
Each configuration starts with an empty response cache of its own, so every call is paid.

Configurations: ``datasets.map`` in this process (one node, the batches one after another); then, on a cluster of two
worker nodes, Ray with one worker (one node works, the other idles) and with two (both work), ``--repeats`` times each,
alternated, after a small warm-up run. Rows per second count the accepted rows; the wall time is the whole call, the
workers' start included (a fixed cost a longer run spreads thinner).

Usage:
    python -m benchmarks.ray_scale --seeds 48 --batch-size 4 --latency 0.3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import header, write_results
from benchmarks.remote_concurrency import seeds
from hf_rgda import RGDAAugmenter
from hf_rgda.recipe import augment as augment_here

MB = 1024 * 1024


def augmenter(port: int, cache: Path, method: str) -> RGDAAugmenter:
    return RGDAAugmenter("openai:bench-model", label_names=["O", "B-Disease", "I-Disease"], method=method, cache=cache,
                         llm_options={"base_url": f"http://127.0.0.1:{port}/v1"})


def measure(name: str, call: Any) -> dict[str, Any]:
    """Time ``call()`` (a run) and read its rows."""
    start = time.perf_counter()
    run = call()
    wall = time.perf_counter() - start
    s = run.summary.to_dict()
    print(f"{name}: {wall:.1f} s, {s['accepted']} accepted rows", flush=True)
    return {"config": name, "wall_s": round(wall, 2), "accepted": s["accepted"], "rows": len(run.rows),
            "requests": s["calls"], "failed_seeds": s["failed_seeds"], "rows_per_s": round(s["accepted"] / wall, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--latency", type=float, default=0.3)
    p.add_argument("--repeats", type=int, default=2, help="runs of each Ray configuration, alternated")
    p.add_argument("--method", default="rgda")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/ray_scale/ray_scale.json"))
    args = p.parse_args(argv)

    import ray
    from ray.cluster_utils import Cluster

    from hf_rgda.scale import augment

    load = [round(os.getloadavg()[0], 1)]  # the host is shared: how busy it was
    ds, tmp = seeds(args.seeds), Path(tempfile.mkdtemp(prefix="ray_scale_"))
    proc = subprocess.Popen([sys.executable, "-m", "hf_rgda.testing.providers", "--latency", str(args.latency)],
                            stdout=subprocess.PIPE, text=True)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 100 * MB,
                                                            "include_dashboard": False})
    try:
        port = int(proc.stdout.readline())
        here = measure("datasets.map, one node", lambda: augment_here(
            ds, augmenter(port, tmp / "here.sqlite3", args.method), batch_size=args.batch_size))
        for _ in range(2):
            cluster.add_node(num_cpus=1, object_store_memory=100 * MB)
        ray.init(address=cluster.address, logging_level="WARNING")
        warmup = measure("warm-up (two seeds, not counted)", lambda: augment(
            seeds(2), augmenter(port, tmp / "warmup.sqlite3", args.method), workers=2, batch_size=1))
        runs: dict[int, list[dict[str, Any]]] = {1: [], 2: []}
        for k in range(args.repeats):
            for nodes in (1, 2) if k % 2 == 0 else (2, 1):
                name = f"ray, {nodes} worker node{'s' * (nodes > 1)}, run {k + 1}"
                runs[nodes].append(measure(name, lambda nodes=nodes, k=k: augment(
                    ds, augmenter(port, tmp / f"ray{nodes}_{k}.sqlite3", args.method), workers=nodes,
                    batch_size=args.batch_size)))
    finally:
        ray.shutdown()
        cluster.shutdown()
        proc.terminate()
        proc.wait(10)
    load.append(round(os.getloadavg()[0], 1))
    best = {n: max(r["rows_per_s"] for r in rs) for n, rs in runs.items()}
    mean_wall = {n: statistics.mean(r["wall_s"] for r in rs) for n, rs in runs.items()}
    result = {
        **header("ray_scale", argv, note="no GPU; a local Ray cluster (a head of 0 CPUs, worker nodes of 1 CPU) and "
                                         "the server on one machine"),
        "load_average_1min_at_start_and_end": load, "method": args.method, "seeds": args.seeds, "batch_size": args.batch_size, "latency_s": args.latency,
        "per_node": "one worker (1 CPU), one batch at a time, the backend's max_concurrency 8",
        "datasets_map_one_node": here, "warmup": warmup, "ray_one_node": runs[1], "ray_two_nodes": runs[2],
        "two_nodes_over_one_rows_per_s": {"mean": round(statistics.mean(r["rows_per_s"] for r in runs[2])
                                                        / statistics.mean(r["rows_per_s"] for r in runs[1]), 2),
                                          "best_of_each": round(best[2] / best[1], 2)},
        "ray_one_node_over_datasets_map_wall": round(mean_wall[1] / here["wall_s"], 2),
        "ray_one_node_extra_s": round(mean_wall[1] - here["wall_s"], 2),
    }
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
