"""OpenAI, Anthropic and Gemini backends against a local server speaking each provider's wire format.

The official SDKs run unchanged; the server (hf_rgda.testing.providers) is scripted per request: normal and
structured answers, 429 with Retry-After, 500, timeouts, dropped connections, invalid JSON and refusals.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
import traceback
from pathlib import Path

import pytest
from datasets import Dataset

from hf_rgda import (
    AuthenticationError,
    BackendError,
    ConnectionError,
    RateLimitError,
    RefusalError,
    RGDAAugmenter,
    ServerError,
    TimeoutError,
    load_llm,
)
from hf_rgda._secrets import redact
from hf_rgda.llm import EXAMPLE_MODELS
from hf_rgda.llm.limits import RateLimiter
from hf_rgda.llm.remote import RetryPolicy
from hf_rgda.pricing import PriceTable, cost_report, format_cost
from hf_rgda.testing import FakeWorld
from hf_rgda.testing.providers import Action, ProviderServer

from .conftest import LABELS, SEED_ROWS

pytest.importorskip("openai")
pytest.importorskip("anthropic")
pytest.importorskip("google.genai")

PROVIDERS = EXAMPLE_MODELS
KEY = "sk-test-Zq81SECRETvalue77"
SCHEMA = {"type": "object", "properties": {"disease": {"type": "string", "enum": ["asthma", "gout"]}},
          "required": ["disease"], "additionalProperties": False}
MSGS = [{"role": "system", "content": "You name diseases."}, {"role": "user", "content": "Name one."}]
PARAMS = {"temperature": 0.0, "max_tokens": 32, "seed": 1}
FAST = RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=5)


@pytest.fixture
def server():
    world = FakeWorld().serve()  # the entity verifier's questions: logprobs, or sampled (Anthropic)
    with ProviderServer(lambda m, s: {"disease": "gout"} if s == SCHEMA else world["responder"](m, s),
                        logprobs=world["logprobs"]) as srv:
        yield srv


@pytest.fixture(params=list(PROVIDERS))
def provider(request) -> str:
    return request.param


def make(provider: str, server: ProviderServer, **kw):
    kw.setdefault("retry", FAST)
    kw.setdefault("timeout", 5.0)
    return load_llm(f"{provider}:{PROVIDERS[provider]}", base_url=server.url(provider), api_key=KEY, **kw)


def call(llm, schema=SCHEMA):
    return asyncio.run(llm.complete(MSGS, schema=schema, params=PARAMS))


def test_structured_answer_and_usage(provider, server) -> None:
    comp = call(make(provider, server))
    assert comp.text.replace(" ", "") == '{"disease":"gout"}'
    assert comp.usage.prompt_tokens > 0 and comp.usage.completion_tokens > 0
    req = server.requests[-1]
    assert req.schema == SCHEMA  # the provider's structured-output field carries our schema, enum included
    if provider == "openai":
        assert req.body["response_format"]["type"] == "json_schema"
        assert req.body["response_format"]["json_schema"]["strict"] is True
    elif provider == "anthropic":
        assert req.body["tool_choice"] == {"type": "tool", "name": req.body["tools"][0]["name"]}
        assert req.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    else:
        assert req.body["generationConfig"]["responseMimeType"] == "application/json"
        assert req.body["systemInstruction"]["parts"][0]["text"] == MSGS[0]["content"]


def test_repeated_system_prompt_reports_cached_tokens(provider, server) -> None:
    llm = make(provider, server)
    first, second = call(llm), call(llm)
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens == len(MSGS[0]["content"].split())
    assert second.usage.prompt_tokens >= second.usage.cached_tokens


def test_429_honours_retry_after(provider, server) -> None:
    llm = make(provider, server)
    server.push(Action.error(429, retry_after=1), Action.answer())
    start = time.perf_counter()
    comp = call(llm)
    assert time.perf_counter() - start >= 1.0
    assert "gout" in comp.text and llm.retries == 1 and len(server.requests) == 2


def test_500_is_retried_with_backoff(provider, server) -> None:
    llm = make(provider, server)
    server.push(Action.error(500), Action.error(503), Action.answer())
    assert "gout" in call(llm).text and llm.retries == 2


def test_retries_are_bounded_and_typed(provider, server) -> None:
    llm = make(provider, server)
    server.push(*[Action.error(429, retry_after=0)] * 3)
    with pytest.raises(RateLimitError) as info:
        call(llm)
    assert info.value.status == 429 and len(server.requests) == 3
    server.push(*[Action.error(500)] * 3)
    with pytest.raises(ServerError):
        call(llm)


def test_timeout_then_success(provider, server) -> None:
    llm = make(provider, server, timeout=0.5)
    server.push(Action.answer(delay=1.5), Action.answer())
    assert "gout" in call(llm).text and llm.retries == 1
    server.push(*[Action.answer(delay=1.5)] * 3)
    with pytest.raises(TimeoutError):
        call(llm)


def test_dropped_connection_is_retried(provider, server) -> None:
    llm = make(provider, server)
    server.push(Action.drop(), Action.answer())
    assert "gout" in call(llm).text and llm.retries == 1
    server.push(*[Action.drop()] * 3)
    with pytest.raises(ConnectionError):
        call(llm)


def test_refusal_is_not_retried(provider, server) -> None:
    llm = make(provider, server)
    server.push(Action.refusal())
    with pytest.raises(RefusalError):
        call(llm)
    assert len(server.requests) == 1 and llm.retries == 0


def test_bad_key_never_leaks(provider, server, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server.keys = {"the-right-key"}
    caplog.set_level(logging.DEBUG)
    llm = make(provider, server)
    with pytest.raises(AuthenticationError) as info:
        call(llm)
    assert len(server.requests) == 1  # never retried
    err = info.value
    shown = str(err) + repr(err) + "".join(traceback.format_exception(err))
    assert KEY not in shown and "Zq81SECRET" not in shown
    assert KEY not in caplog.text
    assert KEY not in repr(llm) and KEY not in str(llm.identity()) and KEY not in str(pickle.dumps(llm))


def test_missing_key_names_the_variable(provider) -> None:
    llm = load_llm(f"{provider}:{PROVIDERS[provider]}")
    with pytest.raises(AuthenticationError, match="_API_KEY"):
        call(llm)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_augmenter_end_to_end_with_invalid_json_reask_and_cost(provider, server, tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """rgda through ds.map: an invalid-JSON answer is re-asked once; usage and cost come from counted tokens."""
    caplog.set_level(logging.DEBUG)
    server.push(Action.text("Sure! Here is the JSON you asked for: {sentences: [oops"))
    ds = Dataset.from_dict({k: v[:2] for k, v in SEED_ROWS.items()})
    cache = tmp_path / "r.sqlite3"
    aug = RGDAAugmenter(f"{provider}:{PROVIDERS[provider]}", label_names=LABELS, method="rgda", cache=cache,
                        llm_options={"base_url": server.url(provider), "api_key": KEY, "retry": FAST})
    out = ds.map(aug, batched=True)
    s = aug.summary.to_dict()
    assert s["failed_seeds"] == 0 and s["accepted"] == 6
    assert any("could not be read as JSON" in m["content"] for r in server.requests for m in r.messages)
    # the entity-type enum of the dataset is in every generating request's schema
    gen = [r for r in server.requests if r.schema and "sentences" in r.schema["properties"]]
    assert gen and all('"enum": ["Disease"]' in __import__("json").dumps(r.schema) for r in gen)
    assert s["prompt_tokens"] == sum(u["prompt_tokens"] for u in s["stage_usage"].values()) > 0
    assert s["cached_prompt_tokens"] > 0  # the static system prompts were read from the (simulated) cache
    table = PriceTable({f"{provider}:{PROVIDERS[provider]}": {"input": 1.0, "output": 2.0, "cached_input": 0.5}})
    report = cost_report(s["stage_usage"], aug.llm.identity(), table)
    expected = ((s["prompt_tokens"] - s["cached_prompt_tokens"]) * 1.0 + s["cached_prompt_tokens"] * 0.5
                + s["completion_tokens"] * 2.0) / 1e6
    assert report["priced"] and report["usd"] == pytest.approx(expected, abs=1e-6)
    assert any(k.startswith("composition_judge/round") for k in report["by_stage"])
    assert KEY not in caplog.text and KEY.encode() not in cache.read_bytes()
    assert all(KEY not in t for t in out["rgda_trace"])
    # a rerun is served from the response cache: no request reaches the server
    before = len(server.requests)
    ds.map(RGDAAugmenter(f"{provider}:{PROVIDERS[provider]}", label_names=LABELS, method="rgda", cache=cache,
                         llm_options={"base_url": server.url(provider), "api_key": KEY}), batched=True,
           load_from_cache_file=False)
    assert len(server.requests) == before


def test_invalid_json_twice_is_a_recorded_failure_and_the_batch_goes_on(server, tmp_path: Path) -> None:
    server.push(Action.text("not json"), Action.text("still not json"))
    ds = Dataset.from_dict({k: v[:2] for k, v in SEED_ROWS.items()})
    aug = RGDAAugmenter(f"openai:{PROVIDERS['openai']}", label_names=LABELS, method="gda", cache=False, keep_rejected=True,
                        llm_options={"base_url": server.url("openai"), "retry": FAST}, schedule="row")
    out = ds.map(aug, batched=True)
    assert aug.summary.failed_seeds == 1
    failed = [r for r in out if r["rgda_status"] == "failed"]
    assert len(failed) == 1 and "ParseError" in failed[0]["rgda_reason"]
    assert out["rgda_status"].count("accepted") == 3  # the other seed was augmented


def test_concurrency_limit_and_round_robin(server) -> None:
    with ProviderServer(lambda m, s: {"disease": "asthma"}, latency=0.2) as a, \
            ProviderServer(lambda m, s: {"disease": "asthma"}, latency=0.2) as b:
        llm = load_llm("openai:m", base_url=[a.url("openai"), b.url("openai")], max_concurrency=2, retry=FAST)

        async def many() -> None:
            await asyncio.gather(*(llm.complete(MSGS, schema=SCHEMA, params=PARAMS) for _ in range(8)))

        asyncio.run(many())
        assert len(a.requests) == len(b.requests) == 4
        # at most 2 in flight across both servers at any moment (a sum of each server's maximum is no bound: when
        # b's request ends first, the next in round-robin order goes to a, which then holds two)
        load, peak = 0, 0
        for _, step in sorted(a.events + b.events, key=lambda e: (e[0], e[1])):  # an end before a start at a tie
            load += step
            peak = max(peak, load)
        assert peak == 2


def test_rate_limiter_spreads_requests() -> None:
    async def go() -> float:
        limiter = RateLimiter(rpm=2, tpm=None, window=0.5)
        start = time.perf_counter()
        for _ in range(3):
            limiter.release(await limiter.acquire(10))  # a request answered at once
        return time.perf_counter() - start

    assert asyncio.run(go()) >= 0.45

    async def tokens() -> float:
        limiter = RateLimiter(rpm=None, tpm=100, window=0.4)
        start = time.perf_counter()
        limiter.release(await limiter.acquire(80))
        limiter.release(await limiter.acquire(80))
        return time.perf_counter() - start

    assert asyncio.run(tokens()) >= 0.35


def test_rate_limiter_counts_a_request_while_it_is_in_flight() -> None:
    """A request that outlasts the window still holds its place until it is released, and for a window after."""
    async def go() -> float:
        limiter = RateLimiter(rpm=1, tpm=None, window=0.2)
        first = await limiter.acquire(10)
        await asyncio.sleep(0.3)  # in flight for longer than the window
        waiter = asyncio.ensure_future(limiter.acquire(10))
        await asyncio.sleep(0.1)
        assert not waiter.done()
        limiter.release(first)
        released = time.perf_counter()
        await waiter
        return time.perf_counter() - released

    assert asyncio.run(go()) >= 0.18  # a window from the end, not from the admission


def test_retry_policy() -> None:
    import random

    policy, rng = RetryPolicy(max_attempts=3, base_delay=1.0, max_delay=10.0), random.Random(0)
    assert policy.delay(1, 7.0, rng) == 7.0  # Retry-After wins
    assert policy.delay(1, 11.0, rng) is None  # asks for longer than we wait
    assert 0 <= policy.delay(2, None, rng) <= 2.0
    assert policy.delay(3, None, rng) is None


def test_redact() -> None:
    assert redact(f"bad key {KEY} and sk-ant-abcdefgh1234 and AIzaSyA1234567890abc", [KEY]) == \
        "bad key *** and *** and ***"


def test_unknown_model_is_unpriced_not_zero_and_says_so() -> None:
    report = cost_report({"composer": {"calls": 1, "prompt_tokens": 100, "completion_tokens": 10, "cached_tokens": 0}},
                         {"backend": "openai", "model": "smollm2"})
    assert report["usd"] is None and not report["priced"] and "no price" in report["note"]
    assert report["by_stage"]["composer"]["usd"] is None and format_cost(report).startswith("cost: unpriced")


def test_backend_error_base_class() -> None:
    assert issubclass(RefusalError, BackendError) and not RefusalError.retryable
    assert all(c.retryable for c in (RateLimitError, ServerError, ConnectionError, TimeoutError))


def test_json_object_fallback_is_live_state_not_configuration(server) -> None:
    """A server that rejects strict json_schema (llama.cpp's) switches the backend to json_object; that switch is
    learned, not configured, so it must not change the pickled state datasets fingerprints the augmenter by."""
    from datasets.fingerprint import Hasher

    llm = make("openai", server)
    aug = RGDAAugmenter(llm, label_names=LABELS, cache=False)
    before_llm, before_aug = pickle.dumps(llm), Hasher.hash(aug)
    server.push(Action.error(400, message="response_format type json_schema is not supported"))
    assert call(llm).text == '{"disease": "gout"}'
    assert [r.body["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    call(llm)  # the fallback holds for the rest of the backend's life
    assert server.requests[-1].body["response_format"]["type"] == "json_object"
    assert pickle.dumps(llm) == before_llm and Hasher.hash(aug) == before_aug
    assert llm.schema_mode == "json_schema" and pickle.loads(pickle.dumps(llm)).schema_mode == "json_schema"


def test_example_models_are_current_in_the_installed_sdks() -> None:
    """The names in help texts, the Space and these tests are models the SDKs still list, none past end-of-life."""
    import typing

    from anthropic.resources.messages.messages import DEPRECATED_MODELS
    from anthropic.types import Model
    from google.genai import models as genai_models
    from openai.types import ChatModel

    assert EXAMPLE_MODELS["openai"] in typing.get_args(ChatModel)
    assert EXAMPLE_MODELS["anthropic"] in typing.get_args(typing.get_args(Model)[0])
    assert EXAMPLE_MODELS["anthropic"] not in DEPRECATED_MODELS
    assert f"model='{EXAMPLE_MODELS['gemini']}'" in Path(genai_models.__file__).read_text()
    stale = [name for name in PriceTable.default().prices if name.split(":", 1)[1] in DEPRECATED_MODELS]
    assert stale == []
