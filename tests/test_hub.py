"""Publishing against a local Hub server: push, load back, re-push, cards, tokens, secrets.

``huggingface_hub`` reads ``HF_ENDPOINT`` at import, so the real clients run in subprocesses pointed at the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hf_rgda import ScriptedLLM
from hf_rgda.cli import main

from .conftest import stateless_handler
from .hub_server import HubServer

TOKEN = "hf_localTESTtoken0123456789"
API_KEY = "sk-test-SHOULDnotLEAK-4242"


@pytest.fixture
def hub():
    server = HubServer(tokens={TOKEN}).start()
    yield server
    server.stop()


def run_py(hub: HubServer, code: str, tmp_path: Path, token: str | None = TOKEN) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE")}
    env.update(HF_ENDPOINT=hub.url, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0",
               HF_HOME=str(tmp_path / "hf_home"), HF_DATASETS_CACHE=str(tmp_path / "ds_cache"),
               OPENAI_API_KEY=API_KEY, HF_HUB_DISABLE_IMPLICIT_TOKEN="1")
    if token is not None:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def augmented(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"tokens": ["Mutations", "in", "APC", "cause", "colon", "cancer", "."],
             "ner_tags": ["O", "O", "O", "O", "B-Disease", "I-Disease", "O"]},
            {"tokens": ["Gout", "flares", "were", "rare", "."], "ner_tags": ["B-Disease", "O", "O", "O", "O"]}]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "aug"
    assert main(["augment", str(folder), "--method", "rgda", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")],
                llm=ScriptedLLM(stateless_handler, name="s")) == 0
    return out


def test_push_load_identical_repush_card_and_no_secrets(hub: HubServer, augmented: Path, tmp_path: Path) -> None:
    push = f"from hf_rgda.cli import main; raise SystemExit(main(['push', {str(augmented)!r}, 'tester/ncbi-aug']))"
    done = run_py(hub, push, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    files = hub.files("dataset", "tester/ncbi-aug")
    assert "README.md" in files and any(p.endswith(".parquet") for p in files)
    # load_dataset(repo_id) gives identical rows and features
    check = f"""
import json
from datasets import load_dataset, load_from_disk
local = load_from_disk({str(augmented / 'dataset')!r})
remote = load_dataset('tester/ncbi-aug')
assert sorted(remote) == sorted(local), (list(remote), list(local))
for s in local:
    assert remote[s].features == local[s].features, (remote[s].features, local[s].features)
    assert remote[s].to_list() == local[s].to_list()
