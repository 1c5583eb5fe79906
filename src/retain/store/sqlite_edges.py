"""The SQLite backend's edge handlers (:class:`~retain.store.PutEdges`,
:class:`~retain.store.ListEdges`, and the purge that keeps edges from dangling).

The ``edges`` table is created by migration 3 (:data:`EDGES_MIGRATION`, applied by
:mod:`retain.store.sqlite_schema`). Times are stored as integer UTC microseconds, like records.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from retain.errors import InvalidInput
from retain.store.edges import Edge, EdgeType, check_edge
from retain.store.ops import ListEdges, PutEdges
from retain.store.sqlite_rows import from_us, to_us

__all__ = ["EDGES_MIGRATION", "list_edges", "purge_edges", "put_edges"]

EDGES_MIGRATION = """
    CREATE TABLE edges (
        namespace TEXT NOT NULL,
        src TEXT NOT NULL,
        dst TEXT NOT NULL,
        type TEXT NOT NULL,
        weight REAL NOT NULL,
        created_at INTEGER NOT NULL,
        metadata TEXT NOT NULL,
        PRIMARY KEY (namespace, src, dst, type)
    );
    CREATE INDEX edges_ns_dst ON edges (namespace, dst);
"""

_CHUNK = 400
_DIRECTIONS = ("out", "in", "both")


def put_edges(conn: sqlite3.Connection, op: PutEdges) -> None:
    """Check every edge, then both endpoints of each against the records of its namespace, then
    upsert. Raises InvalidInput before any row is written (the batch rolls back anyway)."""
    edges = [check_edge(e, i) for i, e in enumerate(op.edges)]
    wanted: dict[str, set[str]] = {}
    for e in edges:
        wanted.setdefault(e.namespace, set()).update((e.src, e.dst))
    known: dict[str, set[str]] = {}
    for namespace, ids in wanted.items():
        found: set[str] = set()
        for chunk in _chunks(sorted(ids)):
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT id FROM records WHERE +namespace = ? AND id IN ({marks})", (namespace, *chunk))
            found.update(r[0] for r in rows)
        known[namespace] = found
    for i, e in enumerate(edges):
        for name in ("src", "dst"):
            rid = getattr(e, name)
            if rid not in known[e.namespace]:
                raise InvalidInput(
                    f"edge {i}: {name} {rid!r} is not a record of namespace {e.namespace!r} "
                    "(unknown, deleted, or in another namespace); nothing was written"
                )
    conn.executemany(
        "INSERT INTO edges (namespace, src, dst, type, weight, created_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(namespace, src, dst, type) DO UPDATE SET weight = excluded.weight, "
        "created_at = excluded.created_at, metadata = excluded.metadata",
        [
            (
                e.namespace,
                e.src,
                e.dst,
                e.type.value,
                e.weight,
                to_us(e.created_at),
                json.dumps(dict(e.metadata), ensure_ascii=False, sort_keys=True),
            )
            for e in edges
        ],
    )


def list_edges(conn: sqlite3.Connection, op: ListEdges) -> list[Edge]:
    """Edges of one namespace (see :class:`ListEdges`), oldest written first."""
    if op.direction not in _DIRECTIONS:
        raise InvalidInput(f"direction: {op.direction!r} is not one of {', '.join(_DIRECTIONS)}")
    type_sql = ""
    type_params: tuple[str, ...] = ()
    if op.types is not None:
        try:
            values = tuple(EdgeType(t).value for t in op.types)
        except ValueError as exc:
            raise InvalidInput(f"types: {exc}") from None
        if not values:
            return []
        type_sql, type_params = f" AND type IN ({','.join('?' * len(values))})", values
    base = "SELECT rowid, namespace, src, dst, type, weight, created_at, metadata FROM edges WHERE namespace = ?"
    rows: dict[int, tuple[object, ...]] = {}
    if op.ids is None:
        for row in conn.execute(base + type_sql, (op.namespace, *type_params)):
            rows[row[0]] = row
    else:
        columns = {"out": ("src",), "in": ("dst",), "both": ("src", "dst")}[op.direction]
        for column in columns:
            for chunk in _chunks(sorted(set(op.ids))):
                marks = ",".join("?" * len(chunk))
                sql = f"{base} AND {column} IN ({marks}){type_sql}"
                for row in conn.execute(sql, (op.namespace, *chunk, *type_params)):
                    rows[row[0]] = row
    return [_row_to_edge(rows[k]) for k in sorted(rows)]


def purge_edges(conn: sqlite3.Connection, namespace: str, ids: Iterable[str] | None) -> None:
    """Delete every edge of ``namespace`` touching ``ids`` (None = every edge of the namespace)."""
    if ids is None:
        conn.execute("DELETE FROM edges WHERE namespace = ?", (namespace,))
        return
    for chunk in _chunks(sorted(set(ids))):
        marks = ",".join("?" * len(chunk))
        conn.execute(
            f"DELETE FROM edges WHERE namespace = ? AND (src IN ({marks}) OR dst IN ({marks}))",
            (namespace, *chunk, *chunk),
        )


def _row_to_edge(row: tuple[object, ...]) -> Edge:
    _, namespace, src, dst, kind, weight, created_us, metadata = row
    assert isinstance(created_us, int) and isinstance(metadata, str) and isinstance(weight, float)
    return Edge(
        namespace=str(namespace),
        src=str(src),
        dst=str(dst),
        type=EdgeType(str(kind)),
        weight=weight,
        created_at=from_us(created_us),
        metadata=json.loads(metadata),
    )


def _chunks(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
