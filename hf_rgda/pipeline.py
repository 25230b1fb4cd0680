"""The R-GDA pipeline: seed generation, guidance, Guidance Refiner loop, composer, Augmentation Calibrator loop.

Each stage is build-messages -> call -> parse. Stages run *stage-major* by default: one stage for every seed
of the batch before the next stage, so consecutive calls share their static prompt prefix (llama.cpp reuses
its KV state; API providers cache it). Every call goes through the on-disk response cache. A library error
on one seed (bad JSON, backend failure) is recorded on that seed and never stops the batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import random
import re
import statistics
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any

from . import prompts
from ._exceptions import ConfigError, ParseError, RGDAError
from ._secrets import redact
from .cache import ResponseCache, cache_key
from .checking import Checker, decode_sentence, entity_mentions, parse_json
from .config import AugmentConfig
from .debate import run_debate, run_review
from .llm.base import LLM, Completion
from .records import Candidate, Judgement, Seed, SeedResult
from .schemas import AC_RUBRIC, GR_RUBRIC, guidance_schema, judge_schema, sentences_schema

__all__ = ["Judgement", "Pipeline", "SeedResult", "derive_seed"]

log = logging.getLogger(__name__)


def derive_seed(base: int, *parts: object) -> int:
    """A per-call seed that depends only on the run seed and the call's identity, not on scheduling."""
    digest = hashlib.sha256(json.dumps([base, *map(str, parts)]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class Pipeline:
    """Runs one augmentation method over a batch of seeds.

    Args:
        config: the run configuration.
        llm: the backend used for every stage (as in the paper).
        checker: the deterministic quality floor.
        cache: response cache, or None to call the backend every time.
        type_notes: optional text describing the entity types, shown to generating stages.
    """

    def __init__(self, config: AugmentConfig, llm: LLM, checker: Checker, *, cache: ResponseCache | None = None,
                 type_notes: str = "", attribution: Any = None, debate_llms: Sequence[LLM] = (),
                 mentions: Mapping[str, Sequence[str]] | None = None, progress: bool = False) -> None:
        self.cfg, self.llm, self.checker, self.cache = config, llm, checker, cache
        self.progress = progress  # a transient bar per stage inside a batch (a batch can take many minutes locally)
        self.mentions = {t: list(v) for t, v in (mentions or {}).items()}
        if config.uses_attribution and attribution is None:
            raise ConfigError(f"method {config.method!r}{' with where=True' if config.where else ''} needs an "
                              "attribution model (attribution_model=..., see hf_rgda.attribution)")
        self.attribution = attribution
        self.debate_llms = list(debate_llms) or [llm]
        types = checker.types
        common = {"domain": config.domain or "the domain of the given sentence", "types": ", ".join(types),
                  "type_notes": type_notes, "output_format": prompts.template(f"{config.representation}_format")}
        self.system = {name: prompts.render(name, **common) for name in (
            "seed_generation", "guidance", "guidance_refine", "composer", "composition_refine")}
        self.system["guidance_judge"] = prompts.render("guidance_judge", types=common["types"])
        self.system["composition_judge"] = prompts.render("composition_judge", types=common["types"])
        self._sem: asyncio.Semaphore | None = None

    # ---------------------------------------------------------------- orchestration
    async def run(self, seeds: Sequence[Seed], examples: Sequence[Seed] = ()) -> list[SeedResult]:
        """Augment ``seeds``; ``examples`` are in-domain sentences shown as format examples (defaults to the seeds)."""
        self._sem = asyncio.Semaphore(max(1, self.llm.max_concurrency))  # one per running loop
        self._examples = [s for s in (examples or seeds) if s.spans] or list(examples or seeds)
        # entity-hint pool: the dataset's inventory, or else the mentions of this batch's own seeds
        self._pool = self.mentions or entity_mentions([s.tokens for s in self._examples], [s.tags for s in self._examples])
        results = [SeedResult(s) for s in seeds]
        todo = [r for r in results if r.seed.spans or not self.cfg.skip_entityless]
        for r in results:
            if r not in todo:
                r.skipped = True
        groups = [todo] if self.cfg.schedule == "stage" else [[r] for r in todo]
        for group in groups:
            await self._run_group(group)
        return results

    async def _run_group(self, rs: list[SeedResult]) -> None:
        cfg = self.cfg
        if cfg.uses_attribution:
            await self._each(rs, self._where)
        if cfg.method == "biorda":
            await self._each(rs, self._which)
            return
        await self._each(rs, self._seed_generation)
        await self._each(rs, partial(self._repair, stage="seed_generation"))
        if not cfg.uses_guidance:
            for r in rs:
                r.accepted = r.variants
            return
        await self._each(rs, self._guidance)
        if cfg.uses_gr:
            await self._loop(rs, "gr")
        await self._each(rs, self._compose)
        await self._each(rs, partial(self._repair, stage="composer"))
        if cfg.uses_ac:
            await self._loop(rs, "ac")
        if cfg.debate_review:
            await self._each(rs, self._review)
        for r in rs:
            self._finish(r)

    async def _each(self, rs: Sequence[SeedResult], fn: Callable[[SeedResult], Awaitable[None]], *,
                    soft: str = "") -> None:
        """Run ``fn`` on every live seed. Errors fail the seed, or with ``soft`` only stop that loop; an unexpected
        exception (a bug, not an LLM answer) fails its seed too, logged with its traceback, and never the batch."""

        async def guarded(r: SeedResult) -> None:
            try:
                await fn(r)
            except Exception as err:  # noqa: BLE001 - one seed's failure is recorded on it, never the batch's
                where = getattr(fn, "__name__", None) or getattr(getattr(fn, "func", None), "__name__", "stage")
                msg = f"{where}: {type(err).__name__}: {err}"
                if not isinstance(err, RGDAError):  # message redacted (key-shaped text), frames without locals
                    msg = redact(f"{where}: unexpected {type(err).__name__}: {err}")
                    log.warning("seed %s failed: %s\n%s", r.seed.key, msg,
                                redact("".join(traceback.format_tb(err.__traceback__)).rstrip()))
                if soft:
                    r.notes.append(msg)
                    r._stopped.add(soft)
                else:
                    r.failure = msg

        todo = [r for r in rs if r.alive and (not soft or soft not in r._stopped)]
        bar = None
        if self.progress and todo:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(todo), desc=_stage_label(fn), unit="seed", leave=False)

        async def tracked(r: SeedResult) -> None:
            try:
                await guarded(r)
            finally:
                if bar is not None:
                    bar.update(1)

        await asyncio.gather(*(tracked(r) for r in todo))
        if bar is not None:
            bar.close()

    async def _loop(self, rs: list[SeedResult], kind: str) -> None:
        """Algorithm 1: judge; refine while below threshold and rounds remain."""
        active = [r for r in rs if r.alive and (kind == "gr" or self._valid(r))]
        for rnd in range(1, self.cfg.max_rounds + 1):
            await self._each(active, partial(self._judge, kind=kind, rnd=rnd), soft=kind)
            below = [r for r in active if kind not in r._stopped and r.alive
                     and r.judgements[kind] and r.judgements[kind][-1].score < self.cfg.threshold]
            if rnd == self.cfg.max_rounds or not below:
                return
            await self._each(below, partial(self._refine, kind=kind, rnd=rnd), soft=kind)
            active = [r for r in below if kind not in r._stopped]

    def _finish(self, r: SeedResult) -> None:
        final = self._valid(r)
        ac = r.judgements["ac"]
        if self.cfg.reject_below_threshold and self.cfg.uses_ac and ac and ac[-1].score < self.cfg.threshold:
            for c in final:
                r.rejected.append(("composition_judge", c.reject("below_threshold", f"final AC score {ac[-1].score}")))
            final = []
        r.accepted = final

    # ---------------------------------------------------------------- calls
    async def _call(self, r: SeedResult, stage: str, messages: list[dict[str, str]], schema: dict[str, Any], *,
                    judge: bool = False, salt: object = "", llm: LLM | None = None,
                    rnd: int | None = None) -> tuple[Any, str]:
        """One stage call; an answer that is not JSON is re-asked once with the parse error, then fails the seed."""
        rnd = rnd if rnd is not None else salt if isinstance(salt, int) else None
        llm = llm or self.llm
        text = await self._complete(r, stage, messages, schema, judge=judge, salt=salt, rnd=rnd, llm=llm)
        try:
            return parse_json(text), text
        except ParseError as err:
            reask = [*messages, {"role": "assistant", "content": text[:4000]},
                     {"role": "user", "content": prompts.template("json_reask") + f"\n\nThe error: {err}"}]
            text = await self._complete(r, stage, reask, schema, judge=judge, salt=f"{salt}/json", rnd=rnd, llm=llm)
            return parse_json(text), text

    async def _complete(self, r: SeedResult, stage: str, messages: list[dict[str, str]], schema: dict[str, Any], *,
                        judge: bool, salt: object, rnd: int | None, llm: LLM) -> str:
        params = {"temperature": self.cfg.judge_temperature if judge else self.cfg.temperature,
                  "max_tokens": self.cfg.max_tokens, "seed": derive_seed(self.cfg.seed, r.seed.key, stage, salt)}
        key = cache_key(llm.identity(), messages, schema, params)
        comp = self.cache.get(key) if self.cache is not None else None
        if comp is None:
            assert self._sem is not None
            async with self._sem:
                start = time.perf_counter()
                comp = await llm.complete(messages, schema=schema, params=params)
            if not comp.seconds:
                comp = Completion(comp.text, comp.usage, time.perf_counter() - start)
            if self.cache is not None:
                self.cache.put(key, comp)
            log.debug("%s %s: %.1f s, %d+%d tokens", r.seed.key, stage, comp.seconds, comp.usage.prompt_tokens,
                      comp.usage.completion_tokens)
        r.account(stage, comp, rnd)
        return comp.text

    def _messages(self, stage: str, **sections: Any) -> list[dict[str, str]]:
        body = "\n\n".join(f"{k.replace('_', ' ').capitalize()}:\n{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                           for k, v in sections.items())
        return [{"role": "system", "content": self.system[stage]}, {"role": "user", "content": body}]

    # ---------------------------------------------------------------- generation + deterministic floor
    def _decode_all(self, r: SeedResult, stage: str, data: Any, n: int, *, keep: Sequence[Candidate] = ()) -> list[Candidate]:
        items = data.get("sentences") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ParseError("answer has no 'sentences' list", raw=json.dumps(data)[:2000])
        kept: list[Candidate] = list(keep)
        out: list[Candidate] = []
        for item in items[:n]:
            cand = decode_sentence(item, self.checker.types, self.cfg.representation,
                                   split_hyphens=self.checker.split_hyphens)
            self.checker.check(cand, r.seed, kept, forbid_seed_entities=stage != "seed_generation")
            (kept if cand.ok else out).append(cand)
            if not cand.ok:
                r.rejected.append((stage, cand))
        return kept[len(keep):] + out

    async def _generate(self, r: SeedResult, stage: str, messages: list[dict[str, str]], n: int, salt: object = "",
                        keep: Sequence[Candidate] = ()) -> list[Candidate]:
        schema = sentences_schema(self.checker.types, n, self.cfg.representation)
        data, raw = await self._call(r, stage, messages, schema, salt=salt)
        r._context[stage] = (messages, raw)
        return self._decode_all(r, stage, data, n, keep=keep)

    async def _seed_generation(self, r: SeedResult) -> None:
        msgs = self._messages("seed_generation", sentence=r.seed.text, entities=r.seed.entities,
                              task=f"Write {self.cfg.num_augmented} new versions.")
        r.variants = [c for c in await self._generate(r, "seed_generation", msgs, self.cfg.num_augmented) if c.ok]

    async def _repair(self, r: SeedResult, stage: str) -> None:
        """Targeted re-ask for the sentences the checks rejected (bounded by ``max_repairs``)."""
        target = r.variants if stage == "seed_generation" else r.accepted
        for attempt in range(self.cfg.max_repairs):
            missing = self.cfg.num_augmented - len(target)
            bad = [c for s, c in r.rejected if s == stage and not c.repair_asked]
            if missing <= 0 or not bad or stage not in r._context:
                return
            for c in bad:
                c.repair_asked = True
            messages, raw = r._context[stage]
            problems = [{"sentence": c.raw, "rejected because": f"{c.reason}: {c.detail}"} for c in bad]
            msgs = [*messages, {"role": "assistant", "content": raw},
                    {"role": "user", "content": prompts.template("repair") + "\n\n" + json.dumps(problems, ensure_ascii=False)
                     + f"\n\nWrite {missing} sentence(s)."}]
            new = await self._generate(r, stage, msgs, missing, salt=f"repair{attempt}", keep=target)
            target.extend(c for c in new if c.ok)

    async def _guidance(self, r: SeedResult) -> None:
        msgs = self._messages("guidance", sentence=r.seed.text, entities=r.seed.entities,
                              other_phrasings=[c.raw.get("text", c.raw) for c in r.variants] or "none")
        data, _ = await self._call(r, "guidance", msgs, guidance_schema(self.checker.types))
        r.guidance = _check_guidance(data)

    async def _compose(self, r: SeedResult) -> None:
        example = next((s for s in self._examples if s.key != r.seed.key), None)
        sections: dict[str, Any] = self._entity_sections(r)
        if example is not None:
            sections["example item from this dataset"] = example.as_item(self.cfg.representation)
        if r.attribution is not None:
            words = [r.seed.tokens[i] for i in r.attribution["selected"]]
            sections["words to replace (keep the rest of the original sentence's skeleton)"] = words or "none"
        sections["task"] = f"Write {self.cfg.num_augmented} new sentences."
        msgs = self._messages("composer", **sections)
        r.accepted = [c for c in await self._generate(r, "composer", msgs, self.cfg.num_augmented) if c.ok]

    def _entity_sections(self, r: SeedResult) -> dict[str, Any]:
        """The guide as the composer and its revisions see it, then either the never-reuse list (entity_hints=0, or
        nothing to draw from: the paper's instruction) or the further same-type entity hints."""
        subs, hints = self._entity_plan(r)
        sections: dict[str, Any] = {"guide": self._composer_view(r, r.guidance)}
        if not subs:
            sections["original entity texts (never reuse)"] = [e["text"] for e in r.seed.entities] or "none"
        if hints:
            sections["more entities of these types from this dataset (vary the entities across sentences)"] = hints
        return sections

    def _refine_context(self, r: SeedResult) -> dict[str, Any]:
        """What the composer's revisions see of the seed: the original in the composer's view, then its sections."""
        return {"original": self._composer_view(r, r.seed.as_item(self.cfg.representation)), **self._entity_sections(r)}

    def _composer_view(self, r: SeedResult, data: Any) -> Any:
        """``data`` with each of the seed's entity texts replaced by its substitute (see :meth:`_entity_plan`). A
        small composer copies whatever entity it is shown, the seed's own or a placeholder alike; shown a real, new
        one, its copies are still correct new training sentences."""
        subs = self._entity_plan(r)[0]
        if not subs:
            return data
        pattern = _entity_pattern(r.seed)

        def walk(x: Any) -> Any:
            if isinstance(x, str):
                return pattern.sub(lambda m: subs.get(_squeeze(m.group(0)), m.group(0)), x)
            if isinstance(x, dict):
                return {k: walk(v) for k, v in x.items()}
            if isinstance(x, list):
                return [walk(v) for v in x]
            return x

        return walk(data)

    def _entity_plan(self, r: SeedResult) -> tuple[dict[str, str], dict[str, list[str]]]:
        """Computed once per seed, with random draws fixed per seed sentence; both empty when entity_hints is 0.

        Returns:
            ``substitutes``: one new entity per distinct seed entity text (keyed by its squeezed lower-case form),
            same type, from the pool; ``hints``: up to ``entity_hints`` further mentions per seed type, never the
            seed's own nor a substitute.
        """
        if r._entities is None:
            subs: dict[str, str] = {}
            hints: dict[str, list[str]] = {}
            if self.cfg.entity_hints and r.seed.spans:
                own = {_squeeze(e["text"]) for e in r.seed.entities}
                rng = random.Random(derive_seed(self.cfg.seed, r.seed.key, "substitutes"))
                for e in r.seed.entities:
                    key = _squeeze(e["text"])
                    pool = [m for m in self._pool.get(e["type"], []) if _squeeze(m) not in own and m not in subs.values()]
                    if key not in subs and pool:
                        subs[key] = rng.choice(pool[:500])
                used = own | {_squeeze(v) for v in subs.values()}
                rng = random.Random(derive_seed(self.cfg.seed, r.seed.key, "hints"))
                for t in dict.fromkeys(e["type"] for e in r.seed.entities):
                    pool = [m for m in self._pool.get(t, [])[:500] if _squeeze(m) not in used]
                    if pool:
                        hints[t] = rng.sample(pool, min(self.cfg.entity_hints, len(pool)))
            r._entities = (subs, hints)
        return r._entities

    async def _where(self, r: SeedResult) -> None:
        """WHERE: leave-one-out attribution picks the words to replace."""
        r.attribution = self.attribution.attribute(list(r.seed.tokens), list(r.seed.tags)).to_dict()

    async def _which(self, r: SeedResult) -> None:
        """WHICH: the debate proposes and validates replacements for the chosen words (biorda)."""
        positions = r.attribution["selected"] if r.attribution else []
        if not positions:
            r.notes.append("WHERE found no replaceable word (all words are entities, punctuation or function words)")
            return

        result = await run_debate(self._agent(r), r.seed.tokens, r.seed.tags, positions, self.cfg.num_augmented, self.cfg.debate,
                                  domain=self.cfg.domain, types=self.checker.types)
        r.debate = {"rounds": result.rounds, "transcript": result.transcript,
                    "accepted_means": [p.mean for p in result.accepted],
                    "rejected_means": [p.mean for p in result.rejected]}
        floor = dataclasses.replace(self.checker, near_copy_ratio=1.0)  # replacing a few words is the method
        kept: list[Candidate] = []
        for p in result.rejected:
            tokens, tags = p.apply(r.seed.tokens, r.seed.tags, split_hyphens=self.checker.split_hyphens)
            r.rejected.append(("debate", Candidate(raw={"replacements": p.replacements}, tokens=tokens, tags=tags)
                               .reject("below_sigma", f"mean reviewer score {p.mean:.1f} < {self.cfg.debate_sigma}")))
        for p in result.accepted:
            tokens, tags = p.apply(r.seed.tokens, r.seed.tags, split_hyphens=self.checker.split_hyphens)
            cand = Candidate(raw={"replacements": p.replacements}, tokens=tokens, tags=tags)
            floor.check(cand, r.seed, kept, forbid_seed_entities=False)
            if cand.ok:
                kept.append(cand)
            else:
                r.rejected.append(("debate", cand))
        r.accepted = kept

    def _agent(self, r: SeedResult) -> Callable[..., Awaitable[Any]]:
        """The debate's ``ask``: agent k speaks through ``debate_llms[k % len]`` and the pipeline's cached call."""

        async def ask(agent: int, stage: str, messages: list[dict[str, str]], schema: dict[str, Any], rnd: int) -> Any:
            llm = self.debate_llms[agent % len(self.debate_llms)]
            data, _ = await self._call(r, stage, messages, schema, judge=stage in ("debate_reflect", "debate_review"),
                                       salt=f"agent{agent}/round{rnd}", llm=llm, rnd=rnd)
            return data

        return ask

    async def _review(self, r: SeedResult) -> None:
        """rgda+debate: the debate panel reviews the composed sentences (WHICH applied to whole sentences)."""
        current = self._valid(r)
        if not current:
            return

        async def revise(feedback: list[tuple[Candidate, dict[str, Any]]], rnd: int) -> list[Candidate]:
            low = {id(c) for c, _ in feedback}
            keep = [c for c in self._valid(r) if id(c) not in low]
            msgs = self._messages("composition_refine", **self._refine_context(r), **{
                                                       "sentences to revise": [c.raw for c, _ in feedback],
                                                       "reviewer feedback": [fb for _, fb in feedback],
                                                       "task": f"Write {len(feedback)} revised sentences."})
            new = await self._generate(r, "debate_revise", msgs, len(feedback), salt=f"review{rnd}", keep=keep)
            return [c for c in new if c.ok]

        result = await run_review(self._agent(r), r.seed.as_item(self.cfg.representation), current, self.cfg.debate,
                                  show=lambda c: c.raw, revise=revise, domain=self.cfg.domain, types=self.checker.types)
        r.debate = {"rounds": result.rounds, "transcript": result.transcript,
                    "accepted_means": [round(statistics.fmean(h[-1]), 1) for _, h in result.accepted],
                    "rejected_means": [round(statistics.fmean(h[-1]), 1) for _, h in result.rejected]}
        for c, hist in result.rejected:
            r.rejected.append(("debate_review", c.reject(
                "below_sigma", f"mean reviewer score {statistics.fmean(hist[-1]):.1f} < {self.cfg.debate_sigma}")))
        r.superseded += len(result.revised)
        r.accepted = [c for c, _ in result.accepted]

    def _valid(self, r: SeedResult) -> list[Candidate]:
        return [c for c in r.accepted if c.ok]

    # ---------------------------------------------------------------- judges and refinement
    async def _judge(self, r: SeedResult, kind: str, rnd: int) -> None:
        if kind == "gr":
            stage, rubric = "guidance_judge", GR_RUBRIC
            msgs = self._messages(stage, sentence=r.seed.text, entities=r.seed.entities, guide=r.guidance)
        else:
            stage, rubric = "composition_judge", AC_RUBRIC
            msgs = self._messages(stage, original=r.seed.as_item(self.cfg.representation), guide=r.guidance,
                                  new_sentences=[c.raw for c in self._valid(r)])
        data, _ = await self._call(r, stage, msgs, judge_schema(rubric), judge=True, salt=rnd)
        r.judgements[kind].append(Judgement.parse(data, rubric))

    async def _refine(self, r: SeedResult, kind: str, rnd: int) -> None:
        verdict = r.judgements[kind][-1]
        if kind == "gr":
            msgs = self._messages("guidance_refine", sentence=r.seed.text, entities=r.seed.entities,
                                  guide=r.guidance, reviewer_feedback=verdict.feedback_text(GR_RUBRIC))
            data, _ = await self._call(r, "guidance_refine", msgs, guidance_schema(self.checker.types), salt=rnd)
            new_guide = _check_guidance(data)
            if _squeeze(json.dumps(new_guide, sort_keys=True)) == _squeeze(json.dumps(r.guidance, sort_keys=True)):
                # judging the same guide again only samples the judge's noise: the loop ends on this verdict
                r.notes.append(f"GR refinement round {rnd} returned the guide unchanged: loop stopped")
                r._stopped.add("gr")
            r.guidance = new_guide
            return
        current = self._valid(r)
        msgs = self._messages("composition_refine", **self._refine_context(r), **{
                                 "current sentences": [c.raw for c in current],
                                 "reviewer feedback": verdict.feedback_text(AC_RUBRIC),
                                 "task": f"Write {self.cfg.num_augmented} revised sentences."})
        new = [c for c in await self._generate(r, "composition_refine", msgs, self.cfg.num_augmented, salt=rnd) if c.ok]
        if sorted(_squeeze(" ".join(c.tokens)) for c in new) == sorted(_squeeze(" ".join(c.tokens)) for c in current):
            r.notes.append(f"AC refinement round {rnd} returned the sentences unchanged: loop stopped")
            r.superseded += len(new)
            r._stopped.add("ac")
        elif len(new) >= len(current):
            r.superseded += len(current)
            r.accepted = new
        else:
            r.notes.append(f"AC refinement round {rnd} kept: {len(new)} valid < {len(current)} current")
            r.superseded += len(new)
            r._stopped.add("ac")


def _stage_label(fn: Any) -> str:
    """"GR judge, round 2" from ``partial(self._judge, kind="gr", rnd=2)``."""
    kw = getattr(fn, "keywords", {}) or {}
    name = (getattr(fn, "__name__", None) or getattr(getattr(fn, "func", None), "__name__", "stage")).strip("_")
    name = name.replace("_", " ")
    if "kind" in kw:
        name = f"{kw['kind'].upper()} {name}"
    if "stage" in kw:
        name = f"{name} ({kw['stage'].replace('_', ' ')})"
    return f"{name}, round {kw['rnd']}" if "rnd" in kw else name


def _entity_pattern(seed: Seed) -> re.Pattern[str]:
    """The seed's entity texts, longest first, matched case-insensitively with any spacing between their tokens."""
    texts = sorted({tuple(seed.tokens[s.start : s.end]) for s in seed.spans}, key=lambda t: -sum(map(len, t)))
    alts = [r"\s*".join(re.escape(tok) for tok in t) for t in texts]
    return re.compile(r"(?<!\w)(?:" + "|".join(alts) + r")(?!\w)", re.IGNORECASE)


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def _check_guidance(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict) or not all(k in data for k in ("context", "structure", "entity_roles")):
        raise ParseError("guidance lacks context, structure or entity_roles", raw=json.dumps(data)[:2000])
    return data
