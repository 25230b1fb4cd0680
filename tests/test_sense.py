"""The sense reading (hf_rgda.sense) and its calibration scorer: a backend that reads a given text's token logprobs
is scored by its least likely tokens, and ``hf-rgda calibrate`` reports how it separates each
defect class. The backend here is scripted: a word-bigram model of the gold sentences (a known word pair is likely, an
unknown one unlikely), which is what a language model's reading of garbled, spliced or swapped text looks like."""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from hf_rgda import AugmentConfig, ConfigError, ScriptedLLM, calibrate
from hf_rgda.calibration import default_scorers
from hf_rgda.sense import SHOTS, Reader, prefix, quantile, sense, sense_scores
from hf_rgda.tags import detokenize, parse_inline

from .test_calibrate import DEV, TRAIN, data  # noqa: F401 (the fixture)


class BigramReader(ScriptedLLM):
    """A scripted backend that scores texts: log P(word | previous word) is -0.5 for a pair the gold sentences have,
    -6 for one they lack."""

    scores_text = True

    def __init__(self) -> None:
        super().__init__(lambda messages, schema, params: {}, name="bigram")
        words = [["<s>", *parse_inline(x)[0]] for x in DEV + TRAIN]
        self.pairs = {(a.lower(), b.lower()) for w in words for a, b in itertools.pairwise(w)}
        self.read: list[str] = []

    async def text_logprobs(self, prefix_text: str, texts: Sequence[str]) -> list[list[float]]:
        self.read.append(prefix_text)
        out = []
        for text in texts:
            words = ["<s>", *text.replace(".", " .").replace(",", " ,").split()]
            out.append([-0.5 if (a.lower(), b.lower()) in self.pairs else -6.0 for a, b in itertools.pairwise(words)])
        return out


def test_sense_is_the_mean_of_the_least_likely_tokens() -> None:
    assert sense([-0.1, -5.0, -0.2, -3.0, -1.0]) == -3.0
    assert sense([-2.0]) == -2.0 and sense([]) == 0.0
    assert prefix("biomedical abstracts") == "A sentence from biomedical abstracts:\n"
    scores = asyncio.run(sense_scores(BigramReader(), "bio", [["Patients", "with"], ["with", "Patients"]]))
    assert math.isclose(scores[0], math.exp(-0.5)) and math.isclose(scores[1], math.exp(-6.0))


def test_calibrate_reports_the_sense_reading_by_class(data: Path, tmp_path: Path) -> None:  # noqa: F811
    llm = BigramReader()
    assert "sense" in default_scorers(AugmentConfig(), llm)
    assert "sense" not in default_scorers(AugmentConfig(), ScriptedLLM(lambda m, s, p: {}, name="plain"))
    report = calibrate(data, llm, scorers=["sense"], out=tmp_path / "calibration.json",
                       config=AugmentConfig(domain="bio"), cache=False, progress=False)
    per_class = report["scorers"]["sense"]["per_class"]
    # a bigram reader sees shuffled words and a mention moved among them; a splice at a shared word it cannot see
    for nonsense in ("garbled", "entity_swapped", "looped"):
        assert per_class[nonsense]["auroc_vs_good"] == 1.0, (nonsense, per_class[nonsense])
    assert math.isclose(per_class["good"]["mean_score"], math.exp(-0.5), abs_tol=1e-3)  # every word pair known
    # every sentence is read after the train split's example sentences (the shots), the same prefix each time
    assert llm.read and len(set(llm.read)) == 1 and llm.read[0].startswith("Sentences from bio:\n")
    assert llm.read[0].count("\n") == 1 + min(4, len(TRAIN)) and "sense-gate" in default_scorers(AugmentConfig(), llm)
    # the fixture's train split is all shots: no reference sentences, so no threshold of the split's own
    assert report["scorers"]["sense"]["current_threshold"] == 0.0


