"""The strict provider fakes: each row of docs/providers.md's table is rejected, through the official SDKs, with the
provider's own error shape; and the backends, built from their capability records, send nothing a row rejects, adapt
once to a rejection the record did not predict, and never turn it into a failed call.
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest

from hf_rgda import load_llm
from hf_rgda.llm.capabilities import Capabilities, adapted, capabilities_for
from hf_rgda.llm.remote import RetryPolicy
from hf_rgda.testing.constraints import RULES, violation
from hf_rgda.testing.providers import ProviderServer

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")

MSGS = [{"role": "user", "content": "Name one disease."}]
SCHEMA = {"type": "object", "properties": {"d": {"type": "string"}}, "required": ["d"], "additionalProperties": False}
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=1)


@pytest.fixture(scope="module")
def server():
    with ProviderServer(lambda m, s: {"d": "gout"}, logprobs=lambda m: {"A": 0.9, "B": 0.1}) as srv:
        yield srv


def _openai(server: ProviderServer, **kw):
    client = openai.OpenAI(api_key="k", base_url=server.url("openai"), max_retries=0)
    return client.chat.completions.create(messages=MSGS, **kw)


def _anthropic(server: ProviderServer, **kw):
    client = anthropic.Anthropic(api_key="k", base_url=server.url("anthropic"), max_retries=0)
    kw.setdefault("max_tokens", 32)
    return client.messages.create(messages=MSGS, **kw)


def _gemini(server: ProviderServer, model: str, **config):
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.url("gemini")))
    return client.models.generate_content(model=model, contents="Name one disease.",
                                          config=types.GenerateContentConfig(**config))


def _openai_rejects(server, param, code, match, **kw):
    with pytest.raises(openai.BadRequestError) as info:
        _openai(server, **kw)
    err = info.value
    assert err.status_code == 400 and err.body["type"] == "invalid_request_error"
    assert (err.body["param"], err.body["code"]) == (param, code) and match in err.body["message"]


def _anthropic_rejects(server, match, **kw):
    with pytest.raises(anthropic.BadRequestError) as info:
        _anthropic(server, **kw)
    assert info.value.status_code == 400 and info.value.body == {
        "type": "error", "error": {"type": "invalid_request_error", "message": info.value.body["error"]["message"]}}
    assert match in info.value.body["error"]["message"]


def _gemini_rejects(server, model, match, **config):
    from google.genai import errors

    with pytest.raises(errors.ClientError) as info:
        _gemini(server, model, **config)
    assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT" and match in info.value.message


# ---------------------------------------------------------------- one test per row (the rule names of the table)
def test_openai_max_tokens(server) -> None:
    _openai_rejects(server, "max_tokens", "unsupported_parameter", "Use 'max_completion_tokens' instead",
                    model="gpt-5.5", max_tokens=10)
    _openai_rejects(server, "max_tokens", "unsupported_parameter", "max_completion_tokens", model="o3", max_tokens=10)
    assert _openai(server, model="gpt-5.5", max_completion_tokens=10).choices[0].message.content


def test_openai_temperature(server) -> None:
    _openai_rejects(server, "temperature", "unsupported_value", "Only the default (1) value is supported",
                    model="gpt-5.5", temperature=0.0)
    assert _openai(server, model="gpt-5.5", temperature=1.0).choices  # the default passes


def test_openai_top_p(server) -> None:
    _openai_rejects(server, "top_p", "unsupported_parameter", "'top_p' is not supported", model="o4-mini", top_p=0.5)


def test_openai_logprobs(server) -> None:
    _openai_rejects(server, "logprobs", "unsupported_parameter", "'logprobs' is not supported",
                    model="gpt-5.5", logprobs=True, top_logprobs=5)
    assert _openai(server, model="gpt-4o-mini", logprobs=True, top_logprobs=2).choices[0].logprobs is not None


def test_openai_reasoning_effort(server) -> None:
    _openai_rejects(server, "reasoning_effort", "unsupported_value", "'minimal'", model="gpt-5.5",
                    reasoning_effort="minimal")
    _openai_rejects(server, "reasoning_effort", "unsupported_value", "'none'", model="o3", reasoning_effort="none")
    assert _openai(server, model="gpt-5.5", reasoning_effort="low").choices


def test_openai_effort_non_reasoning(server) -> None:
    _openai_rejects(server, "reasoning_effort", "unsupported_parameter", "'reasoning_effort' is not supported",
                    model="gpt-4o", reasoning_effort="low")


def test_openai_strict_schema(server) -> None:
    loose = {"type": "object", "properties": {"d": {"type": "object", "properties": {}}}, "required": ["d"],
             "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "output", "schema": loose, "strict": True}}
    _openai_rejects(server, "response_format", None, "In context=('properties', 'd'), 'additionalProperties' is "
                    "required", model="gpt-4o", response_format=fmt)


def test_anthropic_temperature(server) -> None:
    for model in ("claude-sonnet-5-5", "claude-opus-4-7"):
        _anthropic_rejects(server, "`temperature` is deprecated for this model.", model=model,
                           extra_body={"temperature": 0.2}, thinking={"type": "disabled"})
    assert _anthropic(server, model="claude-haiku-4-5", extra_body={"temperature": 0.2}).content


def test_anthropic_top_p(server) -> None:
    _anthropic_rejects(server, "`top_p` is deprecated", model="claude-opus-4-8", extra_body={"top_p": 0.9})


def test_anthropic_top_k(server) -> None:
    _anthropic_rejects(server, "`top_k` is deprecated", model="claude-opus-4-8", extra_body={"top_k": 5})


def test_anthropic_both_samplers(server) -> None:
    _anthropic_rejects(server, "cannot both be specified", model="claude-sonnet-4-5",
                       extra_body={"temperature": 0.5, "top_p": 0.9})


def test_anthropic_forced_tool_thinking(server) -> None:
    tools = [{"name": "w", "description": "d", "input_schema": SCHEMA}]
    forced = {"type": "tool", "name": "w"}
    # the Claude 5 generation thinks when thinking is omitted; older models only when asked
    _anthropic_rejects(server, "Thinking may not be enabled when tool_choice forces tool use.",
                       model="claude-sonnet-5-5", tools=tools, tool_choice=forced)
    _anthropic_rejects(server, "Thinking may not be enabled", model="claude-sonnet-4-6", tools=tools,
                       tool_choice={"type": "any"}, thinking={"type": "adaptive"})
    assert _anthropic(server, model="claude-sonnet-5-5", tools=tools, tool_choice=forced,
                      thinking={"type": "disabled"}).content[0].type == "tool_use"


def test_anthropic_thinking_enabled(server) -> None:
    _anthropic_rejects(server, '"thinking.type.enabled" is not supported for this model', model="claude-sonnet-5-5",
                       thinking={"type": "enabled", "budget_tokens": 1024})


def test_gemini_logprobs(server) -> None:
    for model in ("gemini-3.8-flash", "gemini-2.5-flash"):
        _gemini_rejects(server, model, f"Logprobs is not enabled for models/{model}", response_logprobs=True,
                        logprobs=3)
    assert _gemini(server, "gemini-2.0-flash", response_logprobs=True, logprobs=2).candidates[0].logprobs_result


def test_gemini_thinking_level(server) -> None:
    from google.genai import types

    _gemini_rejects(server, "gemini-2.5-flash", "thinking_level is not supported",
                    thinking_config=types.ThinkingConfig(thinking_level="LOW"))
    assert _gemini(server, "gemini-3.8-flash", thinking_config=types.ThinkingConfig(thinking_level="LOW")).text


def test_gemini_level_and_budget(server) -> None:
    from google.genai import types

    _gemini_rejects(server, "gemini-3-flash", "only set one of thinking budget and thinking level",
                    thinking_config=types.ThinkingConfig(thinking_level="LOW", thinking_budget=128))


def test_gemini_budget_3_5(server) -> None:
    from google.genai import types

    _gemini_rejects(server, "gemini-3.8-flash", "thinking_budget is not supported",
                    thinking_config=types.ThinkingConfig(thinking_budget=128))
    assert _gemini(server, "gemini-2.5-flash", thinking_config=types.ThinkingConfig(thinking_budget=128)).text


def test_gemini_response_schema(server) -> None:
    """Sent as REST (the SDK rewrites a dict given as ``response_schema`` into its own Schema type first)."""
    import json
    import urllib.error
    import urllib.request

    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseSchema": SCHEMA}}
    req = urllib.request.Request(f"{server.url('gemini')}/v1beta/models/gemini-3.8-flash:generateContent",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    error = json.loads(info.value.read())["error"]
    assert info.value.code == 400 and error["status"] == "INVALID_ARGUMENT" and error["code"] == 400
    assert 'Unknown name "additionalProperties" at \'generation_config.response_schema\'' in error["message"]
    assert _gemini(server, "gemini-3.8-flash", response_mime_type="application/json",
                   response_json_schema=SCHEMA).text


def test_every_rule_has_its_test_and_its_docs_row() -> None:
    names = {name.removeprefix("test_").replace("_", "-") for name in globals() if name.startswith("test_")}
    docs = (Path(__file__).resolve().parents[1] / "docs" / "providers.md").read_text()
    for rule in RULES:
        assert rule.row in names, f"no test for {rule.row}"
        assert f"`{rule.row}`" in docs, f"{rule.row} is not in docs/providers.md"
    assert violation("openai", "my-local-model", {"max_tokens": 5, "temperature": 0.1, "logprobs": True}) is None


# ---------------------------------------------------------------- the backends against the strict fakes
@pytest.mark.parametrize(("spec", "family"), [
    ("openai:gpt-5.5", "openai-reasoning"), ("openai:o4-mini", "openai-reasoning"),
    ("openai:gpt-5.5-pro", "openai-reasoning-pro"), ("openai:gpt-4o-mini", "openai-chat"),
    ("openai:Qwen2.5-7B-Instruct", "openai-chat"), ("anthropic:claude-sonnet-5-5", "anthropic-thinks-by-default"),
    ("anthropic:claude-opus-4-7", "anthropic-no-sampling"), ("anthropic:claude-haiku-4-5", "anthropic"),
    ("gemini:gemini-3.8-flash", "gemini-3"), ("gemini:gemini-2.5-pro", "gemini-2.5"), ("gemini:gemini-2.0-flash", "gemini"),
])
def test_backends_send_what_their_model_takes(server, spec: str, family: str) -> None:
    backend = spec.split(":")[0]
    llm = load_llm(spec, base_url=server.url(backend), api_key="k", retry=FAST, timeout=5.0)
    assert llm.caps.family == family
    comp = asyncio.run(llm.complete(MSGS, schema=SCHEMA, params={"temperature": 0.0, "max_tokens": 40, "seed": 1}))
    probs = asyncio.run(llm.option_probs(MSGS, ["A", "B"], params={"seed": 1, "samples": 2}))
    assert "gout" in comp.text and llm.adaptations == [] and llm.retries == 0
    assert probs.method == ("logprobs" if llm.caps.logprobs else "samples")


def test_reasoning_requests_leave_room_for_hidden_reasoning(server) -> None:
    llm = load_llm("openai:gpt-5.5", base_url=server.url("openai"), api_key="k", retry=FAST)
    asyncio.run(llm.complete(MSGS, schema=SCHEMA, params={"temperature": 0.0, "max_tokens": 40}))
    body = server.requests[-1].body
    assert body["max_completion_tokens"] == 40 + 2048 and body["reasoning_effort"] == "low"
    assert "temperature" not in body and "max_tokens" not in body


def test_an_unpredicted_rejection_is_adapted_to_once_and_is_not_configuration(server) -> None:
    """A record that says a model takes temperature and max_tokens (wrongly, here by override) is corrected by the
    first rejections, once each, for the rest of the run; the correction is never pickled."""
    wrong = {"token_param": "max_tokens", "temperature": True, "reasoning_effort": None, "reasoning_tokens": 0}
    llm = load_llm("openai:gpt-5.5", base_url=server.url("openai"), api_key="k", retry=FAST, capabilities=wrong)
    before = pickle.dumps(llm)
    first = len(server.requests)
    comp = asyncio.run(llm.complete(MSGS, schema=SCHEMA, params={"temperature": 0.0, "max_tokens": 40}))
    assert "gout" in comp.text and llm.retries == 0
    assert len(server.requests) - first == 3  # max_tokens refused, then temperature refused, then answered
    assert [a.split(":")[0] for a in llm.adaptations] == ["max_tokens renamed to max_completion_tokens",
                                                         "temperature dropped"]
    asyncio.run(llm.complete(MSGS, schema=SCHEMA, params={"temperature": 0.0, "max_tokens": 40}))
    assert len(server.requests) - first == 4 and len(llm.adaptations) == 2  # learned: no more refusals
    assert pickle.dumps(llm) == before and pickle.loads(before).adaptations == []
    assert llm.identity()["capabilities"] == dict(sorted(wrong.items()))


def test_anthropic_adapts_to_a_temperature_refusal(server) -> None:
    llm = load_llm("anthropic:claude-opus-4-7", base_url=server.url("anthropic"), api_key="k", retry=FAST,
                   capabilities={"temperature": True})
    comp = asyncio.run(llm.complete(MSGS, schema=SCHEMA, params={"temperature": 0.2, "max_tokens": 40}))
    assert "gout" in comp.text and llm.adaptations[0].startswith("temperature dropped")
    assert "temperature" not in server.requests[-1].body


def test_every_backend_adapts_to_each_rejection_in_turn(server) -> None:
    """One adapt-once flow for every remote backend (``Adaptive._adapting``): a request the record got wrong twice is
    corrected twice, each parameter once, then answered (Anthropic's and Gemini's adapted to the first rejection
    only and failed on the second, where OpenAI's went on)."""
    llm = load_llm("anthropic:claude-opus-4-7", base_url=server.url("anthropic"), api_key="k", retry=FAST,
                   capabilities={"temperature": True, "top_p": True})
    first = len(server.requests)
    comp = asyncio.run(llm.complete(MSGS, schema=SCHEMA, params={"temperature": 0.2, "top_p": 0.9, "max_tokens": 40}))
    assert "gout" in comp.text and len(server.requests) - first == 3
    assert [a.split(":")[0] for a in llm.adaptations] == ["temperature dropped", "top_p dropped"]
    assert not {"temperature", "top_p"} & set(server.requests[-1].body.get("extra_body", server.requests[-1].body))


def test_capability_records_and_overrides() -> None:
    assert capabilities_for("openai", "gpt-5.5").cap(100) == 2148
    assert capabilities_for("gemini", "gemini-3.8-flash", {"reasoning_effort": "minimal"}).reasoning_effort == "minimal"
    assert adapted(Capabilities(), "max_tokens").token_param == "max_completion_tokens"
    assert adapted(Capabilities(logprobs=False), "logprobs") is None and adapted(Capabilities(), "seed") is None
    with pytest.raises(Exception, match="unknown field"):
        capabilities_for("openai", "gpt-5.5", {"temprature": False})
