"""Row quality without training on the rows: tag precision and recall of augmented rows against a silver tagger.

For each dataset a token-classification model, the *silver tagger*, is fine-tuned on the dataset's whole train split
(a benchmark instrument, never a product default) and cached under ``benchmarks/.cache/silver/``. It then tags the
sentences of each row set, and the rows' own tags are compared with its tags entity by entity (exact span and type):

- precision: the share of the rows' entities that the silver tagger tags the same way;
- recall: the share of the silver tagger's entities that the rows tag the same way.

The same two figures on the gold test sentences are the ceiling that the silver tagger's own errors allow: a row set
tagged as carefully as the dataset itself would score about that. Each figure comes with the number of entities it
is a share of (small row sets give wide intervals: a 95% Wilson interval is reported beside each share).

Row sets are the accepted rows of every cell of a ``benchmarks/local_pipeline.py`` or ``local_speed.py`` results file
(rows stored with their tokens and tags), of every ``protocol.py`` cell that stored its rows, or of a ``protocol200``
cell's folder of chunks (``results/protocol200/<dataset>/<method>@seeds/<commit>/``, the chunks committed so far); an entity the silver tagger disagrees
with is listed with its row, to be read.

``--recheck RULE ...`` also scores each row set as it would have left the checker with those rules of today's table
(rules that read the row and the split's statistics, such as ``stutter`` or ``head_alone``; the statistics are the
dataset's train split's): a row a rule fires on is repaired where the rule has a repair, else dropped; reported as ``<set>+<rules>``, with the rows repaired and dropped. This reads what a new rule
does to rows an earlier run wrote; the rows the pipeline writes with it differ further (a repaired or dropped row
changes what the later stages and judges see).

Usage:
    python -m benchmarks.silver --data-dir ../shared/data --datasets ncbi_disease \\
        --rows benchmarks/results/local_pipeline/verification_rows.json
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import math
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, ROOT, header, load


def entities(tags: Sequence[str]) -> set[tuple[int, int, str]]:
    """The (start, end, type) of every entity of an IOB2 tag row (ill-formed tags read leniently)."""
    from hf_rgda.tags import tags_to_spans

    return {(s.start, s.end, s.label) for s in tags_to_spans(list(tags), strict=False)}


def wilson(k: int, n: int, z: float = 1.96) -> list[float] | None:
    """The 95% Wilson score interval of ``k`` successes in ``n``."""
    if not n:
        return None
    p, d = k / n, 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(centre - half, 3), round(centre + half, 3)]


def agreement(rows: Iterable[tuple[Sequence[str], Sequence[str]]], silver: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Precision and recall of the rows' tags (``(tokens, tags)``) against the silver tags, entity by entity.

    Example:
        >>> agreement([(["Gout", "hurts"], ["B-Disease", "O"])], [["B-Disease", "O"]])["precision"]
        1.0
    """
    rows = list(rows)
    matched = own = found = 0
    for (_, tags), pred in zip(rows, silver):
        mine, theirs = entities(tags), entities(pred)
        matched, own, found = matched + len(mine & theirs), own + len(mine), found + len(theirs)
    return {"rows": len(rows), "entities": own, "silver_entities": found, "matched": matched,
            "precision": round(matched / own, 3) if own else None, "precision_95": wilson(matched, own),
            "recall": round(matched / found, 3) if found else None, "recall_95": wilson(matched, found)}


