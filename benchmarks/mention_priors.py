"""Does the split's prior help the completeness check? The mention canaries read three ways (issue #57).

The completeness check (``hf_rgda.stages.completeness``) asks the entity verifier about the untagged spans the
split's statistics propose and calls a row incomplete where one gets P(type) >= ``verify_threshold``. Each proposal
also carries a prior from the split alone (``scored_proposals``: the smoothed head share of its last word, or the
new-term score). This probe reads the calibration's mention canaries (``novel_untagged``, ``mention_untagged`` and
as many good rows; ``hf_rgda.canaries``) and scores each row by its most suspicious proposal, read as:

- ``p``: the verifier's P(type), as the check runs today;
- ``prior``: the split's prior alone (no model);
- ``geomean``: the geometric mean of the two.

AUROC (good rows against each class and pooled) for each reading. Every call goes through the calibration's response
cache (``benchmarks/.cache/calibration.sqlite3``), so a rerun, or a run after ``benchmarks.calibration --scorers
mentions`` on the same canaries, pays nothing. Example::

    python -m benchmarks.mention_priors --datasets ncbi_disease fin scierc --seed 1 \\
        --out benchmarks/results/calibration/mention_priors_seed1.json
"""

from __future__ import annotations

import argparse
import asyncio
import math
from pathlib import Path
from typing import Any

from hf_rgda import DEFAULT_LLM
from hf_rgda.cache import ResponseCache
from hf_rgda.canaries import build_canaries
from hf_rgda.canaries.scoring import auroc
from hf_rgda.llm import load_llm
from hf_rgda.stages.completeness import scored_proposals
from hf_rgda.tags import detokenize

from .calibration import make_judges, only_classes
from .canaries import load_gold
from .common import command, machine, write_results

CLASSES = ("novel_untagged", "mention_untagged")
READINGS = {"p": lambda p, prior: p, "prior": lambda p, prior: prior, "geomean": lambda p, prior: math.sqrt(p * prior)}


async def probe(llm: Any, gold: Any, canaries: list[Any], data_dir: Path, cache: ResponseCache,
                seed: int) -> dict[str, Any]:
    """Each canary's proposals with P and prior, and the AUROC of each reading for one dataset."""
    judges = make_judges(llm, gold, cache, data_dir, {}, {"check_mentions": True, "mention_listing": False}, None,
                         seed)
    checker = judges.stages["mention_check"].run.checker
    rows = []
    try:
        for c in canaries:
            await judges.mentions(c)
            asked = {(text, label): p for text, label, p in judges.details[c.id]["untagged"]}
            spans = [{"text": (text := detokenize(c.tokens[s.start:s.end])), "type": s.label, "prior": round(prior, 4),
                      "p": asked.get((text, s.label))}
                     for s, prior in scored_proposals(c.tokens, c.tags, checker.stats, checker.types)]
            rows.append({"id": c.id, "label": c.label, "spans": spans})
    finally:
        await llm.aclose()
    metrics = {}
    for name, read in READINGS.items():
        scores = [1 - max((read(s["p"] or 0.0, s["prior"]) for s in r["spans"]), default=0.0) for r in rows]
        good = [r["label"] == "good" for r in rows]
        cell = {"pooled": auroc(scores, good)}
        for cls in CLASSES:
            keep = [i for i, r in enumerate(rows) if r["label"] in ("good", cls)]
            cell[cls] = auroc([scores[i] for i in keep], [good[i] for i in keep])
        metrics[name] = {k: None if v is None else round(v, 3) for k, v in cell.items()}
    return {"canaries": len(rows), "auroc": metrics, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "fin", "scierc"])
    p.add_argument("--per-class", type=int, default=15)
    p.add_argument("--seed", type=int, default=1, help="the canaries' draw (and the carved dev split's)")
    p.add_argument("--cache", type=Path, default=Path("benchmarks/.cache/calibration.sqlite3"))
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    golds = [load_gold(args.data_dir, name, args.seed) for name in args.datasets]
    canaries = only_classes(build_canaries(golds, args.per_class, args.seed), list(CLASSES))
    cache, llm = ResponseCache(args.cache), load_llm(DEFAULT_LLM)  # the model loaded once, for every dataset
    result: dict[str, Any] = {"command": command("mention_priors", argv), "machine": machine(), "llm": DEFAULT_LLM,
                              "seed": args.seed, "per_class": args.per_class, "datasets": {}}
    for gold in golds:
        mine = [c for c in canaries if c.dataset == gold.name]
        result["datasets"][gold.name] = cell = asyncio.run(probe(llm, gold, mine, args.data_dir, cache, args.seed))
        print(gold.name, cell["auroc"], flush=True)
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
