"""Why augmented rows do or do not help: the same training as ``protocol.py``, with the rows of one of its cells
changed in one way at a time.

``protocol.py`` measures F1 of seeds + a method's rows. When an LLM method does not beat seeds alone, two causes
are possible: the rows' tags (wrong entities teach wrong things) or the rows' sentences (what they say, how they
say it, how many there are). Holding the seeds, the training schedule (equal steps: the optimizer steps of a full
1:ratio set, as ``protocol.py``'s ``equal_steps``) and the training seeds fixed, this trains on:

- ``seeds_only`` and ``mr`` (mention replacement, ``protocol.py``'s ``mr``): the two references, trained here too;
- ``mr_train``: mention replacement drawing from every mention of the whole train split (``protocol.py``'s
  ``mr-train``), not the seeds' alone. The LLM methods' augmenter is built with ``from_dataset(train)``: the
  composer's entity hints come from the whole train split, so most of their rows' mentions are train mentions no
  seed has (``row_sources.py``). This arm gives MR the same knowledge: the fair reference for those rows;
- ``as_generated``: the cell's rows as the method wrote them (``protocol.py``'s own figure, retrained here so that
  every arm runs on this machine and this code);
- ``silver_tags``: the same sentences with the tags of the silver tagger (``silver.py``: a tagger trained on the
  whole train split). Better tags, same sentences. The silver tagger also knows the split beyond the seeds, so this
  arm is an upper bound on what fixing the tags could give, not an estimate of it;
- ``silver_agreed``: only the rows whose tags the silver tagger reproduces exactly (what a perfect row filter of
  that strength would keep), with their own tags;
- ``gold_extra``: as many real train sentences (not seeds, at least one entity, gold tags) as the cell has rows: the
  headroom, what the same number of perfectly tagged in-domain sentences gives.

Rows come from a ``protocol.py`` cell that stored them, or with ``--rows`` from a ``local_pipeline.py`` results file
(the method's rows of the first ``--seeds`` seeds; the seeds are drawn as both scripts draw them).

Usage:
    python -m benchmarks.row_ablation --data-dir ../shared/data --dataset ncbi_disease --seeds 40 --method rgda
    python -m benchmarks.row_ablation --dataset ncbi_disease --seeds 20 --epochs 30 --method rgda \\
        --rows benchmarks/results/local_pipeline/verification_rows.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, ROOT, header

ARMS = ("seeds_only", "mr", "mr_train", "as_generated", "silver_tags", "silver_agreed", "gold_extra")


def protocol_rows(path: Path, args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The rows of the protocol cell of ``args.method`` at that scale (a cell that stored them), and its key. The
    rows do not depend on the training, so a cell trained for other epochs or with another encoder serves too (the
    one trained like this run first)."""
    cells = [(key, cell) for key, cell in json.loads(path.read_text())["cells"].items()
             if (cell["dataset"], cell["seeds"], cell["method"]) == (args.dataset, args.seeds, args.method)
             and cell.get("rows")]
    cells.sort(key=lambda kc: (kc[1]["encoder"], kc[1]["epochs"]) != (args.encoder, args.epochs))
    if not cells:
        raise SystemExit(f"no protocol cell with stored rows for {args.dataset}/{args.seeds} seeds/{args.method}: "
                         "run protocol.py for it first, or give --rows")
    key, cell = cells[0]
    return f"{path.name}:{key}", cell["rows"]


