"""Live provider tests: opt-in (``pytest -m external``), each skipped unless its key is set.

They spend a few cents: one structured call and one seed through ``gda`` per provider.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from datasets import Dataset

from hf_rgda import RGDAAugmenter, load_llm

from .conftest import LABELS, SEED_ROWS

pytestmark = pytest.mark.external

LIVE = {
    "openai": ("OPENAI_API_KEY", os.environ.get("HF_RGDA_LIVE_OPENAI_MODEL", "gpt-4o-mini")),
    "anthropic": ("ANTHROPIC_API_KEY", os.environ.get("HF_RGDA_LIVE_ANTHROPIC_MODEL", "claude-haiku-4-5")),
    "gemini": ("GEMINI_API_KEY", os.environ.get("HF_RGDA_LIVE_GEMINI_MODEL", "gemini-2.5-flash")),
}
SCHEMA = {"type": "object", "properties": {"disease": {"type": "string", "enum": ["asthma", "gout"]}},
          "required": ["disease"], "additionalProperties": False}


@pytest.fixture(params=list(LIVE))
def live(request) -> str:
    env, model = LIVE[request.param]
    if not os.environ.get(env) and not (request.param == "gemini" and os.environ.get("GOOGLE_API_KEY")):
        pytest.skip(f"{env} is not set")
    return f"{request.param}:{model}"


def test_live_structured_output(live: str) -> None:
    llm = load_llm(live)
    comp = asyncio.run(llm.complete([{"role": "user", "content": "Name a disease from the list."}], schema=SCHEMA,
                                    params={"temperature": 0.0, "max_tokens": 64, "seed": 0}))
    assert json.loads(comp.text)["disease"] in ("asthma", "gout")
    assert comp.usage.prompt_tokens > 0 and comp.usage.completion_tokens > 0


def test_live_gda_one_seed(live: str, tmp_path: Path) -> None:
    ds = Dataset.from_dict({k: v[:1] for k, v in SEED_ROWS.items()})
    aug = RGDAAugmenter(live, label_names=LABELS, method="gda", cache=tmp_path / "r.sqlite3",
                        domain="biomedical abstracts")
    out = ds.map(aug, batched=True)
    assert aug.summary.failed_seeds == 0 and "accepted" in out["rgda_status"]
