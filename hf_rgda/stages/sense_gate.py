"""The sense gate: a sentence whose least likely tokens the model finds too unlikely is rejected
(``sense/implausible``) before the entity verifier asks about it (:mod:`hf_rgda.sense` says what is read and why).

It runs where the backend reads a given text's token logprobs (the local model) and ``sense_gate`` is on; elsewhere
it passes every sentence. A sentence is read after the split's first example sentences, and the threshold is what
``sense_quantile`` of the other examples read (read once an augmenter: kept in :attr:`Run.memo <hf_rgda.stages.base.Run>`), or ``sense_threshold`` where that is above 0.
Without example sentences (statistics of no split) and no absolute threshold the gate passes everything. Each
sentence is read once (``Candidate.sensed``), so the stage runs again after each stage that writes new ones, like the
verifier. The readings are prompt evaluations, not calls: they are not in the calls or tokens of the summary; the
response cache keeps them.
"""

from __future__ import annotations

from ..records import SeedResult
from ..sense import Reader
from .base import Run
from .registry import Stage, register

__all__ = ["STAGE", "SenseGate"]

STAGE = "sense"


class SenseGate:
    """The gate's pass over the seed's accepted sentences not read yet."""

    def __init__(self, run: Run) -> None:
        self.run = run
        cfg, stats = run.config, run.checker.stats
        kept = run.memo.get(STAGE, 0.0)  # the threshold an earlier batch of this augmenter read
        self.reader = Reader(run.caller.llm, cfg.domain, stats.examples, q=cfg.sense_quantile,
                             threshold=cfg.sense_threshold or kept, cache=run.caller.cache)

    async def __call__(self, r: SeedResult) -> None:
        todo = [c for c in r.accepted if c.ok and not c.sensed]
        if not todo or not self.run.caller.llm.scores_text:
            return
        threshold = await self.reader.threshold()
        if threshold is None:
            return
        self.run.memo.setdefault(STAGE, threshold)
        scores = await self.reader.scores([c.tokens for c in todo])
        for c, score in zip(todo, scores):
            c.sensed = True
            if score < threshold:
                r.rejected.append((STAGE, c.reject("implausible", f"its least likely tokens read at {score:.2g} "
                                                   f"< the gate's {threshold:.2g}")))
        r.accepted = [c for c in r.accepted if c.ok]


register(Stage(STAGE, "read sense", state=lambda s: SenseGate(s.run), when=lambda cfg: cfg.sense_gate))
