"""Records: the trace a seed writes reads back to the same value, and the run summary folds the same traces in
process and from a written column."""

from __future__ import annotations

import json

from datasets import Dataset

from hf_rgda import RGDAAugmenter, RunSummary, ScriptedLLM
from hf_rgda.llm.base import Completion, Usage
from hf_rgda.records import Accounting, SeedTrace

from .conftest import LABELS, SEED_ROWS, stateless_handler


def test_accounting_counts_paid_and_cached_calls_and_sums() -> None:
    acc = Accounting()
    acc.record("guidance_judge", Completion("{}", Usage(10, 5, 4), seconds=0.5), rnd=1)
    acc.record("guidance_judge", Completion("{}", Usage(10, 5), seconds=2.0, cached=True), rnd=1)
    assert (acc.calls, acc.cached_calls, acc.prompt_tokens, acc.method_tokens) == (2, 1, 10, 30)
    assert acc.stage_calls == {"guidance_judge": 2} and acc.cached_seconds == 2.0
    assert acc.stage_usage == {"guidance_judge/round1": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 5,
                                                         "cached_tokens": 4}}
    total = Accounting()
    total.add(acc)
    total.add(acc)
    assert total.calls == 4 and total.stage_usage["guidance_judge/round1"]["cached_tokens"] == 8
    assert Accounting.from_json(acc.to_json()) == acc


def test_trace_round_trips_and_summaries_agree() -> None:
    ds = Dataset.from_dict(SEED_ROWS)
    aug = RGDAAugmenter(label_names=LABELS, llm=ScriptedLLM(stateless_handler, name="stateless"), cache=False,
                        keep_rejected=True)
    out = ds.map(aug, batched=True)
    traces = [SeedTrace.read(t) for t in out["rgda_trace"]]
    read = [t for t in traces if t is not None]
    assert len(read) == 3 and all(t.method == "rgda" and t.judgements["guidance_judge"] and t.judgements["composition_judge"] for t in read)
    for value, trace in zip(out["rgda_trace"], traces):
        if trace is not None:
            assert json.loads(value) == trace.to_json()
    assert RunSummary.from_traces(out["rgda_trace"]).to_dict() == {**aug.summary.to_dict(), "wall_seconds": 0.0}
    assert SeedTrace.read("") is None and SeedTrace.read(json.dumps({"raw": {}, "detail": "x"})) is None


def test_a_minimal_trace_reads_as_the_summary_needs_it() -> None:
    """What the run summary counts is all a trace must hold (traces written by older versions lack the rest)."""
    value = json.dumps({"accepted": 2, "failure": "guidance: ParseError: x", "rejected": [{"reason": "looped"}],
                        "gr": [{"score": 70}], "ac": [], "calls": 3, "cached_calls": 1, "prompt_tokens": 9,
                        "completion_tokens": 4, "llm_seconds": 0.5, "stage_calls": {"guidance": 3}})
    trace = SeedTrace.read(value)
    assert trace is not None and trace.rejected[0].reason == "looped" and trace.judgements["guidance_judge"][0].score == 70
    d = RunSummary.from_traces([value]).to_dict()
    assert (d["accepted"], d["failures_by_stage"], d["rejected_by_reason"]) == (2, {"guidance": 1}, {"looped": 1})
    assert (d["calls"], d["judge_scores"]["gr_round1"]["mean"]) == (3, 70.0)
