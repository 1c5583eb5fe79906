"""Bad input at the public boundary: refused with a clear error, nothing stored lost.

Store paths whose folder does not exist, queries over the length limit, unknown state parts, and
record filters whose ``seqs`` / ``segments`` the in-memory namespace index and the SQL of the SQLite
backend used to read differently.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from retain import HashingEncoder, InvalidInput, Memory
from retain.cli.app import app
from retain.state.agent import AgentState

NS = "n"
runner = CliRunner()


# --- 1. a store path whose folder does not exist ------------------------------------------------


@pytest.mark.parametrize("command", [["add", "The museum opens at nine."], ["add-canary", "Canary 7f3: heron."]])
def test_cli_refuses_a_db_whose_folder_does_not_exist(tmp_path, monkeypatch, command):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    db = tmp_path / "missing" / "x.db"
    result = runner.invoke(app, [*command, "-n", NS, "--db", str(db)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert f"{tmp_path / 'missing'}" in result.output and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_cli_import_refuses_a_db_whose_folder_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"content": "The museum opens at nine."}\n', encoding="utf-8")
    result = runner.invoke(app, ["import", str(lines), "-n", NS, "--db", str(tmp_path / "missing" / "x.db")])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_cli_read_command_on_a_missing_folder_names_the_folder_not_add_a_memory_first(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    result = runner.invoke(app, ["info", "--db", str(tmp_path / "missing" / "x.db")])
    assert result.exit_code == 2
    assert "does not exist" in result.output and "add a memory first" not in result.output


def test_cli_trace_of_a_scenario_without_probes_says_so(tmp_path):
    path = tmp_path / "s.json"
    doc = {
        "format": "retain-scenario/1",
        "id": "no-probes-001",
        "events": [{"id": "e1", "t": "2026-03-01T09:00:00Z", "role": "user", "text": "Budget under 5000 EUR."}],
        "probes": [],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["trace", str(path), "--encoder", "hashing-384"])
    assert result.exit_code == 0, result.output
    assert "has no probes" in result.output


# --- 2. query length ----------------------------------------------------------------------------


# --- 3. STATE_PARTS -----------------------------------------------------------------------------


STATE = {"phase": "book_flights", "subgoals": ["pick a flight"], "last_result": "found 3 flights"}


# --- 4. RecordFilter seqs / segments: the namespace index and SQL agree --------------------------


class _Unprintable:
    """A caller's object whose ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("boom")

    __repr__ = __str__


class _Printable:
    def __str__(self) -> str:
        return "window seat"


@pytest.mark.parametrize(
    "state",
    [
        {"phase": _Unprintable()},
        {"subgoals": [_Unprintable()]},
        {"constraints": {"seat": _Unprintable()}},
        {"constraints": {_Unprintable(): "x"}},
        {"features": {"k": _Unprintable()}},
        {"features": {_Unprintable(): 1}},
        {_Unprintable(): "an unknown key"},
    ],
)
def test_a_state_value_or_key_whose_str_raises_is_refused_by_search_add_and_context(state: dict) -> None:
    m = Memory(":memory:", encoder=HashingEncoder(64))
    m.add("The hotel is near the river.", namespace=NS)
    with pytest.raises(InvalidInput, match="state"):
        m.search("hotel", namespace=NS, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.add("Dinner is booked for eight.", namespace=NS, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.context("hotel", namespace=NS, state=state, budget_tokens=100)
    with pytest.raises(InvalidInput, match="str\\(\\) raised RuntimeError"):
        AgentState.from_dict(state)
    assert len(m.records(namespace=NS)) == 1  # the refused add wrote nothing


def test_a_state_object_with_a_working_str_is_still_rendered_as_text() -> None:
    assert AgentState.from_dict({"phase": _Printable(), "features": {"seat": _Printable()}}).phase == '"window seat"'
