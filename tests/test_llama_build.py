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
