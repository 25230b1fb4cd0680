"""The checker against human annotation: what the deterministic quality floor says of gold test sentences.

Every sentence ``RGDAAugmenter`` keeps must pass ``Checker`` (built from the train split's statistics, lexicon and
tokenization, exactly as ``RGDAAugmenter.from_dataset`` builds it). Run on the *test* split's gold sentences (those
with at least one entity, as the pipeline only augments such seeds), each checked as if an LLM had written it from
a random train seed, the rules should rarely fire: what they reject here is what they would wrongly reject in
generated text (or a place where the annotation itself is inconsistent). Reported per dataset and rule: rejections
without repairs (``salvage=False``), and with them (``salvage=True``, the default) the rows repaired and still
rejected; a few examples of each, to read. No LLM call is made.

With ``--rows``, the same checker also reads the rows a ``protocol.py`` results file stores (see :func:`stored_rows`):
what rules added since say of rows the pipeline accepted.

Usage:
    python -m benchmarks.checker_gold --datasets ncbi_disease scierc fin
    python -m benchmarks.checker_gold --datasets ncbi_disease scierc fin --rows benchmarks/results/protocol/protocol.json
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import header, load, parser
from hf_rgda import RGDAAugmenter
from hf_rgda.records import Candidate, Seed
from hf_rgda.tags import tags_to_spans


@functools.cache
def _load(data_dir: Path, name: str) -> tuple[Any, RGDAAugmenter]:
    """The dataset's splits and the augmenter built from its train split (its checker), read once per dataset for
    the gold check and ``--rows`` alike; the local backend is not loaded: no LLM call is made."""
    dsd = load(data_dir, name)
    return dsd, RGDAAugmenter.from_dataset(dsd["train"])


def run(data_dir: Path, name: str, examples: int, sample_seed: int, min_outside: int | None,
        share: float | None = None) -> dict:
    dsd, aug = _load(data_dir, name)
    train, test = dsd["train"], dsd["test"]
    seeds = [Seed(str(i), tuple(t), tuple(g)) for i, (t, g) in enumerate(zip(train["tokens"], train["ner_tags"]))
             if any(x != "O" for x in g)]
    out: dict = {}
    for mode, salvage in (("strict", False), ("salvage", True)):
        rng = random.Random(sample_seed)  # both modes see the same seeds
        check = aug.checker(salvage=salvage)
        if min_outside is not None:
            check = dataclasses.replace(check, atypical_min_outside=min_outside)
        if share is not None:
            check = dataclasses.replace(check, atypical_share=share)
        reasons: Counter[str] = Counter()
        repairs: Counter[str] = Counter()
        repaired_rows = 0
        shown: dict[str, list[str]] = {}
        n = 0
        for tokens, tags in zip(test["tokens"], test["ner_tags"]):
            if not tags_to_spans(list(tags), strict=False):
                continue
            n += 1
            seed = rng.choice(seeds)
            cand = check.check(Candidate(raw=None, tokens=list(tokens), tags=list(tags)), seed, [],
                               forbid_seed_entities=False)
            if cand.salvaged:
                repaired_rows += 1
                for r in cand.salvaged:
                    repairs[r.split(":")[0]] += 1
                    shown.setdefault(f"repair {r.split(':')[0]}", []).append(f"{' '.join(tokens)}  ->  {r}")
            if not cand.ok:
                reasons[cand.reason] += 1
                shown.setdefault(cand.reason, []).append(f"{' '.join(tokens)}  ->  {cand.detail}")
        out[mode] = {"sentences": n, "rejected": sum(reasons.values()), "rejected_by_reason": dict(reasons.most_common()),
                     "repaired_rows": repaired_rows, "repairs_by_rule": dict(repairs.most_common()),
                     "examples": {k: v[:examples] for k, v in sorted(shown.items())}}
    return out


#: a seed without entities: checking a stored row against it applies every rule that does not read the seed
NEUTRAL_SEED = Seed("neutral", ("Results", "are", "shown", "."), ("O", "O", "O", "O"))


def stored_rows(data_dir: Path, path: Path, datasets: list[str], examples: int) -> dict:
    """The rows a ``protocol.py`` results file stores (``--rows``), per cell of ``datasets``, checked without repairs
    by today's checker for their dataset against :data:`NEUTRAL_SEED`: the rules that read the seed (copies of it,
    its context, its mentions) are not applied, so what this counts is what the seed-free rules, the ones added since
    the rows were made among them, say of rows the pipeline accepted."""
    cells = {k: c for k, c in json.loads(path.read_text())["cells"].items() if c.get("rows") and c["dataset"] in datasets}
    checks = {name: _load(data_dir, name)[1].checker(salvage=False) for name in {c["dataset"] for c in cells.values()}}
    out = {}
    for key, cell in cells.items():
        reasons: Counter[str] = Counter()
        shown: dict[str, list[str]] = {}
        for r in cell["rows"]:
            cand = checks[cell["dataset"]].check(Candidate(raw=None, tokens=list(r["tokens"]), tags=list(r["tags"])),
                                                 NEUTRAL_SEED, [], forbid_seed_entities=False)
            if not cand.ok:
                reasons[cand.reason] += 1
                shown.setdefault(cand.reason, []).append(f"{' '.join(r['tokens'])}  ->  {cand.detail}")
        out[f"{path.name}:{key}"] = {"rows": len(cell["rows"]), "rejected": sum(reasons.values()),
                                     "rejected_by_reason": dict(reasons.most_common()),
                                     "examples": {k: v[:examples] for k, v in sorted(shown.items())}}
    return out


def report(results: dict) -> str:
    lines = ["# The checker on gold test sentences\n",
             (f"Command: `{results['command']}`  \nMachine: {results['machine']}  \n"
              f"Code: commit {results['commit']}\n"),
             ("| dataset | gold sentences (with entities) | rejected, no repairs | by rule | with repairs: rows repaired "
              "| repairs by rule | still rejected | by rule |"), "|---|---|---|---|---|---|---|---|"]
    def fmt(d: dict) -> str:
        return ", ".join(f"{k} {c}" for k, c in d.items())

    for name, r in results["datasets"].items():
        s, v = r["strict"], r["salvage"]
        lines.append(f"| {name} | {s['sentences']} | {s['rejected']} ({100 * s['rejected'] / s['sentences']:.1f}%) | "
                     f"{fmt(s['rejected_by_reason'])} | {v['repaired_rows']} | {fmt(v['repairs_by_rule'])} | "
                     f"{v['rejected']} ({100 * v['rejected'] / v['sentences']:.1f}%) | {fmt(v['rejected_by_reason'])} |")
    if results.get("stored_rows"):
        lines += ["\n## Stored rows (`--rows`), no repairs, seed-free rules\n", "| cell | rows | rejected | by rule |",
                  "|---|---|---|---|"]
        lines += [f"| {k} | {r['rows']} | {r['rejected']} | {fmt(r['rejected_by_reason'])} |"
                  for k, r in results["stored_rows"].items()]
    for name, r in results["datasets"].items():
        lines.append(f"\n## {name}: examples (strict)\n")
        for k, ex in r["strict"]["examples"].items():
            lines.append(f"**{k}**\n")
            lines.extend(f"- {e}" for e in ex)
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--examples", type=int, default=5, help="examples shown per rule")
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--atypical-min-outside", type=int, default=None,
                   help="override the checker's floor of outside uses for atypical_head (default: the checker's own)")
    p.add_argument("--atypical-share", type=float, default=None,
                   help="override the checker's share below which a head is atypical of a type (default: its own)")
    p.add_argument("--rows", type=Path, default=None, metavar="PROTOCOL_JSON",
                   help="also check the rows a protocol.py results file stores (see stored_rows)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/checker_gold/checker_gold.json"))
    args = p.parse_args(argv)
    results = {**header("checker_gold", argv, note=""),
               "datasets": {name: run(args.data_dir, name, args.examples, args.sample_seed,
                                                       args.atypical_min_outside, args.atypical_share)
                            for name in args.datasets}}
    if args.rows is not None:
        results["stored_rows"] = stored_rows(args.data_dir, args.rows, args.datasets, args.examples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    md = report(results)
    args.out.with_suffix(".md").write_text(md)
    print(md.split("\n## ")[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
