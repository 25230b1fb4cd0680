#!/usr/bin/env bash
# Write a folder a Hugging Face Space (sdk: gradio) runs as is:
#
#   bash scripts/build_space.sh DIR [--local]
#
#   DIR/app.py            spaces/app.py
#   DIR/README.md         spaces/README.md (the Space's YAML front matter: sdk, sdk_version, app_file, python_version)
#   DIR/requirements.txt  PyPI requirements only: the wheel's own dependencies and those of its [api] extra (the
#                         OpenAI, Anthropic and Gemini SDKs), and gradio pinned to the front matter's sdk_version;
#                         with --local also [local] (llama-cpp-python, which the Space then compiles: minutes)
#   DIR/hf_rgda/          the package, unpacked from the wheel this script builds (its files byte for byte)
#   DIR/screenshot.png    the picture the README shows
#
# Why the package is unpacked rather than listed in requirements.txt as ./hf_rgda-<version>-py3-none-any.whl: a Space's
# build installs requirements.txt with only that file mounted (the folder is copied in afterwards), so a local path
# in it does not exist at install time. app.py's folder is on sys.path, so `import hf_rgda` finds the unpacked copy.
# Without --local the Space has no llama.cpp, and its Backend menu starts on OpenAI (type a model, and a key or a
# base URL; or set OPENAI_API_KEY as a Space secret).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
PY=${PYTHON:-$root/.venv/bin/python}
dir="" extras="api"
for arg in "$@"; do
    case "$arg" in
        --local) extras="api,local" ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) [ -z "$dir" ] || { echo "usage: $0 DIR [--local]" >&2; exit 2; }; dir="$arg" ;;
    esac
done
[ -n "$dir" ] || { echo "usage: $0 DIR [--local]" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
[ -z "$(ls -A "$dir")" ] || { echo "build_space: $dir is not empty" >&2; exit 2; }

wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
(cd "$root" && "$PY" -m pip wheel --quiet --no-deps -w "$wheels" .)
wheel=$(ls "$wheels"/hf_rgda-*.whl)

cp "$root/spaces/app.py" "$root/spaces/README.md" "$root/spaces/screenshot.png" "$dir/"
"$PY" - "$wheel" "$dir" "$extras" <<'EOF'
"""Unpack the wheel's package and write requirements.txt from its metadata (Requires-Dist) for the chosen extras."""
import re
import sys
import zipfile
from pathlib import Path

wheel, out, extras = sys.argv[1], Path(sys.argv[2]), set(sys.argv[3].split(","))
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(out, [n for n in zf.namelist() if n.startswith("hf_rgda/")])
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    lines = zf.read(meta).decode().splitlines()
front = (out / "README.md").read_text().split("---")[1]
sdk_version = re.search(r"^sdk_version:\s*(\S+)", front, re.M).group(1)
reqs, seen = [], set()
for line in lines:
    if not line.startswith("Requires-Dist:"):
        continue
    spec, _, marker = line.removeprefix("Requires-Dist:").strip().partition(";")
    extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
    if extra and extra.group(1) not in extras:
        continue
    name = re.split(r"[\s<>=!~\[;]", spec.strip(), maxsplit=1)[0].lower()
    if name not in seen:
        seen.add(name)
        reqs.append(spec.strip())
reqs.append(f"gradio=={sdk_version}")  # what the Space runs: the README's sdk_version
version = Path(wheel).name.split("-")[1]
header = (f"# hf_rgda {version} itself is the hf_rgda/ folder beside app.py (unpacked from its wheel by "
          f"scripts/build_space.sh); these are its dependencies with the extras {sorted(extras)}, from PyPI.\n")
(out / "requirements.txt").write_text(header + "\n".join(reqs) + "\n")
print(f"build_space: {out} (hf_rgda {version}, extras {sorted(extras)}, gradio {sdk_version})")
EOF
