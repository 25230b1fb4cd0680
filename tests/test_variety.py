"""Variety: accepted rows of one seed differ in their entities and wording, one entity does not fill a run, near
duplicates across seeds are rejected (the variety pass and its scope), and the summary reports entity novelty and
distinct n-grams."""

from __future__ import annotations

import difflib
import itertools
import json
import random
from typing import Any

from datasets import Dataset

from hf_rgda import RGDAAugmenter, RunSummary, ScriptedLLM
from hf_rgda.checking import Checker
from hf_rgda.checking.sentence import Sentence, occurrences
from hf_rgda.checking.variety import Ledger, similar, similarity_bound
from hf_rgda.records import Candidate, Seed, SeedResult, SeedTrace
from hf_rgda.tags import parse_inline, tags_to_spans
from hf_rgda.testing import FakeWorld

from .conftest import LABELS

CHECK = Checker(("Disease", "Product"))


def result(key: str, rows: list[str], seed: str = "Germline mutations in BRCA1 cause [breast cancer](Disease) .") -> SeedResult:
    r = SeedResult(Seed(key, *map(tuple, parse_inline(seed))))
    r.accepted = [Candidate(raw=x, tokens=t, tags=g) for x in rows for t, g in [parse_inline(x)]]
    return r


def outcome(rs: list[SeedResult]) -> list[tuple[str, list[str]]]:
    return [(r.seed.key, [f"{s}/{c.reason}" for s, c in r.rejected]) for r in rs]


NEAR = ("PTEN variants in men raise the risk of [glioma](Disease) by half .",
        "PTEN variants in men raise the risk of [lupus](Disease) by half .")


def test_a_near_duplicate_of_another_seeds_row_is_rejected_the_later_one() -> None:
    first, second = result("a", [NEAR[0]]), result("b", [NEAR[1], "Smoking was linked to [gout](Disease) in the cohort ."])
    CHECK.vary([first, second], Ledger(3), forbid_seed_entities=True)
    assert len(first.accepted) == 1 and [" ".join(c.tokens) for c in second.accepted] == [
        "Smoking was linked to gout in the cohort ."]
    ((stage, c),) = second.rejected
    assert (stage, c.reason) == ("variety", "cross_seed_duplicate") and "another seed" in c.detail
    first, second = result("a", [NEAR[0]]), result("b", [NEAR[1]])
    CHECK.vary([second, first], Ledger(3), forbid_seed_entities=True)  # seed order decides which one stays
    assert outcome([second, first]) == [("b", []), ("a", ["variety/cross_seed_duplicate"])]


def test_one_new_entity_is_accepted_max_entity_repeats_times_a_run() -> None:
    rows = ["Fans queued all night for the new [IPad](Product) model .", "A cracked [IPad](Product) screen costs a lot .",
            "Schools handed every pupil an [IPad](Product) in spring .", "The [IPad](Product) sold out within hours .",
            "Her [IPad](Product) battery lasted two full days ."]
    rs = [result(f"s{i}", [row]) for i, row in enumerate(rows)]
    CHECK.vary(rs, Ledger(3), forbid_seed_entities=True)
    assert [len(r.accepted) for r in rs] == [1, 1, 1, 0, 0]
    assert rs[3].rejected[0][1].reason == "repeated_entity"
    assert rs[3].rejected[0][1].detail == "'ipad' as Product is in 3 accepted rows already (max_entity_repeats 3)"
    rs = [result(f"s{i}", [row]) for i, row in enumerate(rows)]
    CHECK.vary(rs, Ledger(0), forbid_seed_entities=True)  # 0: no cap
    assert [len(r.accepted) for r in rs] == [1] * 5
    # a seed's own entity (a seed generation's versions keep it) is no new one and never capped
    own = [result(f"s{i}", [row], seed="The [IPad](Product) is a tablet .") for i, row in enumerate(rows)]
    CHECK.vary(own, Ledger(3), forbid_seed_entities=False)
    assert [len(r.accepted) for r in own] == [1] * 5


def test_rows_of_one_seed_with_the_same_entities_keep_the_first() -> None:
    rows = ["Carriers of the variant developed [glioma](Disease) early .", "PTEN variants raise the risk of [glioma](Disease) .",
            "PTEN variants raise the risk of [Glioma](Disease) and [gout](Disease) ."]
    r = result("a", rows)
    CHECK.vary([r], Ledger(3), forbid_seed_entities=True)
    assert len(r.accepted) == 2 and outcome([r]) == [("a", ["variety/same_entities"])]
    r = result("a", rows)  # versions of the seed (naive, biorda) keep the seed's entities by design
    CHECK.vary([r], Ledger(3), forbid_seed_entities=False)
    assert len(r.accepted) == 3 and not r.rejected


