"""benchmarks/checker_gold.py: the checker on gold sentences and, with ``--rows``, on rows a protocol results file
stores (tiny datasets written here; the tests never read ../shared/data)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import checker_gold
from hf_rgda.tags import parse_inline

TRAIN = ["Patients with [Huntington disease](Disease) were examined in the clinic .",
         "The [Gaucher disease](Disease) cohort was followed in the clinic for years .",
         "Carriers of [Wilson disease](Disease) alleles were screened in the clinic .",
         "A family with [Fabry disease](Disease) was studied in the clinic .",
         "Children with [Menkes disease](Disease) were treated early in the clinic .",
         "Adults with [Pompe disease](Disease) show weakness in the clinic ."]  # "clinic" is context: statistics


def _rows(lines: list[str]) -> list[dict]:
    return [dict(zip(("tokens", "ner_tags"), parse_inline(x))) for x in lines]


def test_stored_rows_are_checked_by_todays_seed_free_rules(tmp_path: Path) -> None:
    data = tmp_path / "bio"
    data.mkdir()
    for split in ("train", "test"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows(TRAIN)))
    rows = [{"tokens": r["tokens"], "tags": r["ner_tags"]} for r in _rows([
        "Patients with chronic lung disease ( [CLD](Disease) ) were examined in the clinic .",  # long form untagged
        "In these abstracts , the sentence describes [Fabry disease](Disease) in adults .",  # the prompt as content
        "Carriers of [Pompe disease](Disease) alleles were screened in the clinic ."])]  # fine
    protocol = tmp_path / "protocol.json"
    protocol.write_text(json.dumps({"cells": {
        "bio/rgda": {"dataset": "bio", "rows": rows},
        "bio/noaug": {"dataset": "bio"},  # stores no rows: skipped
        "other/rgda": {"dataset": "other", "rows": rows}}}))  # a dataset not asked for: skipped
    out = tmp_path / "cg.json"
    assert checker_gold.main(["--data-dir", str(tmp_path), "--datasets", "bio", "--rows", str(protocol),
                              "--out", str(out)]) == 0
    stored = json.loads(out.read_text())["stored_rows"]
    assert list(stored) == ["protocol.json:bio/rgda"]
    cell = stored["protocol.json:bio/rgda"]
    assert cell["rows"] == 3 and cell["rejected"] == 2
    assert cell["rejected_by_reason"] == {"long_form_untagged": 1, "meta_text": 1}
    assert "| protocol.json:bio/rgda | 3 | 2 |" in out.with_suffix(".md").read_text()