def test_a_backend_without_text_logprobs_is_refused_the_sense_scorer_before_any_call(data: Path, tmp_path: Path) -> None:  # noqa: F811
    calls: list[object] = []
    plain = ScriptedLLM(lambda m, s, p: calls.append(m) or {}, name="plain")
    with pytest.raises(ConfigError, match="cannot"):
        calibrate(data, plain, scorers=["sense"], out=tmp_path / "c.json", config=AugmentConfig(domain="bio"),
                  cache=False, progress=False)
    assert not calls and not (tmp_path / "c.json").exists()


class MarkedReader(ScriptedLLM):
    """The scripted world's answers, and a text reading in which every word containing ``unlikely`` is very unlikely."""

    scores_text = True

    def __init__(self, world: object, unlikely: str) -> None:
        super().__init__(world)
        self.unlikely, self.texts = unlikely, []

    async def text_logprobs(self, prefix_text: str, texts: Sequence[str]) -> list[list[float]]:
        self.texts += list(texts)
        return [[-9.0 if self.unlikely in w else -0.5 for w in t.split()] for t in texts]


def test_the_gate_rejects_what_reads_too_unlikely_and_only_where_switched_on() -> None:
    from hf_rgda.checking import Checker
    from hf_rgda.pipeline import Pipeline

    from .conftest import FakeWorld
    from .test_pipeline import SEEDS

    def run(threshold: float, reader: type = MarkedReader) -> tuple[list, MarkedReader]:
        llm = reader(FakeWorld(), "Huntington")  # rows naming Huntington disease read as unlikely
        pipe = Pipeline(AugmentConfig(method="gda", sense_gate=threshold > 0, sense_threshold=threshold), llm,
                        Checker(("Disease",)))
        return asyncio.run(pipe.run(SEEDS)), llm

    off, llm = run(0.0)  # sense_gate off: nothing is read
    assert not llm.texts and all(len(r.accepted) == 3 for r in off)
    on, llm = run(0.05)
    assert llm.texts and not {detokenize(s.tokens) for s in SEEDS} & set(llm.texts)  # rows are read, not seeds
    rejected = [(stage, c.reason) for r in on for stage, c in r.rejected]
    kept = [c for r in on for c in r.accepted]
    assert rejected and set(rejected) == {("sense", "implausible")}
    assert not any("Huntington" in " ".join(c.tokens) for c in kept)
    assert len(kept) + len(rejected) == sum(len(r.accepted) for r in off)
    assert all(c.sensed for c in kept)
    plain, _ = run(0.05, reader=lambda world, _: ScriptedLLM(world))  # a backend that cannot read text: no gate
    assert all(len(r.accepted) == 3 for r in plain)


def _gate_run(threshold: float = 0.0, *, gate: bool = True, stats: bool = True, cache: object = None,
              quantile_: float = 0.1) -> tuple[list, MarkedReader]:
    from hf_rgda.checking import Checker, SplitStats
    from hf_rgda.pipeline import Pipeline

    from .conftest import FakeWorld
    from .test_pipeline import SEEDS

    rows = [parse_inline(x) for x in DEV + TRAIN]
    split = SplitStats.from_split([t for t, _ in rows], [g for _, g in rows]) if stats else SplitStats()
    llm = MarkedReader(FakeWorld(), "Huntington")
    cfg = AugmentConfig(method="gda", sense_gate=gate, sense_threshold=threshold, sense_quantile=quantile_)
    pipe = Pipeline(cfg, llm, Checker(("Disease",), split), cache=cache)
    return asyncio.run(pipe.run(SEEDS)), llm


