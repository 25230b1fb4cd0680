"""The tagger gate: a token tagger trained on the seeds reads the augmented rows, and a row in which it tags a mention
the row leaves untagged is rejected (``tagger_gate/untagged_mention``).

A row that leaves a mention untagged teaches the tagger trained on it that the mention is none; the checker's rules
and the split tagger's ``likely_mention`` rule find such rows with statistics and a linear model, and the
completeness check with the LLM. This gate is the stronger reader they approximate: the same encoder a user trains
on the rows, fine-tuned on the seeds first (minutes on a CPU: MiniLM-L6 for 500 steps is about 8 minutes on two
cores), then run over the finished rows once, in batches, as a ``datasets.map`` function. Measured on the 200-seed
protocol (NCBI-disease, 2096b68's rows): docs/decisions/tagger-gate.md.

Run over finished rows, the gate can only drop them; given to the augmenter (``tagger_gate``), the checker's
``seed_tagger_mention`` rule asks it of each sentence as it is written (:meth:`TaggerGate.predict`), so the composer's
top-up asks again for a seed it left short.

Example:
    >>> # gate = TaggerGate.fit(seeds, output_dir="seed-tagger")     # or TaggerGate.load("seed-tagger")
    >>> # out = seeds.map(RGDAAugmenter.from_dataset(seeds), batched=True, remove_columns=seeds.column_names)
    >>> # out = out.map(gate, batched=True)    # flagged rows dropped (keep_rejected=True: kept, marked rejected)
    >>> # or inside the pipeline, replaced by the top-up:
    >>> # out = seeds.map(RGDAAugmenter.from_dataset(seeds, tagger_gate=gate), batched=True, ...)
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, InputError, SchemaError
from ._source import hash_extras
from .records import SeedTrace
from .tags import SCHEMES, convert_tags, format_inline, tags_to_spans

__all__ = ["TaggerGate", "missed_mentions"]

#: the gate's reason prefix in ``rgda_reason`` (beside the pipeline's ``<stage>/<reason>``)
STAGE = "tagger_gate"

#: optimizer steps of :meth:`TaggerGate.fit` without a ``config``: the protocol's recipe (500 steps of 16 sentences,
#: what every cell of the 200-seed protocol trains for)
FIT_STEPS = 500

#: sentences whose tags :meth:`TaggerGate.predict` remembers (the oldest forgotten first)
MEMO_SIZE = 4096


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
    tags a mention overlapping none of the row's entities is rejected. By default it is dropped; with
    ``keep_rejected`` it stays with ``rgda_status`` ``rejected``, its tokens and tags emptied as the augmenter's
    rejected rows are, the reason in ``rgda_reason`` and the row (``raw``, ``[words](Type)`` marks) with the reason's
    ``detail`` in ``rgda_trace``. Other rows pass unchanged.

    A seed's record (the ``rgda_trace`` :class:`~hf_rgda.RunSummary` reads) is never lost: where it rides on a
    rejected row (``keep_originals=False``), it moves to the next kept row of the same seed in the batch, or, with
    none, the row stays, marked rejected, its tokens emptied, the record kept (the gate's finding under its
    ``tagger_gate`` key). The gate's rejections are not in the records: :attr:`counts` holds this process's rows read
    and rejected (zero where ``datasets`` served the map from its cache; per worker under ``num_proc``).

    Build it with :meth:`fit` (trains the tagger on the seeds) or :meth:`load` (a folder :meth:`fit` wrote). It
    pickles as its folder, the weights' digest and the library's code (``datasets`` fingerprints it so; each
    ``num_proc`` worker loads the model once).

    Args:
        path: the folder of a token-classification model with its tokenizer (as :func:`~hf_rgda.train.train_ner`
            writes it).
        keep_rejected: keep the rejected rows, marked (needs an ``rgda_status`` column).
        tokens_column, tags_column: the rows' columns.
        label_names: the label list the rows' tag ids index (``ClassLabel`` names); default the tagger's own.
        scheme: the rows' tag scheme (the tagger's labels are read in the scheme they were trained in).
        batch_size: sentences per forward pass.
        device: where the tagger runs (default: ``cuda`` where there is one, else the CPU).
    """

    def __init__(self, path: str | Path, *, keep_rejected: bool = False, tokens_column: str = "tokens",
                 tags_column: str = "ner_tags", label_names: Sequence[str] | None = None, scheme: str = "IOB2",
                 batch_size: int = 32, device: str | None = None) -> None:
        if scheme not in SCHEMES:
            raise ConfigError(f"scheme={scheme!r}: one of {', '.join(SCHEMES)}")
        self.path = Path(path)
        weights = sorted(self.path.glob("*.safetensors")) or sorted(self.path.glob("*.bin"))
        if not (self.path / "config.json").is_file() or not weights:
            raise ConfigError(f"{self.path}: no token-classification model here (config.json and weights); "
                              "train one with TaggerGate.fit")
        config = json.loads((self.path / "config.json").read_text())
        labels = config.get("id2label") or {}
        self.tagger_labels = [labels[str(i)] for i in range(len(labels))]
        if not any(n.startswith(("B-", "I-", "S-", "U-")) for n in self.tagger_labels):
            raise ConfigError(f"{self.path}: its labels {self.tagger_labels} are no entity tags")
        # the scheme the tagger was trained in, read from its labels (IOB1 and IO read as IOB2: an I- opens a mention)
        prefixes = {n[:2] for n in self.tagger_labels}
        self.tagger_scheme = "BILOU" if prefixes & {"U-", "L-"} else "BIOES" if prefixes & {"S-", "E-"} else "IOB2"
        self.label_names = list(label_names) if label_names is not None else list(self.tagger_labels)
        digest = hashlib.sha256()
        for w in weights:
            with w.open("rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    digest.update(block)
        self.digest = digest.hexdigest()[:16]
        self.metrics = json.loads((self.path / "metrics.json").read_text()) if (self.path / "metrics.json").is_file() \
            else None
        self.keep_rejected, self.batch_size, self.scheme, self.device = keep_rejected, batch_size, scheme, device
        self.tokens_column, self.tags_column = tokens_column, tags_column
        self.counts = {"read": 0, "rejected": 0}
        self._model: Any = None
        self._memo: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._lock = threading.Lock()

    @classmethod
    def fit(cls, seeds: Any, *, output_dir: str | Path, config: Any = None, eval_ds: Any = None,
            label_names: Sequence[str] | None = None, tokens_column: str = "tokens", tags_column: str = "ner_tags",
            **overrides: Any) -> TaggerGate:
        """Train the gate's tagger on ``seeds`` (a split with tokens and tags: names or ``ClassLabel`` ids) with
        :func:`~hf_rgda.train.train_ner` into ``output_dir``, and return the gate (its :attr:`metrics`: the training's,
        with ``eval`` where ``eval_ds`` is given: how well the tagger tags, hence how often it misreads a row).

        ``config``: a :class:`~hf_rgda.train.TrainConfig`, whole (default: ``TrainConfig(max_steps=FIT_STEPS)``);
        ``overrides``: fields of it (``max_steps=200``, ``batch_size=8``: the training batch); ``label_names``: the
        label list (default: the seeds' ``ClassLabel`` names, else their tags). The gate's own options
        (``keep_rejected``, ...) are the constructor's: ``TaggerGate.load(output_dir, ...)``."""
        from .train import TrainConfig, train_ner

        if len(seeds) == 0:
            raise InputError("TaggerGate.fit: the seed split has no rows")
        train_ner(seeds, eval_ds, output_dir=output_dir, config=config or TrainConfig(max_steps=FIT_STEPS),
                  label_names=label_names, tokens_column=tokens_column, tags_column=tags_column, **overrides)
        return cls(output_dir, tokens_column=tokens_column, tags_column=tags_column)

    @classmethod
    def for_seeds(cls, seeds: Any, output_dir: str | Path, *, label_names: Sequence[str] | None = None,
                  tokens_column: str = "tokens", tags_column: str = "ner_tags") -> TaggerGate:
        """:meth:`fit` (its default recipe) on ``seeds`` into ``output_dir``, unless the folder holds a gate this
        method fitted on the very same rows (its ``fitted_on.json``): a run resumed does not train it again."""
        from .train import TrainConfig

        folder, model = Path(output_dir), TrainConfig().model
        rows = [seeds[tokens_column][:], seeds[tags_column][:], list(label_names or []), FIT_STEPS, model]
        digest = hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()[:16]
        mark = folder / "fitted_on.json"
        if mark.is_file() and json.loads(mark.read_text()).get("seeds") == digest:
            return cls(folder, tokens_column=tokens_column, tags_column=tags_column)
        mark.unlink(missing_ok=True)  # a fit that dies halfway leaves no mark over its weights
        gate = cls.fit(seeds, output_dir=folder, label_names=label_names, tokens_column=tokens_column,
                       tags_column=tags_column)
        mark.write_text(json.dumps({"seeds": digest, "rows": len(seeds), "steps": FIT_STEPS, "model": model}))
        return gate

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> TaggerGate:
        """The gate of a folder :meth:`fit` wrote (``kwargs``: as the constructor's)."""
        return cls(path, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        # hashed by datasets with the package's code: an edited gate never reuses an older one's cached rows
        return {**{k: v for k, v in vars(self).items() if k not in ("_model", "_lock", "counts", "_memo")},
                "_hash_extras": hash_extras()}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        vars(self).update({k: v for k, v in state.items() if k != "_hash_extras"})
        self.counts, self._model, self._memo = {"read": 0, "rejected": 0}, None, {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TaggerGate({str(self.path)!r}, labels={self.tagger_labels}, keep_rejected={self.keep_rejected})"

    def ready(self) -> TaggerGate:
        """Load the tagger now (it loads on first use otherwise): the augmenter does so before a batch's first call,
        so that a gate whose folder a worker cannot read fails before anything is paid.

        Raises:
            ConfigError: the folder is not here (a Ray worker on another node: put it where every node reads it).
        """
        self._tagger()
        return self

    def _tagger(self) -> tuple[Any, Any]:
        with self._lock:
            if self._model is None:
                import torch
                from transformers import AutoModelForTokenClassification, AutoTokenizer

                if not (self.path / "config.json").is_file():
                    raise ConfigError(f"the tagger gate's folder {self.path} is not on this machine (a worker on "
                                      "another node reads it there: put it on storage every node reads)")
                # a process forked after its parent used CUDA cannot use it (datasets' num_proc after a GPU fit)
                bad_fork = getattr(torch.cuda, "_is_in_bad_fork", lambda: False)()
                model = AutoModelForTokenClassification.from_pretrained(str(self.path))
                model.to(self.device or ("cuda" if torch.cuda.is_available() and not bad_fork else "cpu"))
                self._model = model, AutoTokenizer.from_pretrained(str(self.path))
            return self._model

    @property
    def fitted_on_seeds(self) -> bool:
        """Whether :meth:`for_seeds` fitted it (a run's card can then say how to fit it again)."""
        return (self.path / "fitted_on.json").is_file()

    def predict_rows(self, token_rows: Sequence[Sequence[str]]) -> list[list[str]]:
        """The tagger's tags of each sentence, as IOB2 names (in batches of :attr:`batch_size`)."""
        from .train import predict_tags

        if not token_rows:
            return []
        model, tokenizer = self._tagger()
        rows = predict_tags(model, tokenizer, token_rows, batch_size=self.batch_size)
        if self.tagger_scheme == "IOB2":
            return rows
        # read leniently: a tagger choosing each word's tag alone writes what its scheme forbids ("B-X O" in BIOES)
        return [convert_tags(r, self.tagger_scheme, "IOB2", strict=False) for r in rows]

    def predict(self, tokens: Sequence[str]) -> tuple[str, ...]:
        """The tagger's IOB2 tags of one sentence, remembered (the checker reads a sentence again after a repair or
        in the variety pass): what the ``seed_tagger_mention`` rule asks (:class:`~hf_rgda.RGDAAugmenter`'s
        ``tagger_gate``)."""
        key = tuple(tokens)
        with self._lock:
            hit = self._memo.get(key)
        if hit is None:
            hit = tuple(self.predict_rows([key])[0])
            with self._lock:
                if len(self._memo) >= MEMO_SIZE:
                    self._memo.pop(next(iter(self._memo)))
                self._memo[key] = hit
        return hit

    def _iob2(self, k: int, tags: Sequence[Any]) -> list[str]:
        """Row ``k``'s tags as IOB2 names."""
        if not all(isinstance(t, str) for t in tags):
            bad = [t for t in tags if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < len(self.label_names)]
            if bad:
                raise InputError(f"row {k} of this batch: tag {bad[0]!r} is neither a tag name nor an id of the labels "
                                 f"{self.label_names} (map with with_indices=True to find it)")
            tags = [self.label_names[t] for t in tags]
        try:
            return list(tags) if self.scheme == "IOB2" else convert_tags(tags, self.scheme, "IOB2")
        except SchemaError as err:
            raise InputError(f"row {k} of this batch: {err}") from None

    def __call__(self, batch: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
        """The batch with the rows the tagger finds a mention missing in rejected (see the class)."""
        for col in (self.tokens_column, self.tags_column):
            if col not in batch:
                raise InputError(f"the rows have no {col!r} column (columns: {sorted(batch)})")
        status = batch.get("rgda_status")
        if self.keep_rejected and status is None:
            raise InputError("keep_rejected=True marks rejected rows in rgda_status, which these rows do not have")
        out = {c: list(vals) for c, vals in batch.items()}
        tokens, tags = out[self.tokens_column], out[self.tags_column]
        read = [k for k in range(len(tokens)) if status is None or status[k] == "accepted"]
        iob2 = {}
        for k in read:
            if len(tokens[k]) != len(tags[k]):
                raise InputError(f"row {k} of this batch: {len(tokens[k])} tokens but {len(tags[k])} tags")
            iob2[k] = self._iob2(k, tags[k])
        if not read:
            return out
        found = {}
        for k, pred in zip(read, self.predict_rows([tokens[k] for k in read])):
            if missed := missed_mentions(iob2[k], pred):
                found[k] = missed
        with self._lock:
            self.counts["read"] += len(read)
            self.counts["rejected"] += len(found)
        drop = set()
        traces = out.get("rgda_trace")
        for k, missed in found.items():
            texts = ", ".join(f"{' '.join(tokens[k][a:b])!r} ({label})" for a, b, label in missed)
            detail = f"{texts} left untagged; the tagger trained on the seeds tags it"
            finding = {"raw": format_inline(tokens[k], iob2[k]), "detail": detail}
            record = traces[k] if traces is not None and SeedTrace.read(traces[k]) is not None else None
            if record is not None:  # the seed's record: onto its next kept row here, else it keeps this one
                source = out.get("rgda_source")
                heir = next((j for j in range(k + 1, len(tokens)) if j not in found and not traces[j]
                             and (source is None or source[j] == source[k])), None)
                if heir is not None:
                    traces[heir], record = traces[k], None
            if not self.keep_rejected and record is None:
                drop.add(k)
                continue
            if status is not None:
                out["rgda_status"][k] = "rejected"
            if "rgda_reason" in out:
                out["rgda_reason"][k] = f"{STAGE}/untagged_mention: {detail}"
            if traces is not None:
                traces[k] = json.dumps({**json.loads(record), STAGE: finding} if record else finding, ensure_ascii=False)
            tokens[k], tags[k] = [], []
        return {c: [v for k, v in enumerate(vals) if k not in drop] for c, vals in out.items()}
