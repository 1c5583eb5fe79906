"""The budget page's budget-performance curve of the last evaluation: read from ``--eval-json`` or
``<store file>.eval.json``, drawn as SVG with a table of the budgeted runs; a missing, unreadable or
unbudgeted report is said in words, never a 500."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from retain.encoders.basis import HashingEncoder
from retain.memory import Memory
from retain.ui.app import create_app
from retain.ui.auth import local_admin
from retain.ui.evaluation import curves, default_path
from ui.fill import EVAL_REPORT

pytest.importorskip("jinja2")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    with Memory(path, encoder=HashingEncoder(64), state_scorer=False) as mem:
        mem.add("The budget must stay under 5000 EUR", namespace="trip", type="hard_constraint")
    return path


def budget_page(db: Path, eval_json: Path | None = None) -> str:
    mem = Memory(db, encoder=HashingEncoder(64), state_scorer=False)
    try:
        response = TestClient(create_app(mem, local_admin, eval_json=eval_json)).get("/budget?ns=trip")
    finally:
        mem.close()
    assert response.status_code == 200, response.text
    return response.text


def test_the_default_report_beside_the_store_is_drawn(db: Path) -> None:
    path = default_path(str(db))
    assert path == db.with_name("store.db.eval.json")
    assert "No evaluation report" in budget_page(db)
    path.write_text(json.dumps(EVAL_REPORT), encoding="utf-8")
    html = budget_page(db)
    assert 'aria-label="recall@10 (hot memory) against the budget"' in html
    assert 'aria-label="hit rate (evidence held) against the budget"' in html
    assert html.count("<circle") == 2 * 6  # two policies x three budgets, on both charts
    assert "<td>utility</td><td>0.25</td><td>0.61</td><td>0.7</td>" in html
    assert "locomo:locomo_dev.json" in html


def test_an_explicit_report_wins_and_bad_reports_are_named(db: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.json"
    other.write_text(json.dumps(EVAL_REPORT), encoding="utf-8")
    assert "<circle" in budget_page(db, other)
    other.write_text("{not json", encoding="utf-8")
    assert "cannot be read" in budget_page(db, other)
    unbudgeted = {"dataset": "x", "runs": [{"policy": "full", "budget": 1.0, "retriever": "rrf", "recall@10": 0.9}]}
    other.write_text(json.dumps(unbudgeted), encoding="utf-8")
    assert "has no budgeted runs" in budget_page(db, other)
    other.write_text(json.dumps({"runs": "many"}), encoding="utf-8")
    assert curves(other)["status"] == "unreadable"
    assert curves(None)["status"] == "none" and default_path(":memory:") is None


def test_markup_in_a_report_is_escaped(db: Path, tmp_path: Path) -> None:
    evil = {"dataset": "<script>x</script>", "runs": [{"policy": "<b>p</b>", "budget": 0.5, "recall@10": 0.5}]}
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(evil), encoding="utf-8")
    html = budget_page(db, path)
    assert "<script>x</script>" not in html and "<b>p</b>" not in html and "&lt;b&gt;p&lt;/b&gt;" in html
