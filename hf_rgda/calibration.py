"""Calibrate the judges on your own labelled data: ``hf-rgda calibrate`` and :func:`calibrate`.

From a labelled split (a dev split, or a held-back share of train), canaries are built (:mod:`hf_rgda.canaries`:
sentences that are correct, or carry one known defect), each scorer reads them through the pipeline's own calls on
your backend, and the figures say how well each separates good from defective canaries (AUROC: 1 perfect, 0.5
chance). Each threshold option is then chosen on those canaries (:func:`hf_rgda.canaries.thresholds.recommend`) and
written, with every figure, to ``calibration.json``, which ``RGDAAugmenter(calibration=...)`` and
``hf-rgda augment --calibration FILE`` apply.

Every call goes through the response cache, so an interrupted calibration resumes where it stopped and a rerun pays
nothing; the calls, tokens and (for a priced backend) dollars are estimated before the first call.

Example:
    >>> from hf_rgda import calibrate
    >>> report = calibrate("data/ncbi_disease", "openai:gpt-5.5", max_canaries=80)  # doctest: +SKIP
    >>> report["thresholds"]  # doctest: +SKIP
    {'verify_threshold': 0.31, 'probability_threshold': 62}
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, RGDAError
from ._version import __version__
from .cache import ResponseCache
from .calls import run_sync
from .canaries import LEVELS, SCORERS, THRESHOLD_RULE, Gold, Judges, build_canaries, cap, class_counts, gold_from
from .canaries.estimate import rehearse
from .canaries.judges import score_cell
from .canaries.thresholds import FORMAT, MIN_AUROC, OPTIONS, recommend
from .checking import SplitStats
from .config import DEFAULT_LLM, AugmentConfig
from .estimate import Estimate, PeekCache
from .inputs import check_splits
from .llm import LLM, load_llm
from .stages.rating import by_probability

__all__ = ["LABELS", "calibrate", "default_scorers"]

#: how each scorer is named on the terminal
LABELS = {"entity": "entity verifier", "verification": "entity verification (checker first)", "checker": "checker",
          "split": "split statistics", "ac": "AC judge", "gr": "GR judge", "ac-prob": "AC judge (by probability)",
          "gr-prob": "GR judge (by probability)", "debate": "debate reviewers",
          "debate-prob": "debate reviewers (by probability)",
          "sense": "sense (least likely tokens)", "sense-gate": "sense gate (checker first)",
          "mentions": "completeness (spans proposed, verified)", "tagger": "completeness (the split's own tagger)"}
MIN_CANARIES = 4


def default_scorers(config: AugmentConfig, llm: LLM) -> list[str]:
    """The scorers of what a run with ``config`` on ``llm`` uses: the entity verifier, the checker and its split
    tagger, the judges of its method, read as the run reads them (``judge_reading``), and the sense reading where the
    backend has one."""
    prob = "-prob" if by_probability(config, llm) else ""
    names = ["entity"] if config.verify_entities else []
    names += ["checker"] + ["tagger"] * bool(config.likely_mention_quantile)  # the split tagger: no model call
    names += [f"ac{prob}"] * config.uses_ac + [f"gr{prob}"] * config.uses_gr
    names += ["sense", "sense-gate"] * (llm.scores_text and config.sense_gate)  # a backend reading text logprobs
    names += ["mentions"] * bool(config.for_backend(llm).check_mentions)
    return names + [f"debate{prob}"] * (config.debate_review or config.method == "biorda")


def calibrate(data: str | os.PathLike[str] | Sequence[str], llm: str | LLM = DEFAULT_LLM, *, split: str = "dev",
              holdout: float | None = None, max_canaries: int = 120, scorers: Sequence[str] | None = None,
              out: str | Path | None = "calibration.json", cache: bool | str | Path = True,
              config: AugmentConfig | None = None, type_descriptions: Mapping[str, str] | None = None,
              seed: int = 0, tokens_column: str = "tokens", tags_column: str = "ner_tags", scheme: str = "IOB2",
              label_names: Sequence[str] | None = None, llm_options: Mapping[str, Any] | None = None, progress: bool = True, dry_run: bool = False,
              echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure each scorer on canaries built from ``data`` and write the thresholds to ``out``.

    Args:
        data: a folder of split files, a saved ``DatasetDict``, data files or a Hub id (as ``hf-rgda augment``).
        llm: the backend to calibrate (``"<backend>:<model>"`` or an :class:`~hf_rgda.LLM`).
        split: the labelled split the canaries are built from; ``validation`` stands in for a missing ``dev``.
        holdout: instead of ``split``, this share of ``train`` (drawn with ``seed``).
        max_canaries: canaries at most, balanced over the defect classes with as many good ones.
        scorers: names of :data:`hf_rgda.canaries.SCORERS` (default: :func:`default_scorers`).
        out: the calibration file to write (None: none).
        cache: True for the default response cache, a path, or False for none.
        config: the run configuration the thresholds are measured under (its ``domain`` shows in the guides).
        type_descriptions: as :class:`~hf_rgda.RGDAAugmenter`'s.
        seed: the canaries' seed.
        tokens_column, tags_column, scheme: the data's columns and tag scheme.
        label_names: the label set, as ``RGDAAugmenter.from_dataset``'s; default: train's ClassLabel names, else its
            tags. A row of any split with a tag outside it is refused, as augment refuses it.
        llm_options: passed to :func:`~hf_rgda.load_llm`.
        progress: show a progress bar per scorer.
        dry_run: print the canaries and the estimate, and stop before the first call.
        echo: where the lines for the terminal go.

    Returns:
        The calibration report (what ``out`` holds). When every canary of a scorer failed (an outage, answers that
        cannot be read), nothing is written and ``failed_scorers`` names them with their first error.

    Raises:
        ConfigError: the data cannot be read, lacks the split or the columns, or yields too few canaries.
    """
    data = str(data) if isinstance(data, (str, os.PathLike)) else [str(x) for x in data]
    if max_canaries < MIN_CANARIES:
        raise ConfigError(f"max_canaries={max_canaries} must be at least {MIN_CANARIES}")
    cfg = config or AugmentConfig()
    model = load_llm(llm, **dict(llm_options or {}))
    unknown = [n for n in scorers or () if n not in SCORERS]
    if unknown:
        raise ConfigError(f"unknown scorer(s) {unknown}; choose among {', '.join(SCORERS)}")
    names = list(scorers or default_scorers(cfg, model))
    if {"sense", "sense-gate"} & set(names) and not model.scores_text:
        raise ConfigError(f"scorer 'sense' reads a given text's token logprobs, which {type(model).__name__} cannot "
                          "(the chat APIs return none; the local model can)")
    splits = _splits(data, tokens_column, tags_column, scheme, label_names)
    if holdout is None and split == "dev" and "dev" not in splits and "validation" in splits:
        split = "validation"
    gold = gold_from(_name(data), splits, split=split, holdout=holdout, seed=seed, domain=cfg.domain)
    canaries = _canaries(gold, names, max_canaries, seed)
    stats = _stats(splits, gold, split if holdout is None else None)
    store_of = PeekCache if dry_run else ResponseCache  # a dry run reads the cache, and creates none
    store = None if cache is False else store_of(None if cache is True else cache)
    if store is not None:
        store.check()  # a cache no call can use stops here, not as every canary's failure

    def judges(backend: LLM, responses: ResponseCache | None) -> Judges:
        return Judges(backend, gold, cfg, stats, responses, type_descriptions)

    counts = "; ".join(f"{lv}: " + ", ".join(f"{k} {v}" for k, v in c.items()) for lv, c in class_counts(canaries).items())
    echo(f"{gold.name} ({gold.source}): {len(canaries)} canaries ({counts})")
    echo("scorers: " + ", ".join(f"{n} ({sum(c.level == SCORERS[n].level for c in canaries)})" for n in names))
    estimate = run_sync(rehearse(model, judges, names, canaries, store))
    echo(estimate.format())
    if dry_run:
        return {"estimate": estimate.__dict__, "canaries": class_counts(canaries)}
    start = time.perf_counter()
    cells = run_sync(_score(judges(model, store), names, canaries, progress))
    report = _report(model, data, gold, canaries, cfg, cells, estimate, seed, max_canaries)
    report["wall_seconds"] = round(time.perf_counter() - start, 1)
    for line in format_report(report):
        echo(line)
    failed = {n: next(x["error"] for x in c["scores"] if x.get("error")) for n, c in cells.items()
              if c["canaries"] and c["failed"] == c["canaries"]}
    if failed:  # an outage, a model that never answers readably: no threshold measured is no calibration
        report["failed_scorers"] = failed
        return report
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(report, indent=1, ensure_ascii=False))
        echo(f"wrote {out}; apply it with: hf-rgda augment ... --calibration {out}")
    return report


