"""Generate the README's option and checker-rule tables from the code, so the docs cannot drift from it.

    python scripts/readme_tables.py          # rewrite the tables in README.md
    python scripts/readme_tables.py --check  # exit 1 if README.md is out of date (tests/test_readme.py runs this)

The tables sit between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def options_table() -> str:
    """Every field of ``AugmentConfig``: the keyword of ``RGDAAugmenter`` and the flag of ``hf-rgda augment``."""
    from hf_rgda.config import AugmentConfig

    rows = ["| option (`RGDAAugmenter(...)` / `hf-rgda augment`) | default | what it does |", "|---|---|---|"]
    for f in dataclasses.fields(AugmentConfig):
        flag = "--" + f.name.replace("_", "-")
        choices = f.metadata.get("choices")
        what = f.metadata["help"] + (f" (one of {', '.join(f'`{c}`' for c in choices)})" if choices else "")
        rows.append(f"| `{f.name}` / `{flag}` | `{f.default!r}` | {_cell(what)} |")
    return "\n".join(rows)


def rules_table() -> str:
    """The checker's rules in the order they run, with what each rejects or repairs and an example it fires on."""
    from hf_rgda.checking import RULES
    from hf_rgda.checking.table import Example

    default_seed = Example("").seed
    rows = [f"Examples are written from the seed `{default_seed}` unless they name another; entities as `[text](Type)`.",
            "", "| rule | rejects | with `salvage` (default) | example it fires on |", "|---|---|---|---|"]
    for rule in RULES:
        ex = rule.example
        example = f"`{ex.candidate}`" + (f" (seed `{ex.seed}`)" if ex.seed != default_seed else "")
        rows.append(f"| `{rule.name}` | {_cell(rule.description)} | {_cell(rule.repair or 'rejects')} | {_cell(example)} |")
    return "\n".join(rows)


TABLES: dict[str, Callable[[], str]] = {"options": options_table, "rules": rules_table}


def render(text: str) -> str:
    """``text`` with every marked table regenerated."""
    for name, make in TABLES.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        if start not in text or end not in text:
            raise SystemExit(f"README.md has no {start.strip()} ... {end.strip()} block")
        head, rest = text.split(start, 1)
        text = head + start + "\n" + make() + "\n" + end + rest.split(end, 1)[1]
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if README.md is out of date instead of rewriting it")
    args = p.parse_args(argv)
    old = README.read_text()
    new = render(old)
    if args.check:
        if new != old:
            print("README.md tables are out of date: run python scripts/readme_tables.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
