"""BioRDA components: WHERE attribution throughput (batched vs one ablation per forward) and WHICH debate behaviour.

Part ``attribution``: leave-one-out attribution (both maps) of the same NCBI-disease sentences with MiniLM and
MPNet token-classification models, once with every ablation of a sentence batched into one forward pass
(``perturbations_per_eval`` = words + 1) and once with one ablation per forward; sentences per second and the
ratio. The models' classification heads are freshly initialised: throughput does not depend on what they learned.
The maps of both modes are compared (max absolute difference).

Part ``debate``: ``biorda`` on NCBI-disease seeds with the local default LLM for 1, 3 and 5 agents (same seeds,
same WHERE model fine-tuned on the seeds, separate response caches): acceptance rate of proposals, rounds per
debate, calls and seconds per seed.

Usage:
    python -m benchmarks.biorda attribution --sentences 200
    python -m benchmarks.biorda debate --seeds 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.common import header, load
from hf_rgda import DEFAULT_LLM, RGDAAugmenter
from hf_rgda.provision import MODELS, snapshot_dir
from hf_rgda.recipe import augment, sample_seeds


def attribution(args: argparse.Namespace) -> dict:
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from hf_rgda.attribution import AttributionSelector

    torch.manual_seed(0)
    split = load(args.data_dir, "ncbi_disease")["train"]
    rows = sample_seeds(split, args.sentences)
    labels = ["O", "B-Disease", "I-Disease"]
    out = {"sentences": len(rows), "mean_words": round(sum(map(len, rows["tokens"])) / len(rows), 1), "models": {}}
    for name in args.models:
        folder = snapshot_dir(MODELS[name])
        model = AutoModelForTokenClassification.from_pretrained(
            str(folder), num_labels=3, id2label=dict(enumerate(labels)), label2id={x: i for i, x in enumerate(labels)})
        tok = AutoTokenizer.from_pretrained(str(folder))
        if args.ceiling_only:
            out["models"][name] = {"forward_ceiling": forward_ceiling(model, tok, rows, round(out["mean_words"]))}
            print(name, "forward ceiling", out["models"][name], flush=True)
            continue
        res, maps = {}, {}
        for batched in (True, False):
            sel = AttributionSelector(model, tok, type_descriptions={"Disease": "a disease, disorder or syndrome"},
                                      batched=batched)
            sel.attribute(rows[0]["tokens"], rows[0]["ner_tags"])  # warm-up
            start = time.perf_counter()
            maps[batched] = [sel.attribute(r["tokens"], r["ner_tags"]) for r in rows]
            secs = time.perf_counter() - start
            res["batched" if batched else "one_per_forward"] = {"seconds": round(secs, 2),
                                                                "sentences_per_s": round(len(rows) / secs, 3)}
            print(name, "batched" if batched else "one per forward", res, flush=True)
        diff = max(abs(x - y) for a, b in zip(maps[True], maps[False])
                   for x, y in zip(a.entity_map + a.description_map, b.entity_map + b.description_map))
        res["speedup"] = round(res["batched"]["sentences_per_s"] / res["one_per_forward"]["sentences_per_s"], 2)
        res["max_abs_difference"] = diff
        res["same_selection"] = all(a.selected == b.selected for a, b in zip(maps[True], maps[False]))
        res["forward_ceiling"] = forward_ceiling(model, tok, rows, round(out["mean_words"]))
        print(name, "forward ceiling", res["forward_ceiling"], flush=True)
        out["models"][name] = res
    return out


def forward_ceiling(model, tok, rows, words: int, repeats: int = 5) -> dict:
    """The most any batching can gain for this model on this machine: plain forwards (no Captum) of ``words + 1``
    copies of a typical sentence, one per forward vs all in one forward. Leave-one-out needs exactly those forwards,
    so when this ratio is below the attribution target, the target is out of reach by batching alone (the work is
    compute-bound, not call-bound)."""
    import torch

    row = min(rows, key=lambda r: abs(len(r["tokens"]) - words))
    enc = tok(list(row["tokens"]), is_split_into_words=True, return_tensors="pt")
    k = len(row["tokens"]) + 1
    batch = {key: v.repeat(k, 1) for key, v in enc.items()}
    model.eval()
    with torch.inference_mode():
        model(**enc), model(**batch)  # warm-up
        start = time.perf_counter()
        for _ in range(repeats):
            for _ in range(k):
                model(**enc)
        single = (time.perf_counter() - start) / repeats
        start = time.perf_counter()
        for _ in range(repeats):
            model(**batch)
        batched = (time.perf_counter() - start) / repeats
    return {"sequences": k, "sub_word_tokens": int(enc["input_ids"].shape[1]), "one_per_forward_s": round(single, 4),
            "one_forward_s": round(batched, 4), "ratio": round(single / batched, 2), "torch_threads": torch.get_num_threads()}


def debate(args: argparse.Namespace) -> dict:
    from hf_rgda.attribution import fit_seed_model

    split = load(args.data_dir, "ncbi_disease")["train"]
    seeds = sample_seeds(split, args.seeds)
    where = args.cache_dir / "where_model"
    if not (where / "config.json").is_file():
        fit_seed_model(sample_seeds(split, 200), str(where), epochs=5)
    out = {"seeds": len(seeds), "llm": args.llm, "sigma": args.sigma, "agents": {}}
    for n in args.agents:
        aug = RGDAAugmenter.from_dataset(split, llm=args.llm, method="biorda", attribution_model=str(where),
                                         debate_agents=n, debate_sigma=args.sigma, num_augmented=3, keep_rejected=True,
                                         cache=args.cache_dir / f"debate_{n}.sqlite3",
                                         domain="biomedical research abstracts (PubMed) with disease mentions")
        run = augment(seeds, aug, batch_size=len(seeds), load_from_cache_file=False)
        res, wall = run.rows, run.summary.wall_seconds
        traces = [json.loads(t) for t, s in zip(res["rgda_trace"], res["rgda_status"]) if t and s == "original"]
        debates = [t["debate"] for t in traces if t.get("debate")]
        accepted = sum(len(d["accepted_means"]) for d in debates)
        proposed = accepted + sum(len(d["rejected_means"]) for d in debates)
        s = run.summary.to_dict()
        out["agents"][str(n)] = {
            "debates": len(debates), "failed_seeds": s["failed_seeds"], "proposals": proposed,
            "accepted_by_debate": accepted, "acceptance_rate": round(accepted / proposed, 3) if proposed else None,
            "rounds": [d["rounds"] for d in debates], "sentences_kept_after_checks": s["accepted"],
            "rejected_by_reason": s["rejected_by_reason"], "calls": s["calls"],
            "seconds_per_seed": round(wall / len(seeds), 1),
            "examples": [" ".join(r["tokens"]) for r in res if r["rgda_status"] == "accepted"][:6],
        }
        print(n, out["agents"][str(n)], flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["attribution", "debate"])
    p.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    p.add_argument("--sentences", type=int, default=200)
    p.add_argument("--models", nargs="+", default=["minilm", "mpnet"])
    p.add_argument("--ceiling-only", action="store_true",
                   help="attribution: only measure forward_ceiling (plain forwards), keeping the stored throughput")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--agents", type=int, nargs="+", default=[1, 3, 5])
    p.add_argument("--sigma", type=int, default=80)
    p.add_argument("--llm", default=DEFAULT_LLM)
    p.add_argument("--cache-dir", type=Path, default=Path("benchmarks/.cache/biorda"))
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/biorda/biorda.json"))
    args = p.parse_args(argv)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    part = attribution(args) if args.part == "attribution" else debate(args)
    key = "models" if args.part == "attribution" else "agents"
    old = results.get(args.part, {}).get(key, {})
    merged = {**old, **part[key]}  # a rerun of some models/agents keeps the rest
    head = header("biorda", argv)
    command = head["command"]
    for name in part[key]:
        if args.part == "attribution" and args.ceiling_only:  # keep the throughput measured before, and its command
            merged[name] = {**old.get(name, {}), **part[key][name], "ceiling_command": command}
        else:
            merged[name] = {**merged[name], "command": command}
    results[args.part] = {**results.get(args.part, {}), "machine": head["machine"], "commit": head["commit"], **part,
                          key: merged}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
