"""The calibration canaries (hf_rgda.canaries, read through benchmarks/canaries.py) and the benchmarks' calibration
runner (calibration.py): canaries are deterministic and each carries exactly its defect, the scores are right on
hand-made cases, and the runner goes end to end with a scripted judge on tiny datasets written here (the tests never
read ../shared/data)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks import calibration
from benchmarks import canaries as cn
from hf_rgda import AugmentConfig, ScriptedLLM
from hf_rgda.canaries import defects
from hf_rgda.records import Seed
from hf_rgda.schemas import AC_RUBRIC, DEBATE_RUBRIC, GR_RUBRIC
from hf_rgda.stages.categories import question
from hf_rgda.tags import detokenize, parse_inline, tags_to_spans
from hf_rgda.testing import FakeWorld, stage_of

BIO = [  # one type; a dev split
    "Germline mutations in BRCA1 cause [hereditary breast cancer](Disease) in many families studied here .",
    "Patients with [cystic fibrosis](Disease) often show chronic lung infection and reduced growth .",
    "The WASP gene is mutated in [Wiskott Aldrich syndrome](Disease) and related immune disorders .",
    "Loss of APC function leads to [colorectal cancer](Disease) in adults who carry the variant .",
    "We screened twelve families with [myotonic dystrophy](Disease) for expansions of the repeat .",
    "Carriers of the HRAS1 allele had a higher risk of [ovarian cancer](Disease) than the controls .",
    "Children with [Duchenne muscular dystrophy](Disease) lack dystrophin in skeletal muscle fibres .",
    "The TP53 protein is inactivated in most [sporadic tumours](Disease) of the colon and rectum .",
    "Mice lacking ATM developed [thymic lymphoma](Disease) within four months of their birth .",
    "A rare variant of CFTR was linked to [chronic pancreatitis](Disease) in two unrelated patients .",
    "Screening for [hemochromatosis](Disease) detects iron overload before organ damage occurs in adults .",
    "Expression of the HTT gene is altered in [Huntington disease](Disease) and in related disorders .",
]
BIO_TRAIN = ["Women with [breast cancer](Disease) were tested for BRCA1 mutations in this study ."]
NAMES = ["Alice Smith", "Bob Jones", "Carol White", "Dan Brown", "Eve Black", "Frank Green"]
BANKS = ["Silicon Valley Bank", "First National Bank", "Harbor Trust Company", "Pacific Credit Union"]
FIN = [  # two types; train only, so a dev slice is carved
    f"The [{n}](PER) shall repay the Loan to [{b}](ORG) on the Maturity Date of each year in cash ."
    for n in NAMES for b in BANKS
]


def _write(folder: Path, split: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [dict(zip(("tokens", "ner_tags"), parse_inline(x))) for x in lines]
    (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture()
def data_dir(tmp_path: Path) -> Path:
    _write(tmp_path / "bio", "dev", BIO)
    _write(tmp_path / "bio", "train", BIO_TRAIN)
    _write(tmp_path / "fin", "train", FIN)
    return tmp_path


@pytest.fixture()
def golds(data_dir: Path) -> list[cn.Gold]:
    return [cn.load_gold(data_dir, "bio"), cn.load_gold(data_dir, "fin")]


# ---------------------------------------------------------------- canaries
def test_canaries_are_deterministic(data_dir: Path, golds: list[cn.Gold]) -> None:
    first = cn.build_canaries(golds, 2)
    again = cn.build_canaries([cn.load_gold(data_dir, "bio"), cn.load_gold(data_dir, "fin")], 2)
    assert first == again and len(first) > 50
    assert cn.build_canaries(golds, 2, seed=1) != first


def test_a_dataset_without_dev_gets_a_fixed_carved_slice(golds: list[cn.Gold], data_dir: Path) -> None:
    fin = golds[1]
    assert len(fin.sentences) == round(cn.DEV_SHARE * len(FIN)) and "carved" in fin.source
    assert cn.load_gold(data_dir, "fin").sentences == fin.sentences
    assert golds[0].source == "dev split" and len(golds[0].sentences) == len(BIO)


def test_every_class_is_built_and_half_are_good(golds: list[cn.Gold]) -> None:
    built = cn.build_canaries(golds, 2)
    for g in golds:
        usable = sum(bool(tags_to_spans(list(tags))) and defects.fits(tokens) for tokens, tags in g.sentences)
        for level, classes in cn.class_counts([c for c in built if c.dataset == g.name]).items():
            expected = set(defects.LEVELS[level]) - ({"wrong_type"} if (g.name, level) == ("bio", "row") else set())
            # bio's rows name one mention each (none to keep tagged), fin's every mention is in its train split; both
            # are built on the data of test_the_new_row_classes_are_built_as_described
            expected -= {"novel_untagged"}
            assert set(classes) - {"good"} == expected, (g.name, level)
            assert classes["good"] == min(sum(classes.values()) - classes["good"], usable)  # as many as can serve


def _spans(tags: Any) -> set[tuple[int, int, str]]:
    return {tuple(s) for s in tags_to_spans(list(tags))}


def _check_entity(c: cn.Canary, gold: set[tuple[int, int, str]], tokens: tuple[str, ...],
                  types: tuple[str, ...]) -> None:
    start, end, label = c.span
    assert c.tokens == tokens and c.span in _spans(c.tags)
    assert _spans(c.tags) - {c.span} <= gold  # only the span under test differs from the gold annotation
    same = [g for g in gold if (g[0], g[1]) == (start, end)]
    if c.label == "good":
        assert c.span in gold
    elif c.label == "wrong_type":
        assert same and same[0][2] != label
        assert label in types or (len(types) == 1 and label in defects.CONFUSERS.get(c.dataset, defects.DEFAULT_CONFUSERS))
    elif c.label == "ordinary_phrase":
        assert not any(g[0] - 1 <= i <= g[1] for g in gold for i in range(start, end))
        assert all(t.islower() and t.isalpha() for t in tokens[start:end])
    elif c.label == "name_like":
        assert end - start == 1 and not any(g[0] <= start < g[1] for g in gold) and tokens[start][0].isupper()
    elif c.label == "boundary_cut":  # a strict sub-span of a gold mention, one word shorter
        assert any(g[0] <= start and end <= g[1] and g[1] - g[0] == end - start + 1 and g[2] == label for g in gold)
    elif c.label == "boundary_extended":  # a gold mention plus one neighbouring word
        assert any(start <= g[0] and g[1] <= end and g[1] - g[0] == end - start - 1 and g[2] == label for g in gold)


def _check_row(c: cn.Canary, gold: set[tuple[int, int, str]], tokens: tuple[str, ...], others: set) -> None:
    if c.label == "seed_copy":
        assert (c.tokens, c.tags) == (c.seed_tokens, c.seed_tags) == (tokens, c.tags)
        return
    assert c.seed_tokens and c.seed_tokens != c.tokens
    if c.label in defects.ENTITY_DEFECTS or c.label == "good":
        assert c.tokens == tokens and (_spans(c.tags) == gold) == (c.label == "good")
    elif c.label == "mention_untagged":
        assert c.tokens == tokens and _spans(c.tags) < gold and len(gold - _spans(c.tags)) == 1
    elif c.label == "looped":
        grams = Counter(c.tokens[i : i + 4] for i in range(len(c.tokens) - 3))
        assert max(grams.values()) >= 3 and len(c.tokens) == len(tokens) + 8
    elif c.label == "garbled":
        assert sum("\ufffd" in t for t in c.tokens) == 1 and len(c.tokens) == len(tokens)
    elif c.label == "truncated":
        assert tokens[: len(c.tokens)] == c.tokens and len(c.tokens) < len(tokens)
        assert c.tokens[-1].lower() in defects.CUT_AFTER
    elif c.label == "off_domain":
        assert set(c.tags) == {"O"} and c.tokens in others
    elif c.label == "novel_untagged":
        assert c.tokens == tokens and _spans(c.tags) < gold and len(gold - _spans(c.tags)) == 1
    elif c.label == "entity_swapped":  # the same tokens in another order
        assert sorted(c.tokens) == sorted(tokens) and c.tokens != tokens
    elif c.label == "clauses_spliced":  # this sentence's opening, another's rest
        assert c.tokens[:3] == tokens[:3] and c.tokens != tokens


def _texts(tokens: tuple[str, ...], tags: Any) -> list[tuple[str, str]]:
    return [(" ".join(tokens[s.start : s.end]), s.label) for s in tags_to_spans(list(tags))]


def _check_guide(c: cn.Canary) -> None:
    good = defects.build_guide(c.tokens, c.tags, cn.domain(c.dataset))
    roles, gold_roles = c.guide["entity_roles"], good["entity_roles"]
    if c.label == "good":
        assert c.guide == good and [r["text"] for r in roles] == [detokenize(c.tokens[s.start:s.end])
                                                                   for s in tags_to_spans(list(c.tags))]
    elif c.label == "guide_wrong_type":
        assert [r["text"] for r in roles] == [r["text"] for r in gold_roles]
        assert sum(a["type"] != b["type"] for a, b in zip(roles, gold_roles)) == 1
    elif c.label == "guide_missing_entity":
        assert len(roles) == len(gold_roles) - 1 and all(r in gold_roles for r in roles)
    elif c.label == "guide_entity_not_in_sentence":
        missing = [r["text"] for r in roles if r["text"].replace(" ", "") not in "".join(c.tokens)]
        assert len(missing) == 1 and len(roles) == len(gold_roles)
    elif c.label == "guide_empty_context":
        assert c.guide == {**good, "context": ""}


def test_each_canary_carries_exactly_its_defect(golds: list[cn.Gold]) -> None:
    by_name = {g.name: g for g in golds}
    built = cn.build_canaries(golds, 3)
    for c in built:
        g = by_name[c.dataset]
        others = {t for o in golds if o.name != c.dataset for t, _ in o.sentences}
        tokens, tags = g.sentences[c.source] if c.source >= 0 else ((), ())
        if c.level == "entity":
            _check_entity(c, _spans(tags), tokens, g.types)
        elif c.level == "row":
            _check_row(c, _spans(tags), tokens, others)
        else:
            _check_guide(c)
        assert c.good == (c.label == "good")
    assert {c.label for c in built if c.level == "row"} >= {"off_domain", "truncated", "looped", "garbled"}


NOVEL = [  # two mentions a sentence; the dev split's mentions partly absent from train
    "Both [gout](Disease) and [lupus nephritis](Disease) were seen in the older patients of this cohort .",
    "Patients with [cystic fibrosis](Disease) and [Kawasaki disease](Disease) were enrolled in the study here .",
    "The WASP gene is mutated in [Wiskott Aldrich syndrome](Disease) and in [X linked thrombocytopenia](Disease) .",
    "Loss of APC function leads to [colorectal cancer](Disease) in adults who carry the variant gene .",
]
NOVEL_TRAIN = ["Women with [gout](Disease) and [cystic fibrosis](Disease) were tested for BRCA1 mutations here .",
               "The clinic treats [colorectal cancer](Disease) in older adults with the new drug ."]
DEALS = [  # two types, a dev split
    "The [Alice Smith](PER) shall repay the Loan to [Silicon Valley Bank](ORG) in cash before the date .",
    "The [Bob Jones](PER) signed the Agreement with [Harbor Trust Company](ORG) in the presence of a notary .",
    "The [Carol White](PER) owes the fee to [Pacific Credit Union](ORG) under this Agreement each year .",
]


def test_the_new_row_classes_are_built_as_described(tmp_path: Path) -> None:
    """novel_untagged: a mention the source split (train) nowhere holds, untagged, another kept tagged; the two
    classes of fluent nonsense keep every mention's tags right."""
    _write(tmp_path / "novel", "dev", NOVEL)
    _write(tmp_path / "novel", "train", NOVEL_TRAIN)
    _write(tmp_path / "deals", "dev", DEALS)
    golds = {g.name: g for g in (cn.load_gold(tmp_path, "novel"), cn.load_gold(tmp_path, "deals"))}
    assert " gout and cystic fibrosis " in golds["novel"].source_text and golds["deals"].source_text == ""
    built = cn.build_canaries(list(golds.values()), 3, levels=("row",))
    of = {(c.dataset, c.label): [x for x in built if (x.dataset, x.label) == (c.dataset, c.label)] for c in built}
    novel = of[("novel", "novel_untagged")]
    assert sorted(c.source for c in novel) == [0, 1, 2]  # the rows with two mentions
    for c in novel:
        tokens, tags = golds["novel"].sentences[c.source]
        assert c.tokens == tokens and len(tags_to_spans(list(c.tags))) == 1
        ((start, end, _),) = _spans(tags) - _spans(c.tags)
        assert f" {' '.join(tokens[start:end]).lower()} " not in golds["novel"].source_text
    assert ("deals", "novel_untagged") in of  # no train split: no mention is known
    for name, gold in golds.items():
        for c in of[(name, "entity_swapped")]:  # the same mentions with the same types, elsewhere
            tokens, tags = gold.sentences[c.source]
            assert sorted(c.tokens) == sorted(tokens) and c.tokens != tokens
            assert sorted(_texts(c.tokens, c.tags)) == sorted(_texts(tokens, tags))
        spliced = of.get((name, "clauses_spliced"), [])
        assert spliced
        for c in spliced:  # this sentence's opening, another's rest, from a shared word
            tokens, tags = gold.sentences[c.source]
            assert any(c.tokens == (*tokens[:i], *other[j:]) and c.tags == (*tags[:i], *other_tags[j:])
                       and tokens[i].lower() == other[j].lower() in defects.PIVOTS
                       for i in range(len(tokens)) for other, other_tags in gold.sentences if other != tokens
                       for j in range(len(other)))
    multi = of[("deals", "entity_swapped")]  # two types: the two names change places, each with its own type
    assert multi and all([label for _, label in _texts(c.tokens, c.tags)] == ["ORG", "PER"] for c in multi)


