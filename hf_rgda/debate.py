"""WHICH (BioRDA): a multi-agent Advise-Reflect-Revise debate that chooses and validates word replacements.

``n`` agents (one backend with different personas, or several backends): in each round the proposer *advises*
replacements for the chosen positions, every reviewer *reflects* on each proposal with scores on four criteria
(definition, similarity, syntax, usage; 25 points each), and the proposer *revises* the proposals whose mean
score is below ``sigma``. A proposal is accepted when its mean reviewer score reaches ``sigma``; rounds are
bounded. With one agent, the proposer reviews its own proposals. The whole exchange is kept as a transcript.

``run_review`` is the same panel applied to whole sentences another stage wrote (``rgda`` with ``debate_review``):
the reviewers reflect on each composed sentence against the four criteria read for sentences, the author revises
the ones below ``sigma``, and those still below after the last round are rejected.

The debate is a stage that uses a list of LLMs through an ``ask`` callable supplied by the pipeline (so every
call goes through the response cache and the accounting), not an LLM subclass.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from . import prompts
from ._exceptions import ParseError
from .config import DebateConfig
from .tags import tokenize

__all__ = ["CRITERIA", "DebateConfig", "DebateResult", "Proposal", "ReviewResult", "run_debate", "run_review"]

CRITERIA: dict[str, int] = {"definition": 25, "similarity": 25, "syntax": 25, "usage": 25}
PERSONAS = ("a domain terminologist", "a careful copy editor who checks grammar",
            "a domain expert who checks how words are used in real papers",
            "a skeptical reviewer who hunts for changes of meaning", "a lexicographer")

Ask = Callable[[int, str, list[dict[str, str]], dict[str, Any], object], Awaitable[Any]]


@dataclass
class Proposal:
    """One set of replacements: ``{position: new text}``; ``scores`` are the reviewers' totals, round by round."""

    replacements: dict[int, str]
    scores: list[list[int]] = field(default_factory=list)
    rounds: int = 0

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores[-1]) if self.scores and self.scores[-1] else 0.0

    def apply(self, tokens: Sequence[str], tags: Sequence[str], *, split_hyphens: bool = False) -> tuple[list[str], list[str]]:
        """The new sentence: each chosen word replaced by the tokens of its new text (tagged ``O``), tokenized the
        data's way (``split_hyphens``)."""
        out_t: list[str] = []
        out_g: list[str] = []
        for i, (tok, tag) in enumerate(zip(tokens, tags)):
            if i in self.replacements:
                words = tokenize(self.replacements[i], split_hyphens=split_hyphens) or [tok]
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


def proposals_schema(positions: Sequence[int], n: int) -> dict[str, Any]:
    item = {"type": "object", "properties": {
        "replacements": {"type": "array", "minItems": len(positions), "maxItems": len(positions), "items": {
            "type": "object", "properties": {"position": {"type": "integer", "enum": list(positions)},
                                             "new": {"type": "string", "maxLength": 60}},
            "required": ["position", "new"], "additionalProperties": False}}},
        "required": ["replacements"], "additionalProperties": False}
    return {"type": "object", "properties": {"proposals": {"type": "array", "minItems": n, "maxItems": n, "items": item}},
            "required": ["proposals"], "additionalProperties": False}


def reviews_schema(n: int) -> dict[str, Any]:
    crit = {name: {"type": "object", "properties": {"remark": {"type": "string", "maxLength": 160},
                                                      "score": {"type": "integer", "enum": list(range(0, top + 1, 5))}},
                   "required": ["remark", "score"], "additionalProperties": False} for name, top in CRITERIA.items()}
    item = {"type": "object", "properties": crit, "required": list(CRITERIA), "additionalProperties": False}
    return {"type": "object", "properties": {"reviews": {"type": "array", "minItems": n, "maxItems": n, "items": item}},
            "required": ["reviews"], "additionalProperties": False}


