"""An outage as a user meets it: the installed ``hf-rgda`` binary, in its own process, against the scripted
OpenAI-compatible server answering HTTP 503 to every call, then the same command after the server recovers.

Run 1 must exit non-zero with every seed recorded ``failed``; run 2 must give every seed its rows while paying LLM
calls only for what run 1 never got answered (the response cache is shared; ``datasets``' cache must not serve the
failed run). On 8ae9ee0 run 1 exited 0 and run 2 made no call at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hf_rgda.testing import FakeWorld
from hf_rgda.testing.providers import Action, ProviderServer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ncbi_disease"

pytestmark = pytest.mark.skipif(not (DATA / "train.jsonl").is_file(), reason="../shared/data is not beside the checkout")


def _augment(server: ProviderServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).with_name("hf-rgda")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "OPENAI_API_KEY": "sk-test"}
    argv = [str(binary), "augment", str(DATA), "--llm", "openai:my-model", "--base-url", server.url("openai"),
            "--num-seeds", "2", "--method", "gda", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "r.sqlite3")]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_binary_outage_exits_nonzero_then_heals_paying_only_for_the_failed_seeds(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    with ProviderServer(**FakeWorld().serve()) as server:
        server.push(*[Action.error(503, retry_after=0, message="overloaded")] * 400)  # more than run 1 can ask
        first = _augment(server, tmp_path)
        asked_in_outage = len(server.requests)
        assert first.returncode == 3, first.stderr[-2000:]
        assert "every seed failed" in first.stderr and "Traceback" not in first.stderr
        failed = [json.loads(x) for x in (tmp_path / "out" / "rejections.jsonl").read_text().splitlines()]
        assert [x["rgda_status"] for x in failed] == ["failed", "failed"]

        server.script.clear()  # the provider recovers
        second = _augment(server, tmp_path)
        paid = len(server.requests) - asked_in_outage
    assert second.returncode == 0, second.stderr[-2000:]
    assert paid > 0  # on 8ae9ee0: 0 calls, the failed map served again from datasets' cache
    run = json.loads((tmp_path / "out" / "summary.json").read_text())
    run = run.get("summary", run)
    assert run["seeds"] == 2 and run["failed_seeds"] == 0 and run["accepted"] > 0
    assert run["calls"] - run["cached_calls"] == paid  # every answered call came from the response cache
