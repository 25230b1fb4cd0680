"""Generate the docs' tables from the code and the results files, so the docs cannot drift from them.

    python scripts/readme_tables.py          # rewrite the tables
    python scripts/readme_tables.py --check  # exit 1 if a table is out of date (tests/test_readme.py runs this)

The tables sit between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` markers: the option and checker-rule tables
in ``docs/options.md``, the results summary in ``benchmarks/README.md`` (printed by ``benchmarks/summary_table.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
        example = (f"`{ex.candidate}`" + (f" (seed `{ex.seed}`)" if ex.seed != default_seed else "")
                   + "".join(f" (shown `{x}`)" for x in ex.shown)
                   + "".join(f" (accepted for this seed `{x}`)" for x in ex.accepted if x != ex.candidate)
                   + "".join(f" (accepted from another seed `{x}`)" for x in ex.others)
                   + (f" (`max_entity_repeats` {ex.max_entity_repeats})" if ex.others and ex.max_entity_repeats else ""))
        rows.append(f"| `{rule.name}` | {_cell(rule.description)} | {_cell(rule.repair.text if rule.repair else 'rejects')} | {_cell(example)} |")
    return "\n".join(rows)


def summary_table() -> str:
    """The results summary that opens benchmarks/README.md, read from ``benchmarks/results/``."""
    spec = importlib.util.spec_from_file_location("summary_table", ROOT / "benchmarks" / "summary_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.table()


#: file (relative to the repository root) -> {table name: what writes it}
TABLES: dict[str, dict[str, Callable[[], str]]] = {
    "docs/options.md": {"options": options_table, "rules": rules_table},
    "benchmarks/README.md": {"summary": summary_table},
}


def render(text: str, path: str = "docs/options.md") -> str:
    """``text`` (the file ``path``) with every marked table regenerated."""
    for name, make in TABLES[path].items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        if start not in text or end not in text:
            raise SystemExit(f"{path} has no {start.strip()} ... {end.strip()} block")
        head, rest = text.split(start, 1)
        text = head + start + "\n" + make() + "\n" + end + rest.split(end, 1)[1]
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if a table is out of date instead of rewriting it")
    args = p.parse_args(argv)
    stale = []
    for path in TABLES:
        old = (ROOT / path).read_text()
        new = render(old, path)
        if new != old:
            stale.append(path)
            if not args.check:
                (ROOT / path).write_text(new)
    if args.check and stale:
        print(f"tables out of date in {', '.join(stale)}: run python scripts/readme_tables.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