def parse_proposals(data: Any, tokens: Sequence[str], positions: Sequence[int], n: int) -> list[Proposal]:
    """Proposals from an advise/revise answer.

    Raises:
        ParseError: not the expected structure, a position outside the chosen ones, or an unchanged word.
    """
    items = data.get("proposals") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) < n:
        raise ParseError(f"expected {n} proposals", raw=json.dumps(data)[:2000])
    out = []
    for item in items[:n]:
        reps = item.get("replacements") if isinstance(item, dict) else None
        if not isinstance(reps, list):
            raise ParseError("a proposal has no 'replacements' list", raw=json.dumps(data)[:2000])
        mapping: dict[int, str] = {}
        for r in reps:
            pos, new = (r.get("position"), r.get("new")) if isinstance(r, dict) else (None, None)
            if pos not in positions or not isinstance(new, str) or not new.strip():
                raise ParseError(f"replacement {r!r} is not for a chosen position", raw=json.dumps(data)[:2000])
            if new.strip().lower() != tokens[pos].lower():
                mapping[int(pos)] = new.strip()
        if not mapping:
            raise ParseError("a proposal changes no word", raw=json.dumps(data)[:2000])
        out.append(Proposal(mapping))
    return out


def parse_reviews(data: Any, n: int) -> list[tuple[int, dict[str, str]]]:
    """``(total score, remarks)`` per proposal; scores clamped to each criterion's maximum.

    Raises:
        ParseError: reviews missing or a criterion without a numeric score.
    """
    items = data.get("reviews") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) < n:
        raise ParseError(f"expected {n} reviews", raw=json.dumps(data)[:2000])
    out = []
    for item in items[:n]:
        total, remarks = 0, {}
        for name, top in CRITERIA.items():
            entry = item.get(name) if isinstance(item, dict) else None
            if not isinstance(entry, dict) or not isinstance(entry.get("score"), (int, float)):
                raise ParseError(f"a review lacks a numeric score for {name!r}", raw=json.dumps(data)[:2000])
            total += max(0, min(top, int(entry["score"])))
            remarks[name] = str(entry.get("remark", ""))
        out.append((total, remarks))
    return out


def _view(tokens: Sequence[str], positions: Sequence[int]) -> str:
    return " ".join(f"[{i}:{t}]" if i in positions else t for i, t in enumerate(tokens))


async def run_debate(ask: Ask, tokens: Sequence[str], tags: Sequence[str], positions: Sequence[int], n: int,
                     config: DebateConfig, *, domain: str, types: Sequence[str]) -> DebateResult:
    """Debate ``n`` proposals for replacing the words at ``positions``.

    Args:
        ask: ``ask(agent, stage, messages, schema, salt)`` -> parsed JSON (the pipeline's cached call).
        tokens, tags: the seed sentence (IOB2).
        positions: word positions chosen for replacement (never entity words).
        n: proposals wanted.
    """
    result = DebateResult()
    personas = PERSONAS[: config.agents]
    common = {"domain": domain or "the domain of the sentence", "types": ", ".join(types)}
    system = {role: [prompts.render(f"debate_{role}", persona=p, **common) for p in personas]
              for role in ("advise", "reflect", "revise")}
    sentence = _view(tokens, positions)
    chosen = {str(i): tokens[i] for i in positions}
    msgs = [{"role": "system", "content": system["advise"][0]},
            {"role": "user", "content": f"Sentence (chosen words in brackets with their position):\n{sentence}\n\n"
                                        f"Chosen words: {json.dumps(chosen)}\n\nWrite {n} proposals."}]
    data = await ask(0, "debate_advise", msgs, proposals_schema(positions, n), 0)
    pending = parse_proposals(data, tokens, positions, n)
    result.transcript.append({"round": 1, "agent": 0, "persona": personas[0], "role": "advise", "content": data})
    reviewers = list(range(1, config.agents)) or [0]
    for rnd in range(1, config.max_rounds + 1):
        result.rounds = rnd
        shown = [{"proposal": k + 1, "new sentence": " ".join(p.apply(tokens, tags)[0]),
                  "replacements": {tokens[i]: new for i, new in sorted(p.replacements.items())}}
                 for k, p in enumerate(pending)]
        remarks: list[list[dict[str, str]]] = [[] for _ in pending]
        for p in pending:
            p.scores.append([])
            p.rounds = rnd
        for agent in reviewers:
            msgs = [{"role": "system", "content": system["reflect"][agent]},
                    {"role": "user", "content": f"Original sentence:\n{' '.join(tokens)}\n\nProposals:\n"
                                                f"{json.dumps(shown, ensure_ascii=False)}\n\nReview all {len(pending)}."}]
            data = await ask(agent, "debate_reflect", msgs, reviews_schema(len(pending)), rnd)
            result.transcript.append({"round": rnd, "agent": agent, "persona": personas[agent], "role": "reflect",
                                      "content": data})
            for k, (score, rem) in enumerate(parse_reviews(data, len(pending))):
                pending[k].scores[-1].append(score)
                remarks[k].append(rem)
        low = [k for k, p in enumerate(pending) if p.mean < config.sigma]
        result.accepted += [p for k, p in enumerate(pending) if k not in low]
        if not low:
            return result
        if rnd == config.max_rounds:
            result.rejected += [pending[k] for k in low]
            return result
        feedback = [{"proposal": shown[k], "mean score": round(pending[k].mean, 1), "remarks": remarks[k]} for k in low]
        msgs = [{"role": "system", "content": system["revise"][0]},
                {"role": "user", "content": f"Sentence (chosen words in brackets with their position):\n{sentence}\n\n"
                                            f"Proposals to revise:\n{json.dumps(feedback, ensure_ascii=False)}\n\n"
                                            f"Write {len(low)} revised proposals."}]
        data = await ask(0, "debate_revise", msgs, proposals_schema(positions, len(low)), rnd)
        result.transcript.append({"round": rnd, "agent": 0, "persona": personas[0], "role": "revise", "content": data})
        revised = parse_proposals(data, tokens, positions, len(low))
        for old, new in zip((pending[k] for k in low), revised):
            new.scores = list(old.scores)
        pending = revised
    return result


