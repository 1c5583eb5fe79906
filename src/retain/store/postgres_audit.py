"""The Postgres backend's append-only records and edges: the hash-chained audit log, the provenance of
packed contexts, and typed edges. Each handler takes the batch's cursor, so every change and its audit
entry commit together. Times are integer UTC microseconds, as in the SQLite backend."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import retain.store.ops as store_ops
from retain.errors import InvalidInput
from retain.record import utcnow
from retain.store.audit_chain import GENESIS_HASH, AuditEntry, RawAudit, audit_hash
from retain.store.edges import Edge, EdgeType, check_edge
from retain.store.postgres_sql import APPEND_ONLY_TRIGGERS
from retain.store.sqlite_audit import AUDIT_KEYS, PREFILTER_IDS, cited, withheld
from retain.store.sqlite_rows import from_us, to_us

__all__ = ["HANDLERS", "forget_provenance", "purge_edges"]

_DIRECTIONS = ("out", "in", "both")


def forget_provenance(cur: Any, namespace: str, ids: Iterable[str]) -> int:
    """Withhold the query and state of every provenance of ``namespace`` citing one of ``ids``; see
    :func:`retain.store.sqlite_audit.forget_provenance`. Returns the number changed."""
    wanted, changed = set(ids), 0
    sql, params = "SELECT id, body FROM provenance WHERE namespace = %s", [namespace]
    if len(wanted) <= PREFILTER_IDS:  # only the bodies that hold one of the ids are parsed
        sql += " AND (" + " OR ".join("strpos(body, %s) > 0" for _ in wanted) + ")"
        params += sorted(wanted)
    for pid, text in cur.execute(sql, params).fetchall():
        body = json.loads(text)
        named = cited(body, wanted)
        if named:
            new = json.dumps(withheld(body, named), ensure_ascii=False, sort_keys=True)
            cur.execute("UPDATE provenance SET body = %s WHERE id = %s", (new, pid))
            changed += 1
    return changed


def append_audit(cur: Any, op: store_ops.AppendAudit) -> int:
    """Append ``op.entry`` chained onto the newest entry; returns its seq. The caller holds the
    write lock, so the newest entry cannot change before this one commits."""
    entry: AuditEntry = op.entry
    row = cur.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    prev = GENESIS_HASH if row is None else row[0]
    ts = to_us(utcnow()) if op.ts is None else int(op.ts)
    fields = {
        "ts": ts,
        "namespace": entry.namespace,
        "op": entry.op,
        "record_id": entry.record_id,
        "actor": entry.actor,
        "reason": entry.reason,
        "policy": entry.policy,
        "details": entry.details,
    }
    digest = audit_hash(prev, fields, op.key)
    details = json.dumps(entry.details, ensure_ascii=False, sort_keys=True)
    seq = cur.execute(
        "INSERT INTO audit (ts, namespace, op, record_id, actor, reason, policy, details, prev_hash, hash) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
        (
            ts,
            entry.namespace,
            entry.op,
            entry.record_id,
            entry.actor,
            entry.reason,
            entry.policy,
            details,
            prev,
            digest,
        ),
    ).fetchone()[0]
    return int(seq)


def read_audit(cur: Any, op: store_ops.ReadAudit) -> list[dict[str, Any]]:
    """Entries of one namespace (or all) in seq order, ``details`` parsed."""
    clauses: list[str] = []
    params: tuple[Any, ...] = ()
    if op.namespace is not None:
        clauses, params = ["namespace = %s"], (op.namespace,)
    if op.record_ids is not None:
        clauses.append("record_id = ANY(%s)")
        params += (list(op.record_ids),)
    sql = f"SELECT {', '.join(AUDIT_KEYS)} FROM audit"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY seq"
    if op.limit is not None:
        sql += f" LIMIT {int(op.limit)}"
    out = []
    for row in cur.execute(sql, params).fetchall():
        item = dict(zip(AUDIT_KEYS, row, strict=True))
        item["details"] = json.loads(item["details"])
        out.append(item)
    return out


def read_audit_raw(cur: Any, op: store_ops.ReadAuditRaw) -> RawAudit:
    """The rows as stored, the identity sequence's last value and the append-only triggers missing
    or disabled."""
    rows = [
        dict(zip(AUDIT_KEYS, row, strict=True))
        for row in cur.execute(f"SELECT {', '.join(AUDIT_KEYS)} FROM audit ORDER BY seq").fetchall()
    ]
    sequence = cur.execute("SELECT pg_get_serial_sequence('audit', 'seq')").fetchone()[0]
    last, called = cur.execute(f"SELECT last_value, is_called FROM {sequence}").fetchone()
    present = {
        name
        for (name,) in cur.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'audit'::regclass AND NOT tgisinternal AND tgenabled <> 'D'"
        ).fetchall()
    }
    return RawAudit(rows, int(last) if called else None, tuple(sorted(APPEND_ONLY_TRIGGERS - present)))


def put_provenance(cur: Any, op: store_ops.PutProvenance) -> None:
    """Store a packed context's provenance. Raises InvalidInput when ``op.id`` exists already."""
    row = cur.execute(
        "INSERT INTO provenance (id, namespace, created_at, body) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        (op.id, op.namespace, to_us(op.created_at), json.dumps(op.body, ensure_ascii=False, sort_keys=True)),
    ).fetchone()
    if row is None:
        raise InvalidInput(f"provenance {op.id} already exists")


