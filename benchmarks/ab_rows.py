"""What an A/B's rows are like: the accepted rows of ``benchmarks.local_speed`` arms side by side, read without
training on them (issue #57's row-quality bars).

For each arm (``FILE:ARM``, a local_speed results file and one of its arms; arms of several files may be set side by
side, the first being the baseline):

- rows and rows per seed, and the share of the first arm's;
- seeds with two accepted rows that tag the same entity set (texts lower-cased, with their types);
- entity novelty (the share of the rows' entity strings that no seed of the A/B tags) and distinct bigrams (the
  share of the rows' word bigrams that are distinct);
- silver tag precision and recall (``--silver``: ``benchmarks.silver`` results that scored these files' rows);
- ten rows drawn at random (seeded), entities marked ``[text](Type)``.

A row's seed is read from its chunk: a local_speed chunk lists its seeds and how many rows each one gave, in order.

Usage:
    python -m benchmarks.ab_rows --dataset ncbi_disease \\
        --arms benchmarks/results/local_speed/ab57_ncbi_seeds0-19.json:base \\
               benchmarks/results/local_speed/ab57h_ncbi_seeds0-19.json:topup2 \\
        --silver benchmarks/results/silver/silver_ab57h.json --into docs/decisions/top-up.md --readme ab57-ncbi
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, ROOT
from hf_rgda.tags import tags_to_spans

README = ROOT / "benchmarks" / "README.md"


def arm_rows(path: Path, arm: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The arm's accepted rows, each with its seed's index in the A/B's sample (``seed``), and the seeds it ran."""
    data = json.loads(path.read_text())
    rows: list[dict[str, Any]] = []
    seeds: list[int] = []
    for chunk in data["chunks"][arm]:
        it = iter(chunk["rows"])
        for seed, n in zip(chunk["seeds"], chunk["per_seed"]):
            seeds.append(seed)
            rows += [{**next(it), "seed": seed} for _ in range(n)]
        if next(it, None) is not None:
            raise SystemExit(f"{path}:{arm}: a chunk holds more rows than its per_seed counts")
    return rows, seeds


def entities(tokens: Sequence[str], tags: Sequence[str]) -> list[tuple[str, str]]:
    """(lower-cased text, type) of each tagged span."""
    return [(" ".join(tokens[s.start:s.end]).lower(), s.label) for s in tags_to_spans(list(tags))]


def inline(tokens: Sequence[str], tags: Sequence[str]) -> str:
    """The row with each entity marked ``[text](Type)``."""
    out, spans, i = [], {s.start: s for s in tags_to_spans(list(tags))}, 0
    while i < len(tokens):
        s = spans.get(i)
        if s is None:
            out.append(tokens[i])
            i += 1
        else:
            out.append(f"[{' '.join(tokens[s.start:s.end])}]({s.label})")
            i = s.end
    return " ".join(out)


def seed_entities(data_dir: Path, dataset: str, indices: Sequence[int]) -> set[tuple[str, str]]:
    """The entity strings of the A/B's seeds (local_speed's sample: ``sample_seeds(train, n, sample_seed=0)``)."""
    from hf_rgda.recipe import load_split, sample_seeds
    from hf_rgda.tags import to_tag_names

    seeds = sample_seeds(load_split(str(data_dir / dataset), "train"), max(indices) + 1, sample_seed=0)
    tags = to_tag_names(seeds)
    return {e for i in indices for e in entities(seeds[i]["tokens"], tags[i])}


def describe(rows: list[dict[str, Any]], seeds: list[int], seed_ents: set[tuple[str, str]]) -> dict[str, Any]:
    by_seed: dict[int, list[frozenset]] = {}
    for r in rows:
        by_seed.setdefault(r["seed"], []).append(frozenset(entities(r["tokens"], r["tags"])))
    shared = sorted(s for s, sets in by_seed.items() if len(set(sets)) < len(sets))
    ents = [e for r in rows for e in entities(r["tokens"], r["tags"])]
    bigrams = [tuple(b) for r in rows for b in zip([t.lower() for t in r["tokens"]], [t.lower() for t in r["tokens"][1:]])]
    return {"seeds": len(seeds), "rows": len(rows), "rows_per_seed": round(len(rows) / max(len(seeds), 1), 2),
            "seeds_with_rows_sharing_an_entity_set": shared, "entities": len(ents),
            "entity_novelty": round(sum(e not in seed_ents for e in ents) / max(len(ents), 1), 3),
            "distinct_bigrams": round(len(set(bigrams)) / max(len(bigrams), 1), 3),
            "most_repeated_entity": Counter(ents).most_common(1)[0] if ents else None}


