"""Keeping secrets out of logs, traces, caches and exceptions: one scrubber for the whole package."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["redact"]

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{6,}|sk-ant-[A-Za-z0-9_\-*.]{6,}|AIza[A-Za-z0-9_\-]{10,})")


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every given secret and anything shaped like a provider key replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return _KEY_PATTERN.sub("***", text)
