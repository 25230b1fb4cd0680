"""The CPU kernels the local engine runs on, chosen at run time (:func:`load_cpu_backends`).

``scripts/setup.sh`` builds llama.cpp with ``GGML_BACKEND_DL`` and
``GGML_CPU_ALL_VARIANTS``, the list cut to seven x86-64 levels (``x64``, ``haswell``, ``alderlake``, ``skylakex``,
``icelake``, ``zen4``, ``sapphirerapids``: AMX tiles for prompts, its tile configuration made a constant first;
``scripts/llama_cpu_variants.py``): one CPU backend module per level
(``libggml-cpu-haswell.so``, ...) installed next to ``libllama`` (``scripts/llama_cpu_variants.cmake``). Nothing in
llama-cpp-python loads them (setup.sh adds the call to the bindings of the wheel it installs,
``scripts/llama_wheel_backends.py``, for ``llama_cpp.server`` and users' own scripts; a wheel built otherwise lacks
it), and llama.cpp's default search looks beside the executable (Python's) and in the working directory, so
:func:`load_cpu_backends` calls ``ggml_backend_load_all_from_path`` on llama-cpp-python's library folder once, before
the first model, in the libggml that libllama links: ggml scores each variant against the CPU and loads the best
(``GGML_BACKEND_PATH`` adds one more module, as in llama.cpp). A build without variants (the CPU
backend linked in) needs nothing and is left alone. :func:`load_cpu_variant` registers one module of the user's choice
instead (to time or test one level's kernels on a CPU that has a better one).
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

__all__ = ["cpu_backend", "cpu_variants", "load_cpu_backends", "load_cpu_variant"]


_backends_lock = threading.Lock()
_backends_loaded: list[str] = []


def _lib_dir() -> Path:
    """The folder llama-cpp-python loaded libllama from (its package's ``lib``, or ``LLAMA_CPP_LIB_PATH``)."""
    from llama_cpp import llama_cpp as bindings

    return Path(bindings._base_path)


def cpu_variants(lib_dir: Path | None = None) -> list[str]:
    """The CPU backend variant modules installed next to libllama (empty for a build with the CPU backend linked in)."""
    return sorted(p.name for p in (lib_dir or _lib_dir()).glob("libggml-cpu-*.so"))


def load_cpu_backends() -> list[str]:
    """Load the best CPU backend variant once per process when the build has them (``GGML_BACKEND_DL``).

    Returns the names of the registered backends (``["CPU"]`` once loaded; empty for a build without variants).
    """
    with _backends_lock:
        if _backends_loaded:
            return list(_backends_loaded)
        lib = _lib_dir()
        if not cpu_variants(lib):
            return []
        # through libllama's handle: a wheel holds copies, not links, so libggml.so (what llama_cpp._ggml opens) and
        # libggml.so.0 (what libllama needs) are two libraries with two backend registries; dlsym on libllama's
        # handle finds the one libllama uses
        from llama_cpp import llama_cpp as bindings

        ggml = bindings._lib
        ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
        if ggml.ggml_backend_reg_count() == 0:
            ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
            ggml.ggml_backend_load_all_from_path(str(lib).encode())
        ggml.ggml_backend_reg_get.restype = ctypes.c_void_p
        ggml.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
        ggml.ggml_backend_reg_name.restype = ctypes.c_char_p
        ggml.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
        names = [ggml.ggml_backend_reg_name(ggml.ggml_backend_reg_get(i)).decode()
                 for i in range(ggml.ggml_backend_reg_count())]
        _backends_loaded.extend(names)
        return names


def load_cpu_variant(module: str) -> list[str]:
    """Register one CPU backend variant module (``libggml-cpu-zen4.so``, ...) alone, as ggml would on a CPU where it
    scores best: to run or time one level's kernels on a machine that has a better one (benchmarks, tests).

    Must come before ``llama_cpp`` is imported: the bindings setup.sh installs register the best module on import,
    and the first CPU backend registered is the one models run on. libllama is opened here first from the folder
    llama-cpp-python will open it from (the same file, so the same library and backend registry).
    """
    import importlib.util
    import sys

    if "llama_cpp.llama_cpp" in sys.modules:
        raise RuntimeError("load_cpu_variant must run before llama_cpp is imported (its import registers the best "
                           "CPU module)")
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    spec = importlib.util.find_spec("llama_cpp")
    if override is None and (spec is None or spec.origin is None):
        raise RuntimeError("llama_cpp is not installed")
    lib = Path(override) if override is not None else Path(spec.origin).parent / "lib"
    if not (lib / module).is_file():
        raise ValueError(f"{module} is not in {lib} (modules there: {', '.join(cpu_variants(lib)) or 'none'})")
    ggml = ctypes.CDLL(str(lib / "libllama.so"))  # as llama_cpp opens it on Linux (RTLD_LOCAL)
    ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load.restype = ctypes.c_void_p
    if not ggml.ggml_backend_load(str(lib / module).encode()):
        raise RuntimeError(f"ggml could not load {lib / module} (does this CPU have its instructions?)")
    return load_cpu_backends()


def cpu_backend() -> dict[str, Any]:
    """What the engine runs on: the variant modules installed and the CPU features ggml's loaded backend uses."""
    import llama_cpp

    return {"variants": cpu_variants(), "registered": load_cpu_backends(),
            "system_info": llama_cpp.llama_print_system_info().decode(errors="replace")}
