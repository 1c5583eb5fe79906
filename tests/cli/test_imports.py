"""retain.cli imports in one direction: app -> command modules -> common helpers (common, options).

Every import counts, function-level and ``TYPE_CHECKING`` ones included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import retain.cli

PACKAGE = Path(retain.cli.__file__).parent
HELPERS = {"common", "options"}
ROOT = "app"


def _cli_imports(path: Path) -> set[str]:
    """The retain.cli modules that the module at ``path`` imports (by short name)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "retain.cli":
                found |= {alias.name for alias in node.names}
            elif module.startswith("retain.cli."):
                found.add(module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names if a.name.startswith("retain.cli.")}
    return found - {path.stem}


MODULES = {p.stem: _cli_imports(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}


def test_helpers_import_no_other_cli_module():
    for name in HELPERS:
        assert MODULES[name] == set(), f"retain.cli.{name} imports {MODULES[name]}"


def test_command_modules_import_only_the_helpers():
    commands = set(MODULES) - HELPERS - {ROOT}
    assert {"memories", "records", "audit", "observe", "evaluate", "scenarios"} <= commands
    for name in commands:
        assert MODULES[name] <= HELPERS, f"retain.cli.{name} imports {MODULES[name] - HELPERS}"


def test_only_app_assembles_and_nothing_imports_it():
    assert set(MODULES) - HELPERS - {ROOT} <= MODULES[ROOT]  # every command module is added to the app
    assert not [name for name, imports in MODULES.items() if ROOT in imports]
