"""The row ablation benchmark's arms: which rows each one trains on besides the seeds (no training here)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from datasets import Dataset

from benchmarks import row_ablation

ROOT = Path(__file__).resolve().parents[1]

ROWS = [{"tokens": ["gout", "hurts", "a", "lot"], "tags": ["B-Disease", "O", "O", "O"]},
        {"tokens": ["the", "APC", "gene", "mutates"], "tags": ["O", "B-Disease", "O", "O"]}]
SILVER = [["B-Disease", "O", "O", "O"], ["O", "O", "O", "O"]]  # agrees with the first row only


@pytest.fixture()
def split() -> tuple[Dataset, Dataset]:
    train = Dataset.from_dict({"tokens": [[f"w{i}", "asthma"] for i in range(10)],
                               "ner_tags": [["O", "B-Disease"]] * 10})
    from hf_rgda.recipe import sample_seeds

    return train, sample_seeds(train, 3, sample_seed=0)


def test_arms_change_one_thing(split) -> None:
    train, seeds = split
    assert row_ablation.arm_rows("seeds_only", ROWS, SILVER, train, seeds, 0) == []
    assert row_ablation.arm_rows("as_generated", ROWS, SILVER, train, seeds, 0) == [(r["tokens"], r["tags"]) for r in ROWS]
    relabeled = row_ablation.arm_rows("silver_tags", ROWS, SILVER, train, seeds, 0)
    assert [t for t, _ in relabeled] == [r["tokens"] for r in ROWS] and [g for _, g in relabeled] == SILVER
    assert row_ablation.arm_rows("silver_agreed", ROWS, SILVER, train, seeds, 0) == [(ROWS[0]["tokens"], ROWS[0]["tags"])]


def test_gold_extra_draws_real_sentences_that_are_not_seeds(split) -> None:
    train, seeds = split
    extra = row_ablation.arm_rows("gold_extra", ROWS, SILVER, train, seeds, 0)
    assert len(extra) == len(ROWS)
    seed_texts = {tuple(t) for t in seeds["tokens"]}
    train_texts = {tuple(t) for t in train["tokens"]}
    assert all(tuple(t) in train_texts and tuple(t) not in seed_texts for t, _ in extra)
    assert all(g == ["O", "B-Disease"] for _, g in extra)


def test_pipeline_rows_take_exactly_the_first_seeds(tmp_path: Path) -> None:
    path = tmp_path / "lp.json"
    chunk = {"examples": ROWS}
    path.write_text(json.dumps({"chunks": {"ncbi_disease/rgda": {"0-2": chunk, "2-4": chunk, "4-6": chunk}}}))
    args = argparse.Namespace(dataset="ncbi_disease", method="rgda", seeds=4)
    key, rows = row_ablation.pipeline_rows(path, args)
    assert key == "lp.json:ncbi_disease/rgda" and len(rows) == 4
    with pytest.raises(SystemExit, match="first 3 seeds"):
        row_ablation.pipeline_rows(path, argparse.Namespace(dataset="ncbi_disease", method="rgda", seeds=3))


def test_protocol_rows_serve_any_training_of_the_same_scale(tmp_path: Path) -> None:
    """Rows do not depend on the training: a 10-epoch cell's rows serve a 30-epoch ablation; the cell trained like
    the ablation comes first; another seed count or method never."""
    def cell(epochs: float, rows: list, seeds: int = 40, method: str = "rgda") -> dict:
        return {"dataset": "ncbi_disease", "seeds": seeds, "method": method, "encoder": "e", "epochs": epochs,
                "rows": rows}

    path = tmp_path / "protocol.json"
    path.write_text(json.dumps({"cells": {"a": cell(10, ROWS[:1]), "b": cell(30, ROWS[:2]), "c": cell(30, ROWS, 20),
                                          "d": cell(30, [], method="gda")}}))
    args = argparse.Namespace(dataset="ncbi_disease", method="rgda", seeds=40, encoder="e", epochs=30)
    assert row_ablation.protocol_rows(path, args) == ("protocol.json:b", ROWS[:2])
    assert row_ablation.protocol_rows(path, argparse.Namespace(**{**vars(args), "epochs": 5})) == ("protocol.json:a", ROWS[:1])
    with pytest.raises(SystemExit, match="no protocol cell"):
        row_ablation.protocol_rows(path, argparse.Namespace(**{**vars(args), "method": "gda"}))


def test_mr_train_draws_mentions_no_seed_has_and_mr_only_the_seeds() -> None:
    """``mr`` replaces mentions from the seeds' inventory; ``mr_train`` from the whole train split's (what the LLM
    methods' entity hints draw from), so only it can bring in a mention no seed has."""
    train = Dataset.from_dict({"tokens": [[f"w{i}", "has", f"disease{i}", "."] for i in range(12)],
                               "ner_tags": [["O", "O", "B-Disease", "O"]] * 12})
    from hf_rgda.recipe import sample_seeds

    seeds = sample_seeds(train, 3, sample_seed=0)
    seed_mentions = {t[2] for t in seeds["tokens"]}

    def mentions(arm: str) -> set[str]:
        rows = row_ablation.arm_rows(arm, ROWS, SILVER, train, seeds, 0)
        assert rows and all(g == ["O", "O", "B-Disease", "O"] for _, g in rows)
        return {t[2] for t, _ in rows}

    assert mentions("mr") <= seed_mentions
    assert mentions("mr_train") - seed_mentions
