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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, InputError
from .inputs import check_data_file, check_json_lines, looks_like_path
from .pricing import PriceTable, cost_report
from .summary import RunSummary

__all__ = ["DEFAULT_MAX_FAILED", "Run", "augment", "load_source", "load_split", "max_failed", "sample_seeds",
           "summarise"]

#: failed seeds tolerated by default (``--max-failed``): a tenth of the seeds, so that an outage or a backend that
#: cannot answer shows in the exit status while a stray unreadable answer in a large run does not
DEFAULT_MAX_FAILED = 0.1

_EXTS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def load_source(source: str | Sequence[str], *, cache_dir: str | None = None) -> Any:
    """A ``DatasetDict`` from any source the CLI takes.

    Args:
        source: an ``hf-rgda augment --out`` folder or a saved ``DatasetDict``; a folder of split files
            (``{train,dev,test}.jsonl``, ``.json``, ``.parquet`` or ``.csv``, one type); data files of one type
            (each file a split named by its stem); or a Hub dataset id.
        cache_dir: ``datasets`` cache folder for ``load_dataset``.

    Raises:
        ConfigError: a path that does not exist (and is no Hub dataset), or files of mixed or unknown types.
        InputError: an empty data file, or a line of a JSON file that is not JSON (named by its row and line).
    """
    from datasets import load_dataset, load_from_disk

    files = [source] if isinstance(source, str) else list(source)
    paths = [Path(f) for f in files]
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
            return load_dataset(files[0], cache_dir=cache_dir)
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
        check_data_file(path)
    try:
        return load_dataset(builder, data_files=data_files, cache_dir=cache_dir)
    except DatasetGenerationError as err:
        if builder == "json":
            for path in data_files.values():
                check_json_lines(path)
        cause = str(err.__cause__ or err).strip().splitlines() or [type(err).__name__]
        raise InputError(f"{', '.join(data_files.values())}: could not be read: {cause[0]}") from None


def _folder_files(folder: Path) -> tuple[str, dict[str, str]]:
    """The ``load_dataset`` builder and ``data_files`` of a folder of split files."""
    found = {p.stem: str(p) for ext in _EXTS for p in sorted(folder.glob(f"*{ext}"))}
    if not found:
        raise ConfigError(f"{folder}: folder holds no {', '.join(_EXTS)} files")
    exts = {Path(p).suffix for p in found.values()}
    if len(exts) > 1:
        raise ConfigError(f"{folder}: mixed file types {sorted(exts)}")
    return _EXTS[exts.pop()], found


def load_split(source: str | Sequence[str], split: str = "train") -> Any:
    """One split of :func:`load_source`'s ``DatasetDict``; ConfigError naming the splits there when it has none."""
    dsd = load_source(source)
    if split not in dsd:
        raise ConfigError(f"split {split!r} not found; splits are {list(dsd)}")
    return dsd[split]


def sample_seeds(split: Any, num_seeds: int | None = None, *, sample_seed: int = 0, min_entities: int = 1,
                 tags_column: str = "ner_tags") -> Any:
    """The seed rows of a run: ``num_seeds`` rows drawn with ``sample_seed`` among the rows with at least
    ``min_entities`` entities (B-/S-/U- tags; for ClassLabel ids, any non-O tag); all of them when ``num_seeds`` is None or larger.

    The sample of N seeds is the prefix of a larger sample with the same ``sample_seed``.
    """
    if min_entities > 0:
        split = split.filter(lambda tags: _entities(tags) >= min_entities, input_columns=tags_column)
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


def _entities(tags: list[Any]) -> int:
    return sum(1 for t in tags if (isinstance(t, str) and t[:2] in ("B-", "S-", "U-")) or (not isinstance(t, str) and t))


@dataclass
class Run:
    """What one :func:`augment` call made.

    Attributes:
        rows: every row the augmenter emitted, in order (seed rows, accepted rows, rejected and failed ones if kept).
        summary: totals rebuilt from the rows' traces; None for an augmenter that writes none (the baselines).
        augmenter: the augmenter that made them (its configuration and backend go into the report).
        seeds: how many seed rows went in.
        load_from_cache_file: passed on to the ``filter`` calls that select rows by status.
    """

    rows: Any
    summary: RunSummary | None
    augmenter: Any
    seeds: int
    load_from_cache_file: bool | None = None

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
                + ", ".join(f"{k} {v}" for k, v in summary.failures.items())
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
        return {"config": self.augmenter.config.to_dict(), "llm": identity, "source": source, "split": split,
                **({"calibration": calibration} if calibration else {}), "num_seeds": self.seeds, "summary": figures,
                "cost": cost_report(figures["stage_usage"], identity, prices)}

    def save(self, out: str | Path, *, source: Any, split: str, prices: PriceTable | None = None) -> tuple[Any, dict]:
        """Write ``dataset/`` (:meth:`splits`), ``rejections.jsonl`` (rejected and failed rows with their reason and
        trace) and ``summary.json`` (:meth:`report`) under ``out``; returns the splits and the report."""
        out = Path(out)
        splits = self.splits()
        out.mkdir(parents=True, exist_ok=True)
        splits.save_to_disk(str(out / "dataset"))
        with (out / "rejections.jsonl").open("w") as fh:
            for row in self.with_status("rejected", "failed"):
                fh.write(json.dumps({k: row[k] for k in ("rgda_source", "rgda_status", "rgda_reason", "rgda_trace")})
                         + "\n")
        report = self.report(source=source, split=split, prices=prices)
        (out / "summary.json").write_text(json.dumps(report, indent=2))
        return splits, report


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
    start = time.perf_counter()
    rows = seeds.map(augmenter, batched=True, batch_size=batch_size, num_proc=num_proc, with_indices=True,
                     load_from_cache_file=load_from_cache_file, desc=desc)
    summary = summarise(rows, augmenter, time.perf_counter() - start, desc)
    return Run(rows, summary, augmenter, len(seeds), load_from_cache_file)


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
