"""The run recipe: sources, seed sampling, one map with its summary, the saved outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset, DatasetDict

from hf_rgda import ConfigError, RGDAAugmenter, ScriptedLLM
from hf_rgda.baselines import MentionReplacement, mention_inventory
from hf_rgda.recipe import augment, load_source, load_split, sample_seeds

from .conftest import SEED_ROWS, stateless_handler

ROWS = [{"tokens": ["Gout", "hurts", "."], "ner_tags": ["B-Disease", "O", "O"]},
        {"tokens": ["No", "disease", "."], "ner_tags": ["O", "O", "O"]}]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_sources(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    _jsonl(folder / "train.jsonl", ROWS)
    _jsonl(folder / "test.jsonl", ROWS[:1])
    assert {k: len(v) for k, v in load_source(str(folder)).items()} == {"train": 2, "test": 1}
    files = load_source([str(folder / "train.jsonl"), str(folder / "test.jsonl")])
    assert sorted(files) == ["test", "train"] and files["train"]["tokens"] == [r["tokens"] for r in ROWS]
    DatasetDict({"seed": Dataset.from_list(ROWS)}).save_to_disk(str(tmp_path / "out" / "dataset"))
    for saved in (tmp_path / "out", tmp_path / "out" / "dataset"):  # an augment --out folder, a saved DatasetDict
        assert load_source(str(saved))["seed"].to_list() == ROWS
    assert len(load_split(str(folder), "test")) == 1
    with pytest.raises(ConfigError, match=r"split 'dev' not found; splits are \['test', 'train'\]"):
        load_split(str(folder), "dev")


def test_bad_sources_say_what_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="folder holds no"):
        load_source(str(tmp_path / "empty"))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _jsonl(mixed / "train.jsonl", ROWS)
    (mixed / "test.csv").write_text("tokens\n")
    with pytest.raises(ConfigError, match="mixed file types"):
        load_source(str(mixed))
    with pytest.raises(ConfigError, match="files of one type"):
        load_source([str(mixed / "train.jsonl"), str(mixed / "test.csv")])


def test_seed_sampling_is_pinned() -> None:
    """The same seeds as before the recipe existed (hf_rgda.data.sample_rows), and a sample is a larger one's prefix."""
    ds = Dataset.from_dict({"tokens": [[f"w{i}"] for i in range(30)],
                            "ner_tags": [["B-X"] if i % 3 else ["O"] for i in range(30)]})
    assert sample_seeds(ds, 5)["tokens"] == [["w7"], ["w29"], ["w10"], ["w4"], ["w20"]]
    assert sample_seeds(ds, 5, sample_seed=7, min_entities=0)["tokens"] == [["w12"], ["w14"], ["w4"], ["w28"], ["w22"]]
    assert sample_seeds(ds, 8)["tokens"][:5] == sample_seeds(ds, 5)["tokens"]
    assert len(sample_seeds(ds)) == 20 and len(sample_seeds(ds, min_entities=0)) == 30
    ids = Dataset.from_dict({"tokens": [["a", "b"], ["c"]], "ner_tags": [[1, 2], [0]]})
    assert sample_seeds(ids)["tokens"] == [["a", "b"]]


def test_augment_summarises_and_saves(tmp_path: Path) -> None:
    seeds = Dataset.from_dict(SEED_ROWS)
    aug = RGDAAugmenter.from_dataset(seeds, llm=ScriptedLLM(stateless_handler, name="s"), method="rgda", cache=False,
                                     keep_rejected=True)
    run = augment(seeds, aug, batch_size=2, desc="toy")
    assert run.seeds == 3 and run.summary.seeds == 3 and run.summary.wall_seconds > 0
    assert run.summary.accepted == len(run.with_status("accepted")) == 9
    splits, report = run.save(tmp_path / "out", source="toy", split="train")
    assert {k: len(v) for k, v in splits.items()} == {"seed": 3, "augmented": 9}
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == json.loads(json.dumps(report))
    assert report["config"]["method"] == "rgda" and report["llm"] == {"backend": "scripted", "name": "s"}
    assert report["num_seeds"] == 3 and report["summary"]["accepted"] == 9 and not report["cost"]["priced"]
    rejections = [json.loads(x) for x in (tmp_path / "out" / "rejections.jsonl").read_text().splitlines()]
    assert len(rejections) == len(run.with_status("rejected", "failed")) > 0
    assert all(sorted(r) == ["rgda_reason", "rgda_source", "rgda_status", "rgda_trace"] for r in rejections)
    assert DatasetDict.load_from_disk(str(tmp_path / "out" / "dataset"))["augmented"].to_list() == \
        splits["augmented"].to_list()


def test_augment_takes_the_baselines() -> None:
    seeds = Dataset.from_dict(SEED_ROWS)
    run = augment(seeds, MentionReplacement(mention_inventory(seeds["tokens"], seeds["ner_tags"]), num_augmented=2))
    assert run.summary is None and len(run.with_status("original")) == 3 and len(run.with_status("accepted")) > 0


def test_rows_that_disagree_with_their_traces_are_refused() -> None:
    def stale(batch: dict, indices: list[int]) -> dict:  # what a stale datasets cache looked like
        trace = json.dumps({"accepted": 3, "failure": "", "rejected": [], "gr": [], "ac": [], "calls": 0,
                            "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "llm_seconds": 0,
                            "stage_calls": {}})
        return {"tokens": [["b"], ["c"]], "ner_tags": [["B-X"], ["B-X"]], "rgda_status": ["accepted"] * 2,
                "rgda_trace": [trace, ""]}

    with pytest.raises(RuntimeError, match="toy: 2 accepted rows but the traces count 3"):
        augment(Dataset.from_dict({"tokens": [["a"]], "ner_tags": [["B-X"]]}), stale, desc="toy")
