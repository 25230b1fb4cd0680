"""Guidance: an abstract guide to the seed (context, structure, entity roles, keywords), and its Guidance Refiner
loop (GR: a judge scores the guide on :data:`~hf_rgda.schemas.GR_RUBRIC`; a refiner improves it)."""

from __future__ import annotations

import json
from typing import Any

from .._exceptions import ParseError
from ..calls import Messages
from ..records import Judgement, SeedResult
from ..schemas import GR_RUBRIC, guidance_schema
from .base import Run, squeeze
from .judge import JudgeLoop

__all__ = ["Guidance", "check_guidance"]


class Guidance:
    """Writes the guide (``r.guidance``); :meth:`loop` is its GR loop.

    Args:
        run: what the run's stages share.
    """

    def __init__(self, run: Run) -> None:
        self.run = run

    async def __call__(self, r: SeedResult) -> None:
        msgs = self.run.messages("guidance", sentence=r.seed.text, entities=r.seed.entities,
                                 other_phrasings=[c.raw.get("text", c.raw) for c in r.variants] or "none")
        data, _ = await self.run.caller.ask(r, "guidance", msgs, guidance_schema(self.run.checker.types))
        r.guidance = check_guidance(data)

    def loop(self) -> JudgeLoop:
        """The Guidance Refiner."""
        return JudgeLoop(self.run, "gr", "guidance_judge", "guidance_refine", GR_RUBRIC, self._judge_messages, self._refine)

    def _judge_messages(self, r: SeedResult) -> Messages:
        return self.run.messages("guidance_judge", sentence=r.seed.text, entities=r.seed.entities, guide=r.guidance)

    async def _refine(self, r: SeedResult, verdict: Judgement, rnd: int) -> bool:
        msgs = self.run.messages("guidance_refine", sentence=r.seed.text, entities=r.seed.entities,
                                 guide=r.guidance, reviewer_feedback=verdict.feedback_text(GR_RUBRIC))
        data, _ = await self.run.caller.ask(r, "guidance_refine", msgs, guidance_schema(self.run.checker.types),
                                            salt=rnd)
        new_guide = check_guidance(data)
        changed = squeeze(json.dumps(new_guide, sort_keys=True)) != squeeze(json.dumps(r.guidance, sort_keys=True))
        if not changed:  # judging the same guide again only samples the judge's noise: the loop ends on this verdict
            r.notes.append(f"GR refinement round {rnd} returned the guide unchanged: loop stopped")
        r.guidance = new_guide
        return changed


def check_guidance(data: Any) -> dict[str, Any]:
    """``data`` if it is a guide.

    Raises:
        ParseError: it lacks context, structure or entity_roles.
    """
    if not isinstance(data, dict) or not all(k in data for k in ("context", "structure", "entity_roles")):
        raise ParseError("guidance lacks context, structure or entity_roles", raw=json.dumps(data)[:2000])
    return data