def test_the_gate_is_on_by_default_and_sets_its_threshold_from_the_splits_own_sentences(tmp_path: Path) -> None:
    from hf_rgda.cache import ResponseCache

    assert AugmentConfig().sense_gate and AugmentConfig().sense_threshold == 0.0
    cache = ResponseCache(tmp_path / "r.sqlite3")
    on, llm = _gate_run(cache=cache)
    rows = [parse_inline(x) for x in DEV + TRAIN]
    examples = [detokenize(t) for t, g in rows if any(x != "O" for x in g) and 8 <= len(t) <= 40]
    # the reference (the examples after the shots) is read once for the run, then the rows; the shots never are
    assert set(examples[SHOTS:]) <= set(llm.texts) and not set(examples[:SHOTS]) & set(llm.texts)
    assert sum(t == examples[SHOTS] for t in llm.texts) == 1
    rejected = [(stage, c.reason, c.detail) for r in on for stage, c in r.rejected]
    assert rejected and {x[:2] for x in rejected} == {("sense", "implausible")}
    reads = [math.exp(sense([-9.0 if "Huntington" in w else -0.5 for w in t.split()])) for t in examples[SHOTS:]]
    assert all(d.endswith(f"< the gate's {quantile(reads, 0.1):.2g}") for *_, d in rejected), rejected
    assert not any("Huntington" in " ".join(c.tokens) for r in on for c in r.accepted)
    assert len(cache) == len(llm.calls)  # the readings are kept beside the calls, not counted as calls
    again, llm2 = _gate_run(cache=cache)  # a rerun reads nothing: every reading is in the cache
    assert not llm2.texts and [len(r.accepted) for r in again] == [len(r.accepted) for r in on]


def test_the_gate_passes_everything_where_switched_off_or_without_a_split() -> None:
    off, llm = _gate_run(gate=False)
    assert not llm.texts and all(len(r.accepted) == 3 for r in off)
    bare, llm = _gate_run(stats=False)  # no example sentences and no absolute threshold: nothing to read against
    assert not llm.texts and all(len(r.accepted) == 3 for r in bare)
    absolute, llm = _gate_run(0.05, stats=False)  # an absolute threshold needs no split
    assert llm.texts and sum(len(r.accepted) for r in absolute) < sum(len(r.accepted) for r in off)


def test_quantile_and_the_readers_threshold() -> None:
    assert quantile([0.5], 0.1) == 0.5 and quantile([0.0, 1.0], 0.25) == 0.25
    with pytest.raises(ValueError):
        quantile([], 0.1)
    reader = Reader(BigramReader(), "bio", [["a"]] * SHOTS, threshold=0.0)
    assert asyncio.run(reader.threshold()) is None  # shots, no reference
    assert asyncio.run(Reader(BigramReader(), "bio", [], threshold=0.3).threshold()) == 0.3
    with pytest.raises(ConfigError, match="sense_quantile"):
        AugmentConfig(sense_quantile=0.9)


def test_an_augmenter_reads_the_reference_once_across_its_batches() -> None:
    """The gate's threshold is read once an augmenter, not once a batch (``map`` makes a pipeline per batch) nor
    once a process: without a response cache, a second batch reads only its rows, and another augmenter reads its
    own reference (no threshold outlives its augmenter)."""
    from datasets import Dataset

    from hf_rgda import RGDAAugmenter
    from hf_rgda.checking import SplitStats

    from .conftest import FakeWorld
    from .test_pipeline import SEEDS

    rows = [parse_inline(x) for x in DEV + TRAIN]
    split = SplitStats.from_split([t for t, _ in rows], [g for _, g in rows])
    reference = detokenize(split.examples[SHOTS])
    seeds = Dataset.from_dict({"tokens": [list(s.tokens) for s in SEEDS], "ner_tags": [list(s.tags) for s in SEEDS]})

    def augmenter(llm: MarkedReader) -> RGDAAugmenter:
        return RGDAAugmenter(label_names=["O", "B-Disease", "I-Disease"], llm=llm, method="gda", cache=False,
                             stats=split)

    llm = MarkedReader(FakeWorld(), "Huntington")
    out = seeds.map(augmenter(llm), batched=True, batch_size=2, load_from_cache_file=False)
    assert len(SEEDS) > 2 and llm.texts.count(reference) == 1  # two batches or more, one reading
    assert any(s == "accepted" for s in out["rgda_status"])
    other = MarkedReader(FakeWorld(), "Huntington")
    seeds.select(range(1)).map(augmenter(other), batched=True, load_from_cache_file=False)
    assert other.texts.count(reference) == 1
