"""Input rows, checked before anything reads them.

- A split is checked whole, row by row, before its statistics are computed or its seeds sampled
  (:func:`check_split`: ``RGDAAugmenter.from_dataset`` and the CLI): an error names the row by its index in the split
  as loaded, which for a data file is the file's own row (0-based), never its place in a sampled or filtered subset;
  and no row outside the sample feeds the statistics unchecked.
- The label set is the split's ``ClassLabel`` names or the ``label_names`` given; otherwise it is inferred from the
  string tags, and an entity type that looks like a typo of a more frequent one (``B-Diseas`` beside ``B-Disease``:
  the same name but for case, or similar names, the rarer in at most ``max(2, 5%)`` of the other's rows) fails,
  naming its first row: give the label set explicitly to keep such a type. A tag prefix the scheme lacks
  (``E-Disease`` in IOB2, ``b-Disease``) fails as an invalid tag.
- A map batch that is one row (``ds.map(aug)`` without ``batched=True``) is recognised (:func:`check_batched`).
- Data files (:mod:`hf_rgda.recipe`): an empty file, and the first line of a JSON Lines file that is not JSON, are
  named before (or instead of) ``datasets``' own error (:func:`check_data_file`, :func:`check_json_lines`).
"""

from __future__ import annotations

import difflib
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError, InputError, SchemaError
from .tags import convert_tags, entity_types, label_names_of, tag_name, validate_tags

__all__ = ["check_batched", "check_columns", "check_data_file", "check_json_lines", "check_split", "check_splits",
           "looks_like_path",
           "seed_tags"]

_DATA_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv", ".arrow", ".txt", ".tsv", ".conll")


def looks_like_path(source: str) -> bool:
    """Whether ``source`` names a file or folder rather than a Hub dataset id (``owner/name`` or ``name``)."""
    return (source.lower().endswith(_DATA_SUFFIXES) or source.startswith((".", "/", "~")) or source.count("/") > 1
            or os.sep != "/" and os.sep in source)


def check_data_file(path: str | os.PathLike[str], *, text: bool = False) -> None:
    """Raise :class:`InputError` when the data file ``path`` holds nothing but white space, or (``text``: a text
    format) a byte that is not UTF-8, naming its row (0-based, blank lines skipped; a CSV's header is no row), its
    line and the byte."""
    blank, lines, rows = True, 0, 0  # the lines of the blocks decoded so far, the non-blank ones among them
    tail = b""
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            blank = blank and not chunk.strip()
            if not text:
                if not blank:
                    return  # a binary format (Parquet, Arrow) is not read past its first bytes
                continue
            data = tail + chunk
            cut = data.rfind(b"\n") + 1  # whole lines only: a character cut in two is decoded with its rest
            block, tail = data[:cut], data[cut:]
            _decode(block, path, lines, rows)
            lines += block.count(b"\n")
            rows += sum(1 for line in block.split(b"\n")[:-1] if line.strip())
    if blank:
        raise InputError(f"{path}: the file is empty (no rows)")
    if text:
        _decode(tail, path, lines, rows)


_CHUNK = 1 << 20  # bytes read at a time by check_data_file


def _decode(block: bytes, path: str | os.PathLike[str], lines: int, rows: int) -> None:
    """Raise :class:`InputError` at the first byte of ``block`` (whole lines of ``path`` after ``lines`` lines,
    ``rows`` of them not blank) that is not UTF-8."""
    try:
        block.decode("utf-8")
    except UnicodeDecodeError as err:
        before = block[:err.start].split(b"\n")
        row = rows + sum(1 for line in before[:-1] if line.strip()) - (str(path).lower().endswith(".csv"))
        raise InputError(f"byte 0x{block[err.start]:02x} at column {len(before[-1]) + 1} is not UTF-8; save the file "
                         "as UTF-8", row=f"{max(row, 0)} of {path} (line {lines + len(before)})") from None


