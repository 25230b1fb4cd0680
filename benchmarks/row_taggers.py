"""A row treatment of the 200-seed protocol that reads an LLM cell's rows with a trained token tagger
(``protocol200``'s ``/seed_tagger`` after a cell's generator commit): what a stronger untagged-mention gate than the
split tagger's rule would do to the same rows, without generating them again.

The product's :class:`hf_rgda.TaggerGate`, fit on the 200 seeds alone (what an ``@seeds`` augmenter has) by the recipe
of the protocol's ``noaug`` cell (same encoder, steps, batch, learning rate and first training seed), reads each row; a row in which it tags a mention that overlaps
none of the row's own entities is dropped: a mention the row leaves untagged, by the seeds' own conventions. (A
tagger trained on the whole train split, ``benchmarks.silver``'s, would carry that split's 5,432 sentences into the
rows it tags: not a gate an ``@seeds`` augmenter could have.) The tagger is trained once per machine and kept under
``benchmarks/.cache/seed_tagger/``; the results record the machine.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: the treatments ``protocol200`` knows beside the checker's rules
TREATMENTS = ("seed_tagger",)


def tagger_folder(args: argparse.Namespace, seeds: int, steps: int) -> str:
    """The cache folder's name: everything the tagger's training reads (the training seed is 1000, the first run's)."""
    return (f"{args.dataset}-{seeds}seeds-s{args.sample_seed}-{Path(args.encoder).name}-{steps}steps-ep{args.epochs:g}"
            f"-lr{args.lr:g}-b{args.train_batch}-seed1000")


def seed_tagger(seeds: Any, labels: Sequence[str], steps: int, args: argparse.Namespace, cache: Path) -> tuple[Any, dict]:
    """The product's gate (:class:`hf_rgda.TaggerGate`) fit by the ``noaug`` recipe on ``seeds`` (a Dataset of tokens
    and ClassLabel tags), or loaded where this machine fit it before; with what its training took."""
    from hf_rgda import TaggerGate
    from hf_rgda.train import TrainConfig

    out = cache / tagger_folder(args, len(seeds), steps)
    info_path = out / "seed_tagger.json"
    if not info_path.exists():
        start = time.perf_counter()
        cfg = TrainConfig(model=args.encoder, epochs=args.epochs, max_steps=steps, batch_size=args.train_batch,
                          learning_rate=args.lr, seed=1000)
        TaggerGate.fit(seeds, output_dir=out, config=cfg, label_names=list(labels))
        info_path.write_text(json.dumps({"dataset": args.dataset, "seeds": len(seeds), "encoder": args.encoder,
                                         "steps": steps, "seconds": round(time.perf_counter() - start, 1)}, indent=1))
    return TaggerGate.load(out), json.loads(info_path.read_text())


def drop_missed(gate: Any, rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """``rows`` (tokens and tag names) split into those ``gate`` keeps and those it drops."""
    kept = gate({"tokens": [r["tokens"] for r in rows], "ner_tags": [r["tags"] for r in rows],
                 "index": list(range(len(rows)))})["index"]
    dropped = sorted(set(range(len(rows))) - set(kept))
    return [rows[k] for k in kept], [rows[k] for k in dropped]
