"""The SQLite backend's browsing queries: a page of ids (:class:`~retain.store.PageIds`), the
counts of a namespace (:class:`~retain.store.NamespaceStats`), and audit look-ups by field and by
time bucket (:class:`~retain.store.QueryAudit`, :class:`~retain.store.AuditHistogram`).

Each is one SQL statement over the indexes of migration 4
(:data:`retain.store.sqlite_schema.BROWSE_MIGRATION`), so its cost stays flat as a namespace
grows: pages are keyed on the rowid (write order), and the counts read a covering index, not the
records' rows.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from retain.errors import InvalidInput
from retain.store.ops import (
    AuditHistogram,
    IdPage,
    NamespaceStats,
    PageIds,
    QueryAudit,
    RecordStats,
    capped_total,
    check_page,
    count_sql,
)
from retain.store.sqlite_audit import AUDIT_KEYS
from retain.store.sqlite_rows import filter_sql, from_us, to_us

__all__ = ["audit_histogram", "namespace_stats", "page_ids", "query_audit"]

_FEW = 10_000
"""Matches of a type filter up to which a page is read through the type index and sorted."""


def _fts_match(terms: tuple[str, ...]) -> str:
    """An FTS5 query holding every term (each quoted, so no term is read as an operator)."""
    return " ".join('"' + t.replace('"', '""') + '"' for t in terms if t)


def page_ids(conn: sqlite3.Connection, op: PageIds) -> IdPage:
    """One page of ids, newest written first, and the number matching on every page; see :class:`PageIds`."""
    check_page(op)
    match = _fts_match(op.terms)
    if op.terms and not match:
        return IdPage([], 0)
    if match:
        return _text_page(conn, op, match)
    where, params = filter_sql(op.namespace, op.filter)
    clauses, values = [where], list(params)
    if op.pinned is not None:
        clauses.append("pinned = ?")
        values.append(int(bool(op.pinned)))
    where_all = " AND ".join(clauses)
    total, exact = _count(conn, "records", where_all, values, op)
    # Without statistics the planner walks records_ns in rowid order, reading rows until a page
    # matches: quick when many match, a whole-namespace read when few do. For a type filter that
    # few records match (the count says), the type index finds them and they are sorted instead.
    few = op.filter.types is not None and total <= _FEW
    source = "records INDEXED BY records_ns_stats" if few else "records"
    if op.after is not None:
        where_all += " AND rowid < ?"
        values.append(_after_rowid(conn, op))
    sql = f"SELECT id FROM {source} WHERE {where_all} ORDER BY rowid DESC LIMIT {int(op.limit)}"
    return IdPage([r[0] for r in conn.execute(sql, values)], total, exact)


def _count(conn: sqlite3.Connection, source: str, where: str, values: list[Any], op: PageIds) -> tuple[int, bool]:
    """``(total, exact)`` of the rows of ``source`` matching ``where`` (:func:`~retain.store.ops.count_sql`)."""
    return capped_total(int(conn.execute(count_sql(source, where, op), values).fetchone()[0]), op)


def _after_rowid(conn: sqlite3.Connection, op: PageIds) -> int:
    row = conn.execute("SELECT rowid FROM records WHERE namespace = ? AND id = ?", (op.namespace, op.after)).fetchone()
    if row is None:
        raise InvalidInput(f"after: no record {op.after!r} in namespace {op.namespace!r}")
    return int(row[0])


def _text_page(conn: sqlite3.Connection, op: PageIds, match: str) -> IdPage:
    """A page of a text search, driven by the full-text index: FTS5 yields the matching rowids
    newest first (``ORDER BY rowid DESC`` and the cursor's ``rowid <`` run inside the index), each
    joined to its record by rowid (``CROSS JOIN`` keeps that order), so a page reads about ``limit``
    matches, not every one; the count joins every match once. Reading the FTS match set into an
    ``IN (...)`` list first, as the filters do, walked the whole namespace for the count."""
    where, params = filter_sql(op.namespace, op.filter, alias="r.")
    clauses, values = [where], list(params)
    if op.pinned is not None:
        clauses.append("r.pinned = ?")
        values.append(int(bool(op.pinned)))
    source = "records_fts f CROSS JOIN records r ON r.rowid = f.rowid"
    where_all = " AND ".join(["records_fts MATCH ?", *clauses])
    exact = True
    total = _text_count(conn, op, match) if op.count_limit is None else None
    if total is None:
        total, exact = _count(conn, source, where_all, [match, *values], op)
    values = [match, *values]
    if op.after is not None:
        where_all += " AND f.rowid < ?"
        values.append(_after_rowid(conn, op))
    sql = f"SELECT r.id FROM {source} WHERE {where_all} ORDER BY f.rowid DESC LIMIT {int(op.limit)}"
    return IdPage([r[0] for r in conn.execute(sql, values)], total, exact)


def _text_count(conn: sqlite3.Connection, op: PageIds, match: str) -> int | None:
    """The number of text matches that pass the filter, read from indexes alone, or None when the
    filter names a column outside ``records_ns_stats`` (segments, positions, metadata, expiry).

    The matches in the namespace are counted through ``records_ns`` (namespace, rowid: a covering
    lookup per match, no record row read), less those among the namespace's records that fail the
    filter, found in ``records_ns_stats`` (type, tier, pinned, superseded_by, event_time). Joining
    every match to its record row instead reads tens of thousands of rows for a common word.
    """
    flt = op.filter
    if any(v is not None for v in (flt.segments, flt.seqs, flt.where, flt.live_at)):
        return None
    in_namespace = conn.execute(
        "SELECT COUNT(*) FROM records INDEXED BY records_ns WHERE namespace = ? "
        "AND rowid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)",
        (op.namespace, match),
    ).fetchone()[0]
    where, params = filter_sql(op.namespace, flt)
    values = list(params)
    if op.pinned is not None:
        where += " AND pinned = ?"
        values.append(int(bool(op.pinned)))
    if where == "namespace = ?":
        return int(in_namespace)
    failing = conn.execute(  # NULL (an unknown event time against a bound) fails the filter, as in a WHERE
        "SELECT COUNT(*) FROM records_fts WHERE records_fts MATCH ? AND rowid IN (SELECT rowid FROM records "
        f"INDEXED BY records_ns_stats WHERE namespace = ? AND NOT COALESCE(({where}), 0))",
        [match, op.namespace, *values],
    ).fetchone()[0]
    return int(in_namespace) - int(failing)


def namespace_stats(conn: sqlite3.Connection, op: NamespaceStats) -> RecordStats:
    """Counts by tier and type of the current records, superseded versions, pinned current records."""
    current: dict[tuple[str, str], int] = {}
    superseded = pinned = 0
    rows = conn.execute(  # grouped in the order of the covering index records_ns_stats: no sort
        "SELECT type, tier, pinned, COUNT(*), SUM(superseded_by IS NOT NULL) FROM records WHERE namespace = ? "
        "GROUP BY type, tier, pinned",
        (op.namespace,),
    )
    for type_, tier, is_pinned, n, old in rows:
        superseded += old
        if n > old:
            current[(tier, type_)] = current.get((tier, type_), 0) + n - old
            pinned += (n - old) if is_pinned else 0
    return RecordStats(current, superseded, pinned)


def query_audit(conn: sqlite3.Connection, op: QueryAudit) -> list[dict[str, Any]]:
    """Entries matching every field of ``op``, newest first; see :class:`QueryAudit`."""
    if isinstance(op.limit, bool) or not isinstance(op.limit, int) or op.limit < 1:
        raise InvalidInput(f"limit: must be an int >= 1, got {op.limit!r}")
    clauses: list[str] = []
    values: list[Any] = []
    for column, value in (("namespace", op.namespace), ("actor", op.actor), ("record_id", op.record_id)):
        if value is not None:
            clauses.append(f"{column} = ?")
            values.append(value)
    if op.ops is not None:
        clauses.append(f"op IN ({','.join('?' * len(op.ops))})")
        values.extend(op.ops)
    for clause, bound in (
        ("ts >= ?", None if op.start is None else to_us(op.start)),
        ("ts < ?", None if op.end is None else to_us(op.end)),
        ("seq > ?", op.after_seq),
        ("seq < ?", op.before_seq),
    ):
        if bound is not None:
            clauses.append(clause)
            values.append(int(bound))
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = f"SELECT {', '.join(AUDIT_KEYS)} FROM audit{where} ORDER BY seq DESC LIMIT {int(op.limit)}"
    out = []
    for row in conn.execute(sql, values):
        item = dict(zip(AUDIT_KEYS, row, strict=True))
        item["details"] = json.loads(item["details"])
        out.append(item)
    return out


def audit_histogram(conn: sqlite3.Connection, op: AuditHistogram) -> list[tuple[Any, str, int]]:
    """``(bucket start, op, count)`` of one namespace's entries; see :class:`AuditHistogram`."""
    if isinstance(op.bucket_seconds, bool) or not isinstance(op.bucket_seconds, int) or op.bucket_seconds < 1:
        raise InvalidInput(f"bucket_seconds: must be an int >= 1, got {op.bucket_seconds!r}")
    width = op.bucket_seconds * 1_000_000
    sql = "SELECT ts / ? AS b, op, COUNT(*) FROM audit WHERE namespace = ?"
    values: list[Any] = [width, op.namespace]
    if op.ops is not None:
        sql += f" AND op IN ({','.join('?' * len(op.ops))})"
        values.extend(op.ops)
    sql += " GROUP BY b, op ORDER BY b, op"
    return [(from_us(int(b) * width), str(name), int(n)) for b, name, n in conn.execute(sql, values)]