def test_a_one_type_dataset_presents_a_mention_as_a_confuser(golds: list[cn.Gold]) -> None:
    built = cn.build_canaries(golds, 3)
    wrong = [c for c in built if c.dataset == "bio" and c.label == "wrong_type"]
    assert wrong and all(c.level == "entity" and c.span[2] in defects.DEFAULT_CONFUSERS for c in wrong)
    fin = [c for c in built if c.dataset == "fin" and c.label == "wrong_type"]
    assert {c.level for c in fin} == {"entity", "row"}
    assert {s.label for c in fin for s in tags_to_spans(list(c.tags))} == {"PER", "ORG"}


# ---------------------------------------------------------------- scoring
def test_auroc_on_hand_made_cases() -> None:
    good = [True, True, False, False]
    assert cn.auroc([0.9, 0.8, 0.2, 0.1], good) == 1.0
    assert cn.auroc([0.1, 0.2, 0.8, 0.9], good) == 0.0
    assert cn.auroc([0.5, 0.5, 0.5, 0.5], good) == 0.5
    assert cn.auroc([0.9, 0.5, 0.5, 0.1], good) == 0.875  # pairs: 1 + 1 + 0.5 + 1 of 4
    assert cn.auroc([0.3, 0.4], [True, True]) is None
    sklearn = pytest.importorskip("sklearn.metrics")
    scores, labels = [0.1, 0.4, 0.4, 0.35, 0.8, 0.8, 0.2], [False, True, False, True, True, False, False]
    assert cn.auroc(scores, labels) == pytest.approx(sklearn.roc_auc_score(labels, scores))


