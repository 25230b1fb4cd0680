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

import importlib
import json
import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from . import prompts
from ._exceptions import ConfigError, HubError
from ._secrets import environment_secrets, redact
from ._version import __version__
from .columns import META_COLUMNS
from .config import AugmentConfig, is_flag
from .inputs import looks_like_path
from .pricing import usd
from .summary import read_figures

__all__ = ["dataset_card", "llm_name", "model_card", "public", "public_identity", "push_augmented", "push_model",
           "reproduce_command"]

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
    return _card_field(source, "license", Path(source).exists()) or "unknown"  # a Hub id: its declared license


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
                 license: str | None = None, include_metadata: bool = True, language: str | None = None) -> str:
    """The README.md (YAML metadata + body) of an augmented dataset: provenance (``language``, who wrote the
    sentences and the tags), the run's configuration and figures, and the command that reproduces the run from the
    pushed ``seed`` split. No local path or URL: the source shows as its name, the backend without its server
    (:func:`public`)."""
    from huggingface_hub import DatasetCardData

    report = dict(report or {})
    cfg = report.get("config", {})
    summary = read_figures(report.get("summary") or {})  # a summary.json of any release
    src = source or (report.get("source")[0] if isinstance(report.get("source"), list) else report.get("source"))
    local = bool(src) and (Path(src).exists() or looks_like_path(src))
    named = f"local:{Path(src).name}" if local else src if src and _HUB_ID.match(src) else "original" if src else None
    n = sum(len(dsd[s]) for s in dsd)
    size = "n<1K" if n < 1_000 else "1K<n<10K" if n < 10_000 else "10K<n<100K" if n < 100_000 else "100K<n<1M"
    seeds = "seed" in dsd and len(dsd["seed"]) > 0
    data = DatasetCardData(
        language=[language or _card_field(src, "language", local) or "en"],
        license=license or _license(src), task_categories=["token-classification"],
        task_ids=["named-entity-recognition"], tags=["synthetic", "data-augmentation", "ner", "hf-rgda",
                                                    f"method:{cfg.get('method', 'unknown')}"],
        annotations_creators=["machine-generated"] + ["found"] * seeds,
        language_creators=["machine-generated"] + ["found"] * seeds,
        source_datasets=[named or "unknown"],
        size_categories=[size], pretty_name=f"{repo_id.split('/')[-1]}",
    )
    feature = getattr(dsd[next(iter(dsd))].features.get("ner_tags"), "feature", None)
    labels = getattr(feature, "names", None) or sorted({t for s in dsd for r in dsd[s]["ner_tags"] for t in r})
    cost = report.get("cost") or {}
    rounds = summary.get("judge_rounds") or {}
    body = _template("dataset_card").substitute(
        title=repo_id.split("/")[-1], version=__version__, method=cfg.get("method", "unknown"),
        source=f"local:{Path(src).name}" if local else src or "unknown",  # a local path shows as its name
        splits_table="\n".join(f"| {s} | {len(dsd[s])} | {'seed sentences' if s == 'seed' else 'accepted augmented sentences' if s == 'augmented' else s} |" for s in dsd),
        threshold=cfg.get("threshold", "?"),
        probability_threshold=cfg.get("probability_threshold", cfg.get("threshold", "?")),  # older runs: one threshold
        judge_reading=cfg.get("judge_reading", "?"), max_rounds=cfg.get("max_rounds", "?"),
        llm=llm_name(report.get("llm")) + (" (an OpenAI-compatible server of the user's)"
                                           if (report.get("llm") or {}).get("base_url") else ""),
        temperature=cfg.get("temperature", "?"),
        judge_temperature=cfg.get("judge_temperature", "?"), seed=cfg.get("seed", "?"),
        representation=cfg.get("representation", "?"), prompts_hash=prompts.templates_hash()[:16],
        labels=", ".join(f"`{x}`" for x in labels), figures=_figures(summary),
        rounds=", ".join(f"{k.upper()} {dict(v)}" for k, v in rounds.items() if v) or "none recorded",
        cost=(f"{usd(cost.get('usd'))} ({cost['note']})" if cost else "not recorded"),
        command=reproduce_command(report, repo_id) if seeds else "the seed split was not pushed",
        metadata_note=(", plus the `rgda_*` metadata columns (status, source seed, judge scores by round, and a JSON "
                       "trace of each seed on its first row)") if include_metadata else "",
    )
    return public(f"---\n{data.to_yaml()}\n---\n\n{body}")


