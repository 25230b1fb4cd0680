"""The silver-tagger benchmark's measure (no model: silver tags are given): entity-level precision and recall of row
sets, their intervals, the rows listed for reading, and which result cells it reads."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def silver():
    return importlib.import_module("benchmarks.silver")


def test_precision_and_recall_count_exact_span_and_type(silver) -> None:
    rows = [(["Gout", "and", "lupus", "flare"], ["B-Disease", "O", "B-Disease", "O"]),  # lupus: silver tags 2 words
            (["BRCA1", "mutations"], ["B-Disease", "O"])]  # silver: no entity
    preds = [["B-Disease", "O", "B-Disease", "I-Disease"], ["O", "O"]]
    got = silver.agreement(rows, preds)
    assert (got["entities"], got["silver_entities"], got["matched"]) == (3, 2, 1)
    assert got["precision"] == pytest.approx(1 / 3, abs=1e-3) and got["recall"] == 0.5
    lo, hi = got["precision_95"]
    assert lo < 1 / 3 < hi and 0 <= lo and hi <= 1
    assert silver.agreement([], [])["precision"] is None


def test_disagreements_name_what_each_side_tags(silver) -> None:
    rows = [{"tokens": ["Gout", "hurts"], "tags": ["B-Disease", "O"]},
            {"tokens": ["the", "BRCA1", "gene"], "tags": ["O", "B-Disease", "O"]}]
    out = silver.disagreements(rows, [["B-Disease", "O"], ["O", "O", "O"]])
    assert out == [{"sentence": "the BRCA1 gene", "rows_only": [["BRCA1", "Disease"]], "silver_only": []}]


def test_row_sets_read_cells_of_the_dataset_with_tags(silver, tmp_path: Path, capsys) -> None:
    row = {"sentence": "Gout hurts", "tokens": ["Gout", "hurts"], "tags": ["B-Disease", "O"]}
    results = {"chunks": {"ncbi_disease/rgda": {"0-5": {"examples": [row]}, "5-10": {"examples": [row]}},
                          "ncbi_disease/naive": {"0-5": {"examples": [{"sentence": "old row without tags"}]}},
                          "scierc/rgda": {"0-5": {"examples": [row]}}}}
    path = tmp_path / "cells.json"
    path.write_text(json.dumps(results))
    sets = silver.row_sets([path], "ncbi_disease")
    assert list(sets) == ["cells.json:ncbi_disease/rgda"] and len(sets["cells.json:ncbi_disease/rgda"]) == 2
    assert "ncbi_disease/naive" in capsys.readouterr().err  # a cell stored without tags is named, not scored


def test_row_sets_read_protocol_cells_that_stored_rows(silver, tmp_path: Path) -> None:
    row = {"tokens": ["Gout", "hurts"], "tags": ["B-Disease", "O"], "source": "7", "repairs": None}
    results = {"cells": {"ncbi_disease|40|rgda|x": {"dataset": "ncbi_disease", "method": "rgda", "rows": [row, row]},
                         "ncbi_disease|40|mr|x": {"dataset": "ncbi_disease", "method": "mr"},  # no rows stored
                         "fin|30|rgda|x": {"dataset": "fin", "method": "rgda", "rows": [row]}}}
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(results))
    sets = silver.row_sets([path], "ncbi_disease")
    assert list(sets) == ["protocol.json:ncbi_disease|40|rgda|x"] and len(sets["protocol.json:ncbi_disease|40|rgda|x"]) == 2


def test_row_sets_read_a_protocol200_cells_committed_chunks(silver, tmp_path: Path) -> None:
    import gzip

    cell = tmp_path / "ncbi_disease" / "rgda@seeds" / "2096b68d9a6b"
    cell.mkdir(parents=True)
    row = {"seed": 0, "tokens": ["Gout", "hurts"], "tags": ["B-Disease", "O"], "status": "accepted", "reason": ""}
    for k, rows in enumerate([[row, {**row, "status": "rejected"}], [row]]):
        with gzip.open(cell / f"chunk-{k:03d}.jsonl.gz", "wt") as fh:
            for line in ({"dataset": "ncbi_disease", "chunk": k}, *rows):
                fh.write(json.dumps(line) + "\n")
    sets = silver.row_sets([cell], "ncbi_disease")
    assert list(sets) == ["protocol200:rgda@seeds:2096b68 (2 chunks)"]
    assert len(sets["protocol200:rgda@seeds:2096b68 (2 chunks)"]) == 2  # the accepted rows only
    assert silver.row_sets([cell], "fin") == {}
    assert silver.row_sets([cell], "ncbi_disease", seeds_below=0) == {}  # every toy row is seed 0's
    below = silver.row_sets([cell], "ncbi_disease", seeds_below=1)
    assert list(below) == ["protocol200:rgda@seeds:2096b68 (2 chunks, seeds below 1)"] and len(*below.values()) == 2


def test_recheck_repairs_or_drops_the_rows_a_rule_fires_on(silver) -> None:
    rows = [{"tokens": ["Drugs", "treat", "influenza", "influenza", "influenza", "infections", "."],
             "tags": ["O", "O", "B-Disease", "B-Disease", "B-Disease", "O", "O"]},
            {"tokens": ["Gout", "hurts", "in", "the", "morning", "."], "tags": ["B-Disease", "O", "O", "O", "O", "O"]}]
    kept, log = silver.recheck(rows, ["stutter"], ["Disease"])
    assert [r["tokens"] for r in kept] == [["Drugs", "treat", "influenza", "infections", "."], rows[1]["tokens"]]
    assert kept[0]["tags"] == ["O", "O", "B-Disease", "O", "O"] and log["dropped"] == []
    assert log["repaired"] == [[" ".join(rows[0]["tokens"]), "stutter: kept one of 3 copies of 'influenza'"]]
    short = {"tokens": ["Gout", "."], "tags": ["B-Disease", "O"]}
    kept, log = silver.recheck([rows[1], short], ["several_sentences", "too_short"], ["Disease"])
    assert kept == [rows[1]] and log["repaired"] == [] and log["dropped"][0][0] == "Gout ."
    assert log["dropped"][0][1].startswith("too_short: ")
    with pytest.raises(SystemExit, match="no_such_rule"):
        silver.recheck(rows, ["no_such_rule"], ["Disease"])
    # an entity rule reads the split's statistics (the dataset's train split's in main)
    from hf_rgda.checking import SplitStats

    stats = SplitStats(heads={"Disease": {"disease": 200}}, context_words={"disease": 150},
                       mentions={"Disease": ("Huntington disease", "gout")})
    generic = {"tokens": ["Gout", "is", "a", "disease", "."], "tags": ["B-Disease", "O", "O", "B-Disease", "O"]}
    kept, log = silver.recheck([generic], ["head_alone"], ["Disease"], stats)
    assert kept[0]["tags"] == ["B-Disease", "O", "O", "O", "O"] and log["repaired"][0][1].startswith("head_alone:")
    assert silver.recheck([generic], ["head_alone"], ["Disease"])[0] == [generic]  # no statistics: nothing fires
