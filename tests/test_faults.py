"""Faults a user meets on a second day (issue 53): each ends in one line naming the problem, exit 2 for an input or a
configuration that cannot work, 3 when seeds (or canaries) failed; nothing is paid for twice, nothing is left half
written. Every test here fails on 2096b68 (a traceback, a wrong row, a silent success, a call paid before a refusal).
"""

from __future__ import annotations

import asyncio
import errno
import gc
import json
import logging
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from datasets import load_from_disk

from hf_rgda import ScriptedLLM
from hf_rgda.cli import main
from hf_rgda.testing import FakeWorld, stateless_answer

from .conftest import stateless_handler

DISEASE = [{"tokens": ["Mutations", "in", "APC", "cause", "colon", "cancer", "."],
            "ner_tags": ["O", "O", "O", "O", "B-Disease", "I-Disease", "O"]},
           {"tokens": ["Gout", "flares", "were", "rare", "."], "ner_tags": ["B-Disease", "O", "O", "O", "O"]},
           {"tokens": ["No", "disease", "named", "here", "."], "ner_tags": ["O"] * 5}]


class Counting(ScriptedLLM):
    """The stateless scripted world, counting the calls it is paid for."""

    def __init__(self, handler: Any = stateless_handler) -> None:
        super().__init__(handler, name="counting")
        self.paid = 0

    async def complete(self, messages: Any, *, schema: Any, params: Any) -> Any:
        self.paid += 1
        return await super().complete(messages, schema=schema, params=params)

    async def option_probs(self, messages: Any, options: Any, *, params: Any) -> Any:
        self.paid += 1
        return await super().option_probs(messages, options, params=params)


def _folder(tmp_path: Path, rows: list[dict[str, Any]] = DISEASE, name: str = "data", split: str = "train") -> Path:
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PROGRESS = re.compile(r"\d+%\||\bit/s\b|\bs/it\b|examples/s|\| *\d+/\d+ ")  # a progress bar's line


def _one_line(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    """The one line of stderr besides progress bars (no traceback), which names each of ``words``."""
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if ANSI.sub("", x).strip() and not PROGRESS.search(x)]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def _augment(tmp_path: Path, folder: Path, *argv: str, llm: Any = None) -> int:
    return main(["augment", str(folder), "--method", "gda", "--out", str(tmp_path / "out"), "--cache",
                 str(tmp_path / "r.sqlite3"), *argv], llm=llm if llm is not None else Counting())


# ---------------------------------------------------------------- seeds
@pytest.mark.parametrize(("argv", "words"), [
    (["--num-seeds", "0"], ["num_seeds=0", "--num-seeds", "at least 1"]),
    (["--num-seeds", "-3"], ["num_seeds=-3", "at least 1"]),
    (["--min-entities", "99"], ["99 entities", "at most 1 in a row", "--min-entities"]),
])
def test_no_seed_to_augment_is_one_line_and_no_call(tmp_path: Path, capsys, argv: list[str], words: list[str]) -> None:
    llm = Counting()
    assert _augment(tmp_path, _folder(tmp_path), *argv, llm=llm) == 2
    _one_line(capsys, "hf-rgda: error:", *words)
    assert llm.paid == 0 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("scheme", ["IO", "IOB1"])
def test_io_and_iob1_entities_starting_with_i_are_seeds(tmp_path: Path, capsys, scheme: str) -> None:
    """``I-`` opens an entity in IO and IOB1: these rows have entities, and they are augmented."""
    rows = [{"tokens": r["tokens"], "ner_tags": [t.replace("B-", "I-") for t in r["ner_tags"]]} for r in DISEASE]
    assert _augment(tmp_path, _folder(tmp_path, rows), "--scheme", scheme) == 0
    dsd = load_from_disk(str(tmp_path / "out" / "dataset"))
    assert len(dsd["seed"]) == 2 and len(dsd["augmented"]) > 0
    assert all(t[:2] in ("O", "I-") for tags in dsd["augmented"]["ner_tags"] for t in tags)  # written in IO form


