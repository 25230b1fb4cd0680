"""A row treatment of the 200-seed protocol that reads an LLM cell's rows with a trained token tagger
(``protocol200``'s ``/seed_tagger`` after a cell's generator commit): what a stronger untagged-mention gate than the
split tagger's rule would do to the same rows, without generating them again.

A tagger trained on the 200 seeds alone (what an ``@seeds`` augmenter has), by the recipe of the protocol's ``noaug``
cell (same encoder, steps and first training seed), reads each row; a row in which it tags a mention that overlaps
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

from hf_rgda.tagger_gate import missed_mentions

#: the treatments ``protocol200`` knows beside the checker's rules
TREATMENTS = ("seed_tagger",)


def seed_tagger(seeds: Any, labels: Sequence[str], steps: int, args: argparse.Namespace, cache: Path) -> tuple[Any, Any, dict]:
    """The tagger of the ``noaug`` recipe (``seeds``: a Dataset of tokens and ClassLabel tags), trained or loaded."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from hf_rgda.train import TrainConfig, train_ner

    out = cache / f"{args.dataset}-{len(seeds)}seeds-s{args.sample_seed}-{Path(args.encoder).name}-{steps}steps"
    info_path = out / "seed_tagger.json"
    if not info_path.exists():
        start = time.perf_counter()
        cfg = TrainConfig(model=args.encoder, epochs=args.epochs, max_steps=steps, batch_size=args.train_batch,
                          learning_rate=args.lr, seed=1000)
        trainer, _ = train_ner(seeds, output_dir=out, config=cfg, label_names=list(labels))
        trainer.save_model(str(out))
        trainer.processing_class.save_pretrained(str(out))
        info_path.write_text(json.dumps({"dataset": args.dataset, "seeds": len(seeds), "encoder": args.encoder,
                                         "steps": steps, "seconds": round(time.perf_counter() - start, 1)}, indent=1))
    model = AutoModelForTokenClassification.from_pretrained(str(out))
    return model, AutoTokenizer.from_pretrained(str(out)), json.loads(info_path.read_text())


def drop_missed(rows: list[dict], predicted: Sequence[Sequence[str]]) -> tuple[list[dict], list[dict]]:
    """``rows`` split into those whose tags cover every mention ``predicted`` tags and those that miss one."""
    kept, dropped = [], []
    for r, p in zip(rows, predicted, strict=True):
        (dropped if missed_mentions(r["tags"], p) else kept).append(r)
    return kept, dropped
