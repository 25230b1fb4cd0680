"""Loading NER data from a Hub id, a local folder of ``{train,dev,test}.jsonl``, or files.

Example:
    >>> # dsd = load_ner("../shared/data/ncbi_disease")         # local folder
    >>> # dsd = load_ner("ncbi_disease")                         # Hub id (online)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._exceptions import ConfigError

__all__ = ["load_ner", "sample_rows"]

_EXTS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def load_ner(source: str | list[str], *, cache_dir: str | None = None) -> Any:
    """Load a ``DatasetDict`` from a folder of split files, a list of files, or a Hub dataset id."""
    from datasets import load_dataset

    files = [source] if isinstance(source, str) else list(source)
    paths = [Path(f) for f in files]
    if len(paths) == 1 and paths[0].is_dir():
        found = {p.stem: str(p) for ext in _EXTS for p in sorted(paths[0].glob(f"*{ext}"))}
        if not found:
            raise ConfigError(f"{source}: folder holds no {', '.join(_EXTS)} files")
        exts = {Path(p).suffix for p in found.values()}
        if len(exts) > 1:
            raise ConfigError(f"{source}: mixed file types {sorted(exts)}")
        return load_dataset(_EXTS[exts.pop()], data_files=found, cache_dir=cache_dir)
    if all(p.is_file() for p in paths):
        kinds = {_EXTS.get(p.suffix) for p in paths}
        if None in kinds or len(kinds) > 1:
            raise ConfigError(f"{files}: give files of one type among {', '.join(_EXTS)}")
        return load_dataset(kinds.pop(), data_files={p.stem: str(p) for p in paths}, cache_dir=cache_dir)
    if len(files) == 1 and not Path(files[0]).exists():
        return load_dataset(files[0], cache_dir=cache_dir)
    raise ConfigError(f"{files}: not a folder, existing files, or a Hub dataset id")


def sample_rows(ds: Any, n: int | None, seed: int, *, tags_column: str = "ner_tags", min_entities: int = 0) -> Any:
    """``n`` rows drawn at random with ``seed`` among rows with at least ``min_entities`` B-/S-/U- tags (or
    any non-O tag for ids); all such rows when ``n`` is None or too large."""
    if min_entities > 0:
        def count(tags: list[Any]) -> int:
            return sum(1 for t in tags if (isinstance(t, str) and t[:2] in ("B-", "S-", "U-")) or (not isinstance(t, str) and t))
        ds = ds.filter(lambda tags: count(tags) >= min_entities, input_columns=tags_column)
    if n is None or n >= len(ds):
        return ds
    return ds.shuffle(seed=seed).select(range(n))
