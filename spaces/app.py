"""hf_rgda demo Space: augment one tagged sentence and watch every stage.

A thin shell over the public API (``RGDAAugmenter``, ``hf_rgda.tags.parse_inline``, ``hf_rgda.hub.push_augmented``).
Run locally: ``python spaces/app.py`` (127.0.0.1:7860). ``HF_RGDA_SPACE_LLM`` replaces the default local model
(the tests use the tiny one). API keys typed in are passed to that one request's backend and dropped with it:
never stored, cached, logged or shown.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr
from datasets import Dataset, DatasetDict

from hf_rgda import DEFAULT_LLM, METHODS, RGDAAugmenter, RGDAError
from hf_rgda.tags import format_inline, parse_inline, tags_to_spans

LOCAL_LLM = os.environ.get("HF_RGDA_SPACE_LLM", DEFAULT_LLM)
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BACKENDS = ["local", "openai", "anthropic", "gemini"]
DOMAINS = {"ncbi_disease": "biomedical research abstracts (disease mentions)",
           "scierc": "computer science research abstracts", "fin": "financial agreements and SEC filings"}
# used only when the benchmark data is not beside the Space (e.g. on the Hub); written for this demo
FALLBACK = {
    "ncbi_disease": ("Carriers of the mutation had a higher risk of [ovarian cancer](Disease) .", "Disease"),
    "scierc": ("We apply [conditional random fields](Method) to [part-of-speech tagging](Task) .", "Task, Method"),
    "fin": ("The agreement was signed by [Acme Holdings](ORG) in [Delaware](LOC) .", "PER, LOC, ORG, MISC"),
}


def examples() -> list[list[str]]:
    """One entity-bearing sentence per benchmark dataset (from ../shared/data when present)."""
    out = []
    for name, (fallback, types) in FALLBACK.items():
        sentence = fallback
        path = DATA / name / "train.jsonl"
        if path.is_file():
            with path.open() as fh:
                for line in fh:
                    row = json.loads(line)
                    if any(t != "O" for t in row["ner_tags"]) and len(row["tokens"]) <= 30:
                        sentence = format_inline(row["tokens"], row["ner_tags"])
                        break
            types = ", ".join(sorted({t[2:] for line in path.open() for t in json.loads(line)["ner_tags"] if t != "O"}))
        out.append([sentence, types, DOMAINS[name]])
    return out


@functools.cache
def _mentions(types: tuple[str, ...]) -> dict[str, list[str]]:
    """Entity-hint pool: the mentions of a benchmark dataset beside the Space whose entity types are exactly
    ``types``; empty otherwise (the composer then gets the never-reuse instruction)."""
    from hf_rgda.sentences import entity_mentions

    for name in DOMAINS:
        path = DATA / name / "train.jsonl"
        if path.is_file():
            rows = [json.loads(line) for line in path.open()]
            if {t[2:] for r in rows for t in r["ner_tags"] if t != "O"} == set(types):
                return entity_mentions([r["tokens"] for r in rows], [r["ner_tags"] for r in rows])
    return {}


def _augmenter(types: list[str], method: str, backend: str, model: str, api_key: str, base_url: str,
               num_augmented: int, domain: str, where: str = "") -> RGDAAugmenter:
    labels = ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]
    if backend == "local":
        llm, options = LOCAL_LLM if not model.strip() else f"local:{model.strip()}", {}
    else:
        if not model.strip():
            raise gr.Error(f"type a model name for the {backend} backend")
        llm = f"{backend}:{model.strip()}"
        options = {k: v for k, v in {"api_key": api_key.strip() or None, "base_url": base_url.strip() or None}.items() if v}
    extra: dict[str, Any] = {}
    method, _, combo = method.partition("+")  # "rgda+where" / "rgda+debate": rgda with WHERE or with the debate panel
    if method == "biorda" or combo == "where":
        if not where.strip():
            raise gr.Error(f"{method}{'+where' if combo else ''} needs an attribution model folder (train one with "
                           "hf_rgda.attribution.fit_seed_model)")
        extra = {"attribution_model": where.strip(), "debate_agents": 3, "where": combo == "where"}
    elif combo == "debate":
        extra = {"debate_review": True, "debate_agents": 3}
    return RGDAAugmenter(llm, label_names=labels, method=method, num_augmented=int(num_augmented), domain=domain,
                         keep_rejected=True, mentions=_mentions(tuple(sorted(types))), llm_options=options, **extra)


def _rounds(verdicts: list[dict[str, Any]]) -> list[list[Any]]:
    return [[i, v["score"], "; ".join(f"{k} {v['criteria'][k]}: {v['feedback'][k]}" for k in v["criteria"])]
            for i, v in enumerate(verdicts, 1)]


def _highlight(rows: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for n, r in enumerate(rows, 1):
        out.append((f"{n}. ", None))
        pos = 0
        for s in tags_to_spans(r["ner_tags"]):
            if s.start > pos:
                out.append((" ".join(r["tokens"][pos : s.start]) + " ", None))
            out.append((" ".join(r["tokens"][s.start : s.end]), s.label))
            out.append((" ", None))
            pos = s.end
        out.append((" ".join(r["tokens"][pos:]) + "\n", None))
    return out


def _heatmap(attribution: dict[str, Any] | None) -> list[tuple[str, float | None]]:
    """Words with their combined WHERE score (0..1) for a heat-map; chosen words marked."""
    if not attribution:
        return []
    return [(f"{tok}{' *' if i in attribution['selected'] else ''} ", round(attribution["combined"][i], 3)
             if i not in attribution["protected"] else None) for i, tok in enumerate(attribution["tokens"])]


def augment(sentence: str, types_text: str, domain: str, method: str, backend: str, model: str, api_key: str,
            base_url: str, num_augmented: float, where: str = "") -> tuple[Any, ...]:
    """Run one sentence through the pipeline; returns every stage's record and the accepted sentences."""
    types = [t.strip() for t in types_text.split(",") if t.strip()]
    tokens, tags = parse_inline(sentence)
    if not tokens:
        raise gr.Error("type a sentence, with entities written as [text](Type)")
    unknown = sorted({t[2:] for t in tags if t != "O"} - set(types))
    if unknown:
        raise gr.Error(f"entity type(s) {unknown} are not in the entity types {types}")
    try:
        aug = _augmenter(types, method, backend, model, api_key, base_url, int(num_augmented), domain, where)
        table = aug({"tokens": [tokens], "ner_tags": [tags]})
    except RGDAError as err:
        raise gr.Error(str(err)) from None
    rows = table.to_pylist()
    trace = json.loads(next(r["rgda_trace"] for r in rows if r["rgda_trace"] and r["rgda_status"] != "rejected"))
    accepted = [r for r in rows if r["rgda_status"] == "accepted"]
    rejected = [[r["rgda_reason"], json.loads(r["rgda_trace"]).get("detail", "")] for r in rows
                if r["rgda_status"] == "rejected"]
    if trace.get("failure"):
        rejected.append(["failed", trace["failure"]])
    s = aug.summary.to_dict()
    status = (f"**{method}** with `{aug.llm.identity().get('model')}`: {len(accepted)} accepted, {len(rejected)} "
              f"rejected; {s['llm_calls']} LLM calls ({s['cached_calls']} from cache), "
              f"{s['prompt_tokens'] + s['completion_tokens']} tokens, {s['llm_seconds']} s")
    fd, path = tempfile.mkstemp(prefix="hf_rgda_", suffix=".jsonl")
    with os.fdopen(fd, "w") as fh:
        for r in rows:
            if r["rgda_status"] in ("original", "accepted"):
                fh.write(json.dumps({"tokens": r["tokens"], "ner_tags": r["ner_tags"], "status": r["rgda_status"]}) + "\n")
    return (status, trace.get("guidance") or {}, _rounds(trace.get("gr", [])), _rounds(trace.get("ac", [])),
            _highlight(accepted), rejected, path, _heatmap(trace.get("attribution")),
            (trace.get("debate") or {}).get("transcript", []), rows)


