"""WHICH: the Advise-Reflect-Revise debate with scripted agents, and biorda through the pipeline."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hf_rgda import ParseError
from hf_rgda.config import DebateConfig
from hf_rgda.schemas import DEBATE_RUBRIC
from hf_rgda.stages.debate import run_debate

TOKENS = ["Screening", "detected", "early", "melanoma", "in", "most", "patients", "."]
TAGS = ["O", "O", "O", "B-Disease", "O", "O", "O", "O"]
POSITIONS = [1, 6]


def review(score: int) -> dict[str, Any]:
    per = score // 4
    return {name: {"remark": f"{name} ok", "score": per} for name in DEBATE_RUBRIC}


class Agents:
    """Scripted panel: the proposer cycles through word pairs; reviewers give scores from a list per round."""

    def __init__(self, scores_by_round: list[int], malformed: str = "") -> None:
        self.scores, self.malformed = scores_by_round, malformed
        self.calls: list[tuple[int, str, int]] = []
        self.words = iter([("found", "adults"), ("revealed", "cases"), ("showed", "subjects"), ("spotted", "men"),
                           ("identified", "women"), ("noted", "people"), ("saw", "donors"), ("flagged", "twins")])

    async def __call__(self, agent: int, stage: str, messages: list[dict[str, str]], schema: dict[str, Any], rnd: int):
        self.calls.append((agent, stage, rnd))
        if stage == self.malformed:
            return {"oops": True}
        if stage in ("debate_advise", "debate_revise"):
            n = schema["properties"]["proposals"]["minItems"]
            return {"proposals": [{"replacements": [{"position": 1, "new": a}, {"position": 6, "new": b}]}
                                  for a, b in (next(self.words) for _ in range(n))]}
        n = schema["properties"]["reviews"]["minItems"]
        return {"reviews": [review(self.scores[min(rnd, len(self.scores)) - 1]) for _ in range(n)]}


def debate(agents: Agents, cfg: DebateConfig, n: int = 2):
    return asyncio.run(run_debate(agents, TOKENS, TAGS, POSITIONS, n, cfg, domain="oncology", types=["Disease"]))


def test_stops_when_mean_reaches_sigma() -> None:
    agents = Agents([100])
    res = debate(agents, DebateConfig(agents=3, sigma=80, max_rounds=3))
    assert res.rounds == 1 and len(res.accepted) == 2 and not res.rejected
    assert [s for s in agents.calls if s[1] == "debate_reflect"] == [(1, "debate_reflect", 1), (2, "debate_reflect", 1)]
    assert res.accepted[0].apply(TOKENS, TAGS)[0] == ["Screening", "found", "early", "melanoma", "in", "most", "adults", "."]
    roles = [(t["round"], t["agent"], t["role"]) for t in res.transcript]
    assert roles == [(1, 0, "advise"), (1, 1, "reflect"), (1, 2, "reflect")]


def test_revises_below_sigma_then_accepts() -> None:
    agents = Agents([40, 100])
    res = debate(agents, DebateConfig(agents=3, sigma=80, max_rounds=3))
    assert res.rounds == 2 and len(res.accepted) == 2
    assert [p.scores for p in res.accepted] == [[[40, 40], [100, 100]]] * 2
    assert [t["role"] for t in res.transcript] == ["advise", "reflect", "reflect", "revise", "reflect", "reflect"]
    assert res.accepted[0].replacements == {1: "showed", 6: "subjects"}  # the revised proposal


def test_stops_at_max_rounds_and_rejects() -> None:
    agents = Agents([20])
    res = debate(agents, DebateConfig(agents=2, sigma=80, max_rounds=2))
    assert res.rounds == 2 and not res.accepted and len(res.rejected) == 2
    assert sum(1 for c in agents.calls if c[1] == "debate_revise") == 1


def test_single_agent_reviews_itself() -> None:
    agents = Agents([100])
    res = debate(agents, DebateConfig(agents=1), n=1)
    assert len(res.accepted) == 1 and {c[0] for c in agents.calls} == {0}


@pytest.mark.parametrize("stage", ["debate_advise", "debate_reflect"])
def test_malformed_agent_output_raises_parse_error(stage: str) -> None:
    with pytest.raises(ParseError):
        debate(Agents([100], malformed=stage), DebateConfig(agents=2))


def test_biorda_in_the_pipeline_records_transcript_and_failures() -> None:
    """biorda with a fixed WHERE and scripted agents: accepted sentences keep the entities; a malformed answer on
    one seed is that seed's recorded failure while the other seed goes on."""
    from hf_rgda import ScriptedLLM
    from hf_rgda.attribution import WordAttribution
    from hf_rgda.checking import Checker
    from hf_rgda.config import AugmentConfig
    from hf_rgda.pipeline import Pipeline
    from hf_rgda.records import Seed

    class FixedWhere:
        def attribute(self, tokens, tags):
            return WordAttribution(list(tokens), [0.0] * len(tokens), [0.0] * len(tokens), [0.0] * len(tokens),
                                   [1, len(tokens) - 2])

    seeds = [Seed("a", tuple(TOKENS), tuple(TAGS)),
             Seed("b", ("Relatives", "carried", "the", "gout", "variant", "often", "."),
                  ("O", "O", "O", "B-Disease", "O", "O", "O"))]
    def handler(messages, schema, params):
        if "gout" in messages[1]["content"] and "proposer" in messages[0]["content"]:  # the re-ask fails too
            return "I would rather not answer in JSON."
        props = schema["properties"]
        if "proposals" in props:
            n = props["proposals"]["minItems"]
            pos = props["proposals"]["items"]["properties"]["replacements"]["items"]["properties"]["position"]["enum"]
            return {"proposals": [{"replacements": [{"position": p, "new": f"w{k}{p}"} for p in pos]} for k in range(n)]}
        if "answer" in props:  # the entity verifier's question (before issue 31, its failure went unnoticed: the
            return {"A": 1.0}  # seed failed at entity_verify, yet its unverified rows came out accepted)
        return {"reviews": [review(100) for _ in range(props["reviews"]["minItems"])]}

    cfg = AugmentConfig(method="biorda", num_augmented=2, debate_agents=3, judge_reading="sample")
    pipe = Pipeline(cfg, ScriptedLLM(handler), Checker(("Disease",)), attribution=FixedWhere())
    ok, bad = asyncio.run(pipe.run(seeds))
    assert len(ok.accepted) == 2 and all(c.tags == list(TAGS) for c in ok.accepted)
    assert all(c.tokens[3] == "melanoma" for c in ok.accepted)
    assert ok.debate["rounds"] == 1 and len(ok.debate["transcript"]) == 3
    assert bad.failure.startswith("debate: ParseError") and not bad.accepted


