"""TaggerGate: a tagger trained on the seeds rejects augmented rows that leave one of its mentions untagged.

A real MiniLM-L6 is fine-tuned for a few steps on a toy split (the module's fixture, shared); where a test needs
exact predictions, ``predict_tags`` is replaced by a recording fake and the gate's own bookkeeping is what is tested.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from datasets import ClassLabel, Dataset, Features, Sequence, Value

from hf_rgda import ConfigError, InputError, TaggerGate
from hf_rgda.provision import MODELS, snapshot_dir
from hf_rgda.tagger_gate import missed_mentions
from hf_rgda.tags import format_inline

pytest.importorskip("transformers")
MINILM = snapshot_dir(MODELS["minilm"])
LABELS = ["O", "B-Disease", "I-Disease"]
DISEASES = ["gout", "lupus", "asthma", "anemia"]


def _split(n: int = 24) -> Dataset:
    rows = {"tokens": [], "ner_tags": []}
    for i in range(n):
        d = DISEASES[i % len(DISEASES)]
        rows["tokens"].append(["Patients", "with", d, "were", "seen", "in", "clinic", str(i), "."])
        rows["ner_tags"].append([0, 0, 1, 0, 0, 0, 0, 0, 0])
    features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=LABELS))})
    return Dataset.from_dict(rows, features=features)


@pytest.fixture(scope="module")
def gate_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (MINILM / "config.json").is_file():
        pytest.skip("MiniLM not provisioned")
    out = tmp_path_factory.mktemp("gate")
    TaggerGate.fit(_split(), output_dir=out, max_steps=40, learning_rate=5e-4, batch_size=8)
    return out


def _seed_folder(tmp_path: Path) -> Path:
    """The conftest's seed rows as a data folder's train.jsonl (what augment reads)."""
    from .conftest import SEED_ROWS

    data = tmp_path / "data"
    data.mkdir()
    rows = [{"tokens": t, "ner_tags": g} for t, g in zip(SEED_ROWS["tokens"], SEED_ROWS["ner_tags"])]
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _rows(status: list[str], tags: list[list[str]]) -> dict[str, list]:
    tokens = [["Patients", "with", "gout", "were", "seen", "."] for _ in status]
    return {"tokens": tokens, "ner_tags": tags, "rgda_status": status, "rgda_reason": [""] * len(status),
            "rgda_trace": [""] * len(status)}


def test_missed_mentions_are_predicted_entities_overlapping_none_of_the_rows() -> None:
    assert missed_mentions(["O", "B-Disease", "O"], ["O", "B-Disease", "B-Disease"]) == [(2, 3, "Disease")]
    assert missed_mentions(["B-Disease", "I-Disease", "O"], ["O", "B-Disease", "O"]) == []  # overlaps: not missed
    assert missed_mentions(["O", "I-Disease"], ["O", "O"]) == []  # a stray I- read leniently


def test_the_fitted_tagger_flags_an_untagged_mention_and_passes_a_tagged_one(gate_dir: Path) -> None:
    gate = TaggerGate.load(gate_dir, keep_rejected=True)
    tagged, untagged = ["O", "O", "B-Disease", "O", "O", "O"], ["O"] * 6
    out = gate(_rows(["original", "accepted", "accepted"], [untagged, tagged, untagged]))
    assert out["rgda_status"] == ["original", "accepted", "rejected"]  # an original row is never read
    assert out["rgda_reason"][2].startswith("tagger_gate/untagged_mention: 'gout' (Disease)")
    assert json.loads(out["rgda_trace"][2]) == {"raw": "Patients with gout were seen .",
                                                "detail": out["rgda_reason"][2].split(": ", 1)[1]}
    assert out["tokens"][2] == [] and out["ner_tags"][2] == [] and out["tokens"][1] != []
    assert gate.counts == {"read": 2, "rejected": 1}


def test_flagged_rows_are_dropped_by_default_and_ids_read_by_the_gates_labels(gate_dir: Path, monkeypatch) -> None:
    from hf_rgda import train

    asked: list[list[list[str]]] = []

    def predict(model, tokenizer, rows, **kw):  # every row's third word a mention
        asked.append([list(r) for r in rows])
        return [["O", "O", "B-Disease"] + ["O"] * (len(r) - 3) for r in rows]

    monkeypatch.setattr(train, "predict_tags", predict)
    gate = TaggerGate.load(gate_dir)
    batch = {"tokens": [["a", "b", "gout", "c"], ["a", "b", "gout", "c"]], "ner_tags": [[0, 0, 1, 0], [0, 0, 0, 0]],
             "extra": [1, 2]}  # no rgda_status: every row read
    out = gate(batch)
    assert out == {"tokens": [["a", "b", "gout", "c"]], "ner_tags": [[0, 0, 1, 0]], "extra": [1]}
    assert len(asked[0]) == 2
    with pytest.raises(InputError, match="row 1 of this batch: tag 7"):
        gate({"tokens": [["a", "b", "c"], ["a", "b", "c"]], "ner_tags": [[0, 0, 0], [0, 7, 0]]})
    with pytest.raises(InputError, match="row 0 of this batch: 3 tokens but 2 tags"):
        gate({"tokens": [["a", "b", "c"]], "ner_tags": [[0, 0]]})
    with pytest.raises(InputError, match="no 'ner_tags' column"):
        gate({"tokens": [["a"]]})
    with pytest.raises(InputError, match="rgda_status"):
        TaggerGate.load(gate_dir, keep_rejected=True)({"tokens": [["a", "b", "c"]], "ner_tags": [[0, 0, 0]]})


def test_it_maps_over_a_dataset_pickles_as_its_folder_and_refuses_a_folder_without_a_model(gate_dir: Path,
                                                                                              tmp_path: Path) -> None:
    from datasets.fingerprint import Hasher

    gate = TaggerGate.load(gate_dir, keep_rejected=True)
    ds = Dataset.from_dict(_rows(["accepted", "accepted"], [["O", "O", "B-Disease", "O", "O", "O"], ["O"] * 6]))
    out = ds.map(gate, batched=True, load_from_cache_file=False)
    assert out["rgda_status"] == ["accepted", "rejected"]
    again = pickle.loads(pickle.dumps(gate))
    assert again._model is None and again.counts == {"read": 0, "rejected": 0} and again.digest == gate.digest
    assert Hasher.hash(again) == Hasher.hash(TaggerGate.load(gate_dir, keep_rejected=True))
    assert Hasher.hash(gate) != Hasher.hash(TaggerGate.load(gate_dir))  # keep_rejected changes the rows
    with pytest.raises(ConfigError, match="no token-classification model"):
        TaggerGate(tmp_path)
    with pytest.raises(InputError, match="no rows"):
        TaggerGate.fit(_split().select([]), output_dir=tmp_path / "x")


def test_a_batch_with_nothing_to_read_passes_without_loading_the_tagger(gate_dir: Path) -> None:
    from hf_rgda.train import predict_tags

    assert predict_tags(None, None, []) == []
    gate = TaggerGate.load(gate_dir)
    originals = _rows(["original", "rejected"], [["O", "O", "B-Disease", "O", "O", "O"], []])
    originals["tokens"][1] = []
    assert gate(originals) == originals and gate._model is None
    empty = {"tokens": [], "ner_tags": [], "rgda_status": []}
    assert gate(empty) == empty and gate.counts == {"read": 0, "rejected": 0}


def test_a_seeds_record_is_never_lost(gate_dir: Path, monkeypatch) -> None:
    """keep_originals=False: a seed's record rides on its first accepted row; the gate moves it to the seed's next
    kept row, or keeps the row (rejected, emptied) where there is none."""
    from hf_rgda import RGDAAugmenter, RunSummary, ScriptedLLM, train

    from .conftest import SEED_ROWS, stateless_handler

    seeds = Dataset.from_dict({"tokens": SEED_ROWS["tokens"], "ner_tags": SEED_ROWS["ner_tags"]})
    aug = RGDAAugmenter.from_dataset(seeds, llm=ScriptedLLM(stateless_handler, name="s"), method="gda",
                                     keep_originals=False, cache=False)
    out = seeds.map(aug, batched=True, remove_columns=seeds.column_names)
    before = RunSummary.from_dataset(out).to_dict()
    assert before["seeds"] == len(seeds) and out["rgda_status"].count("accepted") >= 2 * len(seeds)
    first = {}
    for k, s in enumerate(out["rgda_source"]):
        first.setdefault(s, k)
    flag = {tuple(out["tokens"][k]) for k in first.values()}  # every seed's first row, the one with its record
    monkeypatch.setattr(train, "predict_tags", lambda m, t, rows, **kw: [
        ["B-Disease"] * len(r) if tuple(r) in flag else ["O"] * len(r) for r in rows])
    monkeypatch.setattr(TaggerGate, "_tagger", lambda self: (None, None))
    gated = out.map(TaggerGate.load(gate_dir), batched=True, batch_size=1000)
    assert len(gated) == len(out) - len(first)  # the flagged rows dropped, their records moved on
    assert RunSummary.from_dataset(gated).to_dict() == before
    alone = out.map(TaggerGate.load(gate_dir), batched=True, batch_size=1)  # no later row of the seed in a batch
    kept = [k for k, s in enumerate(alone["rgda_status"]) if s == "rejected"]
    assert len(kept) == len(first) and all(alone["tokens"][k] == [] for k in kept)
    assert all(alone["rgda_reason"][k].startswith("tagger_gate/untagged_mention: ") for k in kept)
    assert all("tagger_gate" in json.loads(alone["rgda_trace"][k]) for k in kept)
    assert RunSummary.from_dataset(alone).to_dict() == before


def test_classlabel_ids_and_other_schemes_are_read_as_iob2(gate_dir: Path, monkeypatch) -> None:
    from hf_rgda import train

    monkeypatch.setattr(train, "predict_tags", lambda m, t, rows, **kw: [
        ["O", "O", "B-Disease"] + ["O"] * (len(r) - 3) for r in rows])
    monkeypatch.setattr(TaggerGate, "_tagger", lambda self: (None, None))
    features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=LABELS))})
    ds = Dataset.from_dict({"tokens": [["a", "b", "gout", "c"]] * 2, "ner_tags": [[0, 0, 1, 0], [0, 0, 0, 0]]},
                           features=features)
    out = ds.map(TaggerGate.load(gate_dir), batched=True)
    assert out["ner_tags"] == [[0, 0, 1, 0]] and out.features["ner_tags"] == features["ner_tags"]
    bioes = TaggerGate.load(gate_dir, scheme="BIOES")
    assert bioes({"tokens": [["a", "b", "gout", "c"]], "ner_tags": [["O", "O", "S-Disease", "O"]]})["tokens"] == [
        ["a", "b", "gout", "c"]]
    with pytest.raises(InputError, match="row 0 of this batch"):
        bioes({"tokens": [["a", "b", "gout", "c"]], "ner_tags": [["O", "O", "B-Disease", "O"]]})  # B- never closed
    with pytest.raises(InputError, match="tag -1 is neither"):
        TaggerGate.load(gate_dir)({"tokens": [["a", "b", "c"]], "ner_tags": [[0, -1, 0]]})
    with pytest.raises(ConfigError, match="scheme='BIO'"):
        TaggerGate.load(gate_dir, scheme="BIO")


def test_the_protocols_seed_tagger_treatment_reads_rows_through_the_gate(gate_dir: Path, monkeypatch) -> None:
    from benchmarks.row_taggers import drop_missed
    from hf_rgda import train

    monkeypatch.setattr(train, "predict_tags", lambda m, t, rows, **kw: [["B-Disease"] + ["O"] * (len(r) - 1)
                                                                         for r in rows])
    monkeypatch.setattr(TaggerGate, "_tagger", lambda self: (None, None))
    rows = [{"tokens": ["Gout", "hurts"], "tags": t, "seed": i} for i, t in enumerate([["B-Disease", "O"], ["O", "O"],
                                                                                       ["B-Disease", "O"]])]
    kept, dropped = drop_missed(TaggerGate.load(gate_dir), rows)
    assert kept == [rows[0], rows[2]] and dropped == [rows[1]]
    assert drop_missed(TaggerGate.load(gate_dir), []) == ([], [])


def test_the_gate_command_writes_the_gated_folder_and_every_rejected_row(gate_dir: Path, tmp_path: Path, monkeypatch,
                                                                         capsys) -> None:
    from hf_rgda import ScriptedLLM, train
    from hf_rgda.cli import main
    from hf_rgda.recipe import load_source

    from .conftest import stateless_handler

    data = _seed_folder(tmp_path)
    assert main(["augment", str(data), "--method", "gda", "--out", str(tmp_path / "aug"), "--cache",
                 str(tmp_path / "r.sqlite3")], llm=ScriptedLLM(stateless_handler, name="s")) == 0
    before = load_source(str(tmp_path / "aug"))
    flagged = before["augmented"]["tokens"][::2]  # every other augmented row misses a mention, says the fake tagger
    monkeypatch.setattr(train, "predict_tags", lambda m, t, rs, **kw: [
        (["B-Disease"] if list(r) in flagged else ["O"]) + ["O"] * (len(r) - 1) for r in rs])
    monkeypatch.setattr(TaggerGate, "_tagger", lambda self: (None, None))
    out = tmp_path / "gated"
    assert main(["gate", str(tmp_path / "aug"), "--out", str(out), "--tagger", str(gate_dir)]) == 0
    after = load_source(str(out))
    assert after["seed"]["tokens"] == before["seed"]["tokens"]
    assert after["augmented"]["tokens"] == [t for t in before["augmented"]["tokens"] if t not in flagged]
    summary = json.loads((out / "tagger_gate.json").read_text())
    assert summary["rejected"] == len(flagged) and summary["read"] == len(before["augmented"])
    rejected = [json.loads(line) for line in (out / "tagger_gate_rejections.jsonl").read_text().splitlines()]
    assert [r["row"] for r in rejected] == [format_inline(t, g) for t, g in
                                            zip(before["augmented"]["tokens"][::2], before["augmented"]["ner_tags"][::2])]
    assert all(r["reason"].startswith("tagger_gate/untagged_mention: ") and r["source"] for r in rejected)
    assert main(["gate", str(data), "--out", str(tmp_path / "x"), "--tagger", str(gate_dir)]) == 2
    assert "no seed and augmented splits" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "aug" / "dataset"), "--out", str(tmp_path / "aug"), "--tagger",
                 str(gate_dir)]) == 2  # would write over its own input
    assert "inside it" in capsys.readouterr().err
    monkeypatch.undo()  # the fit path, for real: a few steps on the seed split
    fit = ["gate", str(tmp_path / "aug"), "--out", str(tmp_path / "fit"), "--model", str(MINILM), "--max-steps", "2",
           "--batch-size", "2"]
    from hf_rgda.cli import _parser

    assert _parser().parse_args(["gate", "x", "--out", "y"]).max_steps == 500  # the fit's own default (train's: -1)
    assert main(fit) == 0
    assert (tmp_path / "fit" / "tagger" / "config.json").is_file() and (tmp_path / "fit" / "dataset").is_dir()
    assert json.loads((tmp_path / "fit" / "tagger" / "train_config.json").read_text())["max_steps"] == 2
    assert main(fit) == 2 and "reuse it with --tagger" in capsys.readouterr().err  # never fit over an earlier tagger



def test_inside_the_pipeline_a_flagged_sentence_is_rejected_and_the_top_up_asks_again() -> None:
    """``tagger_gate`` on the augmenter: the checker's ``seed_tagger_mention`` rule asks the gate of each sentence as
    it is written, so a rejected one is replaced by the composer's top-up (the gate over finished rows only drops)."""
    import asyncio

    from hf_rgda import AugmentConfig, ScriptedLLM
    from hf_rgda.checking import Checker
    from hf_rgda.checking.seed_tagger import ListedWords
    from hf_rgda.pipeline import Pipeline
    from hf_rgda.records import Seed

    from .conftest import SEED_ROWS, FakeWorld, stage_of

    asks: list[int] = []
    first = [("Inherited PTEN variants raise the risk of glioma and asthma in adults .", "glioma"),
             ("Carriers of MLH1 variants developed gout early .", "gout"),
             ("Lupus was diagnosed in three siblings of the cohort .", "Lupus")]
    again = [("Two brothers with anemia were treated at the clinic .", "anemia")]

    def handler(messages, schema, params):
        if stage_of(list(messages)) in ("composer", "composer_top_up"):
            asks.append(schema["properties"]["sentences"]["minItems"])
            rows = first if len(asks) == 1 else again
            return {"sentences": [{"text": t, "entities": [{"text": e, "type": "Disease"}]} for t, e in rows]}
        return FakeWorld()(messages, schema, params)

    seed = Seed("s0", tuple(SEED_ROWS["tokens"][0]), tuple(SEED_ROWS["ner_tags"][0]))
    gate = ListedWords({"asthma": "Disease"})  # the tagger reads "asthma" as a mention the first row leaves untagged
    llm = ScriptedLLM(handler)
    llm.top_up, llm.max_repairs = 1, 0
    [r] = asyncio.run(Pipeline(AugmentConfig(method="gda"), llm, Checker(("Disease",), tagger_gate=gate)).run([seed]))
    flagged = [c for _, c in r.rejected if c.reason == "seed_tagger_mention"]
    assert len(flagged) == 1 and "'asthma' (Disease) left untagged" in flagged[0].detail
    assert asks == [3, 1]  # the top-up asked for the one sentence the gate took
    assert sorted(" ".join(c.tokens) for c in r.accepted) == sorted(t for t, _ in first[1:] + again)
    [r] = asyncio.run(Pipeline(AugmentConfig(method="gda"), ScriptedLLM(handler), Checker(("Disease",))).run([seed]))
    assert not [c for _, c in r.rejected if c.reason == "seed_tagger_mention"]  # no gate: the rule says nothing


