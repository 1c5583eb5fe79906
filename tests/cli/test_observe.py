"""CLI: retain context / explain / add-canary / check, and the global --log option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from retain import HashingEncoder, Memory
from retain.cli.app import app

runner = CliRunner()
NS = "cli-obs"
SECRET = "plover-5521"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    monkeypatch.delenv("RETAIN_LOG", raising=False)
    path = tmp_path / "cli.db"
    monkeypatch.setenv("RETAIN_DB", str(path))
    with Memory(path, encoder=HashingEncoder(64)) as mem:
        mem.add("Keep the total under 900 EUR.", namespace=NS, type="hard_constraint", source="chat:1")
        mem.add_many(
            [{"content": f"Day {i}: the ferry to the island left late.", "source": f"chat:{i}"} for i in range(8)],
            namespace=NS,
        )
    return path


def test_context_then_explain_table_and_json(db: Path) -> None:
    packed = runner.invoke(app, ["context", "ferry island", "-n", NS, "--budget", "40", "-k", "6", "--json"])
    assert packed.exit_code == 0, packed.output
    doc = json.loads(packed.stdout)
    assert doc["text"].startswith("[constraint] Keep the total under 900 EUR.")
    assert doc["used_tokens"] <= 40 and doc["left_out"]

    table = runner.invoke(app, ["explain", doc["id"]])
    assert table.exit_code == 0, table.output
    for item in doc["items"]:
        assert item["record_id"] in table.stdout
    assert "left out" in table.stdout and "budget" in table.stdout and "chat:" in table.stdout
    assert "hard_constraint" in table.stdout and "ferry island" in table.stdout

    as_json = runner.invoke(app, ["explain", doc["id"], "--json"])
    assert as_json.exit_code == 0
    assert json.loads(as_json.stdout) == {k: v for k, v in doc.items() if k != "text"}

    plain = runner.invoke(app, ["context", "ferry", "-n", NS, "--budget", "40"])
    assert plain.exit_code == 0 and plain.stdout.startswith("[constraint]") and "provenance:" in plain.stderr


def test_explain_and_context_errors(db: Path) -> None:
    missing = runner.invoke(app, ["explain", "01NOTTHERE"])
    assert missing.exit_code == 2 and "no context provenance" in missing.stderr
    tight = runner.invoke(app, ["context", "ferry", "-n", NS, "--budget", "3"])
    assert tight.exit_code == 2 and "fits budget_tokens=3" in tight.stderr
    nostore = runner.invoke(app, ["explain", "X", "--db", str(db.parent / "absent.db")])
    assert nostore.exit_code == 2 and "no store" in nostore.stderr


def test_add_canary_and_check(db: Path) -> None:
    planted = runner.invoke(app, ["add-canary", "Canary 1a2b: violet umbrella.", "-n", NS])
    assert planted.exit_code == 0, planted.output
    cid = planted.stdout.strip()
    ok = runner.invoke(app, ["check"])
    assert ok.exit_code == 0 and "ok: 1 canaries" in ok.stdout and cid in ok.stdout
    again = runner.invoke(app, ["add-canary", "Canary 1a2b: violet umbrella.", "-n", NS])
    assert again.exit_code == 2 and "already held" in again.stderr
    with Memory(db, encoder=HashingEncoder(64)) as mem:
        mem.delete(cid, namespace=NS)
    failed = runner.invoke(app, ["check", "-n", NS])
    assert failed.exit_code == 1
    assert f"missing  {NS}  {cid}" in failed.stdout and "FAILED: 0 held, 1 missing" in failed.stdout


@pytest.mark.parametrize("how", ["option", "env"])
def test_global_log_option_writes_json_lines_without_content(
    db: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    args = ["add", f"The locker code is {SECRET}.", "-n", NS]
    if how == "option":
        args = ["--log", "json", *args]
    else:
        monkeypatch.setenv("RETAIN_LOG", "json")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stderr.splitlines()]
    assert [e["event"] for e in events] == ["add"]
    assert events[0]["ids"] == [result.stdout.strip()] and events[0]["namespace"] == NS
    assert SECRET not in result.stderr


def test_bad_log_value_is_refused(db: Path) -> None:
    result = runner.invoke(app, ["--log", "xml", "info"])
    assert result.exit_code == 2 and "xml" in result.output


def test_no_log_without_the_option(db: Path) -> None:
    result = runner.invoke(app, ["search", "ferry", "-n", NS, "--json"])
    assert result.exit_code == 0 and result.stderr == ""


@pytest.fixture
def db384(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store whose encoder fits the shipped state scorer (384 dims), with phase-tagged records."""
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-384")
    path = tmp_path / "state.db"
    monkeypatch.setenv("RETAIN_DB", str(path))
    with Memory(path, encoder=HashingEncoder(384)) as mem:
        mem.add("Keep the total under 900 EUR.", namespace=NS, type="hard_constraint")
        mem.add("Hotel Miramar has a sea view room at 180 EUR.", namespace=NS, state={"phase": "book_hotel"})
        for i in range(6):
            mem.add(f"Museum note {i}: the gallery opens at ten.", namespace=NS, state={"phase": "plan_museums"})
    return path