def push(rows: list[dict[str, Any]] | None, repo_id: str, token: str) -> str:
    """Push the last result (seed + augmented splits) to the Hub with a dataset card."""
    from hf_rgda.hub import push_augmented

    if not rows:
        return "run an augmentation first"
    if "/" not in repo_id:
        return "give the repository as user/name"
    keep = ("tokens", "ner_tags")
    dsd = DatasetDict({split: Dataset.from_list([{k: r[k] for k in keep} for r in rows if r["rgda_status"] == status])
                       for split, status in (("seed", "original"), ("augmented", "accepted"))})
    try:
        return f"pushed: {push_augmented(dsd, repo_id.strip(), token=token.strip() or None)}"
    except RGDAError as err:
        return f"push failed: {err}"


def build() -> gr.Blocks:
    with gr.Blocks(title="hf_rgda: LLM data augmentation for NER") as demo:
        gr.Markdown("# hf_rgda\nWrite a tagged sentence (entities as `[text](Type)`), pick a method and a backend, and "
                    "watch the guidance, every judge round and the new sentences. The local model runs on this "
                    "machine; API keys are used for this request only.")
        with gr.Row():
            with gr.Column(scale=3):
                sentence = gr.Textbox(label="Tagged sentence", elem_id="sentence", lines=2)
                types = gr.Textbox(label="Entity types (comma-separated)", value="Disease", elem_id="types")
                domain = gr.Textbox(label="Domain", value=DOMAINS["ncbi_disease"])
            with gr.Column(scale=2):
                method = gr.Dropdown([*METHODS, "rgda+where", "rgda+debate"], value="rgda", label="Method", elem_id="method")
                backend = gr.Dropdown(BACKENDS, value="local", label="Backend")
                model = gr.Textbox(label="Model (blank: the local default)", value="")
                api_key = gr.Textbox(label="API key (this request only)", type="password")
                base_url = gr.Textbox(label="Base URL (OpenAI-compatible servers)", value="")
                num = gr.Slider(1, 5, value=3, step=1, label="New sentences per seed", elem_id="num")
                where = gr.Textbox(label="Attribution model folder (biorda)", value=os.environ.get("HF_RGDA_SPACE_WHERE", ""))
        gr.Examples(examples(), [sentence, types, domain], label="One sentence from each dataset")
        run = gr.Button("Augment", variant="primary", elem_id="run")
        status = gr.Markdown(elem_id="status")
        result = gr.HighlightedText(label="Accepted sentences", elem_id="result", show_legend=True)
        with gr.Accordion("Stages", open=True):
            guidance = gr.JSON(label="Guidance")
            gr_rounds = gr.Dataframe(headers=["round", "score", "feedback"], label="Guidance Refiner rounds")
            ac_rounds = gr.Dataframe(headers=["round", "score", "feedback"], label="Augmentation Calibrator rounds")
            rejected = gr.Dataframe(headers=["reason", "detail"], label="Rejected and failed")
            heat = gr.HighlightedText(label="WHERE: leave-one-out attribution (chosen words marked *)", elem_id="heat")
            transcript = gr.JSON(label="WHICH: debate transcript")
        download = gr.File(label="Download JSONL")
        rows = gr.State()
        with gr.Row():
            repo = gr.Textbox(label="Hub dataset repo (user/name)")
            token = gr.Textbox(label="Hub token (this request only)", type="password")
            push_btn = gr.Button("Push to Hub")
        pushed = gr.Markdown()
        run.click(augment, [sentence, types, domain, method, backend, model, api_key, base_url, num, where],
                  [status, guidance, gr_rounds, ac_rounds, result, rejected, download, heat, transcript, rows],
                  api_name="augment")
        push_btn.click(push, [rows, repo, token], pushed, api_name="push")
    return demo


if __name__ == "__main__":
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    build().launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
