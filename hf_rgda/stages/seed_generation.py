"""Seed generation (new versions of the seed sentence), and the targeted repair re-ask that the composer shares:
the sentences the checker rejected go back into the stage's conversation, with their reasons."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from .. import prompts
from ..messages import Messages, follow_up
from ..records import Candidate, Seed, SeedResult
from .base import Run, scripted_sentences
from .registry import Stage, register, writer_system

__all__ = ["Repair", "SeedGeneration"]


class Repair:
    """The targeted re-ask of one writing stage, bounded by ``max_repairs``.

    Args:
        run: what the run's stages share.
        stage: the writing stage whose rejections are repaired.
        target: the seed's list of kept sentences the repairs extend.
        asked: the stage's last request per seed (its messages and the answer's text); each repair extends it.
        new_entities: as for :meth:`Run.write <hf_rgda.stages.base.Run.write>`.
        shown: the other seeds the stage's request showed, per seed (as ``shown`` of ``Run.write``; the re-ask
            extends that request).
    """

    def __init__(self, run: Run, stage: str, target: Callable[[SeedResult], list[Candidate]],
                 asked: dict[SeedResult, tuple[Messages, str]], *, new_entities: bool = True,
                 shown: Callable[[SeedResult], Sequence[Seed]] = lambda r: ()) -> None:
        self.run, self.stage, self.target, self.asked = run, stage, target, asked
        self.new_entities, self.shown = new_entities, shown

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
            new, raw = await self.run.write(r, self.stage, msgs, missing, salt=f"repair{attempt}", keep=target,
                                            new_entities=self.new_entities, shown=self.shown(r))
            self.asked[r] = (msgs, raw)
            target.extend(c for c in new if c.ok)


def repair_messages(messages: Messages, answer: str, bad: list[Candidate], missing: int) -> Messages:
    """The conversation so far, then the rejected sentences with their reasons and how many to write."""
    problems = [{"sentence": c.raw, "rejected because": f"{c.reason}: {c.detail}"} for c in bad]
    return follow_up(messages, answer, prompts.template("repair") + "\n\n" + json.dumps(problems, ensure_ascii=False)
                     + f"\n\nWrite {missing} sentence(s).")


class SeedGeneration:
    """Writes ``num_augmented`` new versions of the seed (``r.variants``); :attr:`repair` re-asks for the rejected.

    Args:
        run: what the run's stages share.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.asked: dict[SeedResult, tuple[Messages, str]] = {}
        self.repair = Repair(run, "seed_generation", lambda r: r.variants, self.asked, new_entities=False)

    async def __call__(self, r: SeedResult) -> None:
        msgs = build(self.run, r)
        new, raw = await self.run.write(r, STAGE.name, msgs, self.run.config.num_augmented, new_entities=False)
        self.asked[r] = (msgs, raw)
        r.variants = [c for c in new if c.ok]


def build(run: Run, r: SeedResult) -> Messages:
    """The seed generation request: the seed, its entities, how many versions."""
    return run.messages("seed_generation", sentence=r.seed.text, entities=r.seed.entities,
                        task=f"Write {run.config.num_augmented} new versions.")


async def _accept_variants(rs: Sequence[SeedResult], each: object) -> None:
    """``naive``: the seed generation's sentences are the method's."""
    for r in rs:
        r.accepted = r.variants


STAGE = register(Stage("seed_generation", "seed generation", system=writer_system,
                       state=lambda s: SeedGeneration(s.run), scripted=scripted_sentences))
register(Stage("seed_generation_repair", "repair (seed generation)", step=lambda s: s["seed_generation"].repair))
register(Stage("variants", "variants", step=lambda s: _accept_variants, group=True))