print(json.dumps({{s: len(remote[s]) for s in remote}}))
"""
    done = run_py(hub, check, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"seed": 2, "augmented": 6}
    # the card: valid YAML metadata, provenance in the body
    card = files["README.md"].decode()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["task_categories"] == ["token-classification"]
    assert "synthetic" in meta["tags"] and "data-augmentation" in meta["tags"]
    assert meta["source_datasets"] and meta["license"]
    assert "dataset_info" in meta or "configs" in meta  # merged in by push_to_hub
    assert "Method: `rgda`" in card and "judge score of 90 for sampled verdicts" in card and "accepted sentences: 6" in card
    assert "Prompt templates hash" in card
    # no token or API key in any pushed file
    for path, blob in files.items():
        assert TOKEN.encode() not in blob and API_KEY.encode() not in blob, path
    # a re-push without metadata columns updates the repository
    commits = len(hub.repos[("dataset", "tester/ncbi-aug")].commits)
    repush = push.replace("'tester/ncbi-aug']", "'tester/ncbi-aug', '--no-metadata']")
    done = run_py(hub, repush, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(hub.repos[("dataset", "tester/ncbi-aug")].commits) > commits
    cols = run_py(hub, "from datasets import load_dataset; print(load_dataset('tester/ncbi-aug', "
                       "download_mode='force_redownload')['augmented'].column_names)", tmp_path)
    assert cols.returncode == 0, cols.stderr[-3000:]
    assert cols.stdout.strip().splitlines()[-1] == "['tokens', 'ner_tags']"


def test_missing_and_bad_tokens_give_clear_errors(hub: HubServer, augmented: Path, tmp_path: Path) -> None:
    push = f"from hf_rgda.cli import main; raise SystemExit(main(['push', {str(augmented)!r}, 'tester/x']))"
    done = run_py(hub, push, tmp_path, token=None)
    assert done.returncode == 2 and "no Hub token" in done.stderr
    done = run_py(hub, push, tmp_path, token="hf_wrongWRONGwrong")
    assert done.returncode == 2 and "rejected the token (HTTP 401)" in done.stderr
    assert "hf_wrongWRONGwrong" not in done.stderr + done.stdout
    assert ("dataset", "tester/x") not in hub.repos


def test_push_model_with_card(hub: HubServer, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "train_config.json").write_text(json.dumps({"model": "sentence-transformers/all-MiniLM-L6-v2",
                                                         "epochs": 3, "learning_rate": 5e-5, "seed": 1}))
    (model / "metrics.json").write_text(json.dumps({"train_steps": 10, "train_sentences": 8, "train_examples": 8,
                                                    "eval": {"Disease": {"precision": 0.5, "recall": 0.25, "f1": 1 / 3,
                                                                         "number": 4},
                                                             "overall_precision": 0.5, "overall_recall": 0.25,
                                                             "overall_f1": 1 / 3, "scheme": "IOB2", "mode": "strict"}}))
    code = (f"from hf_rgda.cli import main; raise SystemExit(main(['push-model', {str(model)!r}, 'tester/ner', "
            "'--training-data', 'tester/ncbi-aug', '--eval-data', 'ncbi_disease test']))")
    done = run_py(hub, code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    files = hub.files("model", "tester/ner")
    card = files["README.md"].decode()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["pipeline_tag"] == "token-classification" and meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "| Disease | 0.5000 | 0.2500 | 0.3333 | 4 |" in card and "tester/ncbi-aug" in card
    assert all(TOKEN.encode() not in b for b in files.values())


def test_cards_are_checked_by_the_one_secret_scrubber(monkeypatch: pytest.MonkeyPatch) -> None:
    """hub.py has no scrubber of its own: what _secrets.redact would hide (environment secrets, the token, anything
    shaped like a provider key) stops a publish."""
    from hf_rgda import HubError
    from hf_rgda.hub import _check_clean

    assert _check_clean("seeds in: 3", "hf_tok") == "seeds in: 3"
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    for text in (f"llm key {API_KEY}", "token hf_localTESTtoken0123456789 here", "a stray sk-ant-abcdefgh1234 key"):
        with pytest.raises(HubError, match="refusing to publish"):
            _check_clean(text, TOKEN)


def test_card_templates_are_package_files_not_links() -> None:
    """Symlinks break in wheels and on Windows: the package holds the templates themselves."""
    from importlib import resources

    cards = resources.files("hf_rgda.cards")
    assert sorted(p.name for p in cards.iterdir() if p.name.endswith(".md")) == ["dataset_card.md", "model_card.md"]
    assert all("$title" in cards.joinpath(n).read_text(encoding="utf-8") for n in ("dataset_card.md", "model_card.md"))
    root = Path(__file__).resolve().parents[1]
    assert [p for d in ("hf_rgda", "model_cards") for p in (root / d).rglob("*") if p.is_symlink()] == []


def test_the_reproduce_command_parses_and_reads_an_old_on_off_top_up_as_a_count() -> None:
    """The card's command sets every option that differs from the default the way the CLI takes it: a bool option
    as ``--x`` / ``--no-x`` (``check_mentions``, unset by default), ``top_up`` (once on or off, now a count) as a
    number, so that a summary.json written before it counted still reproduces (on: one ask)."""
    import shlex

    from hf_rgda.cli import _parser
    from hf_rgda.hub import reproduce_command

    line = reproduce_command({"config": {"top_up": True, "check_mentions": False, "num_augmented": 5}}, "me/rows")
    assert "--top-up 1" in line and "--no-check-mentions" in line
    args = _parser().parse_args(shlex.split(line)[1:])
    assert (args.top_up, args.check_mentions, args.num_augmented) == (1, False, 5)
    assert "--top-up 0" in reproduce_command({"config": {"top_up": False}}, "me/rows")
    gated = reproduce_command({"config": {}, "tagger_gate": {"folder": "gate", "digest": "ab", "fitted_on_seeds": True}},
                              "me/rows")
    assert _parser().parse_args(shlex.split(gated)[1:]).tagger_gate == "seeds"
    brought = {"config": {}, "tagger_gate": {"folder": "gate", "digest": "ab", "fitted_on_seeds": False}}
    assert "--tagger-gate" not in reproduce_command(brought, "me/rows")  # a gate trained elsewhere: no recipe to name
    assert "--tagger-gate" not in line


# ---------------------------------------------------------------- provenance (issue 53)
def _check_provenance(card: str, files: dict[str, bytes], repo_id: str, private: tuple[str, ...]) -> None:
    """The card's YAML provenance, no local path or URL in any pushed text, and the run's files under run/."""
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["language"] == ["en"]
    assert "machine-generated" in meta["annotations_creators"] and "machine-generated" in meta["language_creators"]
    assert f"hf-rgda augment {repo_id} --split seed --min-entities 0" in card  # the command that reproduces it
    for name in ("run/summary.json", "run/config.json", "run/rejections.jsonl", "run/prompts/composer.md"):
        assert name in files, sorted(files)
    for path, blob in files.items():
        if path.endswith((".md", ".json", ".jsonl")):
            text = blob.decode()
            for bad in (*private, "http://", "https://", "127.0.0.1"):
                assert bad not in text, (path, bad)


def test_the_card_has_provenance_and_the_runs_files_and_no_local_path_or_url(hub: HubServer, tmp_path: Path) -> None:
    """A run against a private OpenAI-compatible server (its URL in the run's identity), pushed from its folder."""
    from hf_rgda.testing import FakeWorld
    from hf_rgda.testing.providers import ProviderServer

    pytest.importorskip("openai")
    folder = tmp_path / "my_private_data"
    folder.mkdir()
    rows = [{"tokens": ["Mutations", "in", "APC", "cause", "colon", "cancer", "."],
             "ner_tags": ["O", "O", "O", "O", "B-Disease", "I-Disease", "O"]}]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "aug"
    with ProviderServer(**FakeWorld().serve()) as server:
        url = server.url("openai")
        assert main(["augment", str(folder), "--llm", "openai:gpt-5.5", "--base-url", url, "--method", "gda",
                     "--out", str(out), "--cache", str(tmp_path / "r.sqlite3")]) == 0
    assert url in (out / "summary.json").read_text()  # what the push must not publish
    push = f"from hf_rgda.cli import main; raise SystemExit(main(['push', {str(out)!r}, 'tester/prov']))"
    done = run_py(hub, push, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    files = hub.files("dataset", "tester/prov")
    card = files["README.md"].decode()
    _check_provenance(card, files, "tester/prov", (str(tmp_path), str(folder)))
    assert "source_datasets:\n- local:my_private_data" in card and "--llm openai:gpt-5.5" in card


def test_the_spaces_push_writes_the_same_card(hub: HubServer, tmp_path: Path) -> None:
    pytest.importorskip("gradio")
    app = Path(__file__).resolve().parents[1] / "spaces" / "app.py"
    code = f"""
import importlib.util
from datasets import Dataset
from hf_rgda import RGDAAugmenter, ScriptedLLM
from hf_rgda.recipe import augment
from hf_rgda.testing import stateless_answer
spec = importlib.util.spec_from_file_location("space_app", {str(app)!r})
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
aug = RGDAAugmenter(ScriptedLLM(lambda m, s, p: stateless_answer(m, s, p), name="s"),
                    label_names=["O", "B-Disease", "I-Disease"], method="rgda", keep_rejected=True, cache=False)
run = augment(Dataset.from_dict({{"tokens": [["Gout", "flares", "were", "rare", "."]],
                                  "ner_tags": [["B-Disease", "O", "O", "O", "O"]]}}), aug, batch_size=1)
print(app.push(run.rows.to_list(), run.report(source=app.SOURCE, split="seed"), "tester/space", {TOKEN!r}))
print(app.push(run.rows.to_list(), run.report(source=app.SOURCE, split="seed"), "tester/space2", ""))
"""
    done = run_py(hub, code, tmp_path)  # HF_TOKEN is set, as a Space's secret would be
    assert done.returncode == 0 and "pushed:" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    # a visitor who types no token is refused: the Space's own token pushes nothing for them
    assert "type a Hub token" in done.stdout.splitlines()[-1] and "tester/space2" not in str(hub.repos)
    files = hub.files("dataset", "tester/space")
    card = files["README.md"].decode()
    _check_provenance(card, files, "tester/space", (str(tmp_path),))
    assert "Method: `rgda`" in card and "unknown" not in yaml.safe_load(card.split("---")[1])["source_datasets"]


class _LocalModel(ScriptedLLM):
    """The scripted world under a local model's identity: a .gguf file given by its absolute path."""

    def __init__(self, path: Path) -> None:
        super().__init__(stateless_handler, name="local")
        self.path = path

    def identity(self) -> dict:
        return {"backend": "local", "model": str(self.path), "n_ctx": 4096}


def test_a_local_models_folder_is_published_nowhere(hub: HubServer, tmp_path: Path) -> None:
    """``--llm /home/alice/models/x.gguf``: the card's backend, its Reproduce command and run/summary.json,
    run/config.json name the model file, never the folders it is in."""
    model = tmp_path / "alice_home" / "my-models" / "qwen-q4.gguf"
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps({"tokens": ["Gout", "flares", "were", "rare", "."],
                                                    "ner_tags": ["B-Disease", "O", "O", "O", "O"]}) + "\n")
    out = tmp_path / "aug"
    assert main(["augment", str(folder), "--method", "gda", "--out", str(out), "--cache", str(tmp_path / "r.sqlite3"),
                 "--temperature", "0.5"], llm=_LocalModel(model)) == 0
    push = f"from hf_rgda.cli import main; raise SystemExit(main(['push', {str(out)!r}, 'tester/local']))"
    done = run_py(hub, push, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    files = hub.files("dataset", "tester/local")
    card = files["README.md"].decode()
    assert "local:qwen-q4.gguf" in card and "--llm local:qwen-q4.gguf" in card, card
    for name in ("run/summary.json", "run/config.json"):
        assert json.loads(files[name])["llm"]["model"] == "qwen-q4.gguf"
    for path, blob in files.items():
        if path.endswith((".md", ".json", ".jsonl")):
            text = blob.decode()
            for part in (str(model.parent), "alice_home", "my-models", str(tmp_path)):
                assert part not in text, (path, part)


def test_public_reduces_a_path_after_a_backend_name_to_its_last_part() -> None:
    from hf_rgda.hub import llm_name, public

    assert public("LLM: `local:/home/alice/models/x.gguf`, then ~/data/y.jsonl") == "LLM: `local:x.gguf`, then y.jsonl"
    assert public("at C:\\Users\\alice\\x.gguf and local:~/m/x.gguf") == "at x.gguf and local:x.gguf"
    assert public("ratio 3:1, see http://10.0.0.5:8000/v1") == "ratio 3:1, see <url>"
    assert llm_name({"backend": "local", "model": "Qwen/Qwen2.5-GGUF/q4.gguf"}) == "local:Qwen/Qwen2.5-GGUF/q4.gguf"
    assert llm_name({"backend": "scripted", "name": "s"}) == "scripted:s" and llm_name(None) == "unknown"