async def _score(judges: Judges, names: Sequence[str], canaries: Sequence[Any], progress: bool) -> dict[str, Any]:
    """Each scorer's cell, one progress bar per scorer."""
    from tqdm.auto import tqdm

    cells = {}
    try:
        for name in names:
            total = sum(c.level == SCORERS[name].level for c in canaries)
            with tqdm(total=total, desc=LABELS[name], unit="canary", disable=not progress) as bar:
                cells[name] = await score_cell(SCORERS[name], judges, canaries, lambda: bar.update(1))
    finally:
        await judges.llm.aclose()
    return cells


def _report(llm: LLM, data: Any, gold: Gold, canaries: Sequence[Any], cfg: AugmentConfig, cells: dict[str, Any],
            estimate: Estimate, seed: int, max_canaries: int) -> dict[str, Any]:
    """The calibration file's content."""
    options = recommend(cells)
    scorers = {}
    for name, cell in cells.items():
        m, spec = cell["metrics"], SCORERS[name]
        scorers[name] = {"label": LABELS[name], "level": spec.level, "option": spec.option if spec.sets and spec.option else None,
                         "auroc": m["auroc"], "heldout_accuracy": m["heldout_accuracy"],
                         "heldout_balanced_accuracy": m["heldout_balanced_accuracy"],
                         "current_threshold": m["product_threshold"],
                         "accuracy_at_current_threshold": m["accuracy_at_product_threshold"],
                         **{k: cell[k] for k in ("canaries", "failed", "calls", "cached_calls", "prompt_tokens",
                                                 "completion_tokens", "llm_seconds")},
                         "per_class": m["per_class"], "scores": cell["scores"]}
    return {"format": FORMAT, "hf_rgda": __version__, "llm": llm.identity(), "data": data if isinstance(data, str)
            else list(data), "split": gold.source, "types": list(gold.types), "domain": gold.domain, "seed": seed,
            "max_canaries": max_canaries, "canaries": class_counts(canaries), "threshold_rule": THRESHOLD_RULE,
            "min_auroc": MIN_AUROC, "current": {k: getattr(cfg, k) for k in OPTIONS},
            "thresholds": {k: v["value"] for k, v in options.items() if v["applied"]}, "recommendations": options,
            "scorers": scorers, "estimate": estimate.__dict__,
            **{k: sum(c[k] for c in cells.values()) for k in ("calls", "cached_calls", "prompt_tokens",
                                                            "completion_tokens")}}