def test_the_augmenter_takes_a_gate_or_its_folder_and_refuses_one_of_other_types(gate_dir: Path, monkeypatch) -> None:
    from datasets.fingerprint import Hasher

    from hf_rgda import RGDAAugmenter, ScriptedLLM

    llm = ScriptedLLM([], name="s")
    aug = RGDAAugmenter(llm, label_names=LABELS, tagger_gate=gate_dir, cache=False)
    assert isinstance(aug.tagger_gate, TaggerGate) and aug.checker().tagger_gate is aug.tagger_gate
    asked: list[int] = []
    real = TaggerGate.predict_rows
    monkeypatch.setattr(TaggerGate, "predict_rows", lambda self, rows: asked.append(len(rows)) or real(self, rows))
    sentence = ["Patients", "with", "gout", "were", "seen", "."]
    assert aug.tagger_gate.predict(sentence) == ("O", "O", "B-Disease", "O", "O", "O")  # as the fitted test reads it
    assert aug.tagger_gate.predict(tuple(sentence)) == aug.tagger_gate.predict(sentence) and asked == [1]  # remembered
    plain = RGDAAugmenter(llm, label_names=LABELS, cache=False)
    assert Hasher.hash(aug) != Hasher.hash(plain) and aug._identity() != plain._identity()
    assert Hasher.hash(aug) == Hasher.hash(RGDAAugmenter(llm, label_names=LABELS, cache=False,
                                                         tagger_gate=TaggerGate.load(gate_dir)))
    with pytest.raises(ConfigError, match=r"tags \['Disease'\], the data's types are \['Gene'\]"):
        RGDAAugmenter(llm, label_names=["O", "B-Gene", "I-Gene"], tagger_gate=gate_dir)
    with pytest.raises(ConfigError, match="predict"):
        RGDAAugmenter(llm, label_names=LABELS, tagger_gate=42)


