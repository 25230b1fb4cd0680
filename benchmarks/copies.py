"""Rows of an A/B results file that copy a sentence of the dataset their composer was shown.

The composer's request shows one other seed of the run as a format example (the first seed of the batch that is not
its own). For each arm of a ``results/local_speed/local_speed*.json`` file this counts the accepted rows that the checker's
``near_copy_of_shown`` rule rejects (a row ``near_copy_ratio``, 0.85, similar to that example or more; the checker
before it compared a row with its own seed only), and prints each with the seed it copies. The A/B runs each chunk
of 4 seeds as one batch, so a row's example is the first other seed of its chunk.

Usage:
    python -m benchmarks.copies benchmarks/results/local_speed/local_speed_cuts.json benchmarks/results/local_speed/local_speed_example_seeds20-39.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from benchmarks.common import DATA_DIR, sentences


def _seeds(data_dir: Path, count: int) -> list:
    """The A/B's seeds (``benchmarks.local_speed``'s draw), as the checker's seed records."""
    from hf_rgda.recipe import load_split, sample_seeds
    from hf_rgda.records import Seed

    seeds = sample_seeds(load_split(str(data_dir / "ncbi_disease"), "train"), count, sample_seed=0)
    return [Seed(f"seed{i}", tokens, tags) for i, (tokens, tags) in enumerate(sentences(seeds))]


def copies(result: dict, data_dir: Path) -> dict[str, list[tuple[int, int, float, str]]]:
    """Per arm of a loaded results file: (the row's seed, the seed it copies, their similarity, the row) for each
    accepted row the rule rejects."""
    import difflib

    from hf_rgda.checking import Checker
    from hf_rgda.checking.rules import near_copy_of_shown
    from hf_rgda.checking.sentence import Sentence

    argv = shlex.split(result["command"])
    first = int(argv[argv.index("--first-seed") + 1]) if "--first-seed" in argv else 0
    seeds = _seeds(data_dir, first + int(argv[argv.index("--num-seeds") + 1]))
    checker = Checker(("Disease",))
    found: dict[str, list[tuple[int, int, float, str]]] = {}
    for arm, chunks in result["chunks"].items():
        found[arm] = []
        for chunk in chunks:
            rows = iter(chunk["rows"])
            for index, count in zip(chunk["seeds"], chunk["per_seed"]):
                shown = next(i for i in chunk["seeds"] if i != index and seeds[i].spans)
                for _ in range(count):
                    row = next(rows)
                    s = Sentence(row["tokens"], row["tags"], seeds[index], checker, shown=(seeds[shown],))
                    if near_copy_of_shown(s):
                        ratio = difflib.SequenceMatcher(a=[t.lower() for t in seeds[shown].tokens], b=s.low).ratio()
                        found[arm].append((index, shown, ratio, " ".join(row["tokens"])))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = p.parse_args(argv)
    for path in args.results:
        result = json.loads(path.read_text())
        for arm, rows in copies(result, args.data_dir).items():
            total = sum(len(c["rows"]) for c in result["chunks"][arm])
            print(f"{path.name} {arm}: {len(rows)} of {total} rows copy the example their composer was shown")
            for index, shown, ratio, text in rows:
                print(f"  a row of seed {index} copies seed {shown} (similarity {ratio:.2f}): {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
