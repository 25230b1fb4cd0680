"""Publishing to the Hugging Face Hub: augmented datasets with a provenance card, trained NER models with a model card.

Cards are filled from the templates in ``hf_rgda/cards/`` (package data) and from the run's own
records (``summary.json`` of ``hf-rgda augment``, ``metrics.json``/``train_config.json`` of ``hf-rgda train``). No
token or API key is ever written: cards are built from configuration and counts only, and every pushed text is
checked against the secrets in the environment before upload.

Example:
    >>> # push_augmented("out/ncbi-rgda", "me/ncbi-disease-rgda")       # an `hf-rgda augment --out` folder
    >>> # push_model("models/ncbi", "me/minilm-ncbi-rgda")               # an `hf-rgda train --out` folder
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from . import prompts
from ._exceptions import ConfigError, HubError
from ._secrets import environment_secrets, redact
from ._version import __version__
from .columns import META_COLUMNS

__all__ = ["dataset_card", "model_card", "push_augmented", "push_model"]

#: licenses of the benchmark datasets by folder name (see their provenance); others are read from the source card
KNOWN_LICENSES = {"fin": "cc-by-3.0", "ncbi_disease": "other", "scierc": "unknown"}


def _template(name: str) -> Template:
    return Template(resources.files("hf_rgda.cards").joinpath(f"{name}.md").read_text(encoding="utf-8"))


def _check_clean(text: str, token: str | None) -> str:
    """``text`` unchanged, or HubError when the one scrubber (:func:`~hf_rgda._secrets.redact`) would change it: a
    secret from the environment, the token, or anything shaped like a provider key appears in it."""
    if redact(text, [*environment_secrets(), token or ""]) != text:
        raise HubError("refusing to publish: a secret from the environment appears in the card text")
    return text


def _token(token: str | None) -> str:
    from huggingface_hub import get_token

    found = token or get_token()
    if not found:
        raise HubError("no Hub token: pass token=... (--token), set HF_TOKEN, or run `hf auth login`")
    return found


def _login(api: Any) -> str:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return api.whoami()["name"]
    except HfHubHTTPError as err:
        status = getattr(err.response, "status_code", "?")
        raise HubError(f"the Hub rejected the token (HTTP {status}); check HF_TOKEN or --token") from None


def _license(source: str | None) -> str:
    if not source:
        return "unknown"
    name = Path(source).name
    if name in KNOWN_LICENSES:
        return KNOWN_LICENSES[name]
    if Path(source).exists():
        return "unknown"
    try:  # a Hub dataset id: carry its declared license
        from huggingface_hub import DatasetCard

        return DatasetCard.load(source).data.get("license") or "unknown"
    except Exception:  # noqa: BLE001 - any failure to read the source card means "not known"
        return "unknown"


def _figures(summary: Mapping[str, Any]) -> str:
    keys = [("seeds", "seeds in"), ("accepted", "accepted sentences"), ("accepted_per_seed", "accepted per seed"),
            ("rejected", "rejected sentences"), ("failed_seeds", "failed seeds"),
            ("skipped_seeds_without_entities", "seeds without entities (not augmented)"), ("calls", "LLM calls"),
            ("prompt_tokens", "prompt tokens"), ("completion_tokens", "completion tokens")]
    lines = [f"- {label}: {summary[k]}" for k, label in keys if k in summary]
    if summary.get("rejected_by_reason"):
        lines.append("- rejected by reason: " + ", ".join(f"{k} {v}" for k, v in summary["rejected_by_reason"].items()))
    for k, v in (summary.get("judge_scores") or {}).items():
        lines.append(f"- {k} scores: mean {v['mean']}, min {v['min']}, max {v['max']} (n {v['n']})")
    for k, n in (summary.get("judge_passed_early") or {}).items():
        lines.append(f"- {k}: {n} verdicts passed early (criteria asked until their points reached the threshold)")
    return "\n".join(lines) or "- not recorded"


def dataset_card(dsd: Any, report: Mapping[str, Any] | None, *, repo_id: str, source: str | None = None,
                 license: str | None = None, include_metadata: bool = True) -> str:
    """The README.md (YAML metadata + body) of an augmented dataset."""
    from huggingface_hub import DatasetCardData

    report = dict(report or {})
    cfg = report.get("config", {})
    summary = report.get("summary", {})
    src = source or (report.get("source")[0] if isinstance(report.get("source"), list) else report.get("source"))
    n = sum(len(dsd[s]) for s in dsd)
    size = "n<1K" if n < 1_000 else "1K<n<10K" if n < 10_000 else "10K<n<100K" if n < 100_000 else "100K<n<1M"
    data = DatasetCardData(
        license=license or _license(src), task_categories=["token-classification"],
        task_ids=["named-entity-recognition"], tags=["synthetic", "data-augmentation", "ner", "hf-rgda",
                                                    f"method:{cfg.get('method', 'unknown')}"],
        source_datasets=[src if src and not Path(src).exists() else f"local:{Path(src).name}" if src else "unknown"],
        size_categories=[size], pretty_name=f"{repo_id.split('/')[-1]}",
    )
    feature = getattr(dsd[next(iter(dsd))].features.get("ner_tags"), "feature", None)
    labels = getattr(feature, "names", None) or sorted({t for s in dsd for r in dsd[s]["ner_tags"] for t in r})
    cost = report.get("cost") or {}
    rounds = summary.get("judge_rounds") or {}
    body = _template("dataset_card").substitute(
        title=repo_id.split("/")[-1], version=__version__, method=cfg.get("method", "unknown"), source=src or "unknown",
        splits_table="\n".join(f"| {s} | {len(dsd[s])} | {'seed sentences' if s == 'seed' else 'accepted augmented sentences' if s == 'augmented' else s} |" for s in dsd),
        threshold=cfg.get("threshold", "?"),
        probability_threshold=cfg.get("probability_threshold", cfg.get("threshold", "?")),  # older runs: one threshold
        judge_reading=cfg.get("judge_reading", "?"), max_rounds=cfg.get("max_rounds", "?"),
        llm=_llm_name(report.get("llm")), temperature=cfg.get("temperature", "?"),
        judge_temperature=cfg.get("judge_temperature", "?"), seed=cfg.get("seed", "?"),
        representation=cfg.get("representation", "?"), prompts_hash=prompts.templates_hash()[:16],
        labels=", ".join(f"`{x}`" for x in labels), figures=_figures(summary),
        rounds=", ".join(f"{k.upper()} {dict(v)}" for k, v in rounds.items() if v) or "none recorded",
        cost=f"${cost['usd']:.6f} ({cost['note']})" if cost else "not recorded",
        metadata_note=(", plus the `rgda_*` metadata columns (status, source seed, judge scores by round, and a JSON "
                       "trace of each seed on its first row)") if include_metadata else "",
    )
    return f"---\n{data.to_yaml()}\n---\n\n{body}"


def _llm_name(identity: Mapping[str, Any] | None) -> str:
    if not identity:
        return "unknown"
    name = f"{identity.get('backend')}:{identity.get('model')}"
    return name + (f" at {identity['base_url']}" if identity.get("base_url") and identity.get("backend") != "local" else "")


def _load(data: Any) -> tuple[Any, dict[str, Any] | None]:
    from datasets import DatasetDict, load_from_disk

    if isinstance(data, DatasetDict):
        return data, None
    path = Path(data)
    for folder in (path / "dataset", path):
        if (folder / "dataset_dict.json").is_file():
            report_file = path / "summary.json"
            report = json.loads(report_file.read_text()) if report_file.is_file() else None
            return load_from_disk(str(folder)), report
    raise ConfigError(f"{data}: not a DatasetDict or an `hf-rgda augment --out` folder")


def push_augmented(data: Any, repo_id: str, *, token: str | None = None, private: bool = False,
                   include_metadata: bool = True, report: Mapping[str, Any] | None = None, source: str | None = None,
                   license: str | None = None, commit_message: str | None = None) -> str:
    """Push an augmented ``DatasetDict`` (or an ``hf-rgda augment --out`` folder) with its dataset card.

    Args:
        data: a ``DatasetDict`` (splits such as ``seed`` and ``augmented``) or an augment output folder.
        repo_id: ``user/name`` of the dataset repository (created when missing; a re-push updates it).
        token: a Hub token (default: ``HF_TOKEN`` or the stored login).
        include_metadata: keep the ``rgda_*`` columns.
        report: the run report (``summary.json``); read from the folder when ``data`` is one.
        source, license: override what the card says about the source dataset.

    Returns:
        The repository URL.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    dsd, found = _load(data)
    report = report or found
    if not include_metadata:
        dsd = dsd.remove_columns([c for c in META_COLUMNS if c in dsd[next(iter(dsd))].column_names])
    tok = _token(token)
    api = HfApi(token=tok)
    _login(api)
    card = _check_clean(dataset_card(dsd, report, repo_id=repo_id, source=source, license=license,
                                     include_metadata=include_metadata), tok)
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_file(path_or_fileobj=card.encode(), path_in_repo="README.md", repo_id=repo_id, repo_type="dataset",
                        commit_message="dataset card (hf_rgda)")
        dsd.push_to_hub(repo_id, token=tok, private=private,
                        commit_message=commit_message or f"hf_rgda {__version__}: push augmented splits")
    except HfHubHTTPError as err:
        raise HubError(f"pushing {repo_id} failed: HTTP {getattr(err.response, 'status_code', '?')}") from None
    return str(url)