def test_for_seeds_fits_once_and_a_rerun_on_the_same_seeds_reuses_the_fit(tmp_path: Path, monkeypatch) -> None:
    from hf_rgda import tagger_gate

    if not (MINILM / "config.json").is_file():
        pytest.skip("MiniLM not provisioned")
    fits: list[int] = []
    real = TaggerGate.fit.__func__
    monkeypatch.setattr(tagger_gate, "FIT_STEPS", 2)  # the recipe's 500 steps, cut for the test
    monkeypatch.setattr(TaggerGate, "fit", classmethod(lambda cls, seeds, **kw: fits.append(len(seeds))
                                                       or real(cls, seeds, model=str(MINILM), batch_size=4, **kw)))
    seeds = _split(8)
    gate = TaggerGate.for_seeds(seeds, tmp_path / "g", label_names=LABELS)
    assert fits == [8] and json.loads((tmp_path / "g" / "fitted_on.json").read_text())["rows"] == 8
    assert gate.fitted_on_seeds
    assert TaggerGate.for_seeds(seeds, tmp_path / "g", label_names=LABELS).digest == gate.digest and fits == [8]
    TaggerGate.for_seeds(seeds.select(range(6)), tmp_path / "g", label_names=LABELS)  # other seeds: fitted again
    assert fits == [8, 6]


