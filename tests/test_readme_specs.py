"""The README's API examples work as a new user runs them: ``hf-rgda augment`` with each example spec
(``openai:gpt-5.5``, ``anthropic:claude-sonnet-5-5``, ``gemini:gemini-3.8-flash``, and an OpenAI-compatible server
through ``--base-url``) on 3 NCBI-disease seeds, ``--method rgda`` with its defaults (entity verification on), against
the strict provider fake answering from the scripted world. A request the provider would refuse fails the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_rgda.llm import EXAMPLE_MODELS
from hf_rgda.testing import FakeWorld
from hf_rgda.testing.providers import ProviderServer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ncbi_disease"
KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
SPECS = [f"{b}:{m}" for b, m in EXAMPLE_MODELS.items()] + ["openai:my-model"]  # the last: a self-hosted server

pytestmark = pytest.mark.skipif(not (DATA / "train.jsonl").is_file(), reason="../shared/data is not beside the checkout")


@pytest.mark.parametrize("spec", SPECS)
def test_readme_spec_augments_three_ncbi_seeds_against_its_strict_fake(spec: str, tmp_path: Path, capsys,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for provider in ("openai", "anthropic", "gemini"):
        pytest.importorskip({"openai": "openai", "anthropic": "anthropic", "gemini": "google.genai"}[provider])
    from hf_rgda.cli import main

    backend = spec.split(":")[0]
    monkeypatch.setenv(KEYS[backend], "sk-test-key")
    out = tmp_path / "out"
    with ProviderServer(**FakeWorld().serve()) as server:
        code = main(["augment", str(DATA), "--llm", spec, "--base-url", server.url(backend), "--num-seeds", "3",
                     "--method", "rgda", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")])
        bodies = [r.body for r in server.requests]
    printed = capsys.readouterr()
    assert code == 0, printed.err[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    run = summary.get("summary", summary)
    assert run["seeds"] == 3 and run["failed_seeds"] == 0 and run["accepted"] > 0
    assert run["entity_verification"]["entities"] > 0  # verification ran (rgda's default)
    backend_info = run.get("backend") or {}
    assert backend_info.get("adaptations", []) == []  # the record predicted every parameter: nothing was refused
    if spec == "openai:gpt-5.5":
        assert all("max_tokens" not in b and "temperature" not in b and not b.get("logprobs") for b in bodies)
        assert backend_info["option_reading"] == "samples"
    elif spec == "anthropic:claude-sonnet-5-5":
        assert all("temperature" not in b and b["thinking"] == {"type": "disabled"} for b in bodies)
    elif spec == "gemini:gemini-3.8-flash":
        configs = [b["generationConfig"] for b in bodies]
        assert all("temperature" not in c and not c.get("responseLogprobs") for c in configs)
    else:  # a self-hosted OpenAI-compatible server keeps today's request: max_tokens, temperature, logprobs
        assert any(b.get("logprobs") for b in bodies) and all("max_tokens" in b for b in bodies)
        assert backend_info["option_reading"] == "logprobs"
