"""The judge loop (Algorithm 1 of the paper), one type for the Guidance Refiner (GR) and the Augmentation
Calibrator (AC): a judge scores the output on a rubric; while the score is below the threshold and rounds remain, a
refiner rewrites it with the judge's feedback and the judge scores it again.

A verdict is one sampled answer, or read by probability (:mod:`.rating`, ``judge_reading``): then the judge's
feedback is asked for only for the seeds a refinement follows (below the threshold, rounds left), and on a backend
where a seed's questions asked in turn cost no time (:attr:`~hf_rgda.llm.LLM.asks_in_turn`) a verdict passes as soon as its criteria asked reach the threshold
(``judge_early_pass``, :func:`.rating.rate_with`). Each reading has its threshold: ``threshold`` for sampled
verdicts, ``probability_threshold`` for verdicts read by probability (their scores are expected values; see
:meth:`~hf_rgda.config.AugmentConfig.threshold_for`).

A refinement that changes nothing (or, for AC, keeps fewer valid sentences) ends the loop for that seed on its last
verdict, with a note; so does a judge's or refiner's error (the note carries it; the seed goes on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial

from ..messages import Messages
from ..records import Judgement, SeedResult
from ..schemas import feedback_schema, judge_schema
from .base import Each, Run, Step
from .rating import by_probability, criteria_lines, feedback_messages, rate, scale_system
from .registry import STAGES
from .verdicts import parse_feedback, parse_verdict

__all__ = ["SHARED_RATING", "JudgeLoop"]

#: the judges whose rubrics one rating prompt shows, ``(what is rated, judge stage)`` in order: the GR and AC judges
#: read the same seed sentence, entities and guide first, so under one system prompt a backend that reuses its KV
#: prefix (``LLM.reuses_prefix``) reads them once for both (:func:`.rating.scale_system`); used when both loops run on
#: such a backend, else each judge rates under its own rubric alone
SHARED_RATING: tuple[tuple[str, str], ...] = (("a guide", "guidance_judge"), ("new sentences", "composition_judge"))


@dataclass
class JudgeLoop:
    """One refine loop.

    Attributes:
        judge_stage, refine_stage: the judge's and the refiner's stage names (their prompts, calls and failures); the
            verdicts go to ``r.judgements[judge_stage]``.
        rubric: criterion -> maximum points.
        judge_messages: what the judge reads for a seed.
        refine: ``refine(r, verdict, round)`` rewrites the seed's output; False ends the loop for that seed.
        applies: which seeds the loop runs for.
        after_refine: a step run on the refined seeds before the judge sees them again (the entity verifier).
    """

    run: Run
    judge_stage: str
    refine_stage: str
    rubric: dict[str, int]
    judge_messages: Callable[[SeedResult], Messages]
    refine: Callable[[SeedResult, Judgement, int], Awaitable[bool]]
    applies: Callable[[SeedResult], bool] = field(default=lambda r: True)
    after_refine: Step | None = None

    async def __call__(self, rs: Sequence[SeedResult], each: Each) -> None:
        """Run the loop over the seeds ``rs`` with the scheduler's ``each``."""
        cfg, tag = self.run.config, STAGES[self.judge_stage].label
        active = [r for r in rs if r.alive and self.applies(r)]
        stopped: set[SeedResult] = set()

        async def refine(r: SeedResult, rnd: int) -> None:
            if not await self.refine(r, self.verdicts(r)[-1], rnd):
                stopped.add(r)

        for rnd in range(1, cfg.max_rounds + 1):
            stopped |= await each(active, Step(self.judge_stage, f"{tag} judge, round {rnd}", partial(self.judge, rnd=rnd)),
                                  soft=True)
            below = [r for r in active if r not in stopped and r.alive and self.verdicts(r)
                     and self.below(self.verdicts(r)[-1])]
            if rnd == cfg.max_rounds or not below:
                return
            if self.by_probability:
                stopped |= await each(below, Step(self.judge_stage, f"{tag} feedback, round {rnd}",
                                                  partial(self.feedback, rnd=rnd)), soft=True)
                below = [r for r in below if r not in stopped]
            stopped |= await each(below, Step(self.refine_stage, f"{tag} refine, round {rnd}", partial(refine, rnd=rnd)),
                                  soft=True)
            active = [r for r in below if r not in stopped]
            if self.after_refine is not None:
                await each(active, self.after_refine)
                active = [r for r in active if r.alive and self.applies(r)]

    def verdicts(self, r: SeedResult) -> list[Judgement]:
        """The seed's verdicts of this loop's judge, round by round."""
        return r.judgements.setdefault(self.judge_stage, [])

    def below(self, verdict: Judgement) -> bool:
        """Whether ``verdict`` is below the threshold of its reading (``threshold`` or ``probability_threshold``)."""
        return verdict.score < self.run.config.threshold_for(verdict.method)

    @cached_property
    def by_probability(self) -> bool:
        """Whether the verdicts are read by probability (:func:`.rating.by_probability`)."""
        return by_probability(self.run.config, self.run.caller.llm)

    @cached_property
    def pass_at(self) -> int | None:
        """The threshold at which a verdict read by probability stops asking (``judge_early_pass``, on a backend where
        asking a seed's criteria one by one costs no time: :attr:`~hf_rgda.llm.LLM.asks_in_turn`); None: every criterion."""
        cfg, llm = self.run.config, self.run.caller.llm
        if self.by_probability and cfg.judge_early_pass and llm.asks_in_turn:
            return cfg.probability_threshold
        return None

    @cached_property
    def _scale(self) -> tuple[str, dict[str, str]]:
        """The rating questions' system prompt and each criterion's rubric line."""
        system, cfg = self.run.systems[self.judge_stage], self.run.config
        if not (cfg.uses_gr and cfg.uses_ac and self.run.caller.llm.reuses_prefix):
            return scale_system(system), criteria_lines(system, self.rubric)
        (title, first), *others = [(title, self.run.systems[stage]) for title, stage in SHARED_RATING]
        return scale_system(first, *others, title=title), criteria_lines(system, self.rubric)

    async def judge(self, r: SeedResult, rnd: int) -> None:
        """One verdict on the seed's current output."""
        msgs = self.judge_messages(r)
        if self.by_probability:
            system, lines = self._scale
            verdict = await rate(self.run.caller, r, self.judge_stage, msgs, system, lines, self.rubric, rnd,
                                 self.pass_at)
        else:
            data, _ = await self.run.caller.ask(r, self.judge_stage, msgs, judge_schema(self.rubric), judge=True,
                                                salt=rnd)
            verdict = parse_verdict(data, self.rubric)
        self.verdicts(r).append(verdict)

    async def feedback(self, r: SeedResult, rnd: int) -> None:
        """The fixes of the seed's last verdict, read by probability without them (a refinement follows)."""
        verdict = self.verdicts(r)[-1]
        msgs = feedback_messages(self.judge_messages(r), verdict, self.rubric)
        data, _ = await self.run.caller.ask(r, self.judge_stage, msgs, feedback_schema(self.rubric), judge=True,
                                            salt=f"{rnd}/feedback", rnd=rnd)
        self.verdicts(r)[-1] = dataclasses.replace(verdict, feedback=parse_feedback(data, self.rubric))
