"""The SQLite backend (:mod:`retain.store.sqlite`) beyond the contract: its file and the store paths it
accepts, schema version, triggers and caches, and the in-memory namespace index and the SQL answering
every record filter alike. The contract itself is checked by the conformance suite
(tests/store/test_conformance.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retain import HashingEncoder, InvalidInput, Memory
from retain.errors import SchemaError
from retain.record import MemoryRecord, MemoryType, Tier, new_id
from retain.store import GENESIS_HASH, AppendAudit, AuditEntry, RecordFilter, SQLiteStore, Store, audit_hash
from retain.store import ops as store_ops
from retain.store.conformance.helpers import DIM, T0, ids, make, unit
from retain.store.sqlite import SCHEMA_VERSION

NS = "n"
ENC = HashingEncoder(16)
ENC384 = HashingEncoder(dim=384)


# --- the store path -----------------------------------------------------------------------------


def test_memory_refuses_a_path_whose_folder_does_not_exist(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "deeper" / "x.db"
    with pytest.raises(InvalidInput, match=r"missing.deeper.*does not exist.*create_dirs=True"):
        Memory(path, encoder=HashingEncoder(64))
    assert not (tmp_path / "missing").exists()  # nothing created on the way


def test_store_refuses_a_path_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("not a folder", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a folder"):
        SQLiteStore(tmp_path / "plain" / "x.db")
    with pytest.raises(InvalidInput, match="not a folder"):
        SQLiteStore(tmp_path / "plain" / "x.db", create_dirs=True)


def test_create_dirs_opts_in(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "x.db"
    with Memory(path, encoder=HashingEncoder(64), create_dirs=True) as mem:
        rid = mem.add("The museum opens at nine.", namespace=NS)
    with Memory(path, encoder=HashingEncoder(64)) as mem:  # the folder now exists: no option needed
        assert mem.get(rid, namespace=NS).content == "The museum opens at nine."


def test_create_dirs_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="create_dirs"):
        SQLiteStore(tmp_path / "x.db", create_dirs="yes")  # type: ignore[arg-type]


def test_in_memory_and_existing_folder_paths_open(tmp_path: Path) -> None:
    SQLiteStore(":memory:").close()
    SQLiteStore(tmp_path / "x.db").close()


def test_paths_are_strings_or_paths(tmp_path: Path) -> None:
    assert SQLiteStore(Path(tmp_path) / "y.db").location == str(tmp_path / "y.db")


@pytest.mark.parametrize("path", [b"x.db", "", "a\x00b.db"])
def test_store_paths_that_name_no_file_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: object
) -> None:
    """bytes would make a file named "b'x.db'", "" a temporary database, a NUL a ValueError."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="path"):
        Memory(path, encoder=ENC384)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_create_dirs_makes_no_folder_named_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="expanduser"):
        Memory("~/retain-break-test/x.db", encoder=ENC384, create_dirs=True)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "~").mkdir()  # a folder really named "~" is used as given
    with Memory("~/x.db", encoder=ENC384) as m:
        m.add("The museum opens at nine.", namespace="n")
    assert (tmp_path / "~" / "x.db").is_file()


# --- record filters: the namespace index and the SQL agree ---------------------------------------


