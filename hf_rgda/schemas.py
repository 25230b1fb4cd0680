"""JSON schemas for every stage's output, built from the dataset's label set.

The entity type is always an ``enum`` of the dataset's types, so a type outside the label set cannot be
written by a backend that enforces the schema (llama.cpp grammars, OpenAI strict mode). Judge scores are
enums too: small models ignore integer ranges but not enums.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["AC_RUBRIC", "GR_RUBRIC", "guidance_schema", "judge_schema", "sentences_schema"]

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


def _obj(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _str(max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def _array(items: dict[str, Any], *, min_items: int = 0, max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": min_items, "maxItems": max_items}


def sentences_schema(types: Sequence[str], n: int, representation: str = "entities") -> dict[str, Any]:
    """Schema of ``n`` tagged sentences, as a sentence plus entity list or as typed segments."""
    if representation == "segments":
        piece = _obj({"text": _str(120), "type": {"type": "string", "enum": [*types, "O"]}})
        item = _obj({"segments": _array(piece, min_items=1, max_items=24)})
    else:
        entity = _obj({"text": _str(80), "type": {"type": "string", "enum": list(types)}})
        item = _obj({"text": _str(320), "entities": _array(entity, max_items=10)})
    return _obj({"sentences": _array(item, min_items=n, max_items=n)})


def guidance_schema(types: Sequence[str]) -> dict[str, Any]:
    """Schema of a guidance: context, structure, entity roles and keywords."""
    role = _obj({"text": _str(80), "type": {"type": "string", "enum": list(types)}, "role": _str(120)})
    return _obj({
        "context": _str(160),
        "structure": _str(300),
        "entity_roles": _array(role, max_items=10),
        "keywords": _array(_str(40), max_items=5),
    })


def judge_schema(rubric: dict[str, int]) -> dict[str, Any]:
    """Schema of a judge verdict: per criterion a short fix and a score from multiples of 5 up to its maximum."""
    return _obj({
        name: _obj({"feedback": _str(160), "score": {"type": "integer", "enum": list(range(0, top + 1, 5))}})
        for name, top in rubric.items()
    })
