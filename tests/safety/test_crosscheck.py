"""`retain audit verify` beyond the chain (issue 21, point 3): triggers checked by their SQL, every
record checked against the entry that created it, an emptied log beside records reported."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from retain import HashingEncoder, Memory
from retain.safety.audit import VerifyReport, verify_store
from retain.store import SQLiteStore


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.db"
    with Memory(path, encoder=HashingEncoder(dim=64), state_scorer=False) as mem:
        first = mem.add("The flight to Lisbon leaves at 9am.", namespace="ns")
        mem.add("I prefer window seats.", namespace="ns")
        mem.update(first, "The flight to Lisbon leaves at 10am.", namespace="ns")
    return path


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def _verify(path: Path) -> VerifyReport:
    store = SQLiteStore(path)
    store.setup()
    try:
        return verify_store(store)
    finally:
        store.close()


def test_a_clean_store_verifies_with_every_record_checked(db: Path) -> None:
    report = _verify(db)
    assert report.ok, report.problems
    assert report.records == 3


NOOP_TRIGGERS = (
    "DROP TRIGGER audit_no_update",
    "DROP TRIGGER audit_no_delete",
    "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit WHEN 0 BEGIN SELECT RAISE(ABORT, 'x'); END",
    "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit WHEN 0 BEGIN SELECT RAISE(ABORT, 'x'); END",
)


def test_same_named_no_op_triggers_fail_verify(db: Path) -> None:
    _sql(db, *NOOP_TRIGGERS)
    report = _verify(db)
    assert not report.ok
    assert any("audit_no_delete, audit_no_update missing or altered" in p for p in report.problems)


def test_an_extra_trigger_that_swallows_new_entries_fails_verify(db: Path) -> None:
    _sql(db, "CREATE TRIGGER audit_swallow BEFORE INSERT ON audit BEGIN SELECT RAISE(IGNORE); END")
    report = _verify(db)
    assert not report.ok
    assert any("audit_swallow (unexpected trigger)" in p for p in report.problems)


def test_an_emptied_log_beside_records_fails_verify(db: Path) -> None:
    _sql(db, *NOOP_TRIGGERS[:2], "DELETE FROM audit", "DELETE FROM sqlite_sequence WHERE name = 'audit'")
    _sql(db, *(sql.replace(" WHEN 0", "").replace("'x'", "'audit log is append-only'") for sql in NOOP_TRIGGERS[2:]))
    report = _verify(db)
    assert not report.ok and report.entries == 0
    assert report.problems[0] == "the audit log is empty but the store holds 3 records"


def test_a_record_edited_in_place_fails_verify(db: Path) -> None:
    _sql(db, "UPDATE records SET content = 'I prefer aisle seats.' WHERE content = 'I prefer window seats.'")
    report = _verify(db)
    assert not report.ok
    assert any("content differs from what the log recorded" in p for p in report.problems)
    assert not any("aisle" in p or "window" in p for p in report.problems)  # ids only, never content


def test_a_record_inserted_behind_retains_back_fails_verify(db: Path) -> None:
    conn = sqlite3.connect(db)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(records)") if row[1] != "rowid"]
    listed = ", ".join(columns)
    picked = ", ".join("'01ARZ3NDEKTSV4RRFFQ69G5FAV'" if c == "id" else c for c in columns)
    conn.execute(f"INSERT INTO records ({listed}) SELECT {picked} FROM records LIMIT 1")
    conn.commit()
    conn.close()
    report = _verify(db)
    assert not report.ok
    assert any("01ARZ3NDEKTSV4RRFFQ69G5FAV" in p and "no add / update entry" in p for p in report.problems)
