"""hf_rgda demo Space: augment one tagged sentence and watch every stage.

A thin shell over the public API: the backends of ``hf_rgda.llm.BACKENDS``, the methods of ``hf_rgda.METHODS`` with
the ``where`` and ``debate_review`` switches of ``AugmentConfig``, ``RGDAAugmenter`` run by the run recipe
(``hf_rgda.recipe.augment``), ``hf_rgda.tags.parse_inline`` and ``hf_rgda.hub.push_augmented``. While it works, the
pipeline's per-stage progress bars show in the page (``gr.Progress(track_tqdm=True)``).

Run locally: ``python spaces/app.py`` (127.0.0.1:7860). ``HF_RGDA_SPACE_LLM`` replaces the default local model
(the tests use the tiny one). The backend selected at first is the local one where llama.cpp is installed, else
OpenAI (a Space built by ``scripts/build_space.sh`` without ``--local``); ``HF_RGDA_SPACE_BACKEND`` chooses another.
API keys typed in are passed to that one request's backend and dropped with it: never stored, cached, logged or
shown. A Space secret such as ``OPENAI_API_KEY`` serves the requests that type no key, but only towards the provider's
own endpoint or a base URL the owner lists in ``HF_RGDA_SPACE_BASE_URLS`` (comma-separated): a Base URL a visitor
types gets the key the visitor typed, or none (``key_from_env=False``), so the owner's key never reaches a server the
owner did not choose.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import tempfile
from typing import Any

import gradio as gr
from datasets import Dataset, DatasetDict

from hf_rgda import DEFAULT_LLM, METHODS, AugmentConfig, RGDAAugmenter, RGDAError
from hf_rgda._secrets import forget_secret
from hf_rgda.llm import BACKENDS, EXAMPLE_MODELS
from hf_rgda.recipe import augment as run_recipe
from hf_rgda.records import SeedTrace
from hf_rgda.tags import parse_inline, tags_to_spans

LOCAL_LLM = os.environ.get("HF_RGDA_SPACE_LLM", DEFAULT_LLM)
# the local backend needs llama.cpp (hf_rgda[local], compiled at install); without it an API backend comes first
BACKEND = os.environ.get("HF_RGDA_SPACE_BACKEND") or ("local" if importlib.util.find_spec("llama_cpp") else "openai")
# written for this Space: one sentence in the style of each benchmark dataset, with that dataset's entity types
EXAMPLES = [
    ["Carriers of the mutation had a higher risk of [ovarian cancer](Disease) .", "Disease",
     "biomedical research abstracts (disease mentions)"],
    ["We apply [conditional random fields](Method) to [part-of-speech tagging](Task) .",
     "Generic, Material, Method, Metric, OtherScientificTerm, Task", "computer science research abstracts"],
    ["The agreement was signed by [Acme Holdings](ORG) in [Delaware](LOC) .", "LOC, MISC, ORG, PER",
     "financial agreements and SEC filings"],
]
# base URLs the Space's owner trusts with the Space's secrets (the provider's own endpoint needs no entry)
TRUSTED_URLS = {u.strip().rstrip("/") for u in os.environ.get("HF_RGDA_SPACE_BASE_URLS", "").split(",") if u.strip()}
HELP = {f.name: f.metadata["help"] for f in dataclasses.fields(AugmentConfig)}
#: what a pushed card names as the source of the seed sentence
SOURCE = "a sentence typed into the hf_rgda demo Space"


def _augmenter(types: list[str], method: str, where: bool, debate_review: bool, backend: str, model: str,
               api_key: str, base_url: str, num_augmented: int, domain: str, attribution_model: str) -> RGDAAugmenter:
    """The augmenter of one request (ConfigError for a combination the configuration refuses)."""
    labels = ["O"] + [f"{p}-{t}" for t in types for p in ("B", "I")]
    if backend == "local":
        llm, options = LOCAL_LLM if not model.strip() else f"local:{model.strip()}", {}
    else:
        if not model.strip():
            raise gr.Error(f"type a model name for the {backend} backend, e.g. {EXAMPLE_MODELS.get(backend, '')}")
        llm, url = f"{backend}:{model.strip()}", base_url.strip()
        options = {k: v for k, v in {"api_key": api_key.strip() or None, "base_url": url or None}.items() if v}
        # the environment's key (the owner's secret) only for the provider's endpoint or a URL the owner trusts
        options["key_from_env"] = not url or url.rstrip("/") in TRUSTED_URLS
    return RGDAAugmenter(llm, label_names=labels, method=method, where=where, debate_review=debate_review,
                         num_augmented=int(num_augmented), domain=domain, keep_rejected=True, llm_options=options,
                         attribution_model=attribution_model.strip() or None)


def _stages(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the page shows of the seed's trace (read with the library's typed reader)."""
    trace = next(t for r in rows if (t := SeedTrace.read(r["rgda_trace"])) is not None)
    rejected = [[f"{x.stage}/{x.reason}", x.detail] for x in trace.rejected]
    if trace.failure:
        rejected.append(["failed", trace.failure])
    rounds = {kind: [[i, v.score, ("passed early, the criteria asked: " if v.partial else "")
                      + "; ".join(f"{c} {v.criteria[c]}: {v.feedback.get(c, '')}" for c in v.criteria)]
                     for i, v in enumerate(verdicts, 1)] for kind, verdicts in (("gr", trace.judgements.get("guidance_judge", [])),
                                                     ("ac", trace.judgements.get("composition_judge", [])))}
    return {"guidance": trace.guidance or {}, **rounds, "rejected": rejected, "attribution": trace.attribution,
            "transcript": (trace.debate or {}).get("transcript", [])}


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


