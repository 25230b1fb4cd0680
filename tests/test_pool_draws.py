"""benchmarks.pool_draws: a class's canaries pooled over calibration draws, each score less its draw's threshold."""

from __future__ import annotations

from benchmarks.pool_draws import pool


def _draw(seed: int, threshold: float, good: list[float], bad: list[float]) -> dict:
    scores = [{"label": "good", "score": s} for s in good] + [{"label": "novel_untagged", "score": s} for s in bad]
    return {"datasets": {"fin": {"seed": seed, "scorers": {"tagger": {"metrics": {"product_threshold": threshold},
                                                                     "scores": scores}}}}}


def test_draws_pool_on_their_own_thresholds() -> None:
    # draw 1 separates perfectly; draw 2's scores sit higher, but so does its threshold
    out = pool([_draw(1, 0.5, [0.9, 0.8], [0.1]), _draw(2, 0.9, [0.95, 0.99], [0.6, 0.97])], "fin", "tagger",
               "novel_untagged")
    assert [d["auroc"] for d in out["draws"]] == [1.0, 0.75] and [d["caught"] for d in out["draws"]] == [1, 1]
    # pooled as score - threshold: good 0.4, 0.3, 0.05, 0.09; bad -0.4, -0.3, 0.07 -> 11 of 12 pairs in order
    assert out["pooled"] == {"good": 4, "novel_untagged": 3, "auroc": round(11 / 12, 4), "caught": 2, "kept": 4}
