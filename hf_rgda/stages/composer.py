"""The composer: new sentences written from the guide, with the seed's entities swapped for same-type ones from the
dataset (the entity plan) and further same-type hints; and its Augmentation Calibrator loop (AC: a judge scores the
sentences on :data:`~hf_rgda.schemas.AC_RUBRIC`; a refiner revises them)."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any

from .._exceptions import AuthenticationError, BackendError, ParseError
from ..calls import derive_seed
from ..messages import Messages
from ..records import Candidate, Judgement, Seed, SeedResult
from ..schemas import AC_RUBRIC
from .base import Run, Step, scripted_sentences, squeeze, valid
from .judge import JudgeLoop
from .registry import Stage, judge_system, register, writer_system
from .seed_generation import Repair

__all__ = ["Composer", "EntityPlan", "EntityPool"]

#: ``(substitutes, hints)``: see :meth:`Composer.entity_plan`
EntityPlan = tuple[dict[str, str], dict[str, list[str]]]
#: substitutes and hints are drawn from the first this many mentions of a type (the most frequent)
DRAW_FROM = 500


def _walk(x: Any, text: Callable[[str], str]) -> Any:
    """``x`` (JSON data) with ``text`` applied to every string in it (a function of the module, not a closure that
    calls itself: that would be a reference cycle per call, left to the garbage collector)."""
    if isinstance(x, str):
        return text(x)
    if isinstance(x, dict):
        return {k: _walk(v, text) for k, v in x.items()}
    if isinstance(x, list):
        return [_walk(v, text) for v in x]
    return x


class EntityPool:
    """The mentions of each type, most frequent first, indexed by squeezed form and by text once per run and only
    as far as the draws read (a split's inventory can hold many thousands): a draw costs the same whatever its size,
    and copies the mentions it keeps in slices between the few it excludes instead of testing each.

    Args:
        mentions: ``{type: [entity text, ...]}``, most frequent first.
    """

    def __init__(self, mentions: Mapping[str, Sequence[str]]) -> None:
        self.mentions = mentions
        self._index: dict[str, _Index] = {}

    def __bool__(self) -> bool:
        return bool(self.mentions)

    def head(self, label: str, n: int, *, unless: Collection[str]) -> list[str]:
        """Those of the first ``n`` mentions of ``label`` whose squeezed form is not in ``unless``."""
        source = self.mentions.get(label, ())
        idx = self._indexed(label, n)
        cut = {i for sq in unless for i in idx.by_squeezed.get(sq, ()) if i < n}
        return _without(source[:n], cut, n)

    def first(self, label: str, n: int, *, unless: Collection[str], taken: Collection[str]) -> list[str]:
        """The first ``n`` mentions of ``label`` whose squeezed form is not in ``unless`` and that are not ``taken``."""
        source, size = self.mentions.get(label, ()), n + 2 * (len(unless) + len(taken))  # exclusions are few
        while True:
            idx = self._indexed(label, size)
            cut = {i for sq in unless for i in idx.by_squeezed.get(sq, ())}
            cut.update(i for m in taken for i in idx.by_text.get(m, ()))
            if size - len(cut) >= n or size >= len(source):  # the first n kept lie within what is indexed
                return _without(source, cut, n)
            size *= 2

    def _indexed(self, label: str, n: int) -> _Index:
        """The index of (at least) the first ``n`` mentions of ``label``."""
        idx = self._index.setdefault(label, _Index())
        source = self.mentions.get(label, ())
        for i in range(idx.size, min(n, len(source))):
            idx.by_squeezed.setdefault(squeeze(source[i]), []).append(i)
            idx.by_text.setdefault(source[i], []).append(i)
        idx.size = max(idx.size, min(n, len(source)))
        return idx


class _Index:
    """Where each squeezed form and each text occurs among the first ``size`` mentions of one type."""

    def __init__(self) -> None:
        self.size = 0
        self.by_squeezed: dict[str, list[int]] = {}
        self.by_text: dict[str, list[int]] = {}


def _without(source: Sequence[str], cut: Collection[int], n: int) -> list[str]:
    """The first ``n`` items of ``source`` not at a position in ``cut``."""
    out: list[str] = []
    start = 0
    for i in sorted(cut):
        if len(out) + i - start >= n:
            break
        out.extend(source[start:i])
        start = i + 1
    out.extend(source[start : start + n - len(out)])
    return out


def _shown(examples: Sequence[Seed], r: SeedResult, turn: int = 0) -> tuple[Seed, ...]:
    """The in-domain seed shown as the example item of ``r``'s ``turn``-th ask: the ``turn``-th other than ``r``'s
    own, counted round (the first ask's, nearly every call, found without listing the batch)."""
    others = (s for s in examples if s.key != r.seed.key)
    if not turn:
        first = next(others, None)
        return (first,) if first is not None else ()
    pool = list(others)
    return (pool[turn % len(pool)],) if pool else ()


def _accepted(r: SeedResult) -> list[Candidate]:
    return r.accepted


class Composer:
    """Writes ``num_augmented`` sentences from the guide (``r.accepted``); :attr:`repair` re-asks for the rejected,
    :meth:`loop` is the AC loop and :meth:`finish` applies ``reject_below_threshold``.

    Args:
        run: what the run's stages share.
        examples: in-domain seeds, one of which the composer sees as a format example.
        pool: where substitutes and hints come from.
        spent: per type, the squeezed texts no substitute or hint is drawn from (:class:`~.registry.Stages`).
    """

    def __init__(self, run: Run, examples: Sequence[Seed], pool: EntityPool,
                 spent: Mapping[str, Collection[str]] | None = None) -> None:
        self.run, self.examples, self.pool, self.spent = run, examples, pool, spent or {}
        self.asked: dict[SeedResult, tuple[Messages, str]] = {}
        self.plans: dict[SeedResult, EntityPlan] = {}
        # the repair reads the examples, not the composer: a bound method here would make the composer a reference
        # cycle, and every seed of the batch it holds wait for the garbage collector instead of its last reference
        self.repair = Repair(run, "composer", _accepted, self.asked, shown=functools.partial(_shown, examples))

    def shown(self, r: SeedResult) -> tuple[Seed, ...]:
        """The other seed the composer's request shows as its example item (none when the run has no other)."""
        return _shown(self.examples, r)

    async def __call__(self, r: SeedResult) -> None:
        cfg = self.run.config
        n = cfg.num_augmented + (cfg.spare_sentences or 0)  # the variety pass keeps the first num_augmented
        msgs = self.request(r, n)
        new, raw = await self.run.write(r, "composer", msgs, n, shown=self.shown(r))
        self.asked[r] = (msgs, raw)
        r.accepted = [c for c in new if c.ok]

    def request(self, r: SeedResult, n: int, shown: Sequence[Seed] | None = None) -> Messages:
        """The composer's request for ``n`` sentences: the guide, the entity sections, the example item (``shown``;
        default :meth:`shown`)."""
        cfg = self.run.config
        sections: dict[str, Any] = self.entity_sections(r)
        for example in self.shown(r) if shown is None else shown:
            sections["example item from this dataset"] = example.as_item(cfg.representation)
        if r.attribution is not None:
            words = [r.seed.tokens[i] for i in r.attribution["selected"]]
            sections["words to replace (keep the rest of the original sentence's skeleton)"] = words or "none"
        sections["task"] = f"Write {n} new sentences."
        return self.run.messages("composer", **sections)

    async def top_up(self, r: SeedResult) -> None:
        """Fresh asks for a seed the gates left short of ``num_augmented``, ``top_up`` times at most: the composer's
        request again, for the missing sentences and the spare ones, sampled anew (not a conversation about the
        rejected ones, whose faults the local model repeats: docs/decisions/top-up.md); from the second ask on it
        shows another seed as its example item (where the batch has another), as a seed left short twice is mostly
        one whose sample keeps going wrong the same way. The new sentences must not repeat the kept ones; the rule
        checker reads each ask's sentences before the next is made, the gates after the stage in the plan (sense,
        entity verification, completeness) read them all once the asks are done. An ask that fails (an unreadable answer, a
        backend error) leaves a note and the seed its rows, and no further ask is made, unless the error stops
        the run."""
        cfg = self.run.config
        for turn in range(int(cfg.top_up or 0)):
            missing = cfg.num_augmented - len(valid(r))
            if missing <= 0 or r not in self.asked:
                return
            n = missing + (cfg.spare_sentences or 0)
            shown = _shown(self.examples, r, turn)
            try:  # its calls and rejections are counted under its own name; the first ask's salt is the stage's own
                # (a text salt: a number would count the ask as a judge round)
                new, _ = await self.run.write(r, "composer_top_up", self.request(r, n, shown), n, keep=valid(r),
                                              shown=shown, salt=str(turn) if turn else "")
            except AuthenticationError:
                raise  # it would fail every seed the same way: it stops the run (hf_rgda.pipeline.STOPS_THE_RUN)
            except (ParseError, BackendError) as err:
                r.notes.append(f"top-up failed ({type(err).__name__}: {err}); the seed keeps its {len(valid(r))} rows")
                return
            r.accepted += [c for c in new if c.ok]

    # ---------------------------------------------------------------- what the composer sees of the seed
    def entity_sections(self, r: SeedResult) -> dict[str, Any]:
        """The guide as the composer and its revisions see it, then either the never-reuse list (entity_hints=0, or
        nothing to draw from: the paper's instruction) or the further same-type entity hints."""
        subs, hints = self.entity_plan(r)
        sections: dict[str, Any] = {"guide": self.view(r, r.guidance)}
        if not subs:
            sections["original entity texts (never reuse)"] = [e["text"] for e in r.seed.entities] or "none"
        if hints:
            sections["more entities of these types from this dataset (vary the entities across sentences)"] = hints
        return sections

    def refine_context(self, r: SeedResult) -> dict[str, Any]:
        """What the composer's revisions see of the seed: the original in the composer's view, then its sections."""
        return {"original": self.view(r, r.seed.as_item(self.run.config.representation)), **self.entity_sections(r)}

    def view(self, r: SeedResult, data: Any) -> Any:
        """``data`` with each of the seed's entity texts replaced by its substitute (see :meth:`entity_plan`). A
        small composer copies whatever entity it is shown, the seed's own or a placeholder alike; shown a real, new
        one, its copies are still correct new training sentences."""
        subs = self.entity_plan(r)[0]
        if not subs:
            return data
        firsts = {r.seed.tokens[s.start].lower() for s in r.seed.spans}
        pattern = functools.cache(lambda: _entity_pattern(r.seed))  # compiled at the first text that may name one

        def text(x: str) -> str:
            if not _may_name(x, firsts):
                return x
            return pattern().sub(lambda m: subs.get(squeeze(m.group(0)), m.group(0)), x)

        return _walk(data, text)

    def entity_plan(self, r: SeedResult) -> EntityPlan:
        """Computed once per seed, with random draws fixed per seed sentence; both empty when entity_hints is 0.

        Returns:
            ``substitutes``: one new entity per distinct seed entity text (keyed by its squeezed lower-case form),
            same type, from the pool; ``hints``: up to ``entity_hints`` further mentions per seed type, never the
            seed's own nor a substitute.
        """
        if r not in self.plans:
            self.plans[r] = self._plan(r.seed)
        return self.plans[r]

    def _plan(self, seed: Seed) -> EntityPlan:
        cfg = self.run.config
        subs: dict[str, str] = {}
        hints: dict[str, list[str]] = {}
        if not (cfg.entity_hints and seed.spans):
            return subs, hints
        own = {squeeze(e["text"]) for e in seed.entities}
        rng = random.Random(derive_seed(cfg.seed, seed.key, "substitutes"))
        for e in seed.entities:
            key = squeeze(e["text"])
            if key in subs:
                continue
            pool = self.pool.first(e["type"], DRAW_FROM, unless=own | set(self.spent.get(e["type"], ())),
                                   taken=set(subs.values()))
            if pool:
                subs[key] = rng.choice(pool)
        used = own | {squeeze(v) for v in subs.values()}
        rng = random.Random(derive_seed(cfg.seed, seed.key, "hints"))
        for t in dict.fromkeys(e["type"] for e in seed.entities):
            pool = self.pool.head(t, DRAW_FROM, unless=used | set(self.spent.get(t, ())))
            if pool:
                hints[t] = rng.sample(pool, min(cfg.entity_hints, len(pool)))
        return subs, hints

    # ---------------------------------------------------------------- the Augmentation Calibrator
    def loop(self, after_refine: Step | None = None) -> JudgeLoop:
        """The Augmentation Calibrator (for seeds with valid sentences); ``after_refine`` runs on the refined seeds
        before each new verdict."""
        return JudgeLoop(self.run, JUDGE.name, REFINE.name, AC_RUBRIC, partial(judge_messages, self.run),
                         self._refine, applies=lambda r: bool(valid(r)), after_refine=after_refine)

    async def _refine(self, r: SeedResult, verdict: Judgement, rnd: int) -> bool:
        current = valid(r)
        n = max(self.run.config.num_augmented, len(current))  # with spare sentences a seed may hold more
        msgs = self.run.messages(REFINE.name, **self.refine_context(r), **{
            "current sentences": [c.raw for c in current], "reviewer feedback": verdict.feedback_text(AC_RUBRIC),
            "task": f"Write {n} revised sentences."})
        new = [c for c in (await self.run.write(r, REFINE.name, msgs, n, salt=rnd))[0] if c.ok]
        if sorted(squeeze(" ".join(c.tokens)) for c in new) == sorted(squeeze(" ".join(c.tokens)) for c in current):
            r.notes.append(f"AC refinement round {rnd} returned the sentences unchanged: loop stopped")
            r.superseded += len(new)
            return False
        if len(new) < len(current):
            r.notes.append(f"AC refinement round {rnd} kept: {len(new)} valid < {len(current)} current")
            r.superseded += len(new)
            return False
        r.superseded += len(current)
        r.accepted = new
        return True

    async def finish(self, r: SeedResult) -> None:
        """The seed's final sentences: its valid ones, or none if ``reject_below_threshold`` and the last AC verdict
        is below the threshold."""
        cfg, final, ac = self.run.config, valid(r), r.judgements.get(JUDGE.name, [])
        if cfg.reject_below_threshold and cfg.uses_ac and ac and ac[-1].score < cfg.threshold_for(ac[-1].method):
            for c in final:
                r.rejected.append((JUDGE.name, c.reject("below_threshold", f"final AC score {ac[-1].score}")))
            final = []
        r.accepted = final


def _may_name(text: str, firsts: Collection[str]) -> bool:
    """Whether :func:`_entity_pattern` could match in ``text``, given the seed's entities' first tokens in lower case:
    False only when both are ASCII and no first token occurs in ``text`` in any case (compiling the pattern costs more
    than the rest of the view)."""
    if not text.isascii() or not all(f.isascii() for f in firsts):
        return True
    low = text.lower()
    return any(f in low for f in firsts)


def _entity_pattern(seed: Seed) -> re.Pattern[str]:
    """The seed's entity texts, longest first, matched case-insensitively with any spacing between their tokens."""
    texts = sorted({tuple(seed.tokens[s.start : s.end]) for s in seed.spans}, key=lambda t: -sum(map(len, t)))
    alts = [r"\s*".join(re.escape(tok) for tok in t) for t in texts]
    return re.compile(r"(?<!\w)(?:" + "|".join(alts) + r")(?!\w)", re.IGNORECASE)


def judge_messages(run: Run, r: SeedResult) -> Messages:
    """What the AC judge reads: the seed, its entities and the guide, as the GR judge reads them (so a backend that
    reuses its KV prefix reads them once for both, :data:`~.judge.SHARED_RATING`), then the seed's valid sentences."""
    return run.messages("composition_judge", sentence=r.seed.text, entities=r.seed.entities, guide=r.guidance,
                        new_sentences=[c.raw for c in valid(r)])


STAGE = register(Stage("composer", "compose", system=writer_system,
                       state=lambda s: Composer(s.run, s.shown, s.pool, s.spent),
                       scripted=scripted_sentences))
register(Stage("composer_repair", "repair (composer)", step=lambda s: s["composer"].repair))
register(Stage("composer_top_up", "top up (composer)", step=lambda s: s["composer"].top_up,
               when=lambda cfg: bool(cfg.top_up), scripted=scripted_sentences))  # the composer's request again
JUDGE = register(Stage("composition_judge", "AC", system=judge_system, judge=True, group=True,
                       step=lambda s: s["composer"].loop(after_refine=s.step("entity_verify")),
                       when=lambda cfg: cfg.uses_ac, loop="ac",
                       scripted=lambda world, messages, schema, params: world.judge("composition_judge", AC_RUBRIC,
                                                                                     messages, schema)))
REFINE = register(Stage("composition_refine", system=writer_system, scripted=scripted_sentences))
register(Stage("finish", "finish", step=lambda s: s["composer"].finish))