def _download(rows: list[dict[str, Any]]) -> str:
    """The seed and accepted rows as a JSONL file."""
    fd, path = tempfile.mkstemp(prefix="hf_rgda_", suffix=".jsonl")
    with os.fdopen(fd, "w") as fh:
        for r in rows:
            if r["rgda_status"] in ("original", "accepted"):
                fh.write(json.dumps({"tokens": r["tokens"], "ner_tags": r["ner_tags"], "status": r["rgda_status"]}) + "\n")
    return path


def augment(sentence: str, types_text: str, domain: str, method: str, where: bool, debate_review: bool, backend: str,
            model: str, api_key: str, base_url: str, num_augmented: float, attribution_model: str = "",
            progress: gr.Progress = gr.Progress(track_tqdm=True)) -> tuple[Any, ...]:  # noqa: B008 - gradio's idiom
    """Run one sentence through the pipeline; returns every stage's record and the accepted sentences."""
    types = [t.strip() for t in types_text.split(",") if t.strip()]
    tokens, tags = parse_inline(sentence)
    if not tokens:
        raise gr.Error("type a sentence, with entities written as [text](Type)")
    unknown = sorted({t[2:] for t in tags if t != "O"} - set(types))
    if unknown:
        raise gr.Error(f"entity type(s) {unknown} are not in the entity types {types}")
    aug = None
    try:
        aug = _augmenter(types, method, where, debate_review, backend, model, api_key, base_url, int(num_augmented),
                         domain, attribution_model)
        run = run_recipe(Dataset.from_dict({"tokens": [tokens], "ner_tags": [tags]}), aug, batch_size=1,
                         desc=f"{method} augmentation")
    except (RGDAError, ImportError) as err:  # ImportError: a backend whose SDK or llama.cpp is not installed
        raise gr.Error(str(err)) from None
    finally:  # a key typed for this request is not kept in the process (nor in its environment) after it
        if aug is not None and getattr(aug.llm, "_secret_id", None):
            forget_secret(aug.llm._secret_id)
    rows = run.rows.to_list()
    stages, s = _stages(rows), run.summary.to_dict()
    accepted = [r for r in rows if r["rgda_status"] == "accepted"]
    status = (f"**{method}** with `{aug.llm.identity().get('model')}`: {len(accepted)} accepted, "
              f"{len(stages['rejected'])} rejected; {s['calls']} LLM calls ({s['cached_calls']} from cache), "
              f"{s['prompt_tokens'] + s['completion_tokens']} tokens, {s['llm_seconds']} s")
    report = run.report(source=SOURCE, split="seed")  # the card's provenance: configuration, backend, figures
    return (status, stages["guidance"], stages["gr"], stages["ac"], _highlight(accepted), stages["rejected"],
            _download(rows), _heatmap(stages["attribution"]), stages["transcript"], rows, report)


