"""The ``hf-rgda`` commands that train or read a token-classification model: ``train``, ``evaluate`` and ``gate``
(:class:`~hf_rgda.TaggerGate` over an ``augment --out`` folder)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._cli_options import add_columns, add_config_options, config_from
from ._exceptions import RGDAError

__all__ = ["evaluate", "evaluate_parser", "gate", "gate_parser", "train", "train_parser"]


def train_parser(t: argparse.ArgumentParser) -> None:
    from .train import TrainConfig

    t.add_argument("data", help="augment --out folder, saved DatasetDict, folder of {train,dev,test}.jsonl, or Hub id")
    t.add_argument("--splits", nargs="+", default=None,
                   help="splits concatenated for training (default: seed + augmented if present, else train)")
    t.add_argument("--eval-data", default=None, help="dataset holding the evaluation split (default: data)")
    t.add_argument("--eval-split", default=None, help="split evaluated after training (default: none)")
    t.add_argument("--out", required=True, type=Path, help="model output folder")
    add_columns(t)
    add_config_options(t, TrainConfig)


def evaluate_parser(e: argparse.ArgumentParser) -> None:
    e.add_argument("model", help="trained model folder (or Hub id)")
    e.add_argument("data", help="dataset (as for train)")
    e.add_argument("--split", default="test")
    e.add_argument("--mode", default="strict", choices=["strict", "default"], help="seqeval mode (default: strict)")
    e.add_argument("--out", type=Path, default=None, help="metrics JSON file (default: print only)")
    add_columns(e)


def train(args: argparse.Namespace) -> int:
    from datasets import concatenate_datasets

    from .recipe import load_source
    from .train import TrainConfig, train_ner

    dsd = load_source(args.data)
    splits = args.splits or (["seed", "augmented"] if {"seed", "augmented"} <= set(dsd) else ["train"])
    missing = [s for s in splits if s not in dsd]
    if missing:
        raise RGDAError(f"split(s) {missing} not in {args.data}; splits are {list(dsd)}")
    cols = [args.tokens_column, args.tags_column]
    train = concatenate_datasets([dsd[s].select_columns(cols) for s in splits if len(dsd[s])])
    eval_ds = None
    if args.eval_split:
        edd = load_source(args.eval_data) if args.eval_data else dsd
        if args.eval_split not in edd:
            raise RGDAError(f"eval split {args.eval_split!r} not found; splits are {list(edd)}")
        eval_ds = edd[args.eval_split]
    cfg = config_from(args, TrainConfig)
    print(f"training {cfg.model} on {len(train)} sentences from {args.data} ({' + '.join(splits)})")
    _, metrics = train_ner(train, eval_ds, output_dir=args.out, config=cfg, tokens_column=args.tokens_column,
                           tags_column=args.tags_column)
    print(json.dumps({k: v for k, v in metrics.items() if k != "loss_history"}, indent=2))
    print(f"wrote {args.out}")
    return 0


def evaluate(args: argparse.Namespace) -> int:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from .provision import resolve_model
    from .recipe import load_split
    from .train import evaluate_ner

    split = load_split(args.data, args.split)
    source = resolve_model(args.model)
    model = AutoModelForTokenClassification.from_pretrained(source)
    tokenizer = AutoTokenizer.from_pretrained(source)
    metrics = evaluate_ner(model, tokenizer, split, tokens_column=args.tokens_column, tags_column=args.tags_column,
                           mode=args.mode)
    report = {"model": args.model, "data": args.data, "split": args.split, "sentences": len(split), "metrics": metrics}
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)
    return 0


def gate_parser(g: argparse.ArgumentParser) -> None:
    from .tagger_gate import FIT_STEPS
    from .train import TrainConfig

    g.add_argument("data", help="`hf-rgda augment --out` folder (or a saved DatasetDict of its seed and augmented splits "
                                "with their rgda_* columns)")
    g.add_argument("--out", required=True, type=Path,
                   help="output folder: dataset/ (seed, augmented gated), tagger_gate.json, tagger_gate_rejections.jsonl, "
                        "and tagger/ where the gate is fit here")
    g.add_argument("--tagger", type=Path, default=None,
                   help="a gate's folder (an earlier --out's tagger/) instead of fine-tuning one on the seed split; "
                        "the training options below then do nothing")
    g.add_argument("--scheme", default="IOB2", help="tag scheme of the data (default: IOB2)")
    add_columns(g)
    add_config_options(g, TrainConfig, defaults={"max_steps": FIT_STEPS})  # --max-steps -1 trains by --epochs


def gate(args: argparse.Namespace) -> int:
    """``hf-rgda gate``: fit (or load) the gate, run it over the augmented split, write the gated DatasetDict (its
    rejected rows out of the augmented split, as ``augment`` writes its own into rejections.jsonl), the counts and
    every row it rejected (text, reason, seed). The three are written all or nothing
    (:func:`~hf_rgda.outputs.write_outputs`); a tagger fit here goes to ``OUT/tagger`` first."""
    from datasets import DatasetDict

    from .outputs import check_out, write_outputs
    from .recipe import load_source
    from .tagger_gate import STAGE, TaggerGate
    from .tags import label_names_of
    from .train import TrainConfig

    check_out(args.out, [str(args.data)])
    data, out_dir = Path(args.data).resolve(), args.out.resolve()
    if data.exists() and (out_dir in data.parents or data in out_dir.parents):
        raise RGDAError(f"--out {args.out}: the data {args.data} is inside it (or it inside the data); give another")
    dsd = load_source(str(args.data))
    if not {"seed", "augmented"} <= set(dsd):
        raise RGDAError(f"{args.data}: no seed and augmented splits (splits: {list(dsd)}): give an augment --out folder")
    rows_need = {args.tokens_column, args.tags_column}
    for split, need in (("seed", rows_need), ("augmented", rows_need | {"rgda_status", "rgda_reason", "rgda_trace",
                                                                        "rgda_source"})):
        missing = sorted(need - set(dsd[split].column_names))
        if missing:
            raise RGDAError(f"{args.data}: the {split} split has no {', '.join(missing)} column(s) (columns: "
                            f"{dsd[split].column_names}): give an augment --out folder")
    augmented = dsd["augmented"]
    cols = {"tokens_column": args.tokens_column, "tags_column": args.tags_column}
    tagger = args.tagger
    if tagger is None and augmented["rgda_status"].count("accepted"):
        tagger = args.out / "tagger"
        if tagger.exists():
            raise RGDAError(f"{tagger} holds a tagger from an earlier run: reuse it with --tagger {tagger}, or remove it")
        print(f"fine-tuning the gate's tagger on {len(dsd['seed'])} seed sentences into {tagger}")
        TaggerGate.fit(dsd["seed"], output_dir=tagger, config=config_from(args, TrainConfig), **cols)
    found: list[int] = []
    marked = augmented
    if tagger is not None:
        gate_fn = TaggerGate.load(tagger, keep_rejected=True, scheme=args.scheme,
                                  label_names=label_names_of(augmented, tags_column=args.tags_column), **cols)
        marked = augmented.map(gate_fn, batched=True, load_from_cache_file=False, keep_in_memory=True,
                               desc="tagger gate")
        found = [k for k, reason in enumerate(marked["rgda_reason"]) if reason.startswith(f"{STAGE}/")]
    traces = {k: json.loads(marked["rgda_trace"][k]) for k in found}
    rejected = [{"source": marked["rgda_source"][k], "reason": marked["rgda_reason"][k],
                 "row": traces[k].get(STAGE, traces[k])["raw"]} for k in found]
    kept = sorted(set(range(len(marked))) - {k for k in found if STAGE not in traces[k]})
    gated = marked.select(kept, keep_in_memory=True)  # a row kept for its seed's record stays, marked (keep_originals off)
    summary = {"data": str(args.data), "tagger": str(tagger) if tagger else None,
               "read": augmented["rgda_status"].count("accepted"), "rejected": len(found),
               "augmented_rows_before": len(augmented), "augmented_rows_after": len(gated)}
    out = DatasetDict({**dsd, "augmented": gated})

    def rows(path: Path) -> None:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rejected))

    write_outputs(args.out, {"dataset": out.save_to_disk, "tagger_gate.json": lambda p: p.write_text(
        json.dumps(summary, indent=2)), "tagger_gate_rejections.jsonl": rows})
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.out}")
    return 0
