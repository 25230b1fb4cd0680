"""The debate's review panel, shared by WHICH (word replacements, :func:`~hf_rgda.stages.debate.run_debate`) and the
``debate_review`` stage (whole sentences, :func:`~hf_rgda.stages.debate.run_review`).

``config.agents`` agents, agent k speaking as persona k; agents 1.. review (a lone agent reviews itself). In each
round every reviewer scores every pending item on :data:`~hf_rgda.schemas.DEBATE_RUBRIC`; an item whose mean reaches
the threshold (``sigma``) is accepted; the others are revised while rounds remain and rejected after the last.

A reviewer's verdict is sampled (one answer scoring all pending items, with a remark per criterion) or, with
``config.reading == "probability"``, read by probability as the judges' are (:mod:`.rating`: one 1-5 rating question
per item and criterion, one output token each, against ``config.probability_sigma``); then the remarks the revision
needs are sampled for the items below the threshold only, in the ordinary review call (its scores are not used).
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from .. import prompts
from ..config import DebateConfig
from ..messages import Messages, chat
from ..records import Judgement
from ..schemas import DEBATE_RUBRIC, reviews_schema
from .rating import SCALE, criteria_lines, rate_with, scale_system
from .verdicts import parse_reviews

__all__ = ["PERSONAS", "Ask", "Choose", "Panel", "Reviewed"]

PERSONAS = ("a domain terminologist", "a careful copy editor who checks grammar",
            "a domain expert who checks how words are used in real papers",
            "a skeptical reviewer who hunts for changes of meaning", "a lexicographer")

#: ``ask(agent, stage, messages, schema, round)`` -> the parsed JSON answer
Ask = Callable[[int, str, Messages, dict[str, Any], int], Awaitable[Any]]
#: ``choose(agent, stage, messages, options, salt, round)`` -> the options' probabilities (a rating question)
Choose = Callable[[int, str, Messages, Sequence[str], str, int], Awaitable[dict[str, float]]]


class Scored(Protocol):
    """An item under review: its reviewers' totals, one list per round it was reviewed in."""

    scores: list[list[int]]


class Reviewed(NamedTuple):
    """A sentence under review, with its score history (a plain ``(item, scores)`` tuple)."""

    item: Any
    scores: list[list[int]]


class Outcome(Protocol):
    """Where :meth:`Panel.rounds` puts the items it accepts and rejects."""

    accepted: list[Any]
    rejected: list[Any]
    rounds: int