def test_accuracy_and_the_threshold_rule() -> None:
    scores, good = [0.9, 0.7, 0.6, 0.2], [True, True, False, False]
    assert cn.accuracy(scores, good, 0.65) == 1.0 and cn.accuracy(scores, good, 0.0) == 0.5
    assert cn.balanced_accuracy([0.9, 0.8, 0.7, 0.1], [True, False, False, False], 0.75) == pytest.approx(5 / 6)
    assert cn.choose_threshold(scores, good) == 0.7  # the lowest score that separates them
    assert cn.choose_threshold([0.5, 0.5], [True, False]) == 0.5  # a tie: the lowest
    assert cn.choose_threshold(scores, [True] * 4) is None


def test_evaluate_reports_heldout_and_per_class_figures() -> None:
    labels = ["good"] * 4 + ["looped"] * 2 + ["garbled"] * 2
    scores = [0.9, 0.8, 0.95, 0.85, 0.1, 0.2, 0.85, 0.3]  # one garbled row scores like a good one
    m = cn.evaluate(labels, scores, 0.5)
    assert cn.halves(labels) == [0, 1, 0, 1, 0, 1, 0, 1]
    assert m["auroc"] == pytest.approx(14.5 / 16, abs=1e-4) and m["per_class"]["looped"]["auroc_vs_good"] == 1.0  # 0.85 ties one good: half
    assert m["per_class"]["garbled"] == {"n": 2, "mean_score": 0.575, "heldout_accuracy": 0.5, "auroc_vs_good": 0.8125}
    assert m["accuracy_at_product_threshold"] == 0.875 and m["thresholds"] == [0.9, 0.8]
    # half 1's threshold 0.8 lets half 0's garbled 0.85 through; half 0's 0.9 rejects half 1's good 0.8 and 0.85
    assert m["heldout_accuracy"] == 0.625 and m["heldout_balanced_accuracy"] == 0.625
    assert cn.evaluate(["good", "good"], [0.3, 0.4], 0.5)["heldout_accuracy"] is None


