"""The Postgres backend's schema and rows: the versioned migrations, a record as a row and back, the
WHERE clause of a :class:`~retain.store.RecordFilter`, and the terms of the lexical channel.

Rows hold the same values as the SQLite backend's (:mod:`retain.store.sqlite_rows`: times as integer
UTC microseconds, metadata as canonical JSON), except the embedding: a pgvector ``vector`` (float4,
so a record's float32 embedding round-trips exactly) with its dimension in ``vdim``, so one HNSW
index per dimension (cosine) can be built over ``vec::vector(d)``.

The lexical channel scores BM25 as SQLite's FTS5 does (k1 = 1.2, b = 0.75, idf =
ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, N and the mean length over the whole table), over the
same terms: :func:`retain.text.lexical.index_terms` run through FTS5's own tokenizer (``porter unicode61
remove_diacritics 2``, in an in-memory SQLite database). So the learned fusion sees one score scale and
one ranking on both backends.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from retain.record import MemoryRecord
from retain.store.filters import RecordFilter
from retain.store.fts5_tokens import fts5_tokens
from retain.store.ops import FindByHash
from retain.store.sqlite_rows import COLUMNS, record_values, row_to_record, to_us
from retain.store.where import EXPIRES_AT_KEY, MetadataCondition, expiry_text

__all__ = [
    "COLUMNS",
    "MIGRATIONS",
    "ORDERS",
    "filter_sql",
    "lex_terms",
    "lex_terms_many",
    "pg_record_values",
    "pg_row_to_record",
    "same_content",
    "tsquery_literal",
    "tsvector_literal",
]

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE records (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        content TEXT NOT NULL,
        type TEXT NOT NULL,
        role TEXT NOT NULL,
        source TEXT,
        event_time BIGINT,
        created_at BIGINT NOT NULL,
        seq BIGINT,
        segment TEXT,
        priority INTEGER NOT NULL,
        importance DOUBLE PRECISION NOT NULL,
        access_count INTEGER NOT NULL,
        last_accessed BIGINT,
        tier TEXT NOT NULL,
        pinned INTEGER NOT NULL,
        confidence DOUBLE PRECISION NOT NULL,
        supersedes TEXT,
        superseded_by TEXT,
        token_count INTEGER NOT NULL,
        embedding vector,
        encoder TEXT,
        metadata TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        vdim INTEGER,
        lex tsvector NOT NULL,
        lex_len INTEGER NOT NULL
    );
    CREATE INDEX records_ns_hash ON records (namespace, content_hash);
    CREATE INDEX records_ns_tier ON records (namespace, tier);
    CREATE INDEX records_ns_event ON records (namespace, event_time);
    CREATE INDEX records_ns_seq ON records (namespace, seq);
    CREATE INDEX records_ns_rowid ON records (namespace, rowid);
    CREATE INDEX records_lex ON records USING gin (lex);
    CREATE TABLE lex_stats (k INTEGER PRIMARY KEY, docs BIGINT NOT NULL, tokens BIGINT NOT NULL);
    INSERT INTO lex_stats VALUES (1, 0, 0);
    CREATE TABLE lex_df (term TEXT PRIMARY KEY, df BIGINT NOT NULL);
    CREATE TABLE ns_stats (namespace TEXT PRIMARY KEY, records BIGINT NOT NULL);
    CREATE TABLE vec_dims (vdim INTEGER PRIMARY KEY, indexed BOOLEAN NOT NULL DEFAULT false);
    CREATE TABLE audit (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        ts BIGINT NOT NULL,
        namespace TEXT,
        op TEXT NOT NULL,
        record_id TEXT,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL,
        policy TEXT,
        details TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE INDEX audit_ns ON audit (namespace, seq);
    CREATE FUNCTION retain_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit log is append-only'; END $$;
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit FOR EACH ROW EXECUTE FUNCTION retain_audit_append_only();
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit FOR EACH ROW EXECUTE FUNCTION retain_audit_append_only();
    CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
        FOR EACH STATEMENT EXECUTE FUNCTION retain_audit_append_only();
    CREATE TABLE provenance (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX provenance_ns ON provenance (namespace, created_at);
    CREATE TABLE edges (
        edge_id BIGINT GENERATED ALWAYS AS IDENTITY,
        namespace TEXT NOT NULL,
        src TEXT NOT NULL,
        dst TEXT NOT NULL,
        type TEXT NOT NULL,
        weight DOUBLE PRECISION NOT NULL,
        created_at BIGINT NOT NULL,
        metadata TEXT NOT NULL,
        PRIMARY KEY (namespace, src, dst, type)
    );
    CREATE INDEX edges_ns_dst ON edges (namespace, dst);
    """,
    # 2: the audit entries of given records (ReadAudit record_ids: the FIFO policy's entry order, a
    # record's page) read through an index, not by a walk of the namespace's whole log
    """
    CREATE INDEX IF NOT EXISTS audit_ns_record ON audit (namespace, record_id, seq);
    """,
    # 3: terms tokenized by FTS5's own tokenizer (lex_terms) instead of snowball's Porter stemmer; the
    # rows are indexed again by PostgresStore.setup (retain.store.postgres_lexical.relex), in Python
    """
    SELECT 1;
    """,
)
"""Append-only: a released migration is never edited; add a new one."""

