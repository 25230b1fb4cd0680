#!/usr/bin/env bash
# The install a user does: build the wheel, install only it with the [openai] extra into a fresh virtual environment
# (dependencies from the package index; no torch), then run `hf-rgda --help`, the import, and the README quickstart's
# Python against the scripted OpenAI-compatible server that ships in the package (python -m hf_rgda.testing.providers).
#
#   bash scripts/wheel_smoke.sh            # uses .venv/bin/python to build; KEEP=1 keeps the work folder
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/hf_rgda_wheel.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    if [ "${KEEP:-0}" = 1 ]; then echo "wheel smoke: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

echo "wheel smoke: building the wheel"
"$PY" -m pip wheel --quiet --no-deps -w "$work/dist" .
wheel=$(ls "$work"/dist/hf_rgda-*.whl)
echo "wheel smoke: $(basename "$wheel")"

"$PY" -m venv "$work/venv"
venv="$work/venv"
"$venv/bin/python" -m pip install --quiet "${wheel}[openai]"
if "$venv/bin/python" -m pip show --quiet torch >/dev/null 2>&1; then
    echo "wheel smoke: torch was installed with [openai]" >&2
    exit 1
fi

cd "$work"  # nothing of the checkout on sys.path: only the installed wheel
"$venv/bin/hf-rgda" --help >/dev/null
"$venv/bin/python" -c "import hf_rgda, sys; print('wheel smoke: import hf_rgda', hf_rgda.__version__, 'from', hf_rgda.__file__); sys.exit('site-packages' not in hf_rgda.__file__)"

export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 HF_DATASETS_DISABLE_PROGRESS_BARS=1 TQDM_DISABLE=1 HF_DATASETS_CACHE="$work/datasets" HF_RGDA_CACHE="$work/responses.sqlite3"
"$venv/bin/python" -m hf_rgda.testing.providers >"$work/port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(head -n 1 "$work/port")
[ -n "$port" ] || { echo "wheel smoke: the scripted server did not start: $(cat "$work/server.log")" >&2; exit 1; }

# the README quickstart's code, on a small local dataset, with the scripted server as the OpenAI-compatible backend
"$venv/bin/python" - "http://127.0.0.1:$port/v1" <<'EOF'
import sys

from datasets import Dataset

from hf_rgda import RGDAAugmenter

train = Dataset.from_dict({
    "tokens": [["Germline", "mutations", "in", "BRCA1", "cause", "breast", "cancer", "."],
               ["Patients", "with", "cystic", "fibrosis", "show", "chronic", "infection", "."],
               ["The", "gene", "is", "silenced", "in", "most", "tumours", "of", "the", "colon", "."]],
    "tags": [["O", "O", "O", "O", "O", "B-Disease", "I-Disease", "O"],
             ["O", "O", "B-Disease", "I-Disease", "O", "O", "B-Disease", "O"],
             ["O", "O", "O", "O", "O", "O", "B-Disease", "O", "O", "O", "O"]],
})
aug = RGDAAugmenter.from_dataset(train, tags_column="tags", llm="openai:gpt-5.5", llm_options={"base_url": sys.argv[1]},
                                 domain="biomedical abstracts (disease mentions)")
seeds = train.shuffle(seed=0).select(range(2))
augmented = seeds.map(aug, batched=True, batch_size=8, with_indices=True)
print(aug.summary.format())
statuses = augmented["rgda_status"]
assert statuses.count("original") == 2 and "accepted" in statuses and "failed" not in statuses, statuses
EOF
echo "wheel smoke: ok in $(( $(date +%s) - start )) s"