_FLAGS = frozenset(f.name for f in fields(AugmentConfig) if is_flag(f))  # written --x / --no-x


def reproduce_command(report: Mapping[str, Any], repo_id: str) -> str:
    """The command that runs the same augmentation on the pushed ``seed`` split: the backend and every option whose
    value differs from :class:`~hf_rgda.config.AugmentConfig`'s default (no local path, no server URL)."""
    defaults = AugmentConfig().to_dict()
    ident = report.get("llm") or {}
    line = ["hf-rgda", "augment", repo_id, "--split", "seed", "--min-entities", "0"]
    if ident.get("backend"):
        line += ["--llm", llm_name(ident)]
    if ident.get("base_url"):
        line += ["--base-url", "YOUR_SERVER_URL"]
    for name, value in (report.get("config") or {}).items():
        if name not in defaults or value == defaults[name] or name in ("keep_originals", "keep_rejected"):
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool) and name in _FLAGS:
            line.append(flag if value else "--no-" + flag[2:])
        else:  # a value, or on/off of an option that now counts (top_up, from an older summary.json: on is once)
            line += [flag, str(int(value) if isinstance(value, bool) else value)]
    line += ["--tagger-gate", "seeds"] * bool((report.get("tagger_gate") or {}).get("fitted_on_seeds"))  # --tagger-gate seeds
    return shlex.join([*line, "--out", repo_id.split("/")[-1]])


_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s)\]>'\"`]+", re.IGNORECASE)
# a path starts after no word character, no dot, slash or dash, and no drive letter's colon, but may follow another
# colon (``local:/home/alice/models/x.gguf``: a backend and its model)
_PATH = re.compile(r"(?<![\w.~/-])(?<!\b[A-Za-z]:)(?:~|[A-Za-z]:)?(?:[/\\][^\s/\\'\"`(),;:]+){2,}")


