"""The stage table: every stage declares itself once, as a :class:`Stage` passed to :func:`register` (each stage
module registers its own), and :data:`PLANS`, the methods' stages in order, is the one place that names them.

A declaration says what the pipeline, the call seam and the trace need to know of a stage: its name (its calls'
name: prompt, derived seeds, accounting, a failure's prefix), how its system prompt is rendered, and either

- a one-call stage: its ``schema``, a pure ``build`` (the run's context and a seed -> the messages), a pure ``parse``
  (the answer -> a typed record) and ``land`` (how the record lands in the seed's result); :func:`call_step` is its
  pass; or
- ``step``: the pass itself, made from the run's stage objects (:class:`~hf_rgda.pipeline.Stages`), for a stage
  that is more than one call (a judge loop, the debate, the entity verifier) or none (WHERE).

A record the seed's result has no field for lands in ``SeedResult.records[name]``; with ``record`` (its dataclass)
it rides in the trace under the stage's name and is read back typed.

Example, a one-call stage (a test does this end to end: ``tests/test_stage_recipe.py``):
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Tone:
    ...     tone: str
    >>> toy = Stage("tone", "tone", build=lambda run, r: chat("Say the tone.", r.seed.text),
    ...             schema=lambda run, r: {"type": "object"}, parse=lambda run, r, data: Tone(str(data["tone"])),
    ...             record=Tone)
    >>> toy.land is None  # lands in ``r.records["tone"]``
    True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import prompts
from ..config import AugmentConfig
from ..messages import Messages, chat
from ..records import RECORD_TYPES, SeedResult

__all__ = ["PLANS", "STAGES", "Stage", "always", "call_step", "chat", "judge_system", "register", "system_prompts",
           "writer_system"]

#: a pass over one seed
PerSeed = Callable[[SeedResult], Awaitable[None]]
#: ``system(stage_name, common)``: a stage's system prompt from the run's common values (domain, types, ...)
System = Callable[[str, Mapping[str, str]], str]


def always(config: AugmentConfig) -> bool:
    """The condition of a stage that runs whenever its method's plan names it."""
    return True


def writer_system(name: str, common: Mapping[str, str]) -> str:
    """The system prompt of a stage that writes (sentences or a guide): ``prompts/<name>.md`` with the domain, types,
    type notes and output format."""
    return prompts.render(name, **common)


def judge_system(name: str, common: Mapping[str, str]) -> str:
    """The system prompt of a judge: ``prompts/<name>.md`` with the types."""
    return prompts.render(name, types=common["types"])


@dataclass(frozen=True)
class Stage:
    """One stage, declared once (module docstring).

    Attributes:
        name: the stage's name: its calls', its prompt's, its failures' and its record's.
        label: the progress bar's label of its pass.
        system: how its system prompt is rendered (:func:`writer_system`, :func:`judge_system`), or None.
        schema, build, parse, land: a one-call stage's answer schema, pure message builder, pure parser and where
            the record lands (None: ``r.records[name]``).
        judge: its calls sample at the judges' temperature.
        record: the record's dataclass, to read it back from the trace.
        step: ``step(stages)`` -> its pass, for a stage that is not one call; with ``group``, the pass is
            ``pass(rs, each)`` over a group of seeds.
        when: whether it runs under a configuration (default: whenever its method's plan names it).
    """

    name: str
    label: str = ""
    system: System | None = None
    schema: Callable[[Any, SeedResult], dict[str, Any]] | None = None
    build: Callable[[Any, SeedResult], Messages] | None = None
    parse: Callable[[Any, SeedResult, Any], Any] | None = None
    land: Callable[[SeedResult, Any], None] | None = None
    judge: bool = False
    record: type | None = None
    step: Callable[[Any], Any] | None = None
    group: bool = False
    when: Callable[[AugmentConfig], bool] = field(default=always)

    async def ask(self, run: Any, r: SeedResult, *, salt: object = "") -> Any:
        """One call of this stage for seed ``r`` through the run's call seam: the parsed record."""
        assert self.build is not None and self.schema is not None and self.parse is not None
        data, _ = await run.caller.ask(r, self.name, self.build(run, r), self.schema(run, r), judge=self.judge,
                                       salt=salt)
        return self.parse(run, r, data)


#: every declared stage, by name
STAGES: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    """Declare ``stage`` (a later declaration of the same name replaces it); returns it."""
    STAGES[stage.name] = stage
    if stage.record is not None:
        RECORD_TYPES[stage.name] = stage.record
    return stage


def call_step(stage: Stage, run: Any) -> PerSeed:
    """The pass of a one-call stage: ask, parse, land."""
    async def step(r: SeedResult) -> None:
        record = await stage.ask(run, r)
        if stage.land is not None:
            stage.land(r, record)
        else:
            r.records[stage.name] = record

    return step


def system_prompts(config: AugmentConfig, types: Sequence[str], type_notes: str = "") -> dict[str, str]:
    """The system prompt of every declared stage that has one (the debate renders its own, one per persona)."""
    common = {"domain": config.domain or "the domain of the given sentence", "types": ", ".join(types),
              "type_notes": type_notes, "output_format": prompts.template(f"{config.representation}_format")}
    return {s.name: s.system(s.name, common) for s in STAGES.values() if s.system is not None}


#: the guided methods' seed generation writes the guidance stage's "other phrasings" (context, not rows), so its
#: rejected sentences are not re-asked there: the repair would buy context with a fifth of the method's tokens
#: (benchmarks/results/local_profile/local_profile.json); naive, whose rows they are, repairs them
_GUIDED = ("where", "seed_generation", "guidance", "guidance_judge", "composer", "composer_repair", "sense",
           "entity_verify", "mention_check", "composition_judge", "debate_review", "sense", "entity_verify",
           "mention_check", "finish")

#: each method's stages, in order (a stage whose ``when`` fails the configuration is passed over)
PLANS: dict[str, tuple[str, ...]] = {
    "naive": ("where", "seed_generation", "seed_generation_repair", "variants", "sense", "entity_verify",
              "mention_check"),
    "biorda": ("where", "debate", "sense", "entity_verify", "mention_check"),
    **dict.fromkeys(("gda", "rgda", "rgda-no-gr", "rgda-no-ac"), _GUIDED),
}