APPEND_ONLY_TRIGGERS = frozenset({"audit_no_update", "audit_no_delete", "audit_no_truncate"})
"""Triggers of migration 1 that refuse UPDATE, DELETE and TRUNCATE on the audit table."""

ORDERS = {  # ListRecords.order -> ORDER BY; unknown positions and times sort last
    "created": "rowid",
    "seq": "seq NULLS LAST, rowid",
    "event": "event_time NULLS LAST, seq NULLS LAST, rowid",
    "recent": "rowid DESC",
}


_ESCAPED = "\x1b\x1bretain-json:"
"""Prefix of a text value stored as JSON: Postgres text cannot hold NUL, retain's texts can."""
_TEXT_FIELDS = (2, 4, 5, 9, 21)  # content, role, source, segment, encoder


def escape_text(value: str | None) -> str | None:
    """``value`` as a Postgres text can hold it: unchanged, unless it holds a NUL (or starts with the
    escape prefix), then the prefix and its JSON string (which spells NUL ``\\u0000``)."""
    if value is None or ("\x00" not in value and not value.startswith(_ESCAPED)):
        return value
    return _ESCAPED + json.dumps(value)


def unescape_text(value: str | None) -> str | None:
    """The inverse of :func:`escape_text`."""
    if value is None or not value.startswith(_ESCAPED):
        return value
    return str(json.loads(value[len(_ESCAPED) :]))


def pg_record_values(rec: MemoryRecord) -> tuple[Any, ...]:
    """The row of ``rec`` in :data:`COLUMNS` order, then ``vdim``: as the SQLite row, with the
    embedding as a float32 numpy array (adapted to ``vector`` by pgvector) instead of bytes."""
    values = list(record_values(rec))
    for i in _TEXT_FIELDS:
        values[i] = escape_text(values[i])
    vec = None if rec.embedding is None else np.asarray(rec.embedding, dtype=np.float32)
    values[20] = vec
    return (*values, None if vec is None else int(vec.shape[0]))


def pg_row_to_record(row: Sequence[Any]) -> MemoryRecord:
    """A record from a row of :data:`COLUMNS` (the embedding read back as a numpy array)."""
    values = list(row)
    for i in _TEXT_FIELDS:
        values[i] = unescape_text(values[i])
    if values[20] is not None:
        vec = values[20]
        vec = vec.to_numpy() if hasattr(vec, "to_numpy") else vec  # pgvector's Vector, or already an array
        values[20] = np.asarray(vec, dtype="<f4").tobytes()
    return row_to_record(values)


def filter_sql(namespace: str, flt: RecordFilter, alias: str = "") -> tuple[str, list[Any]]:
    """The WHERE clause (without ``WHERE``, ``%s`` placeholders) and parameters of the records of
    ``namespace`` that ``flt`` keeps; ``alias`` (e.g. ``"r."``) prefixes every column."""
    clauses = [f"{alias}namespace = %s"]
    params: list[Any] = [namespace]
    if flt.types is not None:
        clauses.append(f"{alias}type = ANY(%s)")
        params.append([t.value for t in flt.types])
    if flt.tiers is not None:
        clauses.append(f"{alias}tier = ANY(%s)")
        params.append([t.value for t in flt.tiers])
    if flt.segments is not None:
        clauses.append(f"{alias}segment = ANY(%s::text[])")
        params.append([escape_text(v) for v in flt.segments])
    if flt.seqs is not None:
        clauses.append(f"{alias}seq = ANY(%s::bigint[])")
        params.append(list(flt.seqs))
    if not flt.include_superseded:
        clauses.append(f"{alias}superseded_by IS NULL")
    if flt.start is not None:
        clauses.append(f"{alias}event_time >= %s")
        params.append(to_us(flt.start))
    if flt.end is not None:
        clauses.append(f"{alias}event_time < %s")
        params.append(to_us(flt.end))
    for condition in flt.where or ():
        clause, condition_params = condition_sql(condition, f"{alias}metadata")
        clauses.append(clause)
        params.extend(condition_params)
    if flt.live_at is not None:
        clause, live_params = live_sql(alias, flt.live_at)
        clauses.append(clause)
        params.extend(live_params)
    return " AND ".join(clauses), params


