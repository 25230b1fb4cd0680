"""The tagger gate: a token tagger trained on the seeds reads the augmented rows, and a row in which it tags a mention
the row leaves untagged is rejected (``tagger_gate/untagged_mention``).

A row that leaves a mention untagged teaches the tagger trained on it that the mention is none; the checker's rules
and the split tagger's ``likely_mention`` rule find such rows with statistics and a linear model, and the
completeness check with the LLM. This gate is the stronger reader they approximate: the same encoder a user trains
on the rows, fine-tuned on the seeds first (minutes on a CPU: MiniLM-L6 for 500 steps is about 8 minutes on two
cores), then run over the finished rows once, in batches, as a ``datasets.map`` function. Measured on the 200-seed
protocol (NCBI-disease, 2096b68's rows): docs/decisions/tagger-gate.md.

Example:
    >>> # out = seeds.map(RGDAAugmenter.from_dataset(seeds), batched=True, remove_columns=seeds.column_names)
    >>> # gate = TaggerGate.fit(seeds, output_dir="seed-tagger")     # or TaggerGate.load("seed-tagger")
    >>> # out = out.map(gate, batched=True)    # flagged rows dropped (keep_rejected=True: kept, marked rejected)
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, InputError
from .tags import tags_to_spans

__all__ = ["TaggerGate", "missed_mentions"]

#: the gate's reason prefix in ``rgda_reason`` (beside the pipeline's ``<stage>/<reason>``)
STAGE = "tagger_gate"

#: optimizer steps of :meth:`TaggerGate.fit` unless the config says otherwise: the protocol's recipe (500 steps of
#: 16 sentences, the steps every cell of the 200-seed protocol trains for)
FIT_STEPS = 500


def missed_mentions(tags: Sequence[str], predicted: Sequence[str]) -> list[tuple[int, int, str]]:
    """The entities of ``predicted`` (start, end, type) that overlap none of ``tags``' entities: mentions a row leaves
    untagged. Both are IOB2 tag names, read leniently (a stray ``I-`` opens an entity).

    Example:
        >>> missed_mentions(["O", "B-Disease", "O", "O"], ["O", "B-Disease", "O", "B-Disease"])
        [(3, 4, 'Disease')]
    """
    taken = {i for s in tags_to_spans(list(tags), strict=False) for i in range(s.start, s.end)}
    return [(s.start, s.end, s.label) for s in tags_to_spans(list(predicted), strict=False)
            if not any(i in taken for i in range(s.start, s.end))]


class TaggerGate:
    """A ``datasets.map(batched=True)`` function over augmented rows: each row whose ``rgda_status`` is ``accepted``
    (every row, where the dataset has no such column) is tagged by the gate's tagger, and a row in which the tagger
    tags a mention overlapping none of the row's entities is rejected: dropped, or with ``keep_rejected`` kept with
    ``rgda_status`` ``rejected``, its tokens and tags emptied as the augmenter's rejected rows are, and its reason
    and its row (tokens, tags, the mentions found) in ``rgda_reason`` and ``rgda_trace``. Other rows pass unchanged.

    Build it with :meth:`fit` (trains the tagger on the seeds) or :meth:`load` (a folder :meth:`fit` wrote). It
    pickles as its folder and the weights' digest (``datasets`` fingerprints it so; each ``num_proc`` worker loads
    the model once). :attr:`counts` holds this process's rows read and rejected.

    Args:
        path: the folder of a token-classification model with its tokenizer (as :func:`~hf_rgda.train.train_ner`
            writes it).
        keep_rejected: keep the rejected rows, marked (needs an ``rgda_status`` column).
        tokens_column, tags_column: the rows' columns; tags as IOB2 names, or ids of the tagger's label list.
        batch_size: sentences per forward pass.
    """

    def __init__(self, path: str | Path, *, keep_rejected: bool = False, tokens_column: str = "tokens",
                 tags_column: str = "ner_tags", batch_size: int = 32) -> None:
        self.path = Path(path)
        weights = sorted(self.path.glob("*.safetensors")) or sorted(self.path.glob("*.bin"))
        if not (self.path / "config.json").is_file() or not weights:
            raise ConfigError(f"{self.path}: no token-classification model here (config.json and weights); "
                              "train one with TaggerGate.fit")
        config = json.loads((self.path / "config.json").read_text())
        labels = config.get("id2label") or {}
        self.label_names = [labels[str(i)] for i in range(len(labels))]
        if not any(n.startswith("B-") for n in self.label_names):
            raise ConfigError(f"{self.path}: its labels {self.label_names} are not IOB2 tags")
        digest = hashlib.sha256()
        for w in weights:
            with w.open("rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    digest.update(block)
        self.digest = digest.hexdigest()[:16]
        self.keep_rejected, self.batch_size = keep_rejected, batch_size
        self.tokens_column, self.tags_column = tokens_column, tags_column
        self.counts = {"read": 0, "rejected": 0}
        self._model: Any = None
        self._lock = threading.Lock()

    @classmethod
    def fit(cls, seeds: Any, *, output_dir: str | Path, config: Any = None, tokens_column: str = "tokens",
            tags_column: str = "ner_tags", keep_rejected: bool = False, **overrides: Any) -> TaggerGate:
        """Train the gate's tagger on ``seeds`` (a split with tokens and IOB2 tags: names or ``ClassLabel`` ids) with
        :func:`~hf_rgda.train.train_ner` (its :class:`~hf_rgda.train.TrainConfig`, ``max_steps`` :data:`FIT_STEPS`
        unless ``config`` or ``overrides`` say otherwise) into ``output_dir``, and return the gate."""
        from .train import TrainConfig, train_ner

        if len(seeds) == 0:
            raise InputError("TaggerGate.fit: the seed split has no rows")
        cfg = config or TrainConfig(max_steps=FIT_STEPS)
        train_ner(seeds, output_dir=output_dir, config=cfg, tokens_column=tokens_column, tags_column=tags_column,
                  **overrides)
        return cls(output_dir, keep_rejected=keep_rejected, tokens_column=tokens_column, tags_column=tags_column)

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> TaggerGate:
        """The gate of a folder :meth:`fit` wrote (``kwargs``: as the constructor's)."""
        return cls(path, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k not in ("_model", "_lock", "counts")}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        vars(self).update(state)
        self.counts, self._model, self._lock = {"read": 0, "rejected": 0}, None, threading.Lock()

    def __repr__(self) -> str:
        return f"TaggerGate({str(self.path)!r}, labels={self.label_names}, keep_rejected={self.keep_rejected})"

    def _tagger(self) -> tuple[Any, Any]:
        with self._lock:
            if self._model is None:
                from transformers import AutoModelForTokenClassification, AutoTokenizer

                self._model = (AutoModelForTokenClassification.from_pretrained(str(self.path)),
                               AutoTokenizer.from_pretrained(str(self.path)))
            return self._model

    def _names(self, k: int, tags: Sequence[Any]) -> list[str]:
        if all(isinstance(t, str) for t in tags):
            return list(tags)
        try:
            return [self.label_names[int(t)] for t in tags]
        except (IndexError, ValueError, TypeError):
            raise InputError(f"row {k}: tags {list(tags)[:8]} are neither IOB2 names nor ids of the gate's labels "
                             f"{self.label_names}") from None

    def __call__(self, batch: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
        """The batch with the rows the tagger finds a mention missing in rejected (see the class)."""
        from .train import predict_tags

        for col in (self.tokens_column, self.tags_column):
            if col not in batch:
                raise InputError(f"the rows have no {col!r} column (columns: {sorted(batch)})")
        status = batch.get("rgda_status")
        if self.keep_rejected and status is None:
            raise InputError("keep_rejected=True marks rejected rows in rgda_status, which these rows do not have")
        n = len(batch[self.tokens_column])
        read = [k for k in range(n) if status is None or status[k] == "accepted"]
        for k in read:
            if len(batch[self.tokens_column][k]) != len(batch[self.tags_column][k]):
                raise InputError(f"row {k}: {len(batch[self.tokens_column][k])} tokens but "
                                 f"{len(batch[self.tags_column][k])} tags")
        model, tokenizer = self._tagger()
        predicted = predict_tags(model, tokenizer, [batch[self.tokens_column][k] for k in read],
                                 batch_size=self.batch_size)
        found: dict[int, list[tuple[int, int, str]]] = {}
        for k, pred in zip(read, predicted):
            if missed := missed_mentions(self._names(k, batch[self.tags_column][k]), pred):
                found[k] = missed
        self.counts["read"] += len(read)
        self.counts["rejected"] += len(found)
        if not self.keep_rejected:
            return {c: [v for k, v in enumerate(vals) if k not in found] for c, vals in batch.items()}
        out = {c: list(vals) for c, vals in batch.items()}
        for k, missed in found.items():
            tokens = list(batch[self.tokens_column][k])
            texts = [f"{' '.join(tokens[a:b])!r} ({label})" for a, b, label in missed]
            out["rgda_status"][k] = "rejected"
            if "rgda_reason" in out:
                out["rgda_reason"][k] = (f"{STAGE}/untagged_mention: {', '.join(texts)} left untagged; the tagger "
                                         "trained on the seeds tags it")
            if "rgda_trace" in out:
                out["rgda_trace"][k] = json.dumps({"tokens": tokens, "tags": self._names(k, batch[self.tags_column][k]),
                                                   "missed": [list(m) for m in missed]}, ensure_ascii=False)
            out[self.tokens_column][k], out[self.tags_column][k] = [], []
        return out
