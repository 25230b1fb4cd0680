"""Keep only the named x86-64 CPU backend variants in llama.cpp's ``ggml/src/CMakeLists.txt`` (used by setup.sh).

``GGML_CPU_ALL_VARIANTS`` compiles 14 x86 modules; each ``ggml_add_cpu_backend_variant(<name> <features>)`` line of
the x86 list whose name is not given is removed. The ``x64`` fallback must stay: it is what runs on a CPU that no
other variant fits.

    python scripts/llama_cpu_variants.py vendor/llama.cpp/ggml/src/CMakeLists.txt x64 haswell zen4
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


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


def main(argv: list[str]) -> int:
    path, keep = Path(argv[0]), set(argv[1:])
    if "x64" not in keep:
        sys.exit("keep x64: the fallback for a CPU no other variant fits")
    text, kept, removed = keep_variants(path.read_text(), keep)
    if set(kept) != keep:
        sys.exit(f"unknown variants: {sorted(keep - set(kept))} (this llama.cpp has {sorted(set(kept) | set(removed))})")
    path.write_text(text)
    print(f"llama.cpp CPU variants kept: {' '.join(kept)}; removed: {' '.join(removed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
