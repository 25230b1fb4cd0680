"""NER training and evaluation on the ``transformers`` Trainer API.

- :func:`align_labels`: a pure, batched tokenize-and-align function (first sub-word of a word labelled, the rest
  and special tokens -100). Sentences longer than ``max_length`` sub-words are cut into word windows (``"window"``,
  every word labelled once) or truncated (``"truncate"``); either way the counts are returned, never silent.
- :func:`train_ner`: ``AutoModelForTokenClassification`` + ``TrainingArguments`` + ``Trainer`` +
  ``DataCollatorForTokenClassification``; label maps from the dataset's features or the given names; seeds fixed.
- :func:`predict_tags` / :func:`evaluate_ner`: word-level predictions (windows merged back) and seqeval metrics
  through the shipped ``ner_seqeval`` module.

Example:
    >>> # model_dir, metrics = train_ner(train_ds, eval_ds, model="sentence-transformers/all-MiniLM-L6-v2", epochs=3)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, InputError
from .provision import resolve_model
from .tags import label_names_of, to_tag_names

__all__ = ["TrainConfig", "align_labels", "evaluate_ner", "predict_tags", "train_ner"]

log = logging.getLogger(__name__)
DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of :func:`train_ner` (recorded in model cards)."""

    model: str = field(default=DEFAULT_ENCODER, metadata={"help": "encoder folder or Hub id"})
    epochs: float = field(default=10.0, metadata={"help": "training epochs"})
    max_steps: int = field(default=-1, metadata={"help": "optimizer steps (overrides epochs when > 0)"})
    learning_rate: float = field(default=5e-5, metadata={"help": "peak learning rate"})
    batch_size: int = field(default=16, metadata={"help": "sentences per device batch"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay"})
    warmup_ratio: float = field(default=0.1, metadata={"help": "share of steps with linear warm-up"})
    max_length: int = field(default=256, metadata={"help": "sub-words per example"})
    long: str = field(default="window", metadata={"help": "'window' or 'truncate' sentences over max_length"})
    seed: int = field(default=42, metadata={"help": "random seed of initialisation, shuffling and dropout"})

    def __post_init__(self) -> None:
        if self.long not in ("window", "truncate"):
            raise ConfigError(f"long={self.long!r}: choose 'window' or 'truncate'")
        if self.max_length < 8:
            raise ConfigError(f"max_length={self.max_length} must be at least 8")


def _windows(word_lengths: Sequence[int], budget: int) -> list[tuple[int, int]]:
    """Split words into consecutive windows whose sub-word total fits ``budget`` (a longer word stands alone)."""
    out, start, used = [], 0, 0
    for i, n in enumerate(word_lengths):
        if used + n > budget and i > start:
            out.append((start, i))
            start, used = i, 0
        used += n
    out.append((start, len(word_lengths)))
    return out


def align_labels(batch: Mapping[str, list[Any]], tokenizer: Any, label2id: Mapping[str, int], *,
                 max_length: int = 256, long: str = "window", tokens_column: str = "tokens",
                 tags_column: str = "ner_tags", id2name: Sequence[str] | None = None) -> dict[str, list[Any]]:
    """Tokenize words and align word tags to sub-words (batched; may return more rows than it got).

    Returns ``input_ids``, ``attention_mask``, ``labels``, ``sentence_id`` and ``word_offset`` (where each window
    starts) and ``cut_words`` (words dropped by truncation, 0 with windows).

    Raises:
        InputError: a row's tokens and tags differ in length, or a tag is not in ``label2id``.
    """
    out: dict[str, list[Any]] = {k: [] for k in ("input_ids", "attention_mask", "labels", "sentence_id",
                                                 "word_offset", "cut_words")}
    budget = max_length - tokenizer.num_special_tokens_to_add(pair=False)
    for row, (words, tags) in enumerate(zip(batch[tokens_column], batch[tags_column])):
        if len(words) != len(tags):
            raise InputError(f"{len(words)} tokens but {len(tags)} tags", row=row)
        tags = [id2name[t] for t in tags] if id2name is not None and tags and not isinstance(tags[0], str) else tags
        unknown = [t for t in tags if t not in label2id]
        if unknown:
            raise InputError(f"tag {unknown[0]!r} is not in the label set {sorted(label2id)}", row=row)
        lengths = [max(1, len(tokenizer.tokenize(w))) if w else 1 for w in words] if words else []
        spans = _windows(lengths, budget) if long == "window" else [(0, len(words))]
        for lo, hi in spans:
            enc = tokenizer(list(words[lo:hi]) or [""], is_split_into_words=True, truncation=True,
                            max_length=max_length)
            labels, previous = [], None
            for wid in enc.word_ids():
                labels.append(-100 if wid is None or wid == previous else label2id[tags[lo + wid]])
                previous = wid
            kept = len({w for w in enc.word_ids() if w is not None})
            out["input_ids"].append(enc["input_ids"])
            out["attention_mask"].append(enc["attention_mask"])
            out["labels"].append(labels)
            out["sentence_id"].append(row if "__sentence_id" not in batch else batch["__sentence_id"][row])
            out["word_offset"].append(lo)
            out["cut_words"].append((hi - lo) - kept if words else 0)
    return out


def _encode(ds: Any, tokenizer: Any, label2id: Mapping[str, int], cfg: TrainConfig, names: Sequence[str]) -> Any:
    ds = ds.add_column("__sentence_id", list(range(len(ds))))
    enc = ds.map(align_labels, batched=True, remove_columns=ds.column_names, desc="aligning labels",
                 fn_kwargs={"tokenizer": tokenizer, "label2id": label2id, "max_length": cfg.max_length,
                            "long": cfg.long, "id2name": names})
    cut = sum(enc["cut_words"])
    if cut:
        log.warning("truncation dropped %d words beyond %d sub-words (use long='window' to keep them)", cut,
                    cfg.max_length)
    return enc


def train_ner(train_ds: Any, eval_ds: Any | None = None, *, output_dir: str | Path, config: TrainConfig | None = None,
              label_names: Sequence[str] | None = None, tokens_column: str = "tokens", tags_column: str = "ner_tags",
              report_to: str | list[str] = "none", **overrides: Any) -> tuple[Any, dict[str, Any]]:
    """Fine-tune a token-classification model; returns the ``Trainer`` and the final metrics.

    Args:
        train_ds: a split with tokens and tags (names or ``ClassLabel`` ids).
        eval_ds: optional split evaluated at the end (seqeval, strict IOB2).
        output_dir: where the model, tokenizer, ``train_config.json`` and ``metrics.json`` go.
        config: hyperparameters; ``**overrides`` replace fields of it.
        label_names: the label list (default: :func:`label_names_of` over both splits).
    """
    import dataclasses

    import torch
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    cfg = dataclasses.replace(config or TrainConfig(), **overrides)
    names = list(label_names or label_names_of(train_ds, *(x for x in [eval_ds] if x is not None),
                                               tags_column=tags_column))
    label2id = {n: i for i, n in enumerate(names)}
    set_seed(cfg.seed)
    source = resolve_model(cfg.model)
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModelForTokenClassification.from_pretrained(
        source, num_labels=len(names), id2label=dict(enumerate(names)), label2id=label2id)
    cols = [tokens_column, tags_column]
    train_enc = _encode(train_ds.select_columns(cols).rename_columns(
        {tokens_column: "tokens", tags_column: "ner_tags"}), tokenizer, label2id, cfg, names)
    args = TrainingArguments(
        output_dir=str(output_dir), num_train_epochs=cfg.epochs, max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate, per_device_train_batch_size=cfg.batch_size, weight_decay=cfg.weight_decay,
        warmup_steps=cfg.warmup_ratio, seed=cfg.seed, data_seed=cfg.seed, save_strategy="no", logging_steps=max(1, min(10, cfg.max_steps // 4)) if cfg.max_steps > 0 else 10,
        report_to=report_to, use_cpu=not torch.cuda.is_available(), disable_tqdm=False,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train_enc.remove_columns(["sentence_id", "word_offset",
                                                                                     "cut_words"]),
                      data_collator=DataCollatorForTokenClassification(tokenizer), processing_class=tokenizer)
    result = trainer.train()
    metrics: dict[str, Any] = {"train_loss": result.training_loss, "train_steps": result.global_step,
                               "train_examples": len(train_enc), "train_sentences": len(train_ds),
                               "truncated_words": sum(train_enc["cut_words"]),
                               "loss_history": [h["loss"] for h in trainer.state.log_history if "loss" in h]}
    out = Path(output_dir)
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    if eval_ds is not None:
        metrics["eval"] = evaluate_ner(trainer.model, tokenizer, eval_ds, tokens_column=tokens_column,
                                       tags_column=tags_column, max_length=cfg.max_length)
    (out / "train_config.json").write_text(json.dumps({**asdict(cfg), "label_names": names}, indent=2))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return trainer, metrics


def predict_tags(model: Any, tokenizer: Any, token_rows: Sequence[Sequence[str]], *, max_length: int = 256,
                 batch_size: int = 32) -> list[list[str]]:
    """Word-level tag names for each sentence (first sub-word's prediction; windows merged back)."""
    if not token_rows:
        return []
    if max_length < 8:
        raise ConfigError(f"max_length={max_length} must be at least 8")
    import torch
    from transformers import DataCollatorForTokenClassification

    names = [model.config.id2label[i] for i in range(len(model.config.id2label))]
    # aligned in memory (no Dataset, no progress bar): the tagger gate asks of one sentence at a time
    enc = align_labels({"tokens": [list(t) for t in token_rows], "ner_tags": [["O"] * len(t) for t in token_rows]},
                       tokenizer, {n: i for i, n in enumerate(names)}, max_length=max_length, id2name=names)
    out = [["O"] * len(t) for t in token_rows]
    model.eval()
    collate = DataCollatorForTokenClassification(tokenizer)
    # shortest first: a batch pads to its longest row, so sorting spares most of the padding on a real test split
    order = sorted(range(len(enc["input_ids"])), key=lambda i: len(enc["input_ids"][i]))
    with torch.no_grad():
        for lo in range(0, len(order), batch_size):
            rows = order[lo:lo + batch_size]
            batch = collate([{k: enc[k][i] for k in ("input_ids", "attention_mask", "labels")} for i in rows])
            # on the model's device (a GPU after Trainer moved it there); labels stay where they are, read below
            logits = model(input_ids=batch["input_ids"].to(model.device),
                           attention_mask=batch["attention_mask"].to(model.device)).logits
            pred = logits.argmax(-1).tolist()
            for k, i in enumerate(rows):
                word = enc["word_offset"][i]
                for pos, lab in enumerate(batch["labels"][k].tolist()):
                    if lab != -100:
                        out[enc["sentence_id"][i]][word] = names[pred[k][pos]]
                        word += 1
    return out


def evaluate_ner(model: Any, tokenizer: Any, ds: Any, *, tokens_column: str = "tokens", tags_column: str = "ner_tags",
                 max_length: int = 256, scheme: str = "IOB2", mode: str = "strict") -> dict[str, Any]:
    """seqeval metrics of ``model`` on split ``ds`` (through the shipped ``ner_seqeval`` module)."""
    from .metrics import seqeval

    refs = to_tag_names(ds, tags_column)
    preds = predict_tags(model, tokenizer, ds[tokens_column], max_length=max_length)
    return seqeval(preds, refs, scheme=scheme, mode=mode)
