"""The Gradio Space, launched headless on 127.0.0.1 with the tiny real local model.

A real headless Chromium (Debian's, driven by Playwright) loads the page, runs an example and finds the highlighted
entities; the screenshot is kept in tests/artifacts/. A gradio_client test covers the API endpoint.
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

from .test_local_integration import TINY, _free_port, needs_tiny

pytestmark = [pytest.mark.slow, needs_tiny]
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def space(tmp_path_factory: pytest.TempPathFactory):
    pytest.importorskip("gradio")
    port = _free_port()
    tmp = tmp_path_factory.mktemp("space")
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False",
           "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_RGDA_SPACE_LLM": TINY,
           "HF_RGDA_CACHE": str(tmp / "responses.sqlite3"), "GRADIO_TEMP_DIR": str(tmp / "gradio")}
    log = (tmp / "space.log").open("w")
    proc = subprocess.Popen([sys.executable, str(ROOT / "spaces" / "app.py")], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"the Space exited: {(tmp / 'space.log').read_text()[-2000:]}")
            time.sleep(1)
    else:
        proc.kill()
        raise RuntimeError("the Space did not start in 180 s")
    yield url
    proc.terminate()
    proc.wait(30)


def test_api_endpoint_with_gradio_client(space: str) -> None:
    from gradio_client import Client

    client = Client(space, verbose=False)
    sentence = "Carriers of the mutation had a higher risk of [ovarian cancer](Disease) ."
    status, guidance, _gr_rounds, _ac_rounds, _result, _rejected, download, _heat, _transcript = client.predict(
        sentence, "Disease", "biomedical research abstracts", "gda", False, False, "local", "", "", "", 2, "",
        api_name="/augment")
    assert "**gda**" in status and "LLM calls" in status
    assert isinstance(guidance, dict) and "context" in guidance  # the gda guidance stage ran
    assert Path(download).is_file() and '"status": "original"' in Path(download).read_text()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (bash scripts/setup.sh --dev)")
def test_browser_runs_an_example_and_shows_entities(space: str) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=flags, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1600})
        page.goto(space, wait_until="load", timeout=90_000)
        page.locator("#run").wait_for(timeout=60_000)
        # the Space's own SciERC-style example, with naive and 4 sentences; the tiny model is for plumbing only (its
        # sentences and tags are nonsense); llama.cpp sampling is seeded, so the outcome is deterministic
        page.get_by_text("conditional random fields", exact=False).first.click()
        sync_api.expect(page.locator("#sentence textarea")).to_have_value(
            re.compile(r"\[part-of-speech tagging\]\(Task\)"), timeout=15_000)
        accepted, _ = run_naive(page, 4, timeout=240_000)
        types = re.compile(r"^(Generic|Material|Method|Metric|OtherScientificTerm|Task)$")
        if accepted:  # the tiny model's rows are nonsense, and the entity verifier may reject them all
            page.locator("#result").get_by_text(types).first.wait_for(timeout=30_000)
        else:  # then the written sentences are in the (folded) rejected table, with their stage and reason
            sync_api.expect(page.locator("#rejected")).to_contain_text(re.compile(r"\w+/\w+"), timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "space.png"), full_page=True)
        text = page.locator("#result").inner_text() if accepted else page.locator("#rejected").text_content()
        browser.close()
    if accepted:
        assert re.search(r"\b(Generic|Material|Method|Metric|OtherScientificTerm|Task)\b", text) and "1." in text
    else:
        assert re.search(r"\w+/\w+", text)


def run_naive(page, sentences: int, *, timeout: int) -> tuple[int, str]:
    """In the Space's page: ask for ``sentences`` sentences with the naive method, run, wait for the status line;
    the number accepted and the status text."""
    number = page.locator("#num input[type=number]")
    number.fill(str(sentences))
    number.press("Enter")
    page.locator("#method input").click()
    page.get_by_role("option", name="naive", exact=True).click()
    page.locator("#run").click()
    page.locator("#status").get_by_text("accepted").wait_for(timeout=timeout)
    status = page.locator("#status").inner_text()
    return int(re.search(r"(\d+) accepted", status).group(1)), status