def public(value: Any) -> Any:
    """``value`` (text, or JSON-like data) as it may be published: every URL replaced by ``<url>`` and every
    absolute local path by its last part, so that neither a private server nor the machine's folders show."""
    if isinstance(value, str):
        return _PATH.sub(lambda m: re.split(r"[/\\]", m.group(0))[-1], _URL.sub("<url>", value))
    if isinstance(value, Mapping):
        return {k: public(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [public(v) for v in value]
    return value


_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def _card_field(source: str | None, name: str, local: bool) -> Any:
    """A field of a Hub source dataset's card (its first value for a list), or None."""
    if not source or local or not _HUB_ID.match(source):
        return None
    try:
        from huggingface_hub import DatasetCard

        value = DatasetCard.load(source).data.get(name)
    except Exception:  # noqa: BLE001 - any failure to read the source card means "not known"
        return None
    return value[0] if isinstance(value, list) and value else value or None


def llm_name(identity: Mapping[str, Any] | None) -> str:
    """``backend:model`` of a backend's identity as it may be shown and published: a local model given by its path
    named by its file (:func:`public_identity`), a scripted one by its name; "unknown" without an identity."""
    if not identity:
        return "unknown"
    identity = public_identity(identity)
    return f"{identity.get('backend')}:{identity.get('model') or identity.get('name')}"


def public_identity(identity: Mapping[str, Any]) -> dict[str, Any]:
    """A backend's identity with a local model's path (``/home/alice/models/x.gguf``, ``~/x.gguf``, ``./x.gguf``, a
    file that exists) reduced to the file's name; a Hub name (``ORG/REPO/FILE.gguf``) stays whole."""
    model = identity.get("model")
    if identity.get("backend") != "local" or not isinstance(model, str):
        return dict(identity)
    path = Path(model).expanduser()
    if path.is_absolute() or model.startswith((".", "~")) or path.exists():
        return {**identity, "model": path.name}
    return dict(identity)


def _load(data: Any) -> tuple[Any, dict[str, Any] | None, dict[str, bytes]]:
    """The splits, the run report and the run's files (:func:`run_files`) of ``data``."""
    from datasets import DatasetDict, load_from_disk

    if isinstance(data, DatasetDict):
        return data, None, {}
    path = Path(data)
    for folder in (path / "dataset", path):
        if (folder / "dataset_dict.json").is_file():
            report_file = path / "summary.json"
            report = json.loads(report_file.read_text()) if report_file.is_file() else None
            return load_from_disk(str(folder)), report, {
                p.relative_to(path).as_posix(): p.read_bytes() for name in RUN_FILES
                for p in ([path / name] if (path / name).is_file() else sorted((path / name).glob("*.md")))}
    if not path.exists():
        raise ConfigError(f"{data}: no such folder")
    raise ConfigError(f"{data}: not a DatasetDict or an `hf-rgda augment --out` folder")


#: what ``hf-rgda augment --out`` writes beside the data and a push uploads under ``run/``
RUN_FILES = ("summary.json", "config.json", "rejections.jsonl", "prompts")


def run_files(report: Mapping[str, Any] | None, found: Mapping[str, bytes],
              rejections: Any = None) -> dict[str, bytes]:
    """The run's files as published under ``run/``, each made :func:`public`: those of an augment folder
    (``found``), else made from ``report`` and ``rejections`` (rows with ``rgda_status`` rejected or failed, as the
    Space holds them) and the package's prompt templates."""
    files = dict(found)
    if report and "summary.json" not in files:
        files["summary.json"] = json.dumps(report, indent=2).encode()
        files["config.json"] = json.dumps({k: report[k] for k in ("config", "llm", "source", "split") if k in report},
                                          indent=2).encode()
    if rejections is not None and "rejections.jsonl" not in files:
        files["rejections.jsonl"] = "".join(json.dumps({k: r.get(k) for k in (
            "rgda_source", "rgda_status", "rgda_reason", "rgda_trace")}, ensure_ascii=False) + "\n"
            for r in rejections if r.get("rgda_status") in ("rejected", "failed")).encode()
    if not any(k.startswith("prompts/") for k in files):
        files.update({f"prompts/{n}.md": prompts.template(n).encode() for n in prompts.names()})
    out = {}
    for name, blob in files.items():
        if name.endswith(".json"):
            data = json.loads(blob)
            if isinstance(data, dict) and isinstance(data.get("llm"), Mapping):  # summary.json, config.json
                data["llm"] = public_identity(data["llm"])
            out[name] = json.dumps(public(data), indent=2, ensure_ascii=False).encode()
        elif name.endswith(".jsonl"):
            out[name] = "".join(json.dumps(public(json.loads(line)), ensure_ascii=False) + "\n"
                                for line in blob.decode().splitlines() if line.strip()).encode()
        else:
            out[name] = public(blob.decode()).encode()
    return out


@contextmanager
def _hub_errors(repo_id: str) -> Iterator[None]:
    """The Hub's errors as one :class:`HubError` line: HTTP errors by status, an unreachable Hub by its address."""
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError

    try:
        yield
    except HfHubHTTPError as err:
        raise HubError(f"pushing {repo_id} failed: HTTP {getattr(err.response, 'status_code', '?')}") from None
    except _transport_errors() as err:  # the Hub unreachable: no network, a refused connection, a timeout
        raise HubError(f"cannot reach the Hub at {constants.ENDPOINT} ({type(err).__name__}: "
                       f"{str(err).splitlines()[0][:160] if str(err) else 'no answer'}); check the network or "
                       "HF_ENDPOINT and push again") from None


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The errors of a Hub that cannot be reached: the system's, and the HTTP clients' (``httpx2`` under
    ``huggingface_hub`` 2, ``httpx`` under 1.x, ``requests`` before)."""
    found: list[type[BaseException]] = [ConnectionError, TimeoutError]
    for name in ("httpx", "httpx2"):  # httpx2: the copy huggingface_hub 2 and the openai 3 SDK install
        try:
            found.append(importlib.import_module(name).TransportError)
        except (ImportError, AttributeError):
            pass
    try:
        import requests

        found.append(requests.exceptions.ConnectionError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(found)


def _check_repo_id(repo_id: str) -> None:
    """Raise :class:`ConfigError` unless ``repo_id`` is a valid ``user/name`` (before the token is asked for)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        if "/" not in repo_id:
            raise HFValidationError("give it as user/name")
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ConfigError(f"{repo_id!r} is not a Hub repository id ({str(err).splitlines()[0]})") from None


def push_augmented(data: Any, repo_id: str, *, token: str | None = None, private: bool = False,
                   include_metadata: bool = True, report: Mapping[str, Any] | None = None, source: str | None = None,
                   license: str | None = None, commit_message: str | None = None, language: str | None = None,
                   rejections: Any = None) -> str:
    """Push an augmented ``DatasetDict`` (or an ``hf-rgda augment --out`` folder) with its dataset card and, under
    ``run/``, the run's files (:func:`run_files`).

    Args:
        data: a ``DatasetDict`` (splits such as ``seed`` and ``augmented``) or an augment output folder.
        repo_id: ``user/name`` of the dataset repository (created when missing; a re-push updates it).
        token: a Hub token (default: ``HF_TOKEN`` or the stored login).
        include_metadata: keep the ``rgda_*`` columns.
        report: the run report (``summary.json``); read from the folder when ``data`` is one.
        source, license, language: override what the card says about the source dataset (``language``: an ISO
            639-1 code; default: the Hub source card's, else ``en``).
        rejections: rows whose rejected and failed ones go to ``run/rejections.jsonl`` (read from the folder when
            ``data`` is one).

    Returns:
        The repository URL.

    Raises:
        ConfigError: ``data`` is no augmented dataset, or ``repo_id`` is no repository id.
        HubError: no token, a rejected one, a Hub error or an unreachable Hub.
    """
    from huggingface_hub import HfApi

    _check_repo_id(repo_id)
    dsd, report_found, found = _load(data)
    report = report or report_found
    if not include_metadata:
        dsd = dsd.remove_columns([c for c in META_COLUMNS if c in dsd[next(iter(dsd))].column_names])
    tok = _token(token)
    api = HfApi(token=tok)
    with _hub_errors(repo_id):
        _login(api)
    card = _check_clean(dataset_card(dsd, report, repo_id=repo_id, source=source, license=license,
                                     include_metadata=include_metadata, language=language), tok)
    files = {f"run/{k}": _check_clean(v.decode(), tok).encode() for k, v in run_files(report, found, rejections).items()}
    with _hub_errors(repo_id):
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_file(path_or_fileobj=card.encode(), path_in_repo="README.md", repo_id=repo_id, repo_type="dataset",
                        commit_message="dataset card (hf_rgda)")
        dsd.push_to_hub(repo_id, token=tok, private=private,
                        commit_message=commit_message or f"hf_rgda {__version__}: push augmented splits")
        _upload_files(api, repo_id, files)
    return str(url)


def _upload_files(api: Any, repo_id: str, files: Mapping[str, bytes]) -> None:
    from huggingface_hub import CommitOperationAdd

    if files:
        api.create_commit(repo_id, [CommitOperationAdd(path_in_repo=k, path_or_fileobj=v) for k, v in files.items()],
                          repo_type="dataset", commit_message="the run's configuration, summary, rejections and "
                                                              "prompts (hf_rgda)")


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
    """Push a trained model folder with its model card; returns the repository URL.

    Raises:
        ConfigError: ``model_dir`` is no model folder, or ``repo_id`` is no repository id (both before the token).
        HubError: no token, a rejected one, a Hub error or an unreachable Hub.
    """
    from huggingface_hub import HfApi

    folder = Path(model_dir)
    if not (folder / "config.json").is_file():
        raise ConfigError(f"{model_dir}: " + ("not a model folder (no config.json; an `hf-rgda train --out` folder "
                                             "holds one)" if folder.is_dir() else "no such folder"))
    _check_repo_id(repo_id)
    tok = _token(token)
    api = HfApi(token=tok)
    with _hub_errors(repo_id):
        _login(api)
    card = _check_clean(model_card(model_dir, repo_id=repo_id, training_data=training_data, eval_data=eval_data), tok)
    with _hub_errors(repo_id):
        url = api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        (folder / "README.md").write_text(card)
        api.upload_folder(folder_path=str(model_dir), repo_id=repo_id, repo_type="model",
                          commit_message=f"hf_rgda {__version__}: NER model")
    return str(url)
