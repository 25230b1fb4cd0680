"""The throughput benchmarks' own arithmetic: the paired reading of alternated rounds, and the cross-seed search
timed against the scan it replaced (which must find the same rows)."""

from __future__ import annotations

import pytest
from datasets import Dataset

from benchmarks import ledger_scale
from benchmarks.common import DATA_DIR
from benchmarks.throughput import paired_ratio
from hf_rgda import ConfigError


def test_the_paired_ratio_is_the_rounds_median_with_an_interval_around_it() -> None:
    got = paired_ratio([0.8, 0.9, 1.0, 0.85, 0.95], resamples=2000)
    assert got["ratio_paired_median"] == 0.9
    low, high = got["ratio_paired_median_ci95"]
    assert 0.8 <= low < 0.9 < high <= 1.0
    assert paired_ratio([0.9] * 6, resamples=200)["ratio_paired_median_ci95"] == [0.9, 0.9]


@pytest.mark.skipif(not (DATA_DIR / "ncbi_disease").exists(), reason="needs ../shared/data")
def test_the_ledger_search_finds_what_the_scan_finds_on_a_splits_sentences() -> None:
    res = ledger_scale.run(DATA_DIR, 600, 3, 0.85)  # raises where the two differ on any row
    assert res["rows"] == 600 and res["similar_rows_found"] > 0
    assert res["indexed_seconds"] > 0 and res["scan_seconds"] > 0


@pytest.mark.skipif(not (DATA_DIR / "ncbi_disease").exists(), reason="needs ../shared/data")
def test_an_option_given_to_a_throughput_run_reaches_its_augmenter() -> None:
    """A run's options (``throughput_run.py --option``, which ``throughput.py --against --this-option`` gives this
    checkout's side) build its augmenter: the split tagger's rule off here keeps the scripted rows it rejects; a
    value out of bounds fails as the configuration does."""
    from benchmarks import throughput_run

    rows = throughput_run.read_split(DATA_DIR)[:400]
    split, seeds = Dataset.from_list(rows), throughput_run.seed_rows(rows, 24)
    on = throughput_run.augment(split, seeds)
    off = throughput_run.augment(split, seeds, options={"likely_mention_quantile": 0})
    assert off["accepted_digest"] != on["accepted_digest"]
    with pytest.raises(ConfigError, match="likely_mention_quantile"):
        throughput_run.augment(split, seeds, options={"likely_mention_quantile": 2})


@pytest.mark.skipif(not (DATA_DIR / "ncbi_disease").exists(), reason="needs ../shared/data")
def test_the_checker_alone_is_timed_on_the_runs_own_checks_giving_its_verdicts_again() -> None:
    """``throughput_run.time_checker`` (``throughput.py --against --checker-replays``): the map's checks recorded and
    made again; each replay gives the same verdicts (the candidates are copied: a replay repairs its own copies), and
    the checker is restored for the next map."""
    from benchmarks import throughput_run
    from hf_rgda.checking import Checker

    rows = throughput_run.read_split(DATA_DIR)[:400]
    split, seeds = Dataset.from_list(rows), throughput_run.seed_rows(rows, 16)
    check = Checker.check
    one = throughput_run.time_checker(split, seeds, 1)
    three = throughput_run.time_checker(split, seeds, 3)
    assert Checker.check is check
    assert one["checks"] == three["checks"] > 16 and one["verdicts_digest"] == three["verdicts_digest"]
    assert three["replays"] == 3 and three["checker_s"] > 0
