"""Seed generation (new versions of the seed sentence), and the targeted repair re-ask that the composer shares:
the sentences the checker rejected go back into the stage's conversation, with their reasons."""

from __future__ import annotations

import json
from collections.abc import Callable

from .. import prompts
from ..calls import Messages
from ..records import Candidate, SeedResult
from .base import Run

__all__ = ["Repair", "SeedGeneration"]


class Repair:
    """The targeted re-ask of one writing stage, bounded by ``max_repairs``.

    Args:
        run: what the run's stages share.
        stage: the writing stage whose rejections are repaired.
        target: the seed's list of kept sentences the repairs extend.
        asked: the stage's last request per seed (its messages and the answer's text); each repair extends it.
    """

    def __init__(self, run: Run, stage: str, target: Callable[[SeedResult], list[Candidate]],
                 asked: dict[SeedResult, tuple[Messages, str]]) -> None:
        self.run, self.stage, self.target, self.asked = run, stage, target, asked

    async def __call__(self, r: SeedResult) -> None:
        target = self.target(r)
        for attempt in range(self.run.config.max_repairs):
            missing = self.run.config.num_augmented - len(target)
            bad = [c for s, c in r.rejected if s == self.stage and not c.repair_asked]
            if missing <= 0 or not bad or r not in self.asked:
                return
            for c in bad:
                c.repair_asked = True
            msgs = repair_messages(*self.asked[r], bad, missing)
            new, raw = await self.run.write(r, self.stage, msgs, missing, salt=f"repair{attempt}", keep=target)
            self.asked[r] = (msgs, raw)
            target.extend(c for c in new if c.ok)


def repair_messages(messages: Messages, answer: str, bad: list[Candidate], missing: int) -> Messages:
    """The conversation so far, then the rejected sentences with their reasons and how many to write."""
    problems = [{"sentence": c.raw, "rejected because": f"{c.reason}: {c.detail}"} for c in bad]
    return [*messages, {"role": "assistant", "content": answer},
            {"role": "user", "content": prompts.template("repair") + "\n\n" + json.dumps(problems, ensure_ascii=False)
             + f"\n\nWrite {missing} sentence(s)."}]


class SeedGeneration:
    """Writes ``num_augmented`` new versions of the seed (``r.variants``); :attr:`repair` re-asks for the rejected.

    Args:
        run: what the run's stages share.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.asked: dict[SeedResult, tuple[Messages, str]] = {}
        self.repair = Repair(run, "seed_generation", lambda r: r.variants, self.asked)

    async def __call__(self, r: SeedResult) -> None:
        n = self.run.config.num_augmented
        msgs = self.run.messages("seed_generation", sentence=r.seed.text, entities=r.seed.entities,
                                 task=f"Write {n} new versions.")
        new, raw = await self.run.write(r, "seed_generation", msgs, n)
        self.asked[r] = (msgs, raw)
        r.variants = [c for c in new if c.ok]
