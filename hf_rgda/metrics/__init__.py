"""Metrics for NER augmentation: local ``evaluate`` modules, the paired bootstrap test, tag-quality rates.

The modules ``ner_seqeval`` and ``ner_bertscore`` ship inside the package and load offline with
``evaluate.load(metric_path(name))`` (the Hub's ``seqeval``/``bertscore`` scripts are downloads).

Example:
    >>> refs = [["B-Disease", "O"], ["O", "B-Disease"]]
    >>> round(entity_f1(sentence_counts(refs, refs)), 3)
    1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._exceptions import SchemaError
from ..tags import tags_to_spans

__all__ = [
    "bertscore",
    "entity_f1",
    "load_metric",
    "metric_path",
    "paired_bootstrap",
    "scheme_validity_rate",
    "sentence_counts",
    "seqeval",
    "tag_hallucination_rate",
]

_HERE = Path(__file__).parent


def metric_path(name: str) -> str:
    """Folder of a shipped metric module (``ner_seqeval`` or ``ner_bertscore``)."""
    path = _HERE / name
    if not (path / f"{name}.py").is_file():
        raise KeyError(f"no metric module {name!r}; shipped: ner_seqeval, ner_bertscore")
    return str(path)


def load_metric(name: str) -> Any:
    """``evaluate.load`` of a shipped module (offline)."""
    import evaluate

    return evaluate.load(metric_path(name))


def seqeval(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]], *, scheme: str = "IOB2",
            mode: str = "strict") -> dict[str, Any]:
    """Entity-level P/R/F1 through the shipped ``ner_seqeval`` module."""
    return load_metric("ner_seqeval").compute(predictions=[list(p) for p in predictions],
                                              references=[list(r) for r in references], scheme=scheme, mode=mode)


def bertscore(predictions: Sequence[str], references: Sequence[str], *, model: str = "sentence-transformers/all-MiniLM-L6-v2",
              num_layers: int | None = None) -> dict[str, Any]:
    """BERTScore through the shipped module; ``model`` is a folder or a Hub id resolved from the local cache.

    ``num_layers`` defaults to the encoder's last layer (recorded in the result).
    """
    folder = Path(model)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(model))
    if num_layers is None:
        import json

        num_layers = int(json.loads((folder / "config.json").read_text())["num_hidden_layers"])
    out = load_metric("ner_bertscore").compute(predictions=list(predictions), references=list(references),
                                               model_type=str(folder), num_layers=num_layers)
    out["mean_f1"] = sum(out["f1"]) / len(out["f1"]) if out["f1"] else float("nan")
    out["model"] = model
    return out


def sentence_counts(references: Sequence[Sequence[str]], predictions: Sequence[Sequence[str]],
                    scheme: str = "IOB2") -> list[tuple[int, int, int]]:
    """Per sentence (true positives, predicted entities, reference entities), entities read strictly in ``scheme``.

    Ill-formed pieces (an ``I-`` without its ``B-``) are not entities, as in seqeval's strict mode.
    """
    out = []
    for ref, pred in zip(references, predictions):
        r, p = set(_spans(ref, scheme)), set(_spans(pred, scheme))
        out.append((len(r & p), len(p), len(r)))
    return out


def _spans(tags: Sequence[str], scheme: str) -> list[Any]:
    try:
        return tags_to_spans(list(tags), scheme)
    except SchemaError:  # strict reading: drop ill-formed pieces, keep the well-formed entities
        good = list(tags)
        for i, t in enumerate(good):
            if t.startswith("I-") and (i == 0 or good[i - 1] == "O" or good[i - 1][2:] != t[2:]):
                good[i] = "O"
        return tags_to_spans(good, scheme, strict=False)


def entity_f1(counts: Sequence[tuple[int, int, int]]) -> float:
    """Micro F1 from per-sentence counts."""
    tp = sum(c[0] for c in counts)
    pred = sum(c[1] for c in counts)
    ref = sum(c[2] for c in counts)
    return 2 * tp / (pred + ref) if pred + ref else 0.0


def paired_bootstrap(references: Sequence[Sequence[str]], predictions_a: Sequence[Sequence[str]],
                     predictions_b: Sequence[Sequence[str]], *, resamples: int = 10_000, seed: int = 0,
                     scheme: str = "IOB2") -> dict[str, float]:
    """Paired bootstrap of ΔF1 = F1(a) − F1(b) over test sentences.

    Each resample draws sentences with replacement (the same draw for both systems) and recomputes both F1s.
    Two-sided p = 2·min(P(Δ ≤ 0), P(Δ ≥ 0)), capped at 1.

    Returns:
        ``delta`` (on the full set), ``p_value``, ``ci_low``/``ci_high`` (95 % percentile interval), ``resamples``,
        and ``quantiles``: the 0th..100th percentiles of the resampled deltas (enough to draw their distribution).
    """
    a = sentence_counts(references, predictions_a, scheme)
    b = sentence_counts(references, predictions_b, scheme)
    n = len(a)
    if n == 0:
        raise ValueError("no sentences to resample")
    import numpy as np

    ca, cb = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    rng = np.random.default_rng(seed)
    deltas = np.empty(resamples)
    for lo in range(0, resamples, 500):  # chunks keep memory at 500 x n indices
        idx = rng.integers(0, n, size=(min(500, resamples - lo), n))
        sa, sb = ca[idx].sum(axis=1), cb[idx].sum(axis=1)  # (chunk, 3): tp, predicted, reference
        f1a = np.divide(2 * sa[:, 0], sa[:, 1] + sa[:, 2], out=np.zeros(len(idx)), where=(sa[:, 1] + sa[:, 2]) > 0)
        f1b = np.divide(2 * sb[:, 0], sb[:, 1] + sb[:, 2], out=np.zeros(len(idx)), where=(sb[:, 1] + sb[:, 2]) > 0)
        deltas[lo : lo + len(idx)] = f1a - f1b
    le, ge = float(np.mean(deltas <= 0)), float(np.mean(deltas >= 0))
    low, high = np.percentile(deltas, [2.5, 97.5])
    return {"delta": entity_f1(a) - entity_f1(b), "p_value": min(1.0, 2 * min(le, ge)), "ci_low": float(low),
            "ci_high": float(high), "resamples": resamples,
            "quantiles": [round(float(q), 6) for q in np.percentile(deltas, np.arange(101))]}


def tag_hallucination_rate(tag_rows: Sequence[Sequence[str]], label_names: Sequence[str]) -> float:
    """Share of sentences carrying at least one tag outside ``label_names``."""
    allowed = set(label_names)
    rows = list(tag_rows)
    return sum(any(t not in allowed for t in tags) for tags in rows) / len(rows) if rows else 0.0


def scheme_validity_rate(tag_rows: Sequence[Sequence[str]], scheme: str = "IOB2") -> float:
    """Share of sentences whose tags are a valid sequence in ``scheme``."""
    rows = list(tag_rows)
    ok = 0
    for tags in rows:
        try:
            tags_to_spans(list(tags), scheme)
            ok += 1
        except SchemaError:
            pass
    return ok / len(rows) if rows else 1.0
