"""Edge conformance: every backend (the ``store`` fixture) keeps typed edges namespace-bound,
refuses bad ones with nothing written, and never leaves one dangling."""

from __future__ import annotations

import math
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from retain.errors import InvalidInput
from retain.record import MemoryRecord, new_id
from retain.store import (
    ALL_RECORDS,
    AppendAudit,
    AuditEntry,
    Edge,
    EdgeType,
    ListEdges,
    PutEdges,
    PutRecords,
    SQLiteStore,
    Store,
)
from retain.store.sqlite import SCHEMA_VERSION

T0 = datetime(2024, 3, 1, 9, 30, 15, 123457, tzinfo=UTC)


def rec(namespace: str, content: str) -> MemoryRecord:
    return MemoryRecord(id=new_id(), namespace=namespace, content=content)


def keys(edges: list[Edge]) -> list[tuple[str, str, str]]:
    return [(e.src, e.dst, e.type.value) for e in edges]


@pytest.fixture
def trio(store: Store) -> tuple[MemoryRecord, MemoryRecord, MemoryRecord]:
    a, b, c = rec("ns", "alpha"), rec("ns", "beta"), rec("ns", "gamma")
    store.put([a, b, c])
    return a, b, c


def test_edges_round_trip_every_field_and_filter(store: Store, trio: tuple[MemoryRecord, ...]) -> None:
    a, b, c = trio
    first = Edge("ns", a.id, b.id, EdgeType.NEXT, 0.75, T0, {"why": "stream", "n": 2})
    second = Edge("ns", b.id, c.id, EdgeType.SUPPORTS, 2.0, T0 + timedelta(seconds=1))
    third = Edge("ns", c.id, a.id, EdgeType.SAME_ENTITY, created_at=T0)
    assert store.batch([PutEdges((first, second, third))]) == [None]

    assert store.edges("ns") == [first, second, third]
    assert keys(store.edges("ns", [b.id], direction="out")) == [(b.id, c.id, "supports")]
    assert keys(store.edges("ns", [b.id], direction="in")) == [(a.id, b.id, "next")]
    assert keys(store.edges("ns", [b.id])) == [(a.id, b.id, "next"), (b.id, c.id, "supports")]
    assert keys(store.edges("ns", [a.id], types=[EdgeType.SAME_ENTITY])) == [(c.id, a.id, "same_entity")]
    assert store.edges("ns", [a.id], types=[]) == []
    assert store.edges("other-ns") == [] and store.edges("other-ns", [a.id]) == []


def test_same_key_replaces_weight_and_types_are_distinct_keys(store: Store, trio: tuple[MemoryRecord, ...]) -> None:
    a, b, _ = trio
    store.batch([PutEdges((Edge("ns", a.id, b.id, EdgeType.NEXT, 1.0, T0),))])
    store.batch([PutEdges((Edge("ns", a.id, b.id, EdgeType.NEXT, 3.0, T0), Edge("ns", a.id, b.id, "supports", 1.5)))])
    got = {e.type: e.weight for e in store.edges("ns")}
    assert got == {EdgeType.NEXT: 3.0, EdgeType.SUPPORTS: 1.5}


