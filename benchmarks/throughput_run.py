"""One run of the throughput benchmark (``throughput.py``): a ``map`` of ``rgda`` over NCBI-disease seeds with a
zero-latency scripted backend, timed.

It imports nothing from ``benchmarks`` and only the public names every commit since 8ae9ee0 has
(``RGDAAugmenter.from_dataset``, ``ScriptedLLM``, ``hf_rgda.testing.stateless_answer``), so that
``throughput.py --against COMMIT`` can run it as a script in a fresh interpreter whose ``hf_rgda`` is another
commit's (``PYTHONPATH`` = a git worktree of it): the driver, the seeds and the clock are the same on both sides.
Run as a script it prints the result of :func:`augment` as one JSON line::

    PYTHONPATH=TREE python -P benchmarks/throughput_run.py --data-dir DIR --seeds 1000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset, disable_progress_bars
from datasets.fingerprint import Hasher

from hf_rgda import RGDAAugmenter, ScriptedLLM
from hf_rgda.testing import stateless_answer


class _NoLog(list):
    """A call log that keeps nothing (see ``--keep-call-log``)."""

    def append(self, item: Any) -> None:
        pass


class TimedLLM(ScriptedLLM):
    """:class:`~hf_rgda.ScriptedLLM` answering with ``stateless_answer``, with a clock around each of its calls (the
    fake's own bookkeeping included: its call record, word counts, reading its answer into option probabilities):
    the scripted backend's own cost."""

    def __init__(self) -> None:
        super().__init__(stateless_answer, name="throughput")
        self.seconds, self.count = 0.0, 0

    async def complete(self, messages: Any, *, schema: Any, params: Any) -> Any:
        start = time.perf_counter()
        try:
            return await super().complete(messages, schema=schema, params=params)
        finally:
            self.seconds += time.perf_counter() - start
            self.count += 1

    async def option_probs(self, messages: Any, options: Any, *, params: Any) -> Any:
        start = time.perf_counter()
        try:
            return await super().option_probs(messages, options, params=params)
        finally:
            self.seconds += time.perf_counter() - start
            self.count += 1


def _suffix(copy: int) -> str:
    """The letters appended to every alphabetic word of copy ``copy`` (none for the original)."""
    return "".join(chr(ord("a") + int(d)) for d in str(copy)) if copy else ""


def grown(rows: Sequence[Mapping[str, list[str]]], n: int) -> Dataset:
    """``n`` rows: ``rows`` in order, then perturbed copies of them (copy k appends ``_suffix(k)`` to each word)."""
    out: dict[str, list[list[str]]] = {"tokens": [], "ner_tags": []}
    for i in range(n):
        row, end = rows[i % len(rows)], _suffix(i // len(rows))
        out["tokens"].append([t + end if t.isalpha() else t for t in row["tokens"]])
        out["ner_tags"].append(list(row["ner_tags"]))
    return Dataset.from_dict(out)


def read_split(data_dir: Path) -> list[dict[str, list[str]]]:
    with (data_dir / "ncbi_disease" / "train.jsonl").open() as fh:
        return [json.loads(line) for line in fh]


def seed_rows(rows: Sequence[Mapping[str, list[str]]], n: int) -> Dataset:
    """The benchmark's ``n`` seeds: the split's sentences with entities, then perturbed copies of them."""
    return grown([r for r in rows if any(t != "O" for t in r["ner_tags"])], n)


#: the configurations measured (``--workload``): the library's defaults, and the rgda pipeline as issue 16 measured
#: it before the entity verifier and the probability-read judges existed (5 scripted calls per seed instead of 15)
WORKLOADS: dict[str, dict[str, Any]] = {"default": {}, "no-verification": {"verify_entities": False,
                                                                           "judge_reading": "sample"}}


def augment(split: Dataset, seeds: Dataset, num_proc: int = 1, *, call_log: bool = True,
            workload: str = "default", options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One ``map`` over ``seeds`` with statistics from ``split``: rates, the backend's cost, the run summary, and a
    digest of the accepted rows (their tokens and tags, in order: two runs that accept the same rows give the same).
    ``options``: configuration options set beyond the workload's (what one option costs)."""
    llm = TimedLLM()
    if not call_log:
        llm.calls = _NoLog()
    start = time.perf_counter()
    aug = RGDAAugmenter.from_dataset(split, llm=llm, method="rgda", cache=False,
                                     **{**WORKLOADS[workload], **(options or {})})
    stats_s = time.perf_counter() - start
    start = time.perf_counter()
    fingerprint = Hasher.hash(aug)  # what map would hash first: once per call, and larger with larger statistics
    fingerprint_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        out = seeds.map(aug, batched=True, batch_size=64, num_proc=num_proc if num_proc > 1 else None,
                        load_from_cache_file=False, cache_file_name=f"{tmp}/out.arrow", new_fingerprint=fingerprint)
        wall = time.perf_counter() - start
        kept = [(t, g) for t, g, s in zip(out["tokens"], out["ner_tags"], out["rgda_status"]) if s == "accepted"]
    res = {"seeds": len(seeds), "split_sentences": len(split), "num_proc": num_proc, "statistics_s": round(stats_s, 3),
           "fingerprint_s": round(fingerprint_s, 3), "wall_s": round(wall, 3), "accepted": len(kept),
           "accepted_digest": hashlib.sha256(json.dumps(kept).encode()).hexdigest()[:16],
           "accepted_rows_per_s": round(len(kept) / wall, 1),
           "seeds_per_s": round(len(seeds) / wall, 1), "seconds_per_seed": round(wall / len(seeds), 5)}
    if num_proc == 1:  # the backend's clock and the summary live in the workers otherwise
        res.update(backend_s=round(llm.seconds, 3), backend_calls=llm.count,
                   backend_share=round(llm.seconds / wall, 3), failed_seeds=aug.summary.failed_seeds)
    return res


def time_checker(split: Dataset, seeds: Dataset, replays: int, workload: str = "default",
                 options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The checker alone: every ``Checker.check`` call of one ``map`` (as :func:`augment` runs it; its clock not
    read, as the copies taken cost time) kept, each candidate copied as it came in, then the calls made again
    ``replays`` times on the same checker, timed (no asyncio, no backend, no stage around them). The tagger's
    remembered rows (``_rows``, where the tagger has them) are emptied before each replay, so each reads its rows
    once afresh. Reports the fastest and the first replay, and a digest of the verdicts (reasons, tags, repairs)."""
    import copy

    from hf_rgda.checking import Checker

    calls, original = [], Checker.check

    def check(self: Any, cand: Any, seed: Any, accepted: Any, **kw: Any) -> Any:
        calls.append((self, copy.deepcopy(cand), seed, [copy.deepcopy(a) for a in accepted], kw))
        return original(self, cand, seed, accepted, **kw)

    Checker.check = check  # type: ignore[method-assign]
    try:
        augment(split, seeds, call_log=False, workload=workload, options=options)
    finally:
        Checker.check = original  # type: ignore[method-assign]
    times, verdicts = [], []
    for _ in range(replays):
        items = [(c, copy.deepcopy(cand), seed, acc, kw) for c, cand, seed, acc, kw in calls]
        for c in {id(c): c for c, *_ in items}.values():
            if (tagger := getattr(c.stats, "tagger", None)) is not None:
                vars(tagger).get("_rows", {}).clear()
        start = time.perf_counter()
        verdicts = [c.check(cand, seed, acc, **kw) for c, cand, seed, acc, kw in items]
        times.append(time.perf_counter() - start)
    digest = hashlib.sha256(json.dumps([(v.reason, v.detail, v.tags, v.salvaged) for v in verdicts]).encode())
    return {"seeds": len(seeds), "checks": len(calls), "replays": replays, "checker_s": round(min(times), 4),
            "checker_s_first": round(times[0], 4), "checker_us_per_check": round(min(times) / len(calls) * 1e6, 1),
            "verdicts_digest": digest.hexdigest()[:16]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--seeds", type=int, default=1000)
    p.add_argument("--workload", choices=list(WORKLOADS), default="default")
    p.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                   help="a configuration option beyond the workload's, its value as JSON (repeatable)")
    p.add_argument("--checker-replays", type=int, default=0, metavar="N",
                   help="time the checker alone instead: the map's checks made again N times (time_checker)")
    args = p.parse_args(argv)
    options = {k: json.loads(v) for k, _, v in (o.partition("=") for o in args.option)}
    disable_progress_bars()
    rows = read_split(args.data_dir)
    split, seeds = Dataset.from_list(rows), seed_rows(rows, args.seeds)
    if args.checker_replays:
        res = time_checker(split, seeds, args.checker_replays, args.workload, options)
    else:
        res = augment(split, seeds, call_log=False, workload=args.workload, options=options)
    import hf_rgda

    print(json.dumps({**res, "hf_rgda": str(Path(hf_rgda.__file__).resolve().parent)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