def push(rows: list[dict[str, Any]] | None, report: dict[str, Any] | None, repo_id: str, token: str) -> str:
    """Push the last result (seed + augmented splits) to the Hub with the same dataset card and run files as
    ``hf-rgda push`` (``report``: the run's, from :func:`augment`)."""
    from hf_rgda.hub import push_augmented

    if not rows:
        return "run an augmentation first"
    if "/" not in repo_id:
        return "give the repository as user/name"
    if not token.strip():  # never the Space's own HF_TOKEN: a visitor pushes with a token of their own
        return "type a Hub token with write access to that repository (the Space's own token is not lent to visitors)"
    keep = ("tokens", "ner_tags")
    dsd = DatasetDict({split: Dataset.from_list([{k: r[k] for k in keep} for r in rows if r["rgda_status"] == status])
                       for split, status in (("seed", "original"), ("augmented", "accepted"))})
    try:
        return f"pushed: {push_augmented(dsd, repo_id.strip(), token=token.strip(), report=report, rejections=rows)}"
    except RGDAError as err:
        return f"push failed: {err}"


def _inputs() -> list[Any]:
    """The request's input components, in :func:`augment`'s order."""
    with gr.Row():
        with gr.Column(scale=3):
            sentence = gr.Textbox(label="Tagged sentence", elem_id="sentence", lines=2)
            types = gr.Textbox(label="Entity types (comma-separated)", value="Disease", elem_id="types")
            domain = gr.Textbox(label="Domain", value=EXAMPLES[0][2])
        with gr.Column(scale=2):
            method = gr.Dropdown(list(METHODS), value="rgda", label="Method", elem_id="method", info=HELP["method"])
            where = gr.Checkbox(label="where", info=HELP["where"], elem_id="where")
            debate = gr.Checkbox(label="debate_review", info=HELP["debate_review"], elem_id="debate_review")
            backend = gr.Dropdown(list(BACKENDS), value=BACKEND, label="Backend", elem_id="backend")
            model = gr.Textbox(label="Model (blank: the local default)", value="", elem_id="model",
                               placeholder=", ".join(f"{b}: {m}" for b, m in EXAMPLE_MODELS.items()))
            api_key = gr.Textbox(label="API key (this request only)", type="password")
            base_url = gr.Textbox(label="Base URL (OpenAI-compatible servers)", value="", elem_id="base_url")
            num = gr.Slider(1, 5, value=3, step=1, label="New sentences per seed", elem_id="num")
            where_model = gr.Textbox(label="Attribution model folder or Hub id (biorda, where)",
                                     value=os.environ.get("HF_RGDA_SPACE_WHERE", ""))
    gr.Examples(EXAMPLES, [sentence, types, domain], label="Example sentences")
    return [sentence, types, domain, method, where, debate, backend, model, api_key, base_url, num, where_model]


def build() -> gr.Blocks:
    with gr.Blocks(title="hf_rgda: LLM data augmentation for NER") as demo:
        gr.Markdown("# hf_rgda\nWrite a tagged sentence (entities as `[text](Type)`), pick a method and a backend, and "
                    "watch the guidance, every judge round and the new sentences. The local model, where installed, runs "
                    "on this machine (minutes per sentence on a CPU: the progress bar shows the stage it is in); API "
                    "keys are used for this request only.")
        inputs = _inputs()
        run = gr.Button("Augment", variant="primary", elem_id="run")
        status = gr.Markdown(elem_id="status")
        result = gr.HighlightedText(label="Accepted sentences", elem_id="result", show_legend=True)
        with gr.Accordion("Stages", open=True):
            guidance = gr.JSON(label="Guidance")
            gr_rounds = gr.Dataframe(headers=["round", "score", "feedback"], label="Guidance Refiner rounds")
            ac_rounds = gr.Dataframe(headers=["round", "score", "feedback"], label="Augmentation Calibrator rounds")
            rejected = gr.Dataframe(headers=["reason", "detail"], label="Rejected and failed", elem_id="rejected")
            heat = gr.HighlightedText(label="WHERE: leave-one-out attribution (chosen words marked *)", elem_id="heat")
            transcript = gr.JSON(label="WHICH: debate transcript")
        download = gr.File(label="Download JSONL")
        rows, report = gr.State(), gr.State()
        with gr.Row():
            repo = gr.Textbox(label="Hub dataset repo (user/name)")
            token = gr.Textbox(label="Hub token (this request only)", type="password")
            push_btn = gr.Button("Push to Hub")
        pushed = gr.Markdown()
        run.click(augment, inputs, [status, guidance, gr_rounds, ac_rounds, result, rejected, download, heat, transcript,
                                    rows, report], api_name="augment")
        push_btn.click(push, [rows, report, repo, token], pushed, api_name="push")
    return demo


if __name__ == "__main__":
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    build().launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