# ---------------------------------------------------------------- the runner, with a scripted judge
def _sections(content: str) -> dict[str, str]:
    return dict(part.partition(":\n")[::2] for part in content.split("\n\n"))


def _oracle(built: list[cn.Canary], calls: list[str], types: dict[str, tuple[str, ...]] | None = None) -> Any:
    """A judge that knows the canaries: full marks to good ones, nothing to defective ones (the entity verifier's
    question is recognised with the datasets' ``types``)."""
    types = types or {}
    def item(tokens: Any, tags: Any) -> str:
        return json.dumps(Seed("", tuple(tokens), tuple(tags)).as_item(), ensure_ascii=False)

    rows = {(item(c.seed_tokens, c.seed_tags), item(c.tokens, c.tags)): c.good for c in built if c.level == "row"}
    seen = {(detokenize(c.seed_tokens), item(c.tokens, c.tags)): c.good for c in built if c.level == "row"}  # AC's view
    guides = {(detokenize(c.tokens), json.dumps(c.guide, ensure_ascii=False)): c.good for c in built if c.level == "guide"}
    entities = {(detokenize(c.tokens), question(detokenize(c.tokens[c.span[0] : c.span[1]]), c.span[2], types[c.dataset])
                 .text()): c.good for c in built if c.span is not None and c.dataset in types}

    def handler(messages: Any, schema: Any, params: Any) -> Any:
        stage, parts = stage_of(messages), _sections(messages[-1]["content"])
        calls.append(stage)
        if stage == "entity_verify":  # P(A) = 1 for a good entity, else all on the last option ("ordinary")
            good = entities[parts["Sentence"], parts["Question"]]
            return {"A": 1.0} if good else {schema["properties"]["answer"]["enum"][-1]: 1.0}
        rating = "answer" in schema["properties"]  # a judge read by probability: all on 5 (good) or on 1
        if stage == "guidance_judge":
            good = guides[parts["Sentence"], parts["Guide"]]
            return {"5" if good else "1": 1.0} if rating else FakeWorld.verdict(100 * good, GR_RUBRIC)
        if stage == "composition_judge":
            good = seen[parts["Sentence"], json.dumps(json.loads(parts["New sentences"])[0], ensure_ascii=False)]
            return {"5" if good else "1": 1.0} if rating else FakeWorld.verdict(100 * good, AC_RUBRIC)
        shown = {k: v for k, v in json.loads(parts["New sentences"])[0].items() if k != "sentence"}
        good = rows[parts["Original sentence"], json.dumps(shown, ensure_ascii=False)]
        if rating:  # a reviewer read by probability
            return {"5" if good else "1": 1.0}
        return {"reviews": [{k: {"remark": "", "score": top * good} for k, top in DEBATE_RUBRIC.items()}]}

    return handler