# ---------------------------------------------------------------- rgda+debate: the panel reviews whole sentences
def review_panel(scores: list[list[int]], revise_yields: int | None = None, agents: int = 3, rounds: int = 3):
    """run_review over three sentences; ``scores[round-1][k]`` is what every reviewer gives sentence k."""
    from hf_rgda.stages.debate import run_review

    calls: list[tuple[int, str, int]] = []
    revised_in: list[list[str]] = []

    async def ask(agent, stage, messages, schema, rnd):
        calls.append((agent, stage, rnd))
        n = schema["properties"]["reviews"]["minItems"]
        return {"reviews": [review(scores[rnd - 1][k]) for k in range(n)]}

    async def revise(feedback, rnd):
        revised_in.append([x for x, _ in feedback])
        assert all(fb["mean score"] < 80 and len(fb["remarks"]) == max(1, agents - 1) for _, fb in feedback)
        return [f"{x}'" for x, _ in feedback][: revise_yields if revise_yields is not None else len(feedback)]

    res = asyncio.run(run_review(ask, {"text": "seed"}, ["s1", "s2", "s3"], DebateConfig(agents, 80, rounds),
                                 show=lambda x: {"text": x}, revise=revise, domain="oncology", types=["Disease"]))
    return res, calls, revised_in


