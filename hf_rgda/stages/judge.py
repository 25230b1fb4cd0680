"""The judge loop (Algorithm 1 of the paper), one type for the Guidance Refiner (GR) and the Augmentation
Calibrator (AC): a judge scores the output on a rubric; while the score is below the threshold and rounds remain, a
refiner rewrites it with the judge's feedback and the judge scores it again.

A refinement that changes nothing (or, for AC, keeps fewer valid sentences) ends the loop for that seed on its last
verdict, with a note; so does a judge's or refiner's error (the note carries it; the seed goes on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from ..calls import Messages
from ..records import Judgement, SeedResult
from ..schemas import judge_schema
from .base import Each, Run, Step

__all__ = ["JudgeLoop"]


@dataclass
class JudgeLoop:
    """One refine loop.

    Attributes:
        kind: ``"gr"`` or ``"ac"``: the verdicts go to ``r.judgements[kind]``.
        judge_stage, refine_stage: the judge's and the refiner's stage names (their prompts, calls and failures).
        rubric: criterion -> maximum points.
        judge_messages: what the judge reads for a seed.
        refine: ``refine(r, verdict, round)`` rewrites the seed's output; False ends the loop for that seed.
        applies: which seeds the loop runs for.
        after_refine: a step run on the refined seeds before the judge sees them again (the entity verifier).
    """

    run: Run
    kind: str
    judge_stage: str
    refine_stage: str
    rubric: dict[str, int]
    judge_messages: Callable[[SeedResult], Messages]
    refine: Callable[[SeedResult, Judgement, int], Awaitable[bool]]
    applies: Callable[[SeedResult], bool] = field(default=lambda r: True)
    after_refine: Step | None = None

    async def __call__(self, rs: Sequence[SeedResult], each: Each) -> None:
        """Run the loop over the seeds ``rs`` with the scheduler's ``each``."""
        cfg, tag = self.run.config, self.kind.upper()
        active = [r for r in rs if r.alive and self.applies(r)]
        stopped: set[SeedResult] = set()

        async def refine(r: SeedResult, rnd: int) -> None:
            if not await self.refine(r, r.judgements[self.kind][-1], rnd):
                stopped.add(r)

        for rnd in range(1, cfg.max_rounds + 1):
            stopped |= await each(active, Step(self.judge_stage, f"{tag} judge, round {rnd}", partial(self.judge, rnd=rnd)),
                                  soft=True)
            below = [r for r in active if r not in stopped and r.alive and r.judgements[self.kind]
                     and r.judgements[self.kind][-1].score < cfg.threshold]
            if rnd == cfg.max_rounds or not below:
                return
            stopped |= await each(below, Step(self.refine_stage, f"{tag} refine, round {rnd}", partial(refine, rnd=rnd)),
                                  soft=True)
            active = [r for r in below if r not in stopped]
            if self.after_refine is not None:
                await each(active, self.after_refine)
                active = [r for r in active if r.alive and self.applies(r)]

    async def judge(self, r: SeedResult, rnd: int) -> None:
        """One verdict on the seed's current output."""
        data, _ = await self.run.caller.ask(r, self.judge_stage, self.judge_messages(r), judge_schema(self.rubric),
                                            judge=True, salt=rnd)
        r.judgements[self.kind].append(Judgement.parse(data, self.rubric))
