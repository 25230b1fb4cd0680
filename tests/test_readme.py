"""The README's option and rule tables are generated from the code and must match it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tables():
    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "scripts" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_tables_are_up_to_date() -> None:
    tables = _tables()
    text = (ROOT / "README.md").read_text()
    assert tables.render(text) == text, "README.md tables are stale: run python scripts/readme_tables.py"


def test_every_option_and_rule_is_in_the_readme() -> None:
    import dataclasses

    from hf_rgda.checking import RULES
    from hf_rgda.config import AugmentConfig

    text = (ROOT / "README.md").read_text()
    for f in dataclasses.fields(AugmentConfig):
        assert f"`{f.name}`" in text, f.name
    for rule in RULES:
        assert f"`{rule.name}`" in text, rule.name