def disagreements(rows: Sequence[dict[str, Any]], silver: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """Every row whose tags differ from the silver tags: its text, the entities only it tags, those only the
    silver tagger tags."""
    out = []
    for row, pred in zip(rows, silver):
        mine, theirs = entities(row["tags"]), entities(pred)
        if mine != theirs:
            out.append({"sentence": " ".join(row["tokens"]), "rows_only": _shown(row["tokens"], mine - theirs),
                        "silver_only": _shown(row["tokens"], theirs - mine)})
    return out


def _shown(tokens: Sequence[str], spans: set[tuple[int, int, str]]) -> list[list[str]]:
    return [[" ".join(tokens[a:b]), t] for a, b, t in sorted(spans)]


def silver_tagger(data_dir: Path, name: str, encoder: str, epochs: float, cache: Path) -> tuple[Any, Any, dict]:
    """The silver tagger of dataset ``name``: trained on its whole train split, or loaded from ``cache``."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from hf_rgda.train import train_ner

    out = cache / f"{name}-{encoder.replace('/', '--')}-{epochs:g}ep"
    info_path = out / "silver.json"
    if not info_path.exists():
        train = load(data_dir, name)["train"]
        start = time.perf_counter()
        trainer, _ = train_ner(train, output_dir=out, model=encoder, epochs=epochs)
        trainer.save_model(str(out))
        trainer.processing_class.save_pretrained(str(out))
        info_path.write_text(json.dumps({"dataset": name, "encoder": encoder, "epochs": epochs,
                                         "train_sentences": len(train),
                                         "train_seconds": round(time.perf_counter() - start, 1)}, indent=1))
    model = AutoModelForTokenClassification.from_pretrained(str(out))
    return model, AutoTokenizer.from_pretrained(str(out)), json.loads(info_path.read_text())


def row_sets(paths: Sequence[Path], name: str, seeds_below: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{cell: accepted rows}`` of dataset ``name`` from local_pipeline results files, or from ``protocol.py``'s
    results (its LLM cells that stored their rows, keyed ``<file>:<cell>``); rows with tokens and tags.
    ``seeds_below``: of a protocol200 cell's folder only the rows of seeds below that index (two cells compared on
    the seeds both have generated)."""
    sets: dict[str, list[dict[str, Any]]] = {}
    for path in paths:
        if path.is_dir():  # a protocol200 cell's chunks: <dataset>/<method>@seeds/<commit>/chunk-NNN.jsonl.gz
            rows = []
            for chunk in sorted(path.glob("chunk-*.jsonl.gz")):
                with gzip.open(chunk, "rt") as fh:
                    head, *lines = (json.loads(line) for line in fh)
                rows += [r for r in lines if r["status"] == "accepted" and (seeds_below is None or r["seed"] < seeds_below)
                         ] if head.get("dataset") == name else []
            if rows:
                part = f", seeds below {seeds_below}" if seeds_below is not None else ""
                sets[f"protocol200:{path.parent.name}:{path.name[:7]} ({len(list(path.glob('chunk-*')))} chunks{part})"] = rows
            continue
        results = json.loads(path.read_text())
        for key, cell in results.get("cells", {}).items():
            if isinstance(cell, dict) and cell.get("dataset") == name and cell.get("rows"):
                sets[f"{path.name}:{key}"] = cell["rows"]
        for key, chunks in results.get("chunks", {}).items():
            if key.split("/")[0] != name:
                continue
            rows = [e for c in chunks.values() for e in c["examples"]]
            if rows and all("tags" in e for e in rows):
                sets[f"{path.name}:{key}"] = rows
            elif rows:
                print(f"skipped {path.name}:{key}: its rows were stored without tags (rerun the cell)", file=sys.stderr)
    return sets


@functools.lru_cache(maxsize=4)
def split_stats(data_dir: Path, name: str) -> Any:
    """The statistics of the dataset's train split, as the augmenter builds them."""
    from hf_rgda.checking import SplitStats
    from hf_rgda.tags import to_tag_names

    train = load(data_dir, name)["train"]
    return SplitStats.from_split(train["tokens"][:], to_tag_names(train, "ner_tags"))


def recheck(rows: Sequence[dict[str, Any]], names: Sequence[str], types: Sequence[str],
            stats: Any = None) -> tuple[list, dict]:
    """``rows`` after the checker's rules ``names`` (repaired where the rule has a repair, else dropped), with the
    split's statistics ``stats``: the rows kept and ``{"repaired": [...], "dropped": [...]}`` (each a row's text and
    what the rule said)."""
    from hf_rgda.checking import RULES, Checker, SplitStats
    from hf_rgda.checking.checker import salvage
    from hf_rgda.checking.sentence import Sentence
    from hf_rgda.checking.table import first_failure
    from hf_rgda.records import Candidate, Seed

    table = {r.name: r for r in RULES}
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"--recheck: {', '.join(unknown)} is not a rule of the checker's table")
    rules, nobody = tuple(table[n] for n in names), Seed("", (), ())
    checker = Checker(tuple(types), stats or SplitStats())
    kept, log = [], {"repaired": [], "dropped": []}
    for row in rows:
        cand = Candidate(raw=None, tokens=list(row["tokens"]), tags=list(row["tags"]))
        found = first_failure(salvage(cand, Sentence(cand.tokens, cand.tags, nobody, checker), rules), rules)
        text = " ".join(row["tokens"])
        if found is not None:
            log["dropped"].append([text, f"{found.rule.name}: {found.detail}"])
            continue
        if cand.salvaged:
            log["repaired"].append([text, "; ".join(cand.salvaged)])
        kept.append({"tokens": cand.tokens, "tags": cand.tags})
    return kept, log


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc", "fin"])
    p.add_argument("--rows", type=Path, nargs="*", default=[], help="local_pipeline.py or protocol.py results files")
    p.add_argument("--seeds-below", type=int, default=None, metavar="N",
                   help="of protocol200 cell folders, only the rows of seeds 0..N-1")
    p.add_argument("--recheck", nargs="*", default=[], metavar="RULE",
                   help="also score each row set after these sentence rules of today's checker (see above)")
    p.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--epochs", type=float, default=3.0)
    p.add_argument("--cache", type=Path, default=ROOT / "benchmarks" / ".cache" / "silver")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "silver" / "silver.json")
    args = p.parse_args(argv)

    from hf_rgda.tags import to_tag_names
    from hf_rgda.train import predict_tags

    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.update(header("silver", argv))
    per = results.setdefault("datasets", {})
    for name in args.datasets:
        model, tokenizer, info = silver_tagger(args.data_dir, name, args.encoder, args.epochs, args.cache)
        test = load(args.data_dir, name)["test"]
        gold = list(zip(test["tokens"], to_tag_names(test, "ner_tags")))
        res = {"silver_tagger": info, "gold_test": agreement(gold, predict_tags(model, tokenizer, test["tokens"])),
               "row_sets": {}}
        types = sorted({g[2:] for _, tags in gold for g in tags if g != "O"})
        for key, rows in row_sets(args.rows, name, args.seeds_below).items():
            sets = [(key, rows, None)]
            if args.recheck:
                kept, log = recheck(rows, args.recheck, types, split_stats(args.data_dir, name))
                sets.append((f"{key}+{'+'.join(args.recheck)}", kept, log))
            for label, rs, log in sets:
                silver = predict_tags(model, tokenizer, [r["tokens"] for r in rs])
                res["row_sets"][label] = {**agreement([(r["tokens"], r["tags"]) for r in rs], silver),
                                          **({"recheck": log} if log is not None else {}),
                                          "disagreements": disagreements(rs, silver)}
        per[name] = res
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))
        g = res["gold_test"]
        print(f"{name}: gold test precision {g['precision']} recall {g['recall']} ({g['entities']} entities)")
        for key, r in res["row_sets"].items():
            print(f"  {key}: precision {r['precision']} {r['precision_95']} recall {r['recall']} "
                  f"({r['rows']} rows, {r['entities']} entities)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