def _run(monkeypatch: pytest.MonkeyPatch, data_dir: Path, handler: Any, *extra: str) -> tuple[int, Path]:
    monkeypatch.setattr(calibration, "load_llm", lambda spec: ScriptedLLM(handler, name="oracle"))
    monkeypatch.setattr(calibration, "_commit", lambda: "test")
    out = data_dir / "calibration.json"
    argv = ["--llm", "scripted:oracle", "--data-dir", str(data_dir), "--datasets", "bio", "fin", "--per-class", "1",
            "--cache", str(data_dir / "cache.sqlite3"), "--out", str(out), *extra]
    return calibration.main(argv), out


def test_the_runner_scores_every_judge_end_to_end(monkeypatch: pytest.MonkeyPatch, data_dir: Path,
                                                 golds: list[cn.Gold]) -> None:
    calls: list[str] = []
    rc, out = _run(monkeypatch, data_dir, _oracle(cn.build_canaries(golds, 1), calls))
    assert rc == 0
    results = json.loads(out.read_text())
    assert results["commit"] == "test" and results["llm"] == "scripted:oracle" and "CPU cores" in results["machine"]
    assert results["command"].startswith("python benchmarks/calibration.py --llm scripted:oracle")
    for name in ("bio", "fin"):
        entry = results["datasets"][name]
        for scorer, level in (("ac", "row"), ("gr", "guide"), ("debate", "row")):
            cell = entry["scorers"][scorer]
            assert cell["canaries"] == sum(entry["canaries"][level].values()) and cell["failed"] == 0
            assert cell["metrics"]["auroc"] == 1.0 and cell["metrics"]["heldout_accuracy"] == 1.0
            assert {x["score"] for x in cell["scores"]} == {0.0, 1.0} and cell["calls"] >= cell["canaries"]
        assert entry["scorers"]["debate"]["metrics"]["product_threshold"] == 0.8
    assert set(calls) == {"composition_judge", "guidance_judge", "debate_review"}
    n = len(calls)
    assert _run(monkeypatch, data_dir, _oracle([], calls), "--scorers", "ac")[0] == 0
    assert len(calls) == n  # the rerun is served from the response cache


def test_an_unreadable_answer_fails_its_canary_only(monkeypatch: pytest.MonkeyPatch, data_dir: Path,
                                                   golds: list[cn.Gold]) -> None:
    oracle = _oracle(cn.build_canaries(golds, 1), [])
    bad = {"n": 0}

    def flaky(messages: Any, schema: Any, params: Any) -> Any:
        bad["n"] += 1
        return "not json" if bad["n"] <= 2 else oracle(messages, schema, params)  # the first canary and its re-ask

    rc, out = _run(monkeypatch, data_dir, flaky, "--scorers", "gr", "--datasets", "bio")
    cell = json.loads(out.read_text())["datasets"]["bio"]["scorers"]["gr"]
    assert rc == 0 and cell["failed"] == 1 and cell["metrics"]["n"] == cell["canaries"] - 1
    assert "ParseError" in next(x["error"] for x in cell["scores"] if x["score"] is None)


