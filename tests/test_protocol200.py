"""The 200-seed protocol's bookkeeping (benchmarks/protocol200.py): chunks are written once and resumed from, a chunk
of another generator commit or other seeds is refused, rows map back to their seeds, training runs are added one at a
time under the cell's key, and the pooled paired bootstrap. The worker (a process running a generator commit's
library) and training are replaced by recording fakes; the chunk files and results are real files."""

from __future__ import annotations

import argparse
import gzip
import importlib
import json
from pathlib import Path

import pytest

COMMIT = "a" * 40


def _args(tmp: Path, **kw) -> argparse.Namespace:
    base = {"dataset": "toy", "data_dir": tmp / "data", "num_seeds": 5, "ratio": 3, "sample_seed": 0, "chunk_size": 2,
            "batch_size": 2, "llm": "scripted:x", "runs": 2, "encoder": "enc", "bertscore_model": "bs", "epochs": 10,
            "lr": 5e-5, "train_batch": 16, "resamples": 200, "commit": False, "out": tmp / "out"}
    return argparse.Namespace(**{**base, **kw})


@pytest.fixture()
def proto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mod = importlib.import_module("benchmarks.protocol200")
    data = tmp_path / "data" / "toy"
    data.mkdir(parents=True)
    rows = [{"tokens": ["Gout", "number", str(i), "hurts"], "ner_tags": ["B-Disease", "O", "O", "O"]} for i in range(8)]
    for split in ("train", "test"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(mod, "full_commit", lambda rev: rev if len(rev) == 40 else rev.ljust(40, "0"))
    monkeypatch.setattr(mod, "worktree", lambda commit: tmp_path / "tree")
    calls: list[int] = []
    priors: list[list[dict]] = []

    options: list[dict] = []
    real_run_worker = mod.Protocol.run_worker

    def run_worker(self, tree, method, commit, k, span, prior=(), opts=None):  # two accepted rows, one rejected a seed
        calls.append(k)
        priors.append(list(prior))
        options.append(opts)
        out = []
        for i in span:
            key = self.keys[i]
            out += [{"tokens": ["New", f"s{i}r{j}"], "tags": ["O", "B-Disease"], "source": key, "status": "accepted",
                     "reason": None} for j in range(2)]
            out.append({"tokens": ["x"], "tags": ["O"], "source": key, "status": "rejected", "reason": "check/looping"})
        variety = (tree / "hf_rgda" / "checking" / "variety.py").exists()  # as the worker enters them
        return {"rows": out, "summary": {"accepted": 2 * len(span)}, "prior_rows": len(prior) if variety else None}

    monkeypatch.setattr(mod.Protocol, "run_worker", run_worker)
    p = mod.Protocol(_args(tmp_path))
    p.priors, p.options, p.real_run_worker = priors, options, real_run_worker
    return mod, p, calls


def test_chunks_are_written_once_and_resumed(proto) -> None:
    _, p, calls = proto
    rows = p.generate("rgda", COMMIT)
    assert calls == [0, 1, 2] and len(rows) == 10  # 5 seeds in chunks of 2: 3 chunks; two accepted rows a seed
    assert sorted({r["seed"] for r in rows}) == [0, 1, 2, 3, 4]
    assert all(r["tokens"][1].startswith(f"s{r['seed']}r") for r in rows)  # each row maps back to its own seed
    path = p.chunk_path("rgda", COMMIT, 1)
    with gzip.open(path, "rt") as fh:
        head = json.loads(fh.readline())
    assert head["commit"] == COMMIT and head["seeds"] == [2, 3] and head["keys"] == p.keys[2:4]
    path.unlink()
    again = p.generate("rgda", COMMIT)  # resumes: only the missing chunk is generated
    assert calls == [0, 1, 2, 1] and again == rows
    assert p.complete("rgda", COMMIT)


def test_a_chunk_of_another_commit_or_other_seeds_is_refused(proto) -> None:
    _, p, _ = proto
    p.generate("rgda", COMMIT)
    path = p.chunk_path("rgda", COMMIT, 0)
    with gzip.open(path, "rt") as fh:
        lines = fh.read().splitlines()
    for field, value in (("commit", "b" * 40), ("seeds", [7, 8])):
        head = {**json.loads(lines[0]), field: value}
        with gzip.open(path, "wt") as fh:
            fh.write("\n".join([json.dumps(head), *lines[1:]]) + "\n")
        with pytest.raises(SystemExit, match=f"its {field}"):
            p.generate("rgda", COMMIT)


def test_a_generator_with_the_variety_pass_is_given_the_cells_earlier_rows(proto, tmp_path: Path) -> None:
    """One map of the cell's seeds would count every row it accepted; the chunks run in processes of their own, so
    each is given the rows its predecessors accepted, and says so: a chunk of the other kind is refused."""
    _, p, _ = proto
    p.generate("gda", COMMIT)  # the toy tree has no variety pass: no earlier rows, no field
    assert p.priors == [[], [], []]
    (tmp_path / "tree" / "hf_rgda" / "checking").mkdir(parents=True)
    (tmp_path / "tree" / "hf_rgda" / "checking" / "variety.py").write_text("")
    p.priors.clear()
    rows = p.generate("rgda", COMMIT)
    assert [len(x) for x in p.priors] == [0, 4, 8]  # two seeds a chunk, two rows a seed
    assert p.priors[2] == rows[:8]  # in the cell's order
    with gzip.open(p.chunk_path("rgda", COMMIT, 2), "rt") as fh:
        head = json.loads(fh.readline())
    assert head["variety"] == "cell" and head["prior_rows"] == 8
    with pytest.raises(SystemExit, match="its variety"):  # a chunk of the earlier kind (a process's own pass)
        p.read_chunk(p.chunk_path("gda", COMMIT, 0), "gda", COMMIT, range(2), "cell", 0)
    with pytest.raises(SystemExit, match="its variety"):  # and the other way round
        p.read_chunk(p.chunk_path("rgda", COMMIT, 0), "rgda", COMMIT, range(2), None)
    with pytest.raises(SystemExit, match="its prior_rows is 8"):  # made before an earlier chunk was made again
        p.read_chunk(p.chunk_path("rgda", COMMIT, 2), "rgda", COMMIT, range(4, 5), "cell", 6)


def test_the_worker_enters_earlier_rows_into_the_augmenters_own_variety_ledger() -> None:
    from datasets import Dataset

    from benchmarks.protocol200_worker import enter_prior
    from hf_rgda import RGDAAugmenter, ScriptedLLM

    seeds = Dataset.from_list([{"tokens": ["Gout", "hurts", "a", "lot", "."], "ner_tags": ["B-Disease", "O", "O", "O", "O"]},
                               {"tokens": ["We", "saw", "lupus", "in", "mice", "."],
                                "ner_tags": ["O", "O", "B-Disease", "O", "O", "O"]}])
    aug = RGDAAugmenter.from_dataset(seeds, llm=ScriptedLLM(lambda *a: {}), max_entity_repeats=2)
    prior = [{"seed": 0, "tokens": ["Cases", "of", "asthma", "rose", "."], "tags": ["O", "O", "B-Disease", "O", "O"]},
             {"seed": 1, "tokens": ["Lupus", "and", "asthma", "."], "tags": ["B-Disease", "O", "B-Disease", "O"]}]
    assert enter_prior(aug, seeds, prior) == 2
    ledger = aug._ledger_of_rows
    assert ledger.count(("Disease", "asthma")) == 2  # a new entity of both rows
    assert ledger.count(("Disease", "lupus")) == 0  # seed 1's own mention: not a new entity of its row
    assert len(ledger.rows) == 2


def test_cells_parse() -> None:
    mod = importlib.import_module("benchmarks.protocol200")
    assert mod.parse_cell("rgda@seeds+mr:2096b68") == ("rgda", "2096b68", True)
    assert mod.parse_cell("rgda@seeds:2096b68/likely_mention") == ("rgda", "2096b68", False)
    assert mod.recheck_of("rgda@seeds:2096b68/likely_mention+stutter") == ("likely_mention", "stutter")
    assert mod.recheck_of("rgda@seeds:2096b68") == () and mod.recheck_of("mr") == ()
    assert mod.parse_cell("mr") == ("mr", None, False)
    for bad in ("rgda:2096b68", "rgda@seeds", "mr:2096b68", "chatgpt@seeds:1"):
        with pytest.raises(SystemExit):
            mod.parse_cell(bad)


def test_a_recheck_cell_drops_the_rows_todays_rule_fires_on(proto) -> None:
    _, p, _ = proto
    p.generate("rgda", COMMIT)
    aug, info = p.cell_rows(f"rgda@seeds:{COMMIT}/too_short")  # every toy row has two tokens
    assert len(aug) == 0 and info["recheck"]["rows_before"] == 10 and info["recheck"]["dropped"] == 10
    aug, info = p.cell_rows(f"rgda@seeds:{COMMIT}/no_entity")  # every toy row tags one
    assert len(aug) == 10 and info["recheck"]["dropped"] == 0 and info["recheck"]["rules"] == ["no_entity"]
    with pytest.raises(SystemExit, match="not a rule"):
        p.cell_rows(f"rgda@seeds:{COMMIT}/no_such_rule")
    assert p.predictions_path(f"rgda@seeds:{COMMIT}/too_short").name == f"rgda@seeds@{COMMIT}-too_short.json.gz"


def test_the_seed_tagger_treatment_drops_rows_leaving_a_mention_untagged(proto, monkeypatch: pytest.MonkeyPatch) -> None:
    mod, p, _ = proto
    p.generate("rgda", COMMIT)
    asked: list[str] = []

    def gate(batch):  # a TaggerGate as the treatment calls it: rows in, the kept rows (every column) out
        keep = [k for k, t in enumerate(batch["tokens"]) if not t[1].startswith("s0r")]  # seed 0's rows miss one
        return {c: [v[k] for k in keep] for c, v in batch.items()}

    monkeypatch.setattr(mod.Protocol, "tagger", lambda self, name: (asked.append(name) or gate, {"n": name}))
    aug, info = p.cell_rows(f"rgda@seeds:{COMMIT}/seed_tagger")
    assert len(aug) == 8 and info["recheck"]["dropped"] == 2 and info["recheck"]["seed_tagger"]["dropped"] == 2
    assert all(not w[1].startswith("s0r") for w in aug["tokens"]) and info["recheck"]["seed_tagger"]["n"] == "seed_tagger"
    aug, info = p.cell_rows(f"rgda@seeds:{COMMIT}/too_short+seed_tagger")  # the rules first: nothing left to read
    assert len(aug) == 0 and info["recheck"]["dropped"] == 10
    assert asked == ["seed_tagger", "seed_tagger"]


def test_the_rows_report_reads_each_generated_cell(proto) -> None:
    mod, p, _ = proto
    p.generate("rgda", COMMIT)
    block, out = mod.rows_report(p, [f"rgda@seeds:{COMMIT}", f"rgda@seeds+mr:{COMMIT}", "mr", f"gda@seeds:{COMMIT}"],
                                 silver=False)
    assert list(out["cells"]) == [f"rgda@seeds:{COMMIT}"]  # +mr, a rule cell and an ungenerated cell: not read
    cell = out["cells"][f"rgda@seeds:{COMMIT}"]
    assert cell["rows"] == 10 and cell["rows_per_seed"] == 2.0 and cell["entity_novelty"] == 1.0
    assert len(out["quoted"]) == 10 and block.count("](Disease)`") == 10  # each quoted row, its entity marked


def test_training_runs_are_added_one_at_a_time(proto, monkeypatch: pytest.MonkeyPatch) -> None:
    mod, p, _ = proto
    protocol = importlib.import_module("benchmarks.protocol")
    trained: list[tuple[int, int]] = []

    def train_eval(rows, test, *, steps, run, args):
        trained.append((len(rows), steps))
        return {"f1": 0.5 + run / 10, "precision": 0.5, "recall": 0.5, "steps": steps, "seconds": 1.0,
                "predictions": [["B-Disease", "O", "O", "O"]] * len(test)}

    monkeypatch.setattr(protocol, "train_eval", train_eval)
    monkeypatch.setattr(mod.Protocol, "diversity", lambda self, aug: None)
    p.generate("rgda", COMMIT)
    p.train(f"rgda@seeds:{COMMIT}")
    results = json.loads(p.results_path.read_text())
    key = f"toy/seeds=5/ratio=3/encoder=enc/steps={p.steps}/rgda@seeds:{COMMIT}"
    cell = results["cells"][key]
    assert [r["f1"] for r in cell["runs"]] == [0.5, 0.6] and cell["augmented"] == 10 and cell["generator"] == COMMIT
    assert trained == [(15, p.steps)] * 2  # 5 seeds + 10 rows, the same optimizer steps in every cell
    # a run whose predictions were written but not its figures (a stop between the two) is trained again
    preds = p.predictions_path(f"rgda@seeds:{COMMIT}")
    preds.write_bytes(gzip.compress(json.dumps(json.loads(gzip.decompress(preds.read_bytes())) * 2).encode()))
    p.args.runs = 3
    p.train(f"rgda@seeds:{COMMIT}")  # only the missing run
    assert len(json.loads(gzip.decompress(preds.read_bytes()))) == 3
    assert len(trained) == 3 and len(json.loads(p.results_path.read_text())["cells"][key]["runs"]) == 3
    p.train("noaug")
    assert trained[-1] == (5, p.steps)
    assert "| noaug |" in mod.report(p)
    block, out = mod.seen_report(p, [])  # every test mention is a seed's ("gout"), every run finds each
    assert (out["test_mentions_seen"], out["test_mentions_new"]) == (8, 0)
    assert out["cells"]["noaug"] == {"recall_seen": 1.0, "recall_new": 0.0, "precision_seen": 1.0,
                                     "precision_new": 0.0, "runs": 3} and "| noaug | 1.000 | 0.000 |" in block
    p.seed_tags = [["O"] * len(t) for t in p.seed_tags]  # seeds without mentions: every test mention is new
    _, out = mod.seen_report(p, ["noaug"])
    assert out["test_mentions_new"] == 8 and out["cells"]["noaug"]["recall_new"] == 1.0 and list(out["cells"]) == ["noaug"]


def test_pooled_bootstrap() -> None:
    mod = importlib.import_module("benchmarks.protocol200")
    refs = [["B-D", "O"], ["O", "B-D"], ["B-D", "I-D"], ["O", "O"]] * 10
    same = mod.pooled_bootstrap(refs, [refs, refs], [refs, refs], resamples=300)
    assert same["delta"] == 0 and same["p_value"] == 1.0
    worse = [["O", "O"]] * len(refs)
    better = mod.pooled_bootstrap(refs, [refs, refs], [worse, refs], resamples=300)
    assert better["delta"] == 0.5 and better["p_value"] < 0.01 and better["ci_low"] > 0


@pytest.mark.parametrize("cell", ["mr", "eda", "mr-train", f"rgda@seeds+mr:{COMMIT}"])
def test_rule_based_cells_make_their_rows(proto, cell: str) -> None:
    """The rule-based cells' rows come from benchmarks.protocol's own augment (no fake): the job stopped at its first
    MR cell on a namespace without batch_size (session 34)."""
    _, p, _ = proto
    if "+mr" in cell:
        p.generate("rgda", COMMIT)
    aug, _ = p.cell_rows(cell)
    assert set(aug.column_names) >= {"tokens", "ner_tags", "rgda_source"}
    # the toy split has one mention text, so MR has nothing to swap in; EDA edits the other words
    assert len(aug) > 0 if cell == "eda" else len(aug) == (10 if "+mr" in cell else 0)


def test_a_committed_run_rewrites_the_readme_table(proto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's table and the results file change in one commit (a run committed alone left the README's test
    failing on main until someone ran report --readme)."""
    mod, p, _ = proto
    readme = tmp_path / "README.md"
    readme.write_text("# B\n<!-- protocol200:start -->\nold\n<!-- protocol200:end -->\nrest\n")
    assert mod.write_readme(p, readme) == readme
    text = readme.read_text()
    assert "old" not in text and "| cell |" in text and text.endswith("<!-- protocol200:end -->\nrest\n")
    committed: list[tuple[str, tuple[str, ...]]] = []
    monkeypatch.setattr(mod, "commit_results", lambda message, args, also=(): committed.append((message, also)))
    monkeypatch.setattr(mod, "README_DATASET", "toy")
    monkeypatch.setattr(mod, "write_readme", lambda proto: mod.ROOT / "benchmarks" / "README.md")
    protocol = importlib.import_module("benchmarks.protocol")
    monkeypatch.setattr(protocol, "train_eval", lambda rows, test, *, steps, run, args: {
        "f1": 0.5, "precision": 0.5, "recall": 0.5, "steps": steps, "seconds": 1.0, "predictions": [[]] * len(test)})
    p.train("noaug")
    assert committed and all(also == ("benchmarks/README.md",) for _, also in committed)


def test_a_gated_cell_is_generated_with_the_seed_tagger_as_the_augmenters_gate(proto, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``rgda-gated``: the method ``rgda`` run with the seed tagger (the ``/seed_tagger`` treatment's) as the
    augmenter's ``tagger_gate``; each chunk records the tagger's digest."""
    import subprocess
    from types import SimpleNamespace

    mod, p, _ = proto
    assert mod.parse_cell("rgda-gated@seeds:abc") == ("rgda-gated", "abc", False)
    gate = SimpleNamespace(path=tmp_path / "tagger", digest="d1")
    monkeypatch.setattr(mod.Protocol, "tagger", lambda self, name: (gate, {"steps": 500, "name": name}))
    p.generate("rgda-gated", COMMIT)
    assert p.options == [{"tagger_gate": str(tmp_path / "tagger")}] * 3
    with gzip.open(p.chunk_path("rgda-gated", COMMIT, 0), "rt") as fh:
        head = json.loads(fh.readline())
    assert head["method"] == "rgda-gated" and head["tagger_gate"] == {"steps": 500, "name": "seed_tagger", "digest": "d1"}
    p.options.clear()
    p.generate("rgda", COMMIT)
    assert p.options == [{}] * 3
    jobs: list[dict] = []

    def run(cmd, **kw):  # the worker process: its job file read, an empty answer written
        jobs.append(json.loads(Path(cmd[-2]).read_text()))
        Path(cmd[-1]).write_text(json.dumps({"rows": [], "summary": {}, "prior_rows": None}))

    monkeypatch.setattr(subprocess, "run", run)
    p.real_run_worker(p, tmp_path, "rgda-gated", COMMIT, 0, range(2), (), {"tagger_gate": "x"})
    assert jobs[0]["method"] == "rgda" and jobs[0]["options"] == {"tagger_gate": "x"}  # the worker's method: rgda


def test_a_rule_cell_with_fewer_rows_a_seed_is_made_at_that_ratio(proto, monkeypatch: pytest.MonkeyPatch) -> None:
    """``mr@1``: MR's rows, one a seed (the per-row worth of MR's rows beside an LLM cell's fewer rows), trained for
    the cells' common steps."""
    import benchmarks.protocol as rules

    mod, p, _ = proto
    asked: list[tuple[str, int]] = []
    real = rules.augment
    monkeypatch.setattr(rules, "augment", lambda method, name, train, seeds, args: asked.append((method, args.ratio))
                        or real(method, name, train, seeds, args))
    assert mod.parse_cell("mr@1") == ("mr@1", None, False) and mod.parse_cell("eda@2") == ("eda@2", None, False)
    for bad in ("mr@0", "mr@x", "noaug@1", "mr@1:abc"):
        with pytest.raises(SystemExit):
            mod.parse_cell(bad)
    p.cell_rows("mr@1")
    p.cell_rows("eda")
    assert asked == [("mr", 1), ("eda", 3)]
    steps = p.steps
    assert p.scale.endswith(f"/steps={steps}")  # one scale: every cell's steps the same


def test_spent_entities_counts_the_caps_rejections_and_where_capped_entities_came_from(tmp_path: Path) -> None:
    from benchmarks.spent_entities import spent

    seeds = [(["Gout", "hurts", "."], ["B-Disease", "O", "O"]), (["Lupus", "flares", "."], ["B-Disease", "O", "O"])]
    head = {"seeds": [0, 1]}
    rows = ([{"seed": 0, "tokens": ["Lupus", "and", "gout"], "tags": ["B-Disease", "O", "B-Disease"],
              "status": "accepted", "reason": None}] * 3  # lupus: another seed's mention, new to seed 0, three rows
            + [{"seed": 0, "tokens": ["Asthma", "!"], "tags": ["B-Disease", "O"], "status": "accepted", "reason": None}]
            + [{"seed": 1, "tokens": [], "tags": [], "status": "rejected", "reason": "variety/repeated_entity"}] * 2)
    path = tmp_path / "chunk-000.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(json.dumps(x) for x in [head, *rows]) + "\n")
    out = spent([path], seeds, cap=3)
    assert (out["rows"], out["rejected_repeated_entity"], out["seeds_without_rows"]) == (4, 2, 1)
    assert (out["of_them_lost_rows_to_the_cap"], out["rows_they_lost_to_the_cap"]) == (1, 2)
    assert out["at_cap"] == [{"type": "Disease", "text": "lupus", "rows": 3}] and out["of_them_seed_mentions"] == 1
    assert out["distinct_new_entities"] == 2  # lupus and asthma; seed 0's own gout not counted


def test_compare_bootstraps_a_pair_of_trained_cells_and_refuses_an_untrained_one(proto, monkeypatch, capsys) -> None:
    mod, p, _ = proto
    protocol = importlib.import_module("benchmarks.protocol")
    gold = [["B-Disease", "O", "O", "O"]] * 8
    finds = {"noaug": gold, "mr": gold[:6] + [["O"] * 4] * 2}  # mr's runs miss the last two mentions
    training: list[str] = []

    def train_eval(rows, test, *, steps, run, args):
        return {"f1": 0.5, "precision": 0.5, "recall": 0.5, "steps": steps, "seconds": 1.0,
                "predictions": [list(t) for t in finds[training[-1]]]}

    monkeypatch.setattr(protocol, "train_eval", train_eval)
    monkeypatch.setattr(mod, "write_readme", lambda proto: None)
    for cell in ("noaug", "mr"):
        training.append(cell)
        p.train(cell)
    mod.report(p, [("mr", "noaug")])
    assert "mr vs noaug: -" in capsys.readouterr().out
    assert p.load_results()["bootstrap"]["mr vs noaug"]["delta"] < 0
    with pytest.raises(SystemExit, match="need training runs"):
        mod.report(p, [("mr", "eda")])


def test_the_plan_counts_what_is_committed_and_prices_what_is_left(tmp_path: Path) -> None:
    mod = importlib.import_module("benchmarks.protocol200")
    from benchmarks.protocol200_plan import plan_report

    out = tmp_path / "out"

    def chunk(dataset: str, method: str, commit: str, k: int, seconds: float) -> None:
        path = out / dataset / f"{method}@seeds" / commit[:12] / f"chunk-{k:03d}.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(json.dumps({"chunk": k, "seconds": seconds}).encode() + b"\n"))

    for k, s in enumerate((100.0, 300.0, 200.0)):  # rgda:a... complete (3 chunks), median 200 s
        chunk("toy", "rgda", "a" * 40, k, s)
    chunk("toy", "rgda", "b" * 40, 0, 900.0)  # rgda:b... one chunk of three made
    chunk("toy", "naive", "c" * 40, 0, 50.0)  # naive made only on another dataset than "other"
    runs = [{"f1": 0.5, "seconds": s} for s in (60.0, 120.0, 600.0)]  # median 120 s a run (a GPU's run not counted)
    (out / "toy.json").write_text(json.dumps({"cells": {
        "toy/x/noaug": {"cell": "noaug", "runs": runs[:2]},
        f"toy/x/rgda@seeds:{'a' * 7}": {"cell": f"rgda@seeds:{'a' * 7}", "runs": runs[:3]},
        "toy/x/mr": {"cell": "mr", "runs": [{"f1": 0.5, "seconds": 5.0, "machine": "16 CPU cores, GPU: H200"}]}}}))
    plan = {"toy": ["noaug", f"rgda@seeds:{'a' * 7}", f"rgda@seeds+mr:{'a' * 7}", f"rgda@seeds:{'b' * 7}",
                    f"rgda@seeds+mr:{'b' * 7}", f"rgda@seeds:{'d' * 7}", f"gda@seeds:{'a' * 7}"],
            "other": [f"naive@seeds:{'e' * 7}"]}
    text, data = plan_report(out, plan, chunks=3, runs=3, full_commit=lambda r: r.ljust(40, r[0]),
                             parse_cell=mod.parse_cell)
    left = {r["cell"]: r for r in data["datasets"]["toy"]["left"]}
    assert data["datasets"]["toy"]["complete"] == [f"rgda@seeds:{'a' * 7}"]
    assert left["noaug"]["hours_left"] == round(120 / 3600, 2)  # one run left, no rows to make
    assert left[f"rgda@seeds+mr:{'a' * 7}"]["hours_left"] == round(3 * 120 / 3600, 2)  # its rows are made once
    assert left[f"rgda@seeds:{'b' * 7}"] == {"cell": f"rgda@seeds:{'b' * 7}", "chunks_made": 1, "runs": 0,
                                            "hours_left": round((2 * 900 + 3 * 120) / 3600, 2), "rate_from": None}
    assert left[f"rgda@seeds+mr:{'b' * 7}"]["hours_left"] == round(3 * 120 / 3600, 2)  # b's chunks priced once
    assert left[f"rgda@seeds:{'d' * 7}"]["rate_from"] == "†"  # priced from the other generators' chunks
    assert left[f"rgda@seeds:{'d' * 7}"]["hours_left"] == round((3 * 250 + 3 * 120) / 3600, 2)
    assert left[f"gda@seeds:{'a' * 7}"]["hours_left"] is None and "unmeasured" in text
    other = data["datasets"]["other"]["left"][0]
    assert other["rate_from"] == "‡" and other["hours_left"] is None  # no runs measured on that dataset yet
    assert data["datasets"]["toy"]["hours_measured"] == round((600 + 900 + 180 + 780) / 3600, 1)
    assert data["datasets"]["toy"]["training_run_seconds_median"] == 120


def test_every_committed_chunk_or_run_carries_the_plan_rewritten(proto, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's plan is rewritten from the files in the same commit as each chunk or run (never left stale)."""
    mod, p, _ = proto
    readme = tmp_path / "benchmarks" / "README.md"
    readme.parent.mkdir()
    readme.write_text("# B\n<!-- protocol200-plan:start -->\nold\n<!-- protocol200-plan:end -->\nrest\n")
    (tmp_path / "out").mkdir()
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    monkeypatch.setattr(mod, "PLAN", {"toy": ["noaug"]})
    real_write_plan = mod.write_plan
    monkeypatch.setattr(mod, "write_plan", lambda args: real_write_plan(args, readme))
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(mod, "git", lambda *a, cwd=None: calls.append(a) or "changed")
    mod.commit_results("a run", argparse.Namespace(**{**vars(p.args), "commit": True}))
    text = readme.read_text()
    assert "old" not in text and "| toy | noaug | — | 0/2 |" in text and text.endswith("plan:end -->\nrest\n")
    assert calls[0] == ("add", "--", "out", "benchmarks/README.md") and calls[-1][:2] == ("commit", "-q")


def test_the_jobs_order_makes_fins_first_chunks_after_the_issues_cells_without_training(
        proto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod, p, calls = proto
    assert p.generate("rgda", COMMIT, first=2) and calls == [0, 1]  # the first chunks only
    assert not p.complete("rgda", COMMIT)
    order = mod.job_order()
    ncbi = [c for d, c, _ in order if d == "ncbi_disease"]
    assert ncbi == mod.PLAN["ncbi_disease"] and [c for d, c, n in order if d == "fin" and n is None] == mod.PLAN["fin"]
    first = order.index(("fin", f"rgda@seeds:{mod.NEXT}", mod.FIN_FIRST_CHUNKS))
    assert order[first - 1] == ("ncbi_disease", "gda@seeds:2096b68", None)
    steps: list[tuple] = []
    monkeypatch.setattr(mod, "job_order", lambda: [("toy", f"rgda@seeds:{COMMIT}", 1), ("toy", "noaug", None)])
    monkeypatch.setattr(mod.Protocol, "generate", lambda self, m, g, first=None: steps.append(("gen", m, first)))
    monkeypatch.setattr(mod.Protocol, "train", lambda self, cell: steps.append(("train", cell)))
    assert mod.main(["run", "--data-dir", str(tmp_path / "data"), "--num-seeds", "5", "--llm", "scripted:x",
                     "--out", str(tmp_path / "out")]) == 0
    assert steps == [("gen", "rgda", 1), ("train", "noaug")]  # a first-chunks step trains nothing


def test_the_seen_table_goes_to_its_own_page_made_once(tmp_path: Path) -> None:
    mod = importlib.import_module("benchmarks.protocol200")
    from benchmarks.ab_rows import write_readme as write_block

    page = mod.seen_page(tmp_path / "out", "toy")
    write_block("protocol200-seen-toy", "| cell |", page)
    assert mod.seen_page(tmp_path / "out", "toy") == page  # kept as written
    text = page.read_text()
    assert text.startswith("# The 200-seed cells on seen and new test mentions (toy)") and "\n| cell |\n" in text
