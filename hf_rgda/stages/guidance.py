"""Guidance: an abstract guide to the seed (context, structure, entity roles, keywords), and its Guidance Refiner
loop (GR: a judge scores the guide on :data:`~hf_rgda.schemas.GR_RUBRIC`; a refiner improves it)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from .._exceptions import ParseError
from ..messages import Messages
from ..records import Judgement, SeedResult
from ..schemas import GR_RUBRIC, guidance_schema
from .base import Run, squeeze
from .judge import JudgeLoop
from .registry import Stage, judge_system, register, writer_system

__all__ = ["Guidance", "check_guidance"]


class Guidance:
    """The guidance stage's object of one run (the stage itself is one declared call, :data:`STAGE`): :meth:`loop`
    is its GR loop.

    Args:
        run: what the run's stages share.
    """

    def __init__(self, run: Run) -> None:
        self.run = run

    def loop(self) -> JudgeLoop:
        """The Guidance Refiner."""
        return JudgeLoop(self.run, JUDGE.name, REFINE.name, GR_RUBRIC, partial(judge_messages, self.run),
                         self._refine)

    async def _refine(self, r: SeedResult, verdict: Judgement, rnd: int) -> bool:
        msgs = self.run.messages(REFINE.name, sentence=r.seed.text, entities=r.seed.entities,
                                 guide=r.guidance, reviewer_feedback=verdict.feedback_text(GR_RUBRIC))
        data, _ = await self.run.caller.ask(r, REFINE.name, msgs, _schema(self.run, r), salt=rnd)
        new_guide = check_guidance(data)
        changed = squeeze(json.dumps(new_guide, sort_keys=True)) != squeeze(json.dumps(r.guidance, sort_keys=True))
        if not changed:  # judging the same guide again only samples the judge's noise: the loop ends on this verdict
            r.notes.append(f"GR refinement round {rnd} returned the guide unchanged: loop stopped")
        r.guidance = new_guide
        return changed


def build(run: Run, r: SeedResult) -> Messages:
    """The guidance request: the seed, its entities and the seed generation's sentences."""
    return run.messages("guidance", sentence=r.seed.text, entities=r.seed.entities,
                        other_phrasings=[c.raw.get("text", c.raw) for c in r.variants] or "none")


def judge_messages(run: Run, r: SeedResult) -> Messages:
    """What the GR judge reads: the seed, its entities and the guide."""
    return run.messages("guidance_judge", sentence=r.seed.text, entities=r.seed.entities, guide=r.guidance)


def _schema(run: Run, r: SeedResult) -> dict[str, Any]:
    """One entity role per entity of the seed at most: a small model otherwise lists the sentence's other nouns as
    entities ("Both parents" as a Disease), which misleads the composer and costs tokens."""
    return guidance_schema(run.checker.types, len(r.seed.spans))


def _land(r: SeedResult, guide: dict[str, Any]) -> None:
    r.guidance = guide


def check_guidance(data: Any) -> dict[str, Any]:
    """``data`` if it is a guide.

    Raises:
        ParseError: it lacks context, structure or entity_roles.
    """
    if not isinstance(data, dict) or not all(k in data for k in ("context", "structure", "entity_roles")):
        raise ParseError("guidance lacks context, structure or entity_roles", raw=json.dumps(data)[:2000])
    return data


STAGE = register(Stage("guidance", "guidance", system=writer_system, schema=_schema, build=build,
                       parse=lambda run, r, data: check_guidance(data), land=_land, state=lambda s: Guidance(s.run),
                       scripted=lambda world, messages, schema, params: world.guide()))
JUDGE = register(Stage("guidance_judge", "GR", system=judge_system, judge=True, step=lambda s: s["guidance"].loop(),
                       group=True, when=lambda cfg: cfg.uses_gr, loop="gr",
                       scripted=lambda world, messages, schema, params: world.judge("guidance_judge", GR_RUBRIC,
                                                                                     messages, schema)))
REFINE = register(Stage("guidance_refine", system=writer_system,
                        scripted=lambda world, messages, schema, params: world.guide(refined=True)))
