"""Thresholds from scored canaries, and the calibration file that carries them to a run.

:func:`recommend` turns the scorers' cells into the options they set: each option's threshold is chosen by
:data:`~.scoring.THRESHOLD_RULE` on the canaries of every scorer that sets it (the AC and GR judges share
``threshold``), rounded down to the option's grain, and left out where those scorers separate the canaries no better
than :data:`MIN_AUROC` (a threshold chosen on noise would do harm). :class:`Calibration` is what
``RGDAAugmenter(calibration=...)`` and ``hf-rgda augment --calibration FILE`` apply.

Example:
    >>> cal = load_calibration({"thresholds": {"verify_threshold": 0.3}})
    >>> cal.apply(AugmentConfig()).verify_threshold
    0.3
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._exceptions import ConfigError
from ..config import AugmentConfig
from .judges import SCORERS
from .scoring import auroc, choose_threshold

__all__ = ["MIN_AUROC", "OPTIONS", "Calibration", "load_calibration", "recommend"]

#: a scorer whose canaries' AUROC is below this sets no threshold
MIN_AUROC = 0.6
#: the options a calibration may set, with their grain (the judges' 0-100 scores are whole numbers)
OPTIONS = {"verify_threshold": 0.001, "threshold": 1, "probability_threshold": 1, "debate_sigma": 1}
FORMAT = "hf-rgda calibration"


def recommend(cells: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{option: {"value", "scorers", "n", "auroc", "applied", "why"}}`` from ``{scorer: cell}`` (cells of
    :func:`~.judges.score_cell`), for every option a scored scorer sets."""
    out: dict[str, dict[str, Any]] = {}
    for option, grain in OPTIONS.items():
        names = [n for n in cells if SCORERS[n].option == option and SCORERS[n].sets]
        if not names:
            continue
        scored = [x for n in names for x in cells[n]["scores"] if x["score"] is not None]
        scores, good = [x["score"] for x in scored], [x["label"] == "good" for x in scored]
        value, area = choose_threshold(scores, good), auroc(scores, good)
        entry: dict[str, Any] = {"scorers": names, "n": len(scored), "auroc": None if area is None else round(area, 4)}
        if value is None or area is None:
            out[option] = {**entry, "value": None, "applied": False, "why": "needs good and defective canaries"}
            continue
        scaled = value * SCORERS[names[0]].scale
        value = math.floor(scaled + 1e-9) if grain == 1 else round(math.floor(scaled / grain + 1e-9) * grain, 3)
        applied = area >= MIN_AUROC
        out[option] = {**entry, "value": value, "applied": applied,
                       "why": "" if applied else f"AUROC {area:.3f} < {MIN_AUROC}: the scorer barely separates them"}
    return out


@dataclass(frozen=True)
class Calibration:
    """The thresholds a calibration file sets.

    Attributes:
        thresholds: ``{option: value}``, options of :data:`OPTIONS`.
        source: the file it was read from, or ``"dict"``.
        llm: the backend identity it was measured with (None when unknown).
    """

    thresholds: Mapping[str, float] = field(default_factory=dict)
    source: str = "dict"
    llm: Mapping[str, Any] | None = None

    def apply(self, config: AugmentConfig) -> AugmentConfig:
        """``config`` with the thresholds set.

        Raises:
            ConfigError: a threshold is out of its option's range (the message names the file).
        """
        try:
            return dataclasses.replace(config, **self.thresholds)
        except ConfigError as err:
            raise ConfigError(f"calibration {self.source}: {err}") from None

    def summary(self) -> dict[str, Any]:
        """What a run's ``summary.json`` records of it."""
        return {"source": self.source, "thresholds": dict(self.thresholds), "llm": self.llm}


def load_calibration(source: str | Path | Mapping[str, Any] | Calibration) -> Calibration:
    """A :class:`Calibration` from a ``calibration.json`` path or its content as a dict.

    Raises:
        ConfigError: the file is missing or not JSON, has no ``thresholds`` object, or sets an option a calibration
            cannot set, or a value that is not a number.
    """
    if isinstance(source, Calibration):
        return source
    name = "dict" if isinstance(source, Mapping) else str(source)
    if isinstance(source, Mapping):
        data: Any = source
    else:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"calibration file {name} not found (write one with: hf-rgda calibrate DATA --out {name})")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ConfigError(f"calibration file {name} is not JSON ({err})") from None
    found = data.get("thresholds") if isinstance(data, Mapping) else None
    if not isinstance(found, Mapping):
        raise ConfigError(f"calibration {name} has no 'thresholds' object; write one with hf-rgda calibrate")
    thresholds: dict[str, float] = {}
    for option, value in found.items():
        if option not in OPTIONS:
            raise ConfigError(f"calibration {name} sets {option!r}; a calibration sets only {', '.join(OPTIONS)}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"calibration {name}: {option}={value!r} is not a number")
        if OPTIONS[option] == 1 and value != int(value):
            raise ConfigError(f"calibration {name}: {option}={value!r} must be a whole number (0-100)")
        thresholds[option] = int(value) if OPTIONS[option] == 1 else float(value)
    llm = data.get("llm")
    cal = Calibration(thresholds, name, dict(llm) if isinstance(llm, Mapping) else None)
    cal.apply(AugmentConfig())  # validates the ranges now, naming the file
    return cal
