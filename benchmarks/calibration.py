"""Calibration benchmark: how well each judge separates good canaries from defective ones (issue 17, item 4).

Per dataset, builds the canaries of ``canaries.py`` from the gold dev sentences and asks each chosen scorer for a
score in [0, 1] per canary of its level (higher = good); reports AUROC, the accuracy at a threshold chosen on the
other half of the canaries, the accuracy at the product's own threshold and a per-class breakdown (entity scorers
also per presented type), with every canary's score, the calls and tokens it took, the command, machine and commit, in
``benchmarks/results/calibration/calibration_<llm>.json``. One command per backend (``--llm``), so a user calibrates their own
API model; every call goes through a response cache (``--cache``), so a rerun is free.

Scorers (``--scorers``), each a function from a canary to a score, are the package's (``hf_rgda.canaries.judges``,
which ``hf-rgda calibrate`` runs on a user's data; this script adds the benchmark datasets' layout, the results file
and the per-type figures):

- ``ac``: the Augmentation Calibrator judge as the pipeline calls it, one sample at the judge temperature: the row is
  the one new sentence, its seed the original, the seed's guide (``build_guide``) the guide; total score / 100.
  The product's threshold: ``threshold`` (90).
- ``gr``: the Guidance Refiner judge on a guide canary and the sentence it abstracts; total score / 100.
- ``debate``: the rgda+debate review panel (``run_review``, one round, the default panel of 3: two reviewers) on the
  row; the mean reviewer total / 100. The product's threshold: ``debate_sigma`` (80).
- ``checker``: the deterministic checker on the row, repairs on (1 passed unchanged, 0.5 repaired, 0 rejected;
  the product's threshold 0.5: what the pipeline keeps); no LLM call, seconds for all canaries.
- ``entity``: the entity verification stage's probability of the presented type for the span under test, in its
  sentence (``hf_rgda.stages.verify``: the same question, options and call as the pipeline's, with the dataset's
  types and the default contrast categories). The product's threshold: ``verify_threshold``. Its held-out thresholds
  (``metrics.thresholds``) are what ``verify_threshold`` should be set from (``hf-rgda calibrate`` sets it so). With
  ``--set verify_split=true`` the score is the one the stage thresholds: combined with the split's head share.
- ``ac-prob``, ``gr-prob``: the same judges read by probability (``judge_reading="probability"``,
  ``hf_rgda.stages.rating``: one 1-5 question per criterion, the probability-weighted total before rounding / 100).
  On a backend without logprobs each question is the sampling fallback's.
- ``verification``: entity verification as the pipeline applies it, the checker first: the entity canary's row
  through the checker (as ``checker``, the sentence before it in the file as its seed); a rejected row scores 0,
  an entity the split tags as its type consistently 1 (``verify_known``: the pipeline asks nothing about it), any
  other the ``entity`` probability. A canary presenting a type the dataset lacks (NCBI-disease's mentions shown
  as Genes) cannot come out of the pipeline, whose schema allows only the dataset's types, so the checker is not
  asked about it and it scores its ``entity`` probability alone. With ``--set verify_split=true`` the probability is
  combined with the split's head share as the stage combines them (``hf_rgda.stages.verify``).
- ``split``: no model at all, the split's statistics alone (``SplitStats.head_share``): the share of the train split's uses
  of the span's last word that end a mention of the presented type, smoothed. What the checker's lexicon and head
  rules know, as one number: a reference any entity judge should beat. No LLM call.
- ``debate-prob``: the same panel read by probability (each reviewer's verdict one 1-5 question per criterion, as
  ``ac-prob``); the mean of the reviewers' weighted totals before rounding / 100. The product's threshold:
  ``probability_threshold`` (50).

Type descriptions (``--descriptions``, the ``type_descriptions`` a user passes; they reach every prompt that
describes the types, the verifier's options included): ``none`` (the default), ``dataset`` (the benchmarks' own,
``local_pipeline.TYPE_DESCRIPTIONS``: FIN's PER covers the parties named by role), or ``examples`` (each type's
default description followed by its 4 most frequent distinct mentions in the train split, the canaries' sentences
left out: "(in this data, for example: ...)").

The statistics behind ``checker``, ``verification`` and ``split`` are those ``RGDAAugmenter.from_dataset`` computes
from the train split (the canaries' own sentences left out); ``--split-size N`` computes them from N train sentences
drawn with ``--seed`` instead, for what a user holding a few hundred labelled sentences has.

Any other option of the pipeline the scorers call: ``--set OPTION=VALUE`` (an ``AugmentConfig`` field, the value
read as JSON), for example ``--set verify_known=false`` to ask about the entities the split knows too. The overrides
are stored per dataset beside the figures (``config_overrides``).

A canary whose judge answer cannot be read (after the pipeline's one JSON re-ask) gets no score; it is counted under
``failed`` and left out of the figures.

Usage:
    python benchmarks/calibration.py --llm local:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --datasets ncbi_disease scierc fin --per-class 3 --scorers ac gr debate
    python benchmarks/calibration.py --llm local:... --datasets ncbi_disease scierc fin --per-class 20 --scorers entity
    python benchmarks/calibration.py --report benchmarks/results/calibration/calibration_local_default_entity.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import random
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.canaries import THRESHOLD_RULE, Canary, Gold, auroc, build_canaries, class_counts, domain, load_gold
from benchmarks.common import commit as _commit
from benchmarks.local_pipeline import TYPE_DESCRIPTIONS
from hf_rgda import DEFAULT_LLM, LLM, AugmentConfig, ResponseCache, load_llm
from hf_rgda.canaries import SCORERS, Judges, ScorerSpec
from hf_rgda.canaries import score_cell as package_score_cell
from hf_rgda.checking import SplitStats


def split_stats(data_dir: Path, gold: Gold, split_size: int | None = None, seed: int = 0) -> SplitStats:
    """The statistics ``RGDAAugmenter.from_dataset`` computes from the train split (without the sentences the canaries
    come from: FIN's dev is carved from train), or from ``split_size`` of its sentences drawn with ``seed``."""
    from hf_rgda.recipe import load_source
    from hf_rgda.tags import to_tag_names

    train = load_source(str(data_dir / gold.name))["train"]
    held = {tuple(t) for t, _ in gold.sentences}
    keep = [i for i, t in enumerate(train["tokens"]) if tuple(t) not in held]
    if split_size is not None and split_size < len(keep):
        keep = sorted(random.Random(f"{seed}/{gold.name}/split").sample(keep, split_size))
    part = train.select(keep)
    return SplitStats.from_split(part["tokens"][:], to_tag_names(part))


def make_judges(llm: LLM, gold: Gold, cache: ResponseCache | None, data_dir: Path | None = None,
                descriptions: dict[str, str] | None = None, overrides: dict[str, Any] | None = None,
                split_size: int | None = None, seed: int = 0) -> Judges:
    """The package's judges for one benchmark dataset: the rgda configuration with ``overrides`` (``--set``), the
    dataset's domain, and the train split's statistics (none without ``data_dir``)."""
    config = AugmentConfig(method="rgda", domain=domain(gold.name), **(overrides or {}))
    stats = split_stats(data_dir, gold, split_size, seed) if data_dir is not None else None
    return Judges(llm, gold, config, stats, cache, descriptions)


async def score_cell(spec: ScorerSpec, judges: Judges, canaries: Sequence[Canary]) -> dict[str, Any]:
    """The package's cell (:func:`hf_rgda.canaries.score_cell`), with the per-type figures of an entity scorer."""
    cell = await package_score_cell(spec, judges, canaries)
    if spec.level == "entity":
        scored = [x for x in cell["scores"] if x["score"] is not None]
        cell["metrics"]["per_type"] = per_type(scored)
        if spec is SCORERS["entity"]:  # a probability: the verification scorer mixes in the checker's 0 and 1
            cell["metrics"]["auroc_type_rescaled"] = type_rescaled_auroc(scored)
    return cell


def per_type(scored: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Entity canaries by the type they present: count, good count, mean score of the good ones, and AUROC of the
    type's canaries alone (None where a type has only good or only defective ones)."""
    out = {}
    for t in sorted({x["type"] for x in scored}):
        mine = [x for x in scored if x["type"] == t]
        good = [x["label"] == "good" for x in mine]
        value = auroc([x["score"] for x in mine], good) if 0 < sum(good) < len(good) else None
        out[t] = {"n": len(mine), "good": sum(good), "auroc": None if value is None else round(value, 4),
                  "mean_score_good": round(sum(x["score"] for x, g in zip(mine, good) if g) / sum(good), 4)
                  if any(good) else None}
    return out


def type_rescaled_auroc(scored: Sequence[dict[str, Any]]) -> float | None:
    """AUROC of the entity scores, each divided by the mean score of the good canaries presenting its type (a type
    without one: by the mean of all good canaries): what a reference per type (as ``verify_relative`` takes one per
    seed) would make of the scores, with the reference taken from the scored canaries themselves, so optimistic.
    No rescaling of a type's scores changes their order within the type: the per-type AUROCs (``per_type``) are what
    no threshold per type can improve."""
    good = [x for x in scored if x["label"] == "good"]
    if not good or len(good) == len(scored):
        return None
    overall = statistics.mean(x["score"] for x in good)
    means = {t: statistics.mean(x["score"] for x in good if x["type"] == t) for t in {x["type"] for x in good}}
    value = auroc([x["score"] / max(means.get(x["type"], overall), 1e-9) for x in scored],
                  [x["label"] == "good" for x in scored])
    return None if value is None else round(value, 4)


def report(paths: Sequence[Path]) -> None:
    """Print the ``entity`` scorer's figures of results files, the rescaled AUROC recomputed from its stored scores;
    and, per dataset whose files hold the ``verification``, ``entity`` and ``split`` scores of the same canaries,
    :func:`combined_auroc`."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for path, (name, entry) in ((p, x) for p in paths for x in json.loads(p.read_text())["datasets"].items()):
        for scorer, cell in entry.get("scorers", {}).items():
            scored = [x for x in cell["scores"] if x["score"] is not None]
            found.setdefault(name, {}).setdefault(scorer, {x["id"]: x["score"] for x in scored if "id" in x})
            found[name].setdefault("good", {}).update({x["id"]: x["label"] == "good" for x in scored if "id" in x})
            if scorer != "entity":  # the model's probability alone (see type_rescaled_auroc)
                continue
            kinds = ", ".join(f"{t} {v['auroc']}" for t, v in cell["metrics"]["per_type"].items())
            print(f"{path.name} {name}/{scorer}: AUROC {cell['metrics']['auroc']}; rescaled per type "
                  f"{type_rescaled_auroc(scored)}; within each type: {kinds}")
    for name, scores in found.items():
        if {"verification", "entity", "split"} <= set(scores):
            print(f"{name}: verification as deployed {combined_auroc(scores, None)}; with the split scorer in place "
                  f"of the model {combined_auroc(scores, 1.0)}; with the geometric mean of both {combined_auroc(scores, 0.5)}")


def combined_auroc(scores: dict[str, dict[str, Any]], weight: float | None) -> float | None:
    """AUROC of the ``verification`` scorer with the model's probability P (``entity``) replaced by
    ``P ** (1 - weight) * S ** weight``, S the ``split`` score (``weight`` None: P as deployed), for the canaries the
    checker and the lexicon do not decide (those keep their 0 or 1). Computed from stored scores, no call.

    Example:
        >>> s = {"verification": {"a": 0.3, "b": 0.0, "c": 0.2}, "entity": {"a": 0.3, "b": 0.9, "c": 0.2},
        ...      "split": {"a": 0.1, "b": 0.9, "c": 0.9}, "good": {"a": True, "b": False, "c": False}}
        >>> combined_auroc(s, None), combined_auroc(s, 1.0)
        (1.0, 0.5)
    """
    ids = [i for i in scores["verification"] if i in scores["entity"] and i in scores["split"]]

    def one(i: str) -> float:
        v = scores["verification"][i]
        if v in (0.0, 1.0) or weight is None:
            return v
        return 0.001 + 0.998 * scores["entity"][i] ** (1 - weight) * scores["split"][i] ** weight

    value = auroc([one(i) for i in ids], [scores["good"][i] for i in ids])
    return None if value is None else round(value, 4)


def type_descriptions(kind: str, gold: Gold, data_dir: Path) -> dict[str, str]:
    """The ``type_descriptions`` of ``--descriptions kind`` for ``gold``'s dataset (module docstring)."""
    if kind == "none":
        return {}
    if kind == "dataset":
        return dict(TYPE_DESCRIPTIONS.get(gold.name, {}))
    from hf_rgda.recipe import load_source
    from hf_rgda.stages.categories import describe
    from hf_rgda.tags import detokenize, tags_to_spans, to_tag_names

    train = load_source(str(data_dir / gold.name))["train"]
    held, counts = {tuple(t) for t, _ in gold.sentences}, {}
    for tokens, tags in zip(train["tokens"], to_tag_names(train)):
        if tuple(tokens) not in held:
            for s in tags_to_spans(tags):
                text = detokenize(tokens[s.start : s.end])
                counts.setdefault(s.label, {}).setdefault(text, 0)
                counts[s.label][text] += 1
    out = {}
    for t in gold.types:
        seen: dict[str, str] = {}
        for text in sorted(counts.get(t, {}), key=lambda x: -counts[t][x]):  # stable: first seen among equals
            seen.setdefault(text.lower(), text)
            if len(seen) == 4:
                break
        examples = ", ".join(f'"{x}"' for x in seen.values())
        out[t] = describe(t) + (f" (in this data, for example: {examples})" if examples else "")
    return out


async def run_dataset(llm: LLM, gold: Gold, canaries: Sequence[Canary], scorers: Sequence[str],
                      cache: ResponseCache | None, data_dir: Path | None = None,
                      descriptions: dict[str, str] | None = None,
                      overrides: dict[str, Any] | None = None, split_size: int | None = None,
                      seed: int = 0) -> dict[str, Any]:
    """Every chosen scorer's cell for one dataset."""
    judges = make_judges(llm, gold, cache, data_dir, descriptions, overrides, split_size, seed)
    try:
        return {name: await score_cell(SCORERS[name], judges, canaries) for name in scorers}
    finally:
        await llm.aclose()


def only_classes(canaries: Sequence[Canary], classes: Sequence[str]) -> list[Canary]:
    """The canaries of ``classes``, and per dataset and level as many good ones (the first) as those together."""
    kept = [c for c in canaries if c.label in classes]
    out = []
    for key in dict.fromkeys((c.dataset, c.level) for c in kept):
        mine = [c for c in kept if (c.dataset, c.level) == key]
        good = [c for c in canaries if (c.dataset, c.level) == key and c.label == "good"][: len(mine)]
        out += good + mine
    return out


def _option(text: str) -> tuple[str, Any]:
    """``--set``'s ``OPTION=VALUE``, checked against :class:`AugmentConfig`'s fields."""
    name, eq, value = text.partition("=")
    if not eq or name not in {f.name for f in dataclasses.fields(AugmentConfig)}:
        raise argparse.ArgumentTypeError(f"{text!r}: expected OPTION=VALUE with an AugmentConfig option")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def default_out(llm: str) -> Path:
    """``benchmarks/results/calibration/calibration_<backend>-<model file stem>.json``."""
    backend, _, model = llm.partition(":")
    slug = re.sub(r"[^a-z0-9.]+", "-", f"{backend}-{Path(model).stem}".lower()).strip("-")
    return Path("benchmarks/results/calibration") / f"calibration_{slug}.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--llm", default=DEFAULT_LLM, help="any backend spec, e.g. openai:gpt-4o-mini")
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc", "fin"])
    p.add_argument("--per-class", type=int, default=3, help="canaries per defect class (good: as many as all defects)")
    p.add_argument("--scorers", nargs="+", default=["ac", "gr", "debate"], choices=list(SCORERS))
    p.add_argument("--seed", type=int, default=0, help="the canaries' seed")
    p.add_argument("--classes", nargs="+", default=None, metavar="CLASS",
                   help="only these defect classes, and as many good canaries as they have together (AUROC pooled "
                        "over them)")
    p.add_argument("--cache", type=Path, default=Path("benchmarks/.cache/calibration.sqlite3"))
    p.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/calibration/calibration_<llm>.json")
    p.add_argument("--descriptions", choices=["none", "dataset", "examples"], default="none",
                   help="the type_descriptions passed to the pipeline (module docstring)")
    p.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE", type=_option,
                   help="an AugmentConfig option of the pipeline the scorers call (VALUE read as JSON, else as a "
                        "string), e.g. --set verify_known=false; repeatable")
    p.add_argument("--split-size", type=int, default=None, metavar="N",
                   help="the checker's and the split scorer's statistics from N train sentences (default: all)")
    p.add_argument("--report", type=Path, nargs="+", default=None, metavar="RESULTS",
                   help="print the entity scorer's figures of results files (no call is made) and exit")
    args = p.parse_args(argv)
    if args.report is not None:
        report(args.report)
        return 0
    overrides = dict(args.set)
    out = args.out or default_out(args.llm)
    results = json.loads(out.read_text()) if out.exists() else {}
    command = "python benchmarks/calibration.py " + " ".join(argv if argv is not None else sys.argv[1:])
    results.setdefault("commands", [])
    if command not in results["commands"]:  # several invocations (scorers, datasets) may fill one results file
        results["commands"].append(command)
    results.update({"command": command, "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
                    "llm": args.llm, "commit": _commit(), "threshold_rule": THRESHOLD_RULE})
    llm = load_llm(args.llm)
    golds = [load_gold(args.data_dir, name, args.seed) for name in args.datasets]
    canaries = build_canaries(golds, args.per_class, args.seed)
    if args.classes:
        canaries = only_classes(canaries, args.classes)
    cache = ResponseCache(args.cache)
    for gold in golds:
        mine = [c for c in canaries if c.dataset == gold.name]
        entry = results.setdefault("datasets", {}).setdefault(gold.name, {})
        descriptions = type_descriptions(args.descriptions, gold, args.data_dir)
        entry.update({"dev": gold.source, "per_class": args.per_class, "seed": args.seed, "classes": args.classes,
                      "canaries": class_counts(mine), "type_descriptions": descriptions,
                      "config_overrides": overrides, "split_size": args.split_size})
        print(f"{gold.name} ({gold.source}): " + "; ".join(
            f"{n} {sum(c.level == SCORERS[n].level for c in mine)} canaries" for n in args.scorers), flush=True)
        cells = asyncio.run(run_dataset(llm, gold, mine, args.scorers, cache, args.data_dir, descriptions, overrides,
                                        args.split_size, args.seed))
        entry.setdefault("scorers", {}).update(cells)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
        for name, cell in cells.items():
            m = cell["metrics"]
            print(f"{gold.name}/{name}: AUROC {m['auroc']}, held-out accuracy {m['heldout_accuracy']} (thresholds "
                  f"{m['thresholds']}), accuracy at the product's {m['product_threshold']} "
                  f"{m['accuracy_at_product_threshold']}; {cell['canaries']} canaries, {cell['failed']} failed, "
                  f"{cell['seconds_per_canary']} s each", flush=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