# ---------------------------------------------------------------- the response cache
@pytest.mark.parametrize("kind", ["text", "random bytes", "damaged", "folder"])
def test_an_unusable_cache_is_refused_before_any_call(tmp_path: Path, capsys, kind: str) -> None:
    import sqlite3

    cache = tmp_path / "r.sqlite3"
    if kind == "folder":
        cache.mkdir()
    elif kind == "text":
        cache.write_text("my notes, not a cache\n")
    elif kind == "random bytes":
        cache.write_bytes(bytes(range(256)) * 64)
    else:  # an SQLite file whose pages are overwritten
        with sqlite3.connect(cache) as conn:
            conn.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT, usage TEXT)")
            conn.executemany("INSERT INTO responses VALUES (?, ?, ?)", [(str(i), "x" * 500, "{}") for i in range(200)])
        conn.close()
        blob = bytearray(cache.read_bytes())
        blob[4096:12288] = b"\xff" * 8192
        cache.write_bytes(bytes(blob))
    llm = Counting()
    assert _augment(tmp_path, _folder(tmp_path), llm=llm) == 2
    _one_line(capsys, "hf-rgda: error: response cache", str(cache))
    assert llm.paid == 0 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["/dev/full", "/sys/hf_rgda_cache.sqlite3"])
def test_a_cache_on_a_full_or_read_only_disk_is_one_line(tmp_path: Path, capsys, where: str) -> None:
    if not Path(where).parent.exists() or (where == "/dev/full" and not Path(where).exists()):
        pytest.skip(f"{where} is not on this system")
    llm = Counting()
    code = main(["augment", str(_folder(tmp_path)), "--out", str(tmp_path / "out"), "--cache", where], llm=llm)
    assert code == 2
    _one_line(capsys, "hf-rgda: error: response cache", where)
    assert llm.paid == 0


# ---------------------------------------------------------------- the output folder
def test_an_out_that_is_a_file_unwritable_or_the_input_is_refused_before_any_call(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path)
    (tmp_path / "taken").write_text("a file")
    for out, words in ((tmp_path / "taken", ["is a file"]), (folder, ["the input's own folder"]),
                       (Path("/sys/hf_rgda_out"), ["cannot write in"]), (tmp_path / "taken" / "sub", ["is a file"])):
        llm = Counting()
        assert main(["augment", str(folder), "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")], llm=llm) == 2
        _one_line(capsys, "hf-rgda: error: --out", *words)
        assert llm.paid == 0
    assert sorted(p.name for p in folder.iterdir()) == ["train.jsonl"]


def test_a_full_disk_leaves_nothing_half_written_and_the_rerun_pays_nothing(tmp_path: Path, capsys,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from datasets import DatasetDict

    real = DatasetDict.save_to_disk

    def full(self: Any, path: str, **kw: Any) -> None:
        Path(path).mkdir(parents=True)
        (Path(path) / "data-00000-of-00001.arrow").write_bytes(b"ARROW1" + b"\0" * 10)  # truncated, as a full disk
        raise OSError(errno.ENOSPC, "No space left on device")

    folder, out = _folder(tmp_path), tmp_path / "out"
    monkeypatch.setattr(DatasetDict, "save_to_disk", full)
    first = Counting()
    assert _augment(tmp_path, folder, llm=first) == 2
    _one_line(capsys, "hf-rgda: error: could not write", "No space left on device", "no call is paid again")
    assert first.paid > 0 and (not out.exists() or list(out.iterdir()) == [])
    monkeypatch.setattr(DatasetDict, "save_to_disk", real)
    again = Counting()
    assert _augment(tmp_path, folder, llm=again) == 0
    assert again.paid == 0  # every answer came from the response cache (or datasets' own)
    assert len(load_from_disk(str(out / "dataset"))["augmented"]) > 0
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging folder left


@pytest.mark.parametrize("fail_at", [1, 2, 4])  # moving an old entry aside, the 2nd aside, the 1st one moved in
def test_writing_the_outputs_is_all_or_nothing_when_a_move_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               fail_at: int) -> None:
    """A run's files replace an earlier run's under --out all together or not at all: when a move fails, the folder
    holds the earlier files as they were and nothing else (no staging folder, no .NAME.old-PID copy)."""
    from hf_rgda import ConfigError, outputs

    out = tmp_path / "out"

    def writers(tag: str) -> dict[str, Any]:
        def folder(path: Path) -> None:
            path.mkdir()
            (path / "part.txt").write_text(tag)

        return {"dataset": folder, "summary.json": lambda p: p.write_text(tag), "config.json": lambda p: p.write_text(tag)}

    outputs.write_outputs(out, writers("old"))
    before = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()}
    replace, moves = outputs.os.replace, []

    def failing(src: Any, dst: Any) -> None:
        moves.append((src, dst))
        if len(moves) == fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        replace(src, dst)

    monkeypatch.setattr(outputs.os, "replace", failing)
    with pytest.raises(ConfigError, match="nothing was written"):
        outputs.write_outputs(out, writers("new"))
    monkeypatch.setattr(outputs.os, "replace", replace)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "dataset", "summary.json"]
    assert {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*") if p.is_file()} == before
    outputs.write_outputs(out, writers("new"))  # and a later write replaces them all
    assert {p.read_text() for p in out.rglob("*") if p.is_file()} == {"new"}
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "dataset", "summary.json"]


