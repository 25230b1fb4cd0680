"""Prepare llama.cpp's source for setup.sh's build with CPU kernels chosen at run time.

1. Keep only the named x86-64 CPU backend variants in ``ggml/src/CMakeLists.txt``: ``GGML_CPU_ALL_VARIANTS``
   compiles 14 x86 modules; each ``ggml_add_cpu_backend_variant(<name> <features>)`` line of the x86 list whose name
   is not given is removed. The ``x64`` fallback must stay: it is what runs on a CPU that no other variant fits.
2. When ``sapphirerapids`` (the AMX module) is kept, make its tile configuration a constant. ggml's
   ``ggml_tile_config_init`` fills a configuration on the stack and hands it to ``ldtilecfg``; GCC 12 does not see
   that instruction read the memory and drops the stores of the tile shapes, so the tiles stay unconfigured and the
   module's first tile instruction raises SIGILL on every AMX CPU (a Sapphire Rapids Xeon: the first prompt of a
   batch of more than one token). A ``static const`` configuration is initialised at compile time, in read-only data.

    python scripts/llama_cpu_variants.py vendor/llama.cpp x64 haswell zen4 sapphirerapids
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

AMX_SOURCE = Path("ggml/src/ggml-cpu/amx/mmq.cpp")
#: the stack-built configuration's stores, in ggml's order (rows, colsb of tiles 0-7)
_TILE_STORES = re.compile(r"^([ \t]*)alignas\(64\) tile_config_t tc = \{\};\n"
                          r"\s*tc\.palette_id = 1;\n\s*tc\.start_row = 0;\n"
                          r"((?:\s*tc\.rows\[\d\] = \d+;\s*tc\.colsb\[\d\] = \d+;\n){8})", re.MULTILINE)


def keep_variants(text: str, keep: set[str]) -> tuple[str, list[str], list[str]]:
    """``text`` with the x86 variant lines not in ``keep`` removed; the kept and removed names."""
    start = text.index('if (GGML_SYSTEM_ARCH STREQUAL "x86")')
    end = text.index("elseif(GGML_SYSTEM_ARCH", start)
    kept: list[str] = []
    removed: list[str] = []

    def line(m: re.Match[str]) -> str:
        (kept if m.group(1) in keep else removed).append(m.group(1))
        return m.group(0) if m.group(1) in keep else ""

    pattern = r"^[ \t]*ggml_add_cpu_backend_variant\((\w+)[^)]*\)[ \t]*\n"
    block = re.sub(pattern, line, text[start:end], flags=re.MULTILINE)
    return text[:start] + block + text[end:], kept, removed


def constant_tile_config(text: str) -> str:
    """``mmq.cpp`` with the stack-built tile configuration replaced by a ``static const`` one of the same shapes.

    >>> src = '''    alignas(64) tile_config_t tc = {};
    ...     tc.palette_id = 1;
    ...     tc.start_row = 0;
    ... ''' + "".join(f"    tc.rows[{i}] = {r};  tc.colsb[{i}] = {c};\\n"
    ...               for i, (r, c) in enumerate([(8, 64)] * 2 + [(16, 32)] * 2 + [(16, 64)] * 4))
    >>> print(constant_tile_config(src))  # doctest: +NORMALIZE_WHITESPACE
        alignas(64) static const tile_config_t tc = {1, 0, {0},
            {64, 64, 32, 32, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
            {8, 8, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0}};  // hf_rgda: a constant (scripts/llama_cpu_variants.py)
    """
    m = _TILE_STORES.search(text)
    if m is None:
        raise ValueError(f"{AMX_SOURCE}: ggml_tile_config_init's stack-built configuration not found")
    shapes = re.findall(r"tc\.rows\[(\d)\] = (\d+);\s*tc\.colsb\[(\d)\] = (\d+);", m.group(2))
    if [int(i) for i, _, j, _ in shapes] != list(range(8)) or any(i != j for i, _, j, _ in shapes):
        raise ValueError(f"{AMX_SOURCE}: unexpected tile order {shapes}")
    rows = [r for _, r, _, _ in shapes] + ["0"] * 8
    colsb = [c for _, _, _, c in shapes] + ["0"] * 8
    indent = m.group(1)
    const = (f"{indent}alignas(64) static const tile_config_t tc = {{1, 0, {{0}},\n"
             f"{indent}    {{{', '.join(colsb)}}},\n"
             f"{indent}    {{{', '.join(rows)}}}}};  // hf_rgda: a constant (scripts/llama_cpu_variants.py)\n")
    return text[:m.start()] + const + text[m.end():]


def main(argv: list[str]) -> int:
    root, keep = Path(argv[0]), set(argv[1:])
    if "x64" not in keep:
        sys.exit("keep x64: the fallback for a CPU no other variant fits")
    cmake = root / "ggml/src/CMakeLists.txt"
    text, kept, removed = keep_variants(cmake.read_text(), keep)
    if set(kept) != keep:
        sys.exit(f"unknown variants: {sorted(keep - set(kept))} (this llama.cpp has {sorted(set(kept) | set(removed))})")
    amx = None
    if "sapphirerapids" in keep:
        try:
            amx = constant_tile_config((root / AMX_SOURCE).read_text())
        except (OSError, ValueError) as e:
            sys.exit(f"the AMX module cannot be built safely: {e}")
    cmake.write_text(text)
    if amx is not None:
        (root / AMX_SOURCE).write_text(amx)
    print(f"llama.cpp CPU variants kept: {' '.join(kept)}; removed: {' '.join(removed)}"
          + ("; AMX tile configuration made constant" if amx is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
