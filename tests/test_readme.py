"""The docs' generated tables (options and checker rules in docs/options.md, the results summary in
benchmarks/README.md) must match the code and the results files, and the README must stay a short user's page."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
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
    assert len(text.splitlines()) <= 200
    prose = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.DOTALL)  # `[breast cancer](Disease)` is no link
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not in the repository"


def test_benchmarks_readme_opens_with_the_200_seed_table() -> None:
    """The 200-seed table within the first 40 lines, every F1 in it the mean of its cell's runs in the results."""
    text = (ROOT / "benchmarks" / "README.md").read_text()
    head = text.splitlines()[:40]
    assert "<!-- protocol200:start -->" in head and "<!-- protocol200:end -->" in head
    assert "<!-- summary:start -->" in text and "<!-- summary:end -->" in text
    block = text.split("<!-- protocol200:start -->", 1)[1].split("<!-- protocol200:end -->", 1)[0]
    results_path = ROOT / "benchmarks" / "results" / "protocol200" / "ncbi_disease.json"
    cells = json.loads(results_path.read_text())["cells"] if results_path.exists() else {}
    means = {c["cell"]: c for c in cells.values()}
    found = re.findall(r"^\| (\S+) \| (\d\.\d{4})(?: ± \d\.\d{4})? \((\d+)\)", block, re.MULTILINE)
    assert len(found) == block.count("\n| ") - 1, "a row of the table is not a cell's figures"  # less the header
    for cell, mean, runs in found:
        f1s = [r["f1"] for r in means[cell]["runs"]]
        assert len(f1s) == int(runs) and abs(sum(f1s) / len(f1s) - float(mean)) < 1e-4, cell


def test_readme_results_come_from_the_benchmarks_summary() -> None:
    """Every F1 the README quotes (mean ± sd) is a figure of the generated 20/40-seed summary table (read from the
    results files) or the mean ± sd of a 200-seed cell's runs in its results file."""
    summary = _tables().summary_table()
    cells = json.loads((ROOT / "benchmarks" / "results" / "protocol200" / "ncbi_disease.json").read_text())["cells"]
    protocol = {f"{c['f1_mean']:.4f} ± {c['f1_sd']:.4f}" for c in cells.values()}
    quoted = re.findall(r"(?<![\d.])\d\.\d{3,4} ± \d\.\d{3,4}(?![\d])", (ROOT / "README.md").read_text())
    assert quoted
    for figure in quoted:
        assert figure in summary or figure in protocol, figure


def test_readme_results_table_rows_and_p_values_are_their_cells() -> None:
    """Each row of the README's 200-seed table names a cell by its F1: its rows added are that cell's, and its
    difference and p against the seeds alone are the results file's bootstrap (p as rounded in the table)."""
    results = json.loads((ROOT / "benchmarks" / "results" / "protocol200" / "ncbi_disease.json").read_text())
    by_f1 = {f"{c['f1_mean']:.4f} ± {c['f1_sd']:.4f}": c for c in results["cells"].values()}
    text = (ROOT / "README.md").read_text().split("## Results", 1)[1]
    rows = re.findall(r"^\| [^|]+ \| (\d+) \| (\d\.\d{4} ± \d\.\d{4}) \| ([^|]*)\|$", text, re.MULTILINE)
    assert len(rows) >= 3
    for added, f1, versus in rows:
        cell = by_f1[f1]
        assert cell["augmented"] == int(added), cell["cell"]
        if cell["cell"] == "noaug":
            assert not versus.strip()
            continue
        delta, p = re.fullmatch(r"\s*([+-]\d\.\d{4}) \((\d\.\d+)\)\s*", versus).groups()
        boot = results["bootstrap"][f"{cell['cell']} vs noaug"]
        assert f"{boot['delta']:+.4f}" == delta, cell["cell"]
        assert abs(boot["p_value"] - float(p)) <= 0.5 * 10 ** -len(p.split(".")[1]), (cell["cell"], p)


def test_benchmarks_readme_is_short_and_every_decision_is_indexed() -> None:
    """benchmarks/README.md stays a reader's page (its story lives in docs/decisions/), links resolve, and the
    decisions' index names every record."""
    path = ROOT / "benchmarks" / "README.md"
    text = path.read_text()
    assert len(text.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", re.sub(r"`[^`]*`", "", text)):
        if not target.startswith(("http://", "https://")):
            assert (path.parent / target).exists(), f"benchmarks/README.md links to {target}, which is missing"
    decisions = ROOT / "docs" / "decisions"
    index = (decisions / "README.md").read_text()
    for record in sorted(decisions.glob("*.md")):
        if record.name != "README.md":
            assert f"]({record.name})" in index, f"docs/decisions/README.md does not list {record.name}"
    for target in re.findall(r"\]\(([^)#\s]+)\)", re.sub(r"`[^`]*`", "", index)):
        assert (decisions / target).exists(), f"docs/decisions/README.md links to {target}, which is missing"
