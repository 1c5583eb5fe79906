"""The package's shape: no import cycle among the modules under src/retain, no file over 600 lines,
no function over 80 lines (docstrings not counted). The import graph is built with ``ast`` from every import statement,
those under ``if TYPE_CHECKING:`` and inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "retain"
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``name`` imports anywhere in its file."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against this module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)  # `from pkg import mod`
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_sees_type_checking_and_function_imports() -> None:
    graph = _graph()
    assert "retain.core" in graph["retain.safety.integrity"]  # under `if TYPE_CHECKING:`
    assert "retain.sequence.episodes" in graph["retain.retrieval.search"]  # inside a function
    assert "retain.retrieval.graph" in graph["retain.memory"]  # `from retain.retrieval import graph`


def test_the_cycle_finder_names_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_file_over_600_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert not long, f"files over {MAX_FILE_LINES} lines: {long}"


def test_no_function_over_80_lines() -> None:
    long: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                doc = node.body[0]
                if (
                    isinstance(doc, ast.Expr)
                    and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)
                ):
                    size -= (doc.end_lineno or doc.lineno) - doc.lineno + 1  # a docstring is not code
                if size > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.lineno} {node.name}"] = size
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


OLD_FLAT_MODULES = [
    "audit",
    "basis",
    "budget",
    "canary",
    "classify",
    "cli",
    "cli_audit",
    "cli_observe",
    "cli_options",
    "cli_records",
    "cli_scenarios",
    "cli_segments",
    "cli_utility",
    "conflict",
    "constraints",
    "context",
    "cues",
    "episodes",
    "graph",
    "handoff",
    "incremental",
    "ingest",
    "integrity",
    "kernels",
    "knapsack",
    "lagrangian",
    "lexical",
    "linear",
    "observe",
    "pool",
    "privacy",
    "redaction",
    "retention",
    "retrieve",
    "sam",
    "segments",
    "state",
    "temporal",
    "tiling",
    "timeline",
    "utility",
    "values",
]
"""The flat modules of retain before it was split into one package per idea."""


@pytest.mark.parametrize("name", OLD_FLAT_MODULES)
def test_an_old_flat_module_path_is_gone(name: str) -> None:
    import importlib

    try:
        module = importlib.import_module(f"retain.{name}")
    except ModuleNotFoundError as exc:
        assert exc.name == f"retain.{name}"
    else:  # the name is a package of the new layout now (cli, ingest, retention, state), not the old module
        assert hasattr(module, "__path__"), f"retain.{name} is still a module"
