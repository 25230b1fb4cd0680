"""Calibration canaries: tagged sentences, built deterministically from gold dev sentences, each labelled ``good`` or
with the one defect it carries, and the scores that say how well a judge separates them.

Three levels, one per kind of judge:

- **entity** (the entity verifier: "is this span an X in this sentence?"): the gold sentence with one span under test,
  ``good`` (a gold mention with its gold type) or ``wrong_type`` (a gold mention presented as another type),
  ``ordinary_phrase`` (a content-word n-gram outside every mention, tagged), ``name_like`` (a capitalised or acronym
  word the gold leaves untagged, tagged: "BRCA1" as a Disease), ``boundary_cut`` (a multi-word mention without its
  first or last word), ``boundary_extended`` (a mention that absorbs its neighbouring word).
- **row** (the AC judge, the debate reviewer, the checker): the entity classes above applied to a whole row, plus
  ``mention_untagged`` (a gold mention left untagged), ``seed_copy`` (the row is its own seed), ``looped`` (a 4-word
  phrase written three times), ``garbled`` (a word cut and ended by U+FFFD), ``truncated`` (the sentence stops after a
  function word, "... compared to a"), ``off_domain`` (a gold sentence of another dataset, every tag O). Each row
  comes with the seed it was "written from": the nearest gold sentence before it in the file that has an entity (the
  same abstract or filing, mostly), or itself for ``seed_copy``.
- **guide** (the GR judge): a guide built from the gold sentence (:func:`build_guide`) with one injected defect:
  ``guide_wrong_type``, ``guide_missing_entity``, ``guide_entity_not_in_sentence``, ``guide_empty_context``.

How each class is made, and why a one-type dataset (NCBI-disease) has no row-level ``wrong_type`` while its entity
and guide canaries present a mention as a confuser category ("breast cancer" as a Gene): ``hf_rgda/canaries/defects.py``.

Every sentence is one the pipeline could emit: at least 6 tokens and at most 320 characters of text (the composer
schema's cap). Per dataset and level, each defect class gets up to ``per_class`` canaries and ``good`` as many as
all defect classes together (half good, half defective; fewer where too few gold sentences can serve, as in FIN,
whose sentences mostly tag nothing). Each class draws its sentences in a shuffled order fixed by ``seed``, the
dataset, the level and the class, so adding a class changes no other class. FIN has no dev split: a fixed 25% of
train (seed ``seed``; 291 sentences, about its test split's 303) stands in for it, and the canaries say so.

The canaries, their defects and their scoring are the package's (:mod:`hf_rgda.canaries`, which ``hf-rgda calibrate``
runs on a user's data); this script reads the benchmark datasets' layout (``DATA_DIR/NAME/{train,dev,test}.jsonl``),
names their domains, and re-exports the package's functions under their old names for ``calibration.py``.

Usage (prints the count of each class; ``--out`` writes the canaries as JSON Lines):
    python benchmarks/canaries.py --data-dir ../shared/data --datasets ncbi_disease scierc fin --per-class 10
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import DOMAINS, parser
from hf_rgda.canaries import (
    THRESHOLD_RULE,
    Canary,
    Gold,
    accuracy,
    auroc,
    balanced_accuracy,
    build_canaries,
    build_guide,
    choose_threshold,
    class_counts,
    evaluate,
    gold_from,
    halves,
)
from hf_rgda.canaries.defects import Sentence

__all__ = ["DEV_SHARE", "THRESHOLD_RULE", "Canary", "Gold", "accuracy", "auroc", "balanced_accuracy",
           "build_canaries", "build_guide", "choose_threshold", "class_counts", "domain", "evaluate", "halves",
           "load_gold"]

DEV_SHARE = 0.25  # of train, carved as dev where a dataset has none (FIN: 291 sentences, near its 303 test ones)


def domain(name: str) -> str:
    """The dataset's domain as the benchmarks describe it (its name for a dataset they do not know)."""
    return DOMAINS.get(name, name.replace("_", " "))


def load_gold(data_dir: Path, name: str, seed: int = 0) -> Gold:
    """The dev sentences of ``data_dir/name`` (a folder of split files; see :func:`hf_rgda.recipe.load_source`),
    or :data:`DEV_SHARE` of its train split where it has no dev split."""
    from hf_rgda.recipe import load_source

    dsd = load_source(str(data_dir / name))
    splits = {k: _rows(dsd[k]) for k in sorted(dsd)}
    dev = next((k for k in ("dev", "validation") if k in splits), None)
    return gold_from(name, splits, split=dev, holdout=None if dev else DEV_SHARE, seed=seed, domain=domain(name))


def _rows(split: Any) -> list[Sentence]:
    names = getattr(getattr(split.features["ner_tags"], "feature", None), "names", None)
    return [(tuple(t), tuple(names[x] for x in g) if names else tuple(g)) for t, g in zip(split["tokens"], split["ner_tags"])]


# ---------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__)
    p.add_argument("--per-class", type=int, default=10, help="canaries per defect class (good: as many as all defects)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the canaries here as JSON Lines")
    args = p.parse_args(argv)
    golds = [load_gold(args.data_dir, name, args.seed) for name in args.datasets]
    canaries = build_canaries(golds, args.per_class, args.seed)
    for gold in golds:
        print(f"{gold.name} ({gold.source}):")
        for level, counts in class_counts([c for c in canaries if c.dataset == gold.name]).items():
            print(f"  {level}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in canaries))
        print(f"wrote {len(canaries)} canaries to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
