"""Secrets given in code and in URLs, and rate limits across event loops (issue 31: credentials in URLs never reach
logs; keys given in code survive pickling, kept out of the hash; rate limits hold across batches within a process).

Against the scripted provider server (hf_rgda.testing.providers), with the official OpenAI SDK.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import pytest
from datasets import Dataset
from datasets.fingerprint import Hasher

from hf_rgda import AuthenticationError, RGDAAugmenter, _secrets, load_llm
from hf_rgda.llm.remote import RetryPolicy
from hf_rgda.testing import FakeWorld
from hf_rgda.testing.providers import Action, ProviderServer

from .conftest import LABELS, SEED_ROWS

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "pw-Xq7SECRETurl"
KEY = "sk-in-code-Kt42SECRETkey"
FAST = RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=5)
SCHEMA = {"type": "object", "properties": {"disease": {"type": "string"}}, "required": ["disease"],
          "additionalProperties": False}
MSGS = [{"role": "user", "content": "Name one disease."}]
PARAMS = {"temperature": 0.0, "max_tokens": 16, "seed": 1}
PREFIX = "HF_RGDA_SECRET_"  # hf_rgda._secrets.SECRET_ENV_PREFIX


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty secret registry, and its registrations (memory, environment) go with it."""
    monkeypatch.setattr(_secrets, "_registry", {}, raising=False)  # raising=False: the test also runs on 8ae9ee0
    monkeypatch.setattr(_secrets, "_all", None, raising=False)  # the computed list of every registered secret
    for name in [k for k in os.environ if k.startswith(PREFIX)]:
        monkeypatch.delenv(name)
    yield
    for name in [k for k in os.environ if k.startswith(PREFIX)]:
        os.environ.pop(name, None)


@pytest.fixture
def server():
    world = FakeWorld().serve()
    with ProviderServer(lambda m, s: {"disease": "gout"} if s == SCHEMA else world["responder"](m, s),
                        logprobs=world["logprobs"]) as srv:
        yield srv


