"""The stage table: every stage declares itself once, as a :class:`Stage` passed to :func:`register` in its own
module (every module of :mod:`hf_rgda.stages` is imported, none named by hand; a stage package elsewhere is read
by :func:`load`), and :data:`PLANS`, the methods' stages in order, is the one place that names the built-in ones
(a loaded stage places itself: ``after``, ``methods``).

A declaration says what the pipeline, the call seam, the trace and the scripted world need to know of a stage: its
name (its calls', its prompt's ``prompts/<name>.md``, derived seeds, accounting, a failure's prefix), how its system
prompt is rendered, its answer in the scripted world (``scripted``), and its pass, one of

- a one-call stage: its ``schema``, a pure ``build`` (the run's context and a seed -> the messages), a pure ``parse``
  (the answer -> a typed record) and ``land`` (how the record lands in the seed's result); :func:`call_step` is its
  pass;
- ``state``: the stage's object for one run (made once per run from the run's :class:`Stages`), itself the pass,
  for a stage that is more than one call (a writer checking its sentences, the debate, the entity verifier) or none
  (WHERE);
- ``step``: a pass made from another stage's object (a writer's repair re-ask, a judge loop, ...).

A record the seed's result has no field for lands in ``SeedResult.records[name]``; with ``record`` (its dataclass)
it rides in the trace under the stage's name and is read back typed. A judge stage's verdicts land in
``SeedResult.judgements[name]``; its ``loop`` is the short name the outputs give them (``gr``: the trace's key, the
row column ``rgda_gr_scores``, the summary's ``judge_rounds`` and ``judge_scores``).

Example, a one-call stage (``tests/test_recipes.py`` loads one from a folder, with its prompt, end to end):
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Tone:
    ...     tone: str
    >>> toy = Stage("tone", "tone", build=lambda run, r: run.messages("tone", sentence=r.seed.text),
    ...             schema=lambda run, r: {"type": "object"}, parse=lambda run, r, data: Tone(str(data["tone"])),
    ...             record=Tone, scripted=lambda world, messages, schema, params: {"tone": "plain"})
    >>> toy.land is None  # lands in ``r.records["tone"]``
    True
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import prompts
from ..config import AugmentConfig
from ..messages import Messages
from ..records import JUDGE_KEYS, RECORD_TYPES, Seed, SeedResult
from .base import Step

__all__ = ["PLANS", "STAGES", "Stage", "Stages", "always", "call_step", "judge_system", "judges", "load",
           "register", "system_prompts", "unload", "unregister", "writer_system"]

#: a pass over one seed
PerSeed = Callable[[SeedResult], Awaitable[None]]
#: ``system(stage_name, common)``: a stage's system prompt from the run's common values (domain, types, ...)
System = Callable[[str, Mapping[str, str]], str]
#: ``scripted(world, messages, schema, params)``: the scripted world's answer to one of the stage's calls
Scripted = Callable[[Any, Sequence[Mapping[str, str]], Any, Mapping[str, Any]], Any]


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
        state: ``state(stages)`` -> the stage's object for one run (:meth:`Stages.__getitem__`), which is its pass
            unless ``step`` or ``build`` says otherwise.
        step: ``step(stages)`` -> its pass, made from the run's stage objects.
        group: the pass is ``pass(rs, each)`` over a group of seeds, not one seed's.
        when: whether it runs under a configuration (default: whenever its method's plan names it).
        scripted: its answer in the scripted world (:class:`hf_rgda.testing.FakeWorld`), from the world's
            makings (``world.sentences(schema)``, ...).
        loop: a judge stage's short name in the outputs (``"gr"``, ``"ac"``); empty for any other stage.
        after, methods: where a stage that :data:`PLANS` does not name runs: after the first ``after`` of the plans
            of ``methods`` (default: every plan that names ``after``).
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
    state: Callable[[Stages], Any] | None = None
    step: Callable[[Stages], Any] | None = None
    group: bool = False
    when: Callable[[AugmentConfig], bool] = field(default=always)
    scripted: Scripted | None = None
    loop: str = ""
    after: str = ""
    methods: tuple[str, ...] = ()

    async def ask(self, run: Any, r: SeedResult, *, salt: object = "") -> Any:
        """One call of this stage for seed ``r`` through the run's call seam: the parsed record."""
        assert self.build is not None and self.schema is not None and self.parse is not None
        data, _ = await run.caller.ask(r, self.name, self.build(run, r), self.schema(run, r), judge=self.judge,
                                       salt=salt)
        return self.parse(run, r, data)


#: every declared stage, by name
STAGES: dict[str, Stage] = {}

#: the guided methods' seed generation writes the guidance stage's "other phrasings" (context, not rows), so its
#: rejected sentences are not re-asked there: the repair would buy context with a fifth of the method's tokens
#: (benchmarks/results/local_profile/local_profile.json); naive, whose rows they are, repairs them
_GUIDED = ("where", "seed_generation", "guidance", "guidance_judge", "composer", "composer_repair", "sense",
           "entity_verify", "mention_check", "composer_top_up", "composition_judge", "debate_review", "sense",
           "entity_verify", "mention_check", "finish")