def test_review_accepts_at_sigma_revises_below_and_rejects_after_last_round() -> None:
    res, calls, revised_in = review_panel([[100, 40, 40], [80, 20], [0]], revise_yields=None, rounds=3)
    assert [x for x, _ in res.accepted] == ["s1", "s2'"]
    assert [(x, h) for x, h in res.rejected] == [("s3''", [[0, 0]])]
    assert res.revised == ["s2", "s3", "s3'"] and revised_in == [["s2", "s3"], ["s3'"]]
    assert res.accepted[0][1] == [[100, 100]] and res.rounds == 3
    assert {c[0] for c in calls} == {1, 2} and all(c[1] == "debate_review" for c in calls)
    assert [t["role"] for t in res.transcript] == ["review", "review", "revise"] * 2 + ["review", "review"]
    # every sentence, the 3 given and each revision written, ends accepted, rejected or replaced: nothing is lost
    written = sum(len(t["content"]) for t in res.transcript if t["role"] == "revise")
    assert written == 3 and len(res.accepted) + len(res.rejected) + len(res.revised) == 3 + written


def test_review_revision_that_yields_nothing_ends_the_review() -> None:
    res, _, _ = review_panel([[100, 40, 40]], revise_yields=0)
    assert [x for x, _ in res.accepted] == ["s1"] and res.revised == ["s2", "s3"] and not res.rejected
    assert res.rounds == 1


def test_review_malformed_reviewer_answer_is_a_parse_error() -> None:
    from hf_rgda.stages.debate import run_review

    async def ask(*_):
        return {"reviews": [{"definition": {"remark": "?"}}]}

    async def revise(feedback, rnd):
        return []

    with pytest.raises(ParseError):
        asyncio.run(run_review(ask, {}, ["s1"], DebateConfig(2), show=str, revise=revise, domain="", types=["Disease"]))


@pytest.mark.parametrize("reading", ["sample", "probability"])
def test_rgda_with_debate_review_through_the_pipeline(reading: str) -> None:
    """rgda + debate_review on the scripted world: the panel rejects every sentence after its last round and the
    trace accounts for each one; with generous reviewers everything composed is kept. Sampled, each reviewer scores
    all sentences in one answer; read by probability, each sentence is a verdict of its own (against
    probability_threshold 50), and the remarks are sampled for the sentences a revision follows."""
    from hf_rgda import ConfigError, ScriptedLLM
    from hf_rgda.checking import Checker
    from hf_rgda.config import AugmentConfig
    from hf_rgda.pipeline import Pipeline
    from hf_rgda.records import Seed
    from hf_rgda.testing import FakeWorld

    seed = Seed("a", tuple(TOKENS), tuple(TAGS))
    strict = FakeWorld(review_scores=[30])
    cfg = AugmentConfig(method="rgda", num_augmented=2, debate_review=True, debate_agents=2, debate_rounds=2,
                        judge_reading=reading)
    (r,) = asyncio.run(Pipeline(cfg, ScriptedLLM(strict), Checker(("Disease",))).run([seed]))
    assert not r.accepted and not r.failure
    below = [c for s, c in r.rejected if s == "debate_review"]
    assert len(below) == 2 and all(c.reason == "below_sigma" for c in below)
    assert all(c.detail.endswith("< 80" if reading == "sample" else "< 50") for c in below)
    assert r.superseded >= 2  # round 1's sentences were replaced by their revisions
    assert r.debate["rounds"] == 2 and r.debate["rejected_means"] == [30.0, 30.0]
    # one reviewer (2 agents): sampled, one answer a round; read by probability, a verdict per sentence and round,
    # and round 1's remarks for the 2 sentences revised, in one sampled answer
    assert strict.stages.count("debate_review") == (2 if reading == "sample" else 2 + 1 + 2) and "composition_judge" in strict.stages
    roles = [t["role"] for t in r.debate["transcript"]]
    rated = "review (read by probability)"
    assert roles == (["review", "revise", "review"] if reading == "sample" else [rated, rated, "review", "revise", rated, rated])

    kind = FakeWorld(review_scores=[90])
    (r,) = asyncio.run(Pipeline(cfg, ScriptedLLM(kind), Checker(("Disease",))).run([seed]))
    assert len(r.accepted) == 2 and r.debate["accepted_means"] == [90.0, 90.0] and r.debate["rounds"] == 1

    with pytest.raises(ConfigError, match="debate_review"):
        AugmentConfig(method="naive", debate_review=True)