LAYOUT = [("a", 0), ("a", 1), (None, 2), ("3", 3), (None, None), ("b", 1), ("b", 7)]


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A file store holding one record per (segment, seq) of :data:`LAYOUT`, ids R000..R006."""
    store = SQLiteStore(tmp_path / "f.db")
    store.setup()
    records = [
        MemoryRecord(
            id=f"R{i:03d}",
            namespace=NS,
            content=f"museum text {i}",
            seq=seq,
            segment=segment,
            embedding=ENC.encode([f"text {i}"])[0],
            encoder=ENC.name,
        )
        for i, (segment, seq) in enumerate(LAYOUT)
    ]
    store.put(records)
    yield store
    store.close()


def _by_sql(store: SQLiteStore, flt: RecordFilter) -> set[str]:
    store._cache.clear()  # no namespace index: list_ids and count run SQL
    ids = set(store.list_ids(NS, flt, order="seq"))
    assert store.count(NS, flt) == len(ids)
    assert {h.id for h in store.search_lexical(NS, ["museum"], flt, limit=100)} == ids
    return ids


def _by_index(store: SQLiteStore, flt: RecordFilter) -> set[str]:
    store._cache.clear()
    store.search_vector(NS, ENC.encode(["q"])[0], RecordFilter(), 1)  # builds the namespace index
    assert NS in store._cache
    ids = set(store.list_ids(NS, flt, order="created"))  # answered from the index
    assert {h.id for h in store.search_vector(NS, ENC.encode(["q"])[0], flt, limit=100)} == ids
    return ids


VALID: dict[str, dict[str, Any]] = {
    "no filter": {},
    "seqs empty": {"seqs": ()},
    "segments empty": {"segments": ()},
    "seqs duplicated": {"seqs": (1, 1, 1)},
    "seqs unordered": {"seqs": (7, 0, 1)},
    "seqs list": {"seqs": [1, 2]},
    "seqs generator": {"seqs": (s for s in (1, 2))},
    "seqs numpy ints": {"seqs": (np.int64(1), np.int32(7))},
    "seqs none matching": {"seqs": (99,)},
    "segments duplicated": {"segments": ("a", "a")},
    "segments digits": {"segments": ("3",)},
    "segments list": {"segments": ["a", "b"]},
    "both": {"segments": ("b",), "seqs": (1,)},
    "many seqs": {"seqs": tuple(range(300_000))},  # over SQLite's bound-parameter limit
    "many segments": {"segments": [*(f"s{i}" for i in range(300_000)), "a"]},
    "types list": {"types": [MemoryType.FACT, MemoryType.OBSERVATION], "seqs": (1,)},
    "tiers names": {"tiers": ["core", "dynamic"], "seqs": (1,)},
}


@pytest.mark.parametrize("kwargs", VALID.values(), ids=VALID.keys())
def test_index_and_sql_agree_on_seqs_and_segments(filled: SQLiteStore, kwargs: dict[str, Any]) -> None:
    flt = RecordFilter(**({"tiers": None} | kwargs))
    assert _by_sql(filled, flt) == _by_index(filled, flt)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seqs=st.none() | st.lists(st.integers(0, 9), max_size=6),
    segments=st.none() | st.lists(st.sampled_from(["a", "b", "3", "", "zz", "ä"]), max_size=4),
    tiers=st.none() | st.lists(st.sampled_from(list(Tier)), max_size=3),
    include_superseded=st.booleans(),
)
def test_index_and_sql_agree_on_any_valid_filter(
    filled: SQLiteStore,
    seqs: list[int] | None,
    segments: list[str] | None,
    tiers: list[Tier] | None,
    include_superseded: bool,
) -> None:
    flt = RecordFilter(seqs=seqs, segments=segments, tiers=tiers, include_superseded=include_superseded)
    assert _by_sql(filled, flt) == _by_index(filled, flt)


def test_filters_mean_what_they_say(filled: SQLiteStore) -> None:
    def ids(**kw: Any) -> list[str]:
        return sorted(_by_index(filled, RecordFilter(tiers=None, **kw)))

    assert ids(seqs=()) == [] and ids(segments=()) == []
    assert ids(seqs=(1, 1)) == ["R001", "R005"]
    assert ids(segments=("3",)) == ["R003"]
    assert RecordFilter(seqs=[7, 1, 7]).seqs == (1, 7)  # a sorted tuple without duplicates
    assert RecordFilter(segments=["b", "a", "b"]).segments == ("a", "b")
    assert RecordFilter(tiers=["core"]).tiers == (Tier.CORE,)
    assert hash(RecordFilter(types=[MemoryType.FACT])) == hash(RecordFilter(types=(MemoryType.FACT,)))


def _ids_by_sql_and_by_index(store: SQLiteStore, flt: RecordFilter) -> tuple[set[str], set[str]]:
    store._cache.clear()
    by_sql = set(store.list_ids("n", flt, order="seq"))
    store._cache.clear()
    store.search_vector("n", ENC384.encode(["q"])[0], RecordFilter(), 1)  # builds the namespace index
    return by_sql, set(store.list_ids("n", flt, order="created"))


def test_index_and_sql_agree_on_positions_above_2_to_the_53() -> None:
    """Positions are int64 in the index too: as float64, 2**53 and 2**53 + 1 would be one value."""
    store = SQLiteStore()
    store.setup()
    big = 2**53
    store.put(
        [
            MemoryRecord(id=f"R{i}", namespace="n", content="museum", seq=seq, embedding=ENC384.encode(["t"])[0])
            for i, seq in enumerate((big, big + 1, 2**63 - 1, 2**63 - 2))
        ]
    )
    for seqs in [(big + 1,), (2**63 - 1,), (2**63 - 1, *range(600))]:
        by_sql, by_index = _ids_by_sql_and_by_index(store, RecordFilter(seqs=seqs, tiers=None))
        assert by_sql == by_index and len(by_sql) == 1, seqs


def test_index_and_sql_agree_on_a_segment_holding_a_nul_in_a_long_list() -> None:
    """A segment id holding a NUL ("a\\x00b") is matched whole, also in a list of over 500 segments
    (where SQLite's json_each would cut it at the NUL and match segment "a")."""
    store = SQLiteStore()
    store.setup()
    store.put(
        [
            MemoryRecord(id=f"R{i}", namespace="n", content="museum", segment=seg, embedding=ENC384.encode(["t"])[0])
            for i, seg in enumerate(("a", "a\x00b"))
        ]
    )
    flt = RecordFilter(segments=(*(f"x{i}" for i in range(600)), "a\x00b"), tiers=None)
    assert _ids_by_sql_and_by_index(store, flt) == ({"R1"}, {"R1"})


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


def _record_plans(store: SQLiteStore, action: Any) -> list[str]:
    """The query plan of every SELECT on ``records`` that ``action`` issues, one string per statement."""
    conn = store._conn  # type: ignore[attr-defined]
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        conn.set_trace_callback(None)
    selects = [s for s in seen if s.lstrip().upper().startswith("SELECT") and "FROM records WHERE" in s]
    return [" | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + s)) for s in selects]


def _skew_statistics(store: SQLiteStore) -> None:
    """Statistics under which (namespace, seq) looks like the best index for any namespace term: one big
    namespace, every seq distinct. The planner must still pick the index that does not scan it."""
    conn = store._conn  # type: ignore[attr-defined]
    conn.execute("ANALYZE")
    conn.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'records'")
    conn.executemany(
        "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('records', ?, ?)",
        [
            ("records_ns_seq", "100000 100000 1"),
            ("records_ns_hash", "100000 100000 50"),
            ("records_ns_tier", "100000 100000 50000"),
            ("records_ns_event", "100000 100000 1"),
            ("sqlite_autoindex_records_1", "100000 1"),
        ],
    )
    conn.execute("ANALYZE sqlite_schema")  # reload the statistics
    conn.commit()


def test_lookups_by_id_use_the_id_index_whatever_the_statistics() -> None:
    store = SQLiteStore(":memory:")
    store.setup()
    recs = [make("big", f"note {i}", seq=i) for i in range(50)]
    store.put(recs)
    for skewed in (False, True):  # a fresh file has no statistics: the planner's guess is the case that scanned
        if skewed:
            _skew_statistics(store)
        store._records.clear()  # type: ignore[attr-defined]  # force a read from the file
        plans = _record_plans(store, lambda: store.get("big", [r.id for r in recs[:20]]))
        assert plans, "get() issued no SELECT on records"
        assert all("sqlite_autoindex_records_1" in p and "records_ns_seq" not in p for p in plans), (skewed, plans)
    assert ids(store.get("big", [recs[3].id])) == [recs[3].id]


def test_duplicate_guard_uses_the_content_hash_index_not_seq() -> None:
    store = SQLiteStore(":memory:")
    store.setup()
    store.put([make("big", f"note {i}") for i in range(50)])  # seq NULL: the case that scanned
    _skew_statistics(store)
    probe = make("big", "note 7")

    def look_up() -> None:
        store.batch([store_ops.FindByHash("big", probe.content_hash, in_context=True, role=probe.role)])

    plans = _record_plans(store, look_up)
    assert plans, "the duplicate look-up issued no SELECT on records"
    assert all("records_ns_hash" in p for p in plans), plans
