"""Where the embedded model's time goes: the README's main command with every llama.cpp call timed and split.

Runs ``hf-rgda augment <data>/ncbi_disease --num-seeds 4 --method rgda`` (the README's main command, its defaults,
an empty response cache) in this process, with the local backend's calls observed: for each call its stage, prompt
tokens, prompt tokens llama.cpp evaluated (the rest came from a kept KV state), completion tokens, and llama.cpp's
own timers (``llama_perf_context``: prompt evaluation and generation milliseconds); what is left of the call's
seconds is sampling, grammar and Python overhead. Writes per-call rows and per-stage totals to
``results/local_profile/local_profile.json``.

Usage:
    python -m benchmarks.local_profile                      # the default engine
    python -m benchmarks.local_profile --lookup off --out /tmp/profile_lookup_off.json
    python -m benchmarks.local_profile --schedule row --out benchmarks/results/local_profile/local_profile_row.json
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA_DIR,
    MAIN_COMMAND_DOMAIN,
    ROOT,
    add_cpu_module,
    command,
    commit,
    machine,
    use_cpu_module,
)


def profile(args: argparse.Namespace) -> dict[str, Any]:
    import llama_cpp

    from hf_rgda import DEFAULT_LLM, cli
    from hf_rgda.calls import call_of
    from hf_rgda.llm.local import LocalLLM, cpu_backend

    options = {k: v for k, v in (("kv_states_mb", args.kv_states_mb), ("lookup", args.lookup)) if v is not None}
    llm = LocalLLM(DEFAULT_LLM.split(":", 1)[1], **options)
    if args.lookup_max_tokens is not None:  # main() has checked that lookup is on
        llm._load().lookup.max_tokens = args.lookup_max_tokens
    calls: list[dict[str, Any]] = []
    chat = llm._chat

    def observed(messages: list[dict[str, str]], **kwargs: Any) -> Any:
        llama = llm._load()
        llama_cpp.llama_perf_context_reset(llama._ctx.ctx)
        sampler_before = getattr(llama, "last_sampler", None)
        out, usage, seconds = chat(messages, **kwargs)
        perf = llama_cpp.llama_perf_context(llama._ctx.ctx)
        info = call_of()
        sampler = getattr(llama, "last_sampler", None)
        row = {"stage": info.stage if info else "?", "prompt_tokens": usage.prompt_tokens,
               "cached_tokens": usage.cached_tokens, "completion_tokens": usage.completion_tokens,
               "seconds": round(seconds, 3), "prompt_eval_tokens": perf.n_p_eval,
               "prompt_eval_s": round(perf.t_p_eval_ms / 1000, 3), "gen_tokens": perf.n_eval,
               "gen_s": round(perf.t_eval_ms / 1000, 3)}
        row["other_s"] = round(seconds - row["prompt_eval_s"] - row["gen_s"], 3)
        if sampler is not None and sampler is not sampler_before:
            row["grammar_rejected"] = sampler.rejected
        calls.append(row)
        return out, usage, seconds

    llm._chat = observed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="local_profile_") as tmp:
        options = [x for name in ("representation", "schedule") if getattr(args, name)
                   for x in (f"--{name}", getattr(args, name))]
        argv = ["augment", str(args.data_dir / "ncbi_disease"), "--num-seeds", str(args.num_seeds), "--method", "rgda",
                "--domain", MAIN_COMMAND_DOMAIN, *options, "--out", str(Path(tmp) / "out"), "--cache", str(Path(tmp) / "cache.sqlite3")]
        start = time.perf_counter()
        rc = cli.main(argv, llm=llm)
        wall = time.perf_counter() - start
        summary = json.loads((Path(tmp) / "out" / "summary.json").read_text())["summary"]
        rows = _rows(Path(tmp) / "out")
        rejections = [json.loads(line) for line in (Path(tmp) / "out" / "rejections.jsonl").read_text().splitlines()]
    stages: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in calls:
        s = stages[c["stage"]]
        for k in _SUMMED:
            s[k] += c[k]
        s["calls"] += 1
    total = {k: round(sum(c[k] for c in calls), 1) if calls and k in calls[0] else None for k in _SUMMED}
    return {"command": command("local_profile"), "commit": commit(), "machine": machine(), "engine": cpu_backend(),
            "identity": llm.identity(), "kv_states_mb": llm.kv_states_mb, "representation": args.representation,
            "schedule": args.schedule,
            # the process's peak resident memory (file pages of the mapped weights it touched included)
            "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "rc": rc, "wall_seconds": round(wall, 1), "accepted": summary["accepted"],
            "rejected_by_reason": summary["rejected_by_reason"], "total": total,
            "prompt_eval_tokens_per_s": round(total["prompt_eval_tokens"] / total["prompt_eval_s"], 1)
            if total["prompt_eval_s"] else None,
            "gen_tokens_per_s": round(total["completion_tokens"] / total["gen_s"], 1) if total["gen_s"] else None,
            "stages": {k: {m: round(v, 2) for m, v in s.items()} for k, s in stages.items()},
            # prompt-lookup drafting: a decode that checks guesses counts as prompt evaluation in llama.cpp's
            # counters, so with it on, prompt_eval_s holds those decodes and gen_s the single-token ones
            "lookup": llm._llama.lookup.stats() if getattr(llm._llama, "lookup", None) is not None else None,
            "summary_wall_seconds": summary.get("wall_seconds"),
            "rows": rows,
            "rejections": [{"reason": r["rgda_reason"], **json.loads(r["rgda_trace"] or "{}")} for r in rejections],
            "calls": calls}


#: the per-call figures summed per stage and in total
_SUMMED = ("seconds", "prompt_eval_s", "gen_s", "other_s", "prompt_tokens", "prompt_eval_tokens", "completion_tokens")


def _rows(out: Path) -> list[str]:
    """The accepted rows, entities marked in place."""
    from datasets import load_from_disk

    from hf_rgda.tags import format_inline

    rows = load_from_disk(str(out / "dataset"))["augmented"]
    feature = rows.features["ner_tags"].feature
    names = feature.names if hasattr(feature, "names") else None
    return [format_inline(r["tokens"], [names[t] for t in r["ner_tags"]] if names else r["ner_tags"]) for r in rows]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=DATA_DIR)
    p.add_argument("--num-seeds", type=int, default=4)
    p.add_argument("--representation", default=None, help="what the model writes (default: the library's default)")
    p.add_argument("--schedule", default=None, help="the pipeline's schedule, stage or row (default: the library's)")
    p.add_argument("--kv-states-mb", type=int, default=None, help="the local backend's kept KV states (0: off)")
    p.add_argument("--lookup", choices=("auto", "always", "off"), default=None,
                   help="the local backend's prompt-lookup drafting (default: the backend's default)")
    p.add_argument("--lookup-max-tokens", type=int, default=None,
                   help="the most guesses prompt-lookup drafting checks in one decode (default: the drafter's default)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "local_profile" / "local_profile.json")
    add_cpu_module(p)
    args = p.parse_args(argv)
    if args.lookup_max_tokens is not None and (args.lookup_max_tokens < 1 or args.lookup == "off"):
        p.error("--lookup-max-tokens needs 1 or more, with prompt lookup on (not --lookup off)")
    use_cpu_module(args)
    result = profile(args)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("calls", "engine")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
