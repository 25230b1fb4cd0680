#!/usr/bin/env bash
# benchmarks.silver on a lent GPU machine (the workplace's device tool) in one call: the silver tagger is trained there
# in seconds instead of about an hour on two shared cores. Its encoder (all-MiniLM-L6-v2) travels with its weights
# rounded to float16 (the float32 file and the tree exceed a call's 64 MiB) and widened back to float32 there before
# training: every row set scored in one call meets the same instrument, which differs from a float32-initialised
# tagger by that rounding alone (the results file says so).
#   here:    bash benchmarks/device_silver.sh pack                  # .dev/s: weights, model files, data, wheels
#   device:  bash benchmarks/device_silver.sh run --datasets ncbi_disease --rows FILE...   (carry .dev/s)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=sentence-transformers--all-MiniLM-L6-v2

case ${1:?pack or run} in
pack)
    snap=$(ls -d "${HF_HOME:-$HOME/.cache/huggingface}/hub/models--$MODEL/snapshots/"*/ | head -1)
    rm -rf .dev/s && mkdir -p .dev/s/model .dev/s/whl
    for f in "$snap"*; do [ "$(basename "$f")" = model.safetensors ] || cp -rL "$f" .dev/s/model/; done
    basename "$snap" > .dev/s/revision
    .venv/bin/python - "$snap/model.safetensors" .dev/s/model16.safetensors <<'EOF'
import sys
from safetensors.torch import load_file, save_file
weights = load_file(sys.argv[1])
save_file({k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}, sys.argv[2])
EOF
    xz -T2 -6 -f .dev/s/model16.safetensors
    tar cJf .dev/s/data.tar.xz -C ../shared/data ncbi_disease fin scierc
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_17_x86_64 -d .dev/s/whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
        evaluate==0.4.6 fsspec==2026.9.0
    .venv/bin/python -m pip wheel -q --no-deps -w .dev/s/whl seqeval==1.2.2
    git rev-parse --short HEAD > .dev/s/commit
    du -sh .dev/s
    ;;
run)
    shift
    hub=/root/hf/hub/models--$MODEL
    snap=$hub/snapshots/$(cat .dev/s/revision)
    mkdir -p "$snap" "$hub/refs" /tmp/data && cp -r .dev/s/model/. "$snap/"
    printf %s "$(cat .dev/s/revision)" > "$hub/refs/main"  # no newline: the hub reads the file whole
    xz -dc .dev/s/model16.safetensors.xz > /tmp/model16.safetensors
    python3 - /tmp/model16.safetensors "$snap/model.safetensors" <<'EOF'
import sys
from safetensors.torch import load_file, save_file
weights = load_file(sys.argv[1])
save_file({k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}, sys.argv[2])
EOF
    tar xJf .dev/s/data.tar.xz -C /tmp/data
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .dev/s/whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD HF_HOME=/root/hf HF_HUB_CACHE=/root/hf/hub HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    export BENCHMARK_COMMIT; BENCHMARK_COMMIT=$(cat .dev/s/commit)
    out=${OUT:-/tmp/out}; mkdir -p "$out"
    python3 -m benchmarks.silver --data-dir /tmp/data --cache /tmp/silver --out "$out/silver.json" "$@"
    ;;
*) echo "unknown action $1" >&2; exit 2 ;;
esac
