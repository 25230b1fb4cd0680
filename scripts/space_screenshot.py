"""Take the README's Space screenshot: the Space with the embedded default model, one NCBI-disease train sentence.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/space_screenshot.py --data-dir ../shared/data

Launches ``spaces/app.py`` headless on 127.0.0.1 (the default local model, no ``HF_RGDA_SPACE_LLM``), types the first
short entity-bearing sentence of the split in a real Chromium (Playwright), runs ``--method`` and saves the page once
the run has accepted rows, to ``spaces/screenshot.png``. The model and sentence are printed; the README names them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def first_sentence(data_dir: Path, max_tokens: int, index: int = 0) -> str:
    """The ``index``-th (from 0) train sentence of NCBI-disease with an entity and at most ``max_tokens`` tokens."""
    from hf_rgda.tags import format_inline

    with (data_dir / "ncbi_disease" / "train.jsonl").open() as fh:
        found = (json.loads(line) for line in fh)
        short = (r for r in found if any(t != "O" for t in r["ner_tags"]) and len(r["tokens"]) <= max_tokens)
        for k, row in enumerate(short):
            if k == index:
                return format_inline(row["tokens"], row["ner_tags"])
    raise SystemExit("no such short sentence with an entity")


def launch(port: int, tmp: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "GRADIO_TEMP_DIR": str(tmp / "gradio")}
    env.pop("HF_RGDA_SPACE_LLM", None)
    proc = subprocess.Popen([sys.executable, str(ROOT / "spaces" / "app.py")], env=env,
                            stdout=(tmp / "space.log").open("w"), stderr=subprocess.STDOUT)
    for _ in range(180):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            return proc
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit("the Space did not start")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--method", default="rgda")
    p.add_argument("--max-tokens", type=int, default=16, help="the longest sentence taken")
    p.add_argument("--index", type=int, default=0, help="take the index-th such sentence (from 0)")
    p.add_argument("--port", type=int, default=7861)
    p.add_argument("--out", type=Path, default=ROOT / "spaces" / "screenshot.png")
    args = p.parse_args()
    from playwright.sync_api import expect, sync_playwright

    from hf_rgda import DEFAULT_LLM

    sentence = first_sentence(args.data_dir, args.max_tokens, args.index)
    print(f"model: {DEFAULT_LLM}\nsentence: {sentence}\nmethod: {args.method}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = launch(args.port, Path(tmp))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS, headless=True)
                page = browser.new_page(viewport={"width": 1280, "height": 1700})
                page.goto(f"http://127.0.0.1:{args.port}/", wait_until="load", timeout=90_000)
                page.locator("#sentence textarea").fill(sentence)
                page.locator("#types textarea").fill("Disease")
                page.locator("#method input").click()
                page.get_by_role("option", name=args.method, exact=True).click()
                page.locator("#run").click()
                page.locator("#status").get_by_text("accepted").wait_for(timeout=1_500_000)
                status = page.locator("#status").inner_text()
                expect(page.locator("#result").get_by_text("Disease").first).to_be_visible(timeout=30_000)
                page.screenshot(path=str(args.out), full_page=True)
                browser.close()
        finally:
            proc.terminate()
    print(f"status: {status}\nwrote {args.out}")
    return 0 if re.search(r"[1-9]\d* accepted", status) else 1


if __name__ == "__main__":
    raise SystemExit(main())