def model_card(model_dir: str | Path, *, repo_id: str, training_data: str = "", eval_data: str = "") -> str:
    """The README.md of a model trained with :func:`hf_rgda.train.train_ner` (reads its JSON records)."""
    from huggingface_hub import ModelCardData

    folder = Path(model_dir)
    cfg = json.loads((folder / "train_config.json").read_text()) if (folder / "train_config.json").is_file() else {}
    metrics = json.loads((folder / "metrics.json").read_text()) if (folder / "metrics.json").is_file() else {}
    ev = metrics.get("eval") or {}
    rows = [f"| {t} | {v['precision']:.4f} | {v['recall']:.4f} | {v['f1']:.4f} | {v['number']} |"
            for t, v in sorted(ev.items()) if isinstance(v, dict)]
    if ev:
        rows.append(f"| **overall** | {ev['overall_precision']:.4f} | {ev['overall_recall']:.4f} | "
                    f"{ev['overall_f1']:.4f} | |")
    base = cfg.get("model", "unknown")
    data = ModelCardData(license="apache-2.0", library_name="transformers", pipeline_tag="token-classification",
                         base_model=base if not Path(base).exists() else None,
                         tags=["token-classification", "ner", "hf-rgda"],
                         datasets=[d for d in [training_data] if d and "/" in d and not Path(d).exists()] or None)
    hyper = {k: cfg[k] for k in ("epochs", "max_steps", "learning_rate", "batch_size", "weight_decay", "warmup_ratio",
                                 "max_length", "long", "seed") if k in cfg}
    hyper["optimizer steps"] = metrics.get("train_steps", "?")
    body = _template("model_card").substitute(
        title=repo_id.split("/")[-1], base_model=base, version=__version__,
        training_data=(f"`{training_data}`: " if training_data else "")
        + f"{metrics.get('train_sentences', '?')} sentences ({metrics.get('train_examples', '?')} examples after "
        f"windowing long sentences; {metrics.get('truncated_words', 0)} words truncated).",
        scheme=ev.get("scheme", "IOB2"), mode=ev.get("mode", "strict"), eval_data=f"`{eval_data}`" if eval_data else
        "the evaluation split", metrics_table="\n".join(rows) or "| not evaluated | | | | |",
        hyperparameters="\n".join(f"| {k} | {v} |" for k, v in hyper.items()), repo_id=repo_id,
        example="Germline mutations in BRCA1 cause breast cancer.",
    )
    return f"---\n{data.to_yaml()}\n---\n\n{body}"


def push_model(model_dir: str | Path, repo_id: str, *, token: str | None = None, private: bool = False,
               training_data: str = "", eval_data: str = "") -> str:
    """Push a trained model folder with its model card; returns the repository URL."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    tok = _token(token)
    api = HfApi(token=tok)
    _login(api)
    card = _check_clean(model_card(model_dir, repo_id=repo_id, training_data=training_data, eval_data=eval_data), tok)
    try:
        url = api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        (Path(model_dir) / "README.md").write_text(card)
        api.upload_folder(folder_path=str(model_dir), repo_id=repo_id, repo_type="model",
                          commit_message=f"hf_rgda {__version__}: NER model")
    except HfHubHTTPError as err:
        raise HubError(f"pushing {repo_id} failed: HTTP {getattr(err.response, 'status_code', '?')}") from None
    return str(url)
