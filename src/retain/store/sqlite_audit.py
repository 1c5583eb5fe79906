"""The SQLite backend's append-only records of what happened: the hash-chained audit log
(:class:`~retain.store.AppendAudit`, :class:`~retain.store.ReadAudit`,
:class:`~retain.store.ReadAuditRaw`) and the provenance of packed contexts
(:class:`~retain.store.PutProvenance`, :class:`~retain.store.GetProvenance`). Times are integer
UTC microseconds, like records."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from retain.errors import InvalidInput
from retain.record import utcnow
from retain.store.audit_chain import GENESIS_HASH, AuditEntry, RawAudit, audit_hash
from retain.store.ops import AppendAudit, GetProvenance, ListProvenance, PutProvenance, ReadAudit, ReadAuditRaw
from retain.store.sqlite_rows import from_us, to_us
from retain.store.sqlite_schema import APPEND_ONLY_TRIGGER_SQL, APPEND_ONLY_TRIGGERS, trigger_sql_key

__all__ = [
    "AUDIT_KEYS",
    "HANDLERS",
    "WITHHELD_QUERY",
    "append_audit",
    "cited",
    "forget_provenance",
    "get_provenance",
    "list_provenance",
    "put_provenance",
    "read_audit",
    "read_audit_raw",
    "withheld",
]

AUDIT_KEYS = ("seq", "ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details", "prev_hash", "hash")
"""The columns of an audit entry, in the order :class:`~retain.store.ReadAudit` reads them."""


def append_audit(conn: sqlite3.Connection, op: AppendAudit) -> int:
    """Append ``op.entry`` chained onto the newest entry (:func:`~retain.store.audit_hash`); returns its seq."""
    entry: AuditEntry = op.entry
    row = conn.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    prev = GENESIS_HASH if row is None else row[0]
    ts = to_us(utcnow()) if op.ts is None else int(op.ts)
    try:
        stored_details = json.dumps(entry.details, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"audit details: not JSON-serialisable ({type(exc).__name__})") from exc
    # the hash covers exactly what the row stores: the details as they read back from their column
    fields = {
        "ts": ts,
        "namespace": entry.namespace,
        "op": entry.op,
        "record_id": entry.record_id,
        "actor": entry.actor,
        "reason": entry.reason,
        "policy": entry.policy,
        "details": json.loads(stored_details),
    }
    digest = audit_hash(prev, fields, op.key)
    cur = conn.execute(
        "INSERT INTO audit (ts, namespace, op, record_id, actor, reason, policy, details, prev_hash, hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ts,
            entry.namespace,
            entry.op,
            entry.record_id,
            entry.actor,
            entry.reason,
            entry.policy,
            stored_details,
            prev,
            digest,
        ),
    )
    return int(cur.lastrowid or 0)


def read_audit(conn: sqlite3.Connection, op: ReadAudit) -> list[dict[str, Any]]:
    """Entries of one namespace (or all) in seq order, ``details`` parsed (see :class:`ReadAudit`)."""
    clauses: list[str] = []
    params: tuple[Any, ...] = ()
    if op.namespace is not None:
        clauses, params = ["namespace = ?"], (op.namespace,)
    if op.record_ids is not None:
        clauses.append("record_id IN (SELECT value FROM json_each(?))")
        params += (json.dumps(list(op.record_ids)),)
    sql = f"SELECT {', '.join(AUDIT_KEYS)} FROM audit"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY seq"
    if op.limit is not None:
        sql += f" LIMIT {int(op.limit)}"
    out = []
    for row in conn.execute(sql, params):
        item = dict(zip(AUDIT_KEYS, row, strict=True))
        item["details"] = json.loads(item["details"])
        out.append(item)
    return out


def read_audit_raw(conn: sqlite3.Connection, op: ReadAuditRaw) -> RawAudit:
    """The rows as stored, the AUTOINCREMENT counter and the append-only triggers still present."""
    sql = f"SELECT {', '.join(AUDIT_KEYS)} FROM audit ORDER BY seq"
    rows = [dict(zip(AUDIT_KEYS, row, strict=True)) for row in conn.execute(sql)]
    counter = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'audit'").fetchone()
    triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit'")
    present = {name: trigger_sql_key(sql or "") for name, sql in triggers}
    # a guard counts only with the body migration 1 gave it: a same-named no-op (WHEN 0, an empty
    # body) or a trigger on another event guards nothing
    missing = [name for name in APPEND_ONLY_TRIGGERS if present.get(name) != APPEND_ONLY_TRIGGER_SQL[name]]
    missing += [f"{name} (unexpected trigger)" for name in present if name not in APPEND_ONLY_TRIGGERS]
    return RawAudit(rows, None if counter is None else int(counter[0]), tuple(sorted(missing)))


def put_provenance(conn: sqlite3.Connection, op: PutProvenance) -> None:
    """Store a packed context's provenance. Raises InvalidInput when ``op.id`` exists already."""
    try:
        conn.execute(
            "INSERT INTO provenance (id, namespace, created_at, body) VALUES (?, ?, ?, ?)",
            (op.id, op.namespace, to_us(op.created_at), json.dumps(op.body, ensure_ascii=False, sort_keys=True)),
        )
    except sqlite3.IntegrityError as exc:
        raise InvalidInput(f"provenance {op.id} already exists") from exc


