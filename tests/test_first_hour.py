"""Issue 31, a user's first hour: outages that heal on rerun, a summary right however the map ran, exit codes that
tell the truth, failed seeds that keep no unverified row, and input errors as one line naming the file's own row.

Each test here fails on 8ae9ee0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset, load_dataset, load_from_disk

from hf_rgda import ConfigError, InputError, RGDAAugmenter, RunSummary, ScriptedLLM, ServerError
from hf_rgda.cli import main
from hf_rgda.recipe import Run, max_failed
from hf_rgda.testing import stage_of, stateless_answer

from .conftest import LABELS, SEED_ROWS

#: the scripted provider's state; module-level (not a closure) so that the augmenter's hash is the same before and
#: after an outage, as a real backend's is
OUTAGE: dict[str, Any] = {"down": "", "calls": 0}


def outage_handler(messages: Any, schema: Any, params: Any) -> Any:
    """``stateless_answer``, except while ``OUTAGE["down"]`` is ``"all"`` (every call answers 503) or a text (the
    seed generation calls of the seed with that text answer 503)."""
    OUTAGE["calls"] += 1
    down = OUTAGE["down"]
    if down == "all" or (down and stage_of(list(messages)) == "seed_generation" and down in messages[-1]["content"]):
        return ServerError("HTTP 503: the provider is down")
    return stateless_answer(messages, schema, params)


def outage_llm() -> ScriptedLLM:
    return ScriptedLLM(outage_handler, name="outage")


@pytest.fixture(autouse=True)
def _healthy() -> None:
    OUTAGE.update(down="", calls=0)


def _seed_file(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir(exist_ok=True)
    rows = [{"tokens": t, "ner_tags": g} for t, g in zip(SEED_ROWS["tokens"], SEED_ROWS["ner_tags"])]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _traces(rows: Any) -> dict[str, dict[str, Any]]:
    """Each seed's trace in ``rows``, by the seed's text."""
    out = {}
    for tokens, trace in zip(rows["tokens"], rows["rgda_trace"]):
        if trace:
            out[" ".join(tokens)] = json.loads(trace)
    return out


SICK = "cystic fibrosis"  # the seed whose calls fail in a partial outage
SICK_SEED = " ".join(SEED_ROWS["tokens"][1])


# ---------------------------------------------------------------- outages heal
def test_cli_outage_heals_on_rerun_with_calls_only_for_the_failed_seeds(tmp_path: Path, capsys) -> None:
    folder, out = _seed_file(tmp_path), tmp_path / "out"
    argv = ["augment", str(folder), "--method", "rgda", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")]

    OUTAGE["down"] = "all"  # run 1: the provider answers 503 to every call
    assert main(argv, llm=outage_llm()) == 3
    err = capsys.readouterr().err
    assert "3 of 3 seeds failed (every seed failed" in err and "rerun the same command to retry" in err
    assert "Traceback" not in err
    assert json.loads((out / "summary.json").read_text())["summary"]["failed_seeds"] == 3
    failed = [json.loads(x) for x in (out / "rejections.jsonl").read_text().splitlines()]
    assert [x["rgda_status"] for x in failed] == ["failed"] * 3

    OUTAGE.update(down=SICK, calls=0)  # run 2: recovered, but for one seed's first stage
    assert main(argv, llm=outage_llm()) == 3
    assert "1 of 3 seeds failed (more than --max-failed 0.1" in capsys.readouterr().err
    assert OUTAGE["calls"] > 0  # on 8ae9ee0: 0 calls, datasets' cached failures served again

    OUTAGE.update(down="", calls=0)  # run 3: recovered
    assert main(argv, llm=outage_llm()) == 0
    seed_rows = load_from_disk(str(out / "dataset"))["seed"]
    traces = _traces(seed_rows)
    assert len(traces) == 3 and all(t["accepted"] == 3 and not t["failure"] for t in traces.values())
    assert len(load_from_disk(str(out / "dataset"))["augmented"]) == 9
    for text, t in traces.items():  # every call of the seeds accepted before came from the response cache
        paid = t["calls"] - t["cached_calls"]
        assert (paid > 0) if text == SICK_SEED else (paid == 0), text
    assert OUTAGE["calls"] == traces[SICK_SEED]["calls"] - traces[SICK_SEED]["cached_calls"]

    OUTAGE["calls"] = 0  # run 4: nothing failed in run 3, so datasets' cache serves it
    assert main(argv, llm=outage_llm()) == 0 and OUTAGE["calls"] == 0


def test_python_api_outage_heals_on_rerun(tmp_path: Path) -> None:
    folder = _seed_file(tmp_path)
    disk = load_dataset("json", data_files=str(folder / "train.jsonl"), split="train")

    def aug() -> RGDAAugmenter:
        return RGDAAugmenter(llm=outage_llm(), label_names=LABELS, cache=tmp_path / "r.sqlite3", keep_rejected=True)

    OUTAGE["down"] = SICK
    first = disk.map(aug(), batched=True)
    assert _traces(first)[SICK_SEED]["failure"].startswith("seed_generation: ServerError")
    accepted_before = first.filter(lambda s: s == "accepted", input_columns="rgda_status")
    assert len(accepted_before) == 6

    OUTAGE.update(down="", calls=0)
    second = disk.map(aug(), batched=True)
    traces = _traces(second)
    assert all(t["accepted"] == 3 and not t["failure"] for t in traces.values())
    assert OUTAGE["calls"] == traces[SICK_SEED]["calls"] - traces[SICK_SEED]["cached_calls"] > 0
    kept = second.filter(lambda s: s == "accepted", input_columns="rgda_status")
    assert set(map(tuple, accepted_before["tokens"])) <= set(map(tuple, kept["tokens"]))  # nothing lost

    OUTAGE["calls"] = 0
    third = disk.map(aug(), batched=True)
    assert OUTAGE["calls"] == 0 and third._fingerprint == second._fingerprint


# ---------------------------------------------------------------- the summary, however the map ran
def test_summary_from_the_rows_is_right_on_a_cache_hit_and_under_num_proc(tmp_path: Path) -> None:
    folder = _seed_file(tmp_path)
    disk = load_dataset("json", data_files=str(folder / "train.jsonl"), split="train")

    def aug() -> RGDAAugmenter:
        return RGDAAugmenter(llm=outage_llm(), label_names=LABELS, cache=tmp_path / "r.sqlite3", method="gda")

    computed = disk.map(first := aug(), batched=True)
    cached = disk.map(second := aug(), batched=True)
    assert first.summary.seeds == 3 and second.summary.seeds == 0  # the object's own batches: none on a cache hit
    expected = RunSummary.from_dataset(computed).to_dict()
    assert expected["seeds"] == 3 and expected["accepted"] == 9
    assert RunSummary.from_dataset(cached).to_dict() == expected

    memory = Dataset.from_dict(SEED_ROWS)
    workers = memory.map(third := aug(), batched=True, batch_size=1, num_proc=2)
    assert third.summary.seeds == 0  # the batches ran in the workers
    assert RunSummary.from_dataset(workers).to_dict()["seeds"] == 3
    assert RunSummary.from_dataset(workers).accepted == 9
    with pytest.raises(InputError, match="no rgda_trace column"):
        RunSummary.from_dataset(memory)


# ---------------------------------------------------------------- exit codes
def test_max_failed_is_a_count_or_a_fraction() -> None:
    assert (max_failed("0"), max_failed("5"), max_failed("0.1"), max_failed("10%"), max_failed("1.0")) == (
        0, 5, 0.1, 0.1, 1.0)
    for bad in ("-1", "1.5", "150%", "some"):
        with pytest.raises(ValueError):
            max_failed(bad)
    summary = RunSummary(seeds=10, failed_seeds=2)
    summary.failures["guidance"] = 2
    run = Run(rows=None, summary=summary, augmenter=None, seeds=10)
    assert run.too_many_failed(2) == "" and run.too_many_failed(0.2) == "" and run.too_many_failed(0.5) == ""
    assert run.too_many_failed(1).startswith("2 of 10 seeds failed (more than --max-failed 1; by stage: guidance 2)")
    assert "rerun the same command to retry the failed seeds" in run.too_many_failed(0.1)
    everything = RunSummary(seeds=2, failed_seeds=2)
    assert "every seed failed" in Run(None, everything, None, 2).too_many_failed(1.0)
    assert Run(None, RunSummary(), None, 0).too_many_failed(0) == ""


@pytest.mark.parametrize(("limit", "code"), [(None, 3), ("0", 3), ("1", 0), ("50%", 0), ("0.2", 3)])
def test_cli_partial_failure_policy(tmp_path: Path, capsys, limit: str | None, code: int) -> None:
    """One seed of three failing: exit 3 beyond --max-failed (default 0.1), else 0; the output is written either way."""
    folder, out = _seed_file(tmp_path), tmp_path / "out"
    OUTAGE["down"] = SICK
    argv = ["augment", str(folder), "--method", "gda", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")]
    assert main(argv + (["--max-failed", limit] if limit else []), llm=outage_llm()) == code
    err = capsys.readouterr().err
    assert ("rerun the same command" in err) == (code == 3)
    assert len(load_from_disk(str(out / "dataset"))["augmented"]) == 6


# ---------------------------------------------------------------- unverified rows
@pytest.mark.parametrize("stage", ["entity_verify", "debate_review"])
def test_unverified_rows_are_never_emitted_as_accepted(stage: str) -> None:
    def handler(messages, schema, params):
        if stage_of(list(messages)) == stage and SICK in messages[-1]["content"]:
            return ServerError("HTTP 503")
        return stateless_answer(messages, schema, params)

    # verify_threshold 1.0: the world's 0.95 is below it, so the seed's own entity (the question that fails, about the
    # sick seed's sentence) is asked as the relative threshold's reference
    aug = RGDAAugmenter(llm=ScriptedLLM(handler, name=f"down-{stage}"), label_names=LABELS, cache=False,
                        keep_rejected=True, debate_review=stage == "debate_review", verify_threshold=1.0)
    out = Dataset.from_dict(SEED_ROWS).map(aug, batched=True)
    sick = _traces(out)[SICK_SEED]["seed"]
    statuses = [s for s, src in zip(out["rgda_status"], out["rgda_source"]) if src == sick]
    assert "accepted" not in statuses and "failed" in statuses  # 8ae9ee0: three unverified rows "accepted" as well
    assert RunSummary.from_dataset(out).accepted == out["rgda_status"].count("accepted") == 6


# ---------------------------------------------------------------- input errors
def _rows(n: int = 45) -> list[dict[str, Any]]:
    """Even rows name a disease, odd rows none (the sample skips them, so a row's place there is not its own)."""
    return [{"tokens": ["Gout", "flared", "again", "."], "ner_tags": ["B-Disease", "O", "O", "O"]} if k % 2 == 0
            else {"tokens": ["Nothing", "here", "."], "ner_tags": ["O", "O", "O"]} for k in range(n)]


def _write(folder: Path, rows: list[Any]) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "train.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return folder


def _bad_row(row: Any) -> list[Any]:
    rows: list[Any] = _rows()
    rows[40] = row
    return rows


@pytest.mark.parametrize(("rows", "message"), [
    (_bad_row({"tokens": ["Gout", None, "."], "ner_tags": ["B-Disease", "O", "O"]}),
     "row 40: token 1 is empty or not a string: None"),
    (_bad_row({"tokens": ["Gout", "flared"], "ner_tags": ["O", "I-Disease"]}), "row 40: token 1: 'I-Disease' does not"),
    (_bad_row({"tokens": ["Gout", "flared"], "ner_tags": ["B-Diseas", "O"]}),
     "row 40: tag 'B-Diseas': entity type 'Diseas' (in 1 row) looks like a typo of 'Disease'"),
    (_bad_row({"tokens": ["Gout", "flared"], "ner_tags": ["X-Disease", "O"]}), "row 40: token 0: prefix 'X'"),
    (_bad_row({"tokens": ["Gout", "flared"]}), "row 40: the tags value is missing (null)"),
    (_bad_row('{"tokens": ["Gout"], "ner_tags": ["B-Disease"]'), "row 40 of {path} (line 41): not valid JSON"),
    ([{"tokens": ["Gout"], "labels": ["B-Disease"]}], "column 'ner_tags' is missing; columns are ['labels', 'tokens']"),
    ([], "{path}: the file is empty (no rows)"),
    (None, "{missing}: no such file or folder"),
])
def test_cli_input_errors_are_one_line_naming_the_files_row(tmp_path: Path, capsys, rows: Any, message: str) -> None:
    folder = _write(tmp_path / "data", rows) if rows is not None else tmp_path / "data"
    path, missing = folder / "train.jsonl", tmp_path / "nowhere" / "train.jsonl"
    source = str(missing) if rows is None else str(folder)
    code = main(["augment", source, "--out", str(tmp_path / "out"), "--num-seeds", "5"], llm=outage_llm())
    err = capsys.readouterr().err
    assert code == 2 and OUTAGE["calls"] == 0 and "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("hf-rgda")]  # one line (datasets' bars aside)
    assert line.startswith("hf-rgda: error: ") and message.format(path=path, missing=missing) in line, err


def test_an_explicit_label_set_decides_what_a_tag_typo_is(tmp_path: Path, capsys) -> None:
    folder = _write(tmp_path / "data", _bad_row({"tokens": ["Gout", "flared"], "ner_tags": ["B-Diseas", "O"]}))
    argv = ["augment", str(folder), "--out", str(tmp_path / "out"), "--num-seeds", "2", "--method", "gda"]
    assert main([*argv, "--labels", "O,B-Disease,I-Disease"], llm=outage_llm()) == 2
    assert "row 40: tag 'B-Diseas' is not in the label set" in capsys.readouterr().err
    assert main([*argv, "--labels", "O,B-Disease,I-Disease,B-Diseas,I-Diseas"], llm=outage_llm()) == 0


def test_from_dataset_checks_every_row_before_the_statistics() -> None:
    """A None token or an invalid row anywhere in the split, sampled or not, is an InputError naming its row (on
    8ae9ee0: a TypeError for the None token; the invalid row fed the split statistics silently)."""
    llm = outage_llm()
    for tokens, tags, message in ((["Gout", None], ["B-Disease", "O"], "row 3: token 1 is empty or not a string"),
                                  (["Gout", "flared"], ["O", "I-Disease"], "row 3: token 1: 'I-Disease' does not")):
        ds = Dataset.from_dict({"tokens": [*SEED_ROWS["tokens"], tokens], "ner_tags": [*SEED_ROWS["ner_tags"], tags]})
        with pytest.raises(InputError, match=f"^{message}"):
            RGDAAugmenter.from_dataset(ds, llm=llm)
    typo = Dataset.from_dict({"tokens": [*SEED_ROWS["tokens"], ["Gout"]],
                              "ner_tags": [*SEED_ROWS["ner_tags"], ["B-Diseas"]]})
    with pytest.raises(InputError, match="^row 3: tag 'B-Diseas': entity type 'Diseas'"):
        RGDAAugmenter.from_dataset(typo, llm=llm)
    aug = RGDAAugmenter.from_dataset(typo, llm=llm, label_names=[*LABELS, "B-Diseas", "I-Diseas"])
    assert aug.types == ["Disease", "Diseas"]
    with pytest.raises(InputError, match="column 'labels' is missing"):
        RGDAAugmenter.from_dataset(typo, llm=llm, tags_column="labels")


def test_forgetting_batched_true_says_so() -> None:
    aug = RGDAAugmenter(llm=outage_llm(), label_names=LABELS, cache=False)
    with pytest.raises(ConfigError, match=r"call ds\.map\(aug, batched=True\)"):
        Dataset.from_dict(SEED_ROWS).map(aug)
    assert OUTAGE["calls"] == 0
