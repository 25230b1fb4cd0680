"""Keeping secrets out of logs, traces, caches and exceptions: one scrubber for the whole package."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

__all__ = ["environment_secrets", "redact"]

_KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{6,}|sk-ant-[A-Za-z0-9_\-*.]{6,}|AIza[A-Za-z0-9_\-]{10,})")


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every given secret and anything shaped like a provider key replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return _KEY_PATTERN.sub("***", text)


def environment_secrets() -> list[str]:
    """The values of the environment's key and token variables (``*_API_KEY``, ``*_TOKEN``, ``HF_TOKEN``,
    ``HUGGING_FACE_HUB_TOKEN``) of 8 characters or more: what must never leave this machine in published text."""
    names = [k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN")) or k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")]
    return [os.environ[k] for k in names if len(os.environ[k]) >= 8]
