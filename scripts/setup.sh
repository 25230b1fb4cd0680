#!/usr/bin/env bash
# Set up hf_rgda on a fresh machine: virtual environment, the package (torch pinned to the CPU wheel),
# llama-cpp-python (compiled once, ~10 min on 2 cores; pip caches the wheel), and the models, provisioned
# offline into the Hugging Face cache. Idempotent: a second run only checks.
#
#   bash scripts/setup.sh            # for the main job: local default LLM + tiny test model
#   bash scripts/setup.sh --dev      # for the tests: dev tools, tiny LLM and the MiniLM encoder
#   bash scripts/setup.sh --models "default fast tiny minilm mpnet"   # choose models
set -euo pipefail
cd "$(dirname "$0")/.."

extras="local,api"
models="default tiny"
dev=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dev) extras="local,api,train,attribution,demo,dev"; models="tiny minilm"; dev=1; shift ;;
    --models) models="$2"; shift 2 ;;
    *) echo "usage: $0 [--dev] [--models 'NAME ...']" >&2; exit 2 ;;
  esac
done

# system packages the tests use: Debian's Chromium (Space browser test) and WordNet (EDA baseline)
if [ "$dev" = 1 ] && { ! command -v chromium >/dev/null || [ ! -f /usr/share/wordnet/index.noun ]; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium wordnet-base >/dev/null
  else
    echo "setup: install Debian's chromium and wordnet-base for the browser and EDA tests (they are skipped without)" >&2
  fi
fi

PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.hf_rgda_setup_$(cat pyproject.toml | sha256sum | cut -c1-16)_${extras//,/-}"
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # GGML_NATIVE=OFF: a portable llama.cpp build (AVX2/FMA/F16C) whose cached wheel works on any x86-64 machine.
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip install --quiet torch==2.13.0 -e ".[${extras}]"
  touch "$stamp"
fi
export HF_HUB_DISABLE_TELEMETRY=1
# shellcheck disable=SC2086
.venv/bin/hf-rgda provision $models
