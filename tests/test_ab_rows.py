"""benchmarks.ab_rows: an A/B's rows read without training (rows per seed, shared entity sets, quoted rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.ab_rows import arm_rows, describe, inline, write_readme


def row(text: str, tags: str) -> dict:
    return {"tokens": text.split(), "tags": tags.split()}


GLIOMA = row("PTEN raises glioma risk", "O O B-Disease O")
GOUT = row("Smoking raises gout risk", "O O B-Disease O")
GLIOMA2 = row("Glioma was seen early", "B-Disease O O O")


def results(tmp_path: Path, per_seed: list[int], rows: list[dict]) -> Path:
    path = tmp_path / "ab.json"
    path.write_text(json.dumps({"arms": {"a": {"commit": "abc1234"}},
                                "chunks": {"a": [{"seeds": [0, 1], "per_seed": per_seed, "rows": rows}]}}))
    return path


def test_rows_take_their_seed_from_the_chunks_counts(tmp_path: Path) -> None:
    rows, seeds = arm_rows(results(tmp_path, [2, 1], [GLIOMA, GLIOMA2, GOUT]), "a")
    assert [r["seed"] for r in rows] == [0, 0, 1] and seeds == [0, 1]
    with pytest.raises(SystemExit, match="more rows than its per_seed"):
        arm_rows(results(tmp_path, [1, 1], [GLIOMA, GLIOMA2, GOUT]), "a")


def test_a_seed_whose_rows_share_an_entity_set_is_named_and_novelty_counts_new_strings(tmp_path: Path) -> None:
    rows, seeds = arm_rows(results(tmp_path, [2, 1], [GLIOMA, GLIOMA2, GOUT]), "a")
    d = describe(rows, seeds, {("gout", "Disease")})
    assert d["seeds_with_rows_sharing_an_entity_set"] == [0]  # "glioma" and "Glioma": one entity set
    assert d["entity_novelty"] == round(2 / 3, 3) and d["rows_per_seed"] == 1.5
    d = describe([rows[0], rows[2]], seeds, set())
    assert d["seeds_with_rows_sharing_an_entity_set"] == [] and d["entity_novelty"] == 1.0


def test_quoted_rows_mark_entities_and_the_readme_block_is_replaced(tmp_path: Path) -> None:
    assert inline(["Familial", "breast", "cancer", "runs", "in", "families"],
                  ["O", "B-Disease", "I-Disease", "O", "O", "O"]) == "Familial [breast cancer](Disease) runs in families"
    readme = tmp_path / "README.md"
    readme.write_text("top\n<!-- x:start -->\nold\n<!-- x:end -->\nbottom\n")
    write_readme("x", "new table", readme)
    assert readme.read_text() == "top\n<!-- x:start -->\nnew table\n<!-- x:end -->\nbottom\n"
    with pytest.raises(SystemExit, match="no <!-- y:start -->"):
        write_readme("y", "t", readme)


def test_a_results_header_names_the_gpu_and_the_commit_a_device_copy_was_sent_at(monkeypatch) -> None:
    """Runs made on a lent GPU machine say so (``machine``), and record the commit the copy was sent at
    (``BENCHMARK_COMMIT``), not the copy's own git folder."""
    import subprocess
    from types import SimpleNamespace

    from benchmarks import common

    monkeypatch.setattr(common.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout="NVIDIA H200\n"))
    assert common.machine().endswith(", GPU: NVIDIA H200")

    def missing(*a, **k):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(common.subprocess, "run", missing)
    assert common.machine().endswith(", no GPU") and common.machine("note").endswith(", note")
    monkeypatch.setattr(common.subprocess, "run", subprocess.run)
    monkeypatch.setenv("BENCHMARK_COMMIT", "abc1234")
    assert common.commit() == "abc1234"
