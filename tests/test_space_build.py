"""The deployable Space (issue 31 item 7): ``scripts/build_space.sh DIR`` writes a folder; a fresh virtual environment
made from that folder's requirements.txt alone (PyPI packages; pip may use its cache) starts its app.py, and a real
headless Chromium renders a run: the OpenAI backend (the first one where llama.cpp is not installed) against the
scripted OpenAI-compatible server, typed into the page as a user would.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from hf_rgda.testing import FakeWorld
from hf_rgda.testing.providers import ProviderServer

from .test_space import run_naive

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SENTENCE = "Carriers of the mutation had a higher risk of [ovarian cancer](Disease) ."
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the Space folder, the python of a fresh venv made from its requirements.txt alone)."""
    tmp = tmp_path_factory.mktemp("space_build")
    folder = tmp / "space"
    subprocess.run(["bash", str(ROOT / "scripts" / "build_space.sh"), str(folder)], check=True, timeout=300)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)  # no system site-packages
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", "requirements.txt"], cwd=folder, check=True,
                   timeout=900)
    return folder, python


def test_the_folder_is_a_space(built: tuple[Path, Path]) -> None:
    folder, python = built
    front = (folder / "README.md").read_text().split("---")[1]
    assert re.search(r"^sdk: gradio$", front, re.MULTILINE) and re.search(r"^app_file: app.py$", front, re.MULTILINE)
    version = re.search(r"^sdk_version: (\S+)$", front, re.MULTILINE).group(1)
    reqs = (folder / "requirements.txt").read_text()
    assert f"gradio=={version}" in reqs and "llama" not in reqs and "hf_rgda" not in reqs.split("\n", 1)[1]
    assert "torch" not in reqs
    # the app imports the folder's own copy of the package, and nothing of the checkout
    where = subprocess.run([str(python), "-c", "import hf_rgda, gradio; print(hf_rgda.__file__, gradio.__version__)"],
                           cwd=folder, capture_output=True, text=True, check=True, env=_env()).stdout.split()
    assert where == [str(folder / "hf_rgda" / "__init__.py"), version]
    assert subprocess.run([str(python), "-c", "import llama_cpp"], capture_output=True, check=False).returncode != 0


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
            **extra}


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (bash scripts/setup.sh --dev)")
def test_the_built_space_renders_a_run_in_chromium(built: tuple[Path, Path], tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    folder, python = built
    world = FakeWorld().serve()
    port = _free_port()
    log = (tmp_path / "space.log").open("w")
    env = _env(GRADIO_SERVER_PORT=str(port), HF_RGDA_CACHE=str(tmp_path / "responses.sqlite3"),
               HF_DATASETS_CACHE=str(tmp_path / "datasets"), GRADIO_TEMP_DIR=str(tmp_path / "gradio"))
    with ProviderServer(**world) as server:
        proc = subprocess.Popen([str(python), "app.py"], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}/"
            deadline = time.time() + 180
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2)
                    break
                except OSError:
                    if proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError(f"the Space did not start: {(tmp_path / 'space.log').read_text()[-3000:]}")
                    time.sleep(1)
            text = _run_in_browser(sync_api, url, server.url("openai"))
        finally:
            proc.terminate()
            proc.wait(30)
        assert server.requests, "the run never reached the scripted server"
    assert re.search(r"\bDisease\b", text) and "1." in text


def _run_in_browser(sync_api, url: str, base_url: str) -> str:
    """Type a sentence, the model and the server's URL, run naive with 2 sentences; the accepted rows."""
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.goto(url, wait_until="load", timeout=90_000)
        page.locator("#run").wait_for(timeout=60_000)
        sync_api.expect(page.locator("#backend input")).to_have_value("openai", timeout=15_000)
        page.locator("#sentence textarea").fill(SENTENCE)  # the entity types field starts with "Disease"
        page.locator("#model textarea, #model input").first.fill("scripted-model")
        page.locator("#base_url textarea, #base_url input").first.fill(base_url)
        accepted, status = run_naive(page, 2, timeout=120_000)
        assert accepted >= 1, status
        page.locator("#result").get_by_text("Disease").first.wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "space_built.png"), full_page=True)
        text = page.locator("#result").inner_text()
        browser.close()
    return text
