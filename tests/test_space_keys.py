"""The Space never sends its owner's key (a Space secret in the environment) to a server a visitor chose.

The probe is the provider fake (``hf_rgda.testing.providers.ProviderServer``): it records every request, headers
included, and accepts only the visitor's key. The Space's request function runs in-process; no model is loaded.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from hf_rgda.testing.providers import ProviderServer

APP = Path(__file__).resolve().parents[1] / "spaces" / "app.py"
OWNER = {"openai": ("OPENAI_API_KEY", "sk-owner-secret-1"), "anthropic": ("ANTHROPIC_API_KEY", "sk-ant-owner-secret-2"),
         "gemini": ("GEMINI_API_KEY", "AIza-owner-secret-3")}
MODELS = {"openai": "probe-model", "anthropic": "claude-probe", "gemini": "gemini-probe"}
SENTENCE = "Carriers of the mutation had a higher risk of [ovarian cancer](Disease) ."


def _load(monkeypatch: pytest.MonkeyPatch, trusted: str = ""):
    pytest.importorskip("gradio")
    monkeypatch.setenv("HF_RGDA_SPACE_BASE_URLS", trusted)
    spec = importlib.util.spec_from_file_location("hf_rgda_space_app_keys", APP)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def owner_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for env, key in OWNER.values():
        monkeypatch.setenv(env, key)
    monkeypatch.setenv("HF_RGDA_CACHE", str(tmp_path / "responses.sqlite3"))


def _run(app, server: ProviderServer, backend: str, typed_key: str, url: str | None = None) -> str | None:
    """One Space request (naive: one call per seed); the error text the page would show, or None."""
    import gradio as gr

    try:
        app.augment(SENTENCE, "Disease", "biomedical abstracts", "naive", False, False, backend, MODELS[backend],
                    typed_key, url or server.url(backend), 1)
    except gr.Error as err:
        return str(err)
    return None


def _seen(server: ProviderServer) -> str:
    return json.dumps([[r.path, r.headers, r.body] for r in server.requests])


@pytest.mark.parametrize("backend", sorted(OWNER))
def test_a_visitor_url_never_receives_the_owners_key(backend: str, owner_keys: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    app = _load(monkeypatch)
    with ProviderServer(lambda m, s: {"sentences": []}, keys={"visitor-key"}) as probe:
        _run(app, probe, backend, typed_key="")
        assert OWNER[backend][1] not in _seen(probe)
        if backend != "openai":  # a key is required there: refused before any request, naming why
            assert not probe.requests


@pytest.mark.parametrize("backend", sorted(OWNER))
def test_a_visitor_url_gets_the_key_the_visitor_typed(backend: str, owner_keys: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    app = _load(monkeypatch)
    with ProviderServer(lambda m, s: {"sentences": []}, keys={"visitor-key"}) as probe:
        _run(app, probe, backend, typed_key="visitor-key")
        assert probe.requests and "visitor-key" in _seen(probe)
        assert OWNER[backend][1] not in _seen(probe)
    # the typed key is dropped with the request: neither the secret registry nor the environment keeps it
    from hf_rgda import _secrets

    assert not any("visitor-key" in v for v in [*_secrets._registry.values(), *os.environ.values()])


def test_a_url_the_owner_lists_is_served_by_the_owners_key(owner_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with ProviderServer(lambda m, s: {"sentences": []}, keys={OWNER["openai"][1]}) as own:
        app = _load(monkeypatch, trusted=f"{own.url('openai')}/")
        _run(app, own, "openai", typed_key="")
        assert own.requests and all(r.headers["authorization"] == f"Bearer {OWNER['openai'][1]}" for r in own.requests)
