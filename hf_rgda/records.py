"""The records every stage reads and writes: seeds, candidate sentences, judge verdicts, a seed's result, what its
calls cost (:class:`Accounting`) and its trace (:class:`SeedTrace`). Reading a verdict from an answer is
:mod:`hf_rgda.stages.verdicts`'; the output rows' metadata columns are :mod:`hf_rgda.columns`'."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import typing
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .llm.base import Completion, OptionProbs
from .tags import Span, detokenize, tags_to_spans

__all__ = ["JUDGE_KEYS", "RECORD_TYPES", "Accounting", "Candidate", "EntityVerdict", "Judgement", "Rejection", "Seed",
           "SeedResult", "SeedTrace", "seed_key"]


def seed_key(tokens: Sequence[str], tags: Sequence[str]) -> str:
    """A seed row's key (``rgda_source``): 16 hex digits of the sha256 of its tokens and tags (names, IOB2), so the
    augmenter, the baselines and a reader of their rows compute the same key for the same sentence.

    Example:
        >>> seed_key(["Gout", "hurts"], ["B-Disease", "O"])
        '758726a35c1d5bf4'
    """
    return hashlib.sha256(json.dumps([list(tokens), list(tags)]).encode()).hexdigest()[:16]

@dataclass(frozen=True)
class Seed:
    """A validated seed sentence (IOB2 tags)."""

    key: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]

    @functools.cached_property
    def spans(self) -> tuple[Span, ...]:
        """The entities (computed once: every stage and rule reads them)."""
        return tuple(tags_to_spans(self.tags))

    @functools.cached_property
    def text(self) -> str:
        return detokenize(self.tokens)

    @property
    def entities(self) -> list[dict[str, str]]:
        return [{"text": text, "type": s.label} for text, s in zip(self._entity_texts, self.spans)]

    @functools.cached_property
    def _entity_texts(self) -> tuple[str, ...]:
        return tuple(detokenize(self.tokens[s.start : s.end]) for s in self.spans)

    def as_item(self, representation: str = "entities") -> dict[str, Any]:
        """The seed written the way the LLM is asked to write sentences."""
        if representation == "segments":
            return {"segments": _segments(self.tokens, self.spans)}
        if representation == "inline":
            return {"text": inline_text(self.tokens, self.spans)}
        return {"text": self.text, "entities": self.entities}


def inline_text(tokens: Sequence[str], spans: Sequence[Span]) -> str:
    """The sentence as readable text with each entity marked in place: ``"Mutations cause [breast cancer](Disease)."``."""
    out, pos = [], 0
    for s in spans:
        out += [*tokens[pos : s.start], f"[{detokenize(tokens[s.start : s.end])}]({s.label})"]
        pos = s.end
    return detokenize([*out, *tokens[pos:]])


def _segments(tokens: Sequence[str], spans: Sequence[Span]) -> list[dict[str, str]]:
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
    verified: bool = False  # the entity verifier has decided on its entities (hf_rgda.stages.verify)
    sensed: bool = False  # the sense gate has read it (hf_rgda.stages.sense_gate)
    completed: bool = False  # the completeness check has listed its mentions (hf_rgda.stages.completeness)

    @property
    def ok(self) -> bool:
        return not self.reason

    def reject(self, reason: str, detail: str = "") -> Candidate:
        self.reason, self.detail = reason, detail
        return self


@dataclass(frozen=True)
class Judgement:
    """A judge verdict: total score, per-criterion scores and fixes.

    Attributes:
        method: how it was read: ``"sample"`` (one sampled verdict) or ``"probability"`` (each criterion the
            probability-weighted mean of a 1-5 rating, :mod:`hf_rgda.stages.rating`; feedback only when asked for).
        distributions: for ``"probability"``, each criterion's probabilities of the ratings ``"1"``..``"5"``.
        partial: the criteria were asked one by one and the asking stopped once their points reached the threshold
            (``judge_early_pass``): ``criteria`` and ``distributions`` hold those asked, and ``score`` their sum, a
            lower bound of the full verdict's, at or above the threshold.
    """

    score: int
    criteria: dict[str, int]
    feedback: dict[str, str]
    method: str = "sample"
    distributions: dict[str, dict[str, float]] = field(default_factory=dict)
    partial: bool = False

    def feedback_text(self, rubric: dict[str, int]) -> str:
        if self.partial:
            raise ValueError("a verdict that passed early has no feedback and not every criterion's score")
        return "\n".join(f"- {k} ({self.criteria[k]}/{top}): {self.feedback[k]}" for k, top in rubric.items())


@dataclass
class Accounting:
    """What LLM calls cost: one seed's (:attr:`SeedResult.accounting`) or a run's (:meth:`add` sums them).

    Tokens, ``llm_seconds`` and ``stage_usage`` count the calls the backend answered now; ``cached_calls`` and
    ``cached_seconds`` those the response cache served (with the seconds they took when they were paid);
    ``method_tokens`` every call the method made, paid now or earlier.

    Attributes:
        stage_calls: calls per stage, paid or cached.
        stage_usage: paid calls per stage and judge round (``"guidance_judge/round1"``): ``calls``,
            ``prompt_tokens``, ``completion_tokens`` and ``cached_tokens`` (prompt tokens the provider cached).
    """

    calls: int = 0
    cached_calls: int = 0
    stage_calls: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    method_tokens: int = 0
    llm_seconds: float = 0.0
    cached_seconds: float = 0.0
    stage_usage: dict[str, Counter[str]] = field(default_factory=dict)

    def record(self, stage: str, comp: Completion | OptionProbs, rnd: int | None = None) -> None:
        """Count one call of ``stage`` (in judge or debate round ``rnd``): a completion or an option-probability call."""
        self.stage_calls[stage] += 1
        self.calls += 1
        self.cached_calls += comp.cached
        self.method_tokens += comp.usage.prompt_tokens + comp.usage.completion_tokens
        if comp.cached:
            self.cached_seconds += comp.seconds
            return
        self.prompt_tokens += comp.usage.prompt_tokens
        self.completion_tokens += comp.usage.completion_tokens
        self.llm_seconds += comp.seconds
        usage = self.stage_usage.setdefault(stage if rnd is None else f"{stage}/round{rnd}", Counter())
        usage["calls"] += 1
        usage["prompt_tokens"] += comp.usage.prompt_tokens
        usage["completion_tokens"] += comp.usage.completion_tokens
        usage["cached_tokens"] += comp.usage.cached_tokens

    def add(self, other: Accounting) -> None:
        """Add ``other``'s figures to these."""
        for name in _TOTALS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.stage_calls.update(other.stage_calls)
        for stage, usage in other.stage_usage.items():
            self.stage_usage.setdefault(stage, Counter()).update(usage)

    def to_json(self) -> dict[str, Any]:
        """The trace's accounting keys (seconds to the millisecond)."""
        out: dict[str, Any] = {name: getattr(self, name) for name in _TOTALS}
        out["llm_seconds"], out["cached_seconds"] = round(self.llm_seconds, 3), round(self.cached_seconds, 3)
        return {**out, "stage_calls": dict(self.stage_calls),
                "stage_usage": {k: dict(v) for k, v in self.stage_usage.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Accounting:
        """Read :meth:`to_json`'s keys back (traces written before ``cached_seconds``, ``method_tokens`` or
        ``stage_usage`` existed count them as 0)."""
        totals = {name: data.get(name, 0) for name in _TOTALS}
        return cls(**totals, stage_calls=Counter(data["stage_calls"]),
                   stage_usage={k: Counter(v) for k, v in data.get("stage_usage", {}).items()})


_TOTALS = ("calls", "cached_calls", "prompt_tokens", "completion_tokens", "llm_seconds", "cached_seconds",
           "method_tokens")


@dataclass(eq=False)
class SeedResult:
    """Everything that happened to one seed sentence (hashed by identity: the stages key their working state on it).

    Attributes:
        accepted: the sentences kept (after a guided method's last stage; for ``naive``, ``variants``).
        rejected: ``(stage, candidate)`` for every sentence a check, a judge or the debate rejected.
        failure: ``"<stage>: <error>"`` when a stage failed this seed (it then stops).
        notes: what the loops want a reader to know (a loop stopped early, a judge's answer unreadable).
        variants: the seed generation stage's sentences (the guidance stage's "other phrasings").
        superseded: valid sentences replaced by a refinement or a revision.
        skipped: the seed has no entity and ``skip_entityless`` left it alone.
        entity_verdicts: the entity verifier's answer on each entity it asked about, in order.
        judgements: each judge stage's verdicts, round by round, by the stage's name (``guidance_judge``).
        records: the records of the declared stages the result has no field for, by stage name
            (:mod:`hf_rgda.stages.registry`).
    """

    seed: Seed
    accepted: list[Candidate] = field(default_factory=list)
    rejected: list[tuple[str, Candidate]] = field(default_factory=list)
    failure: str = ""
    notes: list[str] = field(default_factory=list)
    variants: list[Candidate] = field(default_factory=list)
    guidance: dict[str, Any] | None = None
    judgements: dict[str, list[Judgement]] = field(default_factory=dict)
    accounting: Accounting = field(default_factory=Accounting)
    superseded: int = 0
    skipped: bool = False
    attribution: dict[str, Any] | None = None
    debate: dict[str, Any] | None = None
    entity_verdicts: list[EntityVerdict] = field(default_factory=list)
    records: dict[str, Any] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return not self.failure


@dataclass(frozen=True)
class EntityVerdict:
    """The entity verifier's answer on one tagged entity of a sentence (:mod:`hf_rgda.stages.verify`).

    Attributes:
        entity: the entity's text.
        type: its tagged type.
        probability: the probability of its type among the question's options (4 decimals); None when no question
            was asked, or the answer named no option.
        decision: ``"verified"`` (at or above ``verify_threshold``), ``"untagged"`` (below: untagged, the row kept
            if it passes the checker again), ``"rejected"`` (below: its row rejected), ``"unverified"`` (the answer
            named no option, under ``verify_min_mass``: its row rejected) or ``"known"`` (the split tags the text as
            this type consistently: kept, nothing asked; ``verify_known``).
        alternative: the most likely other option.
    """

    entity: str
    type: str
    probability: float | None
    decision: str
    alternative: str = ""


@dataclass(frozen=True)
class Rejection:
    """One rejected sentence in a trace: the stage, the checker's (or judge's) reason and its detail."""

    stage: str
    reason: str
    detail: str = ""


@dataclass
class SeedTrace:
    """One seed's record as the ``rgda_trace`` column of its first output row carries it (:meth:`to_json`), and
    as a reader gets it back (:meth:`read`); :class:`~hf_rgda.summary.RunSummary` folds these.

    The JSON object is this record's fields (a record inside, such as a verdict, as its own fields), with
    ``judgements`` (each judge's verdicts under the judge's short name, :data:`JUDGE_KEYS`: ``gr``, ``ac``),
    ``records`` (a declared stage's record, under the stage's name) and ``accounting`` (:meth:`Accounting.to_json`)
    flattened into it; :meth:`from_json` reads it back by the fields' types, each missing field its default (older
    traces lack some).

    Attributes:
        seed: the seed row's key (``rgda_source``).
        accepted: how many sentences were kept.
        rejected: every rejection, in order.
        salvaged: the checker's repairs inside the accepted sentences.
        judgements: each judge's verdicts, round by round, by the judge stage's name (``guidance_judge``: the
            Guidance Refiner's, written as ``gr``; ``composition_judge``: the Augmentation Calibrator's, ``ac``).
        verification: the entity verifier's verdicts.
        rows: the accepted sentences, tokens joined by spaces; ``entities``: per accepted sentence, its entities'
            texts (lower-cased, each once); ``seed_entities``: the seed's (the run summary's variety figures).
        guidance, attribution, debate: the stages' records (the guide, WHERE's word scores, the debate transcript).
        records: the records of the other declared stages (:data:`RECORD_TYPES`).
    """

    seed: str = ""
    method: str = ""
    failure: str = ""
    notes: list[str] = field(default_factory=list)
    accepted: int = 0
    superseded: int = 0
    skipped: bool = False
    guidance: dict[str, Any] | None = None
    attribution: dict[str, Any] | None = None
    debate: dict[str, Any] | None = None
    rejected: list[Rejection] = field(default_factory=list)
    salvaged: list[str] = field(default_factory=list)
    verification: list[EntityVerdict] = field(default_factory=list)
    rows: list[str] = field(default_factory=list)
    entities: list[list[str]] = field(default_factory=list)
    seed_entities: list[str] = field(default_factory=list)
    judgements: dict[str, list[Judgement]] = field(default_factory=dict)
    records: dict[str, Any] = field(default_factory=dict)
    accounting: Accounting = field(default_factory=Accounting)

    @classmethod
    def of(cls, r: SeedResult, method: str) -> SeedTrace:
        """The trace of a finished seed (seconds to the millisecond, as written): the fields the seed's result has
        under the same name, and what the others are made of."""
        acc = r.accounting
        shared = {name: getattr(r, name) for name in _SHARED}
        return cls(**shared, seed=r.seed.key, method=method, accepted=len(r.accepted),
                   rejected=[Rejection(s, c.reason, c.detail) for s, c in r.rejected],
                   salvaged=[x for c in r.accepted for x in c.salvaged],
                   verification=r.entity_verdicts,
                   rows=[" ".join(c.tokens) for c in r.accepted],
                   entities=[_texts(c.tokens, tags_to_spans(c.tags)) for c in r.accepted],
                   seed_entities=_texts(r.seed.tokens, r.seed.spans),
                   accounting=dataclasses.replace(acc, llm_seconds=round(acc.llm_seconds, 3),
                                                  cached_seconds=round(acc.cached_seconds, 3)))

    def to_json(self) -> dict[str, Any]:
        """The JSON object written to ``rgda_trace``."""
        out = {name: _plain(getattr(self, name)) for name in _FIELDS}
        judged = {key: _plain(self.judgements.get(stage, [])) for stage, key in JUDGE_KEYS.items()}
        return {**out, **judged, **{k: _plain(v) for k, v in self.records.items()}, **self.accounting.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SeedTrace:
        """Read :meth:`to_json`'s object back; what the run summary does not count may be missing (older traces)."""
        out = _typed(cls, data, _FIELDS)
        out.judgements = {stage: _read(list[Judgement], data[key]) for stage, key in JUDGE_KEYS.items() if key in data}
        out.records = {k: _read(t, data[k]) for k, t in RECORD_TYPES.items() if k in data and k not in _FIELDS}
        out.accounting = Accounting.from_json(data)
        return out

    @classmethod
    def read(cls, value: str) -> SeedTrace | None:
        """The trace in one ``rgda_trace`` value; None for ``""`` (a seed's later rows) and for a rejected row's
        ``{"raw", "detail"}``."""
        data = json.loads(value) if value else None
        return cls.from_json(data) if isinstance(data, dict) and "stage_calls" in data else None


#: a declared stage's name -> the dataclass of its record (filled by :func:`hf_rgda.stages.register`)
RECORD_TYPES: dict[str, type] = {}
#: a judge stage's name -> the short name the outputs give its verdicts (``Stage.loop``, filled by
#: :func:`hf_rgda.stages.register`)
JUDGE_KEYS: dict[str, str] = {}
#: the trace's own fields, written as they are (``judgements``, ``records`` and ``accounting`` are flattened)
_FIELDS = tuple(f.name for f in dataclasses.fields(SeedTrace) if f.name not in ("judgements", "records", "accounting"))
#: the fields a seed's result and its trace share
_SHARED = tuple(f.name for f in dataclasses.fields(SeedResult)
                if f.name in {g.name for g in dataclasses.fields(SeedTrace)} - {"seed", "accepted", "rejected", "accounting"})


def _texts(tokens: Sequence[str], spans: Sequence[Span]) -> list[str]:
    """The entities' texts, lower-cased, each once, in order."""
    return list(dict.fromkeys(" ".join(tokens[s.start : s.end]).lower() for s in spans))


def _plain(value: Any) -> Any:
    """``value`` as JSON values: a record as its fields, a list of records as a list of them. The fields are shared,
    not copied (they are JSON values already and the trace is written at once; ``dataclasses.asdict`` deep-copies
    them: a tenth of the library's time per seed at zero latency)."""
    if isinstance(value, list):
        return [dict(vars(x)) if dataclasses.is_dataclass(x) else x for x in value]
    return dict(vars(value)) if dataclasses.is_dataclass(value) else value


def _typed(cls: type[_R], data: Mapping[str, Any], names: Sequence[str] | None = None) -> _R:
    """A ``cls`` of the JSON object ``data``, read field by field by each field's type; a missing field takes its
    default, or the empty value of its type where it has none."""
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if names is not None and f.name not in names:
            continue
        if f.name in data:
            kwargs[f.name] = _read(hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = _empty(hints[f.name])
    return cls(**kwargs)


def _read(tp: Any, value: Any) -> Any:
    """``value`` read as type ``tp``: a record (dataclass) from its fields, a list of records from a list."""
    if dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
        return _typed(tp, value)  # type: ignore[arg-type]
    if typing.get_origin(tp) is list and value is not None:
        (item,) = typing.get_args(tp)
        return [_read(item, v) for v in value]
    return value


def _empty(tp: Any) -> Any:
    origin = typing.get_origin(tp) or tp
    return origin() if origin in (list, dict, str, int, float, bool) else None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


_R = typing.TypeVar("_R")
