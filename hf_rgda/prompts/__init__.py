"""Prompt templates, shipped as package data, with a stable hash.

Every ``*.md`` file of this folder is a template, named by its stem; a stage package loaded from elsewhere
(:func:`hf_rgda.stages.load`) adds the templates of its own folder (:func:`add_folder`). A template is a stage's
prompt under the stage's name (:mod:`hf_rgda.stages.registry`; the debate's panel renders ``debate_review`` per
persona), or one of :data:`SHARED`.

Templates use ``string.Template`` placeholders (``$name``) so that JSON braces need no escaping.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

__all__ = ["SHARED", "add_folder", "names", "remove_folder", "render", "template", "templates_hash"]

#: the templates that are no one stage's system prompt, and who uses each (tests/test_layout.py checks that every
#: template is a declared stage's or listed here)
SHARED: dict[str, str] = {
    "entities_format": "the writers' output format for representation 'entities' (stages.registry.system_prompts)",
    "inline_format": "the writers' output format for representation 'inline' (stages.registry.system_prompts)",
    "segments_format": "the writers' output format for representation 'segments' (stages.registry.system_prompts)",
    "json_reask": "the one re-ask of an answer that is not JSON (calls.reask_messages)",
    "judge_scale": "a judge's or reviewer's rating question read by probability (stages.rating)",
    "repair": "a writer's targeted re-ask of its rejected sentences (stages.seed_generation.repair_messages)",
    "debate_advise": "the debate's proposers (stages.panel)",
    "debate_reflect": "the debate's reviewers of the proposals (stages.panel)",
    "debate_revise": "the debate's proposers, revising their proposals (stages.panel)",
}

#: the folders templates are read from: the package's own, then any a stage package added
_FOLDERS: list[Any] = [resources.files(__package__)]
_TEXTS: dict[str, str] = {}


def _scan() -> dict[str, Any]:
    """Every template's name -> its file, over the folders in order; a name twice is an error."""
    found: dict[str, Any] = {}
    for folder in _FOLDERS:
        for entry in folder.iterdir():
            if entry.name.endswith(".md"):
                name = entry.name[: -len(".md")]
                if name in found:
                    raise ValueError(f"prompt template {name!r} is in two folders: {found[name]} and {entry}")
                found[name] = entry
    return found


_FILES: dict[str, Any] = _scan()


def names() -> tuple[str, ...]:
    """Every template's name, sorted."""
    return tuple(sorted(_FILES))


def add_folder(folder: str | Path) -> None:
    """Read the ``*.md`` files of ``folder`` as templates too (a stage package's own prompts).

    Raises:
        ValueError: one of them has the name of a template already known.
    """
    global _FILES
    _FOLDERS.append(Path(folder))
    try:
        _FILES = _scan()
    except ValueError:
        _FOLDERS.pop()
        raise


def remove_folder(folder: str | Path) -> None:
    """Forget the templates of a folder :func:`add_folder` added."""
    global _FILES
    _FOLDERS.remove(Path(folder))
    _FILES = _scan()
    _TEXTS.clear()


def template(name: str) -> str:
    """The raw text of template ``name``."""
    if name not in _TEXTS:
        if name not in _FILES:
            raise KeyError(f"unknown prompt template {name!r}; known: {', '.join(names())}")
        _TEXTS[name] = _FILES[name].read_text(encoding="utf-8").strip()
    return _TEXTS[name]


def render(name: str, **values: object) -> str:
    """Fill template ``name``; a missing placeholder raises ``KeyError``."""
    return Template(template(name)).substitute({k: str(v) for k, v in values.items()})


def templates_hash() -> str:
    """sha256 over every template's name and text: changes whenever any prompt changes."""
    h = hashlib.sha256()
    for name in names():
        h.update(name.encode() + b"\0" + template(name).encode() + b"\0")
    return h.hexdigest()
