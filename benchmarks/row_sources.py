"""Where the entities of augmented rows come from, and what that means for the protocol's comparison.

``protocol.py`` builds the LLM methods' augmenter with ``RGDAAugmenter.from_dataset(train)``: its statistics (the
checker's lexicon and head counts, and the entity-hint pool the composer draws same-type mentions from) are those of
the **whole train split**, while seeds alone and MR see only the N seeds. This script measures what that gives the
rows: each entity mention of a stored row set is classed by where its text (lower-cased) occurs in the train split:

- ``seeds``: among the seeds' own mentions;
- ``train_only``: a mention of the train split that no seed has (what the hints and the lexicon can carry over);
- ``new``: in no train mention (the model's own).

It then counts the **test** split's gold mentions (occurrences) whose text the training rows contain, with the
seeds alone and with seeds + rows, and how many of the added ones come from ``train_only`` texts: test mentions a
model trained on the rows has seen, through the augmenter's access to the full train split, which the seeds-alone
and MR arms never had. Rows (``--rows``, several files) are those a ``protocol.py`` results file stores, or the
accepted rows of every cell of a ``local_pipeline.py`` results file (its chunks of seeds from 0 on, as
``row_ablation.py --rows`` reads them); no LLM call, no training.

Usage:
    python -m benchmarks.row_sources --data-dir ../shared/data \
        --rows benchmarks/results/protocol/protocol.json benchmarks/results/local_pipeline/verification_rows.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, ROOT, header, load, sentences

BENCH = ROOT / "benchmarks"

SOURCES = ("seeds", "train_only", "new")


def mention_texts(rows: Iterable[tuple[Sequence[str], Sequence[str]]]) -> list[tuple[str, str]]:
    """Every entity mention of ``rows`` (tokens, IOB2 tags) as ``(lower-cased text, type)``, in order.

    Example:
        >>> mention_texts([(["Gout", "and", "Lupus", "."], ["B-Disease", "O", "B-Disease", "O"])])
        [('gout', 'Disease'), ('lupus', 'Disease')]
    """
    from hf_rgda.tags import tags_to_spans

    return [(" ".join(str(t).lower() for t in tokens[s.start : s.end]), s.label)
            for tokens, tags in rows for s in tags_to_spans(list(tags), strict=False)]


def sources(rows: Sequence[tuple[Sequence[str], Sequence[str]]], seed_texts: set[str],
            train_texts: set[str]) -> dict[str, Any]:
    """Counts of the rows' mentions by source (:data:`SOURCES`), with the distinct ``train_only`` texts.

    Example:
        >>> sources([(["Gout", "and", "gout"], ["B-Disease", "O", "B-Disease"])], {"lupus"}, {"gout", "lupus"})["counts"]
        {'seeds': 0, 'train_only': 2, 'new': 0}
    """
    counts: Counter[str] = Counter()
    carried: Counter[str] = Counter()
    for text, _ in mention_texts(rows):
        source = "seeds" if text in seed_texts else "train_only" if text in train_texts else "new"
        counts[source] += 1
        if source == "train_only":
            carried[text] += 1
    return {"mentions": sum(counts.values()), "counts": {s: counts[s] for s in SOURCES},
            "train_only_texts": len(carried), "train_only_most_common": carried.most_common(15)}


def test_coverage(test_texts: Sequence[str], seed_texts: set[str], row_texts: set[str],
                  train_only: set[str]) -> dict[str, Any]:
    """How many test mentions (occurrences) have their text among the seeds' mentions, among the seeds' and the
    rows' together, and of those the rows add, how many are ``train_only`` texts.

    Example:
        >>> test_coverage(["gout", "gout", "lupus", "acne"], {"lupus"}, {"gout", "pox"}, {"gout"})["added_train_only"]
        2
    """
    seeds = sum(t in seed_texts for t in test_texts)
    both = sum(t in seed_texts or t in row_texts for t in test_texts)
    added_train = sum(t not in seed_texts and t in row_texts and t in train_only for t in test_texts)
    n = len(test_texts)
    return {"test_mentions": n, "covered_by_seeds": seeds, "covered_by_seeds_and_rows": both,
            "added_by_rows": both - seeds, "added_train_only": added_train,
            "share_seeds": round(seeds / n, 4) if n else None, "share_seeds_and_rows": round(both / n, 4) if n else None}


def row_sets(path: Path) -> dict[str, dict[str, Any]]:
    """The row sets of a results file, ``{key: {"dataset", "seeds", "rows"}}``: a ``protocol.py`` file's cells that
    stored their rows, or each cell of a ``local_pipeline.py`` file over all its seeds (``row_ablation.py``'s
    :func:`pipeline_rows`, which refuses chunks that do not cover the seeds from 0 on)."""
    from benchmarks.row_ablation import pipeline_rows

    data = json.loads(path.read_text())
    if "chunks" not in data:
        return {f"{path.name}:{k}": {"dataset": c["dataset"], "seeds": c["seeds"], "rows": c["rows"]}
                for k, c in data["cells"].items() if c.get("rows")}
    out = {}
    for key, chunks in data["chunks"].items():
        dataset, _, method = key.partition("/")
        seeds = max(int(c.split("-")[1]) for c in chunks)
        name, rows = pipeline_rows(path, argparse.Namespace(dataset=dataset, method=method, seeds=seeds))
        out[name] = {"dataset": dataset, "seeds": seeds, "rows": rows}
    return out


def analyse(data_dir: Path, rows_paths: Sequence[Path]) -> dict[str, Any]:
    """Every row set of ``rows_paths`` (:func:`row_sets`; see the module docstring)."""
    from hf_rgda.recipe import sample_seeds

    cells = {k: c for path in rows_paths for k, c in row_sets(path).items()}
    out: dict[str, Any] = {}
    loaded: dict[str, Any] = {}  # per dataset, read once: its train split, train and test mention texts
    for key, cell in cells.items():
        name = cell["dataset"]
        if name not in loaded:
            dsd = load(data_dir, name)
            loaded[name] = (dsd["train"], {t for t, _ in mention_texts(sentences(dsd["train"]))},
                            [t for t, _ in mention_texts(sentences(dsd["test"]))])
        train, train_texts, test_texts = loaded[name]
        seed_rows = sentences(sample_seeds(train, cell["seeds"], sample_seed=0, min_entities=1))
        seed_texts = {t for t, _ in mention_texts(seed_rows)}
        rows = [(r["tokens"], r["tags"]) for r in cell["rows"]]
        src = sources(rows, seed_texts, train_texts)
        row_texts = {t for t, _ in mention_texts(rows)}
        carried = {t for t in row_texts if t not in seed_texts and t in train_texts}
        out[key] = {"dataset": name, "seeds": cell["seeds"], "rows": len(rows), "sources": src,
                    "test": test_coverage(test_texts, seed_texts, row_texts, carried)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--rows", type=Path, nargs="+", default=[BENCH / "results" / "protocol" / "protocol.json"],
                   help="protocol.py results files whose cells stored their rows, or local_pipeline.py results files")
    p.add_argument("--out", type=Path, default=BENCH / "results" / "row_sources" / "row_sources.json")
    args = p.parse_args(argv)
    results = {**header("row_sources", argv, note=""), "cells": analyse(args.data_dir, args.rows)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    for key, c in results["cells"].items():
        s, t = c["sources"], c["test"]
        print(f"{key}: {c['rows']} rows, {s['mentions']} mentions: " +
              ", ".join(f"{k} {v}" for k, v in s["counts"].items()) +
              f"; test mentions covered: seeds {t['covered_by_seeds']}/{t['test_mentions']}, seeds + rows "
              f"{t['covered_by_seeds_and_rows']} (+{t['added_by_rows']}, of which train_only texts {t['added_train_only']})")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
