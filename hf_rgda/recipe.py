"""One augmentation run, as the CLI, the benchmarks and the Space make it: load, sample, build, map, summarise, save.

Example:
    >>> from hf_rgda import RGDAAugmenter
    >>> from hf_rgda.recipe import augment, load_split, sample_seeds
    >>> split = load_split("ncbi_disease", "train")  # doctest: +SKIP
    >>> seeds = sample_seeds(split, 50)  # doctest: +SKIP
    >>> run = augment(seeds, RGDAAugmenter.from_dataset(split, llm="openai:gpt-5.5"))  # doctest: +SKIP
    >>> run.save("out/ncbi-rgda", source="ncbi_disease", split="train")  # doctest: +SKIP
    >>> run.too_many_failed(DEFAULT_MAX_FAILED)  # "" or the line to print before exiting 3  # doctest: +SKIP

Failures and reruns: a seed that failed (a provider outage, an unreadable answer) is recorded in the rows
(``rgda_status="failed"``) and never cached as ``datasets``' final answer (:mod:`hf_rgda.failures`): running the same
recipe again retries exactly the failed seeds, the response cache serving every call already answered.
:meth:`Run.too_many_failed` is the CLI's exit-status policy (exit 3): every seed failed, or more than ``max_failed``
(a count, or a fraction of the seeds) did.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, InputError, SchemaError
from .formats import conll_dataset, list_columns
from .inputs import check_data_file, check_json_lines, looks_like_path
from .pricing import PriceTable, cost_report
from .summary import RunSummary

__all__ = ["DEFAULT_MAX_FAILED", "Run", "augment", "load_source", "load_split", "max_failed", "sample_seeds",
           "summarise"]

#: failed seeds tolerated by default (``--max-failed``): a tenth of the seeds, so that an outage or a backend that
#: cannot answer shows in the exit status while a stray unreadable answer in a large run does not
DEFAULT_MAX_FAILED = 0.1

_EXTS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv", ".conll": "conll"}


def load_source(source: str | Sequence[str], *, cache_dir: str | None = None, config: str | None = None) -> Any:
    """A ``DatasetDict`` from any source the CLI takes.

    Args:
        source: an ``hf-rgda augment --out`` folder or a saved ``DatasetDict``; a folder of split files
            (``{train,dev,test}.jsonl``, ``.json``, ``.parquet``, ``.csv`` or ``.conll``, one type); data files of
            one type (each file a split named by its stem); or a Hub dataset id. CSV columns of lists written as
            text and CoNLL files are read by :mod:`hf_rgda.formats`.
        cache_dir: ``datasets`` cache folder for ``load_dataset``.
        config: the Hub dataset's configuration name (``load_dataset(source, config)``).

    Raises:
        ConfigError: a path that does not exist (and is no Hub dataset), files of mixed or unknown types, or a
            ``config`` for local files.
        InputError: an empty data file, a byte that is not UTF-8, a line of a JSON file that is not JSON, or a value
            of another type than the rows before it (each named by its row and line).
    """
    from datasets import load_dataset, load_from_disk

    files = [source] if isinstance(source, str) else list(source)
    paths = [Path(f) for f in files]
    if config is not None and (len(files) > 1 or paths[0].exists() or looks_like_path(files[0])):
        raise ConfigError(f"--config {config}: a configuration name applies to a Hub dataset, not to {files}")
    if len(paths) == 1:
        for folder in (paths[0], paths[0] / "dataset"):
            if (folder / "dataset_dict.json").is_file():
                return load_from_disk(str(folder))
    if len(paths) == 1 and paths[0].is_dir():
        builder, data_files = _folder_files(paths[0])
        return _load_files(builder, data_files, cache_dir)
    if all(p.is_file() for p in paths):
        kinds = {_EXTS.get(p.suffix) for p in paths}
        if None in kinds or len(kinds) > 1:
            raise ConfigError(f"{files}: give files of one type among {', '.join(_EXTS)}")
        return _load_files(kinds.pop(), {p.stem: str(p) for p in paths}, cache_dir)
    if len(files) == 1 and not paths[0].exists() and not looks_like_path(files[0]):
        try:
            return load_dataset(files[0], config, cache_dir=cache_dir)
        except (ConnectionError, FileNotFoundError) as err:  # the Hub's "not found", or no Hub to ask
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConfigError(f"{files[0]}: no such file or folder, nor a Hub dataset ({first})") from None
    missing = [f for f, p in zip(files, paths) if not p.exists()]
    if missing:
        raise ConfigError(f"{missing[0]}: no such file or folder")
    raise ConfigError(f"{files}: not a folder, existing files, or a Hub dataset id")


def _load_files(builder: str, data_files: dict[str, str], cache_dir: str | None) -> Any:
    """``load_dataset(builder, data_files=...)``, with an empty file or a corrupt JSON line named (one line)."""
    from datasets import load_dataset
    from datasets.exceptions import DatasetGenerationError

    for path in data_files.values():
        check_data_file(path, text=builder != "parquet")
    if builder == "conll":
        return conll_dataset(data_files)
    try:
        dsd = load_dataset(builder, data_files=data_files, cache_dir=cache_dir)
    except DatasetGenerationError as err:
        if builder == "json":
            for path in data_files.values():
                check_json_lines(path)
        cause = str(err.__cause__ or err).strip().splitlines() or [type(err).__name__]
        raise InputError(f"{', '.join(data_files.values())}: could not be read: {cause[0]}") from None
    return list_columns(dsd, ", ".join(data_files.values())) if builder == "csv" else dsd


def _folder_files(folder: Path) -> tuple[str, dict[str, str]]:
    """The ``load_dataset`` builder and ``data_files`` of a folder of split files."""
    found = {p.stem: str(p) for ext in _EXTS for p in sorted(folder.glob(f"*{ext}"))}
    if not found:
        raise ConfigError(f"{folder}: folder holds no {', '.join(_EXTS)} files")
    exts = {Path(p).suffix for p in found.values()}
    if len(exts) > 1:
        raise ConfigError(f"{folder}: mixed file types {sorted(exts)}")
    return _EXTS[exts.pop()], found


def load_split(source: str | Sequence[str], split: str = "train", *, config: str | None = None) -> Any:
    """One split of :func:`load_source`'s ``DatasetDict``; ConfigError naming the splits there when it has none."""
    dsd = load_source(source, config=config)
    if split not in dsd:
        raise ConfigError(f"split {split!r} not found; splits are {list(dsd)}")
    return dsd[split]


