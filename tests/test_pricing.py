"""Prices: every provider model the README names is priced, with the date and page it was read from; price files
still override the table."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hf_rgda.llm import EXAMPLE_MODELS
from hf_rgda.pricing import PriceTable, cost_report, load_prices

ROOT = Path(__file__).resolve().parents[1]
SPEC = re.compile(r"\b(openai|anthropic|gemini):([A-Za-z0-9][A-Za-z0-9._/-]*[A-Za-z0-9])")


def readme_provider_models(text: str) -> set[str]:
    """The ``provider:model`` specs the README names, less those shown against a self-hosted server (a ``base_url``
    in the same statement: the line or the two after it), which no price table can know."""
    lines = text.splitlines()
    found = set()
    for i, line in enumerate(lines):
        for m in SPEC.finditer(line):
            statement = " ".join(lines[i:i + 3])
            if "base_url" not in statement and "--base-url" not in statement:
                found.add(m.group(0))
    return found


def test_every_provider_model_the_readme_names_is_priced_with_a_date_and_a_source() -> None:
    named = readme_provider_models((ROOT / "README.md").read_text())
    assert {f"{b}:{m}" for b, m in EXAMPLE_MODELS.items()} <= named  # the parser sees the README's examples
    table = PriceTable.default()
    unpriced = sorted(n for n in named if n not in table.prices)
    assert unpriced == [], f"README names models without a price in hf_rgda/pricing.py: {unpriced}"
    for name in named:
        source = table.prices[name].source
        assert re.match(r"\d{4}-\d{2}-\d{2}, ", source), (name, source)
        assert "https://" in source or "price page" in source, (name, source)


def test_the_readme_parser_skips_self_hosted_names() -> None:
    text = 'llm="openai:Qwen2.5-7B-Instruct",\n    llm_options={"base_url": "http://gpu1:8000/v1"}\n' \
           "x --llm openai:my-model --base-url http://127.0.0.1:8080/v1\n| `anthropic:claude-x-1` |\n"
    assert readme_provider_models(text) == {"anthropic:claude-x-1"}


def test_example_models_are_priced_and_a_price_file_overrides(tmp_path: Path) -> None:
    usage = {"composer": {"calls": 1, "prompt_tokens": 1_000_000, "completion_tokens": 1_000_000, "cached_tokens": 0}}
    report = cost_report(usage, {"backend": "openai", "model": "gpt-5.5"})
    assert report["priced"] and report["usd"] == 35.0 and "developers.openai.com" in report["note"]
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"openai:gpt-5.5": {"input": 1.0, "output": 1.0}}))
    table = PriceTable.default().updated(load_prices(path))
    assert cost_report(usage, {"backend": "openai", "model": "gpt-5.5"}, table)["usd"] == 2.0
