"""The option helpers the ``hf-rgda`` commands share (:mod:`hf_rgda.cli`, :mod:`hf_rgda.cli_models`)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from .config import is_flag

__all__ = ["add_columns", "add_config_options", "config_from"]


def add_config_options(parser: argparse.ArgumentParser, config: type, defaults: dict[str, Any] | None = None) -> None:
    """One ``--field-name`` option per field of the dataclass ``config`` (help from the field's ``help`` metadata,
    ``choices`` from its ``choices`` metadata, ``--x/--no-x`` for booleans); ``defaults``: a command's own defaults
    for some fields (in the help too)."""
    groups: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        default = (defaults or {}).get(f.name, f.default)
        kw: dict[str, Any] = {"dest": f.name, "default": default, "help": f"{f.metadata['help']} (default: {default})"}
        if is_flag(f):  # ``bool | None``: unset, --x or --no-x
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = f.metadata.get("type", type(f.default))  # ``type`` where the default is None
            if "choices" in f.metadata:
                kw["choices"] = f.metadata["choices"]
        group = f.metadata.get("group")
        if group and group not in groups:
            groups[group] = parser.add_argument_group(f"{group} ({config.__name__})")
        (groups[group] if group else parser).add_argument("--" + f.name.replace("_", "-"), **kw)


def config_from(args: argparse.Namespace, config: type) -> Any:
    """The ``config`` dataclass from the options :func:`add_config_options` added."""
    return config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config)})


def add_columns(parser: Any) -> None:
    parser.add_argument("--tokens-column", default="tokens")
    parser.add_argument("--tags-column", default="ner_tags")
