"""On-disk response cache: an interrupted run resumes without paying again for completed calls.

Keys are sha256 over the backend identity (never a secret), the messages, the schema and the generation
parameters (including the derived per-call seed). Values are the completion text and usage; an option-probability
answer (:func:`option_probs_key`) is stored the same way, its probabilities as JSON text. SQLite in WAL
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .llm.base import Completion, OptionProbs, Usage

__all__ = ["ResponseCache", "cache_key", "default_cache_path", "option_probs_key"]


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


def _digest(parts: list[Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate must not crash a key


class ResponseCache:
    """A key -> completion store in one SQLite file (connections are opened lazily, per thread)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT, usage TEXT)")
            columns = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
            if "seconds" not in columns:  # files written by 0.1.0 lack it
                conn.execute("ALTER TABLE responses ADD COLUMN seconds REAL")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> Completion | None:
        row = self._conn().execute("SELECT text, usage, seconds FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        # seconds: what the call took when it was paid (0 when unknown), so reports can show the data's full cost
        return Completion(text=row[0], usage=Usage(**json.loads(row[1])), seconds=row[2] or 0.0, cached=True)

    def put(self, key: str, completion: Completion) -> None:
        usage = json.dumps(completion.usage.__dict__)
        with self._conn() as conn:
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

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._local = threading.local()