def test_augment_with_a_tagger_gate_counts_its_rejections_in_the_summary(gate_dir: Path, tmp_path: Path, monkeypatch,
                                                                         capsys) -> None:
    from hf_rgda import ScriptedLLM
    from hf_rgda.cli import main

    from .conftest import stateless_handler

    data = _seed_folder(tmp_path)
    monkeypatch.setattr(TaggerGate, "predict", lambda self, tokens: ("B-Disease",) + ("O",) * (len(tokens) - 1))
    args = ["augment", str(data), "--method", "gda", "--cache", str(tmp_path / "r.sqlite3")]
    assert main([*args, "--out", str(tmp_path / "aug"), "--tagger-gate", str(gate_dir)],
                llm=ScriptedLLM(stateless_handler, name="s")) == 0
    summary = json.loads((tmp_path / "aug" / "summary.json").read_text())
    flagged = summary["summary"]["rejected_by_reason"].get("seed_tagger_mention", 0)
    assert flagged > 0  # every sentence whose first word is untagged: the fake tagger tags it
    assert summary["tagger_gate"] == {"folder": gate_dir.name, "digest": TaggerGate.load(gate_dir).digest,
                                      "fitted_on_seeds": False}
    assert main([*args, "--out", str(tmp_path / "dry"), "--dry-run", "--tagger-gate", "seeds"],
                llm=ScriptedLLM(stateless_handler, name="s")) == 2
    assert "fine-tunes no model on the seeds" in capsys.readouterr().err