def check_json_lines(path: str | os.PathLike[str]) -> None:
    """Raise :class:`InputError` naming the first row of the JSON (Lines) file ``path`` that is not a JSON object,
    or that holds a value of another JSON type than the rows before it (an integer token among strings): its row
    (0-based, blank lines skipped, as ``datasets`` counts them), its line (1-based) and the value."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    if text.lstrip().startswith("["):  # one JSON array, not JSON Lines
        try:
            json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}: not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
        return
    row = 0
    kinds: dict[str, tuple[str, int]] = {}  # column -> (its kind, the row that set it)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{row} of {path} (line {number})"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"not valid JSON: {err.msg} (column {err.colno})", row=where) from None
        if not isinstance(value, dict):
            raise InputError(f"not a JSON object: {line.strip()[:60]!r}", row=where)
        for column, item in value.items():
            for kind, shown in _kinds(item):
                first = kinds.setdefault(column, (kind, row))
                if kind != first[0]:
                    raise InputError(f"column {column!r} holds {shown!r}, {_KIND_WORDS[kind]}, where row {first[1]} "
                                     f"holds {_KIND_WORDS[first[0]]}", row=where)
        row += 1


_KIND_WORDS = {"str": "a string", "num": "a number", "bool": "true or false", "list": "a list", "dict": "an object",
               "list of str": "a list of strings", "list of num": "a list of numbers", "list of bool": "a list of "
               "true or false", "list of list": "a list of lists", "list of dict": "a list of objects"}


def _kind(value: Any) -> str | None:
    if value is None:
        return None
    return ("bool" if isinstance(value, bool) else "num" if isinstance(value, (int, float)) else "str" if
            isinstance(value, str) else "list" if isinstance(value, list) else "dict")


def _kinds(item: Any) -> list[tuple[str, Any]]:
    """The JSON kinds in a value: a list's kind is that of its items (each item that has one, with the item)."""
    if isinstance(item, list):
        return [(f"list of {k}", x) for x in item if (k := _kind(x)) is not None]
    kind = _kind(item)
    return [(kind, item)] if kind is not None else []


def check_columns(columns: Sequence[str], tokens_column: str, tags_column: str) -> None:
    """Raise :class:`InputError` naming the missing column, the columns there are and the option that names them."""
    for col, option in ((tokens_column, "tokens_column"), (tags_column, "tags_column")):
        if col not in columns:
            raise InputError(f"column {col!r} is missing; columns are {sorted(columns)} (name yours with "
                             f"{option}=..., --{option.replace('_', '-')} on the command line)")


def check_batched(batch: Mapping[str, Any], tokens_column: str) -> None:
    """Raise :class:`ConfigError` when ``batch`` is one row, not a batch (``ds.map(aug)`` without ``batched=True``):
    its tokens column then holds strings, not lists of them."""
    tokens = batch.get(tokens_column)
    if isinstance(tokens, (list, tuple)) and tokens and isinstance(tokens[0], str):
        raise ConfigError("the augmenter got one row, not a batch: call ds.map(aug, batched=True)")


def seed_tags(tokens: Any, tags: Any, label_names: Sequence[str], types: Sequence[str], scheme: str) -> list[str]:
    """One row's tags as IOB2 names, the row validated (:func:`~hf_rgda.tags.validate_tags`).

    Raises:
        SchemaError: a missing (null) value, a tag outside the label set, or an invalid tagged sentence.
    """
    if tokens is None or tags is None:
        raise SchemaError(f"the {'tokens' if tokens is None else 'tags'} value is missing (null)")
    for what, value in (("tokens", tokens), ("tags", tags)):
        if not isinstance(value, (list, tuple)):
            raise SchemaError(f"the {what} value is {value!r}, not a list")
    if len({isinstance(t, str) for t in tags}) > 1:  # names and ids mixed: an id among names is a typo, not an id
        k, bad = next((k, t) for k, t in enumerate(tags) if not isinstance(t, str))
        raise SchemaError(f"tag {bad!r} (position {k}) is not a tag name, among names; write its name (e.g. 'O')")
    names = [tag_name(t, label_names) for t in tags]
    validate_tags(tokens, names, types, scheme)
    return convert_tags(names, scheme, "IOB2") if scheme != "IOB2" else names


