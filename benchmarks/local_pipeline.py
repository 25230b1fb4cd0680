"""Benchmark of the local pipeline: yield, rejections, cost and judge behaviour per method.

For each dataset, samples seeds with at least one entity (fixed sample seed), runs every method through
``RGDAAugmenter`` with one shared response cache (methods that make the same call, e.g. GDA and R-GDA's first
guidance, pay for it once), in chunks of seeds (every method on a chunk before the next chunk), and writes the
results after every chunk, so a stop loses at most one chunk and a rerun skips finished chunks. ``--schedules N``
adds the stage-major vs row-major comparison on N seeds (same seeds, same run, separate caches so neither reuses
the other's answers). ``--representations N`` runs rgda with the ``segments`` output representation on the same
first N seeds with its own cache; the stage-major cell (``entities``, the default) is its comparison.

Usage (the committed results come from the command in results/local_pipeline/local_pipeline.json's "command"):
    python -m benchmarks.local_pipeline --data-dir ../shared/data --datasets ncbi_disease scierc --num-seeds 20
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.common import DOMAINS, header
from hf_rgda import DEFAULT_LLM, RGDAAugmenter, RunSummary
from hf_rgda.recipe import augment, load_split, sample_seeds

#: type descriptions where a dataset's annotation differs from a type's everyday meaning (FIN tags the parties of an
#: agreement named by role as PER: "Borrower" is 564 of its 747 train PER mentions, "Lender" 126; SciERC tags terms,
#: pronouns included, not only names). Read by ``calibration.py --descriptions dataset``: FIN's raise the entity
#: verifier's AUROC, SciERC's lower it (docs/decisions/type-descriptions.md), so they are kept as a measured
#: negative result, not a recommendation. This script and protocol.py do not pass them (their cached answers were
#: written without).
TYPE_DESCRIPTIONS = {
    "fin": {"PER": "a person, or a party to an agreement named by its role (such as the Borrower or the Lender)",
            "ORG": "the name of an organization, such as a company, a bank or an institution"},
    # SciERC's guideline in our words: Generic and OtherScientificTerm are terms, not names (its Generic mentions are
    # mostly "method", "approach", "system", "it"), which the default options' "not a name" sets against them
    "scierc": {"Task": "a task, application or problem that research addresses or a system is built for",
               "Method": "a method, model, algorithm, system or tool, or a component of one",
               "Metric": "a metric or measure of how well a system or method does",
               "Material": "data, a dataset, corpus, knowledge base or other resource that is used or produced",
               "OtherScientificTerm": "a scientific or technical term that is no task, method, metric or material "
                                      "(a feature, a rule, a phenomenon, a structure)",
               "Generic": 'a general word or pronoun that stands for a method, task, system or material named '
                          'elsewhere (such as "it", "this method", "the approach", "the model")'},
}
METHODS = ["naive", "gda", "rgda-no-gr", "rgda-no-ac", "rgda", "rgda+debate"]
COMBOS = {"debate": {"debate_review": True, "debate_agents": 3},  # "rgda+debate": rgda's calls (shared) + the panel
          "noverify": {"verify_entities": False}}  # "rgda+noverify": the same pipeline without the entity verifier


def cell_figures(traces: list[str], examples: list[dict], wall: float, n_seeds: int) -> dict:
    """The figures of one (dataset, method) cell from its seeds' traces."""
    summary = RunSummary.from_traces(traces)
    summary.wall_seconds = wall
    d = summary.to_dict()
    # the method's full cost: calls it paid now plus calls it shares with a method run before it (served from the
    # cache, counted at the seconds they took when paid)
    method_seconds = d["llm_seconds"] + d["cached_seconds"]
    d["method_llm_seconds"] = round(method_seconds, 1)
    d["seconds_per_accepted"] = round(method_seconds / d["accepted"], 1) if d["accepted"] else None
    d["tokens_per_accepted"] = round(d["method_tokens"] / d["accepted"]) if d["accepted"] else None
    d["seconds_per_seed"] = round(method_seconds / n_seeds, 1) if n_seeds else None
    d["wall_seconds_paid_per_seed"] = round(wall / n_seeds, 1) if n_seeds else None
    d["examples"] = examples[:10]
    # refinements the model answered with its input unchanged (each ends its loop), against all refinement calls
    notes = [n for t in traces for n in (json.loads(t).get("notes") or []) if t]
    d["unchanged_refinements"] = {k: {"unchanged": sum(n.startswith(f"{k.upper()} refinement") and "unchanged" in n
                                                         for n in notes),
                                      "calls": d["stage_calls"].get(stage, 0)}
                                  for k, stage in (("gr", "guidance_refine"), ("ac", "composition_refine"))}
    return d


