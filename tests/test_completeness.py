"""The completeness check (hf_rgda.stages.completeness): a mention the model lists and the row leaves untagged,
confirmed by the entity verifier's question, rejects the row; what the listing names outside the sentence, inside a
tagged entity or of another type is passed over; off by default. Scripted world: its listing names the texts given."""

from __future__ import annotations

import asyncio
import re

from hf_rgda import AugmentConfig, ScriptedLLM
from hf_rgda.checking import Checker
from hf_rgda.pipeline import Pipeline
from hf_rgda.stages.completeness import candidates, find_span, mention_schema

from .conftest import FakeWorld
from .test_pipeline import SEEDS

GENES = ["TP53", "APC", "MLH1", "CFTR", "HTT", "PTEN", "KRAS", "SOD1"]  # the world's untagged gene names


def _run(world: FakeWorld, **cfg: object) -> list:
    pipe = Pipeline(AugmentConfig(method="gda", **cfg), ScriptedLLM(world), Checker(("Disease",)))
    return asyncio.run(pipe.run(SEEDS))


def test_find_span_and_candidates() -> None:
    tokens = ["Risk", "of", "Prader", "-", "Willi", "syndrome", "and", "gout", "."]
    tags = ["O", "O", "O", "O", "O", "O", "O", "B-Disease", "O"]
    assert find_span(tokens, "prader-willi Syndrome") == (2, 6)
    assert find_span(tokens, "Prader") == (2, 3) and find_span(tokens, "Willis") is None and find_span(tokens, "") is None
    listed = {"mentions": [{"text": "Prader-Willi syndrome", "type": "Disease"}, {"text": "gout", "type": "Disease"},
                           {"text": "lupus", "type": "Disease"}, {"text": "Risk", "type": "Gene"},
                           {"text": "Prader - Willi syndrome", "type": "Disease"}, "junk"]}
    spans = candidates(tokens, tags, listed, ["Disease"])
    assert [(s.start, s.end, s.label) for s in spans] == [(2, 6, "Disease")]  # tagged, absent, other type, twice: out
    schema = mention_schema(["Disease"])
    assert schema["properties"]["mentions"]["items"]["properties"]["type"] == {"enum": ["Disease"]}


def test_a_listed_untagged_mention_the_verifier_confirms_rejects_the_row() -> None:
    quiet = FakeWorld(listed=GENES)
    off = _run(quiet)
    assert "mention_check" not in quiet.stages and all(len(r.accepted) == 3 for r in off)
    world = FakeWorld(listed=GENES)
    on = _run(world, check_mentions=True, mention_listing=True)
    assert "mention_check" in world.stages
    rejected = [(stage, c.reason, c.detail) for r in on for stage, c in r.rejected]
    assert rejected and all(stage == "mention_check" and reason == "untagged_mention" for stage, reason, _ in rejected)
    assert any(g in detail for _, _, detail in rejected for g in GENES)
    assert not any(r.accepted for r in on)  # every world sentence names a gene, untagged


def test_nothing_listed_or_nothing_confirmed_keeps_the_rows() -> None:
    assert all(len(r.accepted) == 3 for r in _run(FakeWorld(), check_mentions=True, mention_listing=True))
    assert all(len(r.accepted) == 3 for r in _run(FakeWorld(listed=["no such text"]), check_mentions=True,
                                                  mention_listing=True))
    # the genes listed, but the verifier gives their type 0.1, under verify_threshold (the rows' own diseases pass
    # verification at 0.1: the seeds' own entities get as much, and the threshold is relative to them)
    unconfirmed = _run(FakeWorld(listed=GENES, entity_prob=0.1), check_mentions=True, mention_listing=True)
    assert all(len(r.accepted) == 3 and not r.rejected for r in unconfirmed)


