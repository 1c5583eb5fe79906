"""Postgres backend: the same store contract over one Postgres database, for several processes and
servers sharing one memory.

* ``psycopg`` 3 with pgvector; any ``postgresql://`` URL (managed services included). Needs the
  ``postgres`` extra and the ``vector`` extension available on the server (``setup()`` creates it).
* Every batch is one transaction. A batch that writes first takes one transaction-scoped advisory
  lock, so writers are serialised across every process and server as SQLite's ``BEGIN IMMEDIATE``
  serialises them on one file: the audit hash chain stays one chain and a retention decision is
  made against the committed hot count. Readers never wait.
* Dense channel: cosine over ``embedding``; a namespace of at least :data:`ANN_MIN_RECORDS` records is
  searched through an HNSW index (pgvector, ``vector_cosine_ops``, one per dimension) with strict-order
  iterative scans, so filters still return ``limit`` hits; a smaller namespace is scanned exactly through
  its namespace index, never through the whole table.
* Lexical channel: BM25 computed as FTS5 computes it, over the same stemmed terms
  (:mod:`retain.store.postgres_lexical`), from a GIN index on a ``tsvector`` and table-wide term
  statistics kept in the write transaction; a large namespace ranks the records of its rarer terms.
* Nothing is cached between batches: another process's commit is seen by the next batch.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

import retain.store.ops as store_ops
import retain.store.postgres_audit as audit
import retain.store.postgres_browse as browse
import retain.store.postgres_index as hnsw
from retain.errors import (
    InvalidInput,
    SchemaError,
    StoreUnavailable,
)
from retain.record import MemoryRecord, search_text
from retain.store.base import Store
from retain.store.postgres_lexical import lexical_search, relex
from retain.store.postgres_sql import (
    COLUMNS,
    MIGRATIONS,
    ORDERS,
    filter_sql,
    lex_terms_many,
    pg_record_values,
    pg_row_to_record,
    same_content,
    tsvector_literal,
)
from retain.text.lexical import index_terms

__all__ = ["ANN_MIN_RECORDS", "SCHEMA_VERSION", "PostgresStore", "redact_url"]

SCHEMA_VERSION = len(MIGRATIONS)
ANN_MIN_RECORDS = 20_000
"""Namespaces with at least this many records are searched through the HNSW index; smaller ones exactly."""
_RELEX_VERSION = 3
"""The migration from which terms are FTS5's: a store set up before it is indexed again (``relex``)."""
_WRITE_LOCK = 0x7265746169
"""Key of the advisory lock every writing batch holds until it commits."""
_SETUP_LOCK = 0x7265746170
_EF_SEARCH = 200
"""Candidates an HNSW search keeps at least (pgvector's ``hnsw.ef_search``; its default, 40, loses
recall: 100 gave dense recall@10 0.92-0.96 at 1,000,000 records, 200 gives 0.97, docs/benchmarks.md)."""
_EF_MAX = 1_000
"""pgvector's largest ``hnsw.ef_search``; a larger ``limit`` is served by the strict-order iterative scan."""
_EF_PER_HIT = 2
"""At least this many candidates per hit asked for (``ef_search = max(_EF_SEARCH, _EF_PER_HIT * limit)``)."""

_WRITE_OPS = (
    store_ops.PutRecords,
    store_ops.DeleteRecords,
    store_ops.DeleteNamespace,
    store_ops.AppendAudit,
    store_ops.PutProvenance,
    store_ops.PutEdges,
)