@dataclass
class Panel:
    """The agents of one debate, and what they review.

    Attributes:
        role: the reviewers' role: ``"reflect"`` (proposals) or ``"review"`` (sentences); their prompt and stage are
            ``debate_<role>``.
        noun, heading: how the items are numbered and titled for the reviewers (``"proposal"``, ``"Proposals"``).
        original: the original sentence as the reviewers read it.
        show: what the reviewers read of an item.
        transcript: every answer, in order.
        choose: the rating questions' call; required when ``config.reading`` is ``"probability"``.
    """

    ask: Ask
    config: DebateConfig
    domain: str
    types: Sequence[str]
    role: str
    noun: str
    heading: str
    original: str
    show: Callable[[Any], dict[str, Any]]
    transcript: list[dict[str, Any]] = field(default_factory=list)
    choose: Choose | None = None

    def __post_init__(self) -> None:
        if self.config.reading == "probability" and self.choose is None:
            raise ValueError("a debate read by probability needs a choose callable")

    @property
    def personas(self) -> tuple[str, ...]:
        return PERSONAS[: self.config.agents]

    def systems(self, role: str) -> list[str]:
        """The system prompt of ``role`` for each agent."""
        return [prompts.render(f"debate_{role}", persona=p, domain=self.domain or "the domain of the sentence",
                               types=", ".join(self.types)) for p in self.personas]

    def log(self, rnd: int, agent: int, role: str, content: Any) -> None:
        """Add one answer to the transcript."""
        self.transcript.append({"round": rnd, "agent": agent, "persona": self.personas[agent], "role": role,
                                "content": content})

    async def rounds(self, outcome: Outcome, pending: Sequence[Scored],
                     revise: Callable[[list[Any], list[dict[str, Any]], int], Awaitable[list[Any]]]) -> None:
        """Review ``pending`` round by round into ``outcome``; ``revise(items, feedback, round)`` -> their revisions
        (maybe fewer)."""
        rated = self.config.reading == "probability"
        for rnd in range(1, self.config.max_rounds + 1):
            if not pending:
                return
            outcome.rounds = rnd
            shown = [{self.noun: k + 1, **self.show(x)} for k, x in enumerate(pending)]
            reviews = await (self._rate(shown, rnd) if rated else self._reflect(shown, rnd))
            for x, verdicts in zip(pending, reviews):
                x.scores.append([v.score for v in verdicts])
            means = [statistics.fmean(x.scores[-1]) for x in pending]
            low = [k for k, m in enumerate(means) if m < self.config.threshold]
            outcome.accepted += [x for k, x in enumerate(pending) if k not in low]
            if not low:
                return
            if rnd == self.config.max_rounds:
                outcome.rejected += [pending[k] for k in low]
                return
            if rated:  # the remarks, sampled for the items a revision follows (numbered among themselves)
                again = [{self.noun: j + 1, **self.show(pending[k])} for j, k in enumerate(low)]
                shown, reviews = dict(zip(low, again)), dict(zip(low, await self._reflect(again, rnd)))
            feedback = [{self.noun: shown[k], "mean score": round(means[k], 1),
                         "remarks": [v.feedback for v in reviews[k]]} for k in low]
            pending = await revise([pending[k] for k in low], feedback, rnd)

    @property
    def reviewers(self) -> list[int]:
        """The reviewing agents: 1.. (a lone agent, 0, reviews itself)."""
        return list(range(1, self.config.agents)) or [0]

    def _body(self, shown: list[dict[str, Any]]) -> str:
        return f"Original sentence:\n{self.original}\n\n{self.heading}:\n{json.dumps(shown, ensure_ascii=False)}"

    async def _rate(self, shown: list[dict[str, Any]], rnd: int) -> list[list[Judgement]]:
        """Every reviewer's verdict on every shown item read by probability (one item a question), per item."""
        assert self.choose is not None  # checked at construction
        choose, stage, systems = self.choose, f"debate_{self.role}", self.systems(self.role)
        lines = criteria_lines(systems[0], DEBATE_RUBRIC)

        def asker(agent: int, item: int) -> Any:
            async def ask(messages: Messages, name: str) -> dict[str, float]:
                return await choose(agent, stage, messages, SCALE, f"{self.noun}{item}/{name}", rnd)
            return ask

        pairs = [(agent, k) for agent in self.reviewers for k in range(len(shown))]
        verdicts = await asyncio.gather(*(
            rate_with(asker(agent, k + 1), chat(systems[agent], self._body([shown[k]])), scale_system(systems[agent]),
                      lines, DEBATE_RUBRIC) for agent, k in pairs))
        per_item: list[list[Judgement]] = [[] for _ in shown]
        for (agent, k), verdict in zip(pairs, verdicts):
            per_item[k].append(verdict)
            self.log(rnd, agent, f"{self.role} (read by probability)",
                     {self.noun: k + 1, "score": verdict.score, "criteria": verdict.criteria,
                      "distributions": verdict.distributions})
        return per_item

    async def _reflect(self, shown: list[dict[str, Any]], rnd: int) -> list[list[Judgement]]:
        """Every reviewer's sampled verdict on every shown item, per item."""
        system, n = self.systems(self.role), len(shown)
        body = f"{self._body(shown)}\n\nReview all {n}."
        per_item: list[list[Judgement]] = [[] for _ in range(n)]
        for agent in self.reviewers:
            data = await self.ask(agent, f"debate_{self.role}", chat(system[agent], body), reviews_schema(n), rnd)
            self.log(rnd, agent, self.role, data)
            for k, verdict in enumerate(parse_reviews(data, n)):
                per_item[k].append(verdict)
        return per_item
