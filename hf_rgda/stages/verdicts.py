"""Reading verdicts from answers (pure): a judge's or a debate reviewer's scores and remarks on a rubric, and the
feedback asked for after a verdict read by probability."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._exceptions import ParseError
from ..records import Judgement
from ..schemas import DEBATE_RUBRIC

__all__ = ["parse_feedback", "parse_reviews", "parse_verdict"]


def parse_verdict(data: Any, rubric: dict[str, int], remark: str = "feedback") -> Judgement:
    """A verdict (a judge's, or one debate review: ``remark="remark"``); scores are clamped to each criterion's
    maximum.

    Raises:
        ParseError: a criterion is missing or its score is not a number.
    """
    if not isinstance(data, dict):
        raise ParseError("verdict is not an object", raw=json.dumps(data))
    crit, fb = {}, {}
    for name, top in rubric.items():
        entry = data.get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("score"), (int, float)):
            raise ParseError(f"verdict lacks a numeric score for {name!r}", raw=json.dumps(data))
        crit[name] = max(0, min(top, int(entry["score"])))
        fb[name] = str(entry.get(remark, ""))
    return Judgement(sum(crit.values()), crit, fb)


def parse_reviews(data: Any, n: int) -> list[Judgement]:
    """One debate reviewer's verdict on each of ``n`` items (remarks as the verdicts' feedback).

    Raises:
        ParseError: fewer than ``n`` reviews, or a criterion without a numeric score.
    """
    items = data.get("reviews") if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) < n:
        raise ParseError(f"expected {n} reviews", raw=json.dumps(data)[:2000])
    return [parse_verdict(item, DEBATE_RUBRIC, "remark") for item in items[:n]]


def parse_feedback(data: Any, rubric: Sequence[str], remark: str = "feedback") -> dict[str, str]:
    """Each criterion's fix from a :func:`~hf_rgda.schemas.feedback_schema` answer.

    Raises:
        ParseError: a criterion's fix is missing.
    """
    entries = {name: data.get(name) if isinstance(data, dict) else None for name in rubric}
    if not all(isinstance(e, dict) and isinstance(e.get(remark), str) for e in entries.values()):
        raise ParseError("feedback lacks a criterion's text", raw=json.dumps(data)[:2000])
    return {name: e[remark] for name, e in entries.items()}
