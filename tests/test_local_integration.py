"""Real-model integration tests: the tiny SmolLM2 GGUF through llama.cpp (provisioned by scripts/setup.sh)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datasets import Dataset

from hf_rgda import RGDAAugmenter, load_llm
from hf_rgda.provision import MODELS, snapshot_dir
from hf_rgda.tags import validate_tags

from .conftest import LABELS, SEED_ROWS

pytestmark = pytest.mark.slow
TINY = "local:hf-rgda/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf"
TINY_PATH = snapshot_dir(MODELS["tiny"]) / MODELS["tiny"].filename
needs_tiny = pytest.mark.skipif(not TINY_PATH.is_file(), reason="tiny model not provisioned: bash scripts/setup.sh --dev")


@pytest.fixture(scope="module")
def tiny_llm():
    pytest.importorskip("llama_cpp")
    return load_llm(TINY, n_ctx=2048)


@needs_tiny
def test_rgda_through_map_on_a_real_gguf(tiny_llm, tmp_path: Path) -> None:
    ds = Dataset.from_dict({k: v[:2] for k, v in SEED_ROWS.items()})
    aug = RGDAAugmenter(tiny_llm, label_names=LABELS, method="rgda", num_augmented=2, max_rounds=2, max_tokens=384,
                        keep_rejected=True, cache=tmp_path / "r.sqlite3", domain="biomedical abstracts")
    out = ds.map(aug, batched=True)
    s = aug.summary
    assert s.seeds == 2 and s.accounting.calls >= 2 * 2  # at least seed generation and guidance per seed
    statuses = set(out["rgda_status"])
    assert statuses <= {"original", "accepted", "rejected", "failed"}
    for tokens, tags, status in zip(out["tokens"], out["ner_tags"], out["rgda_status"]):
        if status in ("original", "accepted"):
            validate_tags(tokens, tags, ["Disease"])
    # every generated sentence is accounted for: accepted, or rejected with a reason, or its seed failed
    for row in out.filter(lambda st: st == "rejected", input_columns="rgda_status"):
        assert "/" in row["rgda_reason"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("llama_cpp.server")
    if not TINY_PATH.is_file():
        pytest.skip("tiny model not provisioned")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(TINY_PATH), "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "2048", "--model_alias", "smollm2"],
                            stdout=subprocess.DEVNULL, stderr=(log := (tmp_path_factory.mktemp("srv") / "log").open("w")))
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: see {log.name}")
            time.sleep(0.5)
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(30)


def test_openai_backend_against_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:
    import asyncio

    llm = load_llm("openai:smollm2", base_url=llama_server)
    schema = {"type": "object", "properties": {"disease": {"type": "string", "enum": ["asthma", "gout"]}},
              "required": ["disease"], "additionalProperties": False}
    comp = asyncio.run(llm.complete([{"role": "user", "content": "Name a disease."}], schema=schema,
                                    params={"temperature": 0.0, "max_tokens": 32, "seed": 1}))
    assert json.loads(comp.text)["disease"] in ("asthma", "gout")
    assert comp.usage.prompt_tokens > 0 and comp.usage.completion_tokens > 0
    ds = Dataset.from_dict({k: v[:1] for k, v in SEED_ROWS.items()})
    aug = RGDAAugmenter("openai:smollm2", llm_options={"base_url": llama_server}, label_names=LABELS, method="gda",
                        num_augmented=2, max_tokens=384, cache=tmp_path / "r.sqlite3", keep_rejected=True)
    out = ds.map(aug, batched=True)
    assert aug.summary.accounting.calls >= 2 and "original" in out["rgda_status"]


def test_cli_against_llama_cpp_server_prints_an_unpriced_cost_report(llama_server: str, tmp_path: Path, capsys) -> None:
    from hf_rgda.cli import main

    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"tokens": SEED_ROWS["tokens"][0], "ner_tags": SEED_ROWS["ner_tags"][0]}]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    code = main(["augment", str(folder), "--llm", "openai:smollm2", "--base-url", llama_server, "--method", "gda",
                 "--num-augmented", "2", "--max-tokens", "256", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")])
    assert code == 0
    printed = capsys.readouterr().out
    assert "cost: unpriced" in printed and "openai:smollm2 has no price in the table" in printed
    report = json.loads((out / "summary.json").read_text())
    assert report["cost"]["priced"] is False and report["cost"]["usd"] is None
    assert report["summary"]["prompt_tokens"] > 0 and "guidance" in report["cost"]["by_stage"]


@needs_tiny
def test_biorda_through_map_on_a_real_gguf(tiny_llm, tmp_path: Path) -> None:
    """WHERE (Captum on MiniLM fine-tuned on the seeds) + WHICH (3-agent debate on the tiny GGUF) via ds.map."""
    pytest.importorskip("captum")
    from hf_rgda.attribution import fit_seed_model
    from hf_rgda.provision import snapshot_dir as snap

    minilm = snap(MODELS["minilm"])
    if not (minilm / "config.json").is_file():
        pytest.skip("MiniLM not provisioned")
    ds = Dataset.from_dict({k: v[:2] for k, v in SEED_ROWS.items()})
    model_dir = fit_seed_model(ds, str(tmp_path / "where"), encoder=str(minilm), max_steps=5, label_names=LABELS)
    aug = RGDAAugmenter(tiny_llm, label_names=LABELS, method="biorda", num_augmented=2, max_tokens=384,
                        attribution_model=model_dir, debate_agents=3, debate_rounds=2, keep_rejected=True,
                        cache=tmp_path / "r.sqlite3", domain="biomedical abstracts")
    out = ds.map(aug, batched=True)
    traces = [json.loads(t) for t, s in zip(out["rgda_trace"], out["rgda_status"]) if t and s == "original"]
    assert len(traces) == 2
    for t in traces:
        assert t["attribution"]["selected"] and not set(t["attribution"]["selected"]) & set(t["attribution"]["protected"])
        assert t["failure"] or t["debate"]["transcript"]  # a debate ran, or its failure was recorded
    for tokens, tags, status in zip(out["tokens"], out["ner_tags"], out["rgda_status"]):
        if status in ("original", "accepted"):
            validate_tags(tokens, tags, ["Disease"])
    assert aug.summary.accounting.stage_calls["debate_advise"] >= 1
