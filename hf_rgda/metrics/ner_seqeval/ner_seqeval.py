"""Entity-level precision, recall and F1 (seqeval), as a local ``evaluate`` module that loads offline.

Returns the keys of the Hub's ``seqeval`` metric (``overall_precision``, ``overall_recall``, ``overall_f1``,
``overall_accuracy`` and one ``{precision, recall, f1, number}`` dict per type) plus the ``scheme`` and ``mode``
used, so results record how they were computed.

Example:
    >>> import evaluate, hf_rgda.metrics as m
    >>> metric = evaluate.load(m.metric_path("ner_seqeval"))  # doctest: +SKIP
    >>> metric.compute(predictions=[["B-PER", "O"]], references=[["B-PER", "O"]], scheme="IOB2", mode="strict")  # doctest: +SKIP
"""

import datasets
import evaluate

_DESCRIPTION = "Entity-level P/R/F1 of tag sequences with seqeval; explicit scheme and mode."
_KWARGS = """
Args:
    predictions: list of tag sequences.
    references: list of tag sequences of the same lengths.
    scheme: IOB1, IOB2, IOE1, IOE2, IOBES or BILOU (default IOB2).
    mode: "strict" (entities must be well formed in the scheme) or "default" (conlleval: an I- may start one).
    zero_division: value for undefined precision/recall (default 0).
"""


class NerSeqeval(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation="Nakayama, seqeval (2018)", inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string")),
                                        "references": datasets.Sequence(datasets.Value("string"))}),
        )

    def _compute(self, predictions, references, scheme="IOB2", mode="strict", zero_division=0):
        from seqeval import metrics
        from seqeval import scheme as schemes

        for i, (p, r) in enumerate(zip(predictions, references)):
            if len(p) != len(r):
                raise ValueError(f"sentence {i}: {len(p)} predicted tags for {len(r)} reference tags")
        if mode not in ("strict", "default"):
            raise ValueError(f"mode={mode!r}: choose 'strict' or 'default'")
        kw = {"mode": "strict", "scheme": getattr(schemes, scheme)} if mode == "strict" else {}
        report = metrics.classification_report(references, predictions, output_dict=True,
                                               zero_division=zero_division, **kw)
        out = {}
        for name, score in report.items():
            if name in ("micro avg", "macro avg", "weighted avg"):
                continue
            out[name] = {"precision": float(score["precision"]), "recall": float(score["recall"]),
                         "f1": float(score["f1-score"]), "number": int(score["support"])}
        micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0})
        out["overall_precision"] = float(micro["precision"])
        out["overall_recall"] = float(micro["recall"])
        out["overall_f1"] = float(micro["f1-score"])
        out["overall_accuracy"] = float(metrics.accuracy_score(references, predictions))
        out["scheme"], out["mode"] = scheme, mode
        return out