def format_report(report: Mapping[str, Any]) -> list[str]:
    """The terminal lines of a calibration report: each scorer's AUROC, then the thresholds."""
    lines = []
    for s in report["scorers"].values():
        failed = f", {s['failed']} failed" if s["failed"] else ""
        lines.append(f"{s['label']:<36} AUROC {_num(s['auroc'])}   held-out accuracy {_num(s['heldout_accuracy'])}"
                     f"   ({s['canaries']} canaries{failed}; {s['calls']} calls, {s['cached_calls']} from cache)")
    for option, r in report["recommendations"].items():
        now = report["current"][option]
        if r["applied"]:
            lines.append(f"recommended {option} = {r['value']} (now {now}; from {', '.join(r['scorers'])}, "
                         f"AUROC {_num(r['auroc'])} on {r['n']} canaries)")
        else:
            lines.append(f"{option}: no recommendation ({r['why']}); keeps {now}")
    lines.append(f"calls: {report['calls']} ({report['cached_calls']} from cache); tokens: {report['prompt_tokens']} "
                 f"prompt + {report['completion_tokens']} completion")
    return lines


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


# ---------------------------------------------------------------- data
def _name(data: str | Sequence[str]) -> str:
    first = Path(data if isinstance(data, str) else data[0])
    return (first.name if isinstance(data, str) else first.parent.name) or "data"


def _splits(data: str | Sequence[str], tokens_column: str, tags_column: str, scheme: str,
            label_names: Sequence[str] | None) -> dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]]:
    """``{split: [(tokens, IOB2 tags), ...]}`` of ``data``."""
    from .recipe import load_source

    for item in [data] if isinstance(data, str) else data:
        local = item.startswith(("/", ".", "~")) or item.count("/") > 1  # a Hub id is "name" or "owner/name"
        if local and not Path(item).expanduser().exists():
            raise ConfigError(f"{item}: no such file or folder")
    try:
        dsd = load_source(data)
    except RGDAError:
        raise
    except Exception as err:  # noqa: BLE001 - datasets' many loading errors, as one line
        raise ConfigError(f"{data}: cannot load it ({type(err).__name__}: {str(err).splitlines()[0][:200]})") from None
    # every row accepted as augment accepts it: a missing column, a bad tag, a type that looks like a typo, a tag
    # outside the label set (label_names, else train's, as an augmenter built from train takes it)
    _, tags = check_splits(dsd, tokens_column=tokens_column, tags_column=tags_column, scheme=scheme,
                           label_names=label_names)
    return {name: [(tuple(t), tuple(g)) for t, g in zip(dsd[name][tokens_column][:], tags[name])] for name in dsd}


def _canaries(gold: Gold, names: Sequence[str], n: int, seed: int) -> list[Any]:
    """At most ``n`` canaries of the levels the scorers read."""
    levels = [lv for lv in LEVELS if any(SCORERS[x].level == lv for x in names)]
    classes = sum(len(LEVELS[lv]) for lv in levels)
    built = cap(build_canaries([gold], math.ceil(n / 2 / classes) + 1, seed, levels), n)
    good = sum(c.good for c in built)
    if len(built) < MIN_CANARIES or not good or good == len(built):
        raise ConfigError(f"{gold.name}: only {len(built)} canaries could be built from {len(gold.sentences)} "
                          f"sentences ({gold.source}); calibration needs tagged sentences of 6 tokens or more")
    return built


def _stats(splits: Mapping[str, Sequence[Any]], gold: Gold, split: str | None) -> SplitStats:
    """The train split's statistics, as ``RGDAAugmenter.from_dataset`` computes them, without the calibration
    sentences (none when they are the train split itself)."""
    if "train" not in splits or split == "train":
        return SplitStats()
    held = {tokens for tokens, _ in gold.sentences}
    rows = [(t, g) for t, g in splits["train"] if t not in held]
    return SplitStats.from_split([list(t) for t, _ in rows], [list(g) for _, g in rows])
