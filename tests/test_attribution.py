"""WHERE: Captum leave-one-out attribution on the real MiniLM encoder (provisioned), fine-tuned for a few steps."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from datasets import Dataset

from hf_rgda.provision import MODELS, snapshot_dir

pytest.importorskip("captum")
MINILM = snapshot_dir(MODELS["minilm"])
pytestmark = pytest.mark.skipif(not (MINILM / "config.json").is_file(), reason="MiniLM not provisioned")
LABELS = ["O", "B-Disease", "I-Disease"]
SENT = ["we", "saw", "severe", "zorbitis", "in", "her", "today", "."]
TAGS = ["O", "O", "O", "B-Disease", "O", "O", "O", "O"]


@pytest.fixture(scope="module")
def cue_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM trained so that one cue word decides the entity: "severe X" is a Disease; "red X" and a masked cue
    ("[MASK] X", what the ablation shows the model) are not. Removing "severe" must therefore flip the entity."""
    from hf_rgda.train import train_ner

    rng = random.Random(0)
    names = ["zorbitis", "kelmosis", "tarfia", "wendrax", "pulmicor", "ostrelle"]
    rows: dict[str, list] = {"tokens": [], "ner_tags": []}
    for i in range(240):
        cue = "severe" if i % 2 else ("red" if i % 4 == 0 else "[MASK]")
        rows["tokens"].append(["we", "saw", cue, rng.choice(names), "in", rng.choice(["him", "her", "them"]),
                               rng.choice(["today", "again", "often"]), "."])
        rows["ner_tags"].append(["O", "O", "O", "B-Disease" if i % 2 else "O", "O", "O", "O", "O"])
    out = tmp_path_factory.mktemp("cue_model")
    train_ner(Dataset.from_dict(rows), output_dir=out, model=str(MINILM), max_steps=60, batch_size=16,
              learning_rate=1e-3, warmup_ratio=0.0, label_names=LABELS)
    return out


def test_cue_word_outscores_neutral_word_and_entities_are_never_selected(cue_model: Path) -> None:
    from hf_rgda.attribution import AttributionSelector

    sel = AttributionSelector(str(cue_model), type_descriptions={"Disease": "an illness"}, top_n=3)
    a = sel.attribute(SENT, TAGS)
    assert a.entity_map[2] > 100 * max(abs(a.entity_map[6]), 1e-3)  # "severe" (the cue) vs "today" (neutral)
    assert 3 not in a.selected and 3 in a.protected  # the entity word
    assert all(SENT[i] not in (".", "we", "in", "her") for i in a.selected)  # punctuation and function words
    assert 2 in a.selected


def test_batched_and_one_at_a_time_agree(cue_model: Path) -> None:
    from hf_rgda.attribution import AttributionSelector

    tokens = ["Patients", "with", "severe", "zorbitis", "and", "wendrax", "were", "treated", "today", "."]
    tags = ["O", "O", "O", "B-Disease", "O", "B-Disease", "O", "O", "O", "O"]
    a = AttributionSelector(str(cue_model), batched=True).attribute(tokens, tags)
    b = AttributionSelector(str(cue_model), batched=False).attribute(tokens, tags)
    assert a.entity_map == pytest.approx(b.entity_map, abs=1e-5)
    assert a.description_map == pytest.approx(b.description_map, abs=1e-5)
    assert a.selected == b.selected
    assert not set(a.selected) & {3, 5}


def test_subwords_are_grouped_per_word(cue_model: Path) -> None:
    from hf_rgda.attribution import AttributionSelector

    sel = AttributionSelector(str(cue_model))
    tokens = ["Hyperphenylalaninemia", "was", "seen", "in", "zorbitis", "cases", "."]
    tags = ["O", "O", "O", "O", "B-Disease", "O", "O"]
    assert len(sel.tokenizer.tokenize(tokens[0])) > 1
    a = sel.attribute(tokens, tags)
    assert len(a.entity_map) == len(tokens) and len(a.description_map) == len(tokens)