def test_the_entity_scorer_reads_the_verifier_end_to_end(monkeypatch: pytest.MonkeyPatch, data_dir: Path,
                                                         golds: list[cn.Gold]) -> None:
    calls: list[str] = []
    oracle = _oracle(cn.build_canaries(golds, 1), calls, {g.name: g.types for g in golds})
    rc, out = _run(monkeypatch, data_dir, oracle, "--scorers", "entity")
    assert rc == 0 and set(calls) == {"entity_verify"}
    for name in ("bio", "fin"):
        entry = json.loads(out.read_text())["datasets"][name]
        cell = entry["scorers"]["entity"]
        assert cell["canaries"] == sum(entry["canaries"]["entity"].values()) == cell["calls"] and cell["failed"] == 0
        assert {x["score"] for x in cell["scores"]} == {0.0, 1.0} and set(entry["canaries"]["entity"]) > {"good"}
        for x in cell["scores"]:  # the question's whole distribution, option by option, asked type first
            assert x["options"][0][:2] == ["A", "asked"] and x["options"][-1][1] == "ordinary"
            assert x["options"][0][2] == x["score"] and abs(sum(p for *_, p in x["options"]) - 1) < 1e-3
        m = cell["metrics"]
        assert m["auroc"] == 1.0 and m["product_threshold"] == AugmentConfig().verify_threshold
        assert m["accuracy_at_product_threshold"] == 1.0 and m["auroc_type_rescaled"] == 1.0
    n = len(calls)
    assert _run(monkeypatch, data_dir, oracle, "--scorers", "entity")[0] == 0 and len(calls) == n  # from the cache


def test_scores_rescaled_per_type_and_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model that ranks each type's entities right on its own scale: pooled, the scales mix (AUROC below 1);
    divided by each type's mean good score they separate. Within one type no rescaling changes the order."""
    scored = [{"label": label, "type": t, "score": p} for t, label, p in [
        ("Method", "good", 0.40), ("Method", "good", 0.30), ("Method", "wrong_type", 0.20),
        ("Generic", "good", 0.10), ("Generic", "good", 0.08), ("Generic", "ordinary_phrase", 0.02)]]
    labels, scores = [x["label"] for x in scored], [x["score"] for x in scored]
    assert cn.auroc(scores, [label == "good" for label in labels]) < 1.0
    assert calibration.type_rescaled_auroc(scored) == 1.0
    scored[-1]["score"] = 0.09  # now the Generic defect outranks a good Generic: no per-type scale can fix that
    assert calibration.type_rescaled_auroc(scored) < 1.0
    assert calibration.type_rescaled_auroc([x for x in scored if x["label"] == "good"]) is None
    out = tmp_path / "results.json"
    out.write_text(json.dumps({"datasets": {"d": {"scorers": {"entity": {
        "metrics": {"auroc": 0.5, "per_type": {"Method": {"auroc": 1.0}, "Generic": {"auroc": 0.5}}},
        "scores": scored}}}}}))
    assert calibration.main(["--report", str(out)]) == 0
    assert capsys.readouterr().out.startswith("results.json d/entity: AUROC 0.5; rescaled per type 0.75; within each type: "
                                              "Method 1.0, Generic 0.5")


