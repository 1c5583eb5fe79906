"""The Postgres backend's browsing queries and metadata conditions: a page of ids
(:class:`~retain.store.PageIds`), the counts of a namespace (:class:`~retain.store.NamespaceStats`),
and audit look-ups by field and time bucket (:class:`~retain.store.QueryAudit`,
:class:`~retain.store.AuditHistogram`).
"""

from __future__ import annotations

import json
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
from retain.store.postgres_sql import filter_sql, lex_terms
from retain.store.sqlite_audit import AUDIT_KEYS
from retain.store.sqlite_rows import from_us, to_us

__all__ = ["HANDLERS"]


def page_ids(cur: Any, op: PageIds) -> IdPage:
    """One page of ids, newest written first, and the number matching on every page."""
    check_page(op)
    where, params = filter_sql(op.namespace, op.filter)
    clauses, values = [where], list(params)
    if op.pinned is not None:
        clauses.append("pinned = %s")
        values.append(int(bool(op.pinned)))
    terms = lex_terms([t for t in op.terms if t])
    if terms:
        clauses.append("lex @@ %s::tsquery")
        values.append(" & ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in dict.fromkeys(terms)))
    elif op.terms:
        return IdPage([], 0)
    where_all = " AND ".join(clauses)
    total, exact = capped_total(int(cur.execute(count_sql("records", where_all, op), values).fetchone()[0]), op)
    if op.after is not None:
        row = cur.execute(
            "SELECT rowid FROM records WHERE namespace = %s AND id = %s", (op.namespace, op.after)
        ).fetchone()
        if row is None:
            raise InvalidInput(f"after: no record {op.after!r} in namespace {op.namespace!r}")
        where_all += " AND rowid < %s"
        values.append(row[0])
    sql = f"SELECT id FROM records WHERE {where_all} ORDER BY rowid DESC LIMIT {int(op.limit)}"
    return IdPage([r[0] for r in cur.execute(sql, values).fetchall()], total, exact)


def namespace_stats(cur: Any, op: NamespaceStats) -> RecordStats:
    """Counts by tier and type of the current records, superseded versions, pinned current records."""
    current: dict[tuple[str, str], int] = {}
    superseded = pinned = 0
    rows = cur.execute(
        "SELECT type, tier, pinned, COUNT(*), COUNT(superseded_by) FROM records WHERE namespace = %s "
        "GROUP BY type, tier, pinned",
        (op.namespace,),
    ).fetchall()
    for type_, tier, is_pinned, n, old in rows:
        superseded += old
        if n > old:
            current[(tier, type_)] = current.get((tier, type_), 0) + n - old
            pinned += (n - old) if is_pinned else 0
    return RecordStats(current, superseded, pinned)


def query_audit(cur: Any, op: QueryAudit) -> list[dict[str, Any]]:
    """Entries matching every field of ``op``, newest first."""
    if isinstance(op.limit, bool) or not isinstance(op.limit, int) or op.limit < 1:
        raise InvalidInput(f"limit: must be an int >= 1, got {op.limit!r}")
    clauses: list[str] = []
    values: list[Any] = []
    for column, value in (("namespace", op.namespace), ("actor", op.actor), ("record_id", op.record_id)):
        if value is not None:
            clauses.append(f"{column} = %s")
            values.append(value)
    if op.ops is not None:
        clauses.append("op = ANY(%s)")
        values.append(list(op.ops))
    for clause, bound in (
        ("ts >= %s", None if op.start is None else to_us(op.start)),
        ("ts < %s", None if op.end is None else to_us(op.end)),
        ("seq > %s", op.after_seq),
        ("seq < %s", op.before_seq),
    ):
        if bound is not None:
            clauses.append(clause)
            values.append(int(bound))
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = f"SELECT {', '.join(AUDIT_KEYS)} FROM audit{where} ORDER BY seq DESC LIMIT {int(op.limit)}"
    out = []
    for row in cur.execute(sql, values).fetchall():
        item = dict(zip(AUDIT_KEYS, row, strict=True))
        item["details"] = json.loads(item["details"])
        out.append(item)
    return out


def audit_histogram(cur: Any, op: AuditHistogram) -> list[tuple[Any, str, int]]:
    """``(bucket start, op, count)`` of one namespace's entries, by bucket then op."""
    if isinstance(op.bucket_seconds, bool) or not isinstance(op.bucket_seconds, int) or op.bucket_seconds < 1:
        raise InvalidInput(f"bucket_seconds: must be an int >= 1, got {op.bucket_seconds!r}")
    width = op.bucket_seconds * 1_000_000
    sql = "SELECT div(ts, %s) AS b, op, COUNT(*) FROM audit WHERE namespace = %s"
    values: list[Any] = [width, op.namespace]
    if op.ops is not None:
        sql += " AND op = ANY(%s)"
        values.append(list(op.ops))
    sql += " GROUP BY b, op ORDER BY b, op"
    return [(from_us(int(b) * width), str(name), int(n)) for b, name, n in cur.execute(sql, values).fetchall()]


HANDLERS: dict[type, Any] = {
    PageIds: page_ids,
    NamespaceStats: namespace_stats,
    QueryAudit: query_audit,
    AuditHistogram: audit_histogram,
}
