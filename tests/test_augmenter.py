from __future__ import annotations

import dataclasses

import pytest
from datasets import ClassLabel, Dataset, Features, List, Value
from datasets.fingerprint import Hasher

from hf_rgda import ConfigError, InputError, RGDAAugmenter, ScriptedLLM
from hf_rgda.schemas import GR_RUBRIC
from hf_rgda.tags import validate_tags

from . import conftest
from .conftest import LABELS, SEED_ROWS, stateless_handler


def make_aug(**kw: object) -> RGDAAugmenter:
    kw.setdefault("llm", ScriptedLLM(stateless_handler, name="stateless"))
    return RGDAAugmenter(label_names=LABELS, **kw)


@pytest.fixture
def ds() -> Dataset:
    return Dataset.from_dict({**SEED_ROWS, "id": ["a", "b", "c"]})


def test_map_returns_originals_and_valid_augmented_rows(ds: Dataset) -> None:
    out = ds.map(make_aug(method="rgda"), batched=True, batch_size=2)
    assert out["rgda_status"].count("original") == 3 and out["rgda_status"].count("accepted") == 9
    for tokens, tags in zip(out["tokens"], out["ner_tags"]):
        validate_tags(tokens, tags, ["Disease"])
    assert set(out["id"]) == {"a", "b", "c"}  # other columns are carried to the augmented rows
    assert all(s > 0 for s in out["rgda_gr_scores"][0])


