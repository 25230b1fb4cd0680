"""Scheduling: which stages a method runs, in which order, over which seeds.

Stages run *stage-major* by default: one stage for every seed of the batch before the next stage, so consecutive
calls share their static prompt prefix (llama.cpp reuses its KV state; API providers cache it); ``schedule="row"``
runs each seed through every stage first.
The stages are in :mod:`hf_rgda.stages`, the calls in :mod:`hf_rgda.calls`.
Here the per-seed policy of :mod:`hf_rgda._exceptions` is applied: an error in one seed's stage is that seed's
failure (or, in a judge loop, a note that ends the loop for it) and never the batch's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import traceback
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any

from ._exceptions import AuthenticationError, ConfigError, ProvisionError, RGDAError
from ._secrets import environment_secrets, redact
from .cache import ResponseCache
from .calls import Caller
from .checking import Checker, entity_mentions
from .checking.variety import Ledger
from .config import AugmentConfig
from .llm.base import LLM
from .records import Seed, SeedResult
from .stages import PLANS, STAGES, Run, Stages, Step, system_prompts
from .stages.base import squeeze
from .stages.composer import EntityPool

__all__ = ["STOPS_THE_RUN", "Pipeline"]

log = logging.getLogger(__name__)

#: errors that would fail every seed the same way: they stop the run (the policy in :mod:`hf_rgda._exceptions`)
STOPS_THE_RUN = (AuthenticationError, ConfigError, ProvisionError, ImportError)


class Pipeline:
    """Runs one augmentation method over a batch of seeds.

    Args:
        config: the run configuration.
        llm: the backend used for every stage (as in the paper).
        checker: the deterministic quality floor.
        cache: response cache, or None to call the backend every time.
        type_descriptions: optional ``{type: description}``, shown to the generating stages and in the entity
            verifier's options.
        confusers: the entity verifier's contrast categories instead of its defaults (see
            :mod:`hf_rgda.stages.categories`).
        attribution: WHERE's selector (``biorda``, ``where=True``).
        debate_llms: the debate agents' backends (default: ``llm``).
        mentions: ``{type: [entity text, ...]}``, the pool of the composer's entity hints (default: the seeds').
        progress: show a transient progress bar per stage.
        ledger: what the run accepted so far, for the variety pass over each batch's finished seeds
            (:mod:`hf_rgda.checking.variety`); default: this pipeline's own, kept across its runs.
        memo: what is read once and kept across the batches of one augmenter (the sense gate's threshold, the
            inventory's entity pool): :class:`~hf_rgda.RGDAAugmenter`'s, which makes a pipeline per batch; default: this
            pipeline's own.
    """

    def __init__(self, config: AugmentConfig, llm: LLM, checker: Checker, *, cache: ResponseCache | None = None,
                 type_descriptions: Mapping[str, str] | None = None, confusers: Sequence[str] | None = None,
                 attribution: Any = None, debate_llms: Sequence[LLM] = (),
                 mentions: Mapping[str, Sequence[str]] | None = None, progress: bool = False,
                 ledger: Ledger | None = None, memo: dict[str, Any] | None = None) -> None:
        config.check_attribution(attribution)
        config = config.for_backend(llm)  # representation "auto": the backend's own
        self.cfg, self.llm, self.checker, self.cache = config, llm, checker, cache
        self.attribution, self.debate_llms = attribution, list(debate_llms) or [llm]
        self.memo = memo if memo is not None else {}
        # the inventory's pool, kept with the memo: its index grows as draws read it, and a pool per batch was a
        # few thousand objects rebuilt and left to the garbage collector each batch
        kept = self.memo.get("entity_pool")
        if kept is None or kept[0] is not mentions:
            kept = self.memo["entity_pool"] = (mentions, EntityPool({t: list(v) for t, v in (mentions or {}).items()}))
        self.pool = kept[1]
        self.progress = progress  # a transient bar per stage inside a batch (a batch can take many minutes locally)
        self.ledger = ledger if ledger is not None else Ledger(config.max_entity_repeats)
        self.descriptions, self.confusers = dict(type_descriptions or {}), confusers
        notes = "\n".join(f"- {t}: {d}" for t, d in self.descriptions.items())
        self.systems = system_prompts(config, checker.types, notes)

    async def run(self, seeds: Sequence[Seed], examples: Sequence[Seed] = ()) -> list[SeedResult]:
        """Augment ``seeds``; ``examples`` are in-domain sentences shown as format examples (defaults to the seeds).

        A failed seed keeps no accepted sentence: what it had when its stage failed has not passed every stage (an
        entity verification or a debate review that raised, say), so it is withheld, and a note says how many. Then
        the variety pass takes the seeds' rows in order (:meth:`~hf_rgda.checking.Checker.vary`).
        """
        results = [SeedResult(s, skipped=self.cfg.skip_entityless and not s.spans) for s in seeds]
        todo = [r for r in results if not r.skipped]
        stages = self.stages(examples or seeds)
        for group in [todo] if self.cfg.schedule == "stage" else [[r] for r in todo]:
            await self._run_group(group, stages)
        for r in todo:
            if r.failure and r.accepted:
                r.notes.append(f"{len(r.accepted)} sentences withheld: the seed failed before they passed every stage")
                r.accepted = []
        self.checker.vary(todo, self.ledger, forbid_seed_entities=self.cfg.uses_guidance, keep=self.cfg.num_augmented)
        return results

    def stages(self, examples: Sequence[Seed] = ()) -> Stages:
        """What one run's stages are made from (each stage's object made at its first use, by its declared
        ``state``); ``examples`` as in :meth:`run`."""
        shown = [s for s in examples if s.spans] or list(examples)
        # entity-hint pool: the dataset's inventory, or else the mentions of this batch's own seeds
        pool = self.pool or EntityPool(entity_mentions([s.tokens for s in shown], [s.tags for s in shown]))
        run = Run(self.cfg, Caller(self.cfg, self.llm, self.cache), self.checker, self.systems, self.memo)
        # the entities earlier batches used up: the composer's hints leave them out (their rows would be rejected)
        spent = {t: {squeeze(x) for x in texts} for t, texts in self.ledger.spent().items()}
        return Stages(run, shown, pool, self.attribution, self.debate_llms, self.descriptions, self.confusers, spent)

    async def _run_group(self, rs: list[SeedResult], s: Stages) -> None:
        """The method's plan (:data:`~hf_rgda.stages.PLANS`) over one group of seeds (the batch, or one seed with
        ``schedule="row"``): each declared stage whose ``when`` holds (:meth:`Stages.step`), a group stage's pass
        over the group, any other's over each live seed."""
        for name in PLANS[self.cfg.method]:
            step = s.step(name)
            if step is None:
                continue
            await (step.run(rs, self.each) if STAGES[name].group else self.each(rs, step))

    async def each(self, rs: Sequence[SeedResult], step: Step, *, soft: bool = False) -> set[SeedResult]:
        """Run ``step`` on every live seed of ``rs``, concurrently.

        The per-seed policy of :mod:`hf_rgda._exceptions`: an error fails its seed or, with ``soft``, becomes a note on
        it; an unexpected exception (a bug, not an LLM answer) too, logged with its traceback. An error of
        :data:`STOPS_THE_RUN` cancels the other seeds' calls and propagates.

        Returns:
            The seeds a soft step stopped.
        """
        stopped: set[SeedResult] = set()
        todo = [r for r in rs if r.alive]

        async def guarded(r: SeedResult, done: Callable[[], None]) -> None:
            try:
                await step.run(r)
            except STOPS_THE_RUN:
                raise
            except Exception as err:  # noqa: BLE001 - the per-seed policy: one seed's failure is recorded on it
                msg = _failure(step.name, err, r)
                if soft:
                    r.notes.append(msg)
                    stopped.add(r)
                else:
                    r.failure = msg
            finally:
                done()

        with _progress(self.progress and bool(todo), len(todo), step.label) as done:
            await _all_or_none([guarded(r, done) for r in todo])
        return stopped


@contextlib.contextmanager
def _progress(show: bool, total: int, label: str) -> Iterator[Callable[[], None]]:
    """A transient progress bar (``done()`` advances it), or nothing."""
    if not show:
        yield lambda: None
        return
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=label, unit="seed", leave=False)
    try:
        yield lambda: bar.update(1)
    finally:
        bar.close()


async def _all_or_none(coros: list[Coroutine[Any, Any, None]]) -> None:
    """Run ``coros`` concurrently; if one raises, cancel the others and raise."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _failure(stage: str, err: Exception, r: SeedResult) -> str:
    """``"<stage>: <error>"``, redacted (the environment's keys and tokens, key-shaped text): it goes to the dataset's
    ``rgda_reason``, ``rejections.jsonl`` and the log. An unexpected error is logged with its frames (no locals)."""
    secrets = environment_secrets()
    if isinstance(err, RGDAError):
        return redact(f"{stage}: {type(err).__name__}: {err}", secrets)
    msg = redact(f"{stage}: unexpected {type(err).__name__}: {err}", secrets)
    frames = redact("".join(traceback.format_tb(err.__traceback__)).rstrip(), secrets)
    log.warning("seed %s failed: %s\n%s", r.seed.key, msg, frames)
    return msg
