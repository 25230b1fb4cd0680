"""Failed seeds are never a cached final result: the failure ledger that lets a rerun retry them.

``datasets`` caches ``ds.map(aug, batched=True)`` under a fingerprint of the input and of the augmenter's pickled
state, and serves the cached rows on a rerun without calling the augmenter. A seed that failed during a provider
outage would be served failed forever. So an augmenter that records a failed seed also records a new random token in
this ledger, under its identity (configuration, backend, label set, columns: :func:`identity`); the token is part of
the augmenter's pickled state (``RGDAAugmenter.__getstate__``), hence of the fingerprint of every later map. The next
run of the same command, or the same ``ds.map`` in Python, therefore misses the ``datasets`` cache and runs the
augmenter again: the response cache (:mod:`hf_rgda.cache`) serves every call already answered, so the seeds accepted
before cost nothing and come out the same, and only the calls that failed are paid again. A run without failures
leaves the token as it is, so its rows are cached and served as before; the token never goes back, so the rows cached
with failures are never served again. Without a response cache (``cache=False``) the rerun pays every call again.

The ledger is a folder of small JSON files, one per identity, beside the response cache (``<cache file>.failures``;
with ``cache=False`` beside the default cache), each written whole and atomically (``num_proc`` workers may write
at once: any of their tokens is new). Each also lists the keys (``rgda_source``) of the seeds that failed last.

Example:
    >>> import tempfile
    >>> ledger = FailureLedger(tempfile.mkdtemp())
    >>> ledger.token("abc")
    ''
    >>> ledger.record("abc", ["seed1"])
    >>> len(ledger.token("abc"))
    32
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["FailureLedger", "identity", "ledger_folder"]


def identity(parts: Mapping[str, Any]) -> str:
    """A short stable digest of an augmenter's identity (JSON-able ``parts``; anything else by its ``repr``)."""
    text = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def ledger_folder(cache_file: str | os.PathLike[str]) -> Path:
    """The ledger folder beside the response cache file ``cache_file``."""
    path = Path(cache_file)
    return path.with_name(path.name + ".failures")


class FailureLedger:
    """The failure tokens of augmenter identities, in ``folder``."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def _file(self, ident: str) -> Path:
        return self.folder / f"{ident}.json"

    def token(self, ident: str) -> str:
        """The token of the last failure recorded for ``ident``; ``""`` when none was (or the file is unreadable)."""
        try:
            data = json.loads(self._file(ident).read_text())
        except (OSError, ValueError):
            return ""
        return str(data.get("token", "")) if isinstance(data, dict) else ""

    def record(self, ident: str, failed: Sequence[str]) -> None:
        """Record that the seeds ``failed`` (their keys) failed under ``ident``: a new token."""
        self.folder.mkdir(parents=True, exist_ok=True)
        body = json.dumps({"token": uuid.uuid4().hex, "failed": list(failed)})
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(body)
            os.replace(tmp, self._file(ident))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