def pipeline_rows(path: Path, args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The accepted rows of ``args.method`` on the first ``args.seeds`` seeds of a ``local_pipeline.py`` results file
    (its chunks of seeds ``a-b``), and their key."""
    key = f"{args.dataset}/{args.method}"
    chunks = json.loads(path.read_text()).get("chunks", {}).get(key, {})
    spans = sorted((tuple(map(int, c.split("-"))), c) for c in chunks)
    covered = [c for (a, b), c in spans if b <= args.seeds]
    if sum(b - a for (a, b), c in spans if c in covered) != args.seeds:
        raise SystemExit(f"{path}: {key} has no chunks covering exactly its first {args.seeds} seeds ({list(chunks)})")
    return f"{path.name}:{key}", [e for c in covered for e in chunks[c]["examples"]]


def arm_rows(arm: str, rows: list[dict[str, Any]], silver: list[list[str]], train: Any, seeds: Any,
             sample_seed: int, ratio: int = 3) -> list[tuple[list[str], list[str]]]:
    """The augmented rows ``(tokens, tags)`` an arm trains on besides the seeds."""
    from benchmarks.silver import entities
    from hf_rgda.recipe import sample_seeds
    from hf_rgda.tags import to_tag_names

    if arm == "seeds_only":
        return []
    if arm in ("mr", "mr_train"):
        from benchmarks.protocol import augment

        aug, _ = augment(arm.replace("_", "-"), "", train, seeds, argparse.Namespace(ratio=ratio, sample_seed=sample_seed,
                                                                     batch_size=8))
        return list(zip([list(t) for t in aug["tokens"]], to_tag_names(aug)))
    if arm == "as_generated":
        return [(r["tokens"], r["tags"]) for r in rows]
    if arm == "silver_tags":
        return [(r["tokens"], list(s)) for r, s in zip(rows, silver)]
    if arm == "silver_agreed":
        return [(r["tokens"], r["tags"]) for r, s in zip(rows, silver) if entities(r["tags"]) == entities(s)]
    # gold_extra: the sample after the seeds in the same draw (sample_seeds' prefix property), so never a seed
    extra = sample_seeds(train, len(seeds) + len(rows), sample_seed=sample_seed).select(
        range(len(seeds), len(seeds) + len(rows)))
    return list(zip([list(t) for t in extra["tokens"]], to_tag_names(extra)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--dataset", default="ncbi_disease")
    p.add_argument("--seeds", type=int, default=40)
    p.add_argument("--method", default="rgda")
    p.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--epochs", type=float, default=10)
    p.add_argument("--ratio", type=int, default=3)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--train-batch", type=int, default=16)
    p.add_argument("--silver-epochs", type=float, default=3.0)
    p.add_argument("--silver-cache", type=Path, default=ROOT / "benchmarks" / ".cache" / "silver")
    p.add_argument("--protocol", type=Path, default=ROOT / "benchmarks" / "results" / "protocol" / "protocol.json",
                   help="the rows of the protocol cell of --method at this scale (one that stored them)")
    p.add_argument("--rows", type=Path, default=None,
                   help="instead: a local_pipeline.py results file, its --method rows of the first --seeds seeds")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "row_ablation" / "row_ablation.json")
    args = p.parse_args(argv)

    from datasets import Dataset, Features, Sequence, Value

    from benchmarks.protocol import splits, train_eval
    from benchmarks.silver import silver_tagger
    from hf_rgda.recipe import sample_seeds
    from hf_rgda.tags import label_names_of, to_tag_names
    from hf_rgda.train import predict_tags

    key, rows = pipeline_rows(args.rows, args) if args.rows else protocol_rows(args.protocol, args)
    rows_sha256 = hashlib.sha256(json.dumps([[r["tokens"], r["tags"]] for r in rows]).encode()).hexdigest()
    train, test = splits(args.data_dir, args.dataset)
    args.labels = label_names_of(train, test)
    seeds = sample_seeds(train, args.seeds, sample_seed=args.sample_seed, min_entities=1)
    silver, info = [], None  # the silver tagger (trained once, minutes) only for the arms that read it
    if {"silver_tags", "silver_agreed"} & set(args.arms):
        model, tokenizer, info = silver_tagger(args.data_dir, args.dataset, args.encoder, args.silver_epochs,
                                               args.silver_cache)
        silver = predict_tags(model, tokenizer, [r["tokens"] for r in rows])
    seed_rows = list(zip([list(t) for t in seeds["tokens"]], to_tag_names(seeds)))
    full_steps = -(-args.seeds * (1 + args.ratio) // args.train_batch) * int(args.epochs)

    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    head = header("row_ablation", argv)
    cmd = head["command"]
    results["commands"] = [*[c for c in results.get("commands", []) if c != cmd], cmd]  # every command, in order
    results["machine"], results["commit"] = head["machine"], head["commit"]
    scale = f"{key}/seeds={args.seeds}/encoder={args.encoder}/epochs={args.epochs:g}"
    out = results.setdefault("experiments", {}).setdefault(scale, {"rows_sha256": rows_sha256, "arms": {}})
    if out["rows_sha256"] != rows_sha256:  # the rows were rebuilt since: the arms trained on the old ones are stale
        out.update(rows_sha256=rows_sha256, arms={})
    if info is not None:
        out["silver_tagger"] = info
    features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(Value("string"))})
    for arm in args.arms:
        extra = arm_rows(arm, rows, silver, train, seeds, args.sample_seed, args.ratio)
        both = seed_rows + extra
        data = Dataset.from_dict({"tokens": [t for t, _ in both], "ner_tags": [g for _, g in both]}, features=features)
        res = out["arms"].setdefault(arm, {"augmented": len(extra), "runs": []})
        for run in range(len(res["runs"]), args.runs):
            start = time.perf_counter()
            r = train_eval(data, test, steps=full_steps, run=run, args=args)
            res["runs"].append({k: v for k, v in r.items() if k != "predictions"})
            res["seconds"] = round(time.perf_counter() - start, 1)
            f1s = [x["f1"] for x in res["runs"]]
            res["f1_mean"], res["f1_sd"] = round(statistics.mean(f1s), 4), round(
                statistics.stdev(f1s) if len(f1s) > 1 else 0.0, 4)
            args.out.write_text(json.dumps(results, indent=1))
            print(f"{scale} {arm}: run {run} F1 {r['f1']} ({len(extra)} augmented rows)", flush=True)
    print(f"| arm | augmented rows | F1 (mean ± sd over runs, equal steps: {full_steps}) |\n|---|---|---|")
    for arm, res in out["arms"].items():
        print(f"| {arm} | {res['augmented']} | {res['f1_mean']:.4f} ± {res['f1_sd']:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
