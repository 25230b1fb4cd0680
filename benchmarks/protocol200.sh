#!/usr/bin/env bash
# The 200-seed protocol's background job: the dataset's PLAN (benchmarks/protocol200.py), niced, every chunk and
# training run committed as it lands; a rerun (any session, any machine) resumes from what is committed.
#   bash benchmarks/protocol200.sh [--dataset fin] &
set -uo pipefail
cd "$(dirname "$0")/.."
# passive OpenMP waits: spinning threads would take the cores nice gives to the foreground work
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_WAIT_POLICY=PASSIVE
mkdir -p benchmarks/.cache
exec nice -n 19 .venv/bin/python -u -m benchmarks.protocol200 run --commit "$@" >> benchmarks/.cache/protocol200.log 2>&1
