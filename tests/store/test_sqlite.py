"""Properties of the SQLite backend beyond the contract: its file, schema version, triggers and caches.

The contract itself is checked by the conformance suite (tests/store/test_conformance.py).
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from retain.errors import SchemaError
from retain.record import MemoryRecord, MemoryType, Tier, new_id
from retain.store import GENESIS_HASH, AppendAudit, AuditEntry, RecordFilter, SQLiteStore, Store, audit_hash
from retain.store.conformance.helpers import DIM, T0, ids, make, unit
from retain.store.sqlite import SCHEMA_VERSION


def test_sqlite_caches_see_commits_of_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    a.setup()
    b.setup()
    rec = make("ns", "seen by both", seed=6)
    a.put([rec])
    assert ids(b.search_vectors("ns", np.stack([unit(6)]))[0]) == [rec.id]
    assert b.get("ns", [rec.id])[0].importance == rec.importance
    a.put([rec.evolve(importance=0.25)])
    other = make("ns", "written by a", seed=7)
    a.put([other])
    assert b.get("ns", [rec.id])[0].importance == 0.25
    assert b.search_vectors("ns", np.stack([unit(7)]))[0][0].id == other.id
    a.close()
    b.close()


def test_sqlite_index_kept_up_to_date_by_writes_equals_a_rebuilt_one() -> None:
    store = SQLiteStore()
    store.setup()
    first = [make("ns", f"first {i}", seq=i, segment="s1") for i in range(6)]
    store.put(first)
    store.search_vector("ns", unit(1))  # the index is cached from here on
    bare = MemoryRecord(id=new_id(), namespace="ns", content="no embedding", embedding=None)
    store.put([make("ns", "later", seq=9, event_time=T0), bare])  # inserts: appended
    store.put(
        [
            first[1].evolve(tier=Tier.ARCHIVE, superseded_by=first[2].id, event_time=T0 + timedelta(days=1)),
            first[3].evolve(embedding=unit(99), segment="s2", type=MemoryType.GOAL),
            make("other", "another namespace", seed=5),
        ]
    )  # updates in place, and a namespace with no cached index
    kept = store._cache["ns"]  # type: ignore[attr-defined]
    found = [h.id for h in store.search_vector("ns", unit(99), limit=3)]
    recent = store.list_ids("ns", RecordFilter(), order="recent")
    store._cache.clear()  # type: ignore[attr-defined]
    rebuilt = store._index("ns")  # type: ignore[attr-defined]
    for name in ("ids", "has_vector", "types", "tiers", "segments", "current"):
        assert getattr(kept, name).tolist() == getattr(rebuilt, name).tolist(), name
    for name in ("matrix", "seqs", "event_us"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(rebuilt, name), err_msg=name)
    assert found == [h.id for h in store.search_vector("ns", unit(99), limit=3)] and found[0] == first[3].id
    assert recent == store.list_ids("ns", RecordFilter(), order="recent")
    assert first[1].id not in recent  # superseded and archived: not in the default filter
    store.put([first[0].evolve(embedding=unit(1, dim=DIM + 1))])  # another width: the index is dropped
    assert "ns" not in store._cache  # type: ignore[attr-defined]


def test_sqlite_audit_chain_verifies_and_refuses_update_and_delete(store: Store) -> None:
    """SQLite only: recompute the chain from the rows, then try to tamper with raw SQL."""
    if not isinstance(store, SQLiteStore):
        pytest.skip("SQLite only")
    store.batch([AppendAudit(AuditEntry("ns", "add", f"id-{i}", details={"i": i})) for i in range(3)])
    log = store.audit_log()
    prev = GENESIS_HASH
    for entry in log:
        assert entry["prev_hash"] == prev
        fields = {k: entry[k] for k in ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")}
        assert entry["hash"] == audit_hash(prev, fields)
        prev = entry["hash"]

    conn = store._conn  # type: ignore[attr-defined]
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit SET reason = 'forged' WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit")
    assert store.audit_log() == log


def test_sqlite_newer_schema_version_is_refused(tmp_path: Path) -> None:
    """SQLite only: a file written by a newer retain raises SchemaError at setup."""
    path = tmp_path / "future.db"
    with SQLiteStore(path) as first:
        first.setup()
        assert first._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()

    later = SQLiteStore(path)
    try:
        with pytest.raises(SchemaError, match=f"schema version {SCHEMA_VERSION + 1}"):
            later.setup()
        assert later._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    finally:
        later.close()


def test_sqlite_record_cache_limit_keeps_answers_right(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import retain.store.sqlite as backend

    monkeypatch.setattr(backend, "RECORD_CACHE_LIMIT", 3)
    store = SQLiteStore(tmp_path / "small-cache.db")
    store.setup()
    records = [make("ns", f"record {i}", seed=i) for i in range(5)]
    store.put(records)
    for _ in range(2):  # the second round reads through a cache that had to start over
        assert ids(store.get("ns", [r.id for r in reversed(records)])) == [r.id for r in reversed(records)]
        assert ids(store.list_records("ns")) == [r.id for r in records]
    store.close()


def test_sqlite_refuses_a_directory_and_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"this is not an SQLite database, just text " * 100)
    with pytest.raises(SchemaError, match="not a usable SQLite database"):
        SQLiteStore(junk).setup()
    with pytest.raises(SchemaError, match="cannot open"):
        SQLiteStore(tmp_path).setup()
    assert junk.read_bytes().startswith(b"this is not")  # left as it was
