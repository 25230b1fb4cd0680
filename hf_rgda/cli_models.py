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

    g.add_argument("data", help="`hf-rgda augment --out` folder (or a saved DatasetDict with seed and augmented splits)")
    g.add_argument("--out", required=True, type=Path,
                   help="output folder: dataset/ (seed, augmented gated), tagger_gate.json, tagger_gate_rejections.jsonl, "
                        "and tagger/ where the gate was fit here")
    g.add_argument("--tagger", type=Path, default=None,
                   help="a gate's folder (an earlier --out's tagger/) instead of fine-tuning one on the seed split")
    add_columns(g)
    add_config_options(g, TrainConfig)
    g.set_defaults(max_steps=FIT_STEPS)


def gate(args: argparse.Namespace) -> int:
    """``hf-rgda gate``: fit (or load) the gate, run it over the augmented split, write the gated DatasetDict (its
    rejected rows out of the augmented split, as ``augment`` writes its own into rejections.jsonl), the counts and
    every row it rejected (text, reason, seed), all or nothing (:func:`~hf_rgda.outputs.write_outputs`)."""
    from datasets import DatasetDict

    from .outputs import check_out, write_outputs
    from .recipe import load_source
    from .records import SeedTrace
    from .tagger_gate import STAGE, TaggerGate
    from .train import TrainConfig

    check_out(args.out, [str(args.data)])
    dsd = load_source(str(args.data))
    if not {"seed", "augmented"} <= set(dsd):
        raise RGDAError(f"{args.data}: no seed and augmented splits (splits: {list(dsd)}): give an augment --out folder")
    cols = {"tokens_column": args.tokens_column, "tags_column": args.tags_column}
    tagger = args.tagger
    if tagger is None:
        tagger = args.out / "tagger"
        print(f"fine-tuning the gate's tagger on {len(dsd['seed'])} seed sentences into {tagger}")
        TaggerGate.fit(dsd["seed"], output_dir=tagger, config=config_from(args, TrainConfig), **cols)
    marked = dsd["augmented"].map(TaggerGate.load(tagger, keep_rejected=True, **cols), batched=True,
                                  load_from_cache_file=False, desc="tagger gate")
    found = [k for k, reason in enumerate(marked["rgda_reason"]) if reason.startswith(f"{STAGE}/")]
    traces = marked["rgda_trace"]
    records = {k for k in found if SeedTrace.read(traces[k]) is not None}  # rows the gate kept for their seed's record
    rejected = [{"source": marked["rgda_source"][k], "reason": marked["rgda_reason"][k],
                 "row": json.loads(traces[k]).get(STAGE, json.loads(traces[k]))["raw"]} for k in found]
    gated = marked.select(sorted(set(range(len(marked))) - set(found) | records))  # as augment's: accepted rows
    summary = {"data": str(args.data), "tagger": str(tagger), "read": dsd["augmented"]["rgda_status"].count("accepted"),
               "rejected": len(found), "augmented_rows_before": len(dsd["augmented"]), "augmented_rows_after": len(gated)}
    out = DatasetDict({**dsd, "augmented": gated})

    def rows(path: Path) -> None:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rejected))

    write_outputs(args.out, {"dataset": out.save_to_disk, "tagger_gate.json": lambda p: p.write_text(
        json.dumps(summary, indent=2)), "tagger_gate_rejections.jsonl": rows})
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.out}")
    return 0
