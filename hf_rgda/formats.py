"""Data file formats ``datasets`` does not read as NER rows by itself.

- CoNLL files (``.conll``): one token a line with its tag in the last column (``EU B-ORG``, or more columns between),
  a blank line between sentences, ``-DOCSTART-`` lines skipped; each file a split named by its stem.
- CSV files whose token and tag columns hold lists written as text (``["EU", "rejects"]``, as ``json.dumps`` writes
  them, or ``['EU', 'rejects']``, as pandas writes a list): such a column is read back as lists.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

from ._exceptions import InputError

__all__ = ["conll_dataset", "list_columns", "read_conll"]


def read_conll(path: str | os.PathLike[str]) -> dict[str, list[list[str]]]:
    """The ``tokens`` and ``ner_tags`` columns of a CoNLL file.

    Raises:
        InputError: a line with a single column (no tag), naming its sentence (the row, 0-based) and line (1-based).
    """
    tokens: list[list[str]] = []
    tags: list[list[str]] = []
    words: list[str] = []
    labels: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            parts = line.split()
            if not parts or parts[0] == "-DOCSTART-":
                if words:
                    tokens.append(words)
                    tags.append(labels)
                    words, labels = [], []
                continue
            if len(parts) < 2:
                raise InputError(f"{line.strip()!r} has no tag column (a token and its tag, separated by white "
                                 "space)", row=f"{len(tokens)} of {path} (line {number})")
            words.append(parts[0])
            labels.append(parts[-1])
    if words:
        tokens.append(words)
        tags.append(labels)
    return {"tokens": tokens, "ner_tags": tags}


def _as_list(text: Any) -> Any:
    """A list written as text (JSON or a Python literal), else ``text`` unchanged."""
    if not isinstance(text, str) or not (text.startswith("[") and text.endswith("]")):
        return text
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, list) else text


def list_columns(dsd: Any, path: str) -> Any:
    """``dsd`` (read from CSV files) with every text column whose values are all lists written as text read as
    lists (the others as they were).

    Raises:
        InputError: a value of such a column that is no list, named by its row and column.
    """
    out = {}
    for name, split in dsd.items():
        columns = [c for c in split.column_names if _is_list_column(split[c][:20])]
        for column in columns:
            values = [_as_list(v) for v in split[column][:]]
            for i, v in enumerate(values):
                if not isinstance(v, list):
                    raise InputError(f"column {column!r} holds lists written as text, but this value is none: "
                                     f"{str(v)[:60]!r}", row=f"{i} of {path}")
            split = split.remove_columns(column).add_column(column, values)
        out[name] = split
    from datasets import DatasetDict

    return DatasetDict(out)


def _is_list_column(sample: list[Any]) -> bool:
    return bool(sample) and all(isinstance(v, str) and v.strip().startswith("[") for v in sample)


def conll_dataset(files: dict[str, str]) -> Any:
    """A ``DatasetDict`` of CoNLL files (``{split: path}``)."""
    from datasets import Dataset, DatasetDict

    return DatasetDict({split: Dataset.from_dict(read_conll(Path(path))) for split, path in files.items()})