def sample_seeds(split: Any, num_seeds: int | None = None, *, sample_seed: int = 0, min_entities: int = 1,
                 tags_column: str = "ner_tags", scheme: str = "IOB2") -> Any:
    """The seed rows of a run: ``num_seeds`` rows drawn with ``sample_seed`` among the rows with at least
    ``min_entities`` entities (spans of ``scheme``'s tags, ``ClassLabel`` ids read as their names); all of them when
    ``num_seeds`` is None or larger.

    The sample of N seeds is the prefix of a larger sample with the same ``sample_seed``.

    Raises:
        ConfigError: ``num_seeds`` below 1 or ``min_entities`` below 0.
        InputError: no row has ``min_entities`` entities (the message says the most a row has).
    """
    if num_seeds is not None and num_seeds < 1:
        raise ConfigError(f"num_seeds={num_seeds} (--num-seeds) must be at least 1; leave it unset for every row")
    if min_entities < 0:
        raise ConfigError(f"min_entities={min_entities} (--min-entities) must be 0 or more")
    if min_entities > 0:
        names = getattr(getattr(split.features[tags_column], "feature", None), "names", None)
        counts = [_entities(tags, scheme, names) for tags in split[tags_column][:]]
        if not any(n >= min_entities for n in counts):
            most = max(counts, default=0)
            hint = (f"; no entity at all in {scheme} tags: does the data use another scheme (--scheme)?"
                    if not most and counts else "")
            raise InputError(f"no row of the split ({len(counts)} rows) has {min_entities} entit"
                             f"{'y' if min_entities == 1 else 'ies'} or more (at most {most} in a row): lower "
                             f"min_entities (--min-entities){hint}")
        split = split.select([i for i, n in enumerate(counts) if n >= min_entities]) if min(counts) < min_entities \
            else split
    if num_seeds is None or num_seeds >= len(split):
        return split
    return split.shuffle(seed=sample_seed).select(range(num_seeds))


def max_failed(text: str) -> float | int:
    """``--max-failed``'s value: a count of seeds (``"0"``, ``"5"``), or a fraction of them (``"0.1"``, ``"10%"``).

    Raises:
        ValueError: neither (argparse reports it as an invalid value).
    """
    value = text.strip()
    if value.endswith("%"):
        fraction = float(value[:-1]) / 100
    elif "." in value:
        fraction = float(value)
    else:
        count = int(value)
        if count < 0:
            raise ValueError(f"negative count {text!r}")
        return count
    if not 0 <= fraction <= 1:
        raise ValueError(f"fraction {text!r} outside 0..1")
    return fraction