def test_context_and_search_take_a_state(db384: Path) -> None:
    state = json.dumps({"phase": "book_hotel", "subgoals": ["book the sea view room"]})
    packed = runner.invoke(app, ["context", "ok, continue", "-n", NS, "--budget", "60", "--json", "--state", state])
    assert packed.exit_code == 0, packed.output
    doc = json.loads(packed.stdout)
    assert doc["state"]["phase"] == "book_hotel"
    assert "Miramar" in doc["text"] and "900 EUR" in doc["text"]  # the phase's record and the constraint
    found = runner.invoke(app, ["search", "ok, continue", "-n", NS, "-k", "3", "--json", "--state", state])
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert all("state" in h["scores"] for h in hits)  # the state-adaptive breakdown is there
    assert "Miramar" in hits[0]["record"]["content"]
    without = json.loads(runner.invoke(app, ["search", "ok, continue", "-n", NS, "-k", "3", "--json"]).stdout)
    assert all("state" not in h["scores"] for h in without)


@pytest.mark.parametrize(
    ("value", "message"),
    [("{not json", "--state: not valid JSON"), ("[1, 2]", "must be a JSON object"), ("@/no/such/file", "cannot read")],
)
def test_bad_state_is_refused_at_the_boundary(db384: Path, value: str, message: str) -> None:
    result = runner.invoke(app, ["search", "hotel", "-n", NS, "--state", value])
    assert result.exit_code != 0 and message in result.output


def test_a_misspelt_state_key_is_kept_but_warned_about(db384: Path) -> None:
    result = runner.invoke(app, ["search", "hotel", "-n", NS, "--state", '{"phase": "book_hotel", "subgoal": ["x"]}'])
    assert result.exit_code == 0
    assert "did you mean 'subgoals'" in result.stderr
    quiet = runner.invoke(app, ["search", "hotel", "-n", NS, "--state", '{"phase": "book_hotel", "mood": "calm"}'])
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


def test_search_table_shows_the_state_breakdown_only_for_a_state_search(db384: Path) -> None:
    state = json.dumps({"phase": "book_hotel", "subgoals": ["book the sea view room"]})
    wide = {"COLUMNS": "250"}  # room for every column: rich would otherwise squeeze headers
    stated = runner.invoke(app, ["search", "ok, continue", "-n", NS, "-k", "3", "--state", state], env=wide)
    assert stated.exit_code == 0, stated.output
    header = next(line for line in stated.stdout.splitlines() if "rank" in line)
    assert [c for c in ("alpha", "content", "state", "prior") if c in header] == ["alpha", "content", "state", "prior"]
    alpha = json.loads(
        runner.invoke(app, ["search", "ok, continue", "-n", NS, "-k", "1", "--json", "--state", state]).stdout
    )[0]["scores"]["alpha"]
    assert f"{alpha:.3f}" in stated.stdout  # the value, not only the header
    plain = runner.invoke(app, ["search", "ok, continue", "-n", NS, "-k", "3"], env=wide)
    header = next(line for line in plain.stdout.splitlines() if "rank" in line)
    assert "alpha" not in header and "prior" not in header