def test_reviews_parse_like_judge_verdicts() -> None:
    """One rubric parser: a review is a verdict on DEBATE_RUBRIC whose fixes are its remarks, clamped the same way."""
    from hf_rgda.stages.verdicts import parse_reviews

    item = review(100)
    item["usage"]["score"] = 999
    [one] = parse_reviews({"reviews": [item, review(0)]}, 1)
    assert one.score == 100 and one.criteria["usage"] == 25 and one.feedback["usage"] == "usage ok"
    del item["syntax"]
    with pytest.raises(ParseError, match="syntax"):
        parse_reviews({"reviews": [item]}, 1)
    with pytest.raises(ParseError, match="expected 2 reviews"):
        parse_reviews({"reviews": [review(0)]}, 2)


def test_a_proposal_that_changes_no_word_is_rejected_alone() -> None:
    """One proposal that repeats the chosen words is rejected (no_change) without review; the others go on, in the
    advise step and in a revision alike."""
    agents = Agents([100])
    agents.words = iter([("Detected", "patients"), ("found", "adults")])
    res = debate(agents, DebateConfig(agents=3, sigma=80, max_rounds=3))
    assert [(p.reason, p.replacements) for p in res.rejected] == [("no_change", {1: "Detected", 6: "patients"})]
    assert [p.replacements for p in res.accepted] == [{1: "found", 6: "adults"}] and res.accepted[0].reason == ""

    agents = Agents([40, 100])
    agents.words = iter([("found", "adults"), ("revealed", "cases"), ("detected", "patients"), ("showed", "men")])
    res = debate(agents, DebateConfig(agents=2, sigma=80, max_rounds=3))
    assert [p.reason for p in res.rejected] == ["no_change"] and res.rejected[0].scores == [[40]]
    assert [p.replacements for p in res.accepted] == [{1: "showed", 6: "men"}] and res.rounds == 2


def _biorda_seed(first_word: str) -> Any:
    """One biorda seed through the pipeline, WHERE choosing word 1 and the proposers replacing it with
    ``first_word``, "found" and "saw" (reviews and the entity verifier all agree)."""
    from hf_rgda import ScriptedLLM
    from hf_rgda.attribution import WordAttribution
    from hf_rgda.checking import Checker
    from hf_rgda.config import AugmentConfig
    from hf_rgda.pipeline import Pipeline
    from hf_rgda.records import Seed

    class FixedWhere:
        def attribute(self, tokens, tags):
            return WordAttribution(list(tokens), [0.0] * len(tokens), [0.0] * len(tokens), [0.0] * len(tokens), [1])

    def handler(messages, schema, params):
        props = schema["properties"]
        if "proposals" in props:
            n = props["proposals"]["minItems"]
            return {"proposals": [{"replacements": [{"position": 1, "new": [first_word, "found", "saw"][k]}]}
                                  for k in range(n)]}
        if "answer" in props:  # the entity verifier's question (the seed's entity is a disease); a reviewer's rating
            return {"A": 1.0} if "A" in props["answer"]["enum"] else {"5": 1.0}
        return {"reviews": [review(100) for _ in range(props["reviews"]["minItems"])]}

    cfg = AugmentConfig(method="biorda", num_augmented=3, debate_agents=2)
    pipe = Pipeline(cfg, ScriptedLLM(handler), Checker(("Disease",)), attribution=FixedWhere())
    [r] = asyncio.run(pipe.run([Seed("a", tuple(TOKENS), tuple(TAGS))]))
    return r


def test_biorda_rejects_an_unchanged_proposal_and_keeps_the_others() -> None:
    r = _biorda_seed("detected")  # the first proposal repeats the word
    assert not r.failure and [c.tokens[1] for c in r.accepted] == ["found", "saw"]
    assert [(s, c.reason, c.raw) for s, c in r.rejected] == [("debate", "no_change", {"replacements": {1: "detected"}})]
    assert r.debate["rejected_means"] == [] and r.debate["accepted_means"] == [100.0, 100.0]


