"""Run summaries: the per-seed traces (:class:`~hf_rgda.records.SeedTrace`) the augmenter records, folded.

The same :class:`RunSummary` is filled in-process by the augmenter and rebuilt from a written dataset's
``rgda_trace`` column (which works whatever ``num_proc`` was): both fold the same traces.

What each counts: ``RGDAAugmenter.summary`` folds the batches that augmenter object computed in this process, so it
reads ``seeds in: 0`` when ``datasets`` served the map from its cache and misses the batches of ``num_proc`` workers;
:meth:`RunSummary.from_dataset` folds the traces in the rows a map returned, right however the map ran (computed,
cached, in workers). Every seed's trace rides on its first row (its ``original`` row with ``keep_originals``, the
default; else its first accepted or failed row), so ``from_dataset`` counts every seed with ``keep_originals`` and,
without it, the seeds that emitted an accepted or failed row.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import InputError
from .records import JUDGE_KEYS, Accounting, SeedTrace
from .stages import judges
from .stages.verify import STAGE as VERIFY

__all__ = ["RunSummary", "read_figures"]


@dataclass
class RunSummary:
    """Totals of one or more augmentation batches.

    Each figure is named as ``summary.json`` names it (:meth:`to_dict`); the judges' figures are keyed by each
    judge's short name (``gr``, ``ac``: :attr:`hf_rgda.stages.Stage.loop`). The names these attributes had in
    earlier releases (``failures``, ``rounds``, ``scores``, ``passed_early``, ``rejected``, ``salvaged``, ``skipped_seeds``) still
    read them.
    """

    seeds: int = 0
    accepted: int = 0
    failed_seeds: int = 0
    skipped_seeds_without_entities: int = 0
    rejected_by_reason: Counter[str] = field(default_factory=Counter)
    salvaged_by_rule: Counter[str] = field(default_factory=Counter)  # repairs inside accepted rows, by rule
    failures_by_stage: Counter[str] = field(default_factory=Counter)
    accounting: Accounting = field(default_factory=Accounting)
    wall_seconds: float = 0.0
    judge_rounds: dict[str, Counter[int]] = field(default_factory=lambda: {j.loop: Counter() for j in judges()})
    judge_scores: dict[str, Counter[int]] = field(default_factory=lambda: defaultdict(Counter))  # histograms
    judge_passed_early: Counter[str] = field(default_factory=Counter)  # partial verdicts (judge_early_pass), by round
    entity_decisions: Counter[str] = field(default_factory=Counter)  # the entity verifier's, per entity
    entity_probs: Counter[int] = field(default_factory=Counter)  # P(type) histogram, tenths: 0 is [0, 0.1)
    entity_prob_sum: float = 0.0
    verify_rejected_rows: int = 0  # rows the entity verifier rejected, or whose re-check after an untag failed
    backend: dict[str, Any] = field(default_factory=dict)  # see note_backend: the option reading, adaptations
    seed_entities: set[str] = field(default_factory=set)  # the seeds' entity texts, lower-cased
    accepted_entities: Counter[str] = field(default_factory=Counter)  # the accepted rows' entity texts -> rows
    ngrams: dict[int, Counter[tuple[str, ...]]] = field(default_factory=lambda: {1: Counter(), 2: Counter()})

    def add(self, trace: SeedTrace) -> None:
        """Fold one seed's trace in."""
        self.seeds += 1
        self.accepted += trace.accepted
        self.skipped_seeds_without_entities += trace.skipped
        if trace.failure:
            self.failed_seeds += 1
            self.failures_by_stage[trace.failure.split(":")[0]] += 1
        self.rejected_by_reason.update(r.reason for r in trace.rejected)
        self.salvaged_by_rule.update(x.split(":")[0] for x in trace.salvaged)
        self.accounting.add(trace.accounting)
        for stage, verdicts in trace.judgements.items():
            kind = JUDGE_KEYS.get(stage, stage)
            if verdicts:
                self.judge_rounds.setdefault(kind, Counter())[len(verdicts)] += 1
            for rnd, verdict in enumerate(verdicts, 1):
                if verdict.partial:  # its score is a lower bound: counted apart, not averaged with full scores
                    self.judge_passed_early[f"{kind}_round{rnd}"] += 1
                else:
                    self.judge_scores[f"{kind}_round{rnd}"][verdict.score] += 1
        self.seed_entities.update(trace.seed_entities)
        for texts in trace.entities:
            self.accepted_entities.update(texts)
        for row in trace.rows:
            words = row.lower().split(" ")
            for n, grams in self.ngrams.items():
                grams.update(zip(*(words[i:] for i in range(n))))
        self.verify_rejected_rows += sum(r.stage == VERIFY for r in trace.rejected)
        for v in trace.verification:
            self.entity_decisions[v.decision] += 1
            if v.probability is not None:  # a known entity is asked nothing
                self.entity_probs[min(9, int(v.probability * 10))] += 1
                self.entity_prob_sum += v.probability

    def __getattr__(self, name: str) -> Any:
        """The figures' names before they were named as ``summary.json`` names them, still read."""
        if name in _RENAMED:
            return getattr(self, _RENAMED[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def note_backend(self, llm: Any) -> None:
        """Record what the backend did this run: how option probabilities were read (the entity verifier's and the
        probability judges' reading: ``"logprobs"``, or ``"samples"`` where the model has none) and the request
        parameters it adapted after a provider rejected them (``llm.adaptations``, see
        :mod:`hf_rgda.llm.capabilities`). Empty for backends with nothing to say, so older summaries read the same."""
        adaptations = list(getattr(llm, "adaptations", None) or [])
        caps = getattr(llm, "caps", None)
        if caps is None and not adaptations:
            return
        self.backend = {"capability_family": getattr(caps, "family", None),
                        "option_reading": "logprobs" if getattr(llm, "has_logprobs", False) else "samples",
                        "adaptations": adaptations}

    @classmethod
    def from_traces(cls, traces: Iterable[str]) -> RunSummary:
        """Rebuild from the values of an ``rgda_trace`` column (see :meth:`SeedTrace.read`)."""
        summary = cls()
        for value in traces:
            trace = SeedTrace.read(value)
            if trace is not None:
                summary.add(trace)
        return summary

    @classmethod
    def from_dataset(cls, rows: Any) -> RunSummary:
        """The summary of a map's output ``rows`` (a ``datasets.Dataset`` or a dict of columns with ``rgda_trace``),
        whether ``datasets`` computed the map, served it from its cache, or ran it in ``num_proc`` workers (see the
        module docstring for which seeds it counts); ``wall_seconds`` stays 0: rows do not record the wall time.

        Raises:
            InputError: ``rows`` has no ``rgda_trace`` column (not an augmenter's output).
        """
        names = rows.column_names if hasattr(rows, "column_names") else list(rows)
        if "rgda_trace" not in names:
            raise InputError(f"no rgda_trace column among {sorted(names)}: not the rows of an RGDAAugmenter map")
        return cls.from_traces(rows["rgda_trace"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures (``summary.json``), including score distributions per stage and round. The accounting's
        figures keep the names the traces give them (:meth:`~hf_rgda.records.Accounting.to_json`: ``calls``,
        ``stage_usage``, ``cached_seconds``, ...), seconds to the tenth."""
        dist = {k: _distribution(v) for k, v in sorted(self.judge_scores.items()) if v}
        acc = self.accounting.to_json()
        return {
            "seeds": self.seeds, "accepted": self.accepted,
            "accepted_per_seed": round(self.accepted / self.seeds, 3) if self.seeds else 0.0,
            "failed_seeds": self.failed_seeds, "skipped_seeds_without_entities": self.skipped_seeds_without_entities,
            "failures_by_stage": dict(self.failures_by_stage),
            "rejected_by_reason": dict(self.rejected_by_reason.most_common()),
            "rejected": sum(self.rejected_by_reason.values()),
            "salvaged_by_rule": dict(self.salvaged_by_rule.most_common()),
            **acc, "stage_usage": dict(sorted(acc["stage_usage"].items())),
            "llm_seconds": round(acc["llm_seconds"], 1), "cached_seconds": round(acc["cached_seconds"], 1),
            "cached_prompt_tokens": sum(u["cached_tokens"] for u in acc["stage_usage"].values()),
            "wall_seconds": round(self.wall_seconds, 1),
            "judge_rounds": {k: dict(sorted(v.items())) for k, v in self.judge_rounds.items()},
            "judge_scores": dist,
            "judge_passed_early": dict(sorted(self.judge_passed_early.items())),
            "entity_verification": self._verification(),
            "variety": self._variety(),
            **({"backend": self.backend} if self.backend else {}),
        }

    def _verification(self) -> dict[str, Any]:
        """The entity verifier's counts per decision, the rows it removed, and its P(type) mean and histogram."""
        n = sum(self.entity_decisions.values())
        asked = n - self.entity_decisions["known"] - self.entity_decisions["unverified"]  # those with a P
        return {"entities": n, **{k: self.entity_decisions[k]
                                  for k in ("known", "verified", "untagged", "rejected", "unverified")},
                "rows_rejected": self.verify_rejected_rows,
                "mean_probability": round(self.entity_prob_sum / asked, 3) if asked else None,
                "probability_histogram": {f"{k / 10:.1f}": v for k, v in sorted(self.entity_probs.items())}}

    def _variety(self) -> dict[str, Any]:
        """How the accepted rows vary: their distinct entity texts and the share of them no seed has (entity
        novelty), and distinct-1 and distinct-2 (distinct word unigrams, bigrams over all of them, lower-cased)."""
        texts = set(self.accepted_entities)
        novel = len(texts - self.seed_entities)
        distinct = {f"distinct_{n}": round(len(g) / sum(g.values()), 3) if g else None for n, g in self.ngrams.items()}
        return {"entity_texts": len(texts), "novel_entity_texts": novel,
                "entity_novelty": round(novel / len(texts), 3) if texts else None, **distinct}

    def format(self) -> str:
        """A human-readable block for the terminal."""
        d = self.to_dict()
        lines = [
            (f"seeds in: {d['seeds']}   accepted: {d['accepted']} ({d['accepted_per_seed']}/seed)   "
             f"rejected: {d['rejected']}   failed seeds: {d['failed_seeds']}   "
             f"seeds without entities (not augmented): {d['skipped_seeds_without_entities']}"),
            (f"LLM calls: {d['calls']} ({d['cached_calls']} from cache)   tokens: {d['prompt_tokens']} prompt + "
             f"{d['completion_tokens']} completion   LLM time: {d['llm_seconds']} s   wall: {d['wall_seconds']} s"),
        ]
        if d["rejected_by_reason"]:
            lines.append("rejected by reason: " + ", ".join(f"{k} {v}" for k, v in d["rejected_by_reason"].items()))
        if d["salvaged_by_rule"]:
            lines.append("checker repairs in accepted rows: " + ", ".join(f"{k} {v}" for k, v in d["salvaged_by_rule"].items()))
        if d["failures_by_stage"]:
            lines.append("failed seeds by stage: " + ", ".join(f"{k} {v}" for k, v in d["failures_by_stage"].items()))
        for kind, hist in d["judge_rounds"].items():
            if hist:
                lines.append(f"{kind.upper()} rounds per seed: " + ", ".join(f"{k}: {v}" for k, v in hist.items()))
        for k, v in d["judge_scores"].items():
            lines.append(f"{k} scores: mean {v['mean']} (min {v['min']}, max {v['max']}, n {v['n']})")
        for k, n in d["judge_passed_early"].items():
            lines.append(f"{k}: {n} passed early (criteria asked until their points reached the threshold)")
        if (ev := d["entity_verification"])["entities"]:
            lines.append(f"entity verification: {ev['entities']} entities, {ev['known']} known to the split, "
                         f"{ev['verified']} verified, {ev['untagged']} "
                         f"untagged, {ev['rejected']} rejected, {ev['unverified']} unverified (the answer named no "
                         f"option) (mean P {ev['mean_probability']}); rows rejected: "
                         f"{ev['rows_rejected']}")
        if (v := d["variety"])["entity_texts"]:
            lines.append(f"variety: {v['entity_texts']} entity texts, {v['entity_novelty']:.0%} new to the seeds; "
                         f"distinct-1 {v['distinct_1']}, distinct-2 {v['distinct_2']}")
        if d.get("backend"):
            b = d["backend"]
            lines.append(f"backend: {b['capability_family']} (option probabilities read by {b['option_reading']})"
                         + ("; adapted: " + "; ".join(b["adaptations"]) if b["adaptations"] else ""))
        return "\n".join(lines)


def read_figures(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The ``summary`` object of a ``summary.json``, whatever release wrote it, under the keys :meth:`RunSummary.to_dict`
    writes now (the first releases wrote ``llm_calls`` for ``calls``); what an older file lacks stays missing.

    Example:
        >>> read_figures({"seeds": 2, "llm_calls": 9})
        {'seeds': 2, 'calls': 9}
    """
    out = dict(figures)
    for old, new in _OLD_KEYS.items():
        if old in out:
            out.setdefault(new, out.pop(old))
    return out


#: summary.json keys of earlier releases -> the key now
_OLD_KEYS = {"llm_calls": "calls"}
#: the attributes' earlier names -> their names now (``summary.json``'s keys, which did not change)
_RENAMED = {"failures": "failures_by_stage", "rounds": "judge_rounds", "scores": "judge_scores",
            "passed_early": "judge_passed_early", "rejected": "rejected_by_reason", "salvaged": "salvaged_by_rule",
            "skipped_seeds": "skipped_seeds_without_entities"}


def _distribution(histogram: Counter[int]) -> dict[str, Any]:
    n = sum(histogram.values())
    return {"n": n, "mean": round(sum(k * v for k, v in histogram.items()) / n, 1), "min": min(histogram),
            "max": max(histogram), "histogram": dict(sorted(histogram.items()))}
