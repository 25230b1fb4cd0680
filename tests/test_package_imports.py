"""Edges inside the package: no module imports the package root (a cycle through ``hf_rgda/__init__.py``) or a
private name of another module (lazy imports included)."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import hf_rgda

PKG = Path(hf_rgda.__file__).resolve().parent


def _imports() -> Iterator[tuple[str, str, str | None]]:
    """(importing module, imported module, imported name or None) for every import statement in the package."""
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if path.name == "__init__.py" else parts)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                yield from ((module, base, a.name) for a in node.names)
            elif isinstance(node, ast.Import):
                yield from ((module, a.name, None) for a in node.names)


def test_no_module_imports_the_package_root() -> None:
    bad = [(m, name) for m, base, name in _imports() if base == "hf_rgda" and m != "hf_rgda"
           and (name is None or importlib.util.find_spec(f"hf_rgda.{name}") is None)]
    assert bad == []


def test_no_module_imports_a_private_name_of_another() -> None:
    bad = [(m, f"{base}.{name}") for m, base, name in _imports() if base.startswith("hf_rgda") and name
           and name.startswith("_") and not name.startswith("__")]
    assert bad == []
