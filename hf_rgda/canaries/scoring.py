"""How well a scorer separates good canaries from defective ones: :func:`auroc` (rank-based, ties averaged),
:func:`accuracy` at a threshold, :func:`choose_threshold` (:data:`THRESHOLD_RULE`) and :func:`evaluate`, which adds
the held-out figures and a per-class breakdown.

Example:
    >>> auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False])
    0.875
    >>> choose_threshold([0.9, 0.7, 0.6, 0.2], [True, True, False, False])
    0.7
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = ["THRESHOLD_RULE", "accuracy", "auroc", "balanced_accuracy", "choose_threshold", "evaluate", "halves", "sig4"]

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
    good = list(good)
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
    return {"n": len(labels), "auroc": _r(auroc(scores, good)), "thresholds": [_r(t) for t in thresholds],
            "heldout_accuracy": share(list(range(len(labels)))),
            "heldout_balanced_accuracy": None if None in recalls else _r(sum(recalls) / 2),
            "product_threshold": product_threshold,
            "accuracy_at_product_threshold": _r(accuracy(scores, good, product_threshold)),
            "balanced_accuracy_at_product_threshold": _r(balanced_accuracy(scores, good, product_threshold)),
            "per_class": classes}


def _r(x: float | None) -> float | None:
    return None if x is None else sig4(x)


def sig4(x: float) -> float:
    """``x`` to 4 significant digits: a score of 0.5 keeps 4 decimals, the sense reading's 1.2e-05 keeps its own.

    Example:
        >>> sig4(0.123456), sig4(1.23456e-05), sig4(0.0)
        (0.1235, 1.235e-05, 0.0)
    """
    return float(f"{x:.4g}")
