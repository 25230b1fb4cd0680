"""``hf-rgda calibrate`` and ``augment --calibration`` (hf_rgda.calibration, hf_rgda.canaries): end to end against a
scripted judge that knows which canaries are good, on a tiny dataset written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hf_rgda import AugmentConfig, ConfigError, RGDAAugmenter, ScriptedLLM, calibrate, load_calibration
from hf_rgda.canaries import build_guide, cap
from hf_rgda.canaries.build import Canary
from hf_rgda.cli import main
from hf_rgda.records import Seed
from hf_rgda.stages.categories import question
from hf_rgda.tags import detokenize, parse_inline, tags_to_spans
from hf_rgda.testing import FakeWorld, stage_of

from .test_canaries import BIO, _write

DEV = BIO[:10]  # the canary tests' dev sentences
TRAIN = [
    "Women with [breast cancer](Disease) were tested for BRCA1 mutations in this study .",
    "Screening for [hemochromatosis](Disease) detects iron overload before organ damage occurs in adults .",
    "Expression of the HTT gene is altered in [Huntington disease](Disease) and in related disorders .",
    "Patients with [cystic fibrosis](Disease) were enrolled at three centres .",
]



@pytest.fixture()
def data(tmp_path: Path) -> Path:
    _write(tmp_path / "bio", "dev", DEV)
    _write(tmp_path / "bio", "train", TRAIN)
    return tmp_path / "bio"


def _sections(content: str) -> dict[str, str]:
    return dict(part.partition(":\n")[::2] for part in content.split("\n\n"))


def oracle(messages: Any, schema: Any, params: Any) -> Any:
    """A judge that knows the data: full marks to what the gold says, nothing to anything else."""
    gold = [parse_inline(x) for x in DEV + TRAIN]
    stage, parts = stage_of(messages), _sections(messages[-1]["content"])
    if stage == "entity_verify":  # the asked type is option A
        mentions = {(detokenize(t[s.start : s.end]), s.label) for t, g in gold for s in tags_to_spans(g)}
        asked = any(question(text, label, ["Disease"]).text() == parts["Question"] for text, label in mentions)
        return {"A": 1.0} if asked else {schema["properties"]["answer"]["enum"][-1]: 1.0}
    if stage == "guidance_judge":
        good = any(json.loads(parts["Guide"]) == build_guide(t, g, "bio") for t, g in gold
                   if detokenize(t) == parts["Sentence"])
    else:  # composition_judge: a gold row written from another sentence
        items = {json.dumps(Seed("", tuple(t), tuple(g)).as_item(), ensure_ascii=False): detokenize(t) for t, g in gold}
        row = json.dumps(json.loads(parts["New sentences"])[0], ensure_ascii=False)
        good = row in items and items[row] != parts["Sentence"]
    return {"5" if good else "1": 1.0}


def _calibrate(data: Path, tmp_path: Path, llm: ScriptedLLM, *extra: str) -> int:
    return main(["calibrate", str(data), "--llm", "scripted:oracle", "--out", str(tmp_path / "calibration.json"),
                 "--cache", str(tmp_path / "cache.sqlite3"), "--max-canaries", "40", *extra], llm=llm)


def test_calibrate_writes_aurocs_and_thresholds_and_a_rerun_is_free(data: Path, tmp_path: Path, capsys) -> None:
    llm = ScriptedLLM(oracle, name="oracle")
    assert _calibrate(data, tmp_path, llm) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "calibration.json").read_text())
    assert set(report["scorers"]) == {"entity", "checker", "tagger", "ac-prob", "gr-prob"}  # judges read by probability
    for name in ("entity", "ac-prob", "gr-prob"):
        assert report["scorers"][name]["auroc"] == 1.0 and report["scorers"][name]["failed"] == 0
        assert f"{report['scorers'][name]['label']}" in printed
    assert report["scorers"]["checker"]["calls"] == 0 and report["scorers"]["checker"]["auroc"] is not None
    assert set(report["thresholds"]) == {"verify_threshold", "probability_threshold"}
    assert report["thresholds"]["verify_threshold"] == 1.0 and report["thresholds"]["probability_threshold"] == 100
    assert sum(sum(c.values()) for c in report["canaries"].values()) <= 40 and report["calls"] == len(llm.calls)
    assert "AUROC 1.000" in printed and "estimate: " in printed and "recommended verify_threshold = 1.0" in printed
    assert f"estimate: {len(llm.calls)} calls to make (0 answers already in the cache)" in printed

    again = ScriptedLLM(oracle, name="oracle")
    assert _calibrate(data, tmp_path, again) == 0
    assert again.calls == []  # served from the response cache
    assert f"estimate: 0 calls to make ({len(llm.calls)} answers already in the cache)" in capsys.readouterr().out
    assert json.loads((tmp_path / "calibration.json").read_text())["thresholds"] == report["thresholds"]


def test_dry_run_estimates_and_makes_no_call(data: Path, tmp_path: Path, capsys) -> None:
    llm = ScriptedLLM(oracle, name="oracle")
    assert _calibrate(data, tmp_path, llm, "--dry-run", "--scorers", "entity") == 0
    assert llm.calls == [] and not (tmp_path / "calibration.json").exists()
    assert not list(tmp_path.glob("cache.sqlite3*"))  # the response cache was read, where there is one: none made
    out = capsys.readouterr().out
    assert "estimate: " in out and "0 answers already in the cache" in out


def test_augment_applies_the_calibration_and_says_so(data: Path, tmp_path: Path, capsys) -> None:
    cal = tmp_path / "calibration.json"
    cal.write_text(json.dumps({"llm": {"backend": "other"}, "thresholds": {"verify_threshold": 0.4,
                                                                           "probability_threshold": 62}}))
    out = tmp_path / "out"
    assert main(["augment", str(data), "--num-seeds", "2", "--out", str(out), "--cache", str(tmp_path / "c.sqlite3"),
                 "--calibration", str(cal)], llm=ScriptedLLM(FakeWorld(), name="world")) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["calibration"]["thresholds"] == {"verify_threshold": 0.4, "probability_threshold": 62}
    assert summary["calibration"]["source"] == str(cal)
    assert summary["config"]["verify_threshold"] == 0.4 and summary["config"]["probability_threshold"] == 62
    assert f"calibration ({cal}): verify_threshold=0.4, probability_threshold=62" in capsys.readouterr().out


def test_a_calibration_that_sets_nothing_says_so(data: Path, tmp_path: Path, capsys) -> None:
    """A calibration whose scorers set no threshold (each below the AUROC floor) is applied and printed as such."""
    cal = tmp_path / "calibration.json"
    cal.write_text(json.dumps({"thresholds": {}}))
    assert main(["augment", str(data), "--num-seeds", "1", "--out", str(tmp_path / "out"), "--cache",
                 str(tmp_path / "c.sqlite3"), "--calibration", str(cal)], llm=ScriptedLLM(FakeWorld(), name="w")) == 0
    assert f"calibration ({cal}): no threshold" in capsys.readouterr().out


def test_the_augmenter_takes_a_dict_and_its_own_options_win() -> None:
    aug = RGDAAugmenter(ScriptedLLM([]), label_names=["O", "B-X", "I-X"], cache=False,
                        calibration={"thresholds": {"verify_threshold": 0.3, "threshold": 70}}, threshold=80)
    assert (aug.config.verify_threshold, aug.config.threshold) == (0.3, 80)
    assert aug.calibration["thresholds"] == {"verify_threshold": 0.3, "threshold": 70}
    assert load_calibration({"thresholds": {}}).apply(AugmentConfig()) == AugmentConfig()


@pytest.mark.parametrize(("content", "says"), [
    (None, "not found"),
    ("{not json", "is not JSON"),
    (json.dumps({"scorers": {}}), "has no 'thresholds' object"),
    (json.dumps({"thresholds": {"num_augmented": 2}}), "sets 'num_augmented'"),
    (json.dumps({"thresholds": {"verify_threshold": 1.5}}), "verify_threshold=1.5 must be between"),
    (json.dumps({"thresholds": {"verify_threshold": "high"}}), "is not a number"),
    (json.dumps({"thresholds": {"probability_threshold": 50.5}}), "must be a whole number"),
])
def test_a_bad_calibration_file_is_one_clear_line(data: Path, tmp_path: Path, capsys, content: str | None,
                                                  says: str) -> None:
    cal = tmp_path / "calibration.json"
    if content is not None:
        cal.write_text(content)
    code = main(["augment", str(data), "--out", str(tmp_path / "out"), "--calibration", str(cal)],
                llm=ScriptedLLM(FakeWorld(), name="world"))
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("hf-rgda: error")]
    assert code == 2 and len(errors) == 1 and says in errors[0] and str(cal) in errors[0]
    with pytest.raises(ConfigError, match=says):
        load_calibration(cal)


def test_bad_calibrate_input_is_one_clear_line(data: Path, tmp_path: Path, capsys) -> None:
    llm = ScriptedLLM(oracle, name="oracle")
    cases = [([str(tmp_path / "nowhere")], "no such file or folder"),
             ([str(data), "--split", "test"], "split 'test' not found; splits are"),
             ([str(data), "--max-canaries", "2"], "max_canaries=2 must be at least"),
             ([str(data), "--tags-column", "labels"], "column 'labels' is missing; columns are")]
    for argv, says in cases:
        assert main(["calibrate", *argv, "--llm", "scripted:x"], llm=llm) == 2, argv
        errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("hf-rgda: error")]
        assert len(errors) == 1 and says in errors[0], errors
    assert llm.calls == []


def test_a_held_back_share_of_train_serves_without_a_dev_split(tmp_path: Path) -> None:
    _write(tmp_path / "fin", "train", DEV + TRAIN)
    report = calibrate(str(tmp_path / "fin"), ScriptedLLM(oracle, name="oracle"), holdout=0.5, scorers=["checker"],
                       out=None, cache=False, progress=False, echo=lambda _: None)
    assert "carved" in report["split"] and report["scorers"]["checker"]["canaries"] > 0


def test_cap_keeps_a_balanced_prefix_of_every_class() -> None:
    def c(level: str, label: str, k: int) -> Canary:
        return Canary(f"d/{level}/{label}/{k}", "d", level, label, (), (), 0)

    built = [c(lv, label, k) for lv, labels in (("entity", ["a", "b"]), ("row", ["x", "y", "z"]))
             for label in ["good", *labels] for k in range(3 if label != "good" else 9)]
    picked = cap(built, 10)
    assert len(picked) == 10 and sum(x.good for x in picked) == 5
    assert {(x.level, x.label) for x in picked if not x.good} == {("entity", "a"), ("entity", "b"), ("row", "x"),
                                                                   ("row", "y"), ("row", "z")}
    everything = cap(built, 1000)  # each defect with a good one beside it, as far as the good ones go
    assert len(everything) == 30 and sum(x.good for x in everything) == 15


def test_calibrate_accepts_the_rows_augment_accepts_and_no_other(tmp_path: Path, capsys) -> None:
    """A dev row tagged with a type train does not have is refused, as an augmenter built from train refuses it (each
    split was checked on its own label set, so calibration built canaries from it), and so is a row outside --labels;
    both as one line naming the split and the row, before any call."""
    _write(tmp_path / "bio", "train", TRAIN)
    _write(tmp_path / "bio", "dev", [*DEV, "Exposure to [benzene](Chemical) was measured in every worker ."])
    llm = ScriptedLLM(oracle, name="oracle")
    assert main(["calibrate", str(tmp_path / "bio"), "--llm", "scripted:x"], llm=llm) == 2
    errors = [x for x in capsys.readouterr().err.splitlines() if x.startswith("hf-rgda: error")]
    assert len(errors) == 1 and "split 'dev'" in errors[0] and f"row {len(DEV)}" in errors[0], errors
    assert "'B-Chemical' is not in the label set" in errors[0], errors
    augment = main(["augment", str(tmp_path / "bio"), "--split", "dev", "--labels", "O,B-Disease,I-Disease",
                    "--out", str(tmp_path / "out"), "--dry-run"], llm=llm)
    assert augment == 2 and "'B-Chemical' is not in the label set" in capsys.readouterr().err
    _write(tmp_path / "bio", "dev", DEV)
    assert main(["calibrate", str(tmp_path / "bio"), "--llm", "scripted:x", "--labels", "O,B-Chemical,I-Chemical"],
                llm=llm) == 2
    assert "'B-Disease' is not in the label set" in capsys.readouterr().err
    assert llm.calls == []