def check_split(ds: Any, *, tokens_column: str = "tokens", tags_column: str = "ner_tags", scheme: str = "IOB2",
                label_names: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Check every row of the split ``ds`` (see the module docstring).

    Args:
        label_names: the label set; default: the ``ClassLabel`` names, else inferred from the string tags.

    Returns:
        The label names and every row's tags as IOB2 names.

    Raises:
        InputError: a missing column, an invalid row (named by its index in ``ds``), or an inferred entity type that
            looks like a typo.
    """
    check_columns(ds.column_names, tokens_column, tags_column)
    tokens, tags = ds[tokens_column][:], ds[tags_column][:]  # [:]: each column read at once
    explicit = label_names is not None or _has_class_labels(ds, tags_column)
    names = list(label_names) if label_names is not None else _label_names(ds, tags_column, tags, explicit)
    if not explicit:
        _refuse_typos(tags)
    types = entity_types(names)
    rows = []
    kind: tuple[bool, int] | None = None  # whether the rows' tags are names, and the first row that said so
    for i, (toks, row) in enumerate(zip(tokens, tags)):
        try:
            if isinstance(row, (list, tuple)) and row:
                named = isinstance(row[0], str)
                kind = kind or (named, i)
                if named != kind[0]:
                    raise SchemaError(f"tag {row[0]!r} is {'a name' if named else 'not a tag name'}, where row "
                                      f"{kind[1]} has {'names' if kind[0] else 'ids'}")
            rows.append(seed_tags(toks, row, names, types, scheme))
        except SchemaError as err:
            raise InputError(f"{err} (tokens: {_preview(toks)})", row=i) from None
    return names, rows


def check_splits(dsd: Mapping[str, Any], *, source: str = "train", tokens_column: str = "tokens",
                 tags_column: str = "ner_tags", scheme: str = "IOB2", label_names: Sequence[str] | None = None,
                 ) -> tuple[list[str], dict[str, list[list[str]]]]:
    """Check every row of every split of ``dsd`` as an augmenter built from split ``source`` accepts rows: the label
    set is ``label_names``, else ``source``'s (:func:`check_split`; the first split's when there is no ``source``),
    and a row of another split with a tag outside it fails as it would fail there.

    Returns:
        The label names and each split's rows' tags as IOB2 names.

    Raises:
        InputError: as :func:`check_split`, the message naming the split.
    """
    first = source if source in dsd else next(iter(dsd))
    out: dict[str, list[list[str]]] = {}
    names = list(label_names) if label_names is not None else None
    for name in [first, *(s for s in dsd if s != first)]:
        try:
            names, out[name] = check_split(dsd[name], tokens_column=tokens_column, tags_column=tags_column,
                                           scheme=scheme, label_names=names)
        except InputError as err:
            raise InputError(f"split {name!r}: {err}") from None
    assert names is not None
    return names, {name: out[name] for name in dsd}


def _has_class_labels(ds: Any, tags_column: str) -> bool:
    return bool(getattr(getattr(ds.features[tags_column], "feature", None), "names", None))


def _label_names(ds: Any, tags_column: str, tags: Sequence[Any], explicit: bool) -> list[str]:
    """The ``ClassLabel`` names, or the string tags of the rows (a null row or tag is left to the row check)."""
    if explicit:
        return label_names_of(ds, tags_column=tags_column)
    seen = {t for row in tags if isinstance(row, (list, tuple)) for t in row if isinstance(t, str)}
    return ["O", *sorted(seen - {"O"})]


def _preview(tokens: Any) -> str:
    return repr(" ".join(map(str, tokens[:12]))) if isinstance(tokens, (list, tuple)) else repr(tokens)


def _refuse_typos(tags: Sequence[Any]) -> None:
    """Raise :class:`InputError` at the first row of an entity type that looks like a typo of a more frequent one."""
    rows: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    for i, row in enumerate(tags):
        labels = {t.partition("-")[2]: t for t in row if isinstance(t, str) and "-" in t} if isinstance(
            row, (list, tuple)) else {}
        for label, t in labels.items():
            rows[label] += 1
            first.setdefault(label, (i, t))
    for rare, n in sorted(rows.items(), key=lambda kv: kv[1]):
        for common, m in rows.most_common():
            if n < m and n <= max(2, m // 20) and _similar(rare, common):
                i, tag = first[rare]
                raise InputError(f"tag {tag!r}: entity type {rare!r} (in {n} row{'s' * (n > 1)}) looks like a typo of "
                                 f"{common!r} (in {m} rows); fix the row, or give the label set explicitly "
                                 "(label_names=[...], --labels on the command line)", row=i)


def _similar(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= 0.8
