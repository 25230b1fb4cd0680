"""scripts/llama_cpu_variants.py, which setup.sh runs on llama-cpp-python's source before compiling it: only the
named x86-64 CPU backend variants stay in llama.cpp's list, the ARM list and everything else untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "llama_cpu_variants.py"

CMAKE = """if (GGML_CPU_ALL_VARIANTS)
    if (GGML_SYSTEM_ARCH STREQUAL "x86")
        ggml_add_cpu_backend_variant(x64)
        ggml_add_cpu_backend_variant(sse42              SSE42)
        if (NOT MSVC)
            ggml_add_cpu_backend_variant(ivybridge      SSE42 AVX F16C)
        endif()
        ggml_add_cpu_backend_variant(haswell            SSE42 AVX F16C FMA AVX2 BMI2)
        ggml_add_cpu_backend_variant(zen4           SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16)
    elseif(GGML_SYSTEM_ARCH STREQUAL "ARM")
            ggml_add_cpu_backend_variant(armv8.0_1)
            ggml_add_cpu_backend_variant(sse42)
    endif()
endif()
"""


def _run(tmp_path: Path, *names: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "CMakeLists.txt"
    path.write_text(CMAKE)
    return subprocess.run([sys.executable, str(SCRIPT), str(path), *names], capture_output=True, text=True, check=False)


def test_only_the_named_x86_variants_stay(tmp_path: Path) -> None:
    proc = _run(tmp_path, "x64", "haswell", "zen4")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "CMakeLists.txt").read_text()
    x86 = text[: text.index("elseif")]
    assert "(x64)" in x86 and "(haswell" in x86 and "(zen4" in x86 and "sse42" not in x86 and "ivybridge" not in x86
    assert "if (NOT MSVC)\n        endif()" in x86  # the blocks around a removed line stay balanced
    assert text[text.index("elseif"):] == CMAKE[CMAKE.index("elseif"):]  # the ARM list is untouched
    assert "removed: sse42 ivybridge" in proc.stdout


@pytest.mark.parametrize(("names", "message"), [(("haswell",), "keep x64"), (("x64", "zen5"), "unknown variants")])
def test_a_list_without_the_fallback_or_with_an_unknown_name_is_refused(tmp_path: Path, names: tuple[str, ...],
                                                                          message: str) -> None:
    proc = _run(tmp_path, *names)
    assert proc.returncode != 0 and message in proc.stderr
    assert (tmp_path / "CMakeLists.txt").read_text() == CMAKE  # nothing written


def test_the_wheel_patch_makes_the_bindings_load_the_backends_and_keeps_record_true(tmp_path: Path) -> None:
    """scripts/llama_wheel_backends.py: llama-cpp-python never loads a GGML_BACKEND_DL build's CPU modules, so
    ``python -m llama_cpp.server`` failed with "no backends are loaded" (CI of stop 36); the installed wheel's
    bindings now load them, and pip's RECORD check still holds for the changed file."""
    import base64
    import hashlib
    import importlib.util
    import zipfile

    spec = importlib.util.spec_from_file_location("wheel_backends", SCRIPT.parent / "llama_wheel_backends.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bindings = "import ctypes\n_base_path = 'lib'\n_lib = load_shared_library('llama', _base_path)\n"
    wheel = tmp_path / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("llama_cpp/llama_cpp.py", bindings)
        z.writestr("llama_cpp/lib/libllama.so", b"\x7fELF")
        z.writestr("llama_cpp_python-0.3.36.dist-info/RECORD",
                   "llama_cpp/llama_cpp.py,sha256=old,70\nllama_cpp/lib/libllama.so,sha256=x,4\n"
                   "llama_cpp_python-0.3.36.dist-info/RECORD,,\n")
    out = mod.patch_wheel(wheel, tmp_path / "out")
    with zipfile.ZipFile(out) as z:
        text = z.read("llama_cpp/llama_cpp.py")
        record = z.read("llama_cpp_python-0.3.36.dist-info/RECORD").decode().splitlines()
        assert z.read("llama_cpp/lib/libllama.so") == b"\x7fELF"
    assert text.decode().startswith(bindings) and b"ggml_backend_load_all_from_path(str(_base_path).encode())" in text
    digest = base64.urlsafe_b64encode(hashlib.sha256(text).digest()).rstrip(b"=").decode()
    assert record == [f"llama_cpp/llama_cpp.py,sha256={digest},{len(text)}", "llama_cpp/lib/libllama.so,sha256=x,4",
                      "llama_cpp_python-0.3.36.dist-info/RECORD,,"]
    assert mod.patch_bindings(text.decode()) == text.decode()  # patching twice changes nothing
    with pytest.raises(ValueError, match="does not open the library"):
        mod.patch_bindings("print('not the bindings')\n")