T = TypeVar("T")


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


async def run_review(ask: Ask, original: Any, items: Sequence[T], config: DebateConfig, *,
                     show: Callable[[T], Any],
                     revise: Callable[[list[tuple[T, dict[str, Any]]], int], Awaitable[list[T]]],
                     domain: str, types: Sequence[str]) -> ReviewResult[T]:
    """Reflect-Revise rounds of the panel over sentences another stage wrote.

    Args:
        ask: ``ask(agent, stage, messages, schema, round)`` -> parsed JSON (the pipeline's cached call).
        original: the seed as the reviewers see it (text and entities).
        items: the sentences to review; ``show(item)`` is what the reviewers read.
        revise: ``revise([(item, feedback), ...], round)`` -> revised items (it may return fewer, e.g. when some
            fail the deterministic checks); called for the items below ``sigma`` while rounds remain.

    Returns:
        Every item ends in exactly one of ``accepted``, ``rejected`` or ``revised`` (replaced by its revision).
    """
    result: ReviewResult[T] = ReviewResult()
    personas = PERSONAS[: config.agents]
    system = [prompts.render("debate_review", persona=p, domain=domain or "the domain of the sentence",
                             types=", ".join(types)) for p in personas]
    reviewers = list(range(1, config.agents)) or [0]
    pending: list[tuple[T, list[list[int]]]] = [(x, []) for x in items]
    for rnd in range(1, config.max_rounds + 1):
        if not pending:
            break
        result.rounds = rnd
        shown = [{"sentence": k + 1, **_as_dict(show(x))} for k, (x, _) in enumerate(pending)]
        remarks: list[list[dict[str, str]]] = [[] for _ in pending]
        for _, hist in pending:
            hist.append([])
        for agent in reviewers:
            msgs = [{"role": "system", "content": system[agent]},
                    {"role": "user", "content": f"Original sentence:\n{json.dumps(original, ensure_ascii=False)}\n\n"
                                                f"New sentences:\n{json.dumps(shown, ensure_ascii=False)}\n\n"
                                                f"Review all {len(pending)}."}]
            data = await ask(agent, "debate_review", msgs, reviews_schema(len(pending)), rnd)
            result.transcript.append({"round": rnd, "agent": agent, "persona": personas[agent], "role": "review",
                                      "content": data})
            for k, (score, rem) in enumerate(parse_reviews(data, len(pending))):
                pending[k][1][-1].append(score)
                remarks[k].append(rem)
        means = [statistics.fmean(hist[-1]) for _, hist in pending]
        low = [k for k, m in enumerate(means) if m < config.sigma]
        result.accepted += [p for k, p in enumerate(pending) if k not in low]
        if not low:
            break
        if rnd == config.max_rounds:
            result.rejected += [pending[k] for k in low]
            break
        feedback = [(pending[k][0], {"sentence": shown[k], "mean score": round(means[k], 1), "remarks": remarks[k]})
                    for k in low]
        new = await revise(feedback, rnd)
        result.transcript.append({"round": rnd, "agent": 0, "persona": personas[0], "role": "revise",
                                  "content": [_as_dict(show(x)) for x in new]})
        result.revised += [pending[k][0] for k in low]
        pending = [(x, []) for x in new]
    return result


def _as_dict(shown: Any) -> dict[str, Any]:
    return shown if isinstance(shown, dict) else {"text": shown}
