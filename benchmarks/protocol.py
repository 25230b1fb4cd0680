"""The paper's evaluation protocol (R-GDA, Sec. 4) on NCBI-disease, SciERC and FIN, at a scale you choose.

Per dataset: sample ``--num-seeds`` seed sentences from train (fixed sample seed, at least one entity), augment them
``--ratio`` : 1 with every method, train the encoder on seeds + augmented, score entity-level F1 (seqeval, strict
IOB2) on the test split, BERTScore of augmented sentences against their seeds (diversity, lower = more diverse),
and a paired bootstrap of ΔF1 = F1(R-GDA) − F1(method) over test sentences for every other method. Each method is trained twice: at equal
epochs, and at equal optimizer steps (every method gets the steps a full 1:ratio augmented set takes at
``--epochs``, so seeds-only training runs more epochs), because augmentation also buys more optimizer steps; where
the two schedules coincide (the method's rows fill as many batches per epoch as a full set) it is trained once.
``--runs`` repeats training with other seeds; a later call with a larger ``--runs`` adds the missing runs to a finished
cell when the rerun builds the same training rows (checked by their SHA-256), so runs can grow across sessions.

Methods: ``noaug`` (seeds only), ``eda``, ``mr`` (mention replacement), and the LLM methods ``naive``, ``gda``,
``rgda``, ``rgda-no-gr``, ``rgda-no-ac``, and a method with a ``local_pipeline.py`` variant: ``rgda+noverify`` (the
entity verifier off), ``rgda+debate`` (one response cache: calls they share are paid once). The LLM methods'
augmenter takes its statistics and entity hints from the whole train split (``from_dataset(train)``), which the
baselines never see; ``mr-train`` (MR drawing from every train mention) and any LLM method with ``@seeds``
(``rgda@seeds``: statistics and hints from the seeds alone, as a user holding only them) level that
(``row_sources.py`` measures what the hints carry). Every figure is
written to ``--out`` after each cell, so a stop loses nothing; a rerun skips finished cells (the cache makes the
LLM part of an interrupted cell free). ``--report`` writes the markdown table (Table 1 layout) and plots.

Plots: F1 bars (equal epochs / equal steps), refinement rounds per seed (Fig. 4), bootstrap ΔF1 violins (Fig. 10)
and, once a dataset has been run at several ``--num-seeds``, F1 against seed count (Fig. 3).

The LLM methods reuse ``benchmarks/local_pipeline.py``'s answers when given its cache and its chunking
(``--cache benchmarks/.cache/local_pipeline_v3.sqlite3 --batch-size 5``): same seeds (the sample of N seeds is the
prefix of a larger one), same prompts, same derived call seeds.

Usage:
    python -m benchmarks.protocol --datasets ncbi_disease scierc fin --methods noaug eda mr --num-seeds 50
    python -m benchmarks.protocol --report
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import DATA_DIR, DOMAINS, header, load, seed_key

METHODS = ["noaug", "eda", "mr", "naive", "gda", "rgda-no-gr", "rgda-no-ac", "rgda"]
BASELINES = ("noaug", "eda", "mr", "mr-train")  # the methods without an LLM (their rows are not stored)
PAPER = {  # Table 1 (Gemini-2.5 Flash rows and EDA), F1 / BERTScore: SciERC, NCBI, FIN
    "eda": ((.5434, .8062, .7953), (.986, .987, .981)),
    "naive": ((.5263, .7727, .8412), (.897, .901, .921)),
    "gda": ((.5067, .7921, .8498), (.812, .853, .821)),
    "rgda": ((.5463, .8182, .8474), (.719, .750, .783)),
    "rgda-no-ac": ((.5294, .8035, .8387), (None, None, None)),
    "rgda-no-gr": ((.5418, .8112, .8417), (None, None, None)),
}
ORDER = {"scierc": 0, "ncbi_disease": 1, "fin": 2}


def splits(data_dir: Path, name: str) -> tuple[Any, Any]:
    dsd = load(data_dir, name)
    return dsd["train"], dsd["test"]


def augment(method: str, name: str, train: Any, seeds: Any, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """Augmented rows only (tokens, ner_tags) for ``method``, and the LLM run's summary (judge rounds and
    scores, calls, rejections) for the LLM methods."""
    from hf_rgda import RGDAAugmenter
    from hf_rgda.baselines import EDA, MentionReplacement, mention_inventory
    from hf_rgda.recipe import augment as run_recipe

    if method == "noaug":
        return seeds.select([]), {}
    if method == "eda":
        aug = EDA(num_augmented=args.ratio, seed=args.sample_seed)
    elif method in ("mr", "mr-train"):  # mr-train: every mention of the train split, as the LLM methods' hints
        pool = seeds if method == "mr" else train
        aug = MentionReplacement(mention_inventory(pool["tokens"], pool["ner_tags"]), num_augmented=args.ratio,
                                 seed=args.sample_seed)
    else:  # "rgda+noverify": a method with one of local_pipeline's variants (COMBOS); "rgda@seeds": the augmenter's
        # statistics and entity hints from the seeds alone (as a user holding only them), not the whole train split
        from benchmarks.local_pipeline import COMBOS

        variant, _, stats = method.partition("@")
        if stats not in ("", "seeds"):
            raise SystemExit(f"{method}: the statistics come from the train split or from '@seeds'")
        base, _, combo = variant.partition("+")
        aug = RGDAAugmenter.from_dataset(seeds if stats else train, llm=args.llm, method=base, num_augmented=args.ratio,
                                         cache=args.cache, domain=DOMAINS.get(name, ""), **COMBOS[combo] if combo else {})
    # the recipe refuses rows that disagree with their traces (a stale datasets cache)
    run = run_recipe(seeds, aug, batch_size=args.batch_size, load_from_cache_file=False, desc=f"{name}/{method}")
    summary = {}
    if run.summary is not None:
        d = run.summary.to_dict()
        summary = {k: d[k] for k in ("accepted", "rejected_by_reason", "failed_seeds", "calls", "judge_rounds",
                                     "judge_scores", "judge_passed_early")}
    return run.with_status("accepted"), summary


def training_rows(seeds: Any, aug: Any) -> Any:
    """Seeds then augmented rows (tokens, ner_tags), held in memory: with no cache file behind them, ``datasets``
    cannot hand the training step a tokenization cached from other rows under the same fingerprint."""
    from datasets import Dataset, concatenate_datasets

    cols = ["tokens", "ner_tags"]
    rows = concatenate_datasets([seeds.select_columns(cols), aug.select_columns(cols)])
    return Dataset.from_dict(rows.to_dict(), features=rows.features)


def diversity(aug: Any, seeds: Any, args: argparse.Namespace) -> float | None:
    """Mean BERTScore F1 of augmented sentences against their own seed sentences."""
    from hf_rgda.metrics import bertscore

    if len(aug) == 0 or "rgda_source" not in aug.column_names:
        return None
    text = {}
    for toks, tags in zip(seeds["tokens"], seeds["ner_tags"]):
        text[seed_key(toks, tags)] = " ".join(toks)
    pairs = [(" ".join(t), text[s]) for t, s in zip(aug["tokens"], aug["rgda_source"]) if s in text]
    if not pairs:
        return None
    res = bertscore([p for p, _ in pairs], [r for _, r in pairs], model=args.bertscore_model)
    return round(res["mean_f1"], 4)


def train_eval(train_rows: Any, test: Any, *, steps: int, run: int, args: argparse.Namespace) -> dict[str, Any]:
    from hf_rgda.metrics import seqeval
    from hf_rgda.tags import to_tag_names
    from hf_rgda.train import TrainConfig, predict_tags, train_ner

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(model=args.encoder, epochs=args.epochs, max_steps=steps, batch_size=args.train_batch,
                          learning_rate=args.lr, seed=1000 + run)
        trainer, metrics = train_ner(train_rows, output_dir=tmp, config=cfg,
                                     label_names=args.labels)
        preds = predict_tags(trainer.model, trainer.processing_class, test["tokens"])
    refs = to_tag_names(test)
    m = seqeval(preds, refs)
    return {"f1": round(m["overall_f1"], 4), "precision": round(m["overall_precision"], 4),
            "recall": round(m["overall_recall"], 4), "steps": metrics["train_steps"],
            "seconds": round(time.perf_counter() - start, 1), "predictions": preds}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc", "fin"])
    p.add_argument("--methods", nargs="+", default=METHODS)
    p.add_argument("--num-seeds", type=int, default=200)
    p.add_argument("--ratio", type=int, default=3, help="augmented sentences per seed (paper: 3)")
    p.add_argument("--runs", type=int, default=3, help="training runs with different seeds")
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--encoder", default="sentence-transformers/all-mpnet-base-v2")
    p.add_argument("--bertscore-model", default="sentence-transformers/all-MiniLM-L6-v2")
    p.add_argument("--epochs", type=float, default=10)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--train-batch", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=8, help="seeds per augmentation batch")
    p.add_argument("--llm", default=None, help="LLM for the LLM methods (default: the embedded local model)")
    p.add_argument("--cache", type=Path, default=Path("benchmarks/.cache/protocol.sqlite3"))
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/protocol/protocol.json"))
    p.add_argument("--report", action="store_true", help="only write the markdown table and plots from --out")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--recheck", action="store_true",
                   help="rebuild the rows of finished cells too, and start over those whose rows changed (after a "
                        "checker change; without it a finished cell is kept as it is)")
    p.add_argument("--rerun", action="store_true",
                   help="start every requested cell over, its stored runs dropped (after a fix to the training path)")
    args = p.parse_args(argv)
    if args.llm is None:
        from hf_rgda import DEFAULT_LLM

        args.llm = DEFAULT_LLM
    results = json.loads(args.out.read_text()) if args.out.exists() else {"cells": {}}
    if args.report:
        refresh_bootstraps(results, args)
        args.out.write_text(json.dumps(compact(results), indent=1))
        return report(results, args.out)
    results.setdefault("runs_config", {})
    head = header("protocol", argv)
    results["machine"], cmd = head["machine"], head["command"]
    results.setdefault("commands", [])
    if cmd not in results["commands"]:
        results["commands"].append(cmd)

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(compact(results), indent=1))

    from hf_rgda.recipe import sample_seeds
    from hf_rgda.tags import label_names_of

    args.commit = head["commit"]  # the code this process loaded: edits made while it runs do not reach it

    for name in args.datasets:
        train, test = splits(args.data_dir, name)
        args.labels = label_names_of(train, test)
        seeds = sample_seeds(train, args.num_seeds, sample_seed=args.sample_seed, min_entities=1)
        scale = f"{name}/seeds={len(seeds)}/ratio={args.ratio}/encoder={args.encoder}/epochs={args.epochs:g}"
        for method in args.methods:
            key = f"{scale}/{method}"
            old = results["cells"].get(key, {})
            if args.rerun:
                old = {}
            finished = old.get("complete") and len(old["runs"]) >= args.runs
            if finished and not args.recheck:
                continue
            start = time.perf_counter()
            aug, llm_summary = augment(method, name, train, seeds, args)
            rows = training_rows(seeds, aug)
            fingerprint = rows_fingerprint(rows)
            if old.get("rows_sha256") == fingerprint:  # same training rows: keep the finished runs, add the missing ones
                if finished:
                    print(f"{key}: training rows unchanged, its {len(old['runs'])} run(s) kept", flush=True)
                    continue
                cell = {k: v for k, v in old.items() if k != "complete"}
            else:
                cell = {"dataset": name, "method": method, "seeds": len(seeds), "augmented": len(aug),
                        "llm": llm_summary, "encoder": args.encoder, "epochs": args.epochs, "commit": args.commit,
                        "augment_seconds": round(time.perf_counter() - start, 1), "rows_sha256": fingerprint,
                        "bertscore_vs_seed": diversity(aug, seeds, args), "runs": []}
                if old.get("runs"):
                    print(f"{key}: training rows differ from the stored cell's (or it predates fingerprints); "
                          f"its {len(old['runs'])} run(s) are replaced", flush=True)
            if method not in BASELINES:  # an LLM method's rows, kept to be read and reused
                cell["rows"] = stored_rows(aug)
            full_steps = -(-len(seeds) * (1 + args.ratio) // args.train_batch) * int(args.epochs)
            for run in range(len(cell["runs"]), args.runs):
                epochs_run = train_eval(rows, test, steps=-1, run=run, args=args)
                # a method whose rows fill the same number of batches per epoch as a full 1:ratio set already ran the
                # equal-steps schedule (same steps, same seed, same data order): training it again would repeat it
                steps_run = (dict(epochs_run, same_run_as_equal_epochs=True) if epochs_run["steps"] == full_steps
                             else train_eval(rows, test, steps=full_steps, run=run, args=args))
                cell["runs"].append({"equal_epochs": {k: v for k, v in epochs_run.items() if k != "predictions"},
                                     "equal_steps": {k: v for k, v in steps_run.items() if k != "predictions"},
                                     "commit": args.commit})
                if run == 0:  # kept for the paired bootstrap of R-GDA against every other method
                    cell["_predictions"] = [epochs_run["predictions"]]
                results["cells"][key] = cell
                save()
            for mode in ("equal_epochs", "equal_steps"):
                f1s = [r[mode]["f1"] for r in cell["runs"]]
                cell[f"f1_{mode}"] = round(sum(f1s) / len(f1s), 4)
            cell["complete"] = True
            results["cells"][key] = cell
            save()
            print(f"{key}: F1 {cell['f1_equal_epochs']} (equal epochs), {cell['f1_equal_steps']} (equal steps), "
                  f"BERTScore {cell['bertscore_vs_seed']}, {len(aug)} augmented", flush=True)
        bootstrap(results, scale, test, args)
        save()
    return report(results, args.out)


def stored_rows(aug: Any) -> list[dict[str, Any]]:
    """An LLM method's augmented rows as the cell keeps them, to be read by eye and quoted: the sentence, its tags
    by name, the seed row it came from (``rgda_source``) and the checker's repairs (``rgda_reason``)."""
    from hf_rgda.tags import to_tag_names

    tags = to_tag_names(aug)
    return [{"tokens": list(t), "tags": list(g), "source": s, "repairs": r or None}
            for t, g, s, r in zip(aug["tokens"], tags, aug["rgda_source"], aug["rgda_reason"])]


