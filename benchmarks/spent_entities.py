"""What the variety cap cost a 200-seed protocol cell: how many rows ``repeated_entity`` rejected, how many seeds were
left with no row (and how many of those lost rows to the cap), and which entities reached the cap, by where they
came from (the seeds' own mentions, which the composer offers as substitutes and hints, or the model's own).

It reads the cell's committed chunks only (no model, no training): the rows the cell accepted, their entities counted
as the variety pass counts them (text lower-cased, with its type; a row's entity that is one of its seed's own is not
counted, as the pass does not), and each rejected row's reason. The cap is the generator's default
``max_entity_repeats`` (3).

Usage:
    python -m benchmarks.spent_entities --cell "rgda@seeds:f4b6d2f"     # -> results/protocol200/<dataset>_spent.json
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, ROOT, header, write_results

OUT = ROOT / "benchmarks" / "results" / "protocol200"


def mentions(tokens: Sequence[str], tags: Sequence[str]) -> list[tuple[str, str]]:
    """(type, text lower-cased) of each entity of an IOB2 row."""
    from hf_rgda.tags import tags_to_spans

    return [(s.label, " ".join(tokens[s.start:s.end]).lower()) for s in tags_to_spans(list(tags), strict=False)]


def spent(chunks: Sequence[Path], seed_rows: Sequence[tuple[Sequence[str], Sequence[str]]], cap: int = 3) -> dict[str, Any]:
    """The figures of a cell's ``chunks`` (gzipped JSON Lines: a header, then rows with ``seed``, ``tokens``, ``tags``,
    ``status``, ``reason``); ``seed_rows``: the protocol's seeds (tokens, IOB2 tags), indexed as the rows' ``seed``."""
    own = [{text for _, text in mentions(t, g)} for t, g in seed_rows]
    every_seed_mention = set().union(*own) if own else set()
    uses: Counter[tuple[str, str]] = Counter()
    rows_of: Counter[int] = Counter()
    capped_rejections: Counter[int] = Counter()
    seeds: list[int] = []
    for path in chunks:
        with gzip.open(path, "rt") as fh:
            head, *rows = (json.loads(line) for line in fh)
        seeds += head["seeds"]
        for r in rows:
            if r["status"] == "accepted":
                rows_of[r["seed"]] += 1
                uses.update(m for m in set(mentions(r["tokens"], r["tags"])) if m[1] not in own[r["seed"]])
            elif (r.get("reason") or "").endswith("repeated_entity"):
                capped_rejections[r["seed"]] += 1
    at_cap = sorted(m for m, n in uses.items() if n >= cap)
    empty = [s for s in seeds if not rows_of[s]]
    return {"seeds": len(seeds), "rows": sum(rows_of.values()), "cap": cap,
            "rejected_repeated_entity": sum(capped_rejections.values()),
            "seeds_without_rows": len(empty),
            "of_them_lost_rows_to_the_cap": sum(1 for s in empty if capped_rejections[s]),
            "rows_they_lost_to_the_cap": sum(capped_rejections[s] for s in empty),
            "entities_at_cap": len(at_cap),
            "of_them_seed_mentions": sum(1 for _, text in at_cap if text in every_seed_mention),
            "distinct_new_entities": len(uses),
            "at_cap": [{"type": t, "text": x, "rows": uses[(t, x)]} for t, x in at_cap]}


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.protocol200 import Protocol, full_commit, parse_cell

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cell", required=True, help="an LLM cell, METHOD@seeds:COMMIT")
    p.add_argument("--dataset", default="ncbi_disease")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--num-seeds", type=int, default=200)
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--cap", type=int, default=3, help="the generator's max_entity_repeats (default: 3)")
    args = p.parse_args(argv)
    method, generator, _ = parse_cell(args.cell)
    if generator is None:
        raise SystemExit(f"{args.cell}: a rule cell has no chunks")
    proto_args = argparse.Namespace(dataset=args.dataset, data_dir=args.data_dir, num_seeds=args.num_seeds,
                                    sample_seed=args.sample_seed, ratio=3, train_batch=16, epochs=10,
                                    encoder="sentence-transformers/all-MiniLM-L6-v2", out=OUT, chunk_size=10)
    proto = Protocol(proto_args)
    commit = full_commit(generator)
    chunks = [proto.chunk_path(method, commit, k) for k in range(len(proto.chunks()))]
    chunks = [c for c in chunks if c.exists()]
    result = {**header("benchmarks.spent_entities", argv), "cell": args.cell, "chunks": len(chunks),
              **spent(chunks, list(zip(proto.seeds["tokens"], proto.seed_tags)), args.cap)}
    write_results(OUT / f"{args.dataset}_spent.json", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
