"""The code an augmenter's rows depend on, as one hash.

``datasets`` names the cache file of ``ds.map(aug)`` (and of every ``filter``/``map`` after it) by hashing ``aug``.
An augmenter hashed by its configuration alone would let an edited checker, prompt or pipeline silently reuse rows
made by the old code, and a model trained downstream would train on them: the state ``datasets`` hashes therefore
carries this hash of every file of the installed package (code and prompt templates), next to the version.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from ._version import __version__

PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def source_hash(root: Path = PACKAGE_DIR) -> str:
    """sha256 over the relative path and bytes of every file under ``root`` (byte-code caches left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def hash_extras() -> dict[str, str]:
    """What ``__getstate__`` adds to an augmenter's state for hashing (and ``__setstate__`` drops)."""
    return {"version": __version__, "source": source_hash()}