#: each method's stages, in order (a stage whose ``when`` fails the configuration is passed over)
PLANS: dict[str, tuple[str, ...]] = {
    "naive": ("where", "seed_generation", "seed_generation_repair", "variants", "sense", "entity_verify",
              "mention_check"),
    "biorda": ("where", "debate", "sense", "entity_verify", "mention_check"),
    **dict.fromkeys(("gda", "rgda", "rgda-no-gr", "rgda-no-ac"), _GUIDED),
}


def register(stage: Stage) -> Stage:
    """Declare ``stage`` (a later declaration of the same name replaces it) and, with ``after``, place it in the
    plans; returns it."""
    STAGES[stage.name] = stage
    if stage.record is not None:
        RECORD_TYPES[stage.name] = stage.record
    if stage.loop:
        JUDGE_KEYS[stage.name] = stage.loop
    if stage.after:
        for method in stage.methods or [m for m, plan in PLANS.items() if stage.after in plan]:
            plan = PLANS[method]
            if stage.name not in plan:
                at = plan.index(stage.after) + 1
                PLANS[method] = (*plan[:at], stage.name, *plan[at:])
    return stage


def unregister(name: str) -> None:
    """Forget the stage ``name``: its declaration, its record type and its places in the plans."""
    STAGES.pop(name, None)
    RECORD_TYPES.pop(name, None)
    JUDGE_KEYS.pop(name, None)
    for method, plan in PLANS.items():
        PLANS[method] = tuple(s for s in plan if s != name)


def judges() -> list[Stage]:
    """The judge stages (those with a ``loop``), in the order the plans run them."""
    order = list(dict.fromkeys(s for plan in PLANS.values() for s in plan))
    found = [s for s in STAGES.values() if s.loop]
    return sorted(found, key=lambda s: order.index(s.name) if s.name in order else len(order))


#: a folder :func:`load` read -> the stages its modules declared and the modules' names
_LOADED: dict[Path, tuple[list[str], list[str]]] = {}


def load(folder: str | Path) -> list[str]:
    """Read a stage package outside this one: import every module of ``folder`` (``*.py``, not ``_*.py``), each
    declaring its stages with :func:`register`, and read its ``*.md`` files as prompt templates. Returns the names
    of the stages declared. A second load of the same folder does nothing.

    Loaded stages live in this process: a ``datasets.map(num_proc=...)`` worker started by fork has them, one
    started afresh (spawn, a Ray worker) loads them itself.

    Raises:
        ValueError: ``folder`` is no folder, or a prompt there has the name of a known one.
    """
    path = Path(folder).resolve()
    if path in _LOADED:
        return list(_LOADED[path][0])
    if not path.is_dir():
        raise ValueError(f"{folder}: no such folder of stage modules")
    prompts.add_folder(path)
    before, modules = set(STAGES), []
    for file in sorted(path.glob("*.py")):
        if file.name.startswith("_"):
            continue
        name = f"hf_rgda_loaded_stages.{path.name}.{file.stem}"
        spec = importlib.util.spec_from_file_location(name, file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        modules.append(name)
        spec.loader.exec_module(module)
    declared = [s for s in STAGES if s not in before]
    _LOADED[path] = (declared, modules)
    return declared


def unload(folder: str | Path) -> None:
    """Undo :func:`load`: its stages unregistered, its prompts and modules forgotten."""
    path = Path(folder).resolve()
    declared, modules = _LOADED.pop(path)
    for name in declared:
        unregister(name)
    for name in modules:
        sys.modules.pop(name, None)
    prompts.remove_folder(path)


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


@dataclass
class Stages:
    """What the stages of one run are made from, and their objects, each made once, at first use (``stages[name]``,
    by the stage's ``state``): also the way to call one stage on its own, e.g. a judge:
    ``await pipeline.stages()["guidance"].loop().judge(r, 1)``.

    Attributes:
        run: what every stage of the run shares (:class:`~hf_rgda.stages.base.Run`).
        shown: in-domain seeds a writer may show as examples.
        pool: the pool of the composer's entity hints.
        attribution: WHERE's selector.
        debate_llms: the debate agents' backends.
        descriptions, confusers: the entity types' descriptions and the entity verifier's contrast categories.
        spent: per type, the squeezed texts of the new entities the run has accepted as often as
            ``max_entity_repeats`` allows (:meth:`Ledger.spent <hf_rgda.checking.variety.Ledger.spent>`): the
            composer draws no substitute or hint among them, as the variety pass would reject its row.
    """

    run: Any
    shown: Sequence[Seed] = ()
    pool: Any = None
    attribution: Any = None
    debate_llms: Sequence[Any] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)
    confusers: Sequence[str] | None = None
    spent: Mapping[str, Collection[str]] = field(default_factory=dict)
    _states: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getitem__(self, name: str) -> Any:
        """The object of stage ``name`` for this run (made by its ``state`` at the first call)."""
        if name not in self._states:
            make = STAGES[name].state
            if make is None:
                raise KeyError(f"stage {name!r} declares no state")
            self._states[name] = make(self)
        return self._states[name]

    def step(self, name: str) -> Step | None:
        """The pass of the declared stage ``name`` (over one seed, or with ``group`` over a group of seeds:
        ``run(rs, each)``), or None where its ``when`` rules it out under the run's configuration: the one place
        that asks."""
        stage = STAGES[name]
        if not stage.when(self.run.config):
            return None
        if stage.step is not None:
            run = stage.step(self)
        else:  # a declared call, else the stage's object
            run = call_step(stage, self.run) if stage.build is not None else self[name]
        return Step(name, stage.label, run)