# --- metadata conditions: the comparison rules of retain.store.where (a number compares with numbers,
# a string with strings in byte order; a missing key or another type matches no range and no equality)

_SIGNS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _value(column: str) -> tuple[str, str]:
    """The SQL of the JSON value at the path parameter, and of its type ('number', 'string', ...)."""
    return f"({column}::jsonb #> %s::text[])", f"jsonb_typeof({column}::jsonb #> %s::text[])"


def _compare(value: Any, sign: str, column: str, path: list[str]) -> tuple[str, list[Any]]:
    _, kind = _value(column)
    text = f"({column}::jsonb #>> %s::text[])"
    if isinstance(value, bool):
        return f"coalesce({kind} = 'boolean' AND {text} = %s, false)", [path, path, "true" if value else "false"]
    if isinstance(value, int | float):
        return f"(CASE WHEN {kind} = 'number' THEN {text}::numeric {sign} %s::numeric ELSE false END)", [
            path,
            path,
            value,
        ]
    return f"(CASE WHEN {kind} = 'string' THEN {text} COLLATE \"C\" {sign} %s ELSE false END)", [path, path, value]


def _equal(value: Any, column: str, path: list[str]) -> tuple[str, list[Any]]:
    if value is None:
        _, kind = _value(column)
        return f"coalesce({kind}, 'null') = 'null'", [path]
    return _compare(value, "=", column, path)


def condition_sql(condition: MetadataCondition, column: str) -> tuple[str, list[Any]]:
    """The SQL of one metadata condition over the JSON text ``column`` (never NULL), with its parameters."""
    path = condition.key.split(".")
    if condition.op == "$in":
        parts = [_equal(v, column, path) for v in condition.value]
        return "(" + " OR ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    if condition.op in ("$eq", "$ne"):
        clause, params = _equal(condition.value, column, path)
        return (clause if condition.op == "$eq" else f"NOT {clause}"), params
    return _compare(condition.value, _SIGNS[condition.op], column, path)


def live_sql(alias: str, live_at: Any) -> tuple[str, list[Any]]:
    """Records not expired at ``live_at``: archived, without an expiry text, or expiring after it."""
    path = [EXPIRES_AT_KEY]
    clause, params = _compare(expiry_text(live_at), "<=", f"{alias}metadata", path)
    return f"NOT ({alias}tier IN ('core', 'dynamic') AND {clause})", params


def same_content(op: FindByHash) -> tuple[str, list[Any]]:
    """The WHERE clause and parameters of the current records a duplicate look-up finds (as SQLite's)."""
    where = "namespace = %s AND content_hash = %s AND superseded_by IS NULL"
    params: list[Any] = [op.namespace, op.content_hash]
    if op.in_context:
        where += " AND role IS NOT DISTINCT FROM %s AND segment IS NOT DISTINCT FROM %s"
        where += " AND seq IS NOT DISTINCT FROM %s"
        params += [escape_text(op.role), escape_text(op.segment), op.seq]
    return where, params


def lex_terms(terms: Sequence[str]) -> list[str]:
    """Index or query terms as FTS5's ``porter unicode61 remove_diacritics 2`` stores them (the SQLite
    store's tokenizer, run here on each term): lower case, diacritics removed, Porter-stemmed; empty
    terms dropped."""
    return fts5_tokens().terms([t for t in terms if t])


def lex_terms_many(texts: Sequence[Sequence[str]]) -> list[list[str]]:
    """:func:`lex_terms` of each of ``texts`` (lists of terms), the new words of all of them tokenized
    in one pass (a write batch's records)."""
    words = [[t for t in terms if t] for terms in texts]
    each = iter(fts5_tokens().each([t for terms in words for t in terms]))
    return [[token for _ in terms for token in next(each)] for terms in words]


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(terms: Sequence[str]) -> str:
    """A ``tsvector`` literal of ``terms`` (already :func:`lex_terms`) with their positions (1-based,
    capped at 16383 as Postgres does), so a term's frequency is the length of its position list."""
    positions: dict[str, list[int]] = {}
    for i, term in enumerate(terms, start=1):
        positions.setdefault(term, []).append(min(i, 16383))
    return " ".join(f"{_quote(t)}:{','.join(map(str, p[:256]))}" for t, p in positions.items())


def tsquery_literal(terms: Sequence[str]) -> str:
    """A ``tsquery`` literal matching any of ``terms`` (already :func:`lex_terms`)."""
    return " | ".join(_quote(t) for t in dict.fromkeys(terms))


def term_counts(terms: Sequence[str]) -> Counter[str]:
    """How often each term occurs in a query (FTS5 sums a repeated phrase once per occurrence)."""
    return Counter(terms)
