"""Prompt templates, shipped as package data, with a stable hash.

Templates use ``string.Template`` placeholders (``$name``) so that JSON braces need no escaping.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from string import Template

__all__ = ["TEMPLATE_NAMES", "render", "template", "templates_hash"]

TEMPLATE_NAMES = (
    "composer",
    "composition_judge",
    "composition_refine",
    "debate_advise",
    "debate_reflect",
    "debate_review",
    "debate_revise",
    "entities_format",
    "entity_verify",
    "guidance",
    "guidance_judge",
    "guidance_refine",
    "inline_format",
    "json_reask",
    "mention_check",
    "judge_scale",
    "repair",
    "seed_generation",
    "segments_format",
)


@cache
def template(name: str) -> str:
    """The raw text of template ``name``."""
    if name not in TEMPLATE_NAMES:
        raise KeyError(f"unknown prompt template {name!r}; known: {', '.join(TEMPLATE_NAMES)}")
    return resources.files(__package__).joinpath(f"{name}.md").read_text(encoding="utf-8").strip()


def render(name: str, **values: object) -> str:
    """Fill template ``name``; a missing placeholder raises ``KeyError``."""
    return Template(template(name)).substitute({k: str(v) for k, v in values.items()})


def templates_hash() -> str:
    """sha256 over every template's name and text: changes whenever any prompt changes."""
    h = hashlib.sha256()
    for name in TEMPLATE_NAMES:
        h.update(name.encode() + b"\0" + template(name).encode() + b"\0")
    return h.hexdigest()
