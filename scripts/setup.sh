#!/usr/bin/env bash
# Set up hf_rgda on a fresh machine: virtual environment, the package (torch pinned to the CPU wheel),
# llama-cpp-python (compiled once with CPU kernels chosen at run time, ~20 min on 2 cores; the wheel is cached), and the models, provisioned
# offline into the Hugging Face cache. Idempotent: a second run only checks.
#
#   bash scripts/setup.sh            # for the main job: local default LLM + tiny test model
#   bash scripts/setup.sh --dev      # for the tests: dev tools, tiny LLM and the MiniLM encoder
#   bash scripts/setup.sh --models "default fast tiny minilm mpnet"   # choose models
#   HF_RGDA_CPU_VARIANTS=0 bash scripts/setup.sh   # llama-cpp-python's portable AVX2 build, not the CPU variants
set -euo pipefail
cd "$(dirname "$0")/.."

extras="local,api"
models="default tiny"
dev=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dev) extras="local,api,train,attribution,demo,ray,dev"; models="tiny minilm"; dev=1; shift ;;
    --models) models="$2"; shift 2 ;;
    *) echo "usage: $0 [--dev] [--models 'NAME ...']" >&2; exit 2 ;;
  esac
done

# system packages the tests use: Debian's Chromium (Space browser test), WordNet (EDA baseline) and QEMU's user-mode
# emulator (the llama.cpp build run as on a CPU without AVX-512)
if [ "$dev" = 1 ] && { ! command -v chromium >/dev/null || [ ! -f /usr/share/wordnet/index.noun ] \
                       || ! command -v qemu-x86_64 >/dev/null; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium wordnet-base qemu-user >/dev/null
  else
    echo "setup: install Debian's chromium, wordnet-base and qemu-user for the browser, EDA and CPU-variant tests" \
         "(they are skipped without)" >&2
  fi
fi

PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=".venv/.hf_rgda_setup_$(cat pyproject.toml | sha256sum | cut -c1-16)_${extras//,/-}"

# llama.cpp with CPU kernels chosen at run time (GGML_BACKEND_DL): one backend module per x86-64 level, next to
# libllama, and ggml loads the best one the CPU has (hf_rgda.llm.local.load_cpu_backends). The wheel runs on any
# x86-64 machine at its own speed: prompt processing at 1.17x a native build's on this project's AMD EPYC and 0.99x on
# its Intel Xeon with AMX (docs/decisions/amx-module.md, local_speed.py --kernels). llama.cpp's GGML_CPU_ALL_VARIANTS
# builds 14 x86 modules; seven cover the CPUs of the last decade (x64, the any-CPU fallback; haswell, AVX2; alderlake,
# AVX-VNNI; skylakex, AVX-512; icelake, +VBMI/VNNI; zen4, +BF16; sapphirerapids, +AMX tiles for prompts), so the
# others are taken out of the list in llama-cpp-python's own source distribution before it is compiled (~20 min on 2
# cores, once). The AMX module's tile configuration is made a constant first: as llama.cpp writes it, GCC 12 drops its
# stores and the first prompt dies of SIGILL (scripts/llama_cpu_variants.py). HF_RGDA_CPU_VARIANT_LIST names another
# list (the six without sapphirerapids: the build of sessions 16-28, docs/decisions/amx-module.md).
# scripts/llama_cpu_variants.cmake installs the modules (llama-cpp-python's install list leaves them out). The wheel
# is kept in its own folder: pip's cache keys a built wheel by version only.
# HF_RGDA_CPU_VARIANTS=0 keeps llama-cpp-python's own portable build (AVX2 kernels only) instead.
llama_version=$(grep -o 'llama-cpp-python[^"]*==[0-9.]*' pyproject.toml | head -1 | sed 's/.*==//')
cpu_variants=${HF_RGDA_CPU_VARIANT_LIST:-x64 haswell alderlake skylakex icelake zen4 sapphirerapids}
llama_wheels=${HF_RGDA_WHEELS:-$HOME/.cache/hf_rgda/wheels}/llama-cpp-python-cpu-$(echo "$cpu_variants" | tr ' ' -)
llama_variants() {   # exactly the variants asked for (a module left from another list would be loaded if it scores
  # best), and the bindings that load them (scripts/llama_wheel_backends.py)
  local have want
  have=$(ls .venv/lib/python3*/site-packages/llama_cpp/lib/ 2>/dev/null | sed -n 's/^libggml-cpu-\(.*\)\.so$/\1/p' | sort)
  want=$(printf '%s\n' $cpu_variants | sort)
  [ "$have" = "$want" ] && grep -q "hf_rgda: register the CPU backend" .venv/lib/python3*/site-packages/llama_cpp/llama_cpp.py
}
want_variants() { [ "${HF_RGDA_CPU_VARIANTS:-1}" = 1 ] && [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; }
install_llama() {
  want_variants || return 0   # otherwise: llama-cpp-python's own portable build (below)
  llama_variants && return 0
  wheel=$(ls "$llama_wheels"/llama_cpp_python-"$llama_version"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ]; then
    echo "setup: compiling llama-cpp-python $llama_version with CPU variants $cpu_variants (~20 min on 2 cores, once)" >&2
    src=$(mktemp -d)
    .venv/bin/python -m pip download --quiet --no-deps --no-binary :all: -d "$src" "llama-cpp-python==$llama_version"
    tar xzf "$src"/llama_cpp_python-"$llama_version".tar.gz -C "$src"
    tree="$src/llama_cpp_python-$llama_version"
    .venv/bin/python scripts/llama_cpu_variants.py "$tree/vendor/llama.cpp" $cpu_variants
    CMAKE_ARGS="-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_PROJECT_llama_cpp_INCLUDE=$PWD/scripts/llama_cpu_variants.cmake" \
      .venv/bin/python -m pip wheel --quiet --no-cache-dir --no-deps -w "$llama_wheels" "$tree"
    rm -rf "$src"
    wheel=$(ls "$llama_wheels"/llama_cpp_python-"$llama_version"-*.whl | head -1)
  fi
  # the compiled wheel stays as built; the one installed registers its CPU modules on import, so llama_cpp.server and
  # a user's own llama_cpp.Llama work too (llama-cpp-python itself never loads them)
  patched=$(.venv/bin/python scripts/llama_wheel_backends.py "$wheel" "$(mktemp -d)")
  .venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$patched"
  rm -rf "$(dirname "$patched")"
  llama_variants || { echo "setup: $wheel lacks some of the CPU variants $cpu_variants" >&2; exit 1; }
}
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  install_llama
  # GGML_NATIVE=OFF where the variants are not built: a portable build (AVX2/FMA/F16C on x86-64)
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip install --quiet torch==2.13.0 -e ".[${extras}]"
  touch "$stamp"
fi
if want_variants && ! llama_variants; then   # a venv set up before these variants (or their loading) were asked for
  install_llama
fi
export HF_HUB_DISABLE_TELEMETRY=1
# shellcheck disable=SC2086
.venv/bin/hf-rgda provision $models
