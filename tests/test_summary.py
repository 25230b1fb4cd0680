"""Reading run summaries written by earlier releases: a ``summary.json`` of the first format still makes the card's
figures, and :class:`RunSummary`'s earlier attribute names still read its figures."""

from __future__ import annotations

import json

from datasets import Dataset, DatasetDict

from hf_rgda import RunSummary
from hf_rgda.hub import dataset_card
from hf_rgda.records import Judgement, SeedTrace
from hf_rgda.summary import read_figures

#: a summary.json as the first releases wrote it: ``llm_calls`` (now ``calls``), no stage_usage, no variety
OLD_SUMMARY_JSON = """{
  "config": {"method": "rgda", "threshold": 90, "max_rounds": 3, "temperature": 0.8, "judge_temperature": 0.2,
             "seed": 0, "representation": "entities"},
  "llm": {"backend": "openai", "model": "gpt-x"},
  "source": "ncbi_disease",
  "summary": {"seeds": 4, "accepted": 7, "accepted_per_seed": 1.75, "failed_seeds": 1,
              "failures_by_stage": {"guidance": 1}, "rejected_by_reason": {"entity_not_in_sentence": 2},
              "rejected": 2, "llm_calls": 91, "cached_calls": 0, "stage_calls": {"composer": 5},
              "prompt_tokens": 23846, "completion_tokens": 1079, "llm_seconds": 12.5, "wall_seconds": 14.0,
              "judge_rounds": {"gr": {"1": 1, "2": 2}, "ac": {"1": 3}},
              "judge_scores": {"gr_round1": {"n": 3, "mean": 35.0, "min": 6, "max": 66,
                                             "histogram": {"6": 1, "33": 1, "66": 1}}}}
}"""


def test_a_summary_json_of_the_first_format_still_makes_the_cards_figures() -> None:
    report = json.loads(OLD_SUMMARY_JSON)
    assert read_figures(report["summary"])["calls"] == 91
    dsd = DatasetDict({"augmented": Dataset.from_dict({"tokens": [["Gout", "."]], "ner_tags": [["B-Disease", "O"]]})})
    card = dataset_card(dsd, report, repo_id="user/old-run")
    for line in ("- seeds in: 4", "- failed seeds: 1", "- LLM calls: 91", "- prompt tokens: 23846",
                 "- gr_round1 scores: mean 35.0, min 6, max 66 (n 3)"):
        assert line in card, line


def test_the_summarys_figures_are_named_as_summary_json_names_them_and_the_old_names_still_read() -> None:
    trace = SeedTrace(seed="k", method="rgda", failure="guidance: ParseError: x", accepted=0,
                      judgements={"guidance_judge": [Judgement(40, {}, {}), Judgement(95, {}, {})]})
    summary = RunSummary()
    summary.add(SeedTrace.from_json(trace.to_json()))
    d = summary.to_dict()
    assert d["failures_by_stage"] == dict(summary.failures_by_stage) == {"guidance": 1}
    assert d["judge_rounds"] == {"gr": {2: 1}, "ac": {}}
    assert sorted(d["judge_scores"]) == sorted(summary.judge_scores) == ["gr_round1", "gr_round2"]
    assert summary.failures is summary.failures_by_stage and summary.rounds is summary.judge_rounds
    assert summary.skipped_seeds == summary.skipped_seeds_without_entities == 0
