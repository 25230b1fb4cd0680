"""BERTScore with a local encoder and an explicit layer count, as a local ``evaluate`` module that loads offline.

Used in hf_rgda for diversity: augmented sentences scored against their seeds (lower F1 = more diverse).
No baseline rescaling (none exists for the local encoders); raw scores are reported with the model and layer.
"""

import datasets
import evaluate

_KWARGS = """
Args:
    predictions: list of sentences (strings).
    references: list of sentences, one per prediction.
    model_type: a local model folder (or a Hub id resolvable offline).
    num_layers: the encoder layer whose embeddings are compared (required for a folder).
    batch_size: sentences per forward pass (default 64).
    idf: weight tokens by inverse document frequency over the references (default False).
"""


class NerBertscore(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description="BERTScore P/R/F1 with a local encoder", citation="Zhang et al., BERTScore (ICLR 2020)",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, model_type=None, num_layers=None, batch_size=64, idf=False):
        from bert_score import BERTScorer

        if not model_type or not num_layers:
            raise ValueError("model_type (a local encoder folder) and num_layers are required")
        scorer = BERTScorer(model_type=model_type, num_layers=int(num_layers), batch_size=batch_size, idf=idf,
                            idf_sents=references if idf else None, device="cpu")
        p, r, f = scorer.score(list(predictions), list(references))
        return {"precision": p.tolist(), "recall": r.tolist(), "f1": f.tolist(),
                "model_type": model_type, "num_layers": int(num_layers), "idf": idf}
