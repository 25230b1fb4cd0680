"""JSON schemas for every stage's output, built from the dataset's label set.

The entity type is always an ``enum`` of the dataset's types, so a type outside the label set cannot be
written by a backend that enforces the schema (llama.cpp grammars, OpenAI strict mode). Judge scores are
enums too: small models ignore integer ranges but not enums.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["AC_RUBRIC", "DEBATE_RUBRIC", "GR_RUBRIC", "feedback_schema", "guidance_schema", "judge_schema", "proposals_schema",
           "reviews_schema", "sentences_schema"]

#: criterion -> maximum points (METHOD.md; they sum to 100)
GR_RUBRIC: dict[str, int] = {
    "context_abstraction": 30,
    "keyword_detection": 15,
    "structure_relationship": 15,
    "entity_explanation": 20,
    "correct_relationship": 20,
}
AC_RUBRIC: dict[str, int] = {
    "domain_alignment": 30,
    "semantic_consistency": 30,
    "entity_role_integrity": 25,
    "tag_format_validation": 15,
}
#: the debate reviewers' criteria (BioRDA), for word replacements and for whole sentences alike
DEBATE_RUBRIC: dict[str, int] = {"definition": 25, "similarity": 25, "syntax": 25, "usage": 25}


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _str(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def _array(items: dict[str, Any], *, min_items: int = 0, max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": min_items, "maxItems": max_items}


def sentences_schema(types: Sequence[str], n: int, representation: str = "entities") -> dict[str, Any]:
    """Schema of ``n`` tagged sentences: a sentence plus entity list, typed segments, or a sentence with inline
    ``[words](Type)`` markup (the types are checked when it is decoded: a grammar cannot see inside the string)."""
    if representation == "inline":
        item = _obj({"text": _str(400)})
    elif representation == "segments":
        piece = _obj({"text": _str(120), "type": {"type": "string", "enum": [*types, "O"]}})
        item = _obj({"segments": _array(piece, min_items=1, max_items=24)})
    else:
        entity = _obj({"text": _str(80), "type": {"type": "string", "enum": list(types)}})
        item = _obj({"text": _str(320), "entities": _array(entity, max_items=10)})
    return _obj({"sentences": _array(item, min_items=n, max_items=n)})


def guidance_schema(types: Sequence[str], entities: int = 10) -> dict[str, Any]:
    """Schema of a guidance: context, structure, entity roles (at most ``entities``: one per entity of the seed) and
    keywords."""
    role = _obj({"text": _str(80), "type": {"type": "string", "enum": list(types)}, "role": _str(120)})
    return _obj({
        "context": _str(160),
        "structure": _str(300),
        "entity_roles": _array(role, max_items=max(1, min(entities, 10))),
        "keywords": _array(_str(40), max_items=5),
    })


def judge_schema(rubric: dict[str, int], remark: str = "feedback") -> dict[str, Any]:
    """Schema of a judge verdict: per criterion a short ``remark`` (the judges' fix) and a score from multiples of 5
    up to its maximum."""
    return _obj({
        name: _obj({remark: _str(160), "score": {"type": "integer", "enum": list(range(0, top + 1, 5))}})
        for name, top in rubric.items()
    })


def feedback_schema(rubric: dict[str, int], remark: str = "feedback") -> dict[str, Any]:
    """:func:`judge_schema` without the scores: per criterion the ``remark`` alone (a verdict read by probability,
    :mod:`hf_rgda.stages.rating`, asks for it only when a refinement follows)."""
    return _obj({name: _obj({remark: _str(160)}) for name in rubric})


def reviews_schema(n: int) -> dict[str, Any]:
    """Schema of one debate reviewer's answer: ``n`` verdicts on :data:`DEBATE_RUBRIC`, each with remarks."""
    return _obj({"reviews": _array(judge_schema(DEBATE_RUBRIC, "remark"), min_items=n, max_items=n)})


def proposals_schema(positions: Sequence[int], n: int) -> dict[str, Any]:
    """Schema of ``n`` debate proposals, each a new text for every chosen word position."""
    replacement = _obj({"position": {"type": "integer", "enum": list(positions)}, "new": _str(60)})
    item = _obj({"replacements": _array(replacement, min_items=len(positions), max_items=len(positions))})
    return _obj({"proposals": _array(item, min_items=n, max_items=n)})
