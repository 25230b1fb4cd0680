"""Judges read by probability (the G-Eval reading): each rubric criterion asked as one question with a 1-5 answer,
read from the next token's distribution (:meth:`hf_rgda.calls.Caller.choose`) instead of one sampled verdict.

**The scale.** A criterion is answered with one digit, ``"1"`` to ``"5"``: single tokens for the tokenizers we use
(Qwen splits numbers digit by digit, so the rubric's own values, "25" and "20", would share their first token and
one next token could not tell them apart). Rating ``k`` stands for the fraction ``(k - 1) / 4`` of the criterion's
maximum (:data:`FRACTIONS`): 1 -> 0 points, 2 -> 1/4, 3 -> 1/2, 4 -> 3/4, 5 -> the maximum. The criterion's score
is its maximum times the probability-weighted mean of those fractions (:func:`criterion_score`), rounded half up
to an integer; the verdict's total is the sum of the criteria's scores, an int as a sampled verdict's. The
distributions are kept on the verdict (:attr:`~hf_rgda.records.Judgement.distributions`).

**The messages.** System: the judge's own rubric prompt, rewritten for rating by :func:`scale_system` (its header and
criteria lines in the ``judge_scale`` prompt), or, where both loops run on a backend that reuses its prefix, one prompt
with the GR and AC rubrics (:data:`~.judge.SHARED_RATING`); user: what the judge reads, plus the one criterion asked
("Criterion: <name> (max N): <description>", the rubric's own line). The questions of one verdict differ only in
their last line, so a backend that reuses its KV prefix (llama.cpp) or caches prompts pays the long part once.

**Passing early** (``judge_early_pass``, on a backend where a seed's questions asked in turn cost no time): the criteria are asked one
after another, the one with the most points first, and the verdict stops once its points reach the threshold; it is
then ``partial`` (:attr:`~hf_rgda.records.Judgement.partial`). The loop's decision is the one the full verdict gives.

**Feedback** only when a refinement follows (:class:`~.judge.JudgeLoop`): the judge's ordinary prompt, shown the
scores read, asked for the fixes alone (:func:`feedback_messages`, :func:`~hf_rgda.schemas.feedback_schema`).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable, Mapping

from .. import prompts
from ..calls import Caller
from ..config import AugmentConfig
from ..llm.base import LLM
from ..messages import Messages, add_section, chat
from ..records import Judgement, SeedResult

__all__ = ["FRACTIONS", "SCALE", "Choose", "by_probability", "criteria_lines", "criterion_points", "criterion_score",
           "expected_total", "feedback_messages", "rate", "rate_with", "rating_messages", "read_verdict",
           "scale_system"]

#: the answers of a rating question (one token each)
SCALE: tuple[str, ...] = ("1", "2", "3", "4", "5")
#: rating -> the fraction of the criterion's maximum it stands for
FRACTIONS: dict[str, float] = {k: i / (len(SCALE) - 1) for i, k in enumerate(SCALE)}

_CRITERION = re.compile(r"^\d+\. (\w+) \(max (\d+)\): .+$")


def by_probability(config: AugmentConfig, llm: LLM) -> bool:
    """Whether the judges are read by probability: ``judge_reading`` ``"probability"``, or ``"auto"`` with a backend
    that has logprobs (without them each question would cost the sampling fallback's several calls)."""
    return config.judge_reading == "probability" or (config.judge_reading == "auto" and llm.has_logprobs)


def criteria_lines(judge_system: str, rubric: Mapping[str, int]) -> dict[str, str]:
    """Each criterion's line in the judge's rubric prompt, without its number: ``"name (max N): description"``.

    Raises:
        ValueError: a criterion of ``rubric`` has no line, or the line's maximum differs.
    """
    found = {m[1]: (int(m[2]), line.split(". ", 1)[1])
             for line in judge_system.splitlines() if (m := _CRITERION.match(line))}
    missing = [name for name, top in rubric.items() if found.get(name, (None,))[0] != top]
    if missing:
        raise ValueError(f"the judge's prompt lacks a line 'N. name (max M): ...' for {missing}")
    return {name: found[name][1] for name in rubric}


def scale_system(judge_system: str, *others: tuple[str, str], title: str = "") -> str:
    """The rating questions' system prompt: the judge prompt's header, its criteria lines and what follows them, in
    the ``judge_scale`` prompt. The header is what comes before the first blank line, or, in a prompt without one
    before its criteria (the debate reviewers'), every line before the one that introduces the criteria (which asks
    for a whole verdict).

    With ``others`` (``(title, judge prompt)`` pairs), one prompt shows every judge's rubric, each under "The rubric
    for <title>:" (``title`` names the first judge's): two judges that read the same material then share their
    rating prompt, so a backend that reuses its KV prefix reads what both judges read once (the GR and AC judges
    read the same sentence, entities and guide, which the AC judge follows with the new sentences). The headers'
    shared lines (the entity types) come once, after each judge's own lines.
    """
    parts = [_scale_parts(judge_system), *(_scale_parts(s) for _, s in others)]
    if not others:
        header, criteria, closing = parts[0]
        return prompts.render("judge_scale", header="\n".join(header),
                              rubrics=f"The rubric:\n{criteria}\n{closing}", which="of this rubric")
    titles = [title, *(t for t, _ in others)]
    shared = [line for line in parts[0][0] if all(line in p[0] for p in parts[1:])]
    header = [line for p in parts for line in p[0] if line not in shared] + shared
    rubrics = "\n\n".join(f"The rubric for {t}:\n{criteria}\n{closing}".rstrip()
                           for t, (_, criteria, closing) in zip(titles, parts))
    return prompts.render("judge_scale", header="\n".join(header), rubrics=rubrics, which="of one rubric")


def _scale_parts(judge_system: str) -> tuple[list[str], str, str]:
    """A judge prompt's header lines, criteria lines and closing (:func:`scale_system`)."""
    lines = judge_system.splitlines()
    numbered = [i for i, line in enumerate(lines) if _CRITERION.match(line)]
    before = lines[: numbered[0]] if numbered else lines
    header = lines[: lines.index("")] if "" in before else before[: max(1, len(before) - 1)]
    return header, "\n".join(lines[i] for i in numbered), "\n".join(lines[numbered[-1] + 1 :]).strip()


def rating_messages(judge_messages: Messages, system: str, line: str) -> Messages:
    """The question about one criterion (its rubric ``line``) of what the judge reads."""
    return [*chat(system), *add_section(judge_messages, "criterion", line)[1:]]  # each turn keeps its role


def criterion_score(probs: Mapping[str, float], top: int) -> float:
    """``top`` times the probability-weighted mean of the ratings' fractions."""
    return top * sum(p * FRACTIONS[k] for k, p in probs.items())


def criterion_points(probs: Mapping[str, float], top: int) -> int:
    """A criterion's points in a verdict: :func:`criterion_score` rounded half up."""
    return math.floor(criterion_score(probs, top) + 0.5)


def read_verdict(distributions: Mapping[str, Mapping[str, float]], rubric: Mapping[str, int], *,
                 partial: bool = False) -> Judgement:
    """The verdict of the criteria's rating distributions (no feedback yet); ``partial``: of the criteria of
    ``rubric`` asked before the verdict passed (:func:`rate_with`'s ``pass_at``)."""
    crit = {name: criterion_points(distributions[name], top) for name, top in rubric.items()}
    kept = {name: {k: round(p, 4) for k, p in distributions[name].items()} for name in rubric}
    return Judgement(sum(crit.values()), crit, {}, "probability", kept, partial=partial)


def expected_total(verdict: Judgement, rubric: Mapping[str, int]) -> float:
    """A verdict read by probability's total before rounding (the calibration's score).

    Raises:
        ValueError: the verdict passed early (``partial``): the criteria not asked have no distribution.
    """
    if verdict.partial:
        raise ValueError("a verdict that passed early has no full total: ask every criterion (judge_early_pass=False)")
    return sum(criterion_score(verdict.distributions[name], top) for name, top in rubric.items())


#: ``choose(messages, criterion)`` -> the probabilities of :data:`SCALE` (one rating question, asked and counted)
Choose = Callable[[Messages, str], Awaitable[Mapping[str, float]]]


async def rate_with(choose: Choose, judge_messages: Messages, system: str, lines: Mapping[str, str],
                    rubric: Mapping[str, int], pass_at: int | None = None) -> Judgement:
    """One verdict read by probability: a rating question per criterion of ``rubric``, asked through ``choose``, all
    at once.

    With ``pass_at`` (the threshold), one at a time instead, the criteria with the most points first, until their
    points reach ``pass_at``: a criterion scores 0 or more, so those left could not bring the total below it. The
    verdict is then ``partial`` (its score a lower bound); one that never reaches ``pass_at`` asks every criterion.
    """
    def ask(name: str) -> Awaitable[Mapping[str, float]]:
        return choose(rating_messages(judge_messages, system, lines[name]), name)

    if pass_at is None:
        asked = await asyncio.gather(*map(ask, rubric))
        return read_verdict(dict(zip(rubric, asked)), rubric)
    dists: dict[str, Mapping[str, float]] = {}
    points = 0
    for name in sorted(rubric, key=lambda n: -rubric[n]):
        dists[name] = await ask(name)
        points += criterion_points(dists[name], rubric[name])
        if points >= pass_at and len(dists) < len(rubric):
            return read_verdict(dists, {n: rubric[n] for n in rubric if n in dists}, partial=True)
    return read_verdict(dists, rubric)


async def rate(caller: Caller, r: SeedResult, stage: str, judge_messages: Messages, system: str,
               lines: Mapping[str, str], rubric: Mapping[str, int], rnd: int, pass_at: int | None = None) -> Judgement:
    """One verdict read by probability (:func:`rate_with`, ``pass_at`` too) through the run's calls, counted as
    ``stage``'s calls of round ``rnd``."""
    async def choose(messages: Messages, name: str) -> Mapping[str, float]:
        return (await caller.choose(r, stage, messages, SCALE, salt=f"{rnd}/{name}", rnd=rnd)).probs

    return await rate_with(choose, judge_messages, system, lines, rubric, pass_at)


def feedback_messages(judge_messages: Messages, verdict: Judgement, rubric: Mapping[str, int]) -> Messages:
    """The judge's ordinary question, shown the scores read, for the fixes of ``verdict``."""
    scores = "\n".join(f"- {name}: {verdict.criteria[name]}/{top}" for name, top in rubric.items())
    return add_section(judge_messages, "scores", scores)