def cells_of(chunks: dict) -> dict:
    """Every cell's figures from its finished chunks (each chunk keeps its seed traces, rows and commit)."""
    cells = {}
    for key, done in chunks.items():
        traces = [t for c in done.values() for t in c["traces"]]
        examples = [x for c in done.values() for x in c["examples"]]
        cells[key] = cell_figures(traces, examples, sum(c["wall"] for c in done.values()),
                                  sum(c["seeds"] for c in done.values()))
        cells[key]["commits"] = sorted({c.get("commit", "?") for c in done.values()})
    return cells


def run_chunk(seeds, aug: RGDAAugmenter) -> dict:
    """Augment one chunk of seeds; returns its traces, accepted rows (with their seed) and wall time."""
    run = augment(seeds, aug, batch_size=len(seeds), load_from_cache_file=False)
    out, wall = run.rows, run.summary.wall_seconds
    seed_text = {}
    examples = []
    for r in out:
        if r["rgda_status"] == "original":
            seed_text[r["rgda_source"]] = " ".join(r["tokens"])
        elif r["rgda_status"] == "accepted":
            examples.append({"seed": seed_text.get(r["rgda_source"], ""), "sentence": " ".join(r["tokens"]),
                             "entities": _entities(r["tokens"], r["ner_tags"]), "repairs": r["rgda_reason"],
                             "tokens": r["tokens"], "tags": r["ner_tags"]})  # for benchmarks/silver.py
    traces = [t for t, st in zip(out["rgda_trace"], out["rgda_status"]) if t and st != "rejected"]  # not raw rows
    return {"traces": traces, "examples": examples, "wall": wall, "seeds": len(seeds)}


def _entities(tokens: list[str], tags: list[str]) -> list[list[str]]:
    from hf_rgda.tags import tags_to_spans

    return [[" ".join(tokens[s.start:s.end]), s.label] for s in tags_to_spans(tags)]


