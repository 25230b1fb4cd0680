"""Pure helpers of :meth:`~hf_rgda.llm.LLM.option_probs`: option checks, token matching, renormalisation.

A question with a fixed set of short answers (option letters ``"A".."E"``, or ``"yes"``/``"no"``) is read as
the model's next-token distribution. Backends with logprobs return the top ``top_logprobs`` next tokens with
their log probabilities; :func:`probs_from_top` turns that list into one probability per option by this rule:

1. **Matching.** A token matches an option when both are equal after :func:`normalise`: surrounding whitespace
   (and the tokenizers' word-start marks ``▁`` and ``Ġ``) stripped, case folded. ``" A"``, ``"A"`` and ``"a"`` all
   match option ``"A"``; ``"A)"``, ``"Ans"`` or the first piece of a multi-token option do not, so options should
   be single tokens (letters, ``yes``/``no``). Tokens matching the same option add up.
2. **Absent options.** The top list leaves ``1 - sum(listed)`` of the mass unlisted, and every unlisted token is
   at most as likely as the least likely listed one. An option with no listed token gets an equal share of that
   leftover, capped at the smallest listed probability: ``floor = min(p_min, leftover / n_absent)``.
3. **Renormalisation** over the options, so the probabilities sum to 1. When nothing matched and nothing is left
   over (every listed token is something else), the answer is uniform: the model said nothing about the options.

``mass`` (the listed probability that matched an option, before the floors) says how much of the model's
next-token distribution actually went to the options; a low ``mass`` means the question was not answered.

Example:
    >>> probs, mass = probs_from_top([(" A", -0.5), ("a", -2.0), ("B", -1.5)], ["A", "B", "C"])
    >>> {k: round(v, 3) for k, v in probs.items()}, round(mass, 3)
    ({'A': 0.742, 'B': 0.223, 'C': 0.035}, 0.965)
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._exceptions import ConfigError

__all__ = ["DEFAULT_SAMPLES", "DEFAULT_TOP_LOGPROBS", "MAX_TOP_LOGPROBS", "answer_schema", "check_options",
           "match_option", "normalise", "probs_from_answers", "probs_from_top", "samples_of", "top_logprobs_of"]

#: next tokens asked for with their log probabilities (OpenAI and Gemini accept at most 20)
DEFAULT_TOP_LOGPROBS = 20
MAX_TOP_LOGPROBS = 20
#: answers sampled by the fallback of backends without logprobs
DEFAULT_SAMPLES = 5

_MARKS = " \t\r\n\u2581\u0120"  # whitespace, SentencePiece's word start "▁", byte-level BPE's "Ġ"


@functools.lru_cache(maxsize=4096)
def normalise(token: str) -> str:
    """The form tokens and options are compared in: marks and whitespace stripped, case folded."""
    return token.strip(_MARKS).casefold()


def check_options(options: Sequence[str]) -> tuple[str, ...]:
    """The options as a tuple, after checking they are at least two distinct non-empty answers.

    Raises:
        ConfigError: fewer than two options, an empty one, or two equal after :func:`normalise`.
    """
    opts = () if isinstance(options, str) else tuple(options)
    try:
        _option_keys(opts)
    except TypeError:  # an unhashable option: not a string either
        raise ConfigError(f"options={options!r}: give at least two non-empty strings, e.g. ['A', 'B', 'C']") from None
    return opts


@functools.lru_cache(maxsize=256)
def _option_keys(opts: tuple[str, ...]) -> dict[str, str]:
    """``{normalise(option): option}``, after :func:`check_options`' checks (memoised: a run asks the same few
    option sets thousands of times)."""
    if len(opts) < 2 or not all(isinstance(o, str) and normalise(o) for o in opts):
        raise ConfigError(f"options={list(opts)!r}: give at least two non-empty strings, e.g. ['A', 'B', 'C']")
    keys = {normalise(o): o for o in opts}
    if len(keys) < len(opts):
        raise ConfigError(f"options={list(opts)!r}: two options are equal up to case and whitespace")
    return keys


def top_logprobs_of(params: Mapping[str, Any]) -> int:
    """``params["top_logprobs"]`` (default 20), checked against the providers' limit of 20."""
    n = params.get("top_logprobs", DEFAULT_TOP_LOGPROBS)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_TOP_LOGPROBS:
        raise ConfigError(f"top_logprobs={n!r}: give an integer from 1 to {MAX_TOP_LOGPROBS}")
    return n


def samples_of(params: Mapping[str, Any]) -> int:
    """``params["samples"]`` (default 5): answers drawn by the sampling fallback."""
    k = params.get("samples", DEFAULT_SAMPLES)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"samples={k!r}: give a positive integer")
    return k


def match_option(token: str, options: Sequence[str]) -> str | None:
    """The option ``token`` stands for, or None."""
    key = normalise(token)
    return next((o for o in options if normalise(o) == key), None) if key else None


def probs_from_top(top: Iterable[tuple[str, float]], options: Sequence[str]) -> tuple[dict[str, float], float]:
    """One probability per option from a next-token top list, by the rule in the module docstring.

    Args:
        top: ``(token, logprob)`` pairs of the next token's most likely values.
        options: the answers, already checked (:func:`check_options`).

    Returns:
        ``(probs, mass)``: probabilities in the order of ``options`` summing to 1, and the listed probability
        that matched an option.
    """
    listed = [(token, p) for token, p in ((t, math.exp(lp)) for t, lp in top) if p > 0.0]
    matched = dict.fromkeys(options, 0.0)
    by_key = _option_keys(tuple(options))
    for token, p in listed:
        option = by_key.get(normalise(token))
        if option is not None:
            matched[option] += p
    mass = sum(matched.values())
    absent = [o for o, p in matched.items() if p == 0.0]
    if absent and listed:
        leftover = max(0.0, 1.0 - sum(p for _, p in listed))
        floor = min(min(p for _, p in listed), leftover / len(absent))
        matched.update(dict.fromkeys(absent, floor))
    return _renormalised(matched), mass


def answer_schema(options: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of one sampled answer: ``{"answer": <one of the options>}``."""
    return {"type": "object", "properties": {"answer": {"type": "string", "enum": list(options)}},
            "required": ["answer"], "additionalProperties": False}


def probs_from_answers(texts: Iterable[str], options: Sequence[str]) -> tuple[dict[str, float], float]:
    """Frequencies of the options among sampled answers (JSON ``{"answer": ...}`` or the bare option).

    Returns:
        ``(probs, mass)``: frequencies over the answers that named an option (uniform when none did), and the
        share of answers that named one.
    """
    answers = [_answer(text) for text in texts]
    counts = dict.fromkeys(options, 0.0)
    for answer in answers:
        option = match_option(answer, options) if answer is not None else None
        if option is not None:
            counts[option] += 1
    valid = sum(counts.values())
    return _renormalised(counts), valid / len(answers) if answers else 0.0


def _answer(text: str) -> str | None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text  # a bare "A" (a backend answering in text instead of the structure)
    answer = data.get("answer") if isinstance(data, dict) else data
    return answer if isinstance(answer, str) else None


def _renormalised(weights: dict[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    if total <= 0.0:
        return {o: 1.0 / len(weights) for o in weights}
    return {o: w / total for o, w in weights.items()}
