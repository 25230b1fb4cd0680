"""scripts/llama_cpu_variants.py, which setup.sh runs on llama-cpp-python's source before compiling it: only the
named x86-64 CPU backend variants stay in llama.cpp's list, the ARM list and everything else untouched; with the AMX
module kept, its tile configuration becomes a constant (GCC 12 dropped the stores of the one built on the stack)."""

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
        if (NOT MSVC)
            # MSVC doesn't support AMX
            ggml_add_cpu_backend_variant(sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8)
        endif()
    elseif(GGML_SYSTEM_ARCH STREQUAL "ARM")
            ggml_add_cpu_backend_variant(armv8.0_1)
            ggml_add_cpu_backend_variant(sse42)
    endif()
endif()
"""


#: ggml-cpu/amx/mmq.cpp's tile configuration as llama.cpp 0.3.36's vendored copy writes it
MMQ = """inline void ggml_tile_config_init(void) {
    static thread_local bool done = false;

    if (done) {
        return;
    }

    alignas(64) tile_config_t tc = {};
    tc.palette_id = 1;
    tc.start_row = 0;
    tc.rows[0] = 8;   tc.colsb[0] = 64;
    tc.rows[1] = 8;   tc.colsb[1] = 64;
    tc.rows[2] = 16;  tc.colsb[2] = 32;
    tc.rows[3] = 16;  tc.colsb[3] = 32;
    tc.rows[4] = 16;  tc.colsb[4] = 64;
    tc.rows[5] = 16;  tc.colsb[5] = 64;
    tc.rows[6] = 16;  tc.colsb[6] = 64;
    tc.rows[7] = 16;  tc.colsb[7] = 64;

    _tile_loadconfig(&tc);
    done = true;
}
"""


def _tree(tmp_path: Path, mmq: str = MMQ) -> Path:
    (tmp_path / "ggml/src/ggml-cpu/amx").mkdir(parents=True)
    (tmp_path / "ggml/src/CMakeLists.txt").write_text(CMAKE)
    (tmp_path / "ggml/src/ggml-cpu/amx/mmq.cpp").write_text(mmq)
    return tmp_path


def _run(tree: Path, *names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(tree), *names], capture_output=True, text=True, check=False)


def test_only_the_named_x86_variants_stay(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    proc = _run(tree, "x64", "haswell", "zen4")
    assert proc.returncode == 0, proc.stderr
    text = (tree / "ggml/src/CMakeLists.txt").read_text()
    x86 = text[: text.index("elseif")]
    assert "(x64)" in x86 and "(haswell" in x86 and "(zen4" in x86 and "sse42" not in x86 and "ivybridge" not in x86
    assert "sapphirerapids" not in x86
    assert "if (NOT MSVC)\n        endif()" in x86  # the blocks around a removed line stay balanced
    assert text[text.index("elseif"):] == CMAKE[CMAKE.index("elseif"):]  # the ARM list is untouched
    assert "removed: sse42 ivybridge sapphirerapids" in proc.stdout
    assert (tree / "ggml/src/ggml-cpu/amx/mmq.cpp").read_text() == MMQ  # no AMX module: its source left alone


def _tile_config(cpp: str) -> tuple[list[int], list[int]]:
    """The (rows, colsb) of tiles 0-7 a configuration in ``cpp`` sets, stack-built or constant."""
    import re

    if "static const tile_config_t tc" in cpp:
        colsb, rows = (list(map(int, m.split(", ")))[:8] for m in re.findall(r"\{(\d+(?:, \d+){15})\}", cpp))
        return rows, colsb
    pairs = re.findall(r"tc\.rows\[\d\] = (\d+);\s*tc\.colsb\[\d\] = (\d+);", cpp)
    return [int(r) for r, _ in pairs], [int(c) for _, c in pairs]


def test_the_amx_module_gets_a_constant_tile_configuration_of_the_same_shapes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    proc = _run(tree, "x64", "zen4", "sapphirerapids")
    assert proc.returncode == 0, proc.stderr
    cpp = (tree / "ggml/src/ggml-cpu/amx/mmq.cpp").read_text()
    assert "alignas(64) static const tile_config_t tc = {1, 0, {0}," in cpp and "tc.rows[" not in cpp
    assert _tile_config(cpp) == _tile_config(MMQ) == ([8, 8, 16, 16, 16, 16, 16, 16], [64, 64, 32, 32, 64, 64, 64, 64])
    assert cpp.replace(cpp[cpp.index("    alignas"):cpp.index("    _tile_loadconfig")], "") == \
        MMQ.replace(MMQ[MMQ.index("    alignas"):MMQ.index("    _tile_loadconfig")], "")  # nothing else changed
    assert "(sapphirerapids" in (tree / "ggml/src/CMakeLists.txt").read_text()
    assert "AMX tile configuration made constant" in proc.stdout


def test_an_amx_source_of_another_shape_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """A llama.cpp whose tile configuration is not the one this fix knows (a new version) stops the build: the AMX
    module would otherwise be compiled as it is, and crash on the first prompt of every AMX CPU."""
    tree = _tree(tmp_path, MMQ.replace("tc.rows[7] = 16;  tc.colsb[7] = 64;\n", ""))
    proc = _run(tree, "x64", "sapphirerapids")
    assert proc.returncode != 0 and "stack-built configuration not found" in proc.stderr
    assert (tree / "ggml/src/CMakeLists.txt").read_text() == CMAKE


@pytest.mark.parametrize(("names", "message"), [(("haswell",), "keep x64"), (("x64", "zen5"), "unknown variants")])
def test_a_list_without_the_fallback_or_with_an_unknown_name_is_refused(tmp_path: Path, names: tuple[str, ...],
                                                                          message: str) -> None:
    tree = _tree(tmp_path)
    proc = _run(tree, *names)
    assert proc.returncode != 0 and message in proc.stderr
    assert (tree / "ggml/src/CMakeLists.txt").read_text() == CMAKE  # nothing written


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