def get_provenance(cur: Any, op: store_ops.GetProvenance) -> dict[str, Any] | None:
    """A stored provenance by id (and namespace), or None."""
    sql = "SELECT id, namespace, created_at, body FROM provenance WHERE id = %s"
    params: tuple[str, ...] = (op.id,)
    if op.namespace is not None:
        sql, params = sql + " AND namespace = %s", (op.id, op.namespace)
    row = cur.execute(sql, params).fetchone()
    if row is None:
        return None
    return {"id": row[0], "namespace": row[1], "created_at": from_us(row[2]), "body": json.loads(row[3])}


def list_provenance(cur: Any, op: store_ops.ListProvenance) -> list[dict[str, Any]]:
    """Every provenance of one namespace (or all), oldest first; see :class:`~retain.store.ListProvenance`."""
    sql, params = "SELECT id, namespace, created_at, body FROM provenance", []
    if op.namespace is not None:
        sql, params = sql + " WHERE namespace = %s", [op.namespace]
    rows = cur.execute(sql + " ORDER BY created_at, id", params).fetchall()
    return [{"id": i, "namespace": ns, "created_at": from_us(t), "body": json.loads(b)} for i, ns, t, b in rows]


def put_edges(cur: Any, op: store_ops.PutEdges) -> None:
    """Check every edge and both endpoints of each against the records of its namespace, then upsert.
    Raises InvalidInput before any row is written."""
    edges = [check_edge(e, i) for i, e in enumerate(op.edges)]
    wanted: dict[str, set[str]] = {}
    for e in edges:
        wanted.setdefault(e.namespace, set()).update((e.src, e.dst))
    known = {
        ns: {
            r[0]
            for r in cur.execute(
                "SELECT id FROM records WHERE namespace = %s AND id = ANY(%s)", (ns, sorted(ids))
            ).fetchall()
        }
        for ns, ids in wanted.items()
    }
    for i, e in enumerate(edges):
        for name in ("src", "dst"):
            rid = getattr(e, name)
            if rid not in known[e.namespace]:
                raise InvalidInput(
                    f"edge {i}: {name} {rid!r} is not a record of namespace {e.namespace!r} "
                    "(unknown, deleted, or in another namespace); nothing was written"
                )
    for e in edges:
        cur.execute(
            "INSERT INTO edges (namespace, src, dst, type, weight, created_at, metadata) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, src, dst, type) DO UPDATE SET "
            "weight = excluded.weight, created_at = excluded.created_at, metadata = excluded.metadata",
            (
                e.namespace,
                e.src,
                e.dst,
                e.type.value,
                e.weight,
                to_us(e.created_at),
                json.dumps(dict(e.metadata), ensure_ascii=False, sort_keys=True),
            ),
        )


def list_edges(cur: Any, op: store_ops.ListEdges) -> list[Edge]:
    """Edges of one namespace, oldest written first (see :class:`~retain.store.ListEdges`)."""
    if op.direction not in _DIRECTIONS:
        raise InvalidInput(f"direction: {op.direction!r} is not one of {', '.join(_DIRECTIONS)}")
    sql = "SELECT namespace, src, dst, type, weight, created_at, metadata FROM edges WHERE namespace = %s"
    params: list[Any] = [op.namespace]
    if op.types is not None:
        try:
            values = [EdgeType(t).value for t in op.types]
        except ValueError as exc:
            raise InvalidInput(f"types: {exc}") from None
        if not values:
            return []
        sql += " AND type = ANY(%s)"
        params.append(values)
    if op.ids is not None:
        ids = sorted(set(op.ids))
        sql += {
            "out": " AND src = ANY(%s)",
            "in": " AND dst = ANY(%s)",
            "both": " AND (src = ANY(%s) OR dst = ANY(%s))",
        }[op.direction]
        params += [ids, ids] if op.direction == "both" else [ids]
    rows = cur.execute(sql + " ORDER BY edge_id", params).fetchall()
    return [
        Edge(
            namespace=ns,
            src=src,
            dst=dst,
            type=EdgeType(kind),
            weight=float(weight),
            created_at=from_us(int(created)),
            metadata=json.loads(meta),
        )
        for ns, src, dst, kind, weight, created, meta in rows
    ]


def purge_edges(cur: Any, namespace: str, ids: Iterable[str] | None) -> None:
    """Delete every edge of ``namespace`` touching ``ids`` (None = every edge of the namespace)."""
    if ids is None:
        cur.execute("DELETE FROM edges WHERE namespace = %s", (namespace,))
        return
    chosen = sorted(set(ids))
    cur.execute(
        "DELETE FROM edges WHERE namespace = %s AND (src = ANY(%s) OR dst = ANY(%s))", (namespace, chosen, chosen)
    )


HANDLERS: dict[type, Any] = {
    store_ops.AppendAudit: append_audit,
    store_ops.ReadAudit: read_audit,
    store_ops.ReadAuditRaw: read_audit_raw,
    store_ops.PutProvenance: put_provenance,
    store_ops.GetProvenance: get_provenance,
    store_ops.ListProvenance: list_provenance,
    store_ops.PutEdges: put_edges,
    store_ops.ListEdges: list_edges,
}
