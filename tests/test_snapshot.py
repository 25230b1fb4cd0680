"""Prompt and output snapshot: every method through the scripted world, every call and every emitted row.

The fixture ``snapshots/pipeline.json`` holds, per configuration, each LLM call's messages, schema and params, the
rows the augmenter emitted and the run summary. A change to a prompt, a schema, a derived seed, a checker rule or
the row layout shows up here as a diff of the fixture, so such a change is always deliberate and visible.

Regenerate after a deliberate change (and commit the fixture with the reason):
    HF_RGDA_UPDATE_SNAPSHOT=1 python -m pytest tests/test_snapshot.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hf_rgda import RGDAAugmenter, ScriptedLLM
from hf_rgda.attribution import WordAttribution
from hf_rgda.testing import stateless_answer

FIXTURE = Path(__file__).parent / "snapshots" / "pipeline.json"

# a small split: the checker's statistics (heads, lexicon, length limits, hyphen style) come from it
SPLIT = [
    ("Germline mutations in BRCA1 cause breast cancer .", "O O O O O B-Disease I-Disease O"),
    ("Patients with cystic fibrosis show chronic infection .", "O O B-Disease I-Disease O O B-Disease O"),
    ("The gene is silenced in most tumours of the colon .", "O O O O O O B-Disease O O O O"),
    ("Huntington disease is caused by an expanded repeat in the HD gene .",
     "B-Disease I-Disease O O O O O O O O O O O"),
    ("We studied 40 families with hereditary breast cancer and ovarian cancer .",
     "O O O O O B-Disease I-Disease I-Disease O B-Disease I-Disease O"),
    ("Deficiency of the enzyme results in Prader - Willi syndrome in some children .",
     "O O O O O O B-Disease I-Disease I-Disease I-Disease O O O O"),
    ("No mutation was found in the gene in patients with sporadic melanoma .",
     "O O O O O O O O O O O B-Disease O"),
    ("The study enrolled 120 adults , and the results were reported at the meeting .",
     "O O O O O O O O O O O O O O O"),
    ("Carriers of the allele developed type 2 diabetes earlier than controls .",
     "O O O O O B-Disease I-Disease I-Disease O O O O"),
    ("Mice lacking the protein showed severe ataxia and muscle weakness .",
     "O O O O O O B-Disease O B-Disease I-Disease O"),
]
SEED_INDICES = [0, 1, 5, 7]  # the last has no entity: skipped by default

CONFIGS: dict[str, dict[str, Any]] = {
    "naive": {"method": "naive"},
    "gda": {"method": "gda"},
    "rgda": {"method": "rgda"},
    "rgda-no-gr": {"method": "rgda-no-gr"},
    "rgda-no-ac": {"method": "rgda-no-ac"},
    "rgda+where": {"method": "rgda", "where": True},
    "rgda+debate": {"method": "rgda", "debate_review": True, "debate_agents": 3, "debate_rounds": 2},
    "biorda": {"method": "biorda", "debate_agents": 3},
}


def _pick(messages: Any, k: int) -> int:
    """A pure, content-derived choice: the same call always gets the same answer, whatever the scheduling."""
    text = json.dumps([dict(m) for m in messages], sort_keys=True)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % k


def _verdict(rubric: dict[str, Any], total: int, field: str) -> dict[str, Any]:
    out, left = {}, total
    for name, top in rubric.items():
        top = top["score"] if isinstance(top, dict) else top
        s = min(top, left)
        left -= s
        out[name] = {field: f"{name}: be more specific", "score": s}
    return out


def handler(messages: Any, schema: Any, params: Any) -> Any:
    """The scripted world, made a pure function of the call: judges and debate reviewers (their 1-5 ratings read by
    probability; a reviewer's sampled remarks) whose scores vary, a few broken sentences (an entity missing from its
    text, a copy of the seed) for the checker and the repair stage, and entity verdicts that sometimes fall below the
    threshold (then most likely "an ordinary word": untagged, or a cut span: the row rejected)."""
    props = (schema or {}).get("properties", {})
    system = messages[0]["content"]
    if "answer" in props and ("reviewer of" in system or "reviewer in a panel" in system):  # a judge or debate
        # reviewer read by probability: one criterion's 1-5 rating
        return [{"1": 0.9, "2": 0.1}, {"1": 0.6, "2": 0.4}, {"2": 0.5, "3": 0.5}, {"4": 0.7, "5": 0.3},
                {"5": 0.9, "4": 0.1}][_pick(messages, 5)]
    if "answer" in props:  # the entity verifier's question (option probabilities)
        letters = props["answer"]["enum"]
        p = [0.97, 0.9, 0.8, 0.2][_pick(messages, 4)]
        return {"A": p, letters[-1 - _pick(messages[1:], 2)]: round(1 - p, 6)}
    if "proposals" in props:  # WHICH: advise / revise
        n = props["proposals"]["minItems"]
        pos = props["proposals"]["items"]["properties"]["replacements"]["items"]["properties"]["position"]["enum"]
        return {"proposals": [{"replacements": [{"position": p, "new": f"word{k}{p}"} for p in pos]} for k in range(n)]}
    if "reviews" in props:
        from hf_rgda.schemas import DEBATE_RUBRIC

        n = props["reviews"]["minItems"]
        total = [40, 85, 100][_pick(messages, 3)]
        return {"reviews": [{k: {"remark": f"{k} checked", "score": v["score"]}
                             for k, v in _verdict(DEBATE_RUBRIC, total, "feedback").items()} for _ in range(n)]}
    answer = stateless_answer(messages, schema, params)
    if "reviewer of" in system:  # GR / AC judges: scores that sometimes pass, sometimes ask for a refinement
        from hf_rgda.schemas import AC_RUBRIC, GR_RUBRIC

        rubric = GR_RUBRIC if "sentence guides" in system else AC_RUBRIC
        verdict = _verdict(rubric, [55, 80, 95][_pick(messages, 3)], "feedback")
        scored = "score" in next(iter(props.values()))["properties"]  # else the feedback of a verdict read by probability
        return verdict if scored else {k: {"feedback": v["feedback"]} for k, v in verdict.items()}
    if isinstance(answer, dict) and "sentences" in answer:
        sentences = answer["sentences"]
        flaw = _pick(messages, 4)
        if flaw == 1:
            sentences[0]["entities"] = [{"text": "psoriatic arthritis", "type": "Disease"}]  # not in its text
        elif flaw == 2 and len(sentences) > 1:
            sentences[1] = {"text": "Germline mutations in BRCA1 cause breast cancer .",
                            "entities": [{"text": "breast cancer", "type": "Disease"}]}
    return answer


class FixedWhere:
    """WHERE without a model: the second word and the last word before the final punctuation."""

    def attribute(self, tokens: list[str], tags: list[str]) -> WordAttribution:
        picked = [i for i in (1, len(tokens) - 2) if tags[i] == "O"]
        n = len(tokens)
        return WordAttribution(list(tokens), [0.5] * n, [0.25] * n, [0.25] * n, picked)


def run_config(name: str) -> dict[str, Any]:
    from datasets import Dataset

    rows = {"tokens": [t.split() for t, _ in SPLIT], "ner_tags": [g.split() for _, g in SPLIT]}
    ds = Dataset.from_dict(rows)
    llm = ScriptedLLM(handler, name="snapshot-world")
    cfg = dict(CONFIGS[name])
    uses_where = cfg.get("where") or cfg["method"] == "biorda"
    aug = RGDAAugmenter.from_dataset(ds, llm=llm, cache=False, keep_rejected=True, num_augmented=3,
                                     domain="biomedical abstracts", attribution_model="fixed" if uses_where else None,
                                     type_descriptions={"Disease": "a disease, disorder or syndrome"}, **cfg)
    if uses_where:
        aug._selector = FixedWhere()
    batch = ds.select(SEED_INDICES).to_dict()
    table = aug(batch, indices=SEED_INDICES)
    out_rows = table.to_pylist()
    for row in out_rows:  # the trace's own timings are the only non-deterministic values
        if row["rgda_trace"]:
            trace = json.loads(row["rgda_trace"])
            for key in ("llm_seconds", "cached_seconds"):
                trace.pop(key, None)
            row["rgda_trace"] = trace
    calls = [{"messages": m, "schema": s, "params": p} for m, s, p in llm.calls]
    summary = aug.summary.to_dict() if hasattr(aug.summary, "to_dict") else None
    if summary is not None:
        summary = {k: v for k, v in summary.items() if "seconds" not in k}
    return {"calls": calls, "rows": out_rows, "summary": summary}


def _load() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_snapshot(name: str) -> None:
    got = json.loads(json.dumps(run_config(name), ensure_ascii=False))
    if os.environ.get("HF_RGDA_UPDATE_SNAPSHOT"):
        data = _load()
        data[name] = got
        FIXTURE.parent.mkdir(exist_ok=True)
        FIXTURE.write_text(json.dumps(dict(sorted(data.items())), indent=1, ensure_ascii=False) + "\n")
        pytest.skip("snapshot updated")
    want = _load().get(name)
    assert want is not None, f"no snapshot for {name}: run with HF_RGDA_UPDATE_SNAPSHOT=1"
    assert len(got["calls"]) == len(want["calls"]), "the number of LLM calls changed"
    for i, (g, w) in enumerate(zip(got["calls"], want["calls"])):
        assert g == w, f"call {i} differs"
    assert got["rows"] == want["rows"]
    assert got["summary"] == want["summary"]


def test_snapshot_covers_every_stage() -> None:
    """The fixture is only a proof if it exercises the stages: refinements, repairs, rejections, the debate."""
    data = _load()
    systems = " ".join(c["messages"][0]["content"] for v in data.values() for c in v["calls"])
    for marker in ("improve a sentence guide", "revise synthetic", "proposer", "checks synthetic training sentences",
                   "check the entity tags"):
        assert marker in systems, marker
    statuses = {r["rgda_status"] for v in data.values() for r in v["rows"]}
    assert {"original", "accepted", "rejected"} <= statuses
    reasons = {r["rgda_reason"] for v in data.values() for r in v["rows"]}
    assert {"entity_verify/unverified_entity", "entity_verify/no_entity"} <= reasons, "no verifier rejection"
    assert any(len(c["messages"]) > 2 for v in data.values() for c in v["calls"]), "no repair or re-ask"