def test_the_report_combines_the_model_and_the_split_scorer_from_stored_scores(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the verification, entity and split scores of the same canaries (from several files), the report prints
    the AUROC as deployed, with the split score in place of the model's, and with their geometric mean; a canary the
    checker decided (0) keeps its score."""
    def cell(scores: dict[str, float]) -> dict:
        return {"metrics": {"auroc": 0.5, "per_type": {}}, "scores": [
            {"id": i, "label": "good" if i.startswith("g") else "wrong_type", "type": "T", "score": v}
            for i, v in scores.items()]}

    model = {"g1": 0.2, "g2": 0.6, "d1": 0.4, "d2": 0.5}  # the model misorders g1 below both defects
    split = {"g1": 0.9, "g2": 0.8, "d1": 0.1, "d2": 0.9}  # the split misorders d2
    deployed = {**model, "d2": 0.0}  # the checker rejected d2's row
    (tmp_path / "a.json").write_text(json.dumps({"datasets": {"d": {"scorers": {"entity": cell(model),
                                                                                "verification": cell(deployed)}}}}))
    (tmp_path / "b.json").write_text(json.dumps({"datasets": {"d": {"scorers": {"split": cell(split)}}}}))
    assert calibration.main(["--report", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "d: verification as deployed 0.75; with the split scorer in place of the model 1.0; "
        "with the geometric mean of both 1.0")


def test_the_judges_read_by_probability_end_to_end(monkeypatch: pytest.MonkeyPatch, data_dir: Path,
                                                   golds: list[cn.Gold]) -> None:
    """ac-prob and gr-prob: one rating question per criterion (5 GR, 4 AC), the weighted total / 100."""
    calls: list[str] = []
    rc, out = _run(monkeypatch, data_dir, _oracle(cn.build_canaries(golds, 1), calls), "--scorers", "ac-prob",
                   "gr-prob", "ac")
    assert rc == 0 and set(calls) == {"composition_judge", "guidance_judge"}
    for name in ("bio", "fin"):
        entry = json.loads(out.read_text())["datasets"][name]
        for scorer, level, per in (("ac-prob", "row", len(AC_RUBRIC)), ("gr-prob", "guide", len(GR_RUBRIC))):
            cell = entry["scorers"][scorer]
            assert cell["canaries"] == sum(entry["canaries"][level].values()) and cell["failed"] == 0
            assert cell["calls"] == per * cell["canaries"] and cell["completion_tokens"] == cell["calls"]
            assert {x["score"] for x in cell["scores"]} == {0.0, 1.0} and cell["metrics"]["auroc"] == 1.0
        assert entry["scorers"]["ac"]["calls"] == entry["scorers"]["ac"]["canaries"]  # one sampled verdict each
    n = len(calls)
    assert _run(monkeypatch, data_dir, _oracle([], calls), "--scorers", "gr-prob")[0] == 0 and len(calls) == n


def test_the_checker_scorer_makes_no_call_and_catches_what_its_rules_see(monkeypatch: pytest.MonkeyPatch,
                                                                           data_dir: Path) -> None:
    calls: list[str] = []
    rc, out = _run(monkeypatch, data_dir, _oracle([], calls), "--scorers", "checker", "--datasets", "bio")
    cell = json.loads(out.read_text())["datasets"]["bio"]["scorers"]["checker"]
    assert rc == 0 and calls == [] and cell["calls"] == 0 and cell["failed"] == 0
    scores: dict[str, set[float]] = {}
    for x in cell["scores"]:
        scores.setdefault(x["label"], set()).add(x["score"])
    assert {x["score"] for x in cell["scores"]} <= {0.0, 0.5, 1.0} and cell["metrics"]["product_threshold"] == 0.5
    assert scores["looped"] == scores["garbled"] == scores["seed_copy"] == scores["truncated"] == {0.0}
    kept = [x["score"] >= 0.5 for x in cell["scores"] if x["label"] == "good"]
    assert sum(kept) >= 0.5 * len(kept)  # the fixture's train split is one sentence: few statistics


def test_the_split_scorer_makes_no_call_and_reads_the_split_size(monkeypatch: pytest.MonkeyPatch,
                                                                 data_dir: Path) -> None:
    """split: the head share of the span under test in the train split, no call; --split-size draws that many train
    sentences for the statistics (and says so in the results)."""
    calls: list[str] = []
    rc, out = _run(monkeypatch, data_dir, _oracle([], calls), "--scorers", "split", "--datasets", "fin")
    entry = json.loads(out.read_text())["datasets"]["fin"]
    cell = entry["scorers"]["split"]
    assert rc == 0 and calls == [] and cell["calls"] == 0 and cell["failed"] == 0 and entry["split_size"] is None
    by_label: dict[str, list[float]] = {}
    for x in cell["scores"]:
        by_label.setdefault(x["label"], []).append(x["score"])
    # FIN's names end in words the split tags as their type every time ("Smith" PER, "Bank" ORG): good spans score
    # high; the same mention presented as the other type low
    assert min(by_label["good"]) > 0.5 and max(by_label["wrong_type"]) < 0.2
    rc, out = _run(monkeypatch, data_dir, _oracle([], calls), "--scorers", "split", "--datasets", "fin",
                   "--split-size", "1")
    entry = json.loads(out.read_text())["datasets"]["fin"]
    assert rc == 0 and entry["split_size"] == 1
    small = {x["id"]: x["score"] for x in entry["scorers"]["split"]["scores"]}
    assert small != {x["id"]: x["score"] for x in cell["scores"]}  # one sentence's statistics say less
    from hf_rgda.checking import SplitStats

    assert SplitStats().head_share("Bank", "ORG", ["ORG", "PER"]) == pytest.approx(1 / 3)


def test_the_debate_reviewer_read_by_probability_end_to_end(monkeypatch: pytest.MonkeyPatch, data_dir: Path,
                                                            golds: list[cn.Gold]) -> None:
    """debate-prob: the panel's two reviewers, one rating question per criterion each, no sampled review (one
    round, no revision); the mean weighted total / 100 against probability_threshold."""
    calls: list[str] = []
    rc, out = _run(monkeypatch, data_dir, _oracle(cn.build_canaries(golds, 1), calls), "--scorers", "debate-prob")
    assert rc == 0 and set(calls) == {"debate_review"}
    for name in ("bio", "fin"):
        entry = json.loads(out.read_text())["datasets"][name]
        cell = entry["scorers"]["debate-prob"]
        assert cell["canaries"] == sum(entry["canaries"]["row"].values()) and cell["failed"] == 0
        assert cell["calls"] == 2 * len(DEBATE_RUBRIC) * cell["canaries"] == cell["completion_tokens"]
        assert {x["score"] for x in cell["scores"]} == {0.0, 1.0} and cell["metrics"]["auroc"] == 1.0
        assert cell["metrics"]["product_threshold"] == AugmentConfig().probability_threshold / 100


def test_the_verification_scorer_runs_the_checker_before_the_verifier(monkeypatch: pytest.MonkeyPatch,
                                                                     data_dir: Path, golds: list[cn.Gold]) -> None:
    """verification: a canary whose row the checker rejects (or whose span it retags) scores 0 with the checker's
    reason and costs no call; every other canary scores what the entity verifier says. Against a verifier that
    answers A to everything, the checker alone decides."""
    calls: list[str] = []

    def yes(messages: Any, schema: Any, params: Any) -> Any:
        calls.append(stage_of(messages))
        return {"A": 1.0}

    rc, out = _run(monkeypatch, data_dir, yes, "--scorers", "verification", "entity")
    assert rc == 0 and set(calls) == {"entity_verify"}
    for name in ("bio", "fin"):
        entry = json.loads(out.read_text())["datasets"][name]
        cell, alone = entry["scorers"]["verification"], entry["scorers"]["entity"]
        assert cell["canaries"] == alone["canaries"] == sum(entry["canaries"]["entity"].values())
        assert cell["failed"] == alone["failed"] == 0 and {x["score"] for x in alone["scores"]} == {1.0}
        stopped = [x for x in cell["scores"] if "checker" in x]
        assert stopped and all(x["score"] == 0.0 and x["checker"] for x in stopped)
        assert all(x["score"] == 1.0 for x in cell["scores"] if "checker" not in x)
        known = [x for x in cell["scores"] if x.get("known")]  # the split's lexicon: kept, asked nothing
        assert cell["calls"] == cell["canaries"] - len(stopped) - len(known)  # a stopped canary asks nothing
        assert cell["metrics"]["product_threshold"] == AugmentConfig().verify_threshold
        types = cell["metrics"]["per_type"]  # every canary counted once, under the type it presents
        assert sum(t["n"] for t in types.values()) == cell["canaries"] and set(types) == {x["type"] for x in cell["scores"]}
        assert all(t["mean_score_good"] == 1.0 for t in alone["metrics"]["per_type"].values() if t["good"])
    scores = [x for n in ("bio", "fin") for x in json.loads(out.read_text())["datasets"][n]["scorers"]["verification"]["scores"]]
    assert any(x["label"] != "good" for x in scores if "checker" in x) and any(x.get("known") for x in scores)


def test_the_verification_scorer_combines_as_the_stage_with_verify_split(monkeypatch: pytest.MonkeyPatch,
                                                                          data_dir: Path) -> None:
    """--set verify_split=true: an asked canary scores sqrt(P x the split scorer's head share), as the stage judges
    it; the checker's 0 and the lexicon's 1 stay."""
    def yes(messages: Any, schema: Any, params: Any) -> Any:
        return {"A": 1.0}

    rc, out = _run(monkeypatch, data_dir, yes, "--scorers", "verification", "split", "--set", "verify_split=true",
                   "--datasets", "bio")  # (the FIN fixture's checker stops every canary: nothing is asked there)
    assert rc == 0
    cells = json.loads(out.read_text())["datasets"]["bio"]["scorers"]
    share = {x["id"]: x["score"] for x in cells["split"]["scores"]}
    asked = [x for x in cells["verification"]["scores"] if "checker" not in x and not x.get("known")]
    assert asked and all(x["score"] == pytest.approx(share[x["id"]] ** 0.5, abs=1e-3) for x in asked)
    assert any(x["score"] < 0.99 for x in asked) and any("checker" in x for x in cells["verification"]["scores"])


def test_set_overrides_an_option_of_the_pipeline_and_is_recorded(monkeypatch: pytest.MonkeyPatch,
                                                                 data_dir: Path) -> None:
    """--set verify_known=false: the split's known entities are asked about like any other (one call each)."""
    calls: list[str] = []

    def yes(messages: Any, schema: Any, params: Any) -> Any:
        calls.append(stage_of(messages))
        return {"A": 1.0}

    rc, out = _run(monkeypatch, data_dir, yes, "--scorers", "verification", "--datasets", "fin", "--set",
                   "verify_known=false")
    entry = json.loads(out.read_text())["datasets"]["fin"]
    cell = entry["scorers"]["verification"]
    assert rc == 0 and entry["config_overrides"] == {"verify_known": False}
    assert not any(x.get("known") for x in cell["scores"])
    assert cell["calls"] == cell["canaries"] - sum("checker" in x for x in cell["scores"])
    with pytest.raises(SystemExit):
        _run(monkeypatch, data_dir, yes, "--set", "no_such_option=1")
