#!/usr/bin/env bash
# The README's main command as a new user runs it: a fresh clone of this checkout's HEAD beside ../shared, the
# README's set-up then the augment command, each timed, with an empty response cache and datasets cache (a new user
# has neither; pip's wheel cache and the Hugging Face model cache are what the machine has). Writes benchmarks/results/main_command/main_command.json
# (times, commit, machine, the run's summary.json, and what a decode cost right after: benchmarks.common.decode_probe)
# and prints the accepted rows.
#
#   bash benchmarks/main_command.sh            # clones into ../hf_rgda_fresh (removed first)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
fresh=${FRESH_DIR:-$repo/../hf_rgda_fresh}
rm -rf "$fresh" && git clone -q "$repo" "$fresh" && cd "$fresh"
export HF_RGDA_CACHE=$fresh/.fresh-cache.sqlite3
# and no datasets cache: `datasets` keeps each map's result under its fingerprint, so a second run of the same code
# and options would read the first run's rows from ~/.cache/huggingface/datasets in 2 s (a new user has none)
export HF_DATASETS_CACHE=$fresh/.datasets-cache
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s); bash scripts/setup.sh; t1=$(date +%s)
.venv/bin/hf-rgda augment ../shared/data/ncbi_disease --num-seeds 4 --method rgda \
  --domain "biomedical research abstracts (disease mentions)" --out out/ncbi-rgda
t2=$(date +%s)
.venv/bin/python - "$repo/benchmarks/results/main_command/main_command.json" "$((t1 - t0))" "$((t2 - t1))" "$load_before" <<'PY'
import json, os, platform, subprocess, sys
from datasets import load_from_disk
from hf_rgda.tags import format_inline
out, setup_s, main_s, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = load_from_disk("out/ncbi-rgda/dataset")["augmented"]
result = {"command": "bash benchmarks/main_command.sh", "commit": subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], text=True).strip(),
          "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores", "load_average_before": load,
          "setup_s": setup_s, "main_s": main_s, "rows": [format_inline(r["tokens"], r["ner_tags"]) for r in rows],
          "summary": json.load(open("out/ncbi-rgda/summary.json"))}
open(out, "w").write(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
try:  # the host's speed right after the run: a slow hour shows here
    from benchmarks.common import decode_probe
    result["decode_probe_after"] = decode_probe()
except Exception as err:  # the run's own figures are written already
    result["decode_probe_after"] = {"error": f"{type(err).__name__}: {err}"}
open(out, "w").write(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
print(f"setup {setup_s} s, main command {main_s} s ({result['summary']['summary']['llm_seconds']} s of LLM time), "
      f"a decode right after (seconds by width): {result['decode_probe_after']}; {len(rows)} rows:")
print("\n".join(result["rows"]))
PY