def test_the_splits_statistics_propose_a_new_mention_the_listing_misses() -> None:
    from hf_rgda.checking import SplitStats
    from hf_rgda.stages.completeness import proposals

    rows = [("Patients with Huntington disease were seen .", "O O B-Disease I-Disease O O O"),
            ("The disease and the syndrome were studied in the clinic .", "O O O O O O O O O O O")] * 6
    stats = SplitStats.from_split([t.split() for t, _ in rows], [g.split() for _, g in rows])
    tokens = ["Patients", "with", "Wolfram", "disease", "were", "seen", "in", "the", "clinic", "."]
    got = proposals(tokens, ["O"] * len(tokens), stats, ["Disease"])
    assert got and (got[0].start, got[0].end) == (2, 4)  # "Wolfram disease": a head of the split, run back
    assert not proposals(tokens, ["O", "O", "B-Disease", "I-Disease"] + ["O"] * 6, stats, ["Disease"])  # tagged
    assert not proposals(tokens, ["O"] * len(tokens), SplitStats(), ["Disease"])  # no statistics, no proposal
    # a head the split never tags by itself is not proposed alone ("the disease"); one it tags alone is ("Gout")
    alone = [("Gout was seen .", "B-Disease O O O")] * 2
    both = SplitStats.from_split([t.split() for t, _ in rows + alone], [g.split() for _, g in rows + alone])
    lone = ["Patients", "with", "the", "disease", "and", "Gout", "were", "seen", "."]
    places = [(s.start, s.end) for s in proposals(lone, ["O"] * len(lone), both, ["Disease"])]
    assert (3, 4) not in places and (5, 6) in places, places
    short = ["The", "Wolfram", "disease", "was", "seen", "."]  # "[Wolfram] disease": the tag stops short of the name
    assert (2, 3) in [(s.start, s.end) for s in proposals(short, ["O", "B-Disease", "O", "O", "O", "O"], both,
                                                          ["Disease"])]
    # in the pipeline, with the listing off, the proposals alone are asked about (the world's rows name a gene
    # untagged, "TP53", a term the split never writes) and the world's verifier confirms them
    world = FakeWorld()
    pipe = Pipeline(AugmentConfig(method="gda", check_mentions=True), ScriptedLLM(world),
                    Checker(("Disease",), stats))
    out = asyncio.run(pipe.run(SEEDS))
    assert "mention_check" not in world.stages  # no listing call
    rejected = [(c.reason, c.detail) for r in out for stage, c in r.rejected if stage == "mention_check"]
    assert rejected and {reason for reason, _ in rejected} == {"untagged_mention"}
    row = ["Rare", "alleles", "of", "TP53", "often", "precede", "ataxia", "among", "adults", "in", "Oslo", "."]
    assert "TP53" in [" ".join(row[s.start:s.end]) for s in proposals(row, ["O"] * len(row), stats, ["Disease"])]


def test_the_check_reads_the_asked_types_probability_not_the_types_together() -> None:
    """The completeness check reads P(the asked type) of each proposal, one question a type for a new term: reading
    P(any of the dataset's types) was measured worse (FIN's canaries, AUROC 0.853 -> 0.756: the 1.5B puts most of an
    ordinary word's mass on the type options; docs/decisions/completeness.md). A span given 0.15 on each of three
    types (0.45 together) is no untagged mention at verify_threshold 0.25."""
    from hf_rgda.checking import SplitStats
    from hf_rgda.stages.completeness import proposals

    types = ("Disease", "Gene", "Chemical")
    rows = [("Patients with Huntington disease were seen .", "O O B-Disease I-Disease O O O"),
            ("The disease and the syndrome were studied in the clinic .", "O O O O O O O O O O O")] * 6
    stats = SplitStats.from_split([t.split() for t, _ in rows], [g.split() for _, g in rows])
    row = ["Rare", "alleles", "of", "TP53", "often", "precede", "ataxia", "."]
    got = [s for s in proposals(row, ["O"] * len(row), stats, types) if (s.start, s.end) == (3, 4)]
    assert sorted(s.label for s in got) == sorted(types)  # "TP53": a new term, asked as each type
    world, asked = FakeWorld(entity_prob=0.1), []  # any other span: 0.1, no mention

    def handler(messages, schema, params):
        text = messages[-1]["content"]
        if '"TP53" is:' in text:
            asked.append(text)
            letters = re.findall(r"^([A-Z])\) ", text, re.MULTILINE)
            spread = {x: 0.15 for x in letters[:3]}  # A (asked) and the two other types: 0.45 in all
            return spread | {x: round(0.55 / (len(letters) - 3), 6) for x in letters[3:]}
        return world(messages, schema, params)

    pipe = Pipeline(AugmentConfig(method="gda", check_mentions=True), ScriptedLLM(handler), Checker(types, stats))
    out = asyncio.run(pipe.run(SEEDS[:1]))
    assert asked and not any("TP53" in c.detail for r in out for stage, c in r.rejected if stage == "mention_check")