def _entities(tags: list[Any], scheme: str, names: Sequence[str] | None) -> int:
    """The entities of one row of tags in ``scheme`` (``ClassLabel`` ids read through ``names``; ids without names:
    the tokens with a non-zero id)."""
    from .tags import tags_to_spans

    if not names and any(not isinstance(t, str) for t in tags or ()):  # ids without their names: any non-O tag
        return sum(1 for t in tags if t)
    strings = [names[t] if names and isinstance(t, int) and 0 <= t < len(names) else str(t) for t in tags or ()]
    try:
        return len(tags_to_spans(strings, scheme, strict=False))
    except SchemaError:  # a tag the scheme has no prefix for: left to the row check
        return 0


@dataclass
class Run:
    """What one :func:`augment` call made.

    Attributes:
        rows: every row the augmenter emitted, in order (seed rows, accepted rows, rejected and failed ones if kept).
        summary: totals rebuilt from the rows' traces; None for an augmenter that writes none (the baselines).
        augmenter: the augmenter that made them (its configuration and backend go into the report).
        seeds: how many seed rows went in.
        load_from_cache_file: passed on to the ``filter`` calls that select rows by status.
        from_cache: ``datasets`` served every row from the cache of an earlier identical run: the summary's calls
            and cost are that run's, none was paid by this one.
        cached_parts, parts: of the map's cache files (one per ``num_proc`` worker), how many ``datasets`` read
            from an earlier run's rather than wrote; between 0 and ``parts``, part of the cost was not paid again.
    """

    rows: Any
    summary: RunSummary | None
    augmenter: Any
    seeds: int
    load_from_cache_file: bool | None = None
    from_cache: bool = False
    cached_parts: int = 0
    parts: int = 0

    def too_many_failed(self, limit: float = DEFAULT_MAX_FAILED) -> str:
        """``""``, or the line saying that every seed failed or more than ``limit`` did (an ``int``: a count; a
        ``float``: a fraction of the seeds, as :func:`max_failed` returns them) and that a rerun retries them."""
        summary = self.summary or RunSummary()
        failed, seeds = summary.failed_seeds, summary.seeds
        allowed = limit * seeds if isinstance(limit, float) else limit
        if not failed or (failed < seeds and failed <= allowed):
            return ""
        why = "every seed failed" if failed == seeds else f"more than --max-failed {limit}"
        return (f"{failed} of {seeds} seeds failed ({why}; by stage: "
                + ", ".join(f"{k} {v}" for k, v in summary.failures_by_stage.items())
                + "); rerun the same command to retry the failed seeds: the accepted ones are kept")

    def with_status(self, *statuses: str) -> Any:
        """The rows whose ``rgda_status`` is one of ``statuses``."""
        return self.rows.filter(lambda s: s in statuses, input_columns="rgda_status",
                                load_from_cache_file=self.load_from_cache_file)

    def splits(self) -> Any:
        """A ``DatasetDict``: ``seed`` (the seed rows) and ``augmented`` (the accepted rows)."""
        from datasets import DatasetDict

        return DatasetDict({"seed": self.with_status("original"), "augmented": self.with_status("accepted")})

    def report(self, *, source: Any, split: str, prices: PriceTable | None = None) -> dict[str, Any]:
        """The run's ``summary.json``: configuration, backend, source, seed count, figures and cost by stage."""
        figures = (self.summary or RunSummary()).to_dict()
        identity = self.augmenter.llm.identity()
        calibration = getattr(self.augmenter, "calibration", None)  # the thresholds a calibration file set
        gate = getattr(self.augmenter, "tagger_gate", None)  # its folder's name (no path: cards publish this), digest
        gated = {"tagger_gate": {"folder": Path(getattr(gate, "path", "")).name, "digest": getattr(gate, "digest", repr(gate)),
                                 "fitted_on_seeds": bool(getattr(gate, "fitted_on_seeds", False))}}
        return {"config": self.augmenter.config.to_dict(), "llm": identity, "source": source, "split": split,
                **({"calibration": calibration} if calibration else {}), **(gated if gate is not None else {}),
                "num_seeds": self.seeds, "summary": figures,
                "cost": cost_report(figures["stage_usage"], identity, prices)}

    def save(self, out: str | Path, *, source: Any, split: str, prices: PriceTable | None = None) -> tuple[Any, dict]:
        """Write the run under ``out``, all files or none (:func:`hf_rgda.outputs.write_outputs`): ``dataset/``
        (:meth:`splits`), ``rejections.jsonl`` (rejected and failed rows with their reason and trace),
        ``summary.json`` (:meth:`report`), ``config.json`` (the report's configuration, backend and source) and
        ``prompts/`` (the prompt templates the run used); returns the splits and the report.

        Raises:
            ConfigError: ``out`` could not be written (nothing of the run is left there).
        """
        from .outputs import write_outputs

        splits = self.splits()
        report = self.report(source=source, split=split, prices=prices)

        def rejections(path: Path) -> None:
            with path.open("w", encoding="utf-8") as fh:
                for row in self.with_status("rejected", "failed"):
                    fh.write(json.dumps({k: row[k] for k in ("rgda_source", "rgda_status", "rgda_reason",
                                                             "rgda_trace")}, ensure_ascii=False) + "\n")

        write_outputs(out, {"dataset": lambda path: splits.save_to_disk(str(path)), "rejections.jsonl": rejections,
                            "summary.json": lambda path: path.write_text(json.dumps(report, indent=2)),
                            "config.json": lambda path: path.write_text(json.dumps(
                                {k: report[k] for k in ("config", "llm", "source", "split", "calibration",
                                                        "tagger_gate")
                                 if k in report}, indent=2)),
                            "prompts": _write_prompts})
        return splits, report