def _with_password(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@")


def _call(llm) -> None:
    async def call() -> None:
        try:
            await llm.complete(MSGS, schema=SCHEMA, params=PARAMS)
        finally:
            await llm.aclose()  # the SDK's client, collected while a later test's loop runs, would close there

    asyncio.run(call())


# ---------------------------------------------------------------- credentials in URLs
def test_url_password_never_reaches_logs_at_any_level(server, caplog: pytest.LogCaptureFixture, capfd) -> None:
    """The HTTP client logs every request at INFO (and httpcore, the SDK at DEBUG); with the credentials in the base
    URL the password used to be in each line. It is sent (as the URL's Basic auth), never logged."""
    stderr = logging.StreamHandler(sys.stderr)  # what the CLI's logging.basicConfig does, at the chattiest level
    stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(stderr)
    caplog.set_level(logging.DEBUG)
    try:
        server.push(Action.error(500))  # one retry: the library's own warning names the server too
        llm = load_llm("openai:m", base_url=_with_password(server.url("openai")), retry=FAST)
        _call(llm)
        _call(llm)
    finally:
        logging.getLogger().removeHandler(stderr)
    err = capfd.readouterr().err
    assert "HTTP Request: POST http://" in caplog.text and "retrying" in caplog.text  # the logs did run
    assert "HTTP Request: POST http://" in err
    for text in (caplog.text, err):
        assert PASSWORD not in text and "alice:" not in text
    assert "http://***@127.0.0.1" in caplog.text
    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert server.requests[-1].headers["authorization"] == f"Basic {basic}"  # the credentials still reach the server
    assert PASSWORD not in str(llm.identity()) and PASSWORD.encode() not in pickle.dumps(llm)


def test_cli_with_url_password_prints_no_password(server, tmp_path: Path) -> None:
    """The reported reproduction: ``hf-rgda augment ... --base-url http://user:secret@host/v1``, at the chattiest
    level (``-vv``: the requests are logged; the default logs warnings only)."""
    from .test_cli import _write_folder

    folder = _write_folder(tmp_path)
    env = {**os.environ, "HF_RGDA_CACHE": str(tmp_path / "r.sqlite3"), "HF_DATASETS_CACHE": str(tmp_path / "ds")}
    proc = subprocess.run([sys.executable, "-c", "import sys; from hf_rgda.cli import main; sys.exit(main())",
                           "-vv", "augment", str(folder), "--llm", "openai:m", "--method", "naive", "--num-augmented", "1",
                           "--base-url", _with_password(server.url("openai")), "--out", str(tmp_path / "out")],
                          check=False, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "HTTP Request" in proc.stderr and len(server.requests) > 0
    assert PASSWORD not in proc.stdout + proc.stderr
    saved = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*.json"))
    assert PASSWORD not in saved


def test_a_base_url_query_goes_with_each_request_and_only_its_credentials_stay_secret(server) -> None:
    """``?api-version=...&api-key=...`` (Azure's form): both reach the server as query parameters of each request, on
    the request's own path (a query left in the SDK's base URL ended up before the path: ``/v1/?api-key=...chat/
    completions``); the key stays out of the identity, the version stays in it (it changes the answers, so the
    cache keys)."""
    pytest.importorskip("anthropic")
    query = f"api-version=2024-06-01&api-key={PASSWORD}"
    for provider, model, path in (("openai", "m", "/v1/chat/completions"), ("anthropic", "claude-x", "/v1/messages")):
        llm = load_llm(f"{provider}:{model}", base_url=f"{server.url(provider)}?{query}", api_key="k-in-code",
                       retry=FAST)
        for backend in (llm, pickle.loads(pickle.dumps(llm))):  # a num_proc worker's copy finds the key too
            _call(backend)
            sent = urllib.parse.urlsplit(server.requests[-1].path)
            assert sent.path == path, server.requests[-1].path
            assert urllib.parse.parse_qs(sent.query) == {"api-version": ["2024-06-01"], "api-key": [PASSWORD]}
        assert llm.identity()["base_url"] == f"{server.url(provider)}?api-version=2024-06-01"
        assert PASSWORD not in str(llm.identity()) + repr(llm) and PASSWORD.encode() not in pickle.dumps(llm)
        other = load_llm(f"{provider}:{model}", base_url=f"{server.url(provider)}?api-version=2025-01-01")
        assert other.identity() != llm.identity()


def test_gemini_refuses_a_base_url_query_it_could_not_send() -> None:
    """google-genai's HttpOptions take no query parameters: a query would silently never be sent."""
    from hf_rgda import ConfigError

    pytest.importorskip("google.genai")
    with pytest.raises(ConfigError, match="query") as err:
        load_llm("gemini:gemini-x", base_url=f"http://127.0.0.1:9/?key={PASSWORD}")
    assert PASSWORD not in str(err.value)
    load_llm("gemini:gemini-x", base_url="http://127.0.0.1:9/")


def test_redact_hides_url_user_info() -> None:
    assert _secrets.redact("GET https://bob:hunter22@host:8/v1 and http://tok3n@h/x") == \
        "GET https://***@host:8/v1 and http://***@h/x"
    assert _secrets.redact("mail bob@example.org at http://host/v1") == "mail bob@example.org at http://host/v1"


# ---------------------------------------------------------------- keys given in code
def _aug(server: ProviderServer, key: str, **kw) -> RGDAAugmenter:
    return RGDAAugmenter("openai:m", label_names=LABELS, method="naive", num_augmented=1, cache=False,
                         llm_options={"base_url": server.url("openai"), "api_key": key, "retry": FAST}, **kw)


def test_key_in_code_survives_pickling_and_stays_out_of_the_fingerprint(server) -> None:
    one, two = _aug(server, KEY), _aug(server, "sk-in-code-another-key-99")
    assert Hasher.hash(one) == Hasher.hash(two)  # the key is not in what datasets hashes
    assert b"another-key" not in pickle.dumps(two)
    blob = pickle.dumps(one)
    assert KEY.encode() not in blob
    # one backend identity (backend, model, URLs) holds one key in a process: the object pickled last is the one
    # whose key its copies find (datasets pickles the augmenter when it hashes it, just before the workers start)
    assert pickle.loads(blob).llm._key() == KEY
    assert pickle.loads(pickle.dumps(two)).llm._key() == "sk-in-code-another-key-99"
    # a key from the environment gives the same fingerprint class as no key at all: keyless states are unchanged
    assert "_secret_id" not in load_llm("openai:m", base_url=server.url("openai")).__getstate__()


def test_key_in_code_reaches_num_proc_workers(server) -> None:
    server.keys = {KEY}  # any other key (or none) is a 401, which would stop the run
    ds = Dataset.from_dict({k: v[:2] for k, v in SEED_ROWS.items()})
    out = ds.map(_aug(server, KEY), batched=True, batch_size=1, num_proc=2)
    statuses = out["rgda_status"]
    assert "failed" not in statuses and statuses.count("original") == 2 and "accepted" in statuses
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {KEY}"}


def test_a_worker_reads_the_key_from_the_environment_or_says_it_has_none(server, monkeypatch) -> None:
    """A spawned (not forked) worker has no copy of the parent's memory: the key comes from HF_RGDA_SECRET_<id>;
    without it the error says what happened instead of trying another key."""
    blob = pickle.dumps(load_llm("openai:m", base_url=server.url("openai"), api_key=KEY))
    monkeypatch.setattr(_secrets, "_registry", {})
    assert pickle.loads(blob)._key() == KEY
    for name in [k for k in os.environ if k.startswith(PREFIX)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-some-other-key-1234")
    with pytest.raises(AuthenticationError, match="given in code did not reach this process"):
        pickle.loads(blob)._key()


def test_secrets_given_in_code_are_redacted_from_published_text(server) -> None:
    load_llm("openai:m", base_url=_with_password(server.url("openai")), api_key=KEY)
    secrets = _secrets.environment_secrets()
    assert KEY in secrets and PASSWORD in secrets and "alice" not in secrets  # a user name is no secret


# ---------------------------------------------------------------- rate limits
def _arrivals(server: ProviderServer) -> list[float]:
    """When the server saw each request. The limiter admits the third request one window (1 s here) after the first;
    the server sees the first later than its admission (client set-up, a connection), so the bound is 0.75 s: without
    a shared limiter the three arrive within about 0.2 s."""
    return [t for t, step in server.events if step == 1]


def test_rpm_holds_across_event_loops(server) -> None:
    """Each datasets.map batch runs its own event loop; the limiter is the process's, so a third request within the
    window waits for it, whatever loop sends it."""
    llm = load_llm("openai:m", base_url=server.url("openai"), rpm=2, retry=FAST)
    llm.rate_window = 1.0  # a short window for the test (the default is 60 s)
    _call(llm)
    _call(llm)  # a second event loop: still within the first's window
    _call(llm)  # the third request in a third loop must wait for the window
    first, _, third = _arrivals(server)
    assert third - first >= 0.75


def test_rpm_holds_across_threads_and_backend_objects(server) -> None:
    """Two backend objects of the same identity and limits, each in its own thread and loop, share one limiter."""
    a, b = (load_llm("openai:m", base_url=server.url("openai"), rpm=2, retry=FAST) for _ in range(2))
    a.rate_window = b.rate_window = 1.0
    threads = [threading.Thread(target=_call, args=(llm,)) for llm in (a, b, a)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - start >= 0.75
    arrivals = sorted(_arrivals(server))
    assert arrivals[2] - arrivals[0] >= 0.75


def test_rpm_holds_across_map_batches(server) -> None:
    """Through datasets.map: three one-seed batches (three event loops), rpm=2: the run takes at least one window."""
    ds = Dataset.from_dict({k: v[:3] for k, v in SEED_ROWS.items()})
    aug = RGDAAugmenter("openai:m", label_names=LABELS, method="naive", num_augmented=1, cache=False,
                        verify_entities=False, llm_options={"base_url": server.url("openai"), "rpm": 2, "retry": FAST})
    aug.llm.rate_window = 1.0
    ds.map(aug, batched=True, batch_size=1)
    arrivals = sorted(_arrivals(server))
    assert len(arrivals) >= 3 and arrivals[2] - arrivals[0] >= 0.75
    assert json.dumps(aug.llm.identity())  # the limiter's key is the public identity
