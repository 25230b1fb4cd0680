"""The debate's review panel, shared by WHICH (word replacements, :func:`~hf_rgda.stages.debate.run_debate`) and the
``debate_review`` stage (whole sentences, :func:`~hf_rgda.stages.debate.run_review`).

``config.agents`` agents, agent k speaking as persona k; agents 1.. review (a lone agent reviews itself). In each
round every reviewer scores every pending item on :data:`~hf_rgda.schemas.DEBATE_RUBRIC`; an item whose mean reaches
``sigma`` is accepted; the others are revised while rounds remain and rejected after the last.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from .. import prompts
from .._exceptions import ParseError
from ..config import DebateConfig
from ..records import Judgement
from ..schemas import DEBATE_RUBRIC, reviews_schema

__all__ = ["PERSONAS", "Ask", "Panel", "Reviewed", "parse_reviews"]

PERSONAS = ("a domain terminologist", "a careful copy editor who checks grammar",
            "a domain expert who checks how words are used in real papers",
            "a skeptical reviewer who hunts for changes of meaning", "a lexicographer")

#: ``ask(agent, stage, messages, schema, round)`` -> the parsed JSON answer
Ask = Callable[[int, str, list[dict[str, str]], dict[str, Any], int], Awaitable[Any]]


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


def parse_reviews(data: Any, n: int) -> list[Judgement]:
    """One reviewer's verdict on each of ``n`` items (remarks as the verdicts' feedback).

    Raises:
        ParseError: fewer than ``n`` reviews, or a criterion without a numeric score.
    """
    items = data.get("reviews") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) < n:
        raise ParseError(f"expected {n} reviews", raw=json.dumps(data)[:2000])
    return [Judgement.parse(item, DEBATE_RUBRIC, "remark") for item in items[:n]]


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
        for rnd in range(1, self.config.max_rounds + 1):
            if not pending:
                return
            outcome.rounds = rnd
            shown = [{self.noun: k + 1, **self.show(x)} for k, x in enumerate(pending)]
            reviews = await self._reflect(shown, rnd)
            for x, verdicts in zip(pending, reviews):
                x.scores.append([v.score for v in verdicts])
            means = [statistics.fmean(x.scores[-1]) for x in pending]
            low = [k for k, m in enumerate(means) if m < self.config.sigma]
            outcome.accepted += [x for k, x in enumerate(pending) if k not in low]
            if not low:
                return
            if rnd == self.config.max_rounds:
                outcome.rejected += [pending[k] for k in low]
                return
            feedback = [{self.noun: shown[k], "mean score": round(means[k], 1),
                         "remarks": [v.feedback for v in reviews[k]]} for k in low]
            pending = await revise([pending[k] for k in low], feedback, rnd)

    async def _reflect(self, shown: list[dict[str, Any]], rnd: int) -> list[list[Judgement]]:
        """Every reviewer's verdict on every shown item, per item."""
        system, n = self.systems(self.role), len(shown)
        body = (f"Original sentence:\n{self.original}\n\n{self.heading}:\n{json.dumps(shown, ensure_ascii=False)}"
                f"\n\nReview all {n}.")
        per_item: list[list[Judgement]] = [[] for _ in range(n)]
        for agent in range(1, self.config.agents) or [0]:
            msgs = [{"role": "system", "content": system[agent]}, {"role": "user", "content": body}]
            data = await self.ask(agent, f"debate_{self.role}", msgs, reviews_schema(n), rnd)
            self.log(rnd, agent, self.role, data)
            for k, verdict in enumerate(parse_reviews(data, n)):
                per_item[k].append(verdict)
        return per_item
