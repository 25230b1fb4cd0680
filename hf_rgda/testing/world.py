"""A stage-aware scripted world for tests, dry runs and benchmarks: valid answers for every pipeline stage.

Scripted fakes, named as such: the sentences are template-made, not model output.

Example:
    >>> from hf_rgda import ScriptedLLM
    >>> llm = ScriptedLLM(FakeWorld(), name="fake-world")
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .. import prompts
from ..calls import call_of
from ..schemas import AC_RUBRIC, DEBATE_RUBRIC, GR_RUBRIC
from ..stages import STAGES, Stage

__all__ = ["FakeWorld", "stage_of", "stateless_answer"]

_DISEASES = ["lung cancer", "type 2 diabetes", "Huntington disease", "melanoma", "asthma", "sickle cell anemia",
             "hepatitis", "glioma", "psoriasis", "leukemia", "ovarian cancer", "ataxia", "gout", "lupus"]
#: the parts of a sentence, each list of a length prime to the others' (5, 7, 11, 13, 17): two sentences written less
#: than 997 apart share at most three parts, so no two are near copies (the checker's variety rules reject those)
_PARTS = (["Inherited variants of", "Rare alleles of", "Truncating mutations in", "Screening results for",
           "Somatic changes in"],
          ["raise the risk of", "were linked to", "lead to early onset", "help to explain", "often precede",
           "strongly predict", "were traced in cases of"],
          ["among adults in Oslo", "in two large families", "in children from Lagos", "across a national registry",
           "in a cohort from Quito", "among farmers in Perth", "in patients from Hanoi", "among twins in Tunis",
           "in a clinic in Lima", "among nurses in Riga", "in villages near Accra"],
          ["over ten years", "since early childhood", "after a long delay", "during the winter months", "within one decade",
           "before any treatment began", "across three generations", "despite early surgery", "after routine screening",
           "through regular blood tests", "under close observation", "as the trial went on", "throughout the follow up"],
          ["according to the authors", "as a second study confirmed", "though the effect varied by age",
           "which surprised the team", "based on hospital records", "after adjusting for smoking",
           "in line with earlier reports", "as measured by biopsy", "while controls stayed healthy",
           "with a clear dose effect", "at a modest cost", "in most of the relatives", "after the first relapse",
           "by the end of the study", "before the age of forty", "with few side effects", "for reasons still unclear"])
_GENES = ["TP53", "APC", "MLH1", "CFTR", "HTT", "PTEN", "KRAS", "SOD1"]


def stage_of(messages: Sequence[Mapping[str, str]]) -> str:
    """The stage of the pipeline call being answered, by the call's metadata (:func:`hf_rgda.calls.call_of`); a
    writer's targeted re-ask is ``"repair"``.

    A call answered where its context does not reach (a :class:`~hf_rgda.testing.providers.ProviderServer`'s
    thread, or another process: a CLI run against one) carries no metadata: its stage is the prompt template its
    system prompt was rendered from (:func:`template_of`), a follow-up that is not the JSON re-ask being a repair.
    """
    info = call_of()
    if info is not None:
        if info.salt.startswith("repair") and "/json" not in info.salt:
            return "repair"
        return info.stage
    if len(messages) > 2 and not str(messages[-1]["content"]).startswith(prompts.template("json_reask")):
        return "repair"
    return _template_stage(messages)


def _template_stage(messages: Sequence[Mapping[str, str]]) -> str:
    """The stage whose prompt template rendered the call's system prompt; a rating question's stage is the judge
    whose rubric holds its criterion."""
    stage = template_of(str(messages[0]["content"]))
    if stage == "judge_scale":  # a rating question: its criterion says whose rubric
        name = re.findall(r"Criterion:\n(\w+)", str(messages[-1]["content"]))[-1]
        stage = next(s for s, rubric in (("guidance_judge", GR_RUBRIC), ("composition_judge", AC_RUBRIC),
                                          ("debate_review", DEBATE_RUBRIC)) if name in rubric)
    return stage


def scripted_stage(messages: Sequence[Mapping[str, str]], listed: str) -> Stage:
    """The declared stage whose scripted answer (``Stage.scripted``) a call gets: the stage it is listed as (by
    :func:`stage_of`), else (a repair re-ask, a call named apart from its stage such as ``debate_revise``) the call's
    own stage, else the stage of its prompt template."""
    stage = STAGES.get(listed) if listed else None
    if stage is not None and stage.scripted is not None:
        return stage
    info = call_of()  # only where the listed stage scripts nothing
    stage = STAGES.get(info.stage) if info is not None and info.stage else None
    if stage is not None and stage.scripted is not None:
        return stage
    stage = STAGES.get(_template_stage(messages))
    if stage is None or stage.scripted is None:
        raise AssertionError(f"no declared stage scripts an answer to a call of {listed!r}")
    return stage


@functools.lru_cache(maxsize=256)
def template_of(system: str) -> str:
    """The prompt template (:mod:`hf_rgda.prompts`) that ``system`` was rendered from."""
    for name in prompts.names():
        if _template_pattern(name).fullmatch(system):
            return name
    raise AssertionError(f"no prompt template renders {system[:80]!r}")


@functools.cache
def _template_pattern(name: str) -> re.Pattern[str]:
    """Template ``name`` as a pattern: its text, each placeholder any text."""
    parts = re.split(r"\$(?:\{\w+\}|\w+)", prompts.template(name))
    return re.compile(".*?".join(map(re.escape, parts)), re.DOTALL)


class FakeWorld:
    """Stage-aware scripted answers: valid sentences, a guidance, judge scores from a list, and entity verdicts.

    ``stages`` lists the stage of every answer (:func:`stage_of`); a verdict read by probability is listed once
    (as ``guidance_judge``, ``composition_judge`` or ``debate_review``), a judge's feedback as ``guidance_feedback``
    or ``composition_feedback``. Each stage's answer is the one its declaration scripts (``Stage.scripted``).

    Args:
        gr_scores, ac_scores: total scores the judges give, round after round (last repeats); a judge read by
            probability gets, per criterion, the ratings whose weighted mean is that criterion's share of the
            total (the next total is taken when the rubric's first criterion is asked).
        review_scores: total score every debate reviewer gives every sentence, call after call (last repeats);
            read by probability, verdict after verdict (one per reviewer and sentence), rated as the judges' are.
        broken: stage names whose answer is garbage text.
        entity_prob: the probability the entity verifier's question gives the asked type (option ``A``); the rest
            goes to the last option, "an ordinary word or phrase" (:meth:`entity_dist`). Asked as a completion (the
            sampling fallback of a backend without logprobs), the question gets the likelier of the two.
        listed: texts the completeness check's listing names as Diseases where the sentence has them (none: the
            listing names nothing, so nothing is found untagged).
    """

    def __init__(self, gr_scores: list[int] = [95], ac_scores: list[int] = [95], broken: tuple[str, ...] = (),  # noqa: B006
                 review_scores: list[int] = [100], entity_prob: float = 0.95, listed: Sequence[str] = ()) -> None:  # noqa: B006
        self.gr_scores, self.ac_scores, self.broken = list(gr_scores), list(ac_scores), broken
        self.listed = tuple(listed)
        self.review_scores, self.entity_prob = list(review_scores), entity_prob
        self.total: int | None = None  # the total of the verdict being read by probability
        self.counter = itertools.count()
        self.stages: list[str] = []

    def sentence(self) -> dict[str, Any]:
        i = next(self.counter)
        d, g = _DISEASES[i % len(_DISEASES)], _GENES[(i // len(_DISEASES)) % len(_GENES)]
        opening, verb, where, when, remark = (part[i % len(part)] for part in _PARTS)
        return {"text": f"{opening} {g} {verb} {d} {where} {when}, {remark}.", "entities": [{"text": d, "type": "Disease"}]}

    def entity_dist(self, messages: Sequence[Mapping[str, str]]) -> dict[str, float]:
        """The next-token distribution of the entity verifier's question: ``entity_prob`` on ``A``, the rest on the
        question's last option."""
        last = re.findall(r"^([A-Z])\) ", messages[-1]["content"], re.MULTILINE)[-1]
        return {"A": self.entity_prob, last: round(1.0 - self.entity_prob, 6)}

    def serve(self) -> dict[str, Any]:
        """The keyword arguments of a :class:`~hf_rgda.testing.providers.ProviderServer` serving this world: its
        answers, and for logprob requests the distribution of the question asked (the entity verifier's, or a judge's
        1-5 rating read by probability); a backend without logprobs samples the question as a completion, answered
        like the sampling fallback's."""
        def respond(messages: Sequence[Mapping[str, str]], schema: Any) -> Any:
            sampled = "answer" in (schema or {}).get("properties", {})  # the verifier's question as a completion
            return self(messages, schema, {"temperature": 1.0} if sampled else {})

        def distribution(messages: Sequence[Mapping[str, str]]) -> dict[str, float]:
            return self(messages, {"properties": {"answer": {}}}, {})

        return {"responder": respond, "logprobs": distribution}

    @staticmethod
    def verdict(total: int, rubric: dict[str, int]) -> dict[str, Any]:
        out, left = {}, total
        for name, top in rubric.items():
            s = min(top, left)
            left -= s
            out[name] = {"feedback": f"fix {name}", "score": s}
        return out

    def __call__(self, messages: Any, schema: Any, params: Any) -> Any:
        """The answer to one call: the garbage of a ``broken`` stage, else what its declared stage scripts
        (:attr:`hf_rgda.stages.Stage.scripted`, from this world's makings below)."""
        listed = stage_of(list(messages))
        self.stages.append(listed)
        if listed in self.broken:
            return "Sure! Here are some sentences: {not json"
        return scripted_stage(list(messages), listed).scripted(self, messages, schema, params)

    # ---------------------------------------------------------------- the makings of the stages' scripted answers
    def write(self, schema: Any) -> dict[str, Any]:
        """New sentences, as many as the schema asks."""
        return {"sentences": [self.sentence() for _ in range(schema["properties"]["sentences"]["minItems"])]}

    def guide(self, *, refined: bool = False) -> dict[str, Any]:
        """A guide; every refinement changes it a little."""
        return {"context": "oncology genetics", "structure": "a gene variant causes a disease",
                "entity_roles": [{"text": "breast cancer", "type": "Disease", "role": "outcome"}],
                "keywords": ["gene"] + [f"variant {self.stages.count('guidance_refine')}"] * refined}

    def listing(self, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        """The completeness check's listing: the ``listed`` texts the sentence has."""
        sentence = messages[-1]["content"].lower()
        return {"mentions": [{"text": t, "type": "Disease"} for t in self.listed if t.lower() in sentence]}

    def entity_answer(self, messages: Sequence[Mapping[str, str]], params: Mapping[str, Any]) -> Any:
        """The entity verifier's answer: ``{token: probability}`` read for option probabilities; one letter when
        sampled."""
        dist = self.entity_dist(messages)
        return {"answer": max(dist, key=dist.__getitem__)} if "temperature" in params else dist

    def review(self, messages: Sequence[Mapping[str, str]], schema: Any) -> Any:
        """The debate reviewers' verdicts (``review_scores``), or one criterion's rating read by probability."""
        if "answer" in schema["properties"]:
            return self.rating("debate_review", DEBATE_RUBRIC, messages[-1]["content"])
        total = self.review_scores.pop(0) if len(self.review_scores) > 1 else self.review_scores[0]
        n = schema["properties"]["reviews"]["minItems"]
        return {"reviews": [{k: {"remark": f"{k} checked", "score": v["score"]}
                             for k, v in self.verdict(total, DEBATE_RUBRIC).items()} for _ in range(n)]}

    def judge(self, stage: str, rubric: dict[str, int], messages: Sequence[Mapping[str, str]], schema: Any) -> Any:
        """Judge ``stage``'s verdict on ``rubric``: sampled, one criterion's rating read by probability, or a verdict's
        feedback alone (listed as ``<stage>`` with ``feedback`` for ``judge``)."""
        if "answer" in schema["properties"]:
            return self.rating(stage, rubric, messages[-1]["content"])
        if "score" not in next(iter(schema["properties"].values()))["properties"]:
            self.stages[-1] = stage.replace("judge", "feedback")
            return {name: {"feedback": f"fix {name}"} for name in rubric}
        return self.verdict(self.next_total(stage), rubric)

    def next_total(self, stage: str) -> int:
        scores = {"guidance_judge": self.gr_scores, "debate_review": self.review_scores}.get(stage, self.ac_scores)
        self.total = scores.pop(0) if len(scores) > 1 else scores[0]
        return self.total

    def rating(self, stage: str, rubric: dict[str, int], question: str) -> dict[str, float]:
        """The two ratings around the asked criterion's share of the total, weighted so their mean is that share."""
        name = re.findall(r"Criterion:\n(\w+)", question)[-1]
        if name != next(iter(rubric)):  # one verdict, one entry in ``stages`` (under its first criterion)
            self.stages.pop()
        total = self.next_total(stage) if name == next(iter(rubric)) or self.total is None else self.total
        x = 4 * self.verdict(total, rubric)[name]["score"] / rubric[name]
        lo, hi = math.floor(x), math.ceil(x)
        return {str(lo + 1): 1.0} if lo == hi else {str(lo + 1): round(hi - x, 6), str(hi + 1): round(x - lo, 6)}


def stateless_answer(messages: Sequence[Mapping[str, str]], schema: Any, params: Mapping[str, Any]) -> Any:
    """Like :class:`FakeWorld` but a pure function of the call (its derived seed), so it hashes and forks cleanly."""
    world = FakeWorld()
    world.counter = itertools.count(int(params.get("seed", 0)) % 997)
    return world(messages, schema, params)
