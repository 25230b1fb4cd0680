"""Option probabilities (LLM.option_probs): the matching rule, the scripted fake, the wire servers, the real model.

The rule (hf_rgda.llm.options) is tested table-style; OpenAI and Gemini read logprobs from the scripted wire servers
through the official SDKs; Anthropic and ``ScriptedLLM(logprobs=False)`` use the sampling fallback; the tiny local
GGUF (marked slow, like the other real-model tests) checks the local reading against llama.cpp's own logprobs, and
the OpenAI backend against llama.cpp's OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import copy
import doctest
import math
from pathlib import Path

import pytest

from hf_rgda import BackendError, ConfigError, RateLimitError, ScriptedLLM, load_llm
from hf_rgda.cache import ResponseCache, cache_key, option_probs_key
from hf_rgda.llm import OptionProbs, Usage
from hf_rgda.llm import options as options_module
from hf_rgda.llm.options import (
    answer_schema,
    check_options,
    match_option,
    normalise,
    probs_from_answers,
    probs_from_top,
    samples_of,
    top_logprobs_of,
)
from hf_rgda.llm.remote import RetryPolicy
from hf_rgda.testing.providers import Action, ProviderServer

from .test_local_integration import TINY, TINY_PATH
from .test_local_integration import llama_server as llama_cpp_server  # noqa: F401 (a fixture: llama.cpp's server)

LETTERS = ["A", "B", "C", "D", "E"]
QUESTION = [{"role": "system", "content": "Answer with one letter."},
            {"role": "user", "content": 'In "Patients with cystic fibrosis", "cystic fibrosis" is: A) a disease '
                                        "B) a gene C) a chemical D) a body part E) an ordinary phrase. Answer:"}]
DIST = {"A": 0.6, " A": 0.1, "B": 0.2, "The": 0.05}  # the next-token distribution the servers script
PARAMS = {"seed": 7}
FAST = RetryPolicy(max_attempts=3, base_delay=0.05, max_delay=5)
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "gemini": "gemini-2.0-flash"}  # with logprobs


def lp(p: float) -> float:
    return math.log(p)


def rounded(probs: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in probs.items()}


# ---------------------------------------------------------------- the rule, table-style
@pytest.mark.parametrize(("token", "expected"), [
    ("A", "A"), (" A", "A"), ("a", "A"), ("\nA ", "A"), ("\u2581A", "A"), ("\u0120a", "A"), ("B", "B"),
    ("A)", None), ("Ans", None), ("", None), (" ", None), ("F", None),
])
def test_tokens_match_options_up_to_whitespace_and_case(token: str, expected: str | None) -> None:
    assert match_option(token, LETTERS) == expected


@pytest.mark.parametrize(("token", "expected"), [(" Yes", "yes"), ("NO", "no"), ("yes.", None), ("y", None)])
def test_yes_no_matching(token: str, expected: str | None) -> None:
    assert match_option(token, ["yes", "no"]) == expected


@pytest.mark.parametrize(("top", "options", "probs", "mass"), [
    # every option listed: plain renormalisation over the options; "The" is not an option
    ([("A", lp(0.6)), ("B", lp(0.3)), ("The", lp(0.1))], ["A", "B"], {"A": 2 / 3, "B": 1 / 3}, 0.9),
    # variants of one option add up
    ([(" A", lp(0.4)), ("A", lp(0.2)), ("a", lp(0.1)), ("B", lp(0.3))], ["A", "B"], {"A": 0.7, "B": 0.3}, 1.0),
    # an absent option shares the leftover (0.1 / 1), capped by the smallest listed (0.2): 0.1
    ([("A", lp(0.7)), ("B", lp(0.2))], ["A", "B", "C"], {"A": 0.7, "B": 0.2, "C": 0.1}, 0.9),
    # two absent options share the leftover 0.2 equally
    ([("A", lp(0.8))], ["A", "B", "C"], {"A": 0.8, "B": 0.1, "C": 0.1}, 0.8),
    # the cap: leftover 0.5 over one absent option, but no unlisted token beats the smallest listed (0.05)
    ([("A", lp(0.4)), ("x", lp(0.05)), ("y", lp(0.05))], ["A", "B"], {"A": 0.4 / 0.45, "B": 0.05 / 0.45}, 0.4),
    # the list holds all the mass: an absent option gets nothing
    ([("A", lp(0.9)), ("B", lp(0.1))], ["A", "B", "C"], {"A": 0.9, "B": 0.1, "C": 0.0}, 1.0),
    # nothing matched, nothing left over: uniform (the model said nothing about the options)
    ([("The", lp(0.5)), ("I", lp(0.5))], ["A", "B"], {"A": 0.5, "B": 0.5}, 0.0),
    # nothing matched, some mass left over: every option gets the same floor, hence uniform
    ([("The", lp(0.6))], ["yes", "no"], {"yes": 0.5, "no": 0.5}, 0.0),
    # an empty top list, and -inf logprobs, carry no information
    ([], ["A", "B"], {"A": 0.5, "B": 0.5}, 0.0),
    ([("A", -math.inf), ("B", lp(1.0))], ["A", "B"], {"A": 0.0, "B": 1.0}, 1.0),
])
def test_probs_from_top(top, options, probs, mass) -> None:
    got, got_mass = probs_from_top(top, options)
    assert list(got) == list(options)  # the options' order
    assert rounded(got) == rounded(probs)
    assert math.isclose(sum(got.values()), 1.0)
    assert math.isclose(got_mass, mass, abs_tol=1e-9)


@pytest.mark.parametrize(("texts", "probs", "mass"), [
    (['{"answer": "A"}', '{"answer": "A"}', '{"answer": "B"}', '{"answer": "A"}'], {"A": 0.75, "B": 0.25}, 1.0),
    (['{"answer": "a"}', "B", '"B"', '{"answer": "maybe"}'], {"A": 1 / 3, "B": 2 / 3}, 0.75),
    (['{"answer": 3}', "[1]", "not json"], {"A": 0.5, "B": 0.5}, 0.0),
    ([], {"A": 0.5, "B": 0.5}, 0.0),
])
def test_probs_from_answers(texts, probs, mass) -> None:
    got, got_mass = probs_from_answers(texts, ["A", "B"])
    assert rounded(got) == rounded(probs) and math.isclose(got_mass, mass)


@pytest.mark.parametrize("options", [[], ["A"], "AB", ["A", ""], ["A", " "], ["A", "a"], ["yes", " Yes "], ["A", 1]])
def test_bad_options_are_config_errors(options) -> None:
    with pytest.raises(ConfigError, match="options="):
        check_options(options)


@pytest.mark.parametrize(("params", "ok"), [({}, 20), ({"top_logprobs": 5}, 5), ({"top_logprobs": 0}, None),
                                            ({"top_logprobs": 21}, None), ({"top_logprobs": True}, None),
                                            ({"top_logprobs": 2.0}, None)])
def test_top_logprobs_param(params, ok) -> None:
    if ok is None:
        with pytest.raises(ConfigError, match="top_logprobs="):
            top_logprobs_of(params)
    else:
        assert top_logprobs_of(params) == ok


@pytest.mark.parametrize(("params", "ok"), [({}, 5), ({"samples": 1}, 1), ({"samples": 0}, None),
                                            ({"samples": "3"}, None)])
def test_samples_param(params, ok) -> None:
    if ok is None:
        with pytest.raises(ConfigError, match="samples="):
            samples_of(params)
    else:
        assert samples_of(params) == ok


def test_normalise_and_module_example() -> None:
    assert normalise(" \u2581Yes\n") == "yes"
    assert doctest.testmod(options_module).failed == 0


def test_from_top_checks_options_and_keeps_the_list() -> None:
    res = OptionProbs.from_top([(" A", -0.1), ("B", None)], ["A", "B"], usage=Usage(3, 1), seconds=0.5)
    assert res.method == "logprobs" and res.top == ((" A", -0.1),) and res.usage == Usage(3, 1)
    assert res.probs["A"] > 0.9 and res.seconds == 0.5 and not res.cached
    with pytest.raises(ConfigError):
        OptionProbs.from_top([], ["A"])


# ---------------------------------------------------------------- the scripted fake
def ask(llm, options=LETTERS, params=PARAMS, messages=QUESTION) -> OptionProbs:
    return asyncio.run(llm.option_probs(messages, options, params=params))


def test_scripted_distribution_is_read_like_a_top_list() -> None:
    seen = []
    llm = ScriptedLLM(lambda m, s, p: seen.append((s, p)) or {"A": 0.7, " a": 0.1, "E": 0.2})
    messages = copy.deepcopy(QUESTION)
    res = ask(llm, messages=messages)
    assert messages == QUESTION  # never mutated
    assert res.method == "scripted" and rounded(res.probs) == {"A": 0.8, "B": 0.0, "C": 0.0, "D": 0.0, "E": 0.2}
    assert seen == [(answer_schema(LETTERS), PARAMS)] and len(llm.calls) == 1
    assert llm.identity() == {"backend": "scripted", "name": "scripted"}  # unchanged: the snapshot's cache keys


@pytest.mark.parametrize("answer", [{"answer": "A"}, "A", {"A": 2}, {"A": True}])
def test_scripted_answer_that_is_no_distribution_is_an_error(answer) -> None:
    with pytest.raises(BackendError, match="must be"):
        ask(ScriptedLLM(lambda m, s, p: answer))


def test_scripted_exception_is_raised() -> None:
    with pytest.raises(RateLimitError):
        ask(ScriptedLLM([RateLimitError("slow down")]))


def test_sampling_fallback_on_the_fake() -> None:
    answers = iter(["A", "A", "B", "A", "maybe"])
    llm = ScriptedLLM(lambda m, s, p: {"answer": next(answers)}, logprobs=False)
    res = ask(llm)
    assert res.method == "samples" and res.top == () and math.isclose(res.mass, 0.8)
    assert rounded(res.probs) == {"A": 0.75, "B": 0.25, "C": 0.0, "D": 0.0, "E": 0.0}
    assert [c[1] for c in llm.calls] == [answer_schema(LETTERS)] * 5
    assert [c[2] for c in llm.calls] == [{"temperature": 1.0, "max_tokens": 64, "seed": 7 + i} for i in range(5)]
    assert res.usage.prompt_tokens == 5 * sum(len(m["content"].split()) for m in QUESTION)
    assert llm.identity()["logprobs"] is False


def test_sampling_fallback_k_is_a_parameter() -> None:
    llm = ScriptedLLM(lambda m, s, p: {"answer": "yes"}, logprobs=False)
    res = ask(llm, ["yes", "no"], {"seed": 0, "samples": 2})
    assert len(llm.calls) == 2 and res.probs == {"yes": 1.0, "no": 0.0}


# ---------------------------------------------------------------- the cache
def test_cache_round_trip(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "r.sqlite3")
    ident = {"backend": "scripted", "name": "x"}
    key = option_probs_key(ident, QUESTION, LETTERS, PARAMS)
    assert key != cache_key(ident, QUESTION, answer_schema(LETTERS), PARAMS)
    assert key != option_probs_key(ident, QUESTION, ["A", "B"], PARAMS)
    assert key != option_probs_key(ident, QUESTION, LETTERS, {"seed": 8})
    assert cache.get_option_probs(key) is None
    res = OptionProbs.from_top([("B", -0.2), (" A", -1.9)], LETTERS, usage=Usage(40, 1), seconds=2.5)
    cache.put_option_probs(key, res)
    back = cache.get_option_probs(key)
    assert back is not None and back.cached
    assert back.probs == res.probs and list(back.probs) == LETTERS and back.top == res.top
    assert (back.method, back.mass, back.usage, back.seconds) == (res.method, res.mass, res.usage, res.seconds)


# ---------------------------------------------------------------- the wire servers
@pytest.fixture
def server():
    with ProviderServer(lambda m, s: {"answer": "A"}, logprobs=lambda m: DIST) as srv:
        yield srv


def remote(provider: str, server: ProviderServer, **kw):
    pytest.importorskip({"openai": "openai", "anthropic": "anthropic", "gemini": "google.genai"}[provider])
    return load_llm(f"{provider}:{MODELS[provider]}", base_url=server.url(provider), api_key="k-test", retry=FAST,
                    timeout=5.0, **kw)


EXPECTED = {"A": 0.7 / 0.95, "B": 0.2 / 0.95, "C": 0.05 / 3 / 0.95, "D": 0.05 / 3 / 0.95, "E": 0.05 / 3 / 0.95}


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_logprobs_over_the_wire(provider: str, server: ProviderServer) -> None:
    res = ask(remote(provider, server))
    assert res.method == "logprobs" and rounded(res.probs) == rounded(EXPECTED)
    assert math.isclose(res.mass, 0.9) and res.usage.prompt_tokens > 0 and res.seconds > 0
    assert [t for t, _ in res.top] == ["A", "B", " A", "The"]  # the server's ranking, read whole
    body = server.requests[-1].body
    if provider == "openai":
        assert (body["logprobs"], body["top_logprobs"], body["max_tokens"], body["temperature"], body["seed"]) == (
            True, 20, 1, 0.0, 7)
        assert "response_format" not in body
    else:
        config = body["generationConfig"]
        assert (config["responseLogprobs"], config["logprobs"], config["maxOutputTokens"], config["temperature"],
                config["seed"]) == (True, 20, 1, 0.0, 7)
        assert body["systemInstruction"]["parts"][0]["text"] == "Answer with one letter."


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_top_logprobs_width_is_sent_and_the_list_cut_by_the_server(provider: str, server: ProviderServer) -> None:
    res = ask(remote(provider, server), params={"seed": 1, "top_logprobs": 2})
    assert [t for t, _ in res.top] == ["A", "B"]
    # A and B hold 0.8, the leftover 0.2 is capped by the smallest listed (0.2) and split over C, D, E
    assert rounded(res.probs) == rounded({"A": 0.6, "B": 0.2, "C": 0.2 / 3, "D": 0.2 / 3, "E": 0.2 / 3})


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_scripted_distribution_retry_and_chosen_token(provider: str, server: ProviderServer) -> None:
    server.push(Action.error(429, retry_after=0), Action.answer({"E": 0.9, "D": 0.1}))
    llm = remote(provider, server)
    res = ask(llm, params={"seed": 1, "top_logprobs": 1})
    assert llm.retries == 1 and len(server.requests) == 2  # one retry policy for both primitives
    assert res.top == (("E", math.log(0.9)),) and res.probs["E"] == pytest.approx(0.9 / (0.9 + 4 * 0.1 / 4))


def test_openai_server_without_logprobs_is_a_clear_error() -> None:
    with ProviderServer(lambda m, s: "A") as srv:
        with pytest.raises(BackendError, match="no logprobs"):
            ask(remote("openai", srv))
        assert len(srv.requests) == 1  # not retried


def test_gemini_model_that_refuses_logprobs_is_read_by_sampling_from_then_on() -> None:
    """An unpredicted "Logprobs is not enabled" answer is learned once: that question and every later one sample."""
    with ProviderServer(lambda m, s: {"answer": "B"}) as srv:
        llm = remote("gemini", srv)
        assert llm.has_logprobs
        res = ask(llm, params={"seed": 1, "samples": 3})
        assert res.method == "samples" and res.probs["B"] == 1.0
        assert not llm.has_logprobs and len(llm.adaptations) == 1 and "logprobs" in llm.adaptations[0]
        assert len(srv.requests) == 1 + 3  # the refused request, then the samples; nothing retried blindly
        ask(llm, params={"seed": 2, "samples": 3})
        assert len(srv.requests) == 1 + 3 + 3 and len(llm.adaptations) == 1


def test_models_without_logprobs_sample_from_the_start(server: ProviderServer) -> None:
    """The capability record is per model: gpt-5.5, gemini-3.8-flash and gemini-2.5-flash have no logprobs."""
    server.responder = lambda m, s: {"answer": "A"}
    for provider, model in (("openai", "gpt-5.5"), ("gemini", "gemini-3.8-flash"), ("gemini", "gemini-2.5-flash")):
        before = len(server.requests)
        llm = load_llm(f"{provider}:{model}", base_url=server.url(provider), api_key="k", retry=FAST, timeout=5.0)
        res = ask(llm, params={"seed": 1, "samples": 2})
        assert not llm.has_logprobs and res.method == "samples" and llm.adaptations == []
        assert len(server.requests) == before + 2


def test_anthropic_uses_the_sampling_fallback(server: ProviderServer) -> None:
    answers = iter("AABAB")
    server.responder = lambda m, s: {"answer": next(answers)}
    res = ask(remote("anthropic", server, max_concurrency=1))
    assert res.method == "samples" and rounded(res.probs) == {"A": 0.6, "B": 0.4, "C": 0.0, "D": 0.0, "E": 0.0}
    assert len(server.requests) == 5 and all(r.schema == answer_schema(LETTERS) for r in server.requests)
    assert {r.body["tool_choice"]["name"] for r in server.requests} == {"write_answer"}
    assert res.usage.completion_tokens > 0 and res.usage.prompt_tokens > 0


def test_bad_options_fail_before_any_request(server: ProviderServer) -> None:
    with pytest.raises(ConfigError):
        ask(remote("openai", server), options=["A"])
    with pytest.raises(ConfigError):
        ask(remote("gemini", server), params={"top_logprobs": 50})
    assert server.requests == []


# ---------------------------------------------------------------- the real tiny model (llama.cpp)
@pytest.mark.slow
def test_local_reading_equals_llama_cpps_logprobs() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    if not TINY_PATH.is_file():
        pytest.skip("tiny model not provisioned")
    llm = load_llm(TINY, n_ctx=1024, n_threads=2)
    res = ask(llm)
    again = ask(llm)  # the whole prompt is in the KV cache now: the logits must be the same
    assert res.method == "logprobs" and len(res.top) == 20 and math.isclose(sum(res.probs.values()), 1.0)
    assert res.usage.completion_tokens == 1 and again.usage.cached_tokens > 0 and again.top == res.top
    ref = llama_cpp.Llama(model_path=str(TINY_PATH), n_ctx=1024, n_threads=2, logits_all=True, verbose=False)
    out = ref.create_chat_completion(messages=QUESTION, temperature=0.0, max_tokens=1, logprobs=True, top_logprobs=20)
    expected = [(t["token"], float(t["logprob"])) for t in out["choices"][0]["logprobs"]["content"][0]["top_logprobs"]]
    assert [t for t, _ in res.top[:5]] == [t for t, _ in expected[:5]]
    assert all(math.isclose(a, b, abs_tol=1e-3) for (_, a), (_, b) in zip(res.top[:5], expected[:5]))


@pytest.mark.slow
def test_openai_backend_reads_logprobs_from_llama_cpp_server(llama_cpp_server: str) -> None:  # noqa: F811
    res = ask(load_llm("openai:smollm2", base_url=llama_cpp_server))
    assert res.method == "logprobs" and len(res.top) == 20 and math.isclose(sum(res.probs.values()), 1.0)
    assert res.mass > 0.5  # the tiny model does answer with a letter
    assert res.usage.prompt_tokens > 0 and res.usage.completion_tokens == 1



def test_a_remote_backend_that_claims_logprobs_must_implement_the_attempt() -> None:
    from hf_rgda.llm.remote import RemoteLLM

    with pytest.raises(TypeError, match="has_logprobs but does not implement _top_logprobs"):
        type("NoLogprobs", (RemoteLLM,), {"has_logprobs": True})
    assert type("Plain", (RemoteLLM,), {"has_logprobs": False}).has_logprobs is False


def test_top_indices_is_a_stable_descending_sort_cut_to_n() -> None:
    """The local backend's reading of the top next tokens: the same indices, in the same order, as sorting the whole
    row (ties in index order), for rows with many ties at and around the cut."""
    import numpy as np

    from hf_rgda.llm.local import top_indices

    rng = np.random.default_rng(0)
    for _ in range(200):
        row = rng.integers(-4, 4, size=int(rng.integers(1, 60))).astype(np.float64)
        row[rng.random(row.size) < 0.1] = -np.inf
        for n in (1, 3, 20, 100):
            assert top_indices(row, n).tolist() == np.argsort(-row, kind="stable")[:n].tolist()
    assert top_indices(np.array([1.0]), 0).tolist() == []