def silver_of(silver: dict[str, Any] | None, dataset: str, path: Path, arm: str) -> dict[str, Any] | None:
    if not silver:
        return None
    return silver.get("datasets", {}).get(dataset, {}).get("row_sets", {}).get(f"{path.name}:{arm}")


def report(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    arms = []
    for spec in args.arms:
        file, _, arm = spec.rpartition(":")
        path = Path(file)
        rows, seeds = arm_rows(path, arm)
        if args.seeds is not None:  # the seeds every arm ran (a run stopped early)
            seeds = [i for i in seeds if i < args.seeds]
            rows = [r for r in rows if r["seed"] < args.seeds]
        arms.append((path, arm, rows, seeds))
    seed_ents = seed_entities(args.data_dir, args.dataset, sorted({s for *_, seeds in arms for s in seeds}))
    silver = json.loads(args.silver.read_text()) if args.silver else None
    base_rows = len(arms[0][2])
    lines = [("| arm (commit) | rows (per seed) | share of the first arm's | seeds with rows sharing an entity set | "
              "entity novelty | distinct bigrams | silver precision | silver recall |"), "|---|---|---|---|---|---|---|---|"]
    out: dict[str, Any] = {"dataset": args.dataset, "arms": {}}
    for path, arm, rows, seeds in arms:
        d = describe(rows, seeds, seed_ents)
        commit = json.loads(path.read_text())["arms"][arm].get("commit", "?")
        s = silver_of(silver, args.dataset, path, arm)
        d["silver"] = {k: s[k] for k in ("precision", "precision_95", "recall", "entities", "silver_entities")} if s else None
        out["arms"][f"{path.name}:{arm}"] = {**d, "commit": commit}
        sp = f"{s['precision']:.3f}" if s else "—"
        sr = f"{s['recall']:.3f}" if s else "—"
        lines.append(f"| {arm} ({commit}) | {d['rows']} ({d['rows_per_seed']}) | {d['rows'] / max(base_rows, 1):.0%} | "
                     f"{len(d['seeds_with_rows_sharing_an_entity_set'])} | {d['entity_novelty']:.2f} | "
                     f"{d['distinct_bigrams']:.2f} | {sp} | {sr} |")
    path, arm, rows, _ = arms[-1]
    picked = random.Random(args.sample_seed).sample(rows, min(args.quote, len(rows)))
    lines += ["", f"Ten rows of `{arm}` drawn at random (`random.Random({args.sample_seed})`), as accepted:", ""]
    # as code: a mark ``[text](Type)`` would read as a Markdown link
    lines += [f"{i}. (seed {r['seed']}) `{inline(r['tokens'], r['tags']).replace('`', chr(39))}`"
              for i, r in enumerate(picked, 1)]
    out["quoted"] = [inline(r["tokens"], r["tags"]) for r in picked]
    return "\n".join(lines), out


def write_readme(block: str, text: str, readme: Path = README) -> None:
    """``text`` between ``<!-- {block}:start -->`` and ``<!-- {block}:end -->`` of ``readme``."""
    doc = readme.read_text()
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    if start not in doc or end not in doc:
        raise SystemExit(f"{readme} has no {start} ... {end} block")
    head, rest = doc.split(start, 1)
    readme.write_text(f"{head}{start}\n{text}\n{end}{rest.split(end, 1)[1]}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arms", nargs="+", required=True, help="FILE:ARM of benchmarks.local_speed results; the first is "
                                                           "the baseline")
    p.add_argument("--dataset", default="ncbi_disease")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--silver", type=Path, default=None, help="benchmarks.silver results that scored these rows")
    p.add_argument("--seeds", type=int, default=None, help="only the seeds below this index (arms stopped early)")
    p.add_argument("--quote", type=int, default=10)
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    p.add_argument("--readme", default=None, metavar="BLOCK", help="write the table into the BLOCK of --into")
    p.add_argument("--into", type=Path, default=README, help="the file whose BLOCK --readme writes (default: "
                                                             "benchmarks/README.md; the #57 A/B's: docs/decisions/top-up.md)")
    args = p.parse_args(argv)
    text, figures = report(args)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"command": "python -m benchmarks.ab_rows " + " ".join(sys.argv[1:] if argv is None
                                                                                             else argv), **figures},
                                       indent=1, ensure_ascii=False) + "\n")
    if args.readme:
        write_readme(args.readme, text, args.into)
    return 0


if __name__ == "__main__":
    sys.exit(main())