def test_a_batch_computed_again_replaces_its_rows_in_the_ledger() -> None:
    ledger = Ledger(3)
    for _ in range(2):  # the same outcome both times: the seeds' earlier rows are dropped first
        rs = [result("a", [NEAR[0]]), result("b", [NEAR[1]])]
        CHECK.vary(rs, ledger, forbid_seed_entities=True)
        assert outcome(rs) == [("a", []), ("b", ["variety/cross_seed_duplicate"])]
    assert list(ledger.rows) == ["a"] and ledger.count(("Disease", "glioma")) == 1


def test_the_ledger_word_index_finds_what_a_scan_of_every_row_finds() -> None:
    """``Ledger.sharing`` (every row's shared words counted at once from a word index) gives, in ledger order, the
    rows a scan of every other seed's row admits by the words shared; a forgotten seed's rows and rows added out of
    seed order (which re-index) included."""
    rng = random.Random(7)
    vocab = ["the", "of", "risk", "variants", "raise", "in", "men", "glioma", "lupus", ",", ".", "by", "half"]
    ledger, made = Ledger(0), 0
    for step in range(600):
        key = f"s{rng.randrange(12)}"
        if step % 37 == 36:
            ledger.forget(key)
            continue
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 9))]
        ledger.add(key, row_of(words, key))
        made += 1
        mine, ratio = occurrences(words), rng.choice([1e-12, 0.3, 0.5, 0.85, 1.0])
        scan = [row for seed, rows in ledger.rows.items() if seed != key for row in rows
                if similarity_bound(row[1], mine) >= ratio]
        assert ledger.sharing(mine, key, ratio) == scan
    assert made > 500 and len(ledger.rows) > 1


def row_of(words: list[str], key: str) -> Sentence:
    """A sentence of ``words`` (no entity) for seed ``key``, as the ledger records a row."""
    return Sentence(words, ["O"] * len(words), Seed(key, tuple(words), tuple(["O"] * len(words))), CHECK)


# ---------------------------------------------------------------- in the augmenter
A = ["Rare", "Common", "Inherited", "Somatic", "Novel", "Silent", "Germline"]
B = ["variants", "deletions", "repeats", "fusions", "insertions"]
G = ["TP53", "APC", "MLH1", "CFTR", "HTT", "PTEN", "KRAS", "SOD1"]
C = ["raise the risk of", "were traced in", "explain"]
D = ["adults", "children", "twins", "mice"]


class OneEntity(FakeWorld):
    """A scripted world whose every sentence names the same disease, in varied wording."""

    def sentence(self) -> dict[str, Any]:
        i = next(self.counter)
        text = f"{A[i % 7]} {B[i % 5]} of {G[i % 8]} {C[i % 3]} gout in {D[i % 4]} (case {i})."
        return {"text": text, "entities": [{"text": "gout", "type": "Disease"}]}


def one_entity(messages: Any, schema: Any, params: Any) -> Any:
    """:class:`OneEntity` as a pure function of the call (its derived seed): a map computed again gets the same."""
    world = OneEntity()
    world.counter = itertools.count(int(params.get("seed", 0)) % 997)
    return world(messages, schema, params)


SEEDS = {"tokens": [["Germline", "mutations", "in", "BRCA1", "cause", w, "cancer", "."]
                    for w in ("breast", "ovarian", "colon", "lung", "skin")],
         "ner_tags": [["O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O"]] * 5}


def test_in_a_run_one_seed_keeps_one_row_per_entity_set_and_the_run_caps_the_entity() -> None:
    ds = Dataset.from_dict(SEEDS)
    aug = RGDAAugmenter(label_names=LABELS, llm=ScriptedLLM(one_entity), method="gda", cache=False, keep_rejected=True,
                        max_repairs=0)
    out = ds.map(aug, batched=True, batch_size=2, load_from_cache_file=False)  # the ledger spans the batches
    d = aug.summary.to_dict()
    assert d["accepted"] == 3 and d["rejected_by_reason"]["same_entities"] == 10
    assert d["rejected_by_reason"]["repeated_entity"] == 2
    reasons = {r["rgda_reason"] for r in out if r["rgda_status"] == "rejected"}
    assert {"composer/same_entities", "variety/repeated_entity"} <= reasons
    accepted = [r["rgda_source"] for r in out if r["rgda_status"] == "accepted"]
    assert len(set(accepted)) == 3  # the first three seeds, one row each
    again = ds.map(aug, batched=True, batch_size=2, load_from_cache_file=False)  # computed again: the same rows
    assert [r for r in again if r["rgda_status"] == "accepted"] == [r for r in out if r["rgda_status"] == "accepted"]
    assert d["variety"] == {"entity_texts": 1, "novel_entity_texts": 1, "entity_novelty": 1.0,
                            "distinct_1": d["variety"]["distinct_1"], "distinct_2": d["variety"]["distinct_2"]}
    assert RunSummary.from_dataset(out).to_dict()["variety"] == d["variety"]