# ---------------------------------------------------------------- reviewers read by probability
def test_debate_read_by_probability_asks_remarks_only_for_what_is_revised() -> None:
    """Each reviewer rates each proposal on each criterion (one question, one token); a proposal whose mean
    weighted total reaches probability_sigma is accepted; the remarks the revision needs are sampled only for the
    proposals below it, and those come back to the proposer."""
    from hf_rgda.stages.rating import SCALE

    agents = Agents([0])  # the sampled remarks' scores are not used
    rated: list[tuple[int, str, str, int]] = []
    ratings = {1: {"proposal1": "5", "proposal2": "2"}, 2: {"proposal1": "4"}}  # round -> proposal -> rating

    async def choose(agent, stage, messages, options, salt, rnd):
        assert tuple(options) == SCALE and "Criterion:" in messages[-1]["content"]
        assert "Answer with the one digit" in messages[0]["content"] and "Domain: oncology" in messages[0]["content"]
        assert "Score every proposal" not in messages[0]["content"]  # the sampled verdict's instruction is left out
        item, name = salt.split("/")
        assert name in DEBATE_RUBRIC
        rated.append((agent, stage, salt, rnd))
        return {ratings[rnd][item]: 1.0}

    cfg = DebateConfig(agents=3, sigma=80, max_rounds=3, reading="probability", probability_sigma=50)
    res = asyncio.run(run_debate(agents, TOKENS, TAGS, POSITIONS, 2, cfg, domain="oncology", types=["Disease"],
                                 choose=choose))
    # round 1: proposal 1 rated 5 (100) accepted, proposal 2 rated 2 (25) revised; round 2: its revision rated 4 (75)
    assert [p.scores for p in res.accepted] == [[[100, 100]], [[24, 24], [76, 76]]] and res.rounds == 2
    assert len(rated) == 2 * 2 * 4 + 2 * 1 * 4 and {a for a, *_ in rated} == {1, 2}
    assert {s for _, s, _, _ in rated} == {"debate_reflect"}
    assert [c for c in agents.calls if c[1] == "debate_reflect"] == [(1, "debate_reflect", 1), (2, "debate_reflect", 1)]
    roles = [t["role"] for t in res.transcript]
    assert roles == ["advise"] + ["reflect (read by probability)"] * 4 + ["reflect", "reflect", "revise"] + \
        ["reflect (read by probability)"] * 2
    with pytest.raises(ValueError, match="choose"):
        debate(agents, cfg)


# ---------------------------------------------------------------- issue 31: a bad proposal rejects only itself
@pytest.mark.parametrize(("bad", "why"), [({"position": 6, "new": "  "}, "blank text"),
                                          ({"position": 4, "new": "among"}, "position 4 is not a chosen one")])
def test_a_blank_or_off_position_proposal_rejects_only_itself(bad: dict, why: str) -> None:
    """On 8ae9ee0 one proposal with blank replacement text (or for a position WHERE did not choose) raised
    ParseError "is not for a chosen position", failing the whole seed; now it is rejected alone (bad_replacement,
    never reviewed) and the other proposals go through the debate, in the advise step and in a revision."""
    from hf_rgda.stages.debate import parse_proposals

    good = {"replacements": [{"position": 1, "new": "found"}, {"position": 6, "new": "adults"}]}
    faulty = {"replacements": [{"position": 1, "new": "showed"}, bad]}
    first, second = parse_proposals({"proposals": [faulty, good]}, TOKENS, POSITIONS, 2)
    assert first.reason == "bad_replacement" and why in first.detail and first.replacements == {1: "showed"}
    assert second.reason == "" and second.replacements == {1: "found", 6: "adults"}

    class Faulty(Agents):
        async def __call__(self, agent, stage, messages, schema, rnd):
            data = await super().__call__(agent, stage, messages, schema, rnd)
            if stage in ("debate_advise", "debate_revise"):
                data["proposals"][0] = faulty
            return data

    res = debate(Faulty([100]), DebateConfig(agents=3, sigma=80, max_rounds=3))
    assert [p.reason for p in res.rejected] == ["bad_replacement"] and len(res.accepted) == 1
    res = debate(Faulty([40, 100]), DebateConfig(agents=2, sigma=80, max_rounds=3), n=3)
    assert [p.reason for p in res.rejected] == ["bad_replacement", "bad_replacement"]
    assert [p.replacements for p in res.accepted] == [{1: "identified", 6: "women"}] and res.rounds == 2


def test_biorda_seed_survives_a_blank_replacement() -> None:
    """Through the pipeline: the seed is not failed, the faulty proposal is recorded as a debate rejection."""
    r = _biorda_seed("")  # the first proposal's text is blank
    assert not r.failure and [c.tokens[1] for c in r.accepted] == ["found", "saw"]
    assert [(s, c.reason) for s, c in r.rejected] == [("debate", "bad_replacement")]
    assert "blank text" in r.rejected[0][1].detail
