"""The README's quickstart runs as written, offline, against a local Hub.

The Python block under *Quickstart* in README.md is read from the README itself (so the two cannot drift) and run in
a fresh interpreter pointed at ``tests/hub_server.py`` with ``HF_ENDPOINT``. The dataset id it loads is served there
as the real repository serves it: parquet files under ``data/`` and a README with ``dataset_info``, no loading script.
The rows are NCBI-disease train sentences read from ``../shared/data`` at test time (nothing is committed). The only
change to the block is the backend: the scripted fake (``hf_rgda.testing.stateless_answer``) in place of the
provider spec. A loading-script repository (what ``ncbi/ncbi_disease`` still is) is refused by ``datasets``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .hub_server import HubServer

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT.parent / "shared" / "data" / "ncbi_disease" / "train.jsonl"
TOKEN = "hf_localQUICKSTARTtoken0123456789"

pytestmark = pytest.mark.skipif(not TRAIN.is_file(), reason="../shared/data is not beside the checkout")


def quickstart() -> str:
    """The first Python block of the README's Quickstart section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "README.md's Quickstart has no python block"
    return match.group(1)


def offline_variant(code: str) -> tuple[str, str, str]:
    """``code`` with its provider spec swapped for the scripted fake; and the dataset id and tag column it uses."""
    repo = re.search(r'load_dataset\("([^"]+)"', code)
    tags = re.search(r'tags_column="([^"]+)"', code)
    spec = re.search(r'llm="([a-z]+:[^"]+)"', code)
    assert repo and spec, "the quickstart must load a Hub dataset and name an llm spec"
    return code.replace(spec.group(0), "llm=LLM"), repo.group(1), tags.group(1) if tags else "ner_tags"


PUBLISH = '''
import json, sys, tempfile
from pathlib import Path
from datasets import ClassLabel, Dataset, Features, Sequence, Value
from huggingface_hub import HfApi

repo_id, tags, train, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
names = ["O", "B-Disease", "I-Disease"]
lines = Path(train).read_text().splitlines()[:n]
rows = [json.loads(line) for line in lines]
ds = Dataset.from_dict(
    {"tokens": [r["tokens"] for r in rows], tags: [[names.index(t) for t in r["ner_tags"]] for r in rows],
     "sentence_id": [str(i) for i in range(len(rows))]},
    features=Features({"tokens": Sequence(Value("string")), tags: Sequence(ClassLabel(names=names)),
                       "sentence_id": Value("string")}))
api = HfApi()
with tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp)
    (folder / "data").mkdir()
    ds.to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    (folder / "README.md").write_text("---\\ndataset_info:\\n  features:\\n  - name: tokens\\n    sequence: string\\n"
                                      f"  - name: {tags}\\n    sequence:\\n      class_label:\\n        names:\\n"
                                      + "".join(f"          '{i}': {t}\\n" for i, t in enumerate(names))
                                      + "  - name: sentence_id\\n    dtype: string\\n---\\n")
    api.create_repo(repo_id, repo_type="dataset")
    api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder))
    script = folder / "script"
    script.mkdir()
    (script / "ncbi_disease.py").write_text("import datasets\\n")
    api.create_repo("ncbi/ncbi_disease", repo_type="dataset")
    api.upload_folder(repo_id="ncbi/ncbi_disease", repo_type="dataset", folder_path=str(script))
print(json.dumps({"rows": len(rows)}))
'''

RUN = '''
import json
from datasets import load_dataset
from hf_rgda import ScriptedLLM
from hf_rgda.testing import stateless_answer

try:
    load_dataset("ncbi/ncbi_disease", split="train")
    script_refused = ""
except Exception as e:  # noqa: BLE001
    script_refused = f"{type(e).__name__}: {e}"

LLM = ScriptedLLM(stateless_answer, name="quickstart")
{code}
print("RESULT " + json.dumps({
    "script_refused": script_refused, "train": len(train), "seeds": len(seeds),
    "status": list(augmented["rgda_status"]), "columns": augmented.column_names,
    "tag_feature": type(augmented.features[aug.tags_column].feature).__name__,
}))
'''


@pytest.fixture
def hub():
    server = HubServer(tokens={TOKEN}).start()
    yield server
    server.stop()


def _run(hub: HubServer, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE",)}
    env.update(HF_ENDPOINT=hub.url, HF_HUB_DISABLE_XET="1", HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="0",
               HF_HOME=str(tmp_path / "hf_home"), HF_DATASETS_CACHE=str(tmp_path / "ds_cache"), HF_TOKEN=TOKEN)
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, check=False,
                          cwd=tmp_path)


def test_readme_quickstart_runs_offline_against_the_hub_id_it_names(hub: HubServer, tmp_path: Path) -> None:
    code, repo_id, tags = offline_variant(quickstart())
    published = _run(hub, tmp_path, "-c", PUBLISH, repo_id, tags, str(TRAIN), "200")
    assert published.returncode == 0, published.stderr[-3000:]
    assert not [f for f in hub.files("dataset", repo_id) if f.endswith(".py")]  # parquet only, as on the Hub

    done = _run(hub, tmp_path, "-c", RUN.replace("{code}", code))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert "Dataset scripts are no longer supported" in result["script_refused"]
    assert result["train"] == 200 and result["seeds"] == 50
    status = result["status"]
    assert status.count("original") == 50 and status.count("accepted") > 0
    assert {"tokens", tags, "rgda_status", "rgda_source", "rgda_trace"} <= set(result["columns"])
    assert result["tag_feature"] == "ClassLabel"  # tags stay in the input's own form
    assert "accepted" in done.stdout  # the summary the quickstart prints
