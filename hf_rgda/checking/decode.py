"""Decoding model answers: JSON (fenced or not, surrogates made encodable) into tokens and IOB2 tags.

Three output forms are supported (``AugmentConfig.representation``; measured by ``benchmarks/local_pipeline.py
--representations`` and ``benchmarks/local_profile.py``):

- ``entities``: ``{"text": "...", "entities": [{"text": "...", "type": "..."}]}``; entity strings are matched
  back into the tokenized sentence (every occurrence is tagged; an unmatched entity rejects the sentence);
- ``segments``: ``{"segments": [{"text": "...", "type": "O" | type}]}``, concatenated in order;
- ``inline``: ``{"text": "... [entity words](Type) ..."}``, each entity marked where it stands, so an entity missing
  from its sentence cannot be written, and none is written twice.

Example:
    >>> decode_sentence({"text": "Gout hurts.", "entities": [{"text": "gout", "type": "Disease"}]}, ["Disease"]).tags
    ['B-Disease', 'O', 'O']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import ParseError, SchemaError
from ..records import Candidate
from ..tags import Span, TokenStyle, spans_to_tags, tokenize
from .rules import repeats_phrase

__all__ = ["complete_items", "copies_item", "decode_sentence", "parse_json", "text_loops"]


def parse_json(text: str) -> Any:
    """Parse a JSON answer, tolerating a code fence around it.

    Raises:
        ParseError: the text is not JSON.
    """
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as err:
        raise ParseError(f"answer is not valid JSON ({err.msg} at char {err.pos})", raw=text) from None
    return _clean_surrogates(value) if _SURROGATE.search(body) else value


def complete_items(text: str, key: str = "sentences") -> tuple[list[Any], str]:
    """The complete items of an answer ``{"<key>": [item, item, ...`` that stopped before its end (the model ran
    out of ``max_tokens`` inside an item), and the text of the item it stopped in.

    Returns ``([], "")`` when the text does not open such a list or the list is whole, and ``([], <the first
    item's text>)`` when it stopped inside its first item.

    Example:
        >>> complete_items('{"sentences": [{"text": "Gout hurts ."}, {"text": "Lupus is')
        ([{'text': 'Gout hurts .'}], '{"text": "Lupus is')
    """
    opening = re.match(r'\s*(?:```(?:json)?\s*)?\{\s*"' + re.escape(key) + r'"\s*:\s*\[', text)
    if not opening:
        return [], ""
    decoder, items, pos = json.JSONDecoder(), [], opening.end()
    while True:
        pos = _SKIP(text, pos).end()
        try:
            item, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        items.append(item)
    rest = text[pos:].strip()
    if rest.startswith("]"):  # the list is whole: the fault is elsewhere
        return [], ""
    return [_clean_surrogates(i) for i in items], rest


_SKIP = re.compile(r"[\s,]*").match


def text_loops(text: str) -> bool:
    """:func:`~hf_rgda.checking.rules.looping` on the text of a JSON item cut short (its words, lower-cased, without the item's keys, which
    every piece repeats): whether the answer stopped inside it in a loop.

    Example:
        >>> text_loops('{"text": "Gout is linked to [Disease](Disease), [Disease](Disease), [Disease](Disease)')
        True
        >>> text_loops('{"text": "BRCA1", "type": "Gene"}, {"text": " and ", "type": "O"}, {"text": "TP53", "type"')
        False
    """
    return repeats_phrase(_item_words(text))


def copies_item(text: str, items: Sequence[Any]) -> bool:
    """Whether the sentence an answer stopped in (``text``, the item cut short) copies one of its complete
    ``items``: its text's last 8 words stand in one's text in order, or, shorter than 8 words and 3 or more, they
    open one's text (the local engine ends such an answer: :class:`~hf_rgda.llm.local.SelfCopy`). Only the items'
    ``"text"`` values are compared: an entity list or a type repeats across versions of a sentence legitimately.

    Example:
        >>> items = [{"text": "Both parents carry the Bf gene linked with HL - A ."}]
        >>> copies_item('{"text": "Both parents carry the Bf gene linked with', items)
        True
        >>> copies_item('{"text": "Both parents carry', items), copies_item('{"text": "Both parents carry the gene', items)
        (True, False)
    """
    cut = _TEXT_VALUE(text)
    words = _item_words(cut.group(1)) if cut else []
    for item in items:
        seen = _item_words(item["text"]) if isinstance(item, dict) and isinstance(item.get("text"), str) else []
        if len(words) >= 8 and any(seen[i : i + 8] == words[-8:] for i in range(len(seen) - 7)):
            return True
        if 3 <= len(words) < 8 and seen[: len(words)] == words:
            return True
    return False


_TEXT_VALUE = re.compile(r'"text"\s*:\s*"((?:[^"\\]|\\.)*)').search


def _item_words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[^\W_]+", _JSON_KEY("", text))]


_JSON_KEY = re.compile(r'"\w+"\s*:').sub


_SURROGATE = re.compile(r"[\ud800-\udfff]|\\[uU][dD][89a-fA-F]")  # a surrogate, or a JSON escape of one


def _clean_surrogates(value: Any) -> Any:
    """``value`` with every string made encodable: a JSON escape may spell half of a surrogate pair ("\\ud83c", a
    small model cutting an emoji in two), which Python decodes to a lone surrogate that no UTF-8 encoder accepts (the
    next prompt, the cache key, Arrow). Pairs are joined; a lone half becomes U+FFFD."""
    if isinstance(value, str):
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_clean_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_clean_surrogates(k): _clean_surrogates(v) for k, v in value.items()}
    return value


def _find(tokens: list[str], needle: list[str], taken: list[bool]) -> list[int]:
    n = len(needle)
    first = needle[0] if needle else None  # the slice compared only where the first word is (an empty one: anywhere)
    return [i for i in range(len(tokens) - n + 1)
            if (first is None or tokens[i] == first) and tokens[i : i + n] == needle and not any(taken[i : i + n])]


def _find_loose(tokens: list[str], needle: str, taken: list[bool]) -> list[tuple[int, int]]:
    """Token ranges whose text, spaces removed, equals ``needle`` (spaces removed): "life - long anemia" (copied
    from a pre-tokenized seed) against "life-long anemia" in the sentence, or the other way round."""
    out = []
    for i in range(len(tokens)):
        text, j = "", i
        while j < len(tokens) and len(text) < len(needle):
            text += tokens[j]
            j += 1
        if text == needle and not any(taken[i:j]):
            out.append((i, j))
    return out


def _decode_entities(item: Mapping[str, Any], types: Sequence[str], style: TokenStyle) -> Candidate:
    cand = Candidate(raw=item)
    text, entities = item.get("text"), item.get("entities")
    if not isinstance(text, str) or not isinstance(entities, list):
        return cand.reject("malformed", "item needs 'text' (string) and 'entities' (list)")
    # a doubled final period ("... of the digestive tract..": the 1.5B writes it now and then) is one period
    tokens = tokenize(re.sub(r"(?<!\.)\.\.\s*$", ".", text.rstrip()), style=style)
    low = [t.lower() for t in tokens]  # entities match case-insensitively; the sentence keeps its own casing
    taken = [False] * len(tokens)
    spans: list[Span] = []
    def words(e: Any) -> list[str]:
        return tokenize(str(e.get("text", "")) if isinstance(e, Mapping) else "", style=style)

    for ent in sorted(entities, key=lambda e: -len(words(e))):
        etoks, etype = [t.lower() for t in words(ent)], ent.get("type") if isinstance(ent, Mapping) else None
        if etype not in types:
            return cand.reject("unknown_type", f"type {etype!r} is not in {list(types)}")
        if not etoks:
            return cand.reject("empty_entity", f"entity {ent!r} has no text")
        found = [(st, st + len(etoks)) for st in _find(low, etoks, taken)] or _find_loose(low, "".join(etoks), taken)
        if not found:
            if any(s.label == etype and "".join(low[s.start : s.end]) == "".join(etoks) for s in spans):
                continue  # listed twice: already tagged
            return cand.reject("entity_not_in_sentence", f"{ent.get('text')!r} does not occur in the sentence")
        for st, end in found:
            spans.append(Span(st, end, etype))
            taken[st:end] = [True] * (end - st)
    cand.tokens, cand.tags = tokens, spans_to_tags(spans, len(tokens))
    return cand


def _decode_segments(item: Mapping[str, Any], types: Sequence[str], style: TokenStyle) -> Candidate:
    cand = Candidate(raw=item)
    segs = item.get("segments")
    if not isinstance(segs, list):
        return cand.reject("malformed", "item needs 'segments' (list)")
    tokens: list[str] = []
    spans: list[Span] = []
    for seg in segs:
        stoks, stype = tokenize(str(seg.get("text", "")), style=style), seg.get("type")
        if stype != "O" and stype not in types:
            return cand.reject("unknown_type", f"type {stype!r} is not in {list(types)}")
        if stype != "O" and stoks:
            spans.append(Span(len(tokens), len(tokens) + len(stoks), stype))
        tokens.extend(stoks)
    cand.tokens, cand.tags = tokens, spans_to_tags(spans, len(tokens))
    return cand


#: ``[words](Type)``; the words hold no bracket, the type no bracket, parenthesis or space
_MARK = re.compile(r"\[([^\[\]]+)\]\(([^()\s\[\]]+)\)")
#: what is left of a mark the model did not close or type (``[words]`` then ``(``, or ``](``)
_BROKEN_MARK = re.compile(r"\]\s*\(|\[[^\[\]]*\]\((?![^()]*\))")
#: ``[words]`` with no type after it and no digit inside: a mark the model left untyped ("[ is ]"), not a citation
#: or a mutation's name ("[ 1 ]", "[ IVS3 G ( - 1 ) ]"), which the datasets keep in brackets
_UNTYPED_MARK = re.compile(r"\[([^\[\]\d]*[^\W\d_][^\[\]\d]*)\](?!\s*\()")


def _decode_inline(item: Mapping[str, Any], types: Sequence[str], style: TokenStyle,
                   salvage: bool = False) -> Candidate:
    cand = Candidate(raw=item)
    text = item.get("text")
    if not isinstance(text, str):
        return cand.reject("malformed", "item needs 'text' (string)")
    text = re.sub(r"(?<!\.)\.\.\s*$", ".", text.rstrip())
    untyped = [m.group(1).strip() for m in _UNTYPED_MARK.finditer(text)]
    if untyped:
        if not salvage:
            return cand.reject("malformed", f"an entity mark has no type: [{untyped[0]}]")
        labels = {t.lower() for t in types}
        # a type name alone in brackets ("... at the RNA level [Disease].") is the model's label for an entity it left
        # unmarked, not text: dropped (the checker may then tag a known mention); other words stay, untagged
        text = _UNTYPED_MARK.sub(lambda m: "" if m.group(1).strip().lower() in labels else m.group(1), text)
        cand.salvaged += [f"type_label: dropped [{w}]" if w.lower() in labels else f"untyped_mark: untagged {w!r}"
                          for w in untyped]
    tokens: list[str] = []
    spans: list[Span] = []
    pos = 0
    for m in _MARK.finditer(text):
        words, etype = tokenize(m.group(1), style=style), m.group(2)
        tokens += tokenize(text[pos : m.start()], style=style)
        if etype not in types:
            if not salvage:
                return cand.reject("unknown_type", f"type {etype!r} is not in {list(types)}")
            # marked as a type the dataset does not have: the model says it is none of the dataset's; its words stay
            cand.salvaged.append(f"unknown_type: untagged {m.group(1)!r} (marked {etype})")
            tokens += words
            pos = m.end()
            continue
        if not words:
            return cand.reject("empty_entity", f"mark {m.group(0)!r} has no words")
        spans.append(Span(len(tokens), len(tokens) + len(words), etype))
        tokens += words
        pos = m.end()
    tokens += tokenize(text[pos:], style=style)
    rest = _MARK.sub(" ", text)
    if _BROKEN_MARK.search(rest) or rest.count("[") != rest.count("]"):
        return cand.reject("malformed", f"an entity mark is not of the form [words](Type): {text!r}")
    cand.tokens, cand.tags = tokens, spans_to_tags(spans, len(tokens))
    return cand


def decode_sentence(item: Any, types: Sequence[str], representation: str = "entities", *,
                    split_hyphens: bool = False, salvage: bool = False, style: TokenStyle | None = None) -> Candidate:
    """Turn one answer item into tokens and IOB2 tags (or a rejected :class:`Candidate`), tokenized the dataset's way:
    ``style`` (the checker's :attr:`~hf_rgda.checking.Checker.token_style`: URLs, handles, hashtags, decimals,
    hyphenated words and clitics whole or in pieces as the split writes them), else ``split_hyphens`` alone (see
    :attr:`SplitStats.split_hyphens <hf_rgda.checking.SplitStats>`). With
    ``salvage`` (``inline`` only; the pipeline passes the configuration's), three slips of a small model are repaired,
    each recorded in ``salvaged``, instead of rejecting the sentence: a mark of a type the dataset does not have
    leaves its words untagged (``unknown_type``), a bracket without a type keeps its words (``untyped_mark``), and a
    type name alone in brackets is dropped (``type_label``)."""
    if not isinstance(item, Mapping):
        return Candidate(raw=item).reject("malformed", f"expected an object, got {type(item).__name__}")
    style = style or (TokenStyle.pieces() if split_hyphens else TokenStyle())
    try:
        if representation == "segments":
            return _decode_segments(item, types, style)
        if representation == "inline":
            return _decode_inline(item, types, style, salvage)
        return _decode_entities(item, types, style)
    except SchemaError as err:  # overlapping spans etc.
        return Candidate(raw=item).reject("invalid_tags", str(err))
