#!/usr/bin/env bash
# The 200-seed protocol's background job: the dataset's PLAN (benchmarks/protocol200.py), niced, every chunk and
# training run committed as it lands; a rerun (any session, any machine) resumes from what is committed.
#   bash benchmarks/protocol200.sh [--dataset fin] &
set -uo pipefail
cd "$(dirname "$0")/.."
# passive OpenMP waits: spinning threads would take the cores nice gives to the foreground work
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_WAIT_POLICY=PASSIVE
mkdir -p benchmarks/.cache
# nice works within a scheduler autogroup; a job started with setsid gets its own group, which nice alone leaves
# at an equal share with the session's foreground work: lower the group too where the kernel has autogroups
[ -w /proc/self/autogroup ] && echo 19 > /proc/self/autogroup 2>/dev/null
# the job's order across datasets (protocol200.job_order: NCBI-disease's PLAN, FIN's first chunks at its place, then
# FIN's PLAN), or only the dataset given with --dataset; other arguments go to the run. Stop it with
# `pkill -f benchmarks/protocol200.sh; pkill -f "benchmarks.protocol200 run"` (a stop loses at most the chunk or
# training run under way). The body is one function, read whole before it runs, so a checkout that changes this file
# while the job runs cannot feed bash a stray line.
main() {
  nice -n 19 .venv/bin/python -u -m benchmarks.protocol200 run --commit "$@" >> benchmarks/.cache/protocol200.log 2>&1
}
main "$@"; exit $?
