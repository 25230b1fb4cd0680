from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datasets import load_from_disk

from hf_rgda import ScriptedLLM
from hf_rgda.cli import main
from hf_rgda.tags import validate_tags

from .conftest import stateless_handler
from .test_local_integration import TINY, needs_tiny

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ncbi_disease"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data is not beside the checkout")


def _write_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"tokens": ["Mutations", "in", "APC", "cause", "colon", "cancer", "."],
             "ner_tags": ["O", "O", "O", "O", "B-Disease", "I-Disease", "O"]},
            {"tokens": ["No", "disease", "named", "here", "."], "ner_tags": ["O"] * 5}]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


def test_augment_cli_writes_dataset_summary_and_rejections(tmp_path: Path, capsys) -> None:
    folder = _write_folder(tmp_path)
    code = main(["augment", str(folder), "--method", "rgda", "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "r.sqlite3")], llm=ScriptedLLM(stateless_handler, name="stateless"))
    assert code == 0
    dsd = load_from_disk(str(tmp_path / "out" / "dataset"))
    assert len(dsd["seed"]) == 1 and len(dsd["augmented"]) == 3  # --min-entities 1 skips the entity-less row
    for tokens, tags in zip(dsd["augmented"]["tokens"], dsd["augmented"]["ner_tags"]):
        validate_tags(tokens, tags, ["Disease"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["summary"]
    assert summary["accepted"] == 3 and summary["judge_rounds"]["gr"] == {"1": 1}
    assert "accepted: 3" in capsys.readouterr().out


def test_cli_reports_bad_rows(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps({"tokens": ["a", "b"], "ner_tags": ["B-X", "I-Y"]}) + "\n")
    code = main(["augment", str(folder), "--out", str(tmp_path / "o"), "--min-entities", "0"],
                llm=ScriptedLLM(stateless_handler))
    assert code == 2
    assert "row 0" in capsys.readouterr().err


def test_augment_checks_the_splits_rows_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI checks every row of the split before sampling, and builds its augmenter from that check instead of
    checking the split again (it read and validated every row twice)."""
    from hf_rgda import augmenter, inputs

    calls: list[int] = []
    check = inputs.check_split

    def counted(*args, **kwargs):
        calls.append(1)
        return check(*args, **kwargs)

    monkeypatch.setattr(inputs, "check_split", counted)
    monkeypatch.setattr(augmenter, "check_split", counted)
    folder = _write_folder(tmp_path)
    assert main(["augment", str(folder), "--out", str(tmp_path / "out"), "--dry-run"],
                llm=ScriptedLLM(stateless_handler, name="stateless")) == 0
    assert len(calls) == 1


def _cache_rows(path: Path) -> int:
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        try:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


@pytest.mark.slow
@needs_tiny
@needs_data
def test_killed_cli_run_resumes_without_reissuing_calls(tmp_path: Path) -> None:
    cache = tmp_path / "r.sqlite3"
    cmd = [sys.executable, "-m", "hf_rgda.cli", "augment", str(DATA), "--num-seeds", "3", "--method", "gda",
           "--llm", TINY, "--max-tokens", "256", "--max-failed", "2", "--out", str(tmp_path / "out"), "--cache", str(cache)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 1200  # safety nets only (seconds here; minutes on cores shared with other jobs)
    while _cache_rows(cache) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = _cache_rows(cache)
    assert done_before >= 2
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["summary"]
    paid = summary["calls"] - summary["cached_calls"]
    assert summary["cached_calls"] >= done_before  # every call completed before the kill was served from cache
    assert _cache_rows(cache) == done_before + paid  # and nothing completed was asked again


# Authentication and configuration errors stop the run (the per-seed policy in hf_rgda/_exceptions.py).
def test_missing_api_key_stops_the_run_with_a_clear_message(tmp_path: Path, capsys) -> None:
    folder = _write_folder(tmp_path)
    code = main(["augment", str(folder), "--llm", "openai:gpt-5.5", "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "r.sqlite3")])
    err = capsys.readouterr().err
    assert code == 2 and "hf-rgda: error: openai: no API key: set OPENAI_API_KEY" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # no empty augmented split


def test_rejected_api_key_stops_the_run_without_showing_it(tmp_path: Path, capsys,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from hf_rgda.testing.providers import ProviderServer

    key = "sk-wrong-SECRETkey-0042"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    folder = _write_folder(tmp_path)
    with ProviderServer(lambda m, s: {}, keys={"the-right-key"}) as server:
        code = main(["augment", str(folder), "--llm", "openai:gpt-5.5", "--base-url", server.url("openai"),
                     "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "r.sqlite3")])
        assert len(server.requests) == 1  # the first call stops the run: no retry, no other seed
    out, err = capsys.readouterr()
    assert code == 2 and "hf-rgda: error:" in err and "HTTP 401" in err and "Traceback" not in err
    assert "SECRETkey" not in out + err and not (tmp_path / "out").exists()


def test_remote_backends_read_their_key_at_the_first_call_not_at_construction() -> None:
    import asyncio

    from hf_rgda import AuthenticationError
    from hf_rgda.llm import EXAMPLE_MODELS, load_llm

    for backend, model in EXAMPLE_MODELS.items():
        llm = load_llm(f"{backend}:{model}")  # no key in the environment (conftest): constructing is fine
        with pytest.raises(AuthenticationError, match=r"no API key: set \w+_API_KEY"):
            asyncio.run(llm.complete([{"role": "user", "content": "hi"}], schema=None, params={}))


def test_config_options_are_generated_from_the_dataclasses(tmp_path: Path, capsys) -> None:
    import dataclasses

    from hf_rgda import AugmentConfig
    from hf_rgda.train import TrainConfig

    for command, config in (("augment", AugmentConfig), ("train", TrainConfig)):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        for f in dataclasses.fields(config):
            assert "--" + f.name.replace("_", "-") in text, (command, f.name)
    folder = _write_folder(tmp_path)
    assert main(["augment", str(folder), "--method", "gda", "--num-augmented", "2", "--no-salvage", "--max-repairs", "0",
                 "--out", str(tmp_path / "out")], llm=ScriptedLLM(stateless_handler)) == 0
    config = json.loads((tmp_path / "out" / "summary.json").read_text())["config"]
    assert (config["method"], config["num_augmented"], config["salvage"], config["max_repairs"]) == ("gda", 2, False, 0)
    assert config["keep_originals"] and config["keep_rejected"]  # the CLI's outputs need both


def test_local_model_options_reach_the_local_backend_and_are_refused_for_a_remote_one(tmp_path: Path, capsys) -> None:
    from hf_rgda import RGDAError
    from hf_rgda.cli import _llm_options, _parser

    def opts(*argv: str) -> dict[str, object]:
        return _llm_options(_parser().parse_args(["augment", str(tmp_path), "--out", str(tmp_path / "out"), *argv]))

    local = "--llm=local:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert opts(local, "--lookup", "off") == {"base_url": None, "lookup": "off"}
    assert "lookup" not in opts(local)  # the backend's own default
    with pytest.raises(RGDAError, match="--lookup is the local model's option"):
        opts("--llm=openai:gpt-4o-mini", "--lookup", "off")
    for argv in (("--lookup", "sometimes"), ("--parallel", "2")):  # --parallel: the slots were removed (issue #55)
        with pytest.raises(SystemExit):
            opts(local, *argv)
