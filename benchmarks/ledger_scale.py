"""The variety pass's cross-seed near-copy search as a run grows: :class:`hf_rgda.checking.variety.Ledger` (a word
index read with prefix filtering) against a scan of every accepted row, the search it replaced.

A run is simulated from a split's own sentences: each sentence is a seed's accepted row, looked up against the ledger
of the rows before it (``Ledger.sharing``, the rows that share enough words to be ``--ratio`` similar) and then
added, ``--rows-per-seed`` rows a seed. Both searches must return the same rows in the same order (checked for every
row); the seconds of each are reported, with their ratio.

Usage:
    python -m benchmarks.ledger_scale --data-dir ../shared/data --rows 4000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, ROOT, header, write_results
from benchmarks.throughput_run import read_split
from hf_rgda.checking.sentence import Occurrences, occurrences
from hf_rgda.checking.variety import Ledger, Words


class _NoSeed:
    mention_words: tuple[tuple[str, ...], ...] = ()


class _Row:
    """What :meth:`Ledger.add` reads of an accepted sentence (no entities: the entity counts are not timed)."""

    of_seed = _NoSeed()

    def __init__(self, words: list[str]) -> None:
        self.low, self.occurrences, self.spans = words, occurrences(words), []


def scan(rows: dict[str, list[Words]], mine: Occurrences, key: str, ratio: float) -> list[Words]:
    """Every other seed's row whose shared words allow ``ratio`` (the search before the word index)."""
    m = len(mine)
    return [(low, occ) for seed, kept in rows.items() if seed != key for low, occ in kept
            if 2.0 * len(occ & mine) / (len(low) + m) >= ratio]


def run(data_dir: Path, n: int, per_seed: int, ratio: float) -> dict[str, Any]:
    sentences = [[t.lower() for t in r["tokens"]] for r in read_split(data_dir)][:n]
    ledger, indexed_s, scan_s, found = Ledger(0), 0.0, 0.0, 0
    for i, words in enumerate(sentences):
        key, row = f"seed-{i // per_seed}", _Row(words)
        start = time.perf_counter()
        got = ledger.sharing(row.occurrences, key, ratio)
        ledger.add(key, row)  # type: ignore[arg-type]  # what add reads of a Sentence
        indexed_s += time.perf_counter() - start
        start = time.perf_counter()
        want = scan(ledger.rows, row.occurrences, key, ratio)
        scan_s += time.perf_counter() - start
        if got != want:
            raise AssertionError(f"row {i}: the index found {len(got)} rows, the scan {len(want)}")
        found += len(got)
    return {"rows": len(sentences), "rows_per_seed": per_seed, "ratio": ratio, "similar_rows_found": found,
            "indexed_seconds": round(indexed_s, 3), "scan_seconds": round(scan_s, 3),
            "scan_over_indexed": round(scan_s / indexed_s, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--rows-per-seed", type=int, default=3)
    p.add_argument("--ratio", type=float, default=0.85)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "ledger_scale" / "ledger_scale.json")
    args = p.parse_args(argv)
    write_results(args.out, {**header("ledger_scale", argv),
                             **run(args.data_dir, args.rows, args.rows_per_seed, args.ratio)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
