"""The records every stage reads and writes: seeds, candidate sentences, judge verdicts, a seed's result, and the
metadata columns of an output row."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ._exceptions import ParseError
from .llm.base import Completion
from .tags import Span, detokenize, tags_to_spans

__all__ = ["META_COLUMNS", "Candidate", "Judgement", "Seed", "SeedResult"]

#: metadata columns added to every output row
META_COLUMNS: dict[str, pa.DataType] = {
    "rgda_status": pa.string(),  # original | accepted | rejected | failed
    "rgda_method": pa.string(),
    "rgda_source": pa.string(),  # key of the seed row
    "rgda_reason": pa.string(),  # why rejected or failed; for an accepted row, the checker's repairs (salvage)
    "rgda_gr_scores": pa.list_(pa.int64()),
    "rgda_ac_scores": pa.list_(pa.int64()),
    "rgda_trace": pa.string(),  # JSON: the seed's full record, on its first row; "" elsewhere
}


@dataclass(frozen=True)
class Seed:
    """A validated seed sentence (IOB2 tags)."""

    key: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]

    @property
    def spans(self) -> list[Span]:
        return tags_to_spans(self.tags)

    @property
    def text(self) -> str:
        return detokenize(self.tokens)

    @property
    def entities(self) -> list[dict[str, str]]:
        return [{"text": detokenize(self.tokens[s.start : s.end]), "type": s.label} for s in self.spans]

    def as_item(self, representation: str = "entities") -> dict[str, Any]:
        """The seed written the way the LLM is asked to write sentences."""
        if representation == "segments":
            return {"segments": _segments(self.tokens, self.spans)}
        return {"text": self.text, "entities": self.entities}


def _segments(tokens: Sequence[str], spans: list[Span]) -> list[dict[str, str]]:
    out, pos = [], 0
    for s in spans:
        if s.start > pos:
            out.append({"text": detokenize(tokens[pos : s.start]), "type": "O"})
        out.append({"text": detokenize(tokens[s.start : s.end]), "type": s.label})
        pos = s.end
    if pos < len(tokens):
        out.append({"text": detokenize(tokens[pos:]), "type": "O"})
    return out


@dataclass
class Candidate:
    """One sentence an LLM wrote: decoded tokens and IOB2 tags, or the reason it was rejected."""

    raw: Any
    tokens: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    reason: str = ""
    detail: str = ""
    repair_asked: bool = False  # a targeted re-ask has already covered this rejection
    salvaged: list[str] = field(default_factory=list)  # deterministic repairs the checker made (salvage=True)

    @property
    def ok(self) -> bool:
        return not self.reason

    def reject(self, reason: str, detail: str = "") -> Candidate:
        self.reason, self.detail = reason, detail
        return self


@dataclass(frozen=True)
class Judgement:
    """A judge verdict: total score, per-criterion scores and fixes."""

    score: int
    criteria: dict[str, int]
    feedback: dict[str, str]

    @classmethod
    def parse(cls, data: Any, rubric: dict[str, int]) -> Judgement:
        """Parse a verdict; scores are clamped to each criterion's maximum.

        Raises:
            ParseError: a criterion is missing or its score is not a number.
        """
        if not isinstance(data, dict):
            raise ParseError("verdict is not an object", raw=json.dumps(data))
        crit, fb = {}, {}
        for name, top in rubric.items():
            entry = data.get(name)
            if not isinstance(entry, dict) or not isinstance(entry.get("score"), (int, float)):
                raise ParseError(f"verdict lacks a numeric score for {name!r}", raw=json.dumps(data))
            crit[name] = max(0, min(top, int(entry["score"])))
            fb[name] = str(entry.get("feedback", ""))
        return cls(sum(crit.values()), crit, fb)

    def feedback_text(self, rubric: dict[str, int]) -> str:
        return "\n".join(f"- {k} ({self.criteria[k]}/{top}): {self.feedback[k]}" for k, top in rubric.items())


@dataclass
class SeedResult:
    """Everything that happened to one seed sentence."""

    seed: Seed
    accepted: list[Candidate] = field(default_factory=list)
    rejected: list[tuple[str, Candidate]] = field(default_factory=list)  # (stage, candidate with reason)
    failure: str = ""
    notes: list[str] = field(default_factory=list)
    variants: list[Candidate] = field(default_factory=list)
    guidance: dict[str, Any] | None = None
    judgements: dict[str, list[Judgement]] = field(default_factory=lambda: {"gr": [], "ac": []})
    stage_calls: Counter[str] = field(default_factory=Counter)
    stage_usage: dict[str, dict[str, int]] = field(default_factory=dict)
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0
    cached_seconds: float = 0.0  # what the calls served from cache took when they were first paid
    method_tokens: int = 0  # prompt + completion tokens of every call the method made, paid now or earlier
    superseded: int = 0
    skipped: bool = False
    attribution: dict[str, Any] | None = None
    debate: dict[str, Any] | None = None
    _context: dict[str, tuple[list[dict[str, str]], str]] = field(default_factory=dict, repr=False)
    _stopped: set[str] = field(default_factory=set, repr=False)
    _entities: tuple[dict[str, str], dict[str, list[str]]] | None = field(default=None, repr=False)

    @property
    def alive(self) -> bool:
        return not self.failure

    def account(self, stage: str, comp: Completion, rnd: int | None = None) -> None:
        """Count one call; paid (not cached) usage is also kept per stage and judge round."""
        self.stage_calls[stage] += 1
        self.calls += 1
        self.cached_calls += comp.cached
        self.method_tokens += comp.usage.prompt_tokens + comp.usage.completion_tokens
        if comp.cached:
            self.cached_seconds += comp.seconds
        else:
            self.prompt_tokens += comp.usage.prompt_tokens
            self.completion_tokens += comp.usage.completion_tokens
            self.llm_seconds += comp.seconds
            u = self.stage_usage.setdefault(stage if rnd is None else f"{stage}/round{rnd}", {
                "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0})
            u["calls"] += 1
            u["prompt_tokens"] += comp.usage.prompt_tokens
            u["completion_tokens"] += comp.usage.completion_tokens
            u["cached_tokens"] += comp.usage.cached_tokens
