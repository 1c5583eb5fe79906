"""docs/architecture.md names every package and module under src/retain, so the layout table cannot
fall behind the tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "retain"
DOC = ROOT / "docs" / "architecture.md"


def _unnamed(doc: str) -> list[str]:
    missing = []
    for pkg in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        row = next((line for line in doc.splitlines() if line.startswith(f"| `retain.{pkg.name}` |")), None)
        if row is None:
            missing.append(f"retain.{pkg.name}")
            continue
        for mod in sorted(pkg.glob("*.py")):
            if mod.stem != "__init__" and not re.search(rf"`{mod.stem}`", row):
                missing.append(f"retain.{pkg.name}.{mod.stem}")
    return missing


def test_every_module_is_in_the_layout_table() -> None:
    assert _unnamed(DOC.read_text(encoding="utf-8")) == []


def test_a_module_missing_from_the_table_is_named() -> None:
    doc = DOC.read_text(encoding="utf-8").replace("`lexical`", "`lex`")
    assert "retain.text.lexical" in _unnamed(doc)