def report(results: dict, path: Path) -> int:
    """A markdown page: one row per cell, the schedule comparison, and accepted rows printed in full."""
    commands = results.get("commands") or [results["command"]]
    lines = [(f"# Local pipeline benchmark\n\nCommand{'s' if len(commands) > 1 else ''}: "
              f"{'; '.join(f'`{c}`' for c in commands)}  \nMachine: {results['machine']}  \n"
              f"LLM: `{results['llm']}`  \nCode: commit {results.get('commit', '?')}\n"),
             ("| cell | seeds | accepted / seed | rejected by reason | repairs in accepted rows (by rule) | failed seeds | "
              "LLM calls | s / seed | s / accepted | tokens / accepted | GR rounds | AC rounds | judge scores (mean by "
              "round) | refinements returned unchanged (GR, AC) | code |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, c in results["cells"].items():
        early = c.get("judge_passed_early") or {}  # verdicts that passed early (judge_early_pass): no full score
        scores = ", ".join([f"{k} {v['mean']}" + (f" (+{early[k]} passed early)" if early.get(k) else "")
                            for k, v in c["judge_scores"].items()]
                           + [f"{k} {n} passed early" for k, n in early.items() if k not in c["judge_scores"]])
        lines.append(f"| {key} | {c['seeds']} | {c['accepted_per_seed']} | "
                     f"{', '.join(f'{k} {v}' for k, v in c['rejected_by_reason'].items())} | "
                     f"{', '.join(f'{k} {v}' for k, v in c.get('salvaged_by_rule', {}).items())} | {c['failed_seeds']} | "
                     f"{_calls(c)} | {c['seconds_per_seed']} | {c['seconds_per_accepted']} | "
                     f"{c['tokens_per_accepted']} | {c['judge_rounds'].get('gr') or ''} | "
                     f"{c['judge_rounds'].get('ac') or ''} | {scores} | {_unchanged(c)} | {', '.join(c.get('commits', []))} |")
    lines += chunk_table(results.get("chunks", {}))
    sched = {k.split("schedule=")[1]: c for k, c in results["cells"].items() if "schedule=" in k}
    if len(sched) == 2:
        lines.append("\n## Stage-major vs row-major scheduling (rgda, same seeds, same run)\n")
        lines.append("The two runs sample the same seeds with the same call seeds, but a KV-reused prefix changes the logits "
                     "in the last bits, so the samples, and with them the rejections and repairs, can differ: compare "
                     "the seconds per 1,000 tokens as well as the seconds per seed.\n")
        lines.append("| schedule | s / seed | LLM calls | prompt tokens | completion tokens | prompt tokens reused from "
                     "llama.cpp's KV state | s / 1k tokens |")
        lines.append("|---|---|---|---|---|---|---|")
        for name, c in sched.items():
            total = c["prompt_tokens"] + c["completion_tokens"]
            rate = round(1000 * c["method_llm_seconds"] / total, 2) if total else None
            lines.append(f"| {name} | {c['seconds_per_seed']} | {_calls(c)} | {c['prompt_tokens']} | "
                         f"{c['completion_tokens']} | {c['cached_prompt_tokens']} | {rate} |")
    rep = {k: c for k, c in results["cells"].items() if "representation=" in k}
    for key, c in rep.items():
        base = next((b for k, b in results["cells"].items() if k.endswith("schedule=stage")), None)
        lines.append("\n## Output representation (rgda, stage-major, same seeds, separate caches)\n")
        lines.append("| representation | seeds | accepted / seed | rejected by reason | s / seed | s / accepted | "
                     "tokens / accepted |")
        lines.append("|---|---|---|---|---|---|---|")
        for name, x in (("entities (sentence + entity list)", base), ("segments", c)):
            if x is not None:
                lines.append(f"| {name} | {x['seeds']} | {x['accepted_per_seed']} | "
                             f"{', '.join(f'{k} {v}' for k, v in x['rejected_by_reason'].items())} | "
                             f"{x['seconds_per_seed']} | {x['seconds_per_accepted']} | {x['tokens_per_accepted']} |")
    for key, c in results["cells"].items():
        if c["examples"] and "=" not in key:
            lines.append(f"\n## {key}: accepted rows (up to 10)\n")
            for e in c["examples"]:
                lines.append(f"- seed: {e['seed']}\n  - new: {e['sentence']}\n  - entities: {e['entities']}"
                             + (f"\n  - checker's repairs: {e['repairs']}" if e.get("repairs") else ""))
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")
    return 0


def chunk_table(chunks: dict) -> list[str]:
    """One row per cell and chunk: a method's cost per seed in that chunk (calls it paid plus shared calls at what
    they cost when paid), accepted per seed, wall seconds and commit, so a chunk that ran under load stands out."""
    lines = ["\n## Per chunk\n", ("Seconds per seed count every call a seed made at the seconds it took when paid, so "
                                   "a chunk whose calls ran while another process shared the cores shows up here.\n"),
             "| cell | chunk | seeds | accepted / seed | s / seed | wall s (paid now) | commit |", "|---|---|---|---|---|---|---|"]
    for key, done in chunks.items():
        for cid in sorted(done, key=lambda c: int(c.split("-")[0])):
            c = done[cid]
            f = cell_figures([t for t in c["traces"] if t], [], c["wall"], c["seeds"])
            lines.append(f"| {key} | {cid} | {c['seeds']} | {f['accepted_per_seed']:.2f} | {f['seconds_per_seed']:.1f} | "
                         f"{c['wall']:.0f} | {c.get('commit', '?')} |")
    return lines


def _unchanged(c: dict) -> str:
    u = c.get("unchanged_refinements") or {}
    return ", ".join(f"{k.upper()} {v['unchanged']} of {v['calls']}" for k, v in u.items() if v["calls"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--datasets", nargs="+", default=["ncbi_disease", "scierc"])
    p.add_argument("--methods", nargs="+", default=METHODS)
    p.add_argument("--num-seeds", type=int, default=20)
    p.add_argument("--chunk", type=int, default=5, help="seeds per batch; results are written after every chunk")
    p.add_argument("--sample-seed", type=int, default=0)
    p.add_argument("--llm", default=DEFAULT_LLM)
    p.add_argument("--schedules", type=int, default=0, metavar="N",
                   help="also time stage-major vs row-major rgda on the first N seeds of the first dataset")
    p.add_argument("--representations", type=int, default=0, metavar="N",
                   help="also run rgda with representation=segments on the first N seeds of the first dataset (compare "
                        "with the schedule=stage cell, which uses entities; give N equal to --schedules)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/local_pipeline/local_pipeline.json"))
    p.add_argument("--cache", type=Path, default=Path("benchmarks/.cache/local_pipeline_v2.sqlite3"))
    p.add_argument("--report", action="store_true", help="only write the markdown report from --out")
    p.add_argument("--stats", choices=["train", "seeds"], default="train",
                   help="the split the augmenter's statistics (checker lexicon, head counts, entity hints) come from: "
                        "the whole train split (every stored cell so far), or only the --num-seeds seeds, as a user "
                        "with that many labelled sentences has them (cells keyed '<method>@seeds')")
    args = p.parse_args(argv)
    if args.report:  # figures recomputed from the stored chunks, so a report change needs no rerun
        results = json.loads(args.out.read_text())
        results["cells"] = cells_of(results["chunks"])
        args.out.write_text(json.dumps(results, indent=1))
        return report(results, args.out.with_suffix(".md"))
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    head = header("local_pipeline", argv)
    results.setdefault("commands", [])
    if head["command"] not in results["commands"]:  # several invocations may fill one results file (e.g. a method on fewer seeds)
        results["commands"].append(head["command"])
    results.update({**head, "llm": args.llm})
    chunks = results.setdefault("chunks", {})

    def save() -> None:
        results["cells"] = cells_of(chunks)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1))

    def run(split, key: str, chunk_id: str, seeds, **kw) -> None:
        if chunk_id in chunks.get(key, {}):
            return
        aug = RGDAAugmenter.from_dataset(split, llm=args.llm, keep_rejected=True, **kw)
        chunks.setdefault(key, {})[chunk_id] = {**run_chunk(seeds, aug), "commit": results["commit"]}
        save()
        c = results["cells"][key]
        print(f"{key} [{chunk_id}]: accepted {c['accepted']} of {c['seeds']} seeds ({c['accepted_per_seed']}/seed), "
              f"{c['seconds_per_seed']} s/seed, rejected {c['rejected_by_reason']}", flush=True)

    plan = []
    for i, name in enumerate(args.datasets):
        split = load_split(str(args.data_dir / name), "train")
        seeds = sample_seeds(split, args.num_seeds, sample_seed=args.sample_seed, min_entities=1)
        plan.append((name, split, seeds))
        if i == 0 and args.schedules:
            for schedule in ("stage", "row"):  # separate caches: neither reuses the other's answers
                cache = args.cache.with_name(f"{args.cache.stem}_schedule_{schedule}_{name}.sqlite3")
                run(split, f"{name}/rgda/schedule={schedule}", f"0-{args.schedules}", seeds.select(range(args.schedules)),
                    method="rgda", schedule=schedule, cache=cache, domain=DOMAINS.get(name, ""))
        if i == 0 and args.representations:
            cache = args.cache.with_name(f"{args.cache.stem}_representation_segments_{name}.sqlite3")
            run(split, f"{name}/rgda/representation=segments", f"0-{args.representations}",
                seeds.select(range(args.representations)), method="rgda", representation="segments", cache=cache,
                domain=DOMAINS.get(name, ""))
    suffix = "@seeds" if args.stats == "seeds" else ""
    for lo in range(0, args.num_seeds, args.chunk):  # chunk by chunk across datasets, so every dataset advances
        for name, train, seeds in plan:
            split = seeds if args.stats == "seeds" else train  # seeds: what a user holding only them has
            part = seeds.select(range(lo, min(lo + args.chunk, len(seeds))))
            if len(part) == 0:
                continue
            for method in args.methods:  # methods share one cache: calls they have in common are paid once
                base, _, combo = method.partition("+")
                run(split, f"{name}/{method}{suffix}", f"{lo}-{lo + len(part)}", part, method=base, cache=args.cache,
                    domain=DOMAINS.get(name, ""), **COMBOS.get(combo, {}))
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _calls(cell: dict) -> int:
    """A cell's LLM calls (results written before the summary kept the traces' names call them ``llm_calls``)."""
    return cell["calls"] if "calls" in cell else cell["llm_calls"]
