"""The split's own mention tagger (hf_rgda.checking.tagger) and the checker's ``likely_mention`` rule: a mention the
split never holds, left untagged, is found from how the split's mentions look; the same split gives the same bytes;
the rule's threshold comes from the split's own sentences read out of fold; and it can be switched off."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest
from datasets import Dataset

from hf_rgda import AugmentConfig, ConfigError, RGDAAugmenter, ScriptedLLM
from hf_rgda.checking import Checker, SplitStats
from hf_rgda.checking.tagger import BITS, WIDTH, MentionTagger, _hashed, features
from hf_rgda.records import Candidate, Seed

from .conftest import stateless_handler

NAMES = ["nephritis", "arthritis", "fibrosis", "sclerosis", "hepatitis", "psoriasis", "colitis", "dermatitis",
         "gastritis", "stenosis", "neuritis", "thrombosis"]
CONTEXT = ["patients", "were", "treated", "for", "cohort", "showed", "signs", "of", "we", "studied", "children",
           "with", "doctors", "saw", "many", "cases", "the", "trial", "enrolled", "adults", "having"]


def _split(n: int = 300, seed: int = 0) -> tuple[list[list[str]], list[list[str]]]:
    """Sentences of context words, one made-up word among them (a new word is no mention by itself), with one or
    two of NAMES tagged Disease (their suffix is what generalises)."""
    rng = random.Random(seed)
    rows, tags = [], []
    for _ in range(n):
        filler = "".join(rng.choice("bcdfgklmnprstv") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
        words = [*rng.sample(CONTEXT, 5), filler]
        rng.shuffle(words)
        names = rng.sample(NAMES, rng.choice((1, 2)))
        tokens, row_tags = [], []
        for w in words:
            tokens.append(w)
            row_tags.append("O")
            if names and rng.random() < 0.4:
                tokens.append(names.pop())
                row_tags.append("B-Disease")
        for name in names:
            tokens += ["and", name]
            row_tags += ["O", "B-Disease"]
        rows.append([*tokens, "."])
        tags.append([*row_tags, "O"])
    return rows, tags


@pytest.fixture(scope="module")
def tagger() -> MentionTagger:
    rows, tags = _split()
    t = MentionTagger.fit(rows, tags)
    assert t is not None
    return t


def test_a_new_name_shaped_like_the_splits_mentions_is_found(tagger: MentionTagger) -> None:
    tokens = ["children", "with", "pancreatitis", "were", "treated", "for", "arthritis", "."]
    tags = ["O", "O", "O", "O", "O", "O", "B-Disease", "O"]
    i, p = tagger.most_likely(tokens, tags)
    assert tokens[i] == "pancreatitis" and p > tagger.cutoff(0.1)  # never in the split: its suffix and neighbours
    plain = ["children", "with", "fevers", "were", "treated", "for", "arthritis", "."]
    assert tagger.most_likely(plain, tags)[1] < tagger.cutoff(0.1)
    # the words given to skip (the seed's untagged ones) and the tagged ones are not asked about
    assert tagger.most_likely(tokens, tags, skip=frozenset({"pancreatitis"}))[1] < tagger.cutoff(0.1)
    assert tagger.most_likely(["gout", "."], ["B-Disease", "O"]) is None


def test_a_row_read_again_is_answered_as_the_first_time(tagger: MentionTagger, monkeypatch: pytest.MonkeyPatch) -> None:
    import hf_rgda.checking.tagger as module

    tokens = ["children", "with", "pancreatitis", "were", "treated", "for", "arthritis", "."]
    tags = ["O", "O", "O", "O", "O", "O", "B-Disease", "O"]
    fresh = MentionTagger(tagger.weights, tagger.trained_on, tagger.reference)
    first = fresh.most_likely(tokens, tags)
    assert first == (2, fresh._probabilities(tokens, [2])[0])  # every word read, the asked ones compared
    assert fresh.most_likely(tokens, tags) == first  # remembered
    # the same words, other tags: the remembered probabilities, other words asked about
    retagged = fresh.most_likely(tokens, ["O", "O", "B-Disease", "O", "O", "O", "B-Disease", "O"])
    assert retagged is not None and retagged[0] != 2
    tie = MentionTagger.from_weights({"w=gout": 2.0, "w=lupus": 2.0})  # two words alike in every other feature
    assert tie.most_likely(["gout", "lupus"], ["O", "O"])[0] == 0  # a tie: the first word, as before the cache
    assert tie.most_likely(["lupus", "gout"], ["O", "O"])[0] == 0
    monkeypatch.setattr(module, "_ROWS", 2)  # bounded: emptied when full
    for k in range(5):
        fresh.most_likely([*tokens[:-1], f"x{k}", "."], [*tags[:-1], "O", "O"])
    assert len(fresh._rows) <= 2
    assert pickle.dumps(fresh) == pickle.dumps(tagger)  # nor pickled


def test_the_reference_comes_from_the_splits_own_sentences(tagger: MentionTagger) -> None:
    ref = tagger.reference
    assert len(ref) == 101 and tagger.trained_on == sum(len(r) for r in _split()[0])
    assert tagger.cutoff(0.1) == ref[90] and tagger.cutoff(0.0) == ref[100] and tagger.cutoff(0.5) == ref[50]
    assert MentionTagger.from_weights({}).cutoff(0.1) == 1.0  # no reference: the rule never fires


SCIERC = Path(__file__).resolve().parents[2] / "shared" / "data" / "scierc"


@pytest.mark.skipif(not SCIERC.is_dir(), reason="../shared/data is not beside the checkout")
def test_on_a_real_split_the_cutoff_holds_and_a_removed_tag_is_found() -> None:
    """SciERC (its train split, about 2 s): about the share the cutoff names of its dev sentences read above it
    (nominal: other sentences than the split's read a little above it), and far more of
    them read above it once one of their mentions is left untagged."""
    from hf_rgda.recipe import load_split
    from hf_rgda.tags import tags_to_spans, to_tag_names

    train, dev = load_split(str(SCIERC), "train"), load_split(str(SCIERC), "dev")
    tagger = MentionTagger.fit(train["tokens"][:], to_tag_names(train))
    cut = tagger.cutoff(0.1)

    def above(rows: list) -> float:
        return sum((f := tagger.most_likely(t, g)) is not None and f[1] > cut for t, g in rows) / len(rows)

    intact = [(t, g) for t, g in zip(dev["tokens"], to_tag_names(dev)) if len(tags_to_spans(g)) >= 2]
    untagged = []
    for t, g in intact:
        s = tags_to_spans(g)[0]
        untagged.append((t, [*g[: s.start], *["O"] * (s.end - s.start), *g[s.end :]]))
    good, bad = above(intact), above(untagged)
    assert 0.03 <= good <= 0.25 and bad >= 2.5 * good, (good, bad)


def test_the_same_split_gives_the_same_bytes_and_pickles_whole(tagger: MentionTagger) -> None:
    rows, tags = _split()
    again = MentionTagger.fit(rows, tags)
    assert again == tagger and again.weights == tagger.weights
    tagger.probabilities(["a", "b"])  # the decoded weights are cached, and stay out of the pickle
    back = pickle.loads(pickle.dumps(tagger))
    assert back == tagger and pickle.dumps(back) == pickle.dumps(again)
    assert "w=nephritis" in features(["nephritis"], 0) and "MentionTagger(trained_on=" in repr(tagger)


def test_a_split_without_enough_tags_trains_no_tagger() -> None:
    rows = [["Patients", "were", "seen", "."]] * 50
    assert MentionTagger.fit(rows, [["O"] * 4] * 50) is None
    assert MentionTagger.fit([["gout"]] * 60, [["B-Disease"]] * 60) is None  # every word tagged: nothing to learn
    assert SplitStats.from_split(rows, [["O"] * 4] * 50).tagger is None
    assert MentionTagger.fit(*_split(49)) is None  # a reference of 49 sentences says little
    rows, tags = _split(60)
    with pytest.raises(ValueError, match="row 3: 2 tokens but 1 tags"):  # the row's own index, empty rows counted
        MentionTagger.fit([[], *rows[:2], ["a", "b"], *rows[2:]], [[], *tags[:2], ["O"], *tags[2:]])
    with pytest.raises(ValueError, match="61 token rows but 60 tag rows"):
        MentionTagger.fit([*rows, ["a"]], tags)
    again = MentionTagger.fit([[], *rows], [[], *tags])  # an empty row is passed over
    assert again is not None and again.trained_on == sum(len(r) for r in rows)
    assert again.probabilities([]).shape == (0,) and again.most_likely([], []) is None


def test_the_checker_rejects_a_row_leaving_a_likely_mention_untagged() -> None:
    rows, tags = _split()
    stats = SplitStats.from_split(rows, tags)
    assert stats.tagger is not None
    seed = Seed("s", ("We", "studied", "gout", "in", "adults", "."), ("O", "O", "B-Disease", "O", "O", "O"))

    def check(checker: Checker, words: str, tagged: str) -> Candidate:
        tokens = words.split()
        row = Candidate(raw=None, tokens=tokens, tags=["B-Disease" if t == tagged else "O" for t in tokens])
        return checker.check(row, seed, [], forbid_seed_entities=False)

    on = Checker(("Disease",), stats)
    bad = check(on, "Children with pancreatitis were treated for arthritis .", "arthritis")
    assert bad.reason == "likely_mention" and "'pancreatitis'" in bad.detail
    assert check(on, "Children with fevers were treated for arthritis .", "arthritis").ok
    off = Checker(("Disease",), stats, likely_mention_quantile=0.0)
    assert check(off, "Children with pancreatitis were treated for arthritis .", "arthritis").ok
    # a word the seed itself leaves untagged is the seed's context, not a missed mention
    seed_says = Seed("s", ("Pancreatitis", "clinics", "studied", "gout", "."), ("O", "O", "O", "B-Disease", "O"))
    row = Candidate(raw=None, tokens=["Children", "with", "pancreatitis", "were", "treated", "for", "arthritis", "."],
                    tags=["O", "O", "O", "O", "O", "O", "B-Disease", "O"])
    assert on.check(row, seed_says, [], forbid_seed_entities=False).ok


def test_the_augmenter_trains_the_tagger_and_passes_the_option_on() -> None:
    rows, tags = _split(120)
    ds = Dataset.from_dict({"tokens": rows, "ner_tags": tags})
    aug = RGDAAugmenter.from_dataset(ds, llm=ScriptedLLM(stateless_handler), likely_mention_quantile=0.05)
    assert aug.stats.tagger is not None and aug.checker().likely_mention_quantile == 0.05
    off = RGDAAugmenter.from_dataset(ds, llm=ScriptedLLM(stateless_handler), likely_mention_quantile=0.0)
    assert off.stats.tagger is None  # the rule off: no tagger trained, none in the fingerprint
    with pytest.raises(ConfigError, match="likely_mention_quantile"):
        AugmentConfig(likely_mention_quantile=0.7)


def test_calibrate_reads_the_tagger_unless_the_rule_is_off() -> None:
    from hf_rgda.calibration import default_scorers

    llm = ScriptedLLM(stateless_handler)
    assert "tagger" in default_scorers(AugmentConfig(), llm)
    assert "tagger" not in default_scorers(AugmentConfig(likely_mention_quantile=0.0), llm)


def test_the_hashed_features_are_the_named_ones(tagger: MentionTagger) -> None:
    """The per-word hash cache builds each word's row from its neighbours: the same indices as hashing the names;
    a word's probability, summed from its neighbours' cached parts, is the logistic of its features' weights."""
    import zlib

    import numpy as np

    w = np.frombuffer(tagger.weights, dtype=np.float32).astype(np.float64)
    for tokens in (["children", "with", "pancreatitis", "were", "seen", "."], ["gout"], ["a", "b", "c"]):
        direct = 1 / (1 + np.exp(-w[_hashed(tokens)].sum(axis=1)))
        assert np.allclose(tagger.probabilities(tokens), direct, atol=1e-9)

    for tokens in (["Wolman", "disease", "is", "rare", "."], ["gout"], ["A", "t-test", "of", "BRCA1", "in", "2019"]):
        rows = _hashed(tokens)
        assert rows.shape == (len(tokens), WIDTH)
        for i in range(len(tokens)):
            names = features(tokens, i)
            assert len(names) == WIDTH
            assert rows[i].tolist() == [zlib.crc32(f.encode()) & ((1 << BITS) - 1) for f in names]


def test_the_modules_examples_run() -> None:
    import doctest

    import hf_rgda.checking.tagger as module

    assert doctest.testmod(module).failed == 0