def test_a_tagger_of_another_scheme_is_read_leniently_and_a_missing_folder_fails_before_any_call(
        gate_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """A tagger picks each word's tag alone, so a BIOES one writes what BIOES forbids ("B-X O"): read leniently, not
    failing the seed; an IO tagger (no B- label) is a tagger too; a gate whose folder a worker lacks fails at once."""
    import shutil

    from hf_rgda import train

    for name, labels in (("bioes", ["O", "B-Disease", "I-Disease", "E-Disease", "S-Disease"]), ("io", ["O", "I-Disease"])):
        folder = tmp_path / name
        shutil.copytree(gate_dir, folder)
        config = json.loads((folder / "config.json").read_text())
        config["id2label"] = {str(i): n for i, n in enumerate(labels)}
        config["label2id"] = {n: i for i, n in enumerate(labels)}
        (folder / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(train, "predict_tags", lambda m, t, rows, **kw: [["B-Disease", "O"] + ["O"] * (len(r) - 2)
                                                                         for r in rows])
    monkeypatch.setattr(TaggerGate, "_tagger", lambda self: (None, None))
    bioes = TaggerGate.load(tmp_path / "bioes")
    assert bioes.tagger_scheme == "BIOES" and bioes.predict(["Gout", "hurts", "."]) == ("B-Disease", "O", "O")
    monkeypatch.setattr(train, "predict_tags", lambda m, t, rows, **kw: [["I-Disease", "I-Disease", "O"] for _ in rows])
    io = TaggerGate.load(tmp_path / "io")
    assert io.tagger_scheme == "IOB2" and missed_mentions(["O"] * 3, list(io.predict(["Wilson", "disease", "."]))) == [
        (0, 2, "Disease")]
    monkeypatch.undo()
    moved = pickle.loads(pickle.dumps(TaggerGate.load(tmp_path / "io")))
    shutil.rmtree(tmp_path / "io")
    with pytest.raises(ConfigError, match="is not on this machine"):
        moved.ready()
