#!/usr/bin/env bash
# The 200-seed protocol's training runs on a lent GPU machine (the workplace's device tool): the rows are made here
# (rule cells are rebuilt there by the same code; an LLM cell's rows travel in its committed chunks), the encoder is
# fine-tuned there, and the runs come back to be merged into benchmarks/results/protocol200/ and committed here.
#
# That machine reaches nothing outside and receives at most 64 MiB a call (the working tree included), so the
# encoder's weights (all-MiniLM-L6-v2, 91 MB) travel xz-compressed in two calls made back to back, while the machine
# is still warm: the first stages half of them, the second the rest and trains. The weights are checked against
# their sha256 before use; nothing is rounded or left out.
#
#   here:    bash benchmarks/device_protocol200.sh pack                 # .dev/a (data, wheels, model files, half 1), .dev/b
#   device:  bash benchmarks/device_protocol200.sh stage                # carry .dev/a
#   device:  bash benchmarks/device_protocol200.sh train CELL...        # carry .dev/b, at once after stage
#            (a cell named silver scores the rows of SILVER_ROWS="results files" against a silver tagger trained there;
#             replica:CELL trains one run of CELL apart, to set beside the runs made on this CPU)
#   here:    bash benchmarks/device_protocol200.sh unpack DIR           # DIR: the files that came back
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=sentence-transformers--all-MiniLM-L6-v2
STAGE=/root/p200-stage
action=${1:?pack, stage, train or unpack}; shift

case $action in
pack)
    snap=$(ls -d "${HF_HOME:-$HOME/.cache/huggingface}/hub/models--$MODEL/snapshots/"*/ | head -1)
    rm -rf .dev/a .dev/b && mkdir -p .dev/a/model .dev/a/data .dev/a/whl .dev/b
    for f in "$snap"*; do [ "$(basename "$f")" = model.safetensors ] || cp -rL "$f" .dev/a/model/; done
    basename "$snap" > .dev/a/revision
    sha256sum < "$snap/model.safetensors" | cut -d' ' -f1 > .dev/a/model.sha256
    xz -T2 -6 -c "$snap/model.safetensors" > .dev/model.xz
    half=$(( $(stat -c %s .dev/model.xz) / 2 - 2000000 ))  # the first call also carries the data and wheels
    head -c "$half" .dev/model.xz > .dev/a/model.xz.1 && tail -c +"$((half + 1))" .dev/model.xz > .dev/b/model.xz.2
    for d in ncbi_disease fin; do cp -r "../shared/data/$d" .dev/a/data/; done
    # what the device image lacks (datasets, evaluate, seqeval, bert-score), pure-Python wheels for its python 3.12
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_17_x86_64 -d .dev/a/whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
        evaluate==0.4.6 bert-score==0.3.13 fsspec==2026.9.0
    .venv/bin/python -m pip wheel -q --no-deps -w .dev/a/whl seqeval==1.2.2
    git rev-parse --short HEAD > .dev/a/commit
    du -sh .dev/a .dev/b
    ;;
stage)
    rm -rf "$STAGE" && cp -r .dev/a "$STAGE" && echo "staged: $(du -sh "$STAGE")"
    ;;
train)
    [ -d "$STAGE" ] || { echo "no stage: the machine went back between the two calls; run stage again" >&2; exit 3; }
    hub=/root/hf/hub/models--$MODEL
    snap=$hub/snapshots/$(cat "$STAGE/revision")
    mkdir -p "$snap" "$hub/refs" && cp -r "$STAGE/model/." "$snap/" && printf %s "$(cat "$STAGE/revision")" > "$hub/refs/main"  # no newline: the hub reads the file whole
    cat "$STAGE/model.xz.1" .dev/b/model.xz.2 | xz -d > "$snap/model.safetensors"
    [ "$(sha256sum < "$snap/model.safetensors" | cut -d' ' -f1)" = "$(cat "$STAGE/model.sha256")" ] \
        || { echo "the weights do not match their sha256" >&2; exit 4; }
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$STAGE"/whl/*.whl
    # the image may name its own hub cache (HF_HUB_CACHE outranks HF_HOME): name this one outright
    export PYTHONPATH=/tmp/site:$PWD HF_HOME=/root/hf HF_HUB_CACHE=/root/hf/hub HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    export BENCHMARK_COMMIT; BENCHMARK_COMMIT=$(cat "$STAGE/commit")
    out=${OUT:-/tmp/out}; mkdir -p "$out" /tmp/p200
    cp -r benchmarks/results/protocol200/. /tmp/p200/
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/device.txt"
    python3 -c "import torch, transformers, datasets; print(torch.__version__, transformers.__version__, datasets.__version__)"
    for cell in "$@"; do
        if [ "$cell" = silver ]; then  # SILVER_ROWS' rows scored against a silver tagger trained there
            # shellcheck disable=SC2086
            python3 -m benchmarks.silver --data-dir "$STAGE/data" --datasets ncbi_disease --rows ${SILVER_ROWS:?} \
                --cache /tmp/silver --out "$out/silver.json"
            continue
        elif [ "${cell#replica:}" != "$cell" ]; then  # replica:CELL: one run of CELL apart, beside the CPU runs
            python3 -m benchmarks.protocol200 train "${cell#replica:}" --runs 1 --data-dir "$STAGE/data" --out /tmp/replica
        else
            python3 -m benchmarks.protocol200 train "$cell" --data-dir "$STAGE/data" --out /tmp/p200
        fi
        tar czf "$out/p200.tgz" -C /tmp p200 $( [ -d /tmp/replica ] && echo replica )
    done
    ;;
unpack)
    from=${1:?the folder the device files came back to}
    tmp=$(mktemp -d) && tar xzf "$from/p200.tgz" -C "$tmp"
    cp "$tmp/p200/ncbi_disease.json" benchmarks/results/protocol200/ncbi_disease.json
    cp "$tmp"/p200/ncbi_disease/predictions/*.json.gz benchmarks/results/protocol200/ncbi_disease/predictions/
    [ -d "$tmp/replica" ] && mkdir -p benchmarks/results/protocol200/device_replica \
        && cp -r "$tmp/replica/." benchmarks/results/protocol200/device_replica/
    .venv/bin/python -m benchmarks.protocol200 report --readme
    ;;
*) echo "unknown action $action" >&2; exit 2 ;;
esac
