"""On-disk response cache: an interrupted run resumes without paying again for completed calls.

Keys are sha256 over the backend identity (never a secret), the messages, the schema and the generation
parameters (including the derived per-call seed). Values are the completion text and usage; an option-probability
answer (:func:`option_probs_key`) is stored the same way, its probabilities as JSON text; a text's reading
(:func:`text_key`, the sense gate's token logprobs) in a table of its own, since it is no call. SQLite in WAL
mode lets several ``datasets.map`` worker processes share one file.

Example:
    >>> import tempfile, pathlib
    >>> cache = ResponseCache(pathlib.Path(tempfile.mkdtemp()) / "r.sqlite3")
    >>> key = cache_key({"backend": "x"}, [{"role": "user", "content": "hi"}], None, {"seed": 1})
    >>> cache.get(key) is None
    True
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ._exceptions import ConfigError
from .llm.base import Completion, OptionProbs, Usage

__all__ = ["ResponseCache", "cache_key", "default_cache_path", "option_probs_key", "text_key"]


def default_cache_path() -> Path:
    """``$HF_RGDA_CACHE`` or ``~/.cache/hf_rgda/responses.sqlite3``."""
    env = os.environ.get("HF_RGDA_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "hf_rgda" / "responses.sqlite3"


def cache_key(identity: Mapping[str, Any], messages: Sequence[Mapping[str, str]], schema: Any,
              params: Mapping[str, Any]) -> str:
    """Stable key of one call."""
    return _digest([identity, [dict(m) for m in messages], schema, params])


def option_probs_key(identity: Mapping[str, Any], messages: Sequence[Mapping[str, str]], options: Sequence[str],
                     params: Mapping[str, Any]) -> str:
    """Stable key of one :meth:`~hf_rgda.llm.LLM.option_probs` call (never equal to a :func:`cache_key`)."""
    return _digest(["option_probs", identity, [dict(m) for m in messages], list(options), params])


def text_key(identity: Mapping[str, Any], prefix: str, text: str) -> str:
    """Stable key of one text's reading by :meth:`~hf_rgda.llm.LLM.text_logprobs` after ``prefix``."""
    return _digest(["text_logprobs", identity, prefix, text])


_PROBE = "hf_rgda-write-probe"


@contextmanager
def _unusable(path: Path) -> Iterator[None]:
    """SQLite's and the file system's errors on the cache file as one :class:`~hf_rgda.ConfigError` line: they
    would fail every call the same way, so they stop the run (the per-seed policy of :mod:`hf_rgda._exceptions`)."""
    try:
        yield
    except sqlite3.DatabaseError as err:  # OperationalError too: read-only, disk full, locked past the timeout
        text = str(err)
        if "not a database" in text or "malformed" in text or "no such column" in text:
            why = "is not a response cache or is damaged"
        else:
            why = "cannot be used"
        raise ConfigError(f"response cache {path}: {why} ({text}); move it away or give another file with "
                          "--cache (a fresh one is created)") from None
    except OSError as err:
        raise ConfigError(f"response cache {path}: cannot be used ({err.strerror or err}); give another file with "
                          "--cache") from None


def _digest(parts: list[Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate must not crash a key


class ResponseCache:
    """A key -> completion store in one SQLite file (connections are opened lazily, per thread, and closed by
    :meth:`close`)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []  # every thread's, for close()
        self._opened_lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.path.is_dir():
                raise ConfigError(f"response cache {self.path}: is a folder; give a file (--cache FILE)")
            with _unusable(self.path):
                conn = self._open()
            with self._opened_lock:
                self._opened.append(conn)
            self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        """A new connection to the file, created (and brought up to date) where needed."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False)  # close() may run on another thread
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT, usage TEXT)")
        conn.execute("CREATE TABLE IF NOT EXISTS readings (key TEXT PRIMARY KEY, logprobs TEXT)")  # not calls
        columns = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
        if "seconds" not in columns:  # files written by 0.1.0 lack it
            conn.execute("ALTER TABLE responses ADD COLUMN seconds REAL")
        return conn

    def close(self) -> None:
        """Close every connection this object opened (a later call opens a new one)."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
        self._local = threading.local()

    def check(self, *, write: bool = True) -> None:
        """Open the cache, read it and (``write``) write to it (rolled back), so that a file that is no cache, a
        damaged one, or one on a read-only or full disk stops a run before its first call
        (:class:`~hf_rgda.ConfigError`, one line), not as a failure of every seed that no rerun can mend. The
        connection is closed again."""
        try:
            conn = self._conn()
            with _unusable(self.path):
                conn.execute("SELECT key FROM responses LIMIT 1").fetchall()
                if not write:
                    return
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute("INSERT OR REPLACE INTO responses (key, text, usage, seconds) VALUES (?, '', '{}', 0)",
                                 (_PROBE,))
                finally:
                    conn.rollback()
        finally:
            self.close()

    def get(self, key: str) -> Completion | None:
        with _unusable(self.path):
            row = self._conn().execute("SELECT text, usage, seconds FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        # seconds: what the call took when it was paid (0 when unknown), so reports can show the data's full cost
        return Completion(text=row[0], usage=Usage(**json.loads(row[1])), seconds=row[2] or 0.0, cached=True)

    def put(self, key: str, completion: Completion) -> None:
        usage = json.dumps(completion.usage.__dict__)
        with _unusable(self.path), self._conn() as conn:
            conn.execute("INSERT OR REPLACE INTO responses (key, text, usage, seconds) VALUES (?, ?, ?, ?)",
                         (key, completion.text, usage, completion.seconds))

    def get_option_probs(self, key: str) -> OptionProbs | None:
        """An :class:`~hf_rgda.llm.OptionProbs` stored by :meth:`put_option_probs` (key: :func:`option_probs_key`)."""
        comp = self.get(key)
        if comp is None:
            return None
        data = json.loads(comp.text)
        return OptionProbs(data["probs"], data["method"], data["mass"], tuple((t, lp) for t, lp in data["top"]),
                           comp.usage, comp.seconds, cached=True)

    def put_option_probs(self, key: str, result: OptionProbs) -> None:
        """Store one option-probability answer (as JSON in the completion's text)."""
        text = json.dumps({"probs": result.probs, "method": result.method, "mass": result.mass,
                           "top": [list(pair) for pair in result.top]}, ensure_ascii=False)
        self.put(key, Completion(text, result.usage, result.seconds))

    def get_logprobs(self, key: str) -> list[float] | None:
        """A text's token logprobs stored by :meth:`put_logprobs` (key: :func:`text_key`)."""
        with _unusable(self.path):
            row = self._conn().execute("SELECT logprobs FROM readings WHERE key = ?", (key,)).fetchone()
        return None if row is None else [float(x) for x in json.loads(row[0])]

    def put_logprobs(self, key: str, logprobs: Sequence[float]) -> None:
        """Store one text's token logprobs, in a table of their own: a reading is no call (not in :func:`len`)."""
        text = json.dumps([round(x, 5) for x in logprobs])
        with _unusable(self.path), self._conn() as conn:
            conn.execute("INSERT OR REPLACE INTO readings (key, logprobs) VALUES (?, ?)", (key, text))

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]