def test_rows_accepted_elsewhere_are_remembered_as_one_maps_own() -> None:
    """``remember``: a run made in chunks, each in an augmenter of its own, accepts what one map of all the seeds
    accepts once each chunk's augmenter is given the earlier chunks' output; bad rows are named; the fingerprint
    moves with what was remembered."""
    import pytest
    from datasets.fingerprint import Hasher

    from hf_rgda import InputError

    def aug() -> RGDAAugmenter:
        return RGDAAugmenter(label_names=LABELS, llm=ScriptedLLM(one_entity), method="gda", cache=False, max_repairs=0)

    def accepted(out: Dataset) -> list[tuple[str, list[str]]]:
        return [(r["rgda_source"], r["tokens"]) for r in out if r["rgda_status"] == "accepted"]

    ds = Dataset.from_dict(SEEDS)
    whole = accepted(ds.map(aug(), batched=True, batch_size=2, load_from_cache_file=False))
    first = ds.select(range(2)).map(aug(), batched=True, batch_size=2, load_from_cache_file=False)
    rest, alone = aug(), aug()
    before = Hasher.hash(rest)
    assert rest.remember(first) == 2 and Hasher.hash(rest) != before
    assert rest.remember(first) == 2 and rest._ledger_of_rows.count(("Disease", "gout")) == 2  # again: replaced
    second = accepted(ds.select(range(2, 5)).map(rest, batched=True, batch_size=2, load_from_cache_file=False))
    assert accepted(first) + second == whole and len(whole) == 3  # the cap of 3 rows carrying "gout", run-wide
    fresh = accepted(ds.select(range(2, 5)).map(alone, batched=True, batch_size=2, load_from_cache_file=False))
    assert len(fresh) == 3 and len(second) == 1  # without: the cap starts again
    with pytest.raises(InputError, match="'rgda_status' column"):
        aug().remember(ds)
    no_originals = first.filter(lambda s: s != "original", input_columns="rgda_status")
    with pytest.raises(InputError, match="row 0: an accepted row of seed .* not among the rows' originals"):
        aug().remember(no_originals)
    bad = first.to_dict()
    bad["ner_tags"][1] = ["I-Nope"] * len(bad["tokens"][1])
    with pytest.raises(InputError, match="row 1: "):
        aug().remember(bad)
    other = first.to_dict()  # the same words, other entities: another fingerprint
    other["ner_tags"] = [["O"] * len(t) if st == "accepted" else g
                         for t, g, st in zip(other["tokens"], other["ner_tags"], other["rgda_status"])]
    a, b = aug(), aug()
    a.remember(first)
    b.remember(other)
    assert Hasher.hash(a) != Hasher.hash(b)


def test_the_summary_reports_entity_novelty_and_distinct_ngrams() -> None:
    r = result("a", ["Gout hurts [lupus](Disease) patients .", "[Breast cancer](Disease) hurts too ."],
               seed="Germline mutations in BRCA1 cause [breast cancer](Disease) .")
    summary = RunSummary()
    summary.add(SeedTrace.from_json(json.loads(json.dumps(SeedTrace.of(r, "rgda").to_json()))))
    v = summary.to_dict()["variety"]
    # entity texts: lupus (new), breast cancer (the seed's); 10 words, 8 distinct ("hurts", "." twice); 8 bigrams, all
    # distinct
    assert v == {"entity_texts": 2, "novel_entity_texts": 1, "entity_novelty": 0.5, "distinct_1": 0.8,
                 "distinct_2": 1.0}
    assert "variety: 2 entity texts, 50% new to the seeds; distinct-1 0.8, distinct-2 1.0" in summary.format()
    assert RunSummary().to_dict()["variety"] == {"entity_texts": 0, "novel_entity_texts": 0, "entity_novelty": None,
                                                 "distinct_1": None, "distinct_2": None}