def rows_fingerprint(rows: Any) -> str:
    """SHA-256 of the training rows (tokens and tags, in order): a stored cell's runs are extended only when a rerun
    builds exactly the same rows (a checker change, say, makes a new cell)."""
    h = hashlib.sha256()
    for toks, tags in zip(rows["tokens"], rows["ner_tags"]):
        h.update(json.dumps([list(toks), [t if isinstance(t, str) else int(t) for t in tags]]).encode())
    return h.hexdigest()


def compact(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` with each stored prediction (a list of tags) written as one space-joined string: the bootstrap
    keeps every cell's test predictions, and one JSON line per tag made the file several times larger."""
    cells = {k: {**c, "_predictions": [[t if isinstance(t, str) else " ".join(t) for t in run]
                                       for run in c["_predictions"]]} if c.get("_predictions") else c
             for k, c in results.get("cells", {}).items()}
    return {**results, "cells": cells}


def _tags(pred: list[Any]) -> list[list[str]]:
    """Predictions as tag lists, whether stored compactly (strings) or not."""
    return [p.split(" ") if isinstance(p, str) else list(p) for p in pred]


def bootstrap(results: dict[str, Any], scale: str, test: Any, args: argparse.Namespace) -> None:
    """Paired bootstrap of ΔF1 = F1(R-GDA) − F1(other) for every other method of the scale (first training run of
    each, equal epochs), as in the paper's Fig. 10."""
    from hf_rgda.metrics import paired_bootstrap
    from hf_rgda.tags import to_tag_names

    a = results["cells"].get(f"{scale}/rgda")
    if not (a and a.get("_predictions")):
        return
    refs = to_tag_names(test)
    out = results.setdefault("bootstrap", {}).setdefault(scale, {})
    variants = sorted({k.rsplit("/", 1)[1] for k in results["cells"] if k.startswith(f"{scale}/")} - set(METHODS))
    for method in METHODS + variants:
        b = results["cells"].get(f"{scale}/{method}")
        if method == "rgda" or not (b and b.get("_predictions")):
            continue
        pa, pb = _tags(a["_predictions"][0]), _tags(b["_predictions"][0])
        pair = hashlib.sha256(json.dumps([pa, pb]).encode()).hexdigest()[:16]
        if out.get(method, {}).get("pair") != pair:  # once per pair of first runs: a cell started over is redone
            out[method] = {**paired_bootstrap(refs, pa, pb, resamples=args.resamples), "pair": pair}


def refresh_bootstraps(results: dict[str, Any], args: argparse.Namespace) -> None:
    """Bring every scale's bootstrap up to date with its cells (for ``--report``)."""
    tests: dict[str, Any] = {}
    for scale in dict.fromkeys(k.rsplit("/", 1)[0] for k in results.get("cells", {})):
        name = scale.split("/", 1)[0]
        if name not in tests:
            tests[name] = splits(args.data_dir, name)[1]
        bootstrap(results, scale, tests[name], args)


def report(results: dict[str, Any], out: Path) -> int:
    """Markdown table in the layout of the paper's Table 1, next to the paper's numbers, and plots."""
    cells = [c for c in results.get("cells", {}).values() if c.get("complete")]
    if not cells:
        print("no complete cell yet")
        return 0
    datasets = sorted({c["dataset"] for c in cells}, key=lambda d: ORDER.get(d, 9))
    ran = {c["method"] for c in cells}  # the base methods in their order, then variants such as rgda+noverify
    methods = [m for m in METHODS if m in ran] + sorted(ran - set(METHODS))
    tables = []
    for (n_seeds, encoder, epochs) in sorted({(c["seeds"], c["encoder"], c["epochs"]) for c in cells}):
        group = [c for c in cells if (c["seeds"], c["encoder"], c["epochs"]) == (n_seeds, encoder, epochs)]
        ds = [d for d in datasets if any(c["dataset"] == d for c in group)]
        runs = sorted({len(c["runs"]) for c in group})
        lines = [f"## {n_seeds} seeds per dataset, encoder {encoder}, {epochs:g} epochs\n",
                 (f"F1: mean ± standard deviation over {' or '.join(map(str, runs))} training run(s) "
                  "(seeds 1000, 1001, ...).\n"),
                 "| method | " + " | ".join(f"F1 {d} (epochs / steps)" for d in ds) + " | "
                 + " | ".join(f"BERTScore {d}" for d in ds) + " | paper F1 (Gemini) " + " | ".join(ds) + " |",
                 "|---|" + "---|" * (3 * len(ds))]
        for m in methods:
            by_d = {c["dataset"]: c for c in group if c["method"] == m}
            if not by_d:
                continue
            f1 = [f"{_mean_sd(by_d[d], 'equal_epochs')} / {_mean_sd(by_d[d], 'equal_steps')}" if d in by_d else "—"
                  for d in ds]
            bs = [f"{by_d[d]['bertscore_vs_seed']:.3f}" if d in by_d and by_d[d]["bertscore_vs_seed"] is not None
                  else "—" for d in ds]
            paper = PAPER.get(m)
            pf = [f"{paper[0][ORDER[d]]:.4f}" if paper and d in ORDER else "—" for d in ds]
            lines.append(f"| {m} | " + " | ".join(f1) + " | " + " | ".join(bs) + " | " + " | ".join(pf) + " |")
        tables.append("\n".join(lines))
    scale = sorted({f"{c['dataset']}: {c['seeds']} seeds, {c['augmented']} augmented ({c['method']})" for c in cells})
    table = "\n\n".join(tables)
    (out.with_suffix(".md")).write_text(
        "# Protocol results\n\nCommands: " + "; ".join(f"`{c}`" for c in results.get("commands", [])) + "\n\nMachine: "
        + results.get("machine", "?") + "\n\n" + table + "\n\nScale per cell:\n\n" + "\n".join(f"- {s}" for s in scale)
        + "\n\n" + bootstrap_table(results.get("bootstrap", {})) + "\n" + rounds_table(cells) + "\n")
    plot(cells, datasets, methods, out.with_name(out.stem + "_f1.png"))
    plot_rounds(cells, out.with_name(out.stem + "_rounds.png"))
    plot_bootstrap(results.get("bootstrap", {}), out.with_name(out.stem + "_bootstrap.png"))
    plot_sweep(cells, out.with_name(out.stem + "_seeds.png"))
    print(table)
    return 0


def _sd(values: list[float]) -> float:
    """Sample standard deviation (0 for fewer than two values)."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _mean_sd(cell: dict[str, Any], mode: str) -> str:
    f1s = [r[mode]["f1"] for r in cell["runs"]]
    mean = statistics.mean(f1s)
    return f"{mean:.4f}" if len(f1s) < 2 else f"{mean:.4f} ± {_sd(f1s):.4f}"


def bootstrap_table(boot: dict[str, Any]) -> str:
    if not boot:
        return "Bootstrap ΔF1: needs an R-GDA cell and another method with predictions at the same scale (none yet).\n"
    lines = ["## Paired bootstrap, ΔF1 = F1(R-GDA) − F1(method), equal epochs, first run\n",
             ("Resampling test sentences measures the test set's sampling error for one pair of trained models; it "
              "says nothing of the spread between training runs (the ± column above), which at small scales is larger.\n"),
             "| scale | method | ΔF1 | 95% interval | two-sided p | resamples |", "|---|---|---|---|---|---|"]
    for scale, per in boot.items():
        for m, b in per.items():
            if "delta" in b:
                lines.append(f"| {scale} | {m} | {b['delta']:+.4f} | [{b['ci_low']:+.4f}, {b['ci_high']:+.4f}] | "
                             f"{_p(b['p_value'], b['resamples'])} | {b['resamples']} |")
    return "\n".join(lines) + "\n"


def _p(p: float, resamples: int) -> str:
    """A bootstrap p-value as text: no resample crossing zero means p below 1/resamples, not p = 0."""
    return f"< {1 / resamples:.4f}" if p == 0 else f"{p:.4f}"


def rounds_table(cells: list[dict[str, Any]]) -> str:
    rows = [(c, k, h) for c in cells for k, h in (c.get("llm") or {}).get("judge_rounds", {}).items() if h]
    if not rows:
        return ""
    lines = ["## Refinement rounds per seed (Fig. 4)\n", "| dataset | seeds | method | judge | rounds: seeds |",
             "|---|---|---|---|---|"]
    for c, k, h in rows:
        lines.append(f"| {c['dataset']} | {c['seeds']} | {c['method']} | {k.upper()} | "
                     + ", ".join(f"{r}: {n}" for r, n in h.items()) + " |")
    return "\n".join(lines) + "\n"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_rounds(cells: list[dict[str, Any]], path: Path) -> None:
    """Histogram of GR and AC rounds per seed for the methods that run the loops (the paper's Fig. 4)."""
    rows = [(c, k, h) for c in cells for k, h in (c.get("llm") or {}).get("judge_rounds", {}).items() if h]
    if not rows:
        return
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, kind in zip(axes, ("gr", "ac")):
        mine = [(c, h) for c, k, h in rows if k == kind]
        width = 0.8 / max(1, len(mine))
        for j, (c, h) in enumerate(mine):
            xs = sorted(int(r) for r in h)
            ax.bar([x + (j - (len(mine) - 1) / 2) * width for x in xs], [h.get(str(x), h.get(x, 0)) for x in xs], width,
                   label=f"{c['dataset']}/{c['method']} ({c['seeds']} seeds)")
        ax.set_title(f"{kind.upper()} rounds per seed")
        ax.set_xticks(sorted({int(r) for _, h in mine for r in h}) or [1])
        ax.set_xlabel("rounds")
        ax.set_ylabel("seeds")
        if mine:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_bootstrap(boot: dict[str, Any], path: Path) -> None:
    """Violins of the bootstrap ΔF1 distributions (R-GDA minus each method), from their percentiles (Fig. 10)."""
    items = [(f"{scale.split('/')[0]}\nvs {m}", b["quantiles"]) for scale, per in boot.items() for m, b in per.items()
             if b.get("quantiles")]
    if not items:
        return
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(items)), 4))
    ax.violinplot([q for _, q in items], showmedians=True)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(1, len(items) + 1), [n for n, _ in items], fontsize=7)
    ax.set_ylabel("ΔF1 = F1(R-GDA) − F1(method)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sweep(cells: list[dict[str, Any]], path: Path) -> None:
    """F1 against the number of seed sentences, per dataset and method (the paper's Fig. 3), where more than one
    seed count was run."""
    groups: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for c in cells:  # one line per method and epoch count
        groups.setdefault((c["dataset"], f"{c['method']} ({c['epochs']:g} ep)"), []).append((c["seeds"], c["f1_equal_epochs"]))
    groups = {k: sorted(v) for k, v in groups.items() if len({s for s, _ in v}) > 1}
    if not groups:
        return
    plt = _plt()
    datasets = sorted({d for d, _ in groups}, key=lambda d: ORDER.get(d, 9))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 3.5), squeeze=False)
    for ax, d in zip(axes[0], datasets):
        for (dd, m), pts in groups.items():
            if dd == d:
                ax.plot([s for s, _ in pts], [f for _, f in pts], marker="o", label=m)
        ax.set_title(f"{d}: F1, equal epochs")
        ax.set_xlabel("seed sentences")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot(cells: list[dict[str, Any]], datasets: list[str], methods: list[str], path: Path) -> None:
    plt = _plt()

    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    width = 0.8 / max(1, len(methods))
    scale = {}  # per dataset: the (seeds, epochs) with most methods run, then the most seeds, then the most epochs
    for d in datasets:
        mine = [c for c in cells if c["dataset"] == d]
        n_methods = {k: len({c["method"] for c in mine if (c["seeds"], c["epochs"]) == k})
                     for k in {(c["seeds"], c["epochs"]) for c in mine}}
        scale[d] = max(n_methods, key=lambda k: (n_methods[k], k))
    for k, m in enumerate(methods):
        by_d = {c["dataset"]: c for c in cells if c["method"] == m and (c["seeds"], c["epochs"]) == scale[c["dataset"]]}
        xs = [i + k * width for i in range(len(datasets))]
        for ax, mode in zip(axes, ("equal_epochs", "equal_steps")):  # error bars: sd over training runs
            ax.bar(xs, [by_d[d][f"f1_{mode}"] if d in by_d else 0 for d in datasets], width, label=m,
                   yerr=[_sd([r[mode]["f1"] for r in by_d[d]["runs"]]) if d in by_d else 0 for d in datasets],
                   capsize=2, error_kw={"elinewidth": 0.8})
        axes[2].bar(xs, [by_d[d]["bertscore_vs_seed"] if d in by_d and by_d[d]["bertscore_vs_seed"] is not None
                         else 0 for d in datasets], width, label=m)
    for ax, title in zip(axes, ("F1, equal epochs", "F1, equal optimizer steps",
                                "BERTScore vs seed (lower = more diverse)")):
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(datasets))], [f"{d}\n{scale[d][0]} seeds, {scale[d][1]:g} ep" for d in datasets])
        ax.set_title(title, fontsize=10)
        ax.set_ylim(0, 1)
    fig.suptitle("per dataset, the seed count with most methods run; error bars: sd over training runs", fontsize=9)
    handles, labels = axes[2].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.93, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
