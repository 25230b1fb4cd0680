"""The docs' generated tables (options and checker rules in docs/options.md, the results summary in
benchmarks/README.md) must match the code and the results files, and the README must stay a short user's page."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tables():
    spec = importlib.util.spec_from_file_location("readme_tables", ROOT / "scripts" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_are_up_to_date() -> None:
    tables = _tables()
    for path in tables.TABLES:
        text = (ROOT / path).read_text()
        assert tables.render(text, path) == text, f"{path} tables are stale: run python scripts/readme_tables.py"


def test_every_option_and_rule_is_documented() -> None:
    from hf_rgda.checking import RULES
    from hf_rgda.config import AugmentConfig

    text = (ROOT / "docs" / "options.md").read_text()
    for f in dataclasses.fields(AugmentConfig):
        assert f"`{f.name}`" in text, f.name
    for rule in RULES:
        assert f"`{rule.name}`" in text, rule.name


def test_readme_is_short_and_its_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 222  # 200, and the Scale out section
    prose = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.DOTALL)  # `[breast cancer](Disease)` is no link
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not in the repository"


def test_benchmarks_readme_opens_with_its_summary_table() -> None:
    head = (ROOT / "benchmarks" / "README.md").read_text().splitlines()[:40]
    assert "<!-- summary:start -->" in head and "<!-- summary:end -->" in head


def test_readme_results_come_from_the_benchmarks_summary() -> None:
    """Every F1 the README quotes is a figure of the generated summary table (itself read from the results files)."""
    summary = _tables().summary_table()
    quoted = re.findall(r"\d\.\d{3} ± \d\.\d{3}", (ROOT / "README.md").read_text())
    assert quoted
    for figure in quoted:
        assert figure in summary, figure