# ---------------------------------------------------------------- the label set and the entity verifier
def test_more_entity_types_than_the_verifier_can_letter_are_refused_before_any_call(tmp_path: Path, capsys) -> None:
    types = [f"Type{chr(65 + i)}" for i in range(25)]
    rows = [{"tokens": ["w", "x", "."], "ner_tags": [f"B-{t}", "O", "O"]} for t in types for _ in range(2)]
    llm = Counting()
    assert _augment(tmp_path, _folder(tmp_path, rows), "--labels", ",".join(["O"] + [f"{p}-{t}" for t in types
                                                                                      for p in "BI"]), llm=llm) == 2
    _one_line(capsys, "hf-rgda: error: 25 entity types", "--no-verify-entities")
    assert llm.paid == 0


# ---------------------------------------------------------------- rows of data files
def test_a_byte_that_is_not_utf8_names_its_row_and_line(tmp_path: Path, capsys) -> None:
    folder = _folder(tmp_path)
    lines = (folder / "train.jsonl").read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"Gout", b"G\xe9out")  # Latin-1, not UTF-8
    (folder / "train.jsonl").write_bytes(b"".join(lines))
    assert _augment(tmp_path, folder) == 2
    _one_line(capsys, "row 1 of", "(line 2)", "0xe9", "not UTF-8")


@pytest.mark.parametrize(("row", "words"), [
    ({"tokens": ["Gout", "flares", 1987, "."], "ner_tags": ["B-Disease", "O", "O", "O"]}, ["token 2", "1987"]),
    ({"tokens": ["Gout", "flares", "."], "ner_tags": ["B-Disease", 0, "O"]}, ["tag 0 (position 1)", "not a tag name"]),
    ({"tokens": 1987, "ner_tags": ["O"]}, ["the tokens value is 1987, not a list"]),
])
def test_a_number_among_strings_names_its_own_row_and_value(tmp_path: Path, capsys, row: dict[str, Any],
                                                            words: list[str]) -> None:
    rows = [DISEASE[i % 2] for i in range(9)]
    rows[7] = row
    assert _augment(tmp_path, _folder(tmp_path, rows)) == 2
    line = _one_line(capsys, "row 7", *words)
    assert "row 1 " not in line and "row 1:" not in line


