#!/usr/bin/env bash
# Set up hf_rgda on a fresh machine: virtual environment, the package (torch pinned to the CPU wheel),
# llama-cpp-python (compiled once, ~10 min on 2 cores; pip caches the wheel), and the models, provisioned
# offline into the Hugging Face cache. Idempotent: a second run only checks.
#
#   bash scripts/setup.sh            # for the main job: local default LLM + tiny test model
#   bash scripts/setup.sh --dev      # for the tests: dev tools, tiny LLM and the MiniLM encoder
#   bash scripts/setup.sh --models "default fast tiny minilm mpnet"   # choose models
#   HF_RGDA_CPU_VARIANTS=1 bash scripts/setup.sh   # llama.cpp with every x86-64 kernel variant (opt-in, long build)
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

# llama.cpp with every x86-64 CPU kernel variant (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS): one wheel that runs on any
# x86-64 machine and uses the best kernels its CPU has (AVX-512 where there is one: prompt processing about 1.8x the
# AVX2-only build's). scripts/llama_cpu_variants.cmake installs the variants next to libllama (llama-cpp-python's own
# install list leaves them out); hf_rgda.llm.engine loads them. The wheel is kept in its own folder, because pip's
# cache keys a built wheel by version only and would hand back a build made without them.
# Opt-in for now (HF_RGDA_CPU_VARIANTS=1): the build is measured only on a loaded machine (73 min niced; 20-30 min
# idle is an estimate) and not yet run end to end from a fresh clone, so the default stays the portable AVX2 build
# that CI has verified. See issue #32 and benchmarks/README.md (local_speed.py).
llama_version=$(grep -o 'llama-cpp-python[^"]*==[0-9.]*' pyproject.toml | head -1 | sed 's/.*==//')
llama_wheels=${HF_RGDA_WHEELS:-$HOME/.cache/hf_rgda/wheels}/llama-cpp-python-cpu-all-variants
llama_variants() { ls .venv/lib/python3*/site-packages/llama_cpp/lib/libggml-cpu-*.so >/dev/null 2>&1; }
want_variants() { [ "${HF_RGDA_CPU_VARIANTS:-0}" = 1 ] && [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; }
install_llama() {
  want_variants || return 0   # otherwise: llama-cpp-python's own portable build (below)
  llama_variants && return 0
  wheel=$(ls "$llama_wheels"/llama_cpp_python-"$llama_version"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    echo "setup: compiling llama-cpp-python $llama_version with every x86-64 CPU variant (20-30 min on 2 cores, once)" >&2
    CMAKE_ARGS="-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_PROJECT_llama_cpp_INCLUDE=$PWD/scripts/llama_cpu_variants.cmake" \
      .venv/bin/python -m pip wheel --quiet --no-cache-dir --no-deps --no-binary llama-cpp-python -w "$llama_wheels" \
      "llama-cpp-python==$llama_version"
    wheel=$(ls "$llama_wheels"/llama_cpp_python-"$llama_version"-*.whl | head -1)
  fi
  .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$wheel"
  llama_variants || { echo "setup: $wheel has no CPU variants" >&2; exit 1; }
}
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  install_llama
  # GGML_NATIVE=OFF where the variants are not built: a portable build (AVX2/FMA/F16C on x86-64)
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip install --quiet torch==2.13.0 -e ".[${extras}]"
  touch "$stamp"
fi
if want_variants && ! llama_variants; then   # a venv set up before the variants were asked for
  install_llama
fi
export HF_HUB_DISABLE_TELEMETRY=1
# shellcheck disable=SC2086
.venv/bin/hf-rgda provision $models
