"""The SQLite backend's rows: a record as a row of the ``records`` table and back, times as
integer UTC microseconds, and the WHERE clauses of a :class:`~retain.store.RecordFilter` and of a
duplicate look-up (:class:`~retain.store.FindByHash`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from retain.record import MemoryRecord, MemoryType, ReadOnlyDict, Tier, read_only_json, utcnow
from retain.store.filters import RecordFilter
from retain.store.ops import FindByHash
from retain.store.where import EXPIRES_AT_KEY, MetadataCondition, expiry_text

__all__ = [
    "COLUMNS",
    "INLINE_VALUES",
    "ORDERS",
    "filter_sql",
    "from_us",
    "record_values",
    "row_to_record",
    "same_content",
    "to_us",
]

COLUMNS = (  # the order of record_values and row_to_record
    "id, namespace, content, type, role, source, event_time, created_at, seq, segment, priority, "
    "importance, access_count, last_accessed, tier, pinned, confidence, supersedes, superseded_by, "
    "token_count, embedding, encoder, metadata, content_hash"
)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_us(value: datetime) -> int:
    """An aware datetime as integer microseconds since the Unix epoch, UTC (nullable columns: the
    caller keeps None as None)."""
    # Integer arithmetic: float timestamps lose a microsecond on about 2% of times.
    return (value.astimezone(UTC) - _EPOCH) // _MICROSECOND


def from_us(value: int) -> datetime:
    """Integer microseconds since the Unix epoch as a UTC datetime."""
    return _EPOCH + timedelta(microseconds=value)


def record_values(rec: MemoryRecord) -> tuple[Any, ...]:
    """The row of ``rec``, one value per column of :data:`COLUMNS` in that order: times as UTC
    microseconds, the embedding as little-endian float32 bytes, metadata as canonical JSON."""
    return (
        rec.id,
        rec.namespace,
        rec.content,
        rec.type.value,
        rec.role,
        rec.source,
        None if rec.event_time is None else to_us(rec.event_time),
        to_us(rec.created_at),
        rec.seq,
        rec.segment,
        rec.priority,
        float(rec.importance),
        rec.access_count,
        None if rec.last_accessed is None else to_us(rec.last_accessed),
        rec.tier.value,
        int(rec.pinned),
        float(rec.confidence),
        rec.supersedes,
        rec.superseded_by,
        rec.token_count,
        None if rec.embedding is None else np.asarray(rec.embedding, dtype="<f4").tobytes(),
        rec.encoder,
        json.dumps(dict(rec.metadata), ensure_ascii=False, sort_keys=True),
        rec.content_hash,
    )


_TYPES = {t.value: t for t in MemoryType}
_TIERS = {t.value: t for t in Tier}


def row_to_record(row: Sequence[Any]) -> MemoryRecord:
    """Rebuild a record from a row. Rows were validated when written, so validation is skipped."""
    blob = row[20]
    embedding = None
    if blob is not None:
        embedding = np.frombuffer(blob, dtype="<f4")  # read-only view of an immutable bytes object
    return MemoryRecord.trusted(
        id=row[0],
        namespace=row[1],
        content=row[2],
        type=_TYPES.get(row[3]) or MemoryType(row[3]),
        role=row[4],
        source=row[5],
        event_time=None if row[6] is None else from_us(row[6]),
        created_at=utcnow() if row[7] is None else from_us(row[7]),
        seq=row[8],
        segment=row[9],
        priority=row[10],
        importance=row[11],
        access_count=row[12],
        last_accessed=None if row[13] is None else from_us(row[13]),
        tier=_TIERS.get(row[14]) or Tier(row[14]),
        pinned=bool(row[15]),
        confidence=row[16],
        supersedes=row[17],
        superseded_by=row[18],
        token_count=row[19],
        embedding=embedding,
        encoder=row[21],
        metadata=ReadOnlyDict() if row[22] == "{}" else read_only_json(json.loads(row[22])),  # shared via the cache
        content_hash=row[23],
    )


ORDERS = {  # ListRecords.order -> ORDER BY; unknown positions and times sort last
    "created": "rowid",
    "seq": "seq IS NULL, seq, rowid",
    "event": "event_time IS NULL, event_time, seq, rowid",
    "recent": "rowid DESC",
}


INLINE_VALUES = 500
"""Most ``seqs`` / ``segments`` a query binds one parameter each; longer lists go as one JSON array."""


def filter_sql(namespace: str, flt: RecordFilter, alias: str = "") -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause (without ``WHERE``) and parameters of the records of ``namespace`` that
    ``flt`` keeps; ``alias`` (e.g. ``"r."``) prefixes every column."""
    clauses = [f"{alias}namespace = ?"]
    params: list[Any] = [namespace]
    if flt.types is not None:
        clauses.append(f"{alias}type IN ({','.join('?' * len(flt.types))})")
        params.extend(t.value for t in flt.types)
    if flt.tiers is not None:
        clauses.append(f"{alias}tier IN ({','.join('?' * len(flt.tiers))})")
        params.extend(t.value for t in flt.tiers)
    for column, values in (("segment", flt.segments), ("seq", flt.seqs)):
        if values is None:
            continue
        if len(values) <= INLINE_VALUES:
            clauses.append(f"{alias}{column} IN ({','.join('?' * len(values))})")
            params.extend(values)
        elif column == "segment" and any("\x00" in str(v) for v in values):
            # json_each cuts a string at a NUL ("a\x00b" would match segment "a"): compare UTF-8 hex
            clauses.append(f"hex({alias}segment) IN (SELECT value FROM json_each(?))")
            params.append(json.dumps([str(v).encode("utf-8").hex().upper() for v in values]))
        else:  # one JSON parameter: SQLite caps the bound parameters of a statement (250,000 here)
            clauses.append(f"{alias}{column} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(values, ensure_ascii=False))
    if not flt.include_superseded:
        clauses.append(f"{alias}superseded_by IS NULL")
    if flt.start is not None:
        clauses.append(f"{alias}event_time >= ?")
        params.append(to_us(flt.start))
    if flt.end is not None:
        clauses.append(f"{alias}event_time < ?")
        params.append(to_us(flt.end))
    for condition in flt.where or ():
        clause, condition_params = condition_sql(condition, f"{alias}metadata")
        clauses.append(clause)
        params.extend(condition_params)
    if flt.live_at is not None:  # not expired: archived, no expiry text, or one after live_at
        clauses.append(
            f"NOT coalesce({alias}tier IN ('core', 'dynamic') AND json_type({alias}metadata, ?) = 'text' "
            f"AND json_extract({alias}metadata, ?) <= ?, 0)"
        )
        params.extend((EXPIRY_PATH, EXPIRY_PATH, expiry_text(flt.live_at)))
    return " AND ".join(clauses), tuple(params)


EXPIRY_PATH = f'$."{EXPIRES_AT_KEY}"'
_JSON_TYPES = {bool: None, int: "('integer', 'real')", float: "('integer', 'real')", str: "('text')"}


def condition_sql(condition: MetadataCondition, column: str) -> tuple[str, list[Any]]:
    """The SQL of one metadata condition over the JSON ``column`` (never NULL: 1 or 0), with its
    parameters; the comparison rules of :mod:`retain.store.where`."""
    path = condition.path
    if condition.op == "$in":
        parts = [_equal_sql(value, path, column) for value in condition.value]
        return "(" + " OR ".join(p[0] for p in parts) + ")", [v for p in parts for v in p[1]]
    if condition.op in ("$eq", "$ne"):
        clause, params = _equal_sql(condition.value, path, column)
        return (clause if condition.op == "$eq" else f"NOT {clause}"), params
    value = condition.value
    sign = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[condition.op]
    types = _JSON_TYPES[type(value)]
    return f"coalesce(json_type({column}, ?) IN {types} AND json_extract({column}, ?) {sign} ?, 0)", [path, path, value]


def _equal_sql(value: Any, path: str, column: str) -> tuple[str, list[Any]]:
    if value is None:
        return f"coalesce(json_type({column}, ?), 'null') = 'null'", [path]
    if isinstance(value, bool):
        return f"coalesce(json_type({column}, ?) = ?, 0)", [path, "true" if value else "false"]
    types = _JSON_TYPES[type(value)]
    return f"coalesce(json_type({column}, ?) IN {types} AND json_extract({column}, ?) = ?, 0)", [path, path, value]


def same_content(op: FindByHash) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause and parameters of the current records ``op`` looks for (one definition for the
    duplicate look-up and the :class:`RequireUnique` guard, so the two can never disagree)."""
    where = "namespace = ? AND content_hash = ? AND superseded_by IS NULL"
    params: tuple[Any, ...] = (op.namespace, op.content_hash)
    if op.in_context:
        # Unary plus keeps these terms off the index choice: on (namespace, seq) with seq NULL the planner
        # would scan the whole namespace on every add; (namespace, content_hash) finds the few candidates.
        where += " AND +role IS ? AND +segment IS ? AND +seq IS ?"
        params += (op.role, op.segment, op.seq)
    return where, params
