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
and guide canaries present a mention as a confuser category ("breast cancer" as a Gene): ``defects.py``.

Every sentence is one the pipeline could emit: at least 6 tokens and at most 320 characters of text (the composer
schema's cap). Per dataset and level, each defect class gets up to ``per_class`` canaries and ``good`` as many as
all defect classes together (half good, half defective; fewer where too few gold sentences can serve, as in FIN,
whose sentences mostly tag nothing). Each class draws its sentences in a shuffled order fixed by ``seed``, the
dataset, the level and the class, so adding a class changes no other class. FIN has no dev split: a fixed 25% of
train (seed ``seed``; 291 sentences, about its test split's 303) stands in for it, and the canaries say so.

Scoring (used by ``calibration.py``): :func:`auroc` (rank-based, ties averaged), :func:`accuracy` at a threshold,
:func:`choose_threshold` (chosen on one half, reported on the other: :data:`THRESHOLD_RULE`) and :func:`evaluate`,
which adds a per-class breakdown.

Usage (prints the count of each class; ``--out`` writes the canaries as JSON Lines):
    python benchmarks/canaries.py --data-dir ../shared/data --datasets ncbi_disease scierc fin --per-class 10
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_rgda.tags import detokenize, tags_to_spans

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:  # the benchmarks are scripts: a sibling is imported by its module name
    sys.path.insert(0, str(BENCH))
from defects import BUILDERS, LEVELS, Context, Sentence, build_guide, fits, guide_defect
from local_pipeline import DOMAINS

DEV_SHARE = 0.25  # of train, carved as dev where a dataset has none (FIN: 291 sentences, near its 303 test ones)


@dataclass(frozen=True)
class Gold:
    """The gold sentences canaries are built from.

    Attributes:
        name: the dataset's folder name.
        sentences: the dev sentences (tokens, IOB2 tags) in file order.
        types: the dataset's entity types, sorted.
        mentions: lower-cased texts of every gold mention in every split: never used as a wrongly tagged span.
        source: where the dev sentences come from.
    """

    name: str
    sentences: list[Sentence]
    types: tuple[str, ...]
    mentions: frozenset[str]
    source: str = "dev split"


@dataclass(frozen=True)
class Canary:
    """One canary: a tagged sentence and its label.

    Attributes:
        id: ``dataset/level/label/k``.
        label: ``good`` or the defect class.
        tokens, tags: the sentence (IOB2; an entity canary's span may carry a confuser type).
        source: index of the gold sentence in :attr:`Gold.sentences` it was built from (-1: another dataset's).
        span: entity level: ``(start, end, type presented)`` of the span under test.
        seed_tokens, seed_tags: row level: the seed sentence shown with the row.
        guide: guide level: the guide under test (``tokens``/``tags`` are the sentence it abstracts).
    """

    id: str
    dataset: str
    level: str
    label: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    source: int
    span: tuple[int, int, str] | None = None
    seed_tokens: tuple[str, ...] = ()
    seed_tags: tuple[str, ...] = ()
    guide: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def good(self) -> bool:
        """Whether the canary is correct (for an entity canary: whether its span under test is)."""
        return self.label == "good"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "good": self.good}


# ---------------------------------------------------------------- gold data
def domain(name: str) -> str:
    """The dataset's domain as the benchmarks describe it (its name for a dataset they do not know)."""
    return DOMAINS.get(name, name.replace("_", " "))


def load_gold(data_dir: Path, name: str, seed: int = 0) -> Gold:
    """The dev sentences of ``data_dir/name`` (a folder of split files; see :func:`hf_rgda.recipe.load_source`)."""
    from hf_rgda.recipe import load_source

    dsd = load_source(str(data_dir / name))
    splits = {k: _rows(dsd[k]) for k in sorted(dsd)}
    dev = next((k for k in ("dev", "validation") if k in splits), None)
    if dev is not None:
        sentences, source = splits[dev], f"{dev} split"
    else:
        train = splits["train"]
        k = max(1, round(DEV_SHARE * len(train)))
        keep = sorted(random.Random(f"{seed}/{name}/dev").sample(range(len(train)), k))
        sentences = [train[i] for i in keep]
        source = f"no dev split: {k} of {len(train)} train sentences ({DEV_SHARE:.0%}, fixed seed {seed}) carved as dev"
    mentions = {detokenize(t[s.start : s.end]).lower() for rows in splits.values() for t, g in rows for s in tags_to_spans(g)}
    types = sorted({s.label for rows in splits.values() for _, g in rows for s in tags_to_spans(g)})
    return Gold(name, sentences, tuple(types), frozenset(mentions), source)


def _rows(split: Any) -> list[Sentence]:
    names = getattr(getattr(split.features["ner_tags"], "feature", None), "names", None)
    return [(tuple(t), tuple(names[x] for x in g) if names else tuple(g)) for t, g in zip(split["tokens"], split["ner_tags"])]


# ---------------------------------------------------------------- assembly
def build_canaries(golds: Sequence[Gold], per_class: int, seed: int = 0,
                   levels: Sequence[str] = tuple(LEVELS)) -> list[Canary]:
    """Every canary of every dataset and level, in a fixed order; the same inputs give the same canaries."""
    out: list[Canary] = []
    for gold in golds:
        others = [s for g in sorted(golds, key=lambda g: g.name) if g.name != gold.name for s in g.sentences]
        for level in levels:
            ctx = Context(gold.name, gold.types, gold.mentions, gold.sentences, level, others)
            defects = [c for label in LEVELS[level] for c in _draw(ctx, label, per_class, seed)]
            out += _draw(ctx, "good", len(defects), seed) + defects
    return out


def _draw(ctx: Context, label: str, n: int, seed: int) -> list[Canary]:
    """Up to ``n`` canaries of class ``label``, from distinct gold sentences in an order fixed by the class."""
    rng = random.Random(f"{seed}/{ctx.name}/{ctx.level}/{label}")
    order = list(range(len(ctx.sentences)))
    rng.shuffle(order)
    starts = [i for i, (_, tags) in enumerate(ctx.sentences) if any(t != "O" for t in tags)]
    out: list[Canary] = []
    for i in order:
        if len(out) >= n:
            break
        tokens, tags = ctx.sentences[i]
        if not fits(tokens) or (ctx.level == "guide" and not 0 < len(tags_to_spans(tags)) <= 10):
            continue
        made = _make(ctx, label, i, rng, starts)
        if made is not None:
            out.append(Canary(id=f"{ctx.name}/{ctx.level}/{label}/{len(out)}", dataset=ctx.name, level=ctx.level,
                              label=label, source=-1 if label == "off_domain" else i, **made))
    return out


def _make(ctx: Context, label: str, i: int, rng: random.Random, starts: list[int]) -> dict[str, Any] | None:
    tokens, tags = ctx.sentences[i]
    if ctx.level == "guide":
        guide = build_guide(tokens, tags, domain(ctx.name))
        guide = guide if label == "good" else guide_defect(ctx, label, guide, tokens, rng)
        return None if guide is None else {"tokens": tokens, "tags": tags, "guide": guide}
    built = BUILDERS[label](ctx, tokens, tags, rng)
    if built is None or not fits(built[0]):
        return None
    new_tokens, new_tags, span = tuple(built[0]), tuple(built[1]), built[2]
    if ctx.level == "entity":
        return {"tokens": new_tokens, "tags": new_tags, "span": tuple(span)} if span is not None else None
    seed = i if label == "seed_copy" else _neighbour(ctx.sentences, i, starts)
    if seed is None:
        return None
    return {"tokens": new_tokens, "tags": new_tags, "seed_tokens": ctx.sentences[seed][0],
            "seed_tags": ctx.sentences[seed][1]}


def class_counts(canaries: Sequence[Canary]) -> dict[str, dict[str, int]]:
    """``{level: {label: count}}`` in the canaries' order."""
    out: dict[str, dict[str, int]] = {}
    for c in canaries:
        level = out.setdefault(c.level, {})
        level[c.label] = level.get(c.label, 0) + 1
    return out


def _neighbour(sentences: Sequence[Sentence], i: int, starts: list[int]) -> int | None:
    """The nearest sentence before ``i`` (else after it) that has an entity and other tokens."""
    k = bisect.bisect_left(starts, i)
    for j in [*reversed(starts[:k]), *starts[k:]]:
        if j != i and sentences[j][0] != sentences[i][0] and fits(sentences[j][0]):
            return j
    return None


# ---------------------------------------------------------------- scoring
THRESHOLD_RULE = ("predict good when score >= t; t is chosen on one half of the canaries among the scores seen there, "
                  "maximising balanced accuracy (the mean of the recall of good and of defective canaries), the "
                  "lowest t on a tie, and applied to the other half, and the other way round; halves: the good "
                  "canaries alternately, in order, and the defective ones likewise (grouped by class)")


def auroc(scores: Sequence[float], good: Sequence[bool]) -> float | None:
    """Area under the ROC curve: the chance that a good canary outscores a defective one, ties counting half
    (the rank-sum statistic with tied scores given their average rank). None without both kinds."""
    pos = sum(good)
    neg = len(good) - pos
    if not pos or not neg:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    lo = 0
    while lo < len(order):
        hi = lo
        while hi + 1 < len(order) and scores[order[hi + 1]] == scores[order[lo]]:
            hi += 1
        for k in range(lo, hi + 1):
            ranks[order[k]] = (lo + hi) / 2 + 1
        lo = hi + 1
    return (sum(r for r, g in zip(ranks, good) if g) - pos * (pos + 1) / 2) / (pos * neg)


def accuracy(scores: Sequence[float], good: Sequence[bool], threshold: float) -> float | None:
    """Share of canaries classified right when those scoring at least ``threshold`` are called good."""
    return sum((s >= threshold) == g for s, g in zip(scores, good)) / len(good) if good else None


def balanced_accuracy(scores: Sequence[float], good: Sequence[bool], threshold: float) -> float | None:
    """Mean over good and defective canaries (those present) of the share classified right at ``threshold``."""
    recalls = [accuracy([s for s, g in zip(scores, good) if g == kind], [kind] * good.count(kind), threshold)
               for kind in (True, False) if kind in good]
    return sum(recalls) / len(recalls) if recalls else None


def choose_threshold(scores: Sequence[float], good: Sequence[bool]) -> float | None:
    """The threshold of :data:`THRESHOLD_RULE` on these canaries; None without both kinds."""
    if all(good) or not any(good):
        return None
    return max(sorted(set(scores)), key=lambda t: (balanced_accuracy(scores, good, t), -t))


def halves(labels: Sequence[str]) -> list[int]:
    """0 or 1 per canary: the good canaries go to the two halves alternately, in order, and so do the defective
    ones (grouped by class, so each class splits evenly, and one-canary classes spread over both halves)."""
    seen: Counter[bool] = Counter()
    out = []
    for x in labels:
        out.append(seen[x == "good"] % 2)
        seen[x == "good"] += 1
    return out


def evaluate(labels: Sequence[str], scores: Sequence[float], product_threshold: float) -> dict[str, Any]:
    """AUROC, held-out accuracy (:data:`THRESHOLD_RULE`), accuracy at the product's own threshold, and per class
    its count, mean score, held-out accuracy and AUROC against the good canaries."""
    good = [x == "good" for x in labels]
    half = halves(labels)
    thresholds = [choose_threshold([s for s, h in zip(scores, half) if h == k], [g for g, h in zip(good, half) if h == k])
                  for k in (0, 1)]
    right = None if None in thresholds else [(s >= thresholds[1 - h]) == g for s, h, g in zip(scores, half, good)]

    def share(idx: list[int]) -> float | None:
        return _r(sum(right[i] for i in idx) / len(idx)) if right is not None and idx else None

    pos = [s for s, g in zip(scores, good) if g]
    classes = {}
    for label in dict.fromkeys(labels):
        idx = [i for i, x in enumerate(labels) if x == label]
        mine = [scores[i] for i in idx]
        versus = None if label == "good" else auroc(pos + mine, [True] * len(pos) + [False] * len(mine))
        classes[label] = {"n": len(idx), "mean_score": _r(sum(mine) / len(mine)), "heldout_accuracy": share(idx),
                          "auroc_vs_good": _r(versus)}
    recalls = [share([i for i, g in enumerate(good) if g == kind]) for kind in (True, False)]
    return {"n": len(labels), "auroc": _r(auroc(scores, good)), "thresholds": [_r(t) for t in thresholds], "heldout_accuracy": share(list(range(len(labels)))),
            "heldout_balanced_accuracy": None if None in recalls else _r(sum(recalls) / 2),
            "product_threshold": product_threshold,
            "accuracy_at_product_threshold": _r(accuracy(scores, good, product_threshold)),
            "balanced_accuracy_at_product_threshold": _r(balanced_accuracy(scores, good, product_threshold)),
            "per_class": classes}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


# ---------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc", "fin"])
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