def get_provenance(conn: sqlite3.Connection, op: GetProvenance) -> dict[str, Any] | None:
    """A stored provenance by id (and namespace), or None; see :class:`GetProvenance`."""
    sql = "SELECT id, namespace, created_at, body FROM provenance WHERE id = ?"
    params: tuple[str, ...] = (op.id,)
    if op.namespace is not None:
        sql, params = sql + " AND namespace = ?", (op.id, op.namespace)
    row = conn.execute(sql, params).fetchone()
    if row is None:
        return None
    return {"id": row[0], "namespace": row[1], "created_at": from_us(row[2]), "body": json.loads(row[3])}


def list_provenance(conn: sqlite3.Connection, op: ListProvenance) -> list[dict[str, Any]]:
    """Every provenance of one namespace (or all), oldest first; see :class:`ListProvenance`."""
    sql, params = "SELECT id, namespace, created_at, body FROM provenance", []
    if op.namespace is not None:
        sql, params = sql + " WHERE namespace = ?", [op.namespace]
    rows = conn.execute(sql + " ORDER BY created_at, id", params).fetchall()
    return [{"id": i, "namespace": ns, "created_at": from_us(t), "body": json.loads(b)} for i, ns, t, b in rows]


WITHHELD_QUERY = "[withheld: a record it cited was deleted]"
"""The ``query`` of a provenance once a record it cited is deleted (:func:`forget_provenance`)."""


PREFILTER_IDS = 32
"""Up to this many deleted ids, :func:`forget_provenance` reads only the bodies that contain one."""


def cited(body: dict[str, Any], ids: set[str]) -> list[str]:
    """The ids among ``ids`` that a provenance ``body`` names (included or left out), sorted."""
    entries = [*body.get("items", []), *body.get("left_out", [])]
    return sorted(ids & {e.get("record_id") for e in entries if isinstance(e, dict)})


def withheld(body: dict[str, Any], named: list[str]) -> dict[str, Any]:
    """``body`` with its query and state withheld and ``named`` added to ``forgotten``."""
    return {**body, "query": WITHHELD_QUERY, "state": None, "forgotten": sorted({*body.get("forgotten", []), *named})}


def forget_provenance(conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> int:
    """Withhold the query and state of every provenance of ``namespace`` that cites one of ``ids``
    (records being deleted): the query that found a record can repeat what it said, so a delete
    takes it too, not only ``delete_all``. The provenance keeps its record ids, scores and token
    counts; ``query`` becomes :data:`WITHHELD_QUERY`, ``state`` None, and ``forgotten`` lists the
    deleted ids it cited. Returns the number of provenances changed."""
    wanted, changed = set(ids), 0
    sql, params = "SELECT id, body FROM provenance WHERE namespace = ?", [namespace]
    if len(wanted) <= PREFILTER_IDS:  # only the bodies that hold one of the ids are parsed
        sql += " AND (" + " OR ".join("instr(body, ?) > 0" for _ in wanted) + ")"
        params += sorted(wanted)
    for pid, text in conn.execute(sql, params).fetchall():
        body = json.loads(text)
        named = cited(body, wanted)
        if named:
            new = json.dumps(withheld(body, named), ensure_ascii=False, sort_keys=True)
            conn.execute("UPDATE provenance SET body = ? WHERE id = ?", (new, pid))
            changed += 1
    return changed


HANDLERS: dict[type, Any] = {
    AppendAudit: append_audit,
    ReadAudit: read_audit,
    ReadAuditRaw: read_audit_raw,
    PutProvenance: put_provenance,
    GetProvenance: get_provenance,
    ListProvenance: list_provenance,
}
"""The operations answered here, each by a function of the batch's connection and the op."""