def test_similar_decides_as_difflibs_ratio_and_its_bound_is_quick_ratio() -> None:
    """The cheap tests ``similar`` makes before difflib's ratio (the lengths, the words shared as one set
    intersection of :func:`occurrences`) only ever skip pairs the ratio rejects, and the bound is ``quick_ratio``."""
    rng = random.Random(7)
    words = "the of and , . cancer breast gene BRCA1 risk mice of the".lower().split()
    for _ in range(3000):
        a = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        b = a[: rng.randint(0, len(a))] + [rng.choice(words) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.5:
            rng.shuffle(b)
        matcher = difflib.SequenceMatcher(a=a, b=b)
        assert similarity_bound(occurrences(a), occurrences(b)) == matcher.quick_ratio()
        for ratio in (0.5, 0.85, 1.0):
            assert similar(a, occurrences(a), b, ratio) == (a == b or matcher.ratio() >= ratio), (a, b, ratio)


def test_a_row_repeating_a_siblings_entities_gets_unused_mentions_of_the_split_under_salvage() -> None:
    """``same_entities`` under ``salvage``: the row keeps its words and takes, for each entity, a mention of the
    same type from the split's pool that neither the seed, the row nor its kept siblings tag (multi-word mentions
    tagged B-/I-); the choice is fixed by the row's words; with no unused mention left the row is rejected."""
    from hf_rgda.checking import SplitStats

    pool = {"Disease": ("glioma", "breast cancer", "gout", "cystic fibrosis")}
    check = Checker(("Disease",), SplitStats(mentions=pool), salvage=True)
    seed = Seed("s", *map(tuple, parse_inline("Germline mutations in BRCA1 cause [breast cancer](Disease) .")))
    rows = ["Carriers of the variant developed [glioma](Disease) early .",
            "PTEN variants raise the risk of [glioma](Disease) in men .",
            "A second cohort of [glioma](Disease) patients was sequenced ."]
    kept: list[Candidate] = []
    for row in rows:
        c = Candidate(raw=row, tokens=parse_inline(row)[0], tags=parse_inline(row)[1])
        check.check(c, seed, kept, forbid_seed_entities=True)
        assert c.ok, c.detail
        kept.append(c)
    sets = [frozenset(" ".join(c.tokens[s.start:s.end]) for s in tags_to_spans(c.tags)) for c in kept]
    assert sets[0] == {"glioma"} and len(set(sets)) == 3 and not {"breast cancer"} & (sets[1] | sets[2])
    assert kept[1].salvaged and kept[1].salvaged[0].startswith("same_entities: 'glioma' -> ")
    swapped = kept[2] if "cystic" in " ".join(kept[2].tokens) else kept[1]
    at = swapped.tokens.index("cystic")
    assert swapped.tags[at:at + 2] == ["B-Disease", "I-Disease"]
    again = Candidate(raw=rows[1], tokens=parse_inline(rows[1])[0], tags=parse_inline(rows[1])[1])
    check.check(again, seed, kept[:1], forbid_seed_entities=True)
    assert again.tokens == kept[1].tokens  # the same row, the same choice
    last = Candidate(raw=rows[2], tokens=parse_inline(rows[2])[0], tags=parse_inline(rows[2])[1])
    check.check(last, seed, kept, forbid_seed_entities=True)  # every mention of the pool is taken now
    assert last.reason == "same_entities"


def test_with_spare_rows_the_variety_pass_keeps_rows_with_their_own_entities_first() -> None:
    """A row given a sibling's pool mentions (``same_entities``' repair) fits its sentence less well than one that
    kept the model's entities: with ``keep`` (spare sentences), the seed's rows that kept their own go first, and the
    swapped one is the spare; without ``keep`` the order is the composer's."""
    rows = ["Carriers of the variant developed [glioma](Disease) early .",
            "PTEN variants raise the risk of [gout](Disease) in men .",
            "Smoking was linked to [lupus](Disease) in the cohort ."]
    r = result("a", rows)
    r.accepted[1].salvaged.append("same_entities: 'glioma' -> 'gout' (from the split's mentions of the same types)")
    CHECK.vary([r], Ledger(3), forbid_seed_entities=True, keep=2)
    assert [c.raw for c in r.accepted] == [rows[0], rows[2]]
    assert [(s, c.raw, c.reason) for s, c in r.rejected] == [("variety", rows[1], "spare")]
    r = result("a", rows)
    r.accepted[1].salvaged.append("same_entities: 'glioma' -> 'gout' (from the split's mentions of the same types)")
    CHECK.vary([r], Ledger(3), forbid_seed_entities=True)
    assert [c.raw for c in r.accepted] == rows
