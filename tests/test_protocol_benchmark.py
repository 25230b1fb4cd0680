"""The protocol benchmark's bookkeeping: a rerun with more ``--runs`` adds only the missing training runs, and only
when it rebuilds the same training rows. Training, augmentation and the report are replaced by recording fakes."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from datasets import ClassLabel, Dataset, Features, Sequence, Value

ROOT = Path(__file__).resolve().parents[1]


def _load():
    return importlib.import_module("benchmarks.protocol")


@pytest.fixture()
def protocol(monkeypatch: pytest.MonkeyPatch):
    mod = _load()
    feats = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=["O", "B-X", "I-X"]))})
    train = Dataset.from_dict({"tokens": [["a", "b"], ["c", "d"], ["e"]], "ner_tags": [[1, 0], [0, 1], [1]]}, features=feats)
    test = Dataset.from_dict({"tokens": [["a"]], "ner_tags": [[1]]}, features=feats)
    calls: list[int] = []
    state = {"aug_word": "z"}

    def augment(method, name, train_, seeds, args):
        rows = Dataset.from_dict({"tokens": [[state["aug_word"]]], "ner_tags": [[1]]}, features=feats)
        return rows, {}

    def train_eval(rows, test_, *, steps, run, args):
        calls.append(run)
        return {"f1": 0.1 * (run + 1), "steps": 4 if steps < 0 else steps, "predictions": [["B-X"]]}

    monkeypatch.setattr(mod, "splits", lambda data_dir, name: (train, test))
    monkeypatch.setattr(mod, "augment", augment)
    monkeypatch.setattr(mod, "train_eval", train_eval)
    monkeypatch.setattr(mod, "diversity", lambda aug, seeds, args: None)
    monkeypatch.setattr(mod, "header", lambda name, argv=None: {"command": f"python -m benchmarks.{name}", "commit": "test",
                                                              "machine": "test"})
    monkeypatch.setattr(mod, "bootstrap", lambda *a, **k: None)
    monkeypatch.setattr(mod, "report", lambda results, out: 0)
    return mod, calls, state


def _run(mod, out: Path, runs: int, *extra: str) -> dict:
    argv = ["--datasets", "toy", "--methods", "mr", "--num-seeds", "2", "--runs", str(runs), "--out", str(out),
            "--llm", "none", "--epochs", "2", *extra]
    assert mod.main(argv) == 0
    (cell,) = json.loads(out.read_text())["cells"].values()
    return cell


def test_more_runs_extend_a_finished_cell(protocol, tmp_path: Path) -> None:
    mod, calls, _ = protocol
    out = tmp_path / "p.json"
    cell = _run(mod, out, 1)
    assert cell["complete"] and len(cell["runs"]) == 1 and calls == [0, 0]  # equal epochs, then equal steps
    calls.clear()
    cell = _run(mod, out, 3)
    assert calls == [1, 1, 2, 2]  # run 0 is not trained again
    assert [r["equal_epochs"]["f1"] for r in cell["runs"]] == pytest.approx([0.1, 0.2, 0.3])
    assert cell["f1_equal_epochs"] == pytest.approx(0.2)
    calls.clear()
    _run(mod, out, 3)
    assert calls == []  # nothing left to do


def test_fingerprint_takes_string_and_id_tags(protocol) -> None:
    mod, _, _ = protocol
    names = Dataset.from_dict({"tokens": [["a"]], "ner_tags": [["B-X"]]})
    ids = Dataset.from_dict({"tokens": [["a"]], "ner_tags": [[1]]})
    assert mod.rows_fingerprint(names) != mod.rows_fingerprint(ids)
    assert mod.rows_fingerprint(names) == mod.rows_fingerprint(Dataset.from_dict({"tokens": [["a"]], "ner_tags": [["B-X"]]}))


def test_changed_rows_start_the_cell_over(protocol, tmp_path: Path) -> None:
    mod, calls, state = protocol
    out = tmp_path / "p.json"
    _run(mod, out, 1)
    calls.clear()
    state["aug_word"] = "y"  # e.g. a checker change accepts other rows
    cell = _run(mod, out, 2)
    assert calls == [0, 0, 1, 1]
    assert len(cell["runs"]) == 2


def test_recheck_starts_over_only_the_finished_cells_whose_rows_changed(protocol, tmp_path: Path) -> None:
    mod, calls, state = protocol
    out = tmp_path / "p.json"
    first = _run(mod, out, 1)
    calls.clear()
    state["aug_word"] = "y"  # a checker change accepts other rows
    assert _run(mod, out, 1) == first and calls == []  # without --recheck a finished cell is kept as it is
    cell = _run(mod, out, 1, "--recheck")
    assert calls == [0, 0] and cell["rows_sha256"] != first["rows_sha256"] and cell["complete"]
    calls.clear()
    assert _run(mod, out, 1, "--recheck") == cell and calls == []  # rows unchanged: nothing trained again


def test_rerun_starts_every_requested_cell_over(protocol, tmp_path: Path) -> None:
    mod, calls, _ = protocol
    out = tmp_path / "p.json"
    _run(mod, out, 2)
    calls.clear()
    cell = _run(mod, out, 1, "--rerun")
    assert calls == [0, 0] and len(cell["runs"]) == 1 and cell["complete"]


def test_training_rows_live_in_memory(protocol, tmp_path: Path) -> None:
    """Rows read from disk carry cache files, and datasets would hand train_ner a tokenization cached under their
    fingerprint; the training rows have none."""
    from datasets import load_dataset

    mod, _, _ = protocol
    path = tmp_path / "seeds.jsonl"
    Dataset.from_dict({"tokens": [["a", "b"]], "ner_tags": [["B-X", "O"]]}).to_json(str(path))
    disk = load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf"))
    aug = Dataset.from_dict({"tokens": [["c"]], "ner_tags": [["B-X"]]})
    rows = mod.training_rows(disk, aug)
    assert disk.cache_files and not rows.cache_files
    assert rows.to_dict() == {"tokens": [["a", "b"], ["c"]], "ner_tags": [["B-X", "O"], ["B-X"]]}


def test_augment_refuses_rows_that_disagree_with_their_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    import hf_rgda
    from hf_rgda import RunSummary

    mod = _load()
    seeds = Dataset.from_dict({"tokens": [["a"]], "ner_tags": [["B-X"]]})

    class StaleAugmenter:  # what a stale datasets cache looked like: two accepted rows, traces counting three
        @classmethod
        def from_dataset(cls, *a, **k):
            return cls()

        def __call__(self, batch, indices=None):
            return {"tokens": [["b"], ["c"]], "ner_tags": [["B-X"], ["B-X"]], "rgda_status": ["accepted"] * 2,
                    "rgda_trace": ["t", ""]}

    monkeypatch.setattr(hf_rgda, "RGDAAugmenter", StaleAugmenter)
    monkeypatch.setattr(RunSummary, "from_traces", classmethod(lambda cls, traces: RunSummary(accepted=3)))
    args = argparse.Namespace(llm="none", ratio=3, cache=None, batch_size=5, sample_seed=0)
    with pytest.raises(RuntimeError, match="2 accepted rows but the traces count 3"):
        mod.augment("rgda", "toy", seeds, seeds, args)


def test_bootstrap_is_redone_when_a_cell_started_over(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    import hf_rgda.metrics

    mod = _load()
    seen: list[tuple] = []

    def fake_bootstrap(refs, a, b, *, resamples):
        seen.append((a[0][0], b[0][0]))
        return {"delta": 0.0}

    monkeypatch.setattr(hf_rgda.metrics, "paired_bootstrap", fake_bootstrap)
    test = Dataset.from_dict({"tokens": [["a"]], "ner_tags": [["B-X"]]})
    # first run's predictions per cell: one per test sentence, stored compact (a string) or as a tag list
    results = {"cells": {"s/rgda": {"_predictions": [["B-X"]]}, "s/mr": {"_predictions": [[["O"]]]}}}
    args = argparse.Namespace(resamples=10)
    mod.bootstrap(results, "s", test, args)
    mod.bootstrap(results, "s", test, args)
    assert seen == [("B-X", "O")]  # unchanged cells: computed once
    results["cells"]["s/rgda"]["_predictions"] = [["O"]]  # R-GDA trained again (--rerun): new predictions
    mod.bootstrap(results, "s", test, args)
    assert seen == [("B-X", "O"), ("O", "O")] and "pair" in results["bootstrap"]["s"]["mr"]


@pytest.mark.parametrize(("method", "expected"), [("rgda", {"method": "rgda"}),
                                                    ("rgda+noverify", {"method": "rgda", "verify_entities": False}),
                                                    ("rgda+debate", {"method": "rgda", "debate_review": True})])
def test_a_variant_method_builds_its_base_with_the_variant_options(monkeypatch: pytest.MonkeyPatch, method: str,
                                                                   expected: dict) -> None:
    import argparse

    import hf_rgda

    mod = _load()
    seen: dict = {}

    class Recorder:
        @classmethod
        def from_dataset(cls, train, **kwargs):
            seen.update(kwargs)
            raise StopIteration  # built is all this test looks at

    monkeypatch.setattr(hf_rgda, "RGDAAugmenter", Recorder)
    seeds = Dataset.from_dict({"tokens": [["a"]], "ner_tags": [["B-X"]]})
    args = argparse.Namespace(llm="none", ratio=3, cache=None, batch_size=5, sample_seed=0)
    with pytest.raises(StopIteration):
        mod.augment(method, "toy", seeds, seeds, args)
    assert {k: seen[k] for k in expected} == expected
    assert ("verify_entities" in seen) == (method == "rgda+noverify")


@pytest.mark.parametrize(("method", "source"), [("rgda", "train"), ("rgda@seeds", "seeds"),
                                                ("rgda+noverify@seeds", "seeds")])
def test_an_llm_method_takes_its_statistics_from_train_or_with_at_seeds_from_the_seeds(
        monkeypatch: pytest.MonkeyPatch, method: str, source: str) -> None:
    """The augmenter's statistics and entity hints come from the split it is built from: the whole train split by
    default, the seeds alone with ``@seeds`` (what a user holding only them has); the variant options still apply."""
    import argparse

    import hf_rgda

    mod = _load()
    seen: dict = {}

    class Recorder:
        @classmethod
        def from_dataset(cls, split, **kwargs):
            seen.update(kwargs, split=split)
            raise StopIteration

    monkeypatch.setattr(hf_rgda, "RGDAAugmenter", Recorder)
    train = Dataset.from_dict({"tokens": [["a"], ["b"]], "ner_tags": [["B-X"], ["B-X"]]})
    seeds = train.select([0])
    args = argparse.Namespace(llm="none", ratio=3, cache=None, batch_size=5, sample_seed=0)
    with pytest.raises(StopIteration):
        mod.augment(method, "toy", train, seeds, args)
    assert seen["split"] is (seeds if source == "seeds" else train) and seen["method"] == "rgda"
    assert ("verify_entities" in seen) == ("noverify" in method)
    with pytest.raises(SystemExit, match="@seeds"):
        mod.augment("rgda@everything", "toy", train, seeds, args)

