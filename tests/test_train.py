"""Training and evaluation: label alignment, shipped metric modules, bootstrap, baselines, Trainer, CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from datasets import ClassLabel, Dataset, Features, Sequence, Value

from hf_rgda import InputError
from hf_rgda.metrics import (
    entity_f1,
    paired_bootstrap,
    scheme_validity_rate,
    sentence_counts,
    seqeval,
    tag_hallucination_rate,
)
from hf_rgda.provision import MODELS, snapshot_dir
from hf_rgda.tags import label_names_of, tags_to_spans, validate_tags
from hf_rgda.train import align_labels

from .conftest import LABELS, SEED_ROWS

pytest.importorskip("transformers")
MINILM = snapshot_dir(MODELS["minilm"])
needs_minilm = pytest.mark.skipif(not (MINILM / "config.json").is_file(), reason="MiniLM not provisioned")
L2I = {n: i for i, n in enumerate(LABELS)}


@pytest.fixture(scope="module")
def tokenizer():
    if not (MINILM / "config.json").is_file():
        pytest.skip("MiniLM not provisioned")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(MINILM))


# ---------------------------------------------------------------- alignment
def test_first_subword_labelled_rest_masked(tokenizer) -> None:
    words = ["Hyperphenylalaninemia", "is", "rare"]
    out = align_labels({"tokens": [words], "ner_tags": [["B-Disease", "O", "O"]]}, tokenizer, L2I)
    ids, labels = out["input_ids"][0], out["labels"][0]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]" and labels[0] == labels[-1] == -100
    first_word = len(tokenizer.tokenize("Hyperphenylalaninemia"))
    assert first_word > 1
    assert labels[1] == L2I["B-Disease"] and labels[2 : 1 + first_word] == [-100] * (first_word - 1)
    assert [x for x in labels if x != -100] == [L2I["B-Disease"], 0, 0]


def test_long_sentence_windowed_keeps_every_label(tokenizer) -> None:
    words = [f"word{i}" for i in range(60)]
    tags = ["O"] * 60
    tags[30], tags[31] = "B-Disease", "I-Disease"
    out = align_labels({"tokens": [words], "ner_tags": [tags]}, tokenizer, L2I, max_length=24)
    assert len(out["input_ids"]) > 1 and all(len(x) <= 24 for x in out["input_ids"])
    labelled = [lab for labs in out["labels"] for lab in labs if lab != -100]
    assert len(labelled) == 60 and labelled.count(L2I["B-Disease"]) == 1 and sum(out["cut_words"]) == 0
    assert out["word_offset"][0] == 0 and out["word_offset"][1] > 0 and set(out["sentence_id"]) == {0}


def test_truncation_is_counted_not_silent(tokenizer) -> None:
    words = [f"word{i}" for i in range(60)]
    out = align_labels({"tokens": [words], "ner_tags": [["O"] * 60]}, tokenizer, L2I, max_length=24, long="truncate")
    assert len(out["input_ids"]) == 1 and out["cut_words"][0] > 0
    assert out["cut_words"][0] + sum(lab != -100 for lab in out["labels"][0]) == 60


def test_classlabel_ids_and_bad_rows(tokenizer) -> None:
    feats = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=LABELS))})
    ds = Dataset.from_dict({"tokens": [["fever", "."]], "ner_tags": [[1, 0]]}, features=feats)
    assert label_names_of(ds) == LABELS
    out = align_labels(ds[:], tokenizer, L2I, id2name=LABELS)
    assert [x for x in out["labels"][0] if x != -100] == [1, 0]
    with pytest.raises(InputError, match="row 0: 2 tokens but 1 tags"):
        align_labels({"tokens": [["a", "b"]], "ner_tags": [["O"]]}, tokenizer, L2I)
    with pytest.raises(InputError, match="'B-Gene' is not in the label set"):
        align_labels({"tokens": [["a"]], "ner_tags": [["B-Gene"]]}, tokenizer, L2I)


# ---------------------------------------------------------------- metrics
def test_seqeval_module_known_answers(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    refs = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG", "O", "O"]]
    preds = [["B-PER", "I-PER", "O", "O"], ["O", "B-ORG", "O", "B-LOC"]]
    m = seqeval(preds, refs)
    assert m["overall_precision"] == pytest.approx(2 / 3) and m["overall_recall"] == pytest.approx(2 / 3)
    assert m["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "number": 1}
    assert m["LOC"]["f1"] == 0.0 and m["scheme"] == "IOB2" and m["mode"] == "strict"
    # an I- without B-: no entity in strict IOB2; an entity in conlleval's default mode
    lone = [["I-PER", "I-PER", "O"]]
    gold = [["B-PER", "I-PER", "O"]]
    assert seqeval(lone, gold)["overall_f1"] == 0.0
    assert seqeval(lone, gold, mode="default")["overall_f1"] == 1.0
    # our own strict counts agree with the module
    assert entity_f1(sentence_counts(refs, preds)) == pytest.approx(m["overall_f1"])
    assert entity_f1(sentence_counts(gold, lone)) == 0.0


def test_bootstrap_p_values() -> None:
    refs = [["B-X", "O"]] * 400
    same = [["B-X", "O"]] * 300 + [["O", "O"]] * 100
    better = [["B-X", "O"]] * 380 + [["O", "O"]] * 20
    r = paired_bootstrap(refs, better, same, resamples=2000)
    assert r["delta"] > 0 and r["p_value"] < 0.01 and r["ci_low"] > 0
    r = paired_bootstrap(refs, same, same, resamples=2000)
    assert r["delta"] == 0 and r["p_value"] == 1.0
    rng = random.Random(1)  # two systems that differ only by noise on disjoint halves: not significant
    a = [["B-X", "O"] if rng.random() < 0.8 else ["O", "O"] for _ in range(400)]
    b = [a[i] if i % 2 else (["B-X", "O"] if rng.random() < 0.8 else ["O", "O"]) for i in range(400)]
    assert paired_bootstrap(refs, a, b, resamples=2000)["p_value"] > 0.05


def test_tag_quality_rates() -> None:
    rows = [["B-Disease", "O"], ["B-Effect", "O"], ["I-Disease", "O"], ["O", "O"]]
    assert tag_hallucination_rate(rows, LABELS) == 0.25
    assert scheme_validity_rate(rows) == 0.75


# ---------------------------------------------------------------- baselines
def test_eda_keeps_tags_aligned_and_entities_untouched() -> None:
    from hf_rgda.baselines import EDA

    try:
        eda = EDA(num_augmented=4, alpha=0.3, seed=3)
    except Exception as err:  # noqa: BLE001 - only to report the missing Debian package clearly
        pytest.skip(f"WordNet not installed: {err}")
    out = eda({k: v for k, v in SEED_ROWS.items()})
    assert out["rgda_status"].count("accepted") >= 6
    originals = {s: (t, g) for t, g, s, st in zip(out["tokens"], out["ner_tags"], out["rgda_source"],
                                                   out["rgda_status"]) if st == "original"}
    ops_changed = 0
    for tokens, tags, src, status in zip(out["tokens"], out["ner_tags"], out["rgda_source"], out["rgda_status"]):
        validate_tags(tokens, tags, ["Disease"])
        if status != "accepted":
            continue
        seed_tokens, seed_tags = originals[src]
        ents = [tokens[s.start:s.end] for s in tags_to_spans(tags)]
        assert ents == [seed_tokens[s.start:s.end] for s in tags_to_spans(seed_tags)]  # same entities, same order
        ops_changed += tokens != seed_tokens
    assert ops_changed >= 6


def test_mention_replacement_swaps_same_type_mentions() -> None:
    from hf_rgda.baselines import MentionReplacement, mention_inventory

    inv = mention_inventory(SEED_ROWS["tokens"], SEED_ROWS["ner_tags"])
    assert ["breast", "cancer"] in inv["Disease"] and ["tumours"] in inv["Disease"]
    out = MentionReplacement(inv, num_augmented=2, seed=0)(SEED_ROWS)
    for tokens, tags, status in zip(out["tokens"], out["ner_tags"], out["rgda_status"]):
        validate_tags(tokens, tags, ["Disease"])
        if status == "accepted":
            assert all(tokens[s.start:s.end] in inv["Disease"] for s in tags_to_spans(tags))
    assert out["rgda_status"].count("accepted") == 6


# ---------------------------------------------------------------- Trainer
@needs_minilm
def test_train_ner_loss_falls_and_cli_train_evaluate(tmp_path: Path, capsys) -> None:
    from hf_rgda import ScriptedLLM
    from hf_rgda.cli import main

    from .conftest import stateless_handler

    data = tmp_path / "data"
    data.mkdir()
    rows = [{"tokens": t, "ner_tags": g} for t, g in zip(SEED_ROWS["tokens"], SEED_ROWS["ner_tags"])]
    (data / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (data / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:2]) + "\n")
    assert main(["augment", str(data), "--method", "gda", "--out", str(tmp_path / "aug"),
                 "--cache", str(tmp_path / "r.sqlite3")], llm=ScriptedLLM(stateless_handler, name="s")) == 0
    assert main(["train", str(tmp_path / "aug"), "--out", str(tmp_path / "model"), "--max-steps", "12",
                 "--batch-size", "4", "--learning-rate", "5e-4", "--eval-data", str(data), "--eval-split", "test"]) == 0
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    history = metrics["loss_history"]
    assert metrics["train_sentences"] == 3 + 9 and metrics["train_steps"] == 12
    assert history[-1] < history[0]
    assert 0.0 <= metrics["eval"]["overall_f1"] <= 1.0 and metrics["eval"]["mode"] == "strict"
    assert main(["evaluate", str(tmp_path / "model"), str(data), "--split", "test", "--out",
                 str(tmp_path / "eval.json")]) == 0
    report = json.loads((tmp_path / "eval.json").read_text())
    assert report["sentences"] == 2 and report["metrics"]["overall_f1"] == metrics["eval"]["overall_f1"]


@needs_minilm
def test_predict_tags_sorted_batches_map_back_to_their_sentences(tokenizer) -> None:
    """Batches are formed shortest first; every prediction must land on its own sentence and word."""
    import torch
    from transformers import AutoConfig, AutoModelForTokenClassification

    from hf_rgda.train import predict_tags

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(str(MINILM), num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
                                        label2id=L2I)
    model = AutoModelForTokenClassification.from_config(config)
    rng = random.Random(3)
    vocab = ["cancer", "the", "patients", "with", "BRCA1", "mutations", "showed", "breast", "tumors", "in", "."]
    rows = [[rng.choice(vocab) for _ in range(n)] for n in (30, 2, 17, 5, 1, 40, 9)]
    together = predict_tags(model, tokenizer, rows, batch_size=3, max_length=24)  # the 30 and 40 words are windowed
    alone = [predict_tags(model, tokenizer, [r], batch_size=1, max_length=24)[0] for r in rows]
    assert [len(p) for p in together] == [len(r) for r in rows]
    assert together == alone