def test_csv_with_list_columns_and_conll_files_are_read(tmp_path: Path) -> None:
    import csv

    folder = tmp_path / "csv"
    folder.mkdir()
    with (folder / "train.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["tokens", "ner_tags"])
        writer.writerow([json.dumps(DISEASE[0]["tokens"]), json.dumps(DISEASE[0]["ner_tags"])])
        writer.writerow([str(DISEASE[1]["tokens"]), str(DISEASE[1]["ner_tags"])])  # pandas' way: a Python list
    assert _augment(tmp_path, folder) == 0
    assert len(load_from_disk(str(tmp_path / "out" / "dataset"))["augmented"]) > 0
    conll = tmp_path / "train.conll"
    conll.write_text("-DOCSTART- -X- O O\n\n" + "\n\n".join(
        "\n".join(f"{w} NN O {t}" for w, t in zip(r["tokens"], r["ner_tags"])) for r in DISEASE) + "\n")
    out = tmp_path / "out2"
    assert main(["augment", str(conll), "--method", "gda", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")],
                llm=Counting()) == 0
    assert load_from_disk(str(out / "dataset"))["seed"]["tokens"] == [DISEASE[0]["tokens"], DISEASE[1]["tokens"]]


def test_a_config_name_reaches_the_hub_loader_and_is_refused_for_local_files(tmp_path: Path, capsys,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    asked = []

    def hub(path: str, name: str | None = None, **kw: Any) -> Any:  # the Hub, as load_dataset(id, config) asks it
        asked.append((path, name))
        return datasets.DatasetDict({"train": datasets.Dataset.from_list(DISEASE)})

    monkeypatch.setattr(datasets, "load_dataset", hub)
    assert main(["augment", "someone/ner-corpus", "--config", "english", "--method", "gda", "--out",
                 str(tmp_path / "out"), "--cache", str(tmp_path / "r.sqlite3")], llm=Counting()) == 0
    assert asked == [("someone/ner-corpus", "english")]
    assert _augment(tmp_path, _folder(tmp_path), "--config", "en") == 2
    _one_line(capsys, "--config en", "Hub dataset")


def test_a_data_file_is_checked_in_chunks_and_only_a_text_file_decoded(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """check_data_file reads a bounded chunk at a time: a binary file (Parquet) is read up to its first non-blank
    bytes, and a text file's bad byte is named at the same row, line and column whatever the chunk size (a
    character cut in two by a chunk's end is no bad byte)."""
    from hf_rgda import InputError, inputs

    text = tmp_path / "rows.csv"
    text.write_bytes("tokens,ner_tags\n\n\"[\u00e9t\u00e9]\",x\n\"[a]\",y\n\"[b\xff]\",z\n".encode().replace(
        b"\xc3\xbf", b"\xff"))
    found = set()
    for size in (1 << 20, 3, 7, 1):
        monkeypatch.setattr(inputs, "_CHUNK", size)
        with pytest.raises(InputError) as err:
            inputs.check_data_file(text, text=True)
        found.add(str(err.value))
    message = found.pop()
    assert not found and "byte 0xff at column 4" in message and "2 of" in message and "(line 5)" in message, message
    binary = tmp_path / "rows.parquet"
    binary.write_bytes(b"PAR1" + bytes(range(256)) * 8192)  # 2 MiB, no UTF-8
    reads: list[int] = []
    real_open = open

    class Counted:
        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def __enter__(self) -> Counted:  # noqa: PYI034 (typing.Self needs 3.11)
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

        def read(self, size: int = -1) -> bytes:
            reads.append(size)
            return self.fh.read(size)

    monkeypatch.setattr(inputs, "_CHUNK", 1 << 16)
    monkeypatch.setattr(inputs, "open", lambda *a, **k: Counted(real_open(*a, **k)), raising=False)
    inputs.check_data_file(binary)
    assert reads == [1 << 16]
    (tmp_path / "blank.parquet").write_bytes(b" \n" * 70000)
    with pytest.raises(InputError, match="empty"):
        inputs.check_data_file(tmp_path / "blank.parquet")


# ---------------------------------------------------------------- rate limits
def test_a_negative_rate_limit_is_a_configuration_error(tmp_path: Path, capsys) -> None:
    code = main(["augment", str(_folder(tmp_path)), "--llm", "openai:gpt-5.5", "--rpm", "-5",
                 "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "r.sqlite3")])
    assert code == 2
    _one_line(capsys, "hf-rgda: error: rpm=-5", "--rpm")


def test_rpm_holds_at_the_server_when_a_new_client_delays_the_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider counts arrivals: with rpm=2, no three requests may arrive within one window, even when the first
    ones were admitted long before they arrived (a client to build, as each map batch does)."""
    import time

    from hf_rgda import load_llm
    from hf_rgda.llm.openai import OpenAILLM
    from hf_rgda.llm.remote import RetryPolicy
    from hf_rgda.testing.providers import ProviderServer

    pytest.importorskip("openai")
    make = OpenAILLM._new_client

    def slow(self: Any, *a: Any) -> Any:
        time.sleep(0.4)  # building a client (an SDK import, a TLS context) takes time before the first request
        return make(self, *a)

    monkeypatch.setattr(OpenAILLM, "_new_client", slow)
    schema = {"type": "object", "properties": {"d": {"type": "string"}}, "required": ["d"], "additionalProperties": False}
    with ProviderServer(lambda m, s: {"d": "gout"}) as server:
        llm = load_llm("openai:m", base_url=server.url("openai"), rpm=2,
                       retry=RetryPolicy(max_attempts=2, base_delay=0.05))
        llm.rate_window = 1.0

        async def calls() -> None:
            msgs = [{"role": "user", "content": "Name a disease."}]
            await asyncio.gather(*(llm.complete(msgs, schema=schema, params={"max_tokens": 8, "seed": i})
                                   for i in range(4)))
            await llm.aclose()  # else the SDK's client, collected while a later test's loop runs, closes there

        asyncio.run(calls())
        arrivals = sorted(t for t, step in server.events if step == 1)
    assert len(arrivals) == 4
    assert all(arrivals[i + 2] - arrivals[i] >= 0.98 for i in range(len(arrivals) - 2)), arrivals


# ---------------------------------------------------------------- answers and calibration
def test_an_answer_with_no_sentence_is_recorded(tmp_path: Path) -> None:
    def empty(messages: Any, schema: Any, params: Any) -> Any:
        if "sentences" in ((schema or {}).get("properties") or {}):
            return {"sentences": []}
        return stateless_answer(messages, schema, params)

    assert _augment(tmp_path, _folder(tmp_path), "--method", "naive", llm=Counting(empty)) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["summary"]
    assert summary["accepted"] == 0 and summary["rejected_by_reason"].get("missing", 0) >= 1
    reasons = [json.loads(x)["rgda_reason"] for x in (tmp_path / "out" / "rejections.jsonl").read_text().splitlines()]
    assert any(r.startswith("seed_generation/missing") for r in reasons), reasons


def _labelled(tmp_path: Path, typo: bool = False) -> Path:
    words = ("kidney", "liver", "lung", "heart", "bowel", "skin", "bone", "eye", "ear", "gum")
    rows = [{"tokens": ["Patients", "with", "chronic", w, "disease", "were", "seen", "in", "clinic", str(i), "."],
             "ner_tags": ["O", "O", "B-Disease", "I-Disease", "I-Disease", "O", "O", "O", "O", "O", "O"]}
            for i in range(3) for w in words]
    if typo:
        rows[5] = {**rows[5], "ner_tags": [t.replace("Disease", "Diseas") for t in rows[5]["ner_tags"]]}
    folder = _folder(tmp_path, rows, "labelled", "dev")
    (folder / "train.jsonl").write_text((folder / "dev.jsonl").read_text())
    return folder


def test_calibrate_refuses_a_tag_typo_as_augment_does(tmp_path: Path, capsys) -> None:
    code = main(["calibrate", str(_labelled(tmp_path, typo=True)), "--out", str(tmp_path / "cal.json")],
                llm=Counting())
    assert code == 2
    _one_line(capsys, "hf-rgda: error:", "'Diseas'", "looks like a typo of 'Disease'")


def test_calibrate_during_an_outage_fails_with_exit_3(tmp_path: Path, capsys) -> None:
    from hf_rgda import ConnectionError as Outage

    def down(messages: Any, schema: Any, params: Any) -> Any:
        raise Outage("connection refused")

    llm = ScriptedLLM(down, name="down")
    code = main(["calibrate", str(_labelled(tmp_path)), "--out", str(tmp_path / "cal.json"), "--max-canaries", "8"],
                llm=llm)
    assert code == 3
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("hf-rgda:")]
    assert len(lines) == 1 and "failed" in lines[0] and "connection refused" in lines[0] and "Traceback" not in err
    assert not (tmp_path / "cal.json").exists()


# ---------------------------------------------------------------- missing extras, quiet runs
def test_a_missing_extra_is_one_line_naming_it(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # installed with [openai] only: no llama.cpp
    code = main(["augment", str(_folder(tmp_path)), "--out", str(tmp_path / "out"), "--cache",
                 str(tmp_path / "r.sqlite3")])
    assert code == 2
    _one_line(capsys, "hf-rgda: error:", "pip install 'hf_rgda[local]'")
    monkeypatch.setitem(sys.modules, "transformers", None)
    code = main(["evaluate", str(tmp_path / "model"), str(_folder(tmp_path))])
    assert code == 2
    _one_line(capsys, "hf-rgda: error: transformers is not installed", "pip install 'hf_rgda[train]'")


def test_a_default_run_logs_no_request_and_a_key_in_the_url_query_stays_secret(tmp_path: Path, capsys) -> None:
    """httpx logs every request at INFO: the CLI's default is warnings only; with -vv the requests show, and a key
    in the base URL's query (``?api-key=``) is scrubbed from them, from errors and from the files written."""
    from hf_rgda.testing.providers import ProviderServer

    pytest.importorskip("openai")
    secret = "qsk-SECRETquery-93f1c2"
    world = FakeWorld().serve()
    with ProviderServer(**world) as server:
        folder = _folder(tmp_path)
        base = ["augment", str(folder), "--llm", "openai:gpt-5.5"]  # the default --max-failed: a failed seed is 3
        assert main([*base, "--method", "gda", "--cache", str(tmp_path / "a.sqlite3"), "--base-url",
                     server.url("openai"), "--out", str(tmp_path / "a")]) == 0
        captured = capsys.readouterr()
        assert "HTTP Request" not in captured.err and "INFO" not in captured.err, captured.err[-2000:]
        assert server.requests
        seen = len(server.requests)
        code = main(["-vv", *base, "--method", "naive", "--cache", str(tmp_path / "b.sqlite3"), "--base-url",
                     f"{server.url('openai')}?api-key={secret}", "--out", str(tmp_path / "b")])
        logging.getLogger().handlers.clear()
        assert len(server.requests) > seen
        for r in server.requests[seen:]:  # the key is a query parameter of each request, after the path
            url = urllib.parse.urlsplit(r.path)
            assert url.path == "/v1/chat/completions" and urllib.parse.parse_qs(url.query) == {"api-key": [secret]}
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    assert "HTTP Request" in captured.err  # -vv shows the requests
    assert secret not in captured.out + captured.err
    for run in ("a", "b"):  # every seed ran: exit 0 under a --max-failed of 1.0 (as it was) hid a failed one
        assert json.loads((tmp_path / run / "summary.json").read_text())["summary"]["failed_seeds"] == 0
    for path in (tmp_path / "b").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_version_and_grouped_help(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("hf-rgda 0.")
    with pytest.raises(SystemExit):
        main(["augment", "--help"])
    text = capsys.readouterr().out
    for title in ("input:", "seeds:", "backend:", "run and output:", "judges (AugmentConfig):",
                  "entity verification (AugmentConfig):", "output on the terminal:"):
        assert title in text, title
    assert "--dry-run" in text and "-q, --quiet" in text


# ---------------------------------------------------------------- what a run will cost
def test_dry_run_prints_the_estimate_and_calls_nothing(tmp_path: Path, capsys) -> None:
    from hf_rgda.testing.providers import ProviderServer

    pytest.importorskip("openai")
    with ProviderServer(**FakeWorld().serve()) as server:
        for model, cost in (("gpt-5.5", "at most about $"), ("my-finetune-7b", "unpriced")):
            code = main(["augment", str(_folder(tmp_path)), "--llm", f"openai:{model}", "--base-url",
                         server.url("openai"), "--dry-run", "--out", str(tmp_path / "out"), "--cache",
                         str(tmp_path / "r.sqlite3")])
            out = capsys.readouterr().out
            assert code == 0 and "estimate: " in out and " calls to make" in out and "prompt tokens" in out, out
            assert cost in out and "$0.0000" not in out
        assert server.requests == [] and not (tmp_path / "out").exists()
        assert not list(tmp_path.glob("r.sqlite3*"))  # the response cache was not even created
    assert main(["augment", str(_folder(tmp_path)), "--method", "biorda", "--attribution-model", "seeds", "--dry-run",
                 "--out", str(tmp_path / "out")], llm=Counting()) == 2  # it would fine-tune a model into --out
    _one_line(capsys, "--dry-run writes nothing")
    assert not (tmp_path / "out").exists()


def test_a_dry_run_reads_the_response_cache_and_writes_nothing_to_it(tmp_path: Path, capsys) -> None:
    """--dry-run counts the answers an earlier run left in the cache, and leaves the file as it found it (no write,
    no -wal or -shm file beside it); a file that is no cache stops it as it would the run."""
    cache = tmp_path / "r.sqlite3"
    assert _augment(tmp_path, _folder(tmp_path)) == 0
    gc.collect()  # the run's connections closed, as at the end of its process: its write-ahead log merged
    before = {p.name: p.read_bytes() for p in tmp_path.glob("r.sqlite3*")}
    assert list(before) == ["r.sqlite3"]
    llm = Counting()
    assert _augment(tmp_path, _folder(tmp_path), "--dry-run", llm=llm) == 0
    assert llm.paid == 0 and re.search(r"estimate: 0 calls to make \([1-9]\d* answers already in the cache",
                                       capsys.readouterr().out)
    assert {p.name: p.read_bytes() for p in tmp_path.glob("r.sqlite3*")} == before
    cache.write_text("not a database " * 100)
    assert _augment(tmp_path, _folder(tmp_path), "--dry-run", llm=llm) == 2
    _one_line(capsys, "hf-rgda: error: response cache", "is not a response cache")


def test_a_dry_run_leaves_the_augmenters_ledger_of_rows_as_it_was(tmp_path: Path) -> None:
    """The rehearsal's scripted rows are no real run's: a real run on the same object after it accepts what a fresh
    object accepts (the ledger shared by a shallow copy rejected them as repeated_entity, cross_seed_duplicate)."""
    from datasets import Dataset

    from hf_rgda import RGDAAugmenter
    from hf_rgda.estimate import rehearse_run
    from hf_rgda.recipe import augment

    seeds = Dataset.from_list(DISEASE[:2])

    def build() -> RGDAAugmenter:
        return RGDAAugmenter(ScriptedLLM(FakeWorld(), name="world"), label_names=["O", "B-Disease", "I-Disease"],
                             method="gda", cache=False, keep_rejected=True, max_entity_repeats=1)

    fresh, rehearsed = build(), build()
    assert rehearse_run(rehearsed, seeds).calls > 0
    assert rehearsed._ledger_of_rows.rows == {}
    expected = augment(seeds, fresh, load_from_cache_file=False).rows
    got = augment(seeds, rehearsed, load_from_cache_file=False).rows
    assert got["rgda_status"] == expected["rgda_status"] and got["rgda_reason"] == expected["rgda_reason"]
    assert "accepted" in got["rgda_status"]


@pytest.mark.parametrize("clock", ["coarse", "no_cache_file"])
def test_a_fresh_paid_run_is_not_taken_for_one_served_from_datasets_cache(tmp_path: Path, clock: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether datasets served a map from its cache is decided by the cache files that were there before it: a file
    system whose clock is coarser than the run (its files look older than the map's start), or a run whose cache
    file cannot be found, made a paid run print "cost: nothing paid"."""
    import time

    from datasets import load_dataset

    from hf_rgda import RGDAAugmenter, recipe

    folder = _folder(tmp_path)
    seeds = load_dataset("json", data_files=str(folder / "train.jsonl"), split="train",
                         cache_dir=str(tmp_path / "hf")).select([0, 1])

    def run() -> Any:
        llm = Counting()
        aug = RGDAAugmenter(llm, label_names=["O", "B-Disease", "I-Disease"], method="gda", cache=False)
        return recipe.augment(seeds, aug), llm

    if clock == "coarse":  # the map's files carry a time before the moment it started
        real = time.time
        monkeypatch.setattr(recipe.time, "time", lambda: real() + 3600)
    else:
        monkeypatch.setattr(recipe.os.path, "exists", lambda path: False)
    first, llm = run()
    assert llm.paid > 0 and first.rows.cache_files and not first.from_cache
    monkeypatch.undo()
    again, llm = run()
    assert llm.paid == 0 and again.from_cache


def test_a_num_proc_run_partly_served_from_datasets_cache_says_so(tmp_path: Path) -> None:
    """With num_proc each worker writes its part; a rerun that finds some parts cached pays for the others only."""
    from datasets import load_dataset

    from hf_rgda import RGDAAugmenter, recipe

    folder = _folder(tmp_path)
    seeds = load_dataset("json", data_files=str(folder / "train.jsonl"), split="train",
                         cache_dir=str(tmp_path / "hf")).select([0, 1])

    def run() -> Any:
        aug = RGDAAugmenter(Counting(), label_names=["O", "B-Disease", "I-Disease"], method="naive", cache=False)
        return recipe.augment(seeds, aug, batch_size=1, num_proc=2)

    first = run()
    assert (first.cached_parts, first.parts, first.from_cache) == (0, 2, False)
    Path(first.rows.cache_files[1]["filename"]).unlink()  # one worker's part is gone: computed again
    again = run()
    assert (again.cached_parts, again.parts, again.from_cache) == (1, 2, False)
    assert (run().cached_parts, run().from_cache) == (2, True)


def test_a_rerun_served_from_the_cache_does_not_print_the_first_runs_cost_as_spent(tmp_path: Path, capsys) -> None:
    from hf_rgda.testing.providers import ProviderServer

    pytest.importorskip("openai")
    with ProviderServer(**FakeWorld().serve()) as server:
        argv = ["augment", str(_folder(tmp_path)), "--llm", "openai:gpt-5.5", "--base-url", server.url("openai"),
                "--method", "gda", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "r.sqlite3")]
        assert main(argv) == 0
        first = capsys.readouterr().out
        sent = len(server.requests)
        assert main(argv) == 0
        again = capsys.readouterr().out
        assert len(server.requests) == sent
    assert "cost: $" in first and "cost: $" not in again and "nothing paid" in again, again


# ---------------------------------------------------------------- the Hub
def test_push_to_an_unreachable_hub_or_a_bad_repo_id_is_one_line(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from .test_hub import run_py

    out = tmp_path / "aug"
    assert _augment(tmp_path, _folder(tmp_path)) == 0
    (out.parent / "out").rename(out)
    nowhere = SimpleNamespace(url="http://127.0.0.1:9")  # the discard port: nothing listens
    for repo, words in (("tester/x", ["cannot reach the Hub at http://127.0.0.1:9"]),
                        ("not a repo id!", ["'not a repo id!' is not a Hub repository id"])):
        push = f"from hf_rgda.cli import main; raise SystemExit(main(['push', {str(out)!r}, {repo!r}]))"
        done = run_py(nowhere, push, tmp_path)
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert all(w in lines[0] for w in words), lines[0]
    missing = f"from hf_rgda.cli import main; raise SystemExit(main(['push-model', {str(tmp_path / 'nope')!r}, 'tester/m']))"
    done = run_py(nowhere, missing, tmp_path, token=None)  # no token either: the folder is named first
    assert done.returncode == 2 and "nope: no such folder" in done.stderr and "token" not in done.stderr, done.stderr
