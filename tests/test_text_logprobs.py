"""The local engine's token logprobs of a given text (``LocalLLM.text_logprobs``, the sense gate's reading) on the
tiny real model: the same numbers as llama-cpp-python's own ``logits_all`` evaluation of the whole text, whether the
prefix's KV cells are reused or not, and a chat call after it answers as on a fresh model."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from hf_rgda.llm import load_llm

from .test_local_integration import TINY, TINY_PATH, needs_tiny

pytestmark = [pytest.mark.slow, needs_tiny]
PREFIX = "A sentence from biomedical research abstracts:\n"
TEXTS = ["Carriers of the mutation had a higher risk of ovarian cancer .",
         "cancer ovarian of risk higher a had mutation the of Carriers ."]


def _reference(text: str) -> list[float]:
    from llama_cpp import Llama

    llama = Llama(str(TINY_PATH), n_ctx=256, logits_all=True, n_threads=2, verbose=False)
    head = llama.tokenize(PREFIX.encode(), add_bos=True, special=False)
    body = llama.tokenize(text.encode(), add_bos=False, special=False)
    llama.eval(head + body)
    logits = np.asarray(llama.scores[: len(head) + len(body)], dtype=np.float64)
    logp = logits - logits.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    out = [float(logp[len(head) - 1 + j, t]) for j, t in enumerate(body)]
    llama.close()
    return out


def test_text_logprobs_match_a_full_evaluation_and_leave_chat_as_it_was() -> None:
    llm = load_llm(TINY, n_ctx=1024, lookup="off")
    assert llm.scores_text
    first = asyncio.run(llm.text_logprobs(PREFIX, TEXTS))  # the second text reuses the prefix's cells
    again = asyncio.run(llm.text_logprobs(PREFIX, TEXTS[:1]))
    for got, text in zip(first, TEXTS):
        assert np.allclose(got, _reference(text), atol=2e-3)
    assert np.allclose(again[0], first[0], atol=2e-3)
    assert np.mean(first[0]) > np.mean(first[1])  # the shuffled sentence is the less likely
    messages = [{"role": "user", "content": "Name one disease."}]
    params = {"temperature": 0.0, "max_tokens": 12, "seed": 1}
    after = asyncio.run(llm.complete(messages, schema=None, params=params)).text
    fresh = asyncio.run(load_llm(TINY, n_ctx=1024, lookup="off").complete(messages, schema=None, params=params)).text
    assert after == fresh
