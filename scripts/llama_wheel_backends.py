"""Make a llama-cpp-python wheel built with ``GGML_BACKEND_DL`` register its CPU backends when it is imported (used by
setup.sh on the CPU-variant wheel).

A ``GGML_BACKEND_DL`` build keeps its CPU kernels in modules loaded at run time (``libggml-cpu-haswell.so``, ...).
llama.cpp's own programs load them at start-up; llama-cpp-python 0.3.x never does, so any program other than
hf_rgda (which loads them itself, ``hf_rgda.llm.local.load_cpu_backends``) fails with "no backends are loaded":
``python -m llama_cpp.server`` (the OpenAI-compatible server the tests run), or ``llama_cpp.Llama`` in a user's own
script. This appends the loading call to the wheel's ``llama_cpp/llama_cpp.py``, right where the bindings have
opened the library, and writes the wheel's RECORD anew (hash and size of the changed file)::

    python scripts/llama_wheel_backends.py built/llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl patched/
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

BINDINGS = "llama_cpp/llama_cpp.py"
MARK = "# hf_rgda: register the CPU backend modules"
PATCH = f"""

{MARK} (scripts/llama_wheel_backends.py). This build loads its CPU kernels at run time
# (GGML_BACKEND_DL): the best module for this CPU is chosen here, as llama.cpp's own programs do at start-up.
_lib.ggml_backend_reg_count.restype = ctypes.c_size_t
if _lib.ggml_backend_reg_count() == 0:
    _lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    _lib.ggml_backend_load_all_from_path(str(_base_path).encode())
"""


def patch_bindings(text: str) -> str:
    """``llama_cpp.py``'s text with the loading call appended (unchanged if it is there already)."""
    if MARK in text:
        return text
    if "_lib = load_shared_library(" not in text or "import ctypes" not in text:
        raise ValueError(f"{BINDINGS} does not open the library as expected: is this llama-cpp-python 0.3.x?")
    return text.rstrip("\n") + "\n" + PATCH


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def patch_wheel(wheel: Path, out_dir: Path) -> Path:
    """Write ``wheel`` with its bindings patched into ``out_dir`` (same file name); returns the new wheel's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel.name
    partial = target.with_suffix(".part")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as dst:
        names = src.namelist()
        record = next((n for n in names if n.endswith(".dist-info/RECORD")), None)
        if BINDINGS not in names or record is None:
            raise ValueError(f"{wheel.name}: no {BINDINGS} or RECORD: not a llama-cpp-python wheel")
        patched = patch_bindings(src.read(BINDINGS).decode()).encode()
        for info in src.infolist():
            if info.filename == record:
                lines = [_record_line(BINDINGS, patched) if line.startswith(BINDINGS + ",") else line
                         for line in src.read(record).decode().splitlines()]
                dst.writestr(info, "\n".join(lines) + "\n")
            else:
                dst.writestr(info, patched if info.filename == BINDINGS else src.read(info.filename))
    partial.replace(target)
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.exit("usage: llama_wheel_backends.py WHEEL OUT_DIR")
    print(patch_wheel(Path(argv[0]), Path(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
