"""When the local engine ends an answer early: a short cycle of tokens repeated (:func:`loops`) or the answer's
own tokens written again (:class:`SelfCopy`, for lists of sentences only).
:class:`~hf_rgda.llm.local.engine.GrammarAfterSampling` asks after every token it samples and returns the
end-of-generation token when one says yes; the caller reads the answer as one cut at ``max_tokens`` and keeps its
complete items (:meth:`hf_rgda.calls.Caller.ask`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SELF_COPY_TOKENS", "SelfCopy", "loops", "sentence_list"]

#: how many of an answer's own tokens written again in order end it (:class:`SelfCopy`)
SELF_COPY_TOKENS = 48


def loops(tokens: Sequence[int], max_period: int = 16, repeats: int = 4, min_tokens: int = 24) -> bool:
    """Whether ``tokens`` end in a loop: one cycle of 1 to ``max_period`` tokens repeated ``repeats`` times, over at
    least ``min_tokens`` tokens. A small model that falls into "[Disease](Disease), [Disease](Disease), ..." writes on
    until its item closes or ``max_tokens`` runs out, and all of it is rejected later (the checker's ``looping`` and
    ``malformed``; one seed's 349 tokens in the main command's profile). Prose and JSON do not repeat a cycle that
    exactly: the items of an entity list differ in their texts.

    Example:
        >>> loops([7, 1, 2, 3] * 8), loops(list(range(40)))
        (True, False)
    """
    for period in range(1, max_period + 1):
        length = period * max(repeats, -(-min_tokens // period))
        if len(tokens) < length:  # not monotonic in the period (5 needs 25 tokens, 6 needs 24)
            continue
        if tokens[len(tokens) - length + period :] == tokens[len(tokens) - length : len(tokens) - period]:
            return True
    return False


class SelfCopy:
    """Whether an answer has begun to copy itself: fed the answer's tokens one at a time, it says whether the last
    ``min_tokens`` stand earlier in the answer in the same order. A small model that has written one sentence may
    write it again word for word (a seed generation of the main command's profile: one sentence three times, 302
    tokens, the copies rejected later); prompt lookup makes the copies cheap but not free. Only for answers that are
    lists of sentences written as plain text (:func:`sentence_list`): there 48 tokens are some 30 words of running
    text, which versions of one sentence do not share. Structured answers repeat longer runs of tokens legitimately
    (an entity list kept across versions, two identical reviews, a role written twice), so they are never cut.

    Example:
        >>> copy, answer = SelfCopy(4), [5, 6, 7, 8, 9, 5, 6, 7, 8]
        >>> [copy(answer[:n]) for n in range(1, len(answer) + 1)]
        [False, False, False, False, False, False, False, False, True]
    """

    def __init__(self, min_tokens: int = SELF_COPY_TOKENS) -> None:
        self.min_tokens = min_tokens
        self._seen: set[tuple[int, ...]] = set()

    def __call__(self, tokens: Sequence[int]) -> bool:
        if len(tokens) < self.min_tokens:
            return False
        gram = tuple(tokens[len(tokens) - self.min_tokens :])
        if gram in self._seen:
            return True
        self._seen.add(gram)
        return False


def sentence_list(schema: Any) -> bool:
    """Whether a JSON schema asks for a list of sentences whose items are their text alone (``{"sentences": [{"text":
    ...}]}``, :func:`~hf_rgda.schemas.sentences_schema` with inline marks): the answers :class:`SelfCopy` may end.

    Example:
        >>> from hf_rgda.schemas import guidance_schema, sentences_schema
        >>> [sentence_list(sentences_schema(("Disease",), 3, r)) for r in ("inline", "entities", "segments")]
        [True, False, False]
        >>> sentence_list(guidance_schema(("Disease",))), sentence_list(None)
        (False, False)
    """
    if not isinstance(schema, dict) or set(schema.get("properties") or ()) != {"sentences"}:
        return False
    items = (schema["properties"]["sentences"] or {}).get("items") or {}
    return set(items.get("properties") or ()) == {"text"}