def _write_prompts(folder: Path) -> None:
    """The prompt templates, one file each (their hash is in the augmenter's fingerprint)."""
    from . import prompts

    folder.mkdir()
    for name in prompts.names():
        (folder / f"{name}.md").write_text(prompts.template(name), encoding="utf-8")


def augment(seeds: Any, augmenter: Any, *, batch_size: int = 8, num_proc: int | None = None, desc: str | None = None,
            load_from_cache_file: bool | None = None) -> Run:
    """``seeds.map(augmenter, batched=True, with_indices=True)``, timed, with the run summary from its traces.

    Args:
        seeds: the seed rows (see :func:`sample_seeds`).
        augmenter: an :class:`~hf_rgda.RGDAAugmenter` (or a baseline of :mod:`hf_rgda.baselines`).
        batch_size: seeds per map batch; the pipeline runs each stage batch-wide.
        num_proc: ``datasets.map`` worker processes.
        desc: progress-bar label; also names the run in errors.
        load_from_cache_file: False to recompute rather than reuse ``datasets``' cached rows.

    Raises:
        RuntimeError: the rows and their traces disagree on the accepted count (rows from a stale cache).
    """
    before = _cache_files_beside(seeds)
    start = time.perf_counter()
    rows = seeds.map(augmenter, batched=True, batch_size=batch_size, num_proc=num_proc, with_indices=True,
                     load_from_cache_file=load_from_cache_file, desc=desc)
    wall = time.perf_counter() - start
    # the map's every cache file was there before it: datasets served the rows an earlier run made (and paid for)
    files = [f["filename"] for f in getattr(rows, "cache_files", None) or []]
    cached = sum(f in before for f in files)
    summary = summarise(rows, augmenter, wall, desc)
    return Run(rows, summary, augmenter, len(seeds), load_from_cache_file, bool(files) and cached == len(files),
               cached, len(files))


def summarise(rows: Any, augmenter: Any, wall: float, desc: str | None = None) -> RunSummary | None:
    """The summary of a run's output ``rows`` (a ``datasets.Dataset``), rebuilt from their traces; None for rows
    without traces (the baselines').

    Raises:
        RuntimeError: the rows and their traces disagree on the accepted count (rows from a stale cache).
    """
    if "rgda_trace" not in rows.column_names:
        return None
    summary = RunSummary.from_traces(rows["rgda_trace"])
    summary.wall_seconds = wall
    summary.note_backend(getattr(augmenter, "llm", None))  # option reading, adaptations (not in the traces)
    accepted = sum(s == "accepted" for s in rows["rgda_status"])
    if summary.accepted != accepted:
        raise RuntimeError(f"{desc or 'augment'}: {accepted} accepted rows but the traces count {summary.accepted}")
    return summary


def _cache_files_beside(ds: Any) -> set[str]:
    """The files now in the folders of ``ds``'s cache files (where ``datasets`` writes a map's output): after the
    map, an output file among them was read, not written. Names, not times: a coarse file-system clock cannot tell
    a file written during the map from one written just before."""
    folders = {os.path.dirname(f["filename"]) for f in getattr(ds, "cache_files", None) or []}
    return {os.path.join(d, name) for d in folders if os.path.isdir(d) for name in os.listdir(d)}
