"""Calibration canaries: labelled sentences with known defects (:mod:`.build`, :mod:`.defects`), the scorers that
read them through the pipeline's own judges (:mod:`.judges`) and the figures of how well each separates good from
defective ones (:mod:`.scoring`). :func:`hf_rgda.calibrate` runs them on a user's data."""

from .build import Canary, Gold, build_canaries, cap, class_counts, gold_from
from .defects import LEVELS, Sentence, build_guide, fits
from .judges import SCORERS, Judges, ScorerSpec, score_cell
from .scoring import THRESHOLD_RULE, accuracy, auroc, balanced_accuracy, choose_threshold, evaluate, halves

__all__ = [
    "LEVELS", "SCORERS", "THRESHOLD_RULE", "Canary", "Gold", "Judges", "ScorerSpec", "Sentence", "accuracy", "auroc",
    "balanced_accuracy", "build_canaries", "build_guide", "cap", "choose_threshold", "class_counts", "evaluate",
    "fits", "gold_from", "halves", "score_cell",
]
