"""The sense gate: a sentence whose least likely tokens the model finds too unlikely is rejected
(``sense/implausible``) before the entity verifier asks about it (:mod:`hf_rgda.sense` says what is read and why).

It runs where the backend reads a given text's token logprobs (the local model) and ``sense_threshold`` is above 0;
elsewhere it passes every sentence. A sentence's score is the geometric mean probability of its three least likely
tokens (:func:`~hf_rgda.sense.sense_scores`). Each sentence is read once (``Candidate.sensed``),
so the stage runs again after each stage that writes new ones, like the verifier. The readings are prompt
evaluations, not calls: they are not in the calls or tokens of the summary, and the response cache does not keep them.
"""

from __future__ import annotations

from ..records import SeedResult
from ..sense import sense_scores
from .base import Run
from .registry import Stage, register

__all__ = ["STAGE", "SenseGate"]

STAGE = "sense"


class SenseGate:
    """The gate's pass over the seed's accepted sentences not read yet."""

    def __init__(self, run: Run) -> None:
        self.run = run

    async def __call__(self, r: SeedResult) -> None:
        cfg, llm = self.run.config, self.run.caller.llm
        todo = [c for c in r.accepted if c.ok and not c.sensed]
        if not todo or cfg.sense_threshold <= 0 or not llm.scores_text:
            return
        scores = await sense_scores(llm, cfg.domain, [c.tokens for c in todo])
        for c, score in zip(todo, scores):
            c.sensed = True
            if score < cfg.sense_threshold:
                r.rejected.append((STAGE, c.reject("implausible", f"its least likely tokens read at {score:.2g} "
                                                   f"< sense_threshold {cfg.sense_threshold}")))
        r.accepted = [c for c in r.accepted if c.ok]


register(Stage(STAGE, "read sense", state=lambda s: SenseGate(s.run), when=lambda cfg: cfg.sense_threshold > 0))
