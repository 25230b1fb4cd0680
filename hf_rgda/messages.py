"""Chat messages, built one way: a system prompt and user turns (:func:`chat`), a user turn of titled sections
(:func:`build_messages`), and the follow-ups that extend a conversation (:func:`add_section`, :func:`follow_up`).
Every function is pure: it returns new lists and never mutates what it is given.

Example:
    >>> build_messages("You tag sentences.", sentence="Gout hurts .", task="Write 2 new versions.")[1]["content"]
    'Sentence:\\nGout hurts .\\n\\nTask:\\nWrite 2 new versions.'
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Messages", "add_section", "build_messages", "chat", "follow_up", "section"]

Messages = list[dict[str, str]]


def chat(system: str, *user: str) -> Messages:
    """The system prompt and one user message per text of ``user``."""
    return [{"role": "system", "content": system}, *({"role": "user", "content": u} for u in user)]


def section(name: str, value: Any) -> str:
    """One titled section of a user message (``sentence`` becomes ``"Sentence:\\n..."``); a value that is not text
    is written as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"{name.replace('_', ' ').capitalize()}:\n{text}"


def build_messages(system: str, **sections: Any) -> Messages:
    """The system prompt and one user message of titled sections (:func:`section`)."""
    return chat(system, "\n\n".join(section(k, v) for k, v in sections.items()))


def add_section(messages: Messages, name: str, value: Any) -> Messages:
    """``messages`` with one more section at the end of the last message."""
    return [*messages[:-1], {**messages[-1], "content": f"{messages[-1]['content']}\n\n{section(name, value)}"}]


def follow_up(messages: Messages, answer: str, user: str) -> Messages:
    """The conversation so far, the model's ``answer`` and a new user turn."""
    return [*messages, {"role": "assistant", "content": answer}, {"role": "user", "content": user}]
