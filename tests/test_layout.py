"""The package's shape: no import cycle (function-level imports included), no module too long to read, lint."""

from __future__ import annotations

import ast
from pathlib import Path

import hf_rgda

PACKAGE = Path(hf_rgda.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every hf_rgda module ``path`` imports, at the top or inside a function (``TYPE_CHECKING`` blocks excluded)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    files = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {_module_name(p) for p in files}
    return {_module_name(p): _imports(p, modules) for p in files}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            # a package importing its own submodules (re-exports) is not a cycle of the design
            if n.startswith(m + "."):
                continue
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if not state.get(n) and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if not state.get(m) and (found := visit(m)):
            return found
    return None


def test_no_import_cycle() -> None:
    # the root only re-exports; that no module imports it is tests/test_package_imports.py's rule
    graph = {m: deps - {"hf_rgda"} for m, deps in _graph().items() if m != "hf_rgda"}
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_no_module_a_reader_must_scroll_through() -> None:
    lengths = {_module_name(p): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    long = {m: n for m, n in lengths.items() if n > 450}
    assert not long, long


def test_stages_are_declared_where_they_live() -> None:
    """A new stage is its module and its prompt: the stage package imports its modules by discovery (no list of them:
    its ``__init__`` names only the registry and the shared base), every stage is declared in one of them, every
    stage that writes a prompt or makes calls scripts its answer for the scripted world, every plan names declared
    stages only, and every prompt file is a declared stage's (its system prompt, or rendered by its code: the debate
    reviewers' ``debate_review``) or a documented shared one."""
    import importlib

    from hf_rgda import prompts, stages

    folder = PACKAGE / "stages"
    found = {f"hf_rgda.stages.{p.stem}" for p in folder.glob("*.py") if p.name != "__init__.py"}
    assert set(stages.MODULES) == found
    init = ast.parse((folder / "__init__.py").read_text())
    named = {n.module for n in ast.walk(init) if isinstance(n, ast.ImportFrom) and n.level}
    assert named <= {"base", "registry"}, f"stages/__init__.py names stage modules by hand: {named}"
    declared_in = {m: importlib.import_module(m) for m in stages.MODULES}
    for name, stage in stages.STAGES.items():
        where = {f.__module__ for f in (stage.build, stage.state, stage.step, stage.scripted, stage.system)
                 if f is not None and f.__module__.startswith("hf_rgda.stages.")}
        assert where and where <= set(declared_in), f"stage {name!r} is declared outside hf_rgda/stages/: {where}"
        if stage.system is not None or stage.build is not None or stage.judge:
            assert stage.scripted is not None, f"stage {name!r} makes calls but scripts no answer"
    for method, plan in stages.PLANS.items():
        assert set(plan) <= set(stages.STAGES), (method, set(plan) - set(stages.STAGES))
    files = {p.stem for p in (PACKAGE / "prompts").glob("*.md")}
    assert set(prompts.names()) == files
    with_system = {name for name, s in stages.STAGES.items() if s.system is not None}
    assert with_system <= files, with_system - files
    orphans = files - set(stages.STAGES) - set(prompts.SHARED)  # a stage's prompt may be rendered by its own code
    assert not orphans, f"prompt files that are no stage's and not in prompts.SHARED: {sorted(orphans)}"
    assert set(prompts.SHARED) <= files, set(prompts.SHARED) - files
    assert not set(prompts.SHARED) & set(stages.STAGES), "a stage's own prompt listed as shared"


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_ruff_is_clean() -> None:
    """The linter's default rules (configured in pyproject.toml) pass on every Python file of the repository."""
    import subprocess
    import sys

    root = PACKAGE.parent
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "hf_rgda", "tests", "benchmarks", "spaces",
                           "scripts"],
                          cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_benchmarks_use_public_names_and_leave_the_import_path_alone() -> None:
    """The benchmarks are a package run with ``python -m benchmarks.<name>``: none edits ``sys.path``, and none imports
    a name starting with ``_`` (a module or an object) from the library or from another benchmark."""
    private: list[str] = []
    for path in sorted((PACKAGE.parent / "benchmarks").glob("*.py")):
        text = path.read_text()
        assert "sys.path" not in text, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in (
                    "hf_rgda", "benchmarks")):
                names = [*(node.module or "").split("."), *(a.name for a in node.names)]
                private += [f"{path.name}:{node.lineno} {n}" for n in names if n.startswith("_") and n != "__future__"]
            elif isinstance(node, ast.Import):
                private += [f"{path.name}:{node.lineno} {a.name}" for a in node.names
                            if a.name.split(".")[0] in ("hf_rgda", "benchmarks") and any(
                                p.startswith("_") for p in a.name.split("."))]
    assert not private, private


def test_the_backends_import_nothing_above_them() -> None:
    """``hf_rgda.llm`` is the floor of the house: its modules import one another and the leaf helpers (errors,
    secrets) only, never the calls, stages or pipeline that use them (a backend that needs a call's metadata takes it
    in the call's parameters)."""
    leaves = {"hf_rgda._exceptions", "hf_rgda._secrets"}
    up = {m: sorted(d - leaves) for m, d in _graph().items() if m.startswith("hf_rgda.llm")
          for d in [{x for x in d if not x.startswith("hf_rgda.llm")}] if d - leaves}
    assert not up, up


def test_the_local_backend_is_one_package_with_one_face() -> None:
    """The local engine lives in ``hf_rgda/llm/local/`` and the rest of the package reaches it through the package
    itself (``hf_rgda.llm.local``), never through one of its modules."""
    graph = _graph()
    llm_modules = {m for m in graph if m.startswith("hf_rgda.llm.") and m.count(".") == 2}
    assert "hf_rgda.llm.local" in llm_modules and (PACKAGE / "llm" / "local" / "__init__.py").is_file()
    inside = [f"{m} -> {d}" for m, deps in graph.items() if not m.startswith("hf_rgda.llm.local")
              for d in deps if d.startswith("hf_rgda.llm.local.")]
    assert not inside, inside
