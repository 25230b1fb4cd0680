"""row_sources.py: where stored rows' mentions come from (seeds, the rest of train, neither) and the test mentions
they add (no LLM call, no training)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import row_sources

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, rows: list[tuple[list[str], list[str]]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"tokens": t, "ner_tags": g}) + "\n" for t, g in rows))


def test_rows_mentions_are_classed_by_source_and_test_coverage_counted(tmp_path: Path) -> None:
    # train: eight sentences, one disease each; the one seed is drawn from them below
    train = [([f"w{i}", "has", f"disease{i}", "."], ["O", "O", "B-Disease", "O"]) for i in range(8)]
    _write(tmp_path / "data" / "toy" / "train.jsonl", train)
    test = [(["x", "disease1", "and", "disease2", "and", "plague"], ["O", "B-Disease", "O", "B-Disease", "O", "B-Disease"])]
    _write(tmp_path / "data" / "toy" / "test.jsonl", test)
    from hf_rgda.recipe import load_source, sample_seeds

    seed = sample_seeds(load_source(str(tmp_path / "data" / "toy"))["train"], 1, sample_seed=0)["tokens"][0][2]
    carried = next(f"disease{i}" for i in (1, 2) if f"disease{i}" != seed)
    rows = [{"tokens": ["a", seed, "b", carried, "c", "plague", "d", "newpox"],
             "tags": ["O", "B-Disease", "O", "B-Disease", "O", "O", "O", "B-Disease"]}]
    protocol = tmp_path / "protocol.json"
    protocol.write_text(json.dumps({"cells": {"toy/rgda": {"dataset": "toy", "seeds": 1, "rows": rows},
                                              "toy/noaug": {"dataset": "toy", "seeds": 1}}}))
    out = row_sources.analyse(tmp_path / "data", [protocol])
    assert list(out) == ["protocol.json:toy/rgda"]  # a cell without rows is not read
    cell = out["protocol.json:toy/rgda"]
    assert cell["sources"]["counts"] == {"seeds": 1, "train_only": 1, "new": 1}
    assert cell["sources"]["train_only_most_common"] == [(carried, 1)]
    test_cov = cell["test"]
    assert test_cov["test_mentions"] == 3
    # the seed's own disease is covered by the seeds only if it is disease1 or disease2; the carried one is added
    assert test_cov["covered_by_seeds"] == int(seed in ("disease1", "disease2"))
    assert test_cov["added_by_rows"] == 1 and test_cov["added_train_only"] == 1


def test_local_pipeline_files_give_their_cells_rows_over_chunks_from_seed_zero(tmp_path: Path) -> None:
    row = {"tokens": ["a"], "tags": ["O"]}
    path = tmp_path / "lp.json"
    path.write_text(json.dumps({"chunks": {"toy/rgda": {"2-4": {"examples": [row, row]}, "0-2": {"examples": [row]}}}}))
    sets = row_sources.row_sets(path)
    assert sets == {"lp.json:toy/rgda": {"dataset": "toy", "seeds": 4, "rows": [row, row, row]}}
    path.write_text(json.dumps({"chunks": {"toy/rgda": {"2-4": {"examples": [row]}}}}))
    with pytest.raises(SystemExit, match="first 4 seeds"):
        row_sources.row_sets(path)