def test_classlabel_features_survive(ds: Dataset) -> None:
    feats = Features({"tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=LABELS)), "id": Value("string")})
    ids = [[LABELS.index(t) for t in row] for row in SEED_ROWS["ner_tags"]]
    ds = Dataset.from_dict({"tokens": SEED_ROWS["tokens"], "ner_tags": ids, "id": ["a", "b", "c"]}, features=feats)
    aug = RGDAAugmenter.from_dataset(ds, llm=ScriptedLLM(stateless_handler, name="stateless"), method="gda")
    out = ds.map(aug, batched=True)
    assert out.features["ner_tags"] == feats["ner_tags"]
    assert aug.label_names == LABELS and aug.stats.max_entity_len == {"Disease": 2}


def test_keep_flags(ds: Dataset) -> None:
    out = ds.map(make_aug(method="naive", keep_originals=False, keep_rejected=True), batched=True)
    assert set(out["rgda_status"]) == {"accepted"}
    assert all(t for t in out["rgda_trace"][::3])  # each seed's trace rides on its first row


@pytest.mark.parametrize(("row", "message"), [
    ({"tokens": ["a", "b"], "ner_tags": ["O"]}, "row 1: 2 tokens but 1 tags"),
    ({"tokens": ["a"], "ner_tags": ["B-Effect"]}, "row 1: tag 'B-Effect' is not in the label set"),
    ({"tokens": [], "ner_tags": []}, "row 1: empty sentence"),
    ({"tokens": ["a", "b"], "ner_tags": ["O", "I-Disease"]}, "row 1: token 1: 'I-Disease' does not continue"),
])
def test_bad_input_names_the_row(row: dict, message: str) -> None:
    bad = Dataset.from_dict({"tokens": [SEED_ROWS["tokens"][0], row["tokens"]],
                             "ner_tags": [SEED_ROWS["ner_tags"][0], row["ner_tags"]]})
    with pytest.raises(InputError, match=message):
        bad.map(make_aug(), batched=True, with_indices=True)


def test_config_errors_are_clear() -> None:
    with pytest.raises(ConfigError, match="method='best'"):
        make_aug(method="best")
    with pytest.raises(ConfigError, match="unknown option"):
        make_aug(threshhold=80)
    with pytest.raises(ConfigError, match="label_names is required"):
        RGDAAugmenter(llm=ScriptedLLM([]))


def test_a_numeric_option_of_the_wrong_kind_is_named() -> None:
    """A count takes an integer (a fraction or a text is refused, not rounded or compared as text); a float
    option takes an int; numpy's numbers are read as Python's (the configuration is written out as JSON)."""
    import json

    import numpy as np

    from hf_rgda import AugmentConfig

    for kw, said in (({"top_up": 2.5}, "top_up=2.5 must be an integer"),
                     ({"num_augmented": "3"}, "num_augmented='3' must be an integer"),
                     ({"max_repairs": True}, "max_repairs=True must be an integer"),
                     ({"num_augmented": None}, "num_augmented=None must be an integer"),  # None: only where unset means something
                     ({"seed": None}, "seed=None must be an integer"),
                     ({"temperature": "hot"}, "temperature='hot' must be a number")):
        with pytest.raises(ConfigError, match=said):
            AugmentConfig(**kw)
    assert AugmentConfig(max_repairs=None, top_up=None).max_repairs is None
    cfg = AugmentConfig(num_augmented=np.int64(4), temperature=np.float32(0.5), judge_temperature=1, top_up=True)
    assert (cfg.num_augmented, cfg.temperature, cfg.judge_temperature, cfg.top_up) == (4, 0.5, 1, 1)
    assert type(cfg.num_augmented) is int and type(cfg.temperature) is float
    assert json.loads(json.dumps(cfg.to_dict()))["num_augmented"] == 4


def test_representation_auto_is_the_backends_own() -> None:
    from hf_rgda import AugmentConfig
    from hf_rgda.llm.local import LocalLLM

    local = LocalLLM("a/b/c.gguf")  # nothing is loaded until a call
    assert AugmentConfig().representation == "auto"
    assert AugmentConfig().for_backend(local).representation == "inline"
    assert AugmentConfig().for_backend(ScriptedLLM([])).representation == "entities"
    assert AugmentConfig(representation="segments").for_backend(local).representation == "segments"
    assert make_aug().config.representation == "entities"  # resolved once, where the backend is known
    assert make_aug(representation="inline").config.representation == "inline"
    assert make_aug(representation="inline").checker().representation == "inline"  # its format_example rule's prompt
    assert AugmentConfig().max_repairs is None  # likewise the repairs: none for the local model, one elsewhere
    assert (AugmentConfig().for_backend(local).max_repairs, AugmentConfig().for_backend(ScriptedLLM([])).max_repairs) == (0, 1)
    assert AugmentConfig(max_repairs=2).for_backend(local).max_repairs == 2
    with pytest.raises(ConfigError, match="max_repairs=-1 must be 0 or more"):
        AugmentConfig(max_repairs=-1)


def test_a_composed_copy_of_the_example_item_it_was_shown_is_rejected() -> None:
    """The composer is shown another seed as its format example; a copy of that seed (a training sentence of the
    user's, not a new one) is rejected as a near copy of what the prompt showed, as a copy of its own seed is, in
    its first answer and in the re-ask that extends the same request."""
    import json

    from hf_rgda.testing import stateless_answer

    def handler(messages, schema, params):  # type: ignore[no-untyped-def]
        user = messages[1]["content"]  # the request, also under a re-ask's follow-up turns
        if "Example item from this dataset:" in user and "sentences" in schema.get("properties", {}):
            shown = json.loads(user.split("Example item from this dataset:\n", 1)[1].split("\n\n", 1)[0])
            return {"sentences": [shown]}  # the example item, word for word
        return stateless_answer(messages, schema, params)

    aug = make_aug(method="gda", keep_rejected=True, llm=ScriptedLLM(handler, name="copies-the-example"))
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    copies = [r for r, st in zip(out["rgda_reason"], out["rgda_status"]) if st == "rejected" and "near_copy_of_shown" in r]
    assert len(copies) == 6 and all(r == "composer/near_copy_of_shown" for r in copies)  # the ask and its re-ask
    assert aug.summary.to_dict()["rejected_by_reason"]["near_copy_of_shown"] == 6 and aug.config.max_repairs == 1
    details = [json.loads(t)["detail"] for t, r in zip(out["rgda_trace"], out["rgda_reason"]) if r.endswith("of_shown")]
    assert all(d.startswith("too similar to a sentence of the dataset the prompt showed: ") for d in details)


def test_fingerprint_depends_on_configuration_only(monkeypatch: pytest.MonkeyPatch) -> None:
    base = Hasher.hash(make_aug())
    assert Hasher.hash(make_aug()) == base
    assert Hasher.hash(make_aug(temperature=0.7)) != base
    assert Hasher.hash(make_aug(seed=1)) != base
    assert Hasher.hash(make_aug(llm=ScriptedLLM(stateless_handler, name="other-model"))) != base
    assert Hasher.hash(make_aug(llm="openai:gpt-4o-mini")) != Hasher.hash(make_aug(llm="openai:gpt-4o"))
    from hf_rgda import _source

    monkeypatch.setattr(_source, "source_hash", lambda: "changed")  # an edited checker, prompt or pipeline
    assert Hasher.hash(make_aug()) != base


def test_source_hash_covers_every_file(tmp_path) -> None:
    from hf_rgda._source import source_hash

    (tmp_path / "pkg" / "prompts").mkdir(parents=True)
    (tmp_path / "pkg" / "checker.py").write_text("RULE = 1\n")
    (tmp_path / "pkg" / "prompts" / "judge.md").write_text("Score it.\n")
    base = source_hash(tmp_path / "pkg")
    (tmp_path / "pkg" / "prompts" / "judge.md").write_text("Score it!\n")
    assert source_hash(tmp_path / "pkg") == base  # cached for the process: the installed code does not change
    source_hash.cache_clear()
    edited = source_hash(tmp_path / "pkg")
    assert edited != base
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "checker.cpython-312.pyc").write_bytes(b"\0")
    source_hash.cache_clear()
    assert source_hash(tmp_path / "pkg") == edited
    assert len(source_hash()) == 64  # the installed package


def test_code_change_never_reuses_cached_rows(tmp_path, ds: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """datasets caches ds.map(aug) and every filter after it under aug's hash: rows made by an older checker must not
    come back once the code changed (a benchmark trained on such stale rows before the source hash existed)."""
    from datasets import load_dataset

    from hf_rgda import _source
    from hf_rgda.checking import Checker

    path = tmp_path / "seeds.jsonl"
    ds.to_json(str(path))
    disk = load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf"))

    def accepted() -> Dataset:
        out = disk.map(make_aug(method="naive", cache=False), batched=True)
        return out.filter(lambda s: s == "accepted", input_columns="rgda_status")

    assert len(accepted()) == 9
    monkeypatch.setattr(Checker, "check", lambda self, cand, *a, **k: cand.reject("edited_rule"))
    assert len(accepted()) == 9  # same code hash: datasets serves its cached rows, as designed
    monkeypatch.setattr(_source, "source_hash", lambda: "edited")
    assert len(accepted()) == 0


def test_fingerprint_survives_a_run(ds: Dataset) -> None:
    aug = make_aug()
    before = Hasher.hash(aug)
    ds.map(aug, batched=True)
    assert Hasher.hash(aug) == before


def test_second_map_is_served_from_cache_with_zero_calls(tmp_path, ds: Dataset) -> None:
    path = tmp_path / "seeds.jsonl"
    ds.to_json(str(path))
    from datasets import load_dataset

    disk = load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf"))
    first = disk.map(make_aug(cache=tmp_path / "r.sqlite3"), batched=True)
    conftest.CALLS["n"] = 0
    second = disk.map(make_aug(cache=tmp_path / "r.sqlite3"), batched=True)
    assert conftest.CALLS["n"] == 0
    assert second._fingerprint == first._fingerprint and second.to_list() == first.to_list()


def test_num_proc_2_gives_the_same_rows(ds: Dataset) -> None:
    one = ds.map(make_aug(cache=False), batched=True, batch_size=1)
    two = ds.map(make_aug(cache=False), batched=True, batch_size=1, num_proc=2)
    # every column but the trace, which records wall-clock seconds
    assert one.remove_columns("rgda_trace").to_list() == two.remove_columns("rgda_trace").to_list()


def test_async_map(ds: Dataset) -> None:
    aug = make_aug(method="gda")
    out = ds.map(aug.acall, batched=True)
    assert out["rgda_status"].count("accepted") == 9
    assert aug.summary.seeds == 3 and aug.summary.accepted == 9


def test_salvaged_rows_carry_their_repairs_and_are_counted() -> None:
    """A sentence whose only fault is a context word tagged as an entity is kept with the tag undone
    (salvage=True, the default), its repair in rgda_reason; with salvage=False it is rejected."""
    import json

    def handler(messages, schema, params):
        if "answer" in schema["properties"]:  # the entity verifier's question (before issue 31 it failed the seed
            return {"A": 1.0}  # unnoticed: the unverified row still came out accepted)
        answer = {"text": "Germline BRCA1 mutations predispose women to ovarian cancer early .",
                  "entities": [{"text": "BRCA1", "type": "Disease"}, {"text": "ovarian cancer", "type": "Disease"}]}
        return {"sentences": [answer]}

    ds = Dataset.from_dict({k: v[:1] for k, v in SEED_ROWS.items()})
    aug = make_aug(method="naive", num_augmented=1, llm=ScriptedLLM(handler, name="salvage"))
    kept = ds.map(aug, batched=True)
    assert aug.summary.to_dict()["salvaged_by_rule"] == {"tagged_seed_context": 1} and aug.summary.rejected == {}
    row = kept[1]
    assert row["rgda_status"] == "accepted"
    assert row["ner_tags"] == ["O", "O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O", "O"]
    assert row["rgda_reason"].startswith("tagged_seed_context: untagged 'BRCA1'")
    assert json.loads(kept[0]["rgda_trace"])["salvaged"] == [row["rgda_reason"]]
    strict = make_aug(method="naive", num_augmented=1, salvage=False, max_repairs=0, keep_rejected=True,
                      llm=ScriptedLLM(handler, name="salvage"))
    out = ds.map(strict, batched=True)
    assert out["rgda_status"] == ["original", "rejected"] and out["rgda_reason"][1] == "seed_generation/tagged_seed_context"
    assert strict.summary.to_dict()["rejected_by_reason"] == {"tagged_seed_context": 1}


def test_from_dataset_detects_the_hyphen_convention() -> None:
    llm = ScriptedLLM(stateless_handler, name="stateless")
    split = Dataset.from_dict({"tokens": [["Prader", "-", "Willi", "syndrome", "."]], "ner_tags": [["B-Disease", "I-Disease", "I-Disease", "I-Disease", "O"]]})
    whole = Dataset.from_dict({"tokens": [["Prader-Willi", "syndrome", "."]], "ner_tags": [["B-Disease", "I-Disease", "O"]]})
    aug = RGDAAugmenter.from_dataset(split, llm=llm)
    assert aug.stats.split_hyphens and aug.checker().split_hyphens
    assert not RGDAAugmenter.from_dataset(whole, llm=llm).stats.split_hyphens
    assert Hasher.hash(aug) != Hasher.hash(
        RGDAAugmenter.from_dataset(split, llm=llm, stats=dataclasses.replace(aug.stats, split_hyphens=False)))


def test_from_dataset_builds_the_lexicon_of_consistently_tagged_texts() -> None:
    ds = Dataset.from_dict({"tokens": [["Cases", "of", "gout", "rose", "."]] * 3 + [["A", "gout", "study", "."]],
                            "ner_tags": [["O", "O", "B-Disease", "O", "O"]] * 3 + [["O", "O", "O", "O"]]})
    llm = ScriptedLLM(stateless_handler, name="stateless")
    assert RGDAAugmenter.from_dataset(ds.select(range(3)), llm=llm).stats.lexicon == {"gout": "Disease"}
    assert RGDAAugmenter.from_dataset(ds, llm=llm).stats.lexicon == {}  # 3 of 4 uses tagged: below 90%


def test_a_failed_seed_names_its_stage_publicly(ds: Dataset) -> None:
    """A failure (rgda_reason of the 'failed' row, the summary's failures_by_stage) names the stage as the rest of
    the output does (seed_generation, guidance_judge, ...), never a private method name."""
    from hf_rgda import BackendError

    aug = make_aug(method="naive", keep_rejected=True, llm=ScriptedLLM(lambda *_: BackendError("boom"), name="down"))
    out = ds.map(aug, batched=True)
    failed = [r for r in out if r["rgda_status"] == "failed"]
    assert [r["rgda_reason"] for r in failed] == ["seed_generation: BackendError: boom"] * 3
    assert aug.summary.to_dict()["failures_by_stage"] == {"seed_generation": 3}


def test_bad_input_names_the_dataset_row_with_indices_and_the_batch_row_without() -> None:
    """In a later batch, the dataset's row index (with_indices=True passes it), not the row's place in its batch;
    without indices, the batch row and how to get the dataset's."""
    rows = {"tokens": [*SEED_ROWS["tokens"], ["a", "b"]], "ner_tags": [*SEED_ROWS["ner_tags"], ["O"]]}
    bad = Dataset.from_dict(rows)
    with pytest.raises(InputError, match="^row 3: 2 tokens but 1 tags"):
        bad.map(make_aug(), batched=True, batch_size=2, with_indices=True)
    aug = make_aug(method="gda")
    with pytest.raises(InputError, match="^row 3: 2 tokens but 1 tags"):
        bad.map(aug.acall, batched=True, batch_size=2, with_indices=True)
    with pytest.raises(InputError, match=r"^row 1 of this batch: 2 tokens but 1 tags .*with_indices=True"):
        bad.map(make_aug(), batched=True, batch_size=2)


@pytest.mark.parametrize("stage", ["seed_generation", "guidance_judge"])
@pytest.mark.parametrize("error", ["auth", "config", "import"])
def test_errors_that_fail_every_seed_stop_the_run(ds: Dataset, stage: str, error: str) -> None:
    """A rejected key (or a bad configuration, a missing extra) would fail every seed the same way: it propagates out
    of ds.map at once, from a stage or from inside a judge loop, and no seed is recorded as failed."""
    from hf_rgda import AuthenticationError
    from hf_rgda.testing import stage_of

    exc = {"auth": AuthenticationError("openai: no API key: set OPENAI_API_KEY"),
           "config": ConfigError("bad setting"), "import": ImportError("pip install 'hf_rgda[openai]'")}[error]

    asked: list[str] = []

    def handler(messages, schema, params):
        asked.append(stage_of(list(messages)))
        return exc if asked[-1] == stage else stateless_handler(messages, schema, params)

    llm = ScriptedLLM(handler, name="no-key")
    aug = make_aug(keep_rejected=True, llm=llm)
    with pytest.raises(type(exc)) as raised:
        ds.map(aug, batched=True)
    assert raised.value is exc
    assert aug.summary.seeds == 0 and aug.summary.failed_seeds == 0
    per_seed = len(GR_RUBRIC) if stage == "guidance_judge" else 1  # a verdict read by probability: one call per criterion
    assert asked.count(stage) <= len(ds) * per_seed


@pytest.mark.parametrize("method", ["rgda", "gda", "naive"])
def test_a_finished_batch_leaves_no_reference_cycle(ds: Dataset, method: str) -> None:
    """A batch's stages, seeds and rows go with their last reference, not to the garbage collector: a cycle through
    one stage object (the composer's repair held a bound method of the composer) kept every seed of its batch alive
    until a full collection, which then walked them all (the throughput benchmark: +20,000 objects per collection)."""
    import gc

    aug = make_aug(method=method, cache=False)
    ds.map(aug, batched=True, batch_size=2, load_from_cache_file=False)  # warm: imports, datasets' own first-use state
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        ds.map(aug, batched=True, batch_size=2, load_from_cache_file=False)
        gc.collect()
        ours = sorted({type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("hf_rgda")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert ours == []