def redact_url(url: str) -> str:
    """``url`` without its password (for messages and :attr:`PostgresStore.location`)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def _describe(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or "(local socket)"
    return f"host {host}, database {parts.path.lstrip('/') or '(default)'}"


class PostgresStore(Store):
    """A store in a Postgres database.

    Args:
        url: a libpq connection URL, ``postgresql://user:password@host:port/database?...``.
        schema: the Postgres schema holding retain's tables (created when missing); default the
            connection's current schema (``public``, or the URL's ``options=-csearch_path=...``).
            Several independent stores can share one database under different schemas.
        connect_timeout: seconds to wait for the server when connecting.
        index_on_write: build the HNSW index inside the write that brings a namespace to
            :data:`ANN_MIN_RECORDS` records (default). ``False`` for a bulk load: no write builds it
            (pgvector's advice: load first, index after); call :meth:`build_index` when the load is
            done. Until then large namespaces are searched exactly (right, but slower). An index
            that already exists is updated by every insert either way.

    Call :meth:`setup` once before use (``retain.Memory`` does it for you).

    Raises:
        StoreUnavailable: the server cannot be reached or refuses the login (the message names the
            host and database, never the password). Nothing was created.
        InvalidInput: ``url`` is not a ``postgresql://`` or ``postgres://`` URL, or ``schema`` is not
            a plain identifier.
        SchemaError: the ``postgres`` extra (psycopg, pgvector) is not installed.
    """

    supports_vector = True
    supports_lexical = True
    supports_ann = True
    supports_raw_audit = True

    def __init__(
        self, url: str, *, schema: str | None = None, connect_timeout: float = 10.0, index_on_write: bool = True
    ) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("postgresql", "postgres"):
            raise InvalidInput(f"url: expected a postgresql:// URL, got {redact_url(str(url))!r}")
        if schema is not None and (not isinstance(schema, str) or not schema.isidentifier() or not schema.isascii()):
            raise InvalidInput(f"schema: must be a plain ASCII identifier, got {schema!r}")
        self._url = url
        self._schema = schema
        self._timeout = connect_timeout
        self._index_on_write = bool(index_on_write)
        self._lock = threading.RLock()
        self._ready = False
        self._conn = self._connect()

    @property
    def location(self) -> str:
        return redact_url(self._url) + ("" if self._schema is None else f" (schema {self._schema})")

    # --- connection -----------------------------------------------------------------------

    def _connect(self) -> Any:
        try:
            import psycopg
        except ImportError as exc:
            raise SchemaError("the Postgres backend needs the postgres extra: pip install 'retain[postgres]'") from exc
        try:
            conn = psycopg.connect(self._url, autocommit=True, connect_timeout=max(1, int(self._timeout)))
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreUnavailable(f"cannot connect to Postgres ({_describe(self._url)}): {reason}") from None
        if self._schema is not None:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"')
            conn.execute(f'SET search_path TO "{self._schema}", public')
        if self._ready:
            self._register(conn)
        return conn

    @staticmethod
    def _register(conn: Any) -> None:
        from pgvector.psycopg import register_vector

        register_vector(conn)

    def _reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = self._connect()

    # --- schema ---------------------------------------------------------------------------

    def setup(self) -> None:
        """Create the ``vector`` extension and apply pending migrations, under an advisory lock so
        concurrent first starts migrate once.

        Raises:
            SchemaError: the database has a newer schema than this retain, or pgvector is missing.
            StoreUnavailable: the connection broke.
        """
        import psycopg

        with self._lock:
            try:
                with self._conn.transaction():
                    self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SETUP_LOCK,))
                    self._conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                    row = self._conn.execute("SELECT version FROM schema_version").fetchone()
                    current = 0 if row is None else int(row[0])
                    if current > SCHEMA_VERSION:
                        raise SchemaError(
                            f"{self.location} has schema version {current}; this retain knows up to "
                            f"{SCHEMA_VERSION}. Upgrade retain."
                        )
                    for version in range(current, SCHEMA_VERSION):
                        self._conn.execute(MIGRATIONS[version])
                    if 0 < current < _RELEX_VERSION:
                        with self._conn.cursor() as cur:
                            relex(cur)
                    self._conn.execute("DELETE FROM schema_version")
                    self._conn.execute("INSERT INTO schema_version VALUES (%s)", (SCHEMA_VERSION,))
            except psycopg.errors.FeatureNotSupported as exc:
                raise SchemaError(f"{self.location}: {exc}") from exc
            except psycopg.errors.UndefinedFile as exc:
                raise SchemaError(f"{self.location}: the pgvector extension is not installed ({exc})") from exc
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(f"Postgres ({_describe(self._url)}): {exc}") from exc
            self._register(self._conn)
            self._ready = True

    def build_index(self, namespace: str | None = None) -> list[int]:
        """Build the HNSW index of every embedding dimension not indexed yet when some namespace holds
        at least :data:`ANN_MIN_RECORDS` records (after a load with ``index_on_write=False``), with the
        ``maintenance_work_mem`` the graph needs; returns the dimensions indexed (``[]``: nothing to
        do). Blocks until built; readers go on, writers wait. ``namespace`` is accepted for the SQLite
        store's signature: the index is the table's, shared by every namespace.

        Raises:
            StoreUnavailable: the connection broke.
        """
        del namespace
        return list(
            self._transact(lambda cur: hnsw.build(cur) if hnsw.large(cur, ANN_MIN_RECORDS) else [], writes=True)
        )

    @property
    def index_deferred(self) -> bool:
        """True for a store opened for a bulk load (``index_on_write=False``): :meth:`build_index`
        is the caller's to run after the load (``retain migrate`` does)."""
        return not self._index_on_write

    def wait_for_index(self, timeout: float | None = None) -> None:
        """Return at once: :meth:`build_index` blocks until the index is built (the SQLite store's
        counterpart builds in the background)."""
        del timeout

    def get_meta(self, key: str) -> str | None:
        rows = self._transact(lambda cur: cur.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone())
        return None if rows is None else str(rows[0])

    def set_meta(self, key: str, value: str) -> None:
        sql = "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        self._transact(lambda cur: cur.execute(sql, (key, value)), writes=True)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._ready = False

    # --- batch ----------------------------------------------------------------------------

    def batch(self, ops: Sequence[store_ops.Op]) -> list[Any]:
        """Run ``ops`` in one transaction (holding the write lock when any op writes).

        Raises:
            StoreUnavailable: the connection broke and could not be made again; a batch that
                writes is never retried (it may or may not have committed: read back to know).
        """
        writes = any(isinstance(op, _WRITE_OPS) for op in ops)
        results: list[Any] = self._transact(lambda cur: [self._run(cur, op) for op in ops], writes=writes)
        return results

    def _transact(self, work: Callable[[Any], Any], *, writes: bool = False) -> Any:
        import psycopg

        if not self._ready:
            raise SchemaError("store is not set up: call setup() first (retain.Memory does)")
        with self._lock:
            for attempt in (1, 2):
                try:
                    with self._conn.transaction(), self._conn.cursor() as cur:
                        if writes:  # read committed: each statement sees every commit made before the lock
                            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
                        else:  # one snapshot for every read of the batch (statistics and rows agree)
                            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        return work(cur)
                except psycopg.OperationalError as exc:
                    broken = self._conn.closed or self._conn.broken
                    if not broken:
                        raise StoreUnavailable(f"Postgres ({_describe(self._url)}): {exc}") from exc
                    self._reconnect()  # raises StoreUnavailable when the server stays down
                    if writes or attempt == 2:
                        raise StoreUnavailable(
                            f"the connection to Postgres ({_describe(self._url)}) broke during a batch "
                            "that writes; it may or may not have committed (read back to know)"
                        ) from exc
            raise AssertionError("unreachable")  # pragma: no cover

    def _run(self, cur: Any, op: store_ops.Op) -> Any:
        op = self.keyed(op)
        handler = _HANDLERS.get(type(op))
        if handler is not None:
            return handler.__get__(self)(cur, op)
        on_cursor = audit.HANDLERS.get(type(op)) or browse.HANDLERS[type(op)]
        return on_cursor(cur, op)

    # --- records --------------------------------------------------------------------------

    def _put(self, cur: Any, op: store_ops.PutRecords) -> None:
        """Insert new records and update known ones in two ``executemany`` passes (a record put twice
        in one batch is written once, as its last version), then fold the changes into the statistics."""
        if not op.records:
            return
        known = {
            row[0]: (row[1], list(row[2]), int(row[3]))
            for row in cur.execute(
                "SELECT id, namespace, tsvector_to_array(lex), lex_len FROM records WHERE id = ANY(%s)",
                ([r.id for r in op.records],),
            ).fetchall()
        }
        inserts: dict[str, tuple[Any, ...]] = {}
        updates: dict[str, tuple[Any, ...]] = {}
        df: Counter[str] = Counter()
        tokens = 0
        namespaces: Counter[str] = Counter()
        dims: set[int] = set()
        lexes = lex_terms_many([index_terms(search_text(rec)) for rec in op.records])
        for rec, terms in zip(op.records, lexes, strict=True):
            prev = known.get(rec.id)
            if prev is not None and prev[0] != rec.namespace:
                raise InvalidInput(f"id {rec.id} already exists in another namespace")
            values = (*pg_record_values(rec), tsvector_literal(terms), len(terms))
            if values[-3] is not None:
                dims.add(int(values[-3]))
            if prev is None:
                namespaces[rec.namespace] += 1
            else:
                df.subtract(prev[1])
                tokens -= prev[2]
            (updates if rec.id in updates or (prev is not None and rec.id not in inserts) else inserts)[rec.id] = values
            known[rec.id] = (rec.namespace, sorted(set(terms)), len(terms))
            df.update(set(terms))
            tokens += len(terms)
        self._check_dims(cur, dims)
        if inserts:
            marks = ", ".join(["%s"] * 27)
            cur.executemany(
                f"INSERT INTO records ({COLUMNS}, vdim, lex, lex_len) VALUES ({marks})", list(inserts.values())
            )
        if updates:
            assign = ", ".join(f"{c.strip()} = %s" for c in COLUMNS.split(",")) + ", vdim = %s, lex = %s, lex_len = %s"
            cur.executemany(f"UPDATE records SET {assign} WHERE id = %s", [(*v, i) for i, v in updates.items()])
        _apply_stats(cur, df, sum(namespaces.values()), tokens, namespaces)
        if self._index_on_write:
            hnsw.index_large(cur, list(namespaces), ANN_MIN_RECORDS)

    @staticmethod
    def _check_dims(cur: Any, dims: set[int]) -> None:
        for dim in sorted(dims):
            if not 0 < dim <= 2000:
                raise InvalidInput(f"embedding: {dim} dimensions; the Postgres backend indexes 1 to 2000")
            cur.execute("INSERT INTO vec_dims (vdim) VALUES (%s) ON CONFLICT (vdim) DO NOTHING", (dim,))

    def _get(self, cur: Any, op: store_ops.GetRecords) -> list[MemoryRecord]:
        return self._fetch(cur, op.namespace, op.ids)

    def _fetch(self, cur: Any, namespace: str, ids: Sequence[str]) -> list[MemoryRecord]:
        if not ids:
            return []
        rows = cur.execute(  # binary: an embedding read as text costs ~1 ms to parse, as bytes ~10 us
            f"SELECT {COLUMNS} FROM records WHERE namespace = %s AND id = ANY(%s)",
            (namespace, list(set(ids))),
            binary=True,
        ).fetchall()
        found = {row[0]: pg_row_to_record(row) for row in rows}
        return [found[i] for i in ids if i in found]

    def _find_by_hash(self, cur: Any, op: store_ops.FindByHash) -> MemoryRecord | None:
        where, params = same_content(op)
        sql = f"SELECT {COLUMNS} FROM records WHERE {where} ORDER BY rowid LIMIT 1"
        row = cur.execute(sql, params, binary=True).fetchone()
        return None if row is None else pg_row_to_record(row)

    def _require_current(self, cur: Any, op: store_ops.RequireCurrent) -> None:
        row = cur.execute(
            "SELECT superseded_by FROM records WHERE namespace = %s AND id = %s", (op.namespace, op.id)
        ).fetchone()
        store_ops.check_current(op, None if row is None else row[0], row is not None)

    def _require_unchanged(self, cur: Any, op: store_ops.RequireUnchanged) -> None:
        row = cur.execute(
            "SELECT superseded_by, tier FROM records WHERE namespace = %s AND id = %s", (op.namespace, op.id)
        ).fetchone()
        store_ops.check_unchanged(op, None if row is None else (row[0], row[1]))

    def _require_hot(self, cur: Any, op: store_ops.RequireHot) -> None:
        rows = cur.execute(
            "SELECT id FROM records WHERE namespace = %s AND superseded_by IS NULL AND tier IN ('core', 'dynamic')",
            (op.namespace,),
        ).fetchall()
        store_ops.check_hot(op, frozenset(r[0] for r in rows))

    def _require_unique(self, cur: Any, op: store_ops.RequireUnique) -> None:
        where, params = same_content(
            store_ops.FindByHash(op.namespace, op.content_hash, True, op.role, op.segment, op.seq)
        )
        row = cur.execute(f"SELECT id FROM records WHERE {where} ORDER BY rowid LIMIT 1", params).fetchone()
        store_ops.check_unique(op, None if row is None else row[0])

    def _list(self, cur: Any, op: store_ops.ListRecords) -> list[MemoryRecord]:
        ids = self._list_ids(cur, store_ops.ListIds(op.namespace, op.filter, op.limit, op.order))
        return self._fetch(cur, op.namespace, ids)

    def _list_ids(self, cur: Any, op: store_ops.ListIds) -> list[str]:
        order = ORDERS.get(op.order)
        if order is None:
            raise InvalidInput(f"order: {op.order!r} is not one of created, seq, event, recent")
        where, params = filter_sql(op.namespace, op.filter)
        sql = f"SELECT id FROM records WHERE {where} ORDER BY {order}"
        if op.limit is not None:
            sql += f" LIMIT {int(op.limit)}"
        return [r[0] for r in cur.execute(sql, params).fetchall()]

    def _count(self, cur: Any, op: store_ops.CountRecords) -> int:
        where, params = filter_sql(op.namespace, op.filter)
        return int(cur.execute(f"SELECT COUNT(*) FROM records WHERE {where}", params).fetchone()[0])

    # --- search ---------------------------------------------------------------------------

    def _lexical(self, cur: Any, op: store_ops.LexicalSearch) -> list[store_ops.ScoredId]:
        return lexical_search(cur, op, _large_namespace(cur, op.namespace))

    def _vector(self, cur: Any, op: store_ops.VectorSearch) -> list[store_ops.ScoredId]:
        query = np.asarray(op.vector, dtype=np.float32).reshape(-1)
        return self._nearest(cur, op.namespace, query, op.filter, int(op.limit))

    def _multi_vector(self, cur: Any, op: store_ops.MultiVectorSearch) -> list[list[store_ops.ScoredId]]:
        queries = np.asarray(op.vectors, dtype=np.float32)
        if queries.ndim != 2:
            raise InvalidInput(f"vectors: expected a (p, d) matrix, got shape {queries.shape}")
        return [self._nearest(cur, op.namespace, q, op.filter, int(op.limit)) for q in queries]

    def _nearest(self, cur: Any, namespace: str, query: np.ndarray, flt: Any, limit: int) -> list[store_ops.ScoredId]:
        """Cosine top-``limit`` (score = cosine similarity in [-1, 1], higher = closer) among the
        namespace's records: through the HNSW index for a large namespace, else an exact scan of the
        namespace (the query is L2-normalised; stored embeddings are, so the dot product is the cosine).

        Raises:
            InvalidInput: the query's dimension is not one the store holds.
        """
        dim = int(query.shape[0])
        held = {int(d): bool(i) for d, i in cur.execute("SELECT vdim, indexed FROM vec_dims").fetchall()}
        if held and dim not in held:
            raise InvalidInput(f"vector: dimension {dim}, store holds {', '.join(map(str, sorted(held)))}")
        if limit <= 0 or dim == 0:
            return []
        norm = float(np.linalg.norm(query))
        unit = query / np.float32(norm) if norm > 0 else query
        large = _large_namespace(cur, namespace)
        where, params = filter_sql(namespace, flt)
        if norm > 0 and held.get(dim) and large:
            cur.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            cur.execute(f"SET LOCAL hnsw.ef_search = {min(_EF_MAX, max(_EF_SEARCH, _EF_PER_HIT * limit))}")
            distance = f"embedding::vector({dim}) <=> %s::vector({dim})"
            score = f"1 - ({distance})"
        else:  # exact: the namespace's rows through its index, never the whole table
            distance = "embedding <#> %s::vector"  # negative inner product
            score = f"-({distance})"
        sql = f"SELECT id, {score} AS s FROM records WHERE {where} AND vdim = %s ORDER BY {distance}, rowid LIMIT %s"
        rows = cur.execute(sql, [unit, *params, dim, unit, limit]).fetchall()
        return [store_ops.ScoredId(r[0], float(r[1])) for r in rows]

    # --- deletes --------------------------------------------------------------------------

    def _delete(self, cur: Any, op: store_ops.DeleteRecords) -> int:
        if not op.ids:
            return 0
        rows = cur.execute(
            "DELETE FROM records WHERE namespace = %s AND id = ANY(%s) RETURNING tsvector_to_array(lex), lex_len",
            (op.namespace, list(set(op.ids))),
        ).fetchall()
        audit.purge_edges(cur, op.namespace, op.ids)
        audit.forget_provenance(cur, op.namespace, op.ids)  # the queries that found them
        self._forget_stats(cur, op.namespace, rows)
        return len(rows)

    def _delete_namespace(self, cur: Any, op: store_ops.DeleteNamespace) -> int:
        rows = cur.execute(
            "DELETE FROM records WHERE namespace = %s RETURNING tsvector_to_array(lex), lex_len", (op.namespace,)
        ).fetchall()
        cur.execute("DELETE FROM provenance WHERE namespace = %s", (op.namespace,))
        audit.purge_edges(cur, op.namespace, None)
        self._forget_stats(cur, op.namespace, rows)
        return len(rows)

    @staticmethod
    def _forget_stats(cur: Any, namespace: str, rows: list[tuple[list[str], int]]) -> None:
        df: Counter[str] = Counter()
        for terms, _ in rows:
            df.subtract(terms)
        _apply_stats(cur, df, -len(rows), -sum(int(n) for _, n in rows), Counter({namespace: -len(rows)}))

    def _namespaces(self, cur: Any, op: store_ops.ListNamespaces) -> list[str]:
        return [r[0] for r in cur.execute("SELECT namespace FROM ns_stats WHERE records > 0 ORDER BY namespace")]


def _large_namespace(cur: Any, namespace: str) -> bool:
    """Whether ``namespace`` holds :data:`ANN_MIN_RECORDS` records or more (HNSW and the rare-terms plan)."""
    row = cur.execute("SELECT records FROM ns_stats WHERE namespace = %s", (namespace,)).fetchone()
    return row is not None and int(row[0]) >= ANN_MIN_RECORDS


def _apply_stats(cur: Any, df: Counter[str], docs: int, tokens: int, namespaces: Counter[str]) -> None:
    """Fold a write's changes into the BM25 statistics and the per-namespace counts; a term no record
    holds any more is deleted (no word of a purged record stays behind)."""
    changed = {t: n for t, n in df.items() if n}
    if changed:
        cur.execute(
            "INSERT INTO lex_df (term, df) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
            "ON CONFLICT (term) DO UPDATE SET df = lex_df.df + excluded.df",
            (list(changed), list(changed.values())),
        )
        fallen = [t for t, n in changed.items() if n < 0]
        if fallen:  # only a term whose count fell can reach 0
            cur.execute("DELETE FROM lex_df WHERE term = ANY(%s) AND df <= 0", (fallen,))
    if docs or tokens:
        cur.execute("UPDATE lex_stats SET docs = docs + %s, tokens = tokens + %s WHERE k = 1", (docs, tokens))
    moved = {ns: n for ns, n in namespaces.items() if n}
    if moved:
        cur.execute(
            "INSERT INTO ns_stats (namespace, records) SELECT * FROM unnest(%s::text[], %s::bigint[]) "
            "ON CONFLICT (namespace) DO UPDATE SET records = ns_stats.records + excluded.records",
            (list(moved), list(moved.values())),
        )
        emptied = [ns for ns, n in moved.items() if n < 0]
        if emptied:
            cur.execute("DELETE FROM ns_stats WHERE namespace = ANY(%s) AND records <= 0", (emptied,))


_HANDLERS: dict[type, Any] = {
    store_ops.PutRecords: PostgresStore._put,
    store_ops.GetRecords: PostgresStore._get,
    store_ops.FindByHash: PostgresStore._find_by_hash,
    store_ops.RequireCurrent: PostgresStore._require_current,
    store_ops.RequireUnchanged: PostgresStore._require_unchanged,
    store_ops.RequireUnique: PostgresStore._require_unique,
    store_ops.RequireHot: PostgresStore._require_hot,
    store_ops.ListRecords: PostgresStore._list,
    store_ops.ListIds: PostgresStore._list_ids,
    store_ops.CountRecords: PostgresStore._count,
    store_ops.LexicalSearch: PostgresStore._lexical,
    store_ops.VectorSearch: PostgresStore._vector,
    store_ops.MultiVectorSearch: PostgresStore._multi_vector,
    store_ops.DeleteRecords: PostgresStore._delete,
    store_ops.DeleteNamespace: PostgresStore._delete_namespace,
    store_ops.ListNamespaces: PostgresStore._namespaces,
}