def test_edges_written_in_the_same_batch_as_their_records(store: Store) -> None:
    a, b = rec("ns", "new one"), rec("ns", "new two")
    store.batch([PutRecords((a, b)), PutEdges((Edge("ns", a.id, b.id, EdgeType.DERIVED_FROM),))])
    assert keys(store.edges("ns")) == [(a.id, b.id, "derived_from")]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("other_namespace", "not a record of namespace 'ns'"),
        ("deleted", "not a record of namespace 'ns'"),
        ("unknown", "not a record of namespace 'ns'"),
        ("self_loop", "self-loop"),
        ("unknown_type", "unknown type 'causes'"),
        ("nan_weight", "weight"),
        ("inf_weight", "weight"),
        ("zero_weight", "weight"),
        ("naive_time", "timezone-aware"),
    ],
)
def test_bad_edges_are_refused_and_the_whole_batch_rolls_back(
    store: Store, trio: tuple[MemoryRecord, ...], bad: str, message: str
) -> None:
    a, b, c = trio
    foreign = rec("elsewhere", "same words, other namespace")
    gone = rec("ns", "soon deleted")
    store.put([foreign, gone])
    store.delete("ns", [gone.id])
    good = Edge("ns", a.id, b.id, EdgeType.NEXT)
    broken = {
        "other_namespace": Edge("ns", a.id, foreign.id, EdgeType.SUPPORTS),
        "deleted": Edge("ns", gone.id, c.id, EdgeType.NEXT),
        "unknown": Edge("ns", a.id, "no-such-id", EdgeType.NEXT),
        "self_loop": Edge("ns", c.id, c.id, EdgeType.ELABORATES),
        "unknown_type": Edge("ns", a.id, c.id, "causes"),  # type: ignore[arg-type]
        "nan_weight": Edge("ns", a.id, c.id, EdgeType.NEXT, math.nan),
        "inf_weight": Edge("ns", a.id, c.id, EdgeType.NEXT, math.inf),
        "zero_weight": Edge("ns", a.id, c.id, EdgeType.NEXT, 0.0),
        "naive_time": Edge("ns", a.id, c.id, EdgeType.NEXT, created_at=datetime(2024, 1, 1)),
    }[bad]
    late = rec("ns", "written in the failing batch")
    with pytest.raises(InvalidInput, match=message):
        store.batch(
            [
                PutRecords((late,)),
                PutEdges((good,)),
                AppendAudit(AuditEntry("ns", "link", a.id)),
                PutEdges((broken,)),
            ]
        )
    assert store.edges("ns") == [] and store.edges("elsewhere") == []
    assert store.get("ns", [late.id]) == []
    assert [e["op"] for e in store.audit_log()] == []


def test_an_edge_cannot_be_filed_under_the_other_namespace_either(store: Store) -> None:
    a, b = rec("left", "x"), rec("right", "y")
    store.put([a, b])
    for namespace in ("left", "right"):
        with pytest.raises(InvalidInput, match="not a record"):
            store.batch([PutEdges((Edge(namespace, a.id, b.id, EdgeType.SUPPORTS),))])
    assert store.edges("left") == [] and store.edges("right") == []


def test_deleting_records_purges_their_edges_only(store: Store, trio: tuple[MemoryRecord, ...]) -> None:
    a, b, c = trio
    twin_a, twin_b = rec("twin", "alpha"), rec("twin", "beta")
    store.put([twin_a, twin_b])
    store.batch(
        [
            PutEdges(
                (
                    Edge("ns", a.id, b.id, EdgeType.NEXT),
                    Edge("ns", b.id, c.id, EdgeType.NEXT),
                    Edge("ns", c.id, a.id, EdgeType.SUPPORTS),
                    Edge("twin", twin_a.id, twin_b.id, EdgeType.NEXT),
                )
            )
        ]
    )
    assert store.delete("other", [b.id]) == 0  # wrong namespace: no edge goes either
    assert len(store.edges("ns")) == 3
    assert store.delete("ns", [b.id]) == 1
    assert keys(store.edges("ns")) == [(c.id, a.id, "supports")]
    assert keys(store.edges("twin")) == [(twin_a.id, twin_b.id, "next")]

    store.delete_namespace("ns")
    assert store.edges("ns") == [] and store.count("ns", ALL_RECORDS) == 0
    assert keys(store.edges("twin")) == [(twin_a.id, twin_b.id, "next")]


def test_list_edges_refuses_an_unknown_direction(store: Store) -> None:
    with pytest.raises(InvalidInput, match="direction"):
        store.batch([ListEdges("ns", ("x",), direction="sideways")])


def test_sqlite_migration_3_adds_the_edges_table_to_a_version_2_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SQLite only: a file at schema 2 (before edges) gains the table and keeps its records."""
    from retain.store.sqlite_schema import MIGRATIONS, split_sql

    assert SCHEMA_VERSION >= 3
    path = tmp_path / "v2.db"
    raw = sqlite3.connect(path)
    for version in range(2):
        for statement in split_sql(MIGRATIONS[version]):
            raw.execute(statement)
    raw.execute("PRAGMA user_version = 2")
    raw.commit()
    raw.close()
    with SQLiteStore(path) as store:
        store.setup()
        a, b = rec("ns", "old"), rec("ns", "older")
        store.put([a, b], edges=[Edge("ns", a.id, b.id, EdgeType.NEXT)])
        assert keys(store.edges("ns")) == [(a.id, b.id, "next")]
        index = store._conn.execute("SELECT sql FROM sqlite_master WHERE name = 'edges_ns_dst'").fetchone()
        assert index is not None and "(namespace, dst)" in index[0]
