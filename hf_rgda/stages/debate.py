"""The debate: BioRDA's WHICH (a multi-agent Advise-Reflect-Revise debate that chooses and validates word
replacements) and the review panel of ``rgda`` with ``debate_review``.

``n`` agents (one backend with different personas, or several backends): in each round the proposer *advises*
replacements for the chosen positions, every reviewer *reflects* on each proposal with scores on four criteria
(:data:`~hf_rgda.schemas.DEBATE_RUBRIC`: definition, similarity, syntax, usage; 25 points each), and the proposer
*revises* the proposals whose mean score is below ``sigma``. A proposal is accepted when its mean reviewer score
reaches ``sigma``; rounds are bounded. With one agent, the proposer reviews its own proposals. The whole exchange is
kept as a transcript.

:func:`run_review` is the same panel applied to whole sentences another stage wrote: the reviewers reflect on each
composed sentence against the four criteria read for sentences, the author revises the ones below ``sigma``, and those
still below after the last round are rejected.

The debate is a stage that uses a list of LLMs through an ``ask`` callable (in the pipeline, the run's cached,
counted call: :meth:`Which.ask`), not an LLM subclass; :func:`run_debate` and :func:`run_review` work on their own.
The rounds and the reviewers both share are :class:`~hf_rgda.stages.panel.Panel`'s.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from .._exceptions import ParseError
from ..config import DebateConfig
from ..llm.base import LLM
from ..messages import Messages, chat
from ..records import Candidate, SeedResult
from ..schemas import proposals_schema
from ..tags import TokenStyle, tokenize
from .base import Run, valid
from .composer import Composer
from .panel import Ask, Choose, Panel, Reviewed
from .registry import Stage, register

__all__ = ["DebateResult", "Proposal", "Review", "ReviewResult", "Which", "run_debate", "run_review"]

T = TypeVar("T")


@dataclass
class Proposal:
    """One set of replacements: ``{position: new text}``; ``scores`` are the reviewers' totals, round by round.

    Attributes:
        reason: why it was rejected: ``"no_change"`` (every new text repeats its word: never reviewed),
            ``"bad_replacement"`` (a replacement with blank text, not for a chosen position, or not an object: never
            reviewed) or ``"below_sigma"`` (the reviewers' mean stayed below sigma); ``""`` otherwise.
        detail: for ``"bad_replacement"``, the replacement at fault.
    """

    replacements: dict[int, str]
    scores: list[list[int]] = field(default_factory=list)
    reason: str = ""
    detail: str = ""

    @property
    def rounds(self) -> int:
        """The rounds it was reviewed in."""
        return len(self.scores)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores[-1]) if self.scores and self.scores[-1] else 0.0

    def apply(self, tokens: Sequence[str], tags: Sequence[str], *,
              style: TokenStyle | None = None) -> tuple[list[str], list[str]]:
        """The new sentence: each chosen word replaced by the tokens of its new text (tagged ``O``), tokenized the
        data's way (``style``: the checker's :attr:`~hf_rgda.checking.Checker.token_style`)."""
        out_t: list[str] = []
        out_g: list[str] = []
        for i, (tok, tag) in enumerate(zip(tokens, tags)):
            if i in self.replacements:
                words = tokenize(self.replacements[i], style=style) or [tok]
                out_t += words
                out_g += ["O"] * len(words)
            else:
                out_t.append(tok)
                out_g.append(tag)
        return out_t, out_g


@dataclass
class DebateResult:
    """Accepted and rejected proposals with the full transcript."""

    accepted: list[Proposal] = field(default_factory=list)
    rejected: list[Proposal] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0


@dataclass
class ReviewResult(Generic[T]):
    """Outcome of a panel review of whole sentences: each accepted or rejected item with its score history
    (one list of reviewer totals per round it was reviewed in), the items replaced by a revision, and the
    transcript."""

    accepted: list[tuple[T, list[list[int]]]] = field(default_factory=list)
    rejected: list[tuple[T, list[list[int]]]] = field(default_factory=list)
    revised: list[T] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0


def parse_proposals(data: Any, tokens: Sequence[str], positions: Sequence[int], n: int) -> list[Proposal]:
    """Proposals from an advise/revise answer; one that changes no word comes back with ``reason="no_change"``
    and every new text it proposed, one with a replacement that is blank, not for a chosen position or not an object
    with ``reason="bad_replacement"`` (its valid replacements, the fault in ``detail``): each rejects itself alone.

    Raises:
        ParseError: the answer has no ``proposals`` list of at least ``n`` items.
    """
    items = data.get("proposals") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) < n:
        raise ParseError(f"expected {n} proposals", raw=json.dumps(data)[:2000])
    return [_proposal(item, tokens, positions) for item in items[:n]]


def _proposal(item: Any, tokens: Sequence[str], positions: Sequence[int]) -> Proposal:
    """One proposal of an advise/revise answer (see :func:`parse_proposals`)."""
    reps = item.get("replacements") if isinstance(item, dict) else None
    if not isinstance(reps, list):
        return Proposal({}, reason="bad_replacement", detail=f"no 'replacements' list in {item!r}"[:300])
    proposed: dict[int, str] = {}
    faults: list[str] = []
    for r in reps:
        pos, new = (r.get("position"), r.get("new")) if isinstance(r, dict) else (None, None)
        if pos not in positions or not isinstance(new, str) or not new.strip():
            why = "blank text" if pos in positions else f"position {pos!r} is not a chosen one {list(positions)}"
            faults.append(f"replacement {r!r}: {why}"[:300])
            continue
        proposed[int(pos)] = new.strip()
    if faults:
        return Proposal(proposed, reason="bad_replacement", detail="; ".join(faults))
    changed = {pos: new for pos, new in proposed.items() if new.lower() != tokens[pos].lower()}
    return Proposal(changed) if changed else Proposal(proposed, reason="no_change")


def _view(tokens: Sequence[str], positions: Sequence[int]) -> str:
    return " ".join(f"[{i}:{t}]" if i in positions else t for i, t in enumerate(tokens))


async def run_debate(ask: Ask, tokens: Sequence[str], tags: Sequence[str], positions: Sequence[int], n: int,
                     config: DebateConfig, *, domain: str, types: Sequence[str],
                     choose: Choose | None = None) -> DebateResult:
    """Debate ``n`` proposals for replacing the words at ``positions``.

    Args:
        ask: ``ask(agent, stage, messages, schema, round)`` -> parsed JSON (the pipeline's cached call).
        choose: the reviewers' rating questions when ``config.reading`` is ``"probability"``
            (:class:`~hf_rgda.stages.panel.Panel`).
        tokens, tags: the seed sentence (IOB2).
        positions: word positions chosen for replacement (never entity words).
        n: proposals wanted.
    """
    def show(p: Proposal) -> dict[str, Any]:
        return {"new sentence": " ".join(p.apply(tokens, tags)[0]),
                "replacements": {tokens[i]: new for i, new in sorted(p.replacements.items())}}

    result = DebateResult()
    panel = Panel(ask, config, domain, types, role="reflect", noun="proposal", heading="Proposals",
                  original=" ".join(tokens), show=show, transcript=result.transcript, choose=choose)
    sentence = f"Sentence (chosen words in brackets with their position):\n{_view(tokens, positions)}\n\n"
    chosen = {str(i): tokens[i] for i in positions}
    msgs = chat(panel.systems("advise")[0], f"{sentence}Chosen words: {json.dumps(chosen)}\n\nWrite {n} proposals.")
    data = await ask(0, "debate_advise", msgs, proposals_schema(positions, n), 0)
    pending = _unless_unchanged(parse_proposals(data, tokens, positions, n), result)
    panel.log(1, 0, "advise", data)

    async def revise(low: list[Proposal], feedback: list[dict[str, Any]], rnd: int) -> list[Proposal]:
        msgs = chat(panel.systems("revise")[0], f"{sentence}Proposals to revise:\n"
                                                f"{json.dumps(feedback, ensure_ascii=False)}\n\nWrite {len(low)} revised proposals.")
        data = await ask(0, "debate_revise", msgs, proposals_schema(positions, len(low)), rnd)
        panel.log(rnd, 0, "revise", data)
        revised = parse_proposals(data, tokens, positions, len(low))
        for old, new in zip(low, revised):
            new.scores = list(old.scores)
        return _unless_unchanged(revised, result)

    await panel.rounds(result, pending, revise)
    for p in result.rejected:
        p.reason = p.reason or "below_sigma"
    return result


def _unless_unchanged(proposals: list[Proposal], result: DebateResult) -> list[Proposal]:
    """The proposals that change a word and are well formed; the others are rejected (one bad proposal never sinks
    the debate)."""
    result.rejected += [p for p in proposals if p.reason]
    return [p for p in proposals if not p.reason]


async def run_review(ask: Ask, original: Any, items: Sequence[T], config: DebateConfig, *,
                     show: Callable[[T], Any],
                     revise: Callable[[list[tuple[T, dict[str, Any]]], int], Awaitable[list[T]]],
                     domain: str, types: Sequence[str], choose: Choose | None = None) -> ReviewResult[T]:
    """Reflect-Revise rounds of the panel over sentences another stage wrote.

    Args:
        ask: ``ask(agent, stage, messages, schema, round)`` -> parsed JSON (the pipeline's cached call).
        choose: as for :func:`run_debate`.
        original: the seed as the reviewers see it (text and entities).
        items: the sentences to review; ``show(item)`` is what the reviewers read.
        revise: ``revise([(item, feedback), ...], round)`` -> revised items (it may return fewer, e.g. when some
            fail the deterministic checks); called for the items below ``sigma`` while rounds remain.

    Returns:
        Every item ends in exactly one of ``accepted``, ``rejected`` or ``revised`` (replaced by its revision).
    """
    result: ReviewResult[T] = ReviewResult()
    panel = Panel(ask, config, domain, types, role="review", noun="sentence", heading="New sentences",
                  original=json.dumps(original, ensure_ascii=False), show=lambda x: _as_dict(show(x.item)),
                  transcript=result.transcript, choose=choose)

    async def revise_items(low: list[Reviewed], feedback: list[dict[str, Any]], rnd: int) -> list[Reviewed]:
        new = await revise([(x.item, fb) for x, fb in zip(low, feedback)], rnd)
        panel.log(rnd, 0, "revise", [_as_dict(show(x)) for x in new])
        result.revised += [x.item for x in low]
        return [Reviewed(x, []) for x in new]

    await panel.rounds(result, [Reviewed(x, []) for x in items], revise_items)
    return result


def _as_dict(shown: Any) -> dict[str, Any]:
    return shown if isinstance(shown, dict) else {"text": shown}


# ---------------------------------------------------------------- the pipeline's debate stages
class Which:
    """biorda's WHICH: the debate proposes and validates replacements for the words WHERE chose (``r.accepted``).

    Args:
        run: what the run's stages share.
        llms: the agents' backends (agent k speaks through ``llms[k % len(llms)]``).
    """

    def __init__(self, run: Run, llms: Sequence[LLM]) -> None:
        self.run, self.llms = run, list(llms)
        self.floor = dataclasses.replace(run.checker, near_copy_ratio=1.0)  # replacing a few words is the method

    def ask(self, r: SeedResult) -> Ask:
        """The debate's ``ask`` for seed ``r``: agent k speaks through its backend and the run's cached call."""

        async def ask(agent: int, stage: str, messages: Messages, schema: dict[str, Any], rnd: int) -> Any:
            data, _ = await self.run.caller.ask(r, stage, messages, schema,
                                                judge=stage in ("debate_reflect", "debate_review"),
                                                salt=f"agent{agent}/round{rnd}", llm=self.llms[agent % len(self.llms)],
                                                rnd=rnd)
            return data

        return ask

    def choose(self, r: SeedResult) -> Choose:
        """The debate's ``choose`` for seed ``r`` (its rating questions), through the agent's backend."""

        async def choose(agent: int, stage: str, messages: Messages, options: Sequence[str], salt: str,
                         rnd: int) -> dict[str, float]:
            asked = await self.run.caller.choose(r, stage, messages, options, salt=f"agent{agent}/round{rnd}/{salt}",
                                                 rnd=rnd, llm=self.llms[agent % len(self.llms)])
            return asked.probs

        return choose

    @cached_property
    def config(self) -> DebateConfig:
        """The run's debate settings, read by probability where the run's judges are (``judge_reading``; with
        ``"auto"``, when every agent's backend has logprobs)."""
        cfg = self.run.config
        rated = cfg.judge_reading == "probability" or (
            cfg.judge_reading == "auto" and all(llm.has_logprobs for llm in self.llms))
        return dataclasses.replace(cfg.debate, reading="probability" if rated else "sample")

    async def __call__(self, r: SeedResult) -> None:
        cfg = self.run.config
        positions = r.attribution["selected"] if r.attribution else []
        if not positions:
            r.notes.append("WHERE found no replaceable word (all words are entities, punctuation or function words)")
            return
        result = await run_debate(self.ask(r), r.seed.tokens, r.seed.tags, positions, cfg.num_augmented, self.config,
                                  domain=cfg.domain, types=self.run.checker.types, choose=self.choose(r))
        reviewed = [p for p in result.rejected if p.reason == "below_sigma"]
        r.debate = _record(result, [p.mean for p in result.accepted], [p.mean for p in reviewed])
        r.rejected += [("debate", self._rejection(r, p)) for p in result.rejected]
        kept: list[Candidate] = []
        for p in result.accepted:
            cand = self._candidate(r, p)
            self.floor.check(cand, r.seed, kept, forbid_seed_entities=False)
            if cand.ok:
                kept.append(cand)
            else:
                r.rejected.append(("debate", cand))
        r.accepted = kept

    def _candidate(self, r: SeedResult, p: Proposal) -> Candidate:
        """The seed with ``p``'s replacements."""
        tokens, tags = p.apply(r.seed.tokens, r.seed.tags, style=self.run.checker.token_style)
        return Candidate(raw={"replacements": p.replacements}, tokens=tokens, tags=tags)

    def _rejection(self, r: SeedResult, p: Proposal) -> Candidate:
        if p.reason == "no_change":
            return Candidate(raw={"replacements": p.replacements}).reject(
                "no_change", "every new text repeats the word it replaces")
        if p.reason == "bad_replacement":
            return Candidate(raw={"replacements": p.replacements}).reject("bad_replacement", p.detail)
        return self._candidate(r, p).reject("below_sigma", f"mean reviewer score {p.mean:.1f} < {self.config.threshold}")


class Review:
    """rgda+debate: the debate panel reviews the composed sentences (WHICH applied to whole sentences); the composer
    revises those below ``sigma``.

    Args:
        run: what the run's stages share.
        which: whose ``ask`` the panel speaks through.
        composer: the composer whose view of the seed the revisions see.
    """

    def __init__(self, run: Run, which: Which, composer: Composer) -> None:
        self.run, self.which, self.composer = run, which, composer

    async def __call__(self, r: SeedResult) -> None:
        cfg = self.run.config
        current = valid(r)
        if not current:
            return

        async def revise(feedback: list[tuple[Candidate, dict[str, Any]]], rnd: int) -> list[Candidate]:
            low = {id(c) for c, _ in feedback}
            keep = [c for c in valid(r) if id(c) not in low]
            msgs = self.run.messages("composition_refine", **self.composer.refine_context(r), **{
                "sentences to revise": [c.raw for c, _ in feedback], "reviewer feedback": [fb for _, fb in feedback],
                "task": f"Write {len(feedback)} revised sentences."})
            new, _ = await self.run.write(r, "debate_revise", msgs, len(feedback), salt=f"review{rnd}", keep=keep)
            return [c for c in new if c.ok]

        result = await run_review(self.which.ask(r), r.seed.as_item(cfg.representation), current, self.which.config,
                                  show=lambda c: c.raw, revise=revise, domain=cfg.domain, types=self.run.checker.types,
                                  choose=self.which.choose(r))
        accepted, rejected = ([statistics.fmean(h[-1]) for _, h in items] for items in (result.accepted, result.rejected))
        r.debate = _record(result, [round(m, 1) for m in accepted], [round(m, 1) for m in rejected])
        for (c, _), mean in zip(result.rejected, rejected):
            r.rejected.append(("debate_review",
                               c.reject("below_sigma", f"mean reviewer score {mean:.1f} < {self.which.config.threshold}")))
        r.superseded += len(result.revised)
        r.accepted = [c for c, _ in result.accepted]


def _record(result: DebateResult | ReviewResult[Any], accepted: list[float], rejected: list[float]) -> dict[str, Any]:
    """The debate as the seed's trace keeps it."""
    return {"rounds": result.rounds, "transcript": result.transcript, "accepted_means": accepted,
            "rejected_means": rejected}


register(Stage("debate", "which", state=lambda s: Which(s.run, s.debate_llms)))
register(Stage("debate_review", "review", state=lambda s: Review(s.run, s["debate"], s["composer"]),
               when=lambda cfg: cfg.debate_review,
               scripted=lambda world, messages, schema, params: world.review(messages, schema)))
