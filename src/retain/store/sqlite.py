"""SQLite backend: the embedded default.

* stdlib ``sqlite3``, WAL journal, ``busy_timeout``, ``secure_delete`` (purged rows are zeroed).
* Writes run under ``BEGIN IMMEDIATE`` so two processes never deadlock on a lock upgrade.
* Versioned, append-only migrations, run only by :meth:`SQLiteStore.setup`.
* Lexical channel: FTS5 (``porter unicode61``) over :func:`retain.text.lexical.index_terms`, so CJK text
  is indexed as character bigrams; score = -bm25() (higher = more relevant).
* Dense channel: embeddings as float32 blobs; exact cosine by a numpy scan over a per-namespace
  matrix cached in memory (with every record's filter columns, in write order). Local writes bring it
  up to date (new records appended, a few updated ones changed in place); deletes, larger updates and
  ``PRAGMA data_version`` (commits from other connections or processes) drop it.
  :class:`MultiVectorSearch` answers several query vectors with one product over that matrix.
* Decoded records are cached per namespace and id: a write drops the ids it wrote (a delete, the
  namespace), a rolled-back write or another connection's commit drops everything. Records handed
  out are shared between calls; they are frozen values, and their ``metadata`` is read-only at every
  depth (:func:`retain.record.read_only_json`: a change raises ``TypeError``).

This module holds the store, its transactions and caches, and the record handlers; the other parts
sit beside it: :mod:`~retain.store.sqlite_schema` (the folder check and the migrations),
:mod:`~retain.store.sqlite_rows` (records as rows, filters as SQL), :mod:`~retain.store.sqlite_index`
(the dense index and scan), :mod:`~retain.store.sqlite_audit` (audit log and provenance),
:mod:`~retain.store.sqlite_edges` (edges).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import retain.store.ops as store_ops
from retain.errors import InvalidInput, SchemaError
from retain.record import MemoryRecord, Tier, search_text
from retain.store.base import Store
from retain.store.filters import RecordFilter
from retain.store.sqlite_ann import AnnConfig, AnnSet, bump_epoch, exact_scan
from retain.store.sqlite_audit import HANDLERS as AUDIT_HANDLERS
from retain.store.sqlite_audit import forget_provenance
from retain.store.sqlite_browse import audit_histogram, namespace_stats, page_ids, query_audit
from retain.store.sqlite_edges import list_edges, purge_edges, put_edges
from retain.store.sqlite_index import NamespaceIndex, build_index, nearest
from retain.store.sqlite_lexical import lexical_search
from retain.store.sqlite_rows import COLUMNS, ORDERS, filter_sql, record_values, row_to_record, same_content
from retain.store.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, check_folder, split_sql
from retain.text.lexical import index_terms

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

BUSY_TIMEOUT_MS = 30_000
RECORD_CACHE_LIMIT = 20_000
"""Most decoded records cached (all namespaces together); past it the cache starts over."""
_IN_CHUNK = 500
"""Ids per ``IN (...)`` query (well under SQLite's bound-parameter limit)."""
_SEARCH_MEMO_LIMIT = 256
"""Most answers of single query vectors memoised per namespace index."""

_WRITE_OPS = (
    store_ops.PutRecords,
    store_ops.DeleteRecords,
    store_ops.DeleteNamespace,
    store_ops.AppendAudit,
    store_ops.PutProvenance,
    store_ops.PutEdges,
)


class SQLiteStore(Store):
    """The default store: one SQLite file (or ``":memory:"``).

    Args:
        path: file path, or ":memory:" for a private in-memory database. The file is created when
            missing; its folder must exist (as for :func:`sqlite3.connect`), unless ``create_dirs``.
            The path is used as given (no ``~`` expansion; a ``~`` path whose folder is missing is
            refused, ``create_dirs`` or not, rather than a folder named ``~`` made here).
        create_dirs: create the missing folders of ``path`` first (``mkdir -p``). Default False: a
            missing folder is refused, so a typo in a path does not quietly start a new store.
        ann: the HNSW channel of large namespaces (:class:`~retain.store.sqlite_ann.AnnConfig`;
            graphs in ``<path>.ann/``), or None for the exact scan at every size. A file database
            only: ``":memory:"`` always scans exactly. With it, :attr:`supports_ann` is True.

    Call :meth:`setup` once before use (``retain.Memory`` does it for you).

    Raises:
        InvalidInput: the folder of ``path`` does not exist (and ``create_dirs`` is False), is not a
            folder, or cannot be created; ``path`` empty, holding a NUL, or not a str or path (bytes);
            ``create_dirs`` not a bool. Nothing was created.
        SchemaError: the path cannot be opened as an SQLite database; the file was written by a
            newer retain (higher schema version).
    """

    supports_vector = True
    supports_lexical = True
    supports_ann = False
    supports_raw_audit = True
    supports_browse = True

    def __init__(
        self, path: str | Path = ":memory:", *, create_dirs: bool = False, ann: AnnConfig | None = AnnConfig()
    ) -> None:
        if not isinstance(create_dirs, bool):
            raise InvalidInput(f"create_dirs: must be a bool, got {create_dirs!r}")
        # str() of bytes is "b'x.db'" (a file of that name); "" is a temporary database; a NUL fails in os.stat
        if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
            raise InvalidInput(f"path: must be a str or a path, got {type(path).__name__}")
        self._path = os.fspath(path)
        if not self._path or "\x00" in self._path:
            raise InvalidInput(f"path: {self._path!r} is no file path (use ':memory:' for an in-memory store)")
        if self._path != ":memory:":
            check_folder(Path(self._path), create=create_dirs)
        try:
            self._conn = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
            )
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._conn.execute("PRAGMA secure_delete = ON")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:  # a directory, a path that cannot be opened
            raise SchemaError(f"{self._path}: cannot open as an SQLite database ({exc})") from exc
        self._lock = threading.RLock()
        self._cache: dict[str, NamespaceIndex] = {}
        self._records: dict[str, dict[str, MemoryRecord]] = {}
        self._data_version: int | None = None
        self._ready = False
        if ann is not None and not isinstance(ann, AnnConfig):
            raise InvalidInput(f"ann: must be an AnnConfig or None, got {type(ann).__name__}")
        self._ann = None if ann is None or self._path == ":memory:" else AnnSet(self._path, ann, self._lock)
        self.supports_ann = self._ann is not None
        self._large: dict[str, bool] = {}
        self._ann_changes: dict[str, tuple[set[int], set[int]]] = {}

    @property
    def location(self) -> str:
        return self._path

    # --- schema ---------------------------------------------------------------------------

    def setup(self) -> None:
        """Enable WAL and apply pending migrations in order, each in its own transaction.

        Raises:
            SchemaError: the file is not an SQLite database, or has a newer schema than this retain.
        """
        try:
            self._setup()
        except sqlite3.DatabaseError as exc:  # "file is not a database", a corrupt file
            raise SchemaError(f"{self._path}: not a usable SQLite database ({exc})") from exc

    def _setup(self) -> None:
        with self._lock:
            if self._path != ":memory:":
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":  # pragma: no cover - filesystem without WAL support
                    raise SchemaError(f"could not enable WAL on {self._path} (journal_mode={mode})")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            if int(self._conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION:
                self._ready = True  # nothing to migrate: no write lock, so a writer's lock does not block opening
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                current = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
                if current > SCHEMA_VERSION:
                    raise SchemaError(
                        f"{self._path} has schema version {current}; this retain knows up to "
                        f"{SCHEMA_VERSION}. Upgrade retain."
                    )
                for version in range(current, SCHEMA_VERSION):
                    for statement in split_sql(MIGRATIONS[version]):
                        self._conn.execute(statement)
                    self._conn.execute(f"PRAGMA user_version = {version + 1}")
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._ready = True

    def get_meta(self, key: str) -> str | None:
        self._require_ready()
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._require_ready()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            if self._ann is not None and self._ready:
                self._ann.close()
            self._conn.close()
            self._drop_caches()
            self._ready = False

    def _require_ready(self) -> None:
        if not self._ready:
            raise SchemaError("store is not set up: call setup() first (retain.Memory does)")

    # --- batch ----------------------------------------------------------------------------

    def batch(self, ops: Sequence[store_ops.Op]) -> list[Any]:
        """Run ``ops`` in one transaction (``BEGIN IMMEDIATE`` when any op writes)."""
        self._require_ready()
        writes = any(isinstance(op, _WRITE_OPS) for op in ops)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
            try:
                # Inside the transaction: a commit by another connection just before BEGIN is seen here,
                # so no op of this batch reads a cached record older than the transaction's snapshot.
                self._check_external_changes()
                self._ann_changes = {}
                if writes and self._ann is not None:  # term counts, hits' rows: read afresh (or at this state)
                    self._ann.forget_reads()
                results = [self._run(op) for op in ops]
                epochs = {ns: bump_epoch(self._conn, ns) for ns in self._ann_changes}
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                if writes:
                    self._drop_caches()
                raise
            if self._ann is not None:
                for ns, (added, removed) in self._ann_changes.items():
                    self._ann.committed(ns, epochs[ns], added, removed)
            if writes:
                self._data_version = self._read_data_version()
            purged = any(isinstance(op, (store_ops.DeleteRecords, store_ops.DeleteNamespace)) for op in ops)
        if purged and self._path != ":memory:":
            self._checkpoint()
        return results

    def _run(self, op: store_ops.Op) -> Any:
        op = self.keyed(op)
        on_connection = _CONNECTION_HANDLERS.get(type(op))
        if on_connection is not None:
            return on_connection(self._conn, op)
        handler: Callable[[Any], Any] = _HANDLERS[type(op)].__get__(self)
        return handler(op)

    def _read_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _check_external_changes(self) -> None:
        version = self._read_data_version()
        if self._data_version is not None and version != self._data_version:
            self._drop_caches()
        self._data_version = version

    def _drop_caches(self) -> None:
        self._cache.clear()
        self._records.clear()
        self._large.clear()
        if self._ann is not None:
            self._ann.forget_reads()

    def _changed(self, namespace: str) -> tuple[set[int], set[int]]:
        """The rowids this transaction wrote (added, removed) in ``namespace``, for its HNSW graph."""
        self._large.pop(namespace, None)
        return self._ann_changes.setdefault(namespace, (set(), set()))

    def _is_large(self, namespace: str) -> bool:
        """Whether ``namespace`` is past the HNSW threshold (a bounded count: at most that many index
        entries read, never the whole namespace); always False without the HNSW channel."""
        if self._ann is None:
            return False
        known = self._large.get(namespace)
        if known is None:
            bound = self._ann.config.min_records
            sql = "SELECT COUNT(*) FROM (SELECT 1 FROM records WHERE namespace = ? LIMIT ?)"
            known = self._ann.active(namespace) or self._conn.execute(sql, (namespace, bound)).fetchone()[0] >= bound
            self._large[namespace] = known
        return known

    def build_index(self, namespace: str) -> None:
        """Start ``namespace``'s HNSW graph build now (once, after a bulk ingest) when it is past the
        threshold without a usable graph; returns at once. A no-op without the HNSW channel."""
        with self._lock:
            if self._ready and self._ann is not None and self._is_large(namespace):
                self._ann.graph(self._conn, namespace, lambda: True)

    def wait_for_index(self, timeout: float | None = None) -> None:
        """Wait for the HNSW graphs being built in the background (benchmarks and tests; searches
        never wait: they scan exactly until a graph is ready)."""
        if self._ann is not None:
            self._ann.wait(timeout)

    def _checkpoint(self) -> None:
        """Fold the WAL back so purged content does not linger in it (best effort)."""
        with self._lock:
            self._conn.execute("PRAGMA busy_timeout = 0")  # never wait: a reader may hold the WAL
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:  # pragma: no cover - another connection is mid-write
                pass
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    # --- handlers -------------------------------------------------------------------------

    def _put(self, op: store_ops.PutRecords) -> None:
        """Insert or update ``op.records``: one look-up of the ids there already, then one
        ``executemany`` per statement (new rows get the next rowids: the write lock is held)."""
        found: dict[str, tuple[int, str]] = {}
        ids = [rec.id for rec in op.records]
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            sql = f"SELECT id, rowid, namespace FROM records WHERE id IN ({','.join('?' * len(chunk))})"
            found.update((r[0], (r[1], r[2])) for r in self._conn.execute(sql, chunk))
        if len(set(ids)) != len(ids):  # one id twice: one record at a time, in order
            for rec in op.records:
                self._put_rows([rec], {})
            return
        self._put_rows(op.records, found)

    def _put_rows(self, records: Sequence[MemoryRecord], found: dict[str, tuple[int, str]]) -> None:
        if not found and len(records) == 1:  # called per record: look it up here
            row = self._conn.execute("SELECT rowid, namespace FROM records WHERE id = ?", (records[0].id,)).fetchone()
            found = {} if row is None else {records[0].id: (row[0], row[1])}
        next_rowid = int(self._conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM records").fetchone()[0])
        inserts, updates, fts = [], [], []
        written: dict[str, list[tuple[MemoryRecord, bool]]] = {}
        for rec in records:
            prev = found.get(rec.id)
            if prev is not None and prev[1] != rec.namespace:
                raise InvalidInput(f"id {rec.id} already exists in another namespace")
            values = record_values(rec)
            if prev is None:
                rowid, next_rowid = next_rowid, next_rowid + 1
                inserts.append((rowid, *values))
            else:
                rowid = prev[0]
                updates.append((*values, rowid))
            fts.append((rowid, " ".join(index_terms(search_text(rec)))))
            added, removed = self._changed(rec.namespace)
            (added if rec.embedding is not None else removed).add(rowid)
            written.setdefault(rec.namespace, []).append((rec, prev is None))
            self._records.get(rec.namespace, {}).pop(rec.id, None)
        self._conn.executemany(f"INSERT INTO records (rowid, {COLUMNS}) VALUES (?, {', '.join('?' * 24)})", inserts)
        if updates:
            assignments = ", ".join(f"{c.strip()} = ?" for c in COLUMNS.split(","))
            self._conn.executemany(f"UPDATE records SET {assignments} WHERE rowid = ?", updates)
            self._conn.executemany("DELETE FROM records_fts WHERE rowid = ?", [(u[-1],) for u in updates])
        self._conn.executemany("INSERT INTO records_fts (rowid, lex) VALUES (?, ?)", fts)
        for namespace, writes in written.items():  # cached indexes follow the write (a rollback drops them)
            index = self._cache.get(namespace)
            if index is not None and not index.apply(writes):
                self._cache.pop(namespace, None)

    def _get(self, op: store_ops.GetRecords) -> list[MemoryRecord]:
        return self._fetch(op.namespace, op.ids)

    def _fetch(self, namespace: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """Records by id in the order asked (missing skipped): cached ones as they are, the others
        read with one ``IN (...)`` query per :data:`_IN_CHUNK` ids, decoded and cached."""
        if not ids:
            return []
        cache = self._records.setdefault(namespace, {})
        missing = [i for i in dict.fromkeys(ids) if i not in cache]
        if missing and sum(map(len, self._records.values())) + len(missing) > RECORD_CACHE_LIMIT:
            self._records.clear()
            cache = self._records.setdefault(namespace, {})
            missing = list(dict.fromkeys(ids))
        missing = missing if self._ann is None else self._ann.take(namespace, missing, cache)  # hits just read
        for start in range(0, len(missing), _IN_CHUNK):
            chunk = missing[start : start + _IN_CHUNK]
            # `+namespace`: with ten ids or more the planner otherwise prefers (namespace, seq) and scans
            # the namespace; the id index finds each row directly (the namespace term still filters).
            rows = self._conn.execute(
                f"SELECT {COLUMNS} FROM records WHERE +namespace = ? AND id IN ({','.join('?' * len(chunk))})",
                (namespace, *chunk),
            ).fetchall()
            for row in rows:
                cache[row[0]] = row_to_record(row)
        return [cache[i] for i in ids if i in cache]

    def _find_by_hash(self, op: store_ops.FindByHash) -> MemoryRecord | None:
        where, params = same_content(op)
        sql = f"SELECT {COLUMNS} FROM records WHERE {where} ORDER BY rowid LIMIT 1"
        row = self._conn.execute(sql, params).fetchone()
        return None if row is None else row_to_record(row)

    def _require_current(self, op: store_ops.RequireCurrent) -> None:
        row = self._conn.execute(
            "SELECT superseded_by FROM records WHERE namespace = ? AND id = ?", (op.namespace, op.id)
        ).fetchone()
        store_ops.check_current(op, None if row is None else row[0], row is not None)

    def _require_unchanged(self, op: store_ops.RequireUnchanged) -> None:
        row = self._conn.execute(
            "SELECT superseded_by, tier FROM records WHERE namespace = ? AND id = ?", (op.namespace, op.id)
        ).fetchone()
        store_ops.check_unchanged(op, None if row is None else (row[0], row[1]))

    def _require_hot(self, op: store_ops.RequireHot) -> None:
        rows = self._conn.execute(
            "SELECT id FROM records WHERE namespace = ? AND superseded_by IS NULL AND tier IN (?, ?)",
            (op.namespace, Tier.CORE.value, Tier.DYNAMIC.value),
        ).fetchall()
        store_ops.check_hot(op, frozenset(r[0] for r in rows))

    def _require_unique(self, op: store_ops.RequireUnique) -> None:
        where, params = same_content(
            store_ops.FindByHash(op.namespace, op.content_hash, True, op.role, op.segment, op.seq)
        )
        row = self._conn.execute(f"SELECT id FROM records WHERE {where} ORDER BY rowid LIMIT 1", params).fetchone()
        store_ops.check_unique(op, None if row is None else row[0])

    def _list(self, op: store_ops.ListRecords) -> list[MemoryRecord]:
        return self._fetch(op.namespace, self._list_ids(store_ops.ListIds(op.namespace, op.filter, op.limit, op.order)))

    def _list_ids(self, op: store_ops.ListIds) -> list[str]:
        order = ORDERS.get(op.order)
        if order is None:
            raise InvalidInput(f"order: {op.order!r} is not one of created, seq, event, recent")
        index = None if self._is_large(op.namespace) else self._cache.get(op.namespace)
        if (
            index is not None and op.order in ("created", "recent") and op.filter.where is None
        ):  # write order is the index's row order
            rows = index.rows(op.filter)
            if op.order == "recent":
                rows = rows[::-1]
            return [str(i) for i in index.ids[rows[: op.limit]]]
        where, params = filter_sql(op.namespace, self._live(op.namespace, op.filter))
        table = "records"
        if op.limit is not None and op.order in ("created", "recent") and op.filter.seqs is None:
            # walk the namespace in rowid order and stop at the limit (the planner would sort every
            # row the tier index finds: the whole namespace for the hot tiers)
            table = "records INDEXED BY records_ns"
        sql = f"SELECT id FROM {table} WHERE {where} ORDER BY {order}"
        if op.limit is not None:
            sql += f" LIMIT {int(op.limit)}"
        return [r[0] for r in self._conn.execute(sql, params).fetchall()]

    def _live(self, namespace: str, flt: RecordFilter) -> RecordFilter:
        """``flt`` without ``live_at`` when no record of ``namespace`` expires (the namespace index
        knows): the expiry test then costs no JSON parse per row."""
        if flt.live_at is None or self._is_large(namespace):
            return flt
        index = self._index(namespace)
        return flt if index is not None and index.expiring else replace(flt, live_at=None)

    def _count(self, op: store_ops.CountRecords) -> int:
        where, params = filter_sql(op.namespace, self._live(op.namespace, op.filter))
        return int(self._conn.execute(f"SELECT COUNT(*) FROM records WHERE {where}", params).fetchone()[0])

    def _lexical(self, op: store_ops.LexicalSearch) -> list[store_ops.ScoredId]:
        large = self._is_large(op.namespace)
        memo = self._ann.lexical if self._ann is not None else None
        return lexical_search(self._conn, op, self._live(op.namespace, op.filter), large, memo)

    def _vector(self, op: store_ops.VectorSearch) -> list[store_ops.ScoredId]:
        query = np.asarray(op.vector, dtype=np.float32).reshape(1, -1)
        return self._vectors(op.namespace, query, op.filter, op.limit)[0]

    def _multi_vector(self, op: store_ops.MultiVectorSearch) -> list[list[store_ops.ScoredId]]:
        """Answered in one pass over the cached matrix (see :meth:`_vectors`). Each row's answer is memoised in the
        namespace index (dropped with it on any write to the namespace), so a repeated state part
        costs a lookup; filters naming ``seqs`` or ``segments`` are not memoised."""
        queries = np.asarray(op.vectors, dtype=np.float32)
        if queries.ndim != 2:
            raise InvalidInput(f"vectors: expected a (p, d) matrix, got shape {queries.shape}")
        if self._is_large(op.namespace):
            return self._vectors(op.namespace, queries, op.filter, op.limit)
        index = self._index(op.namespace)
        if index is None:
            return [[] for _ in queries]
        flt = op.filter
        if flt.live_at is not None and not index.expiring:  # the same answer at any time: memoise it once
            flt = replace(flt, live_at=None)
        if flt.seqs is not None or flt.segments is not None or flt.where is not None or flt.live_at is not None:
            return self._vectors(op.namespace, queries, flt, op.limit)
        keys = [(q.tobytes(), flt, int(op.limit)) for q in queries]
        found = {j: index.searches[key] for j, key in enumerate(keys) if key in index.searches}
        todo = [j for j in range(len(keys)) if j not in found]
        if todo:
            scanned = self._vectors(op.namespace, queries[todo], flt, op.limit)
            found.update(zip(todo, scanned, strict=True))
            if len(index.searches) + len(todo) > _SEARCH_MEMO_LIMIT:
                index.searches.clear()
            index.searches.update((keys[j], found[j]) for j in todo)
        return [list(found[j]) for j in range(len(keys))]

    def _vectors(
        self, namespace: str, queries: npt.NDArray[np.float32], flt: RecordFilter, limit: int
    ) -> list[list[store_ops.ScoredId]]:
        """Cosine top-``limit`` for each row of ``queries`` ((p, d) float32): from the namespace's HNSW
        graph when it has one (:mod:`~retain.store.sqlite_ann`), else exact (:func:`nearest`)."""
        if self._ann is not None and self._is_large(namespace):
            found = self._ann.answer(self._conn, namespace, queries, flt, limit)
            self._cache.pop(namespace, None)  # no graph yet: exact, streamed by SQL, no matrix held
            return exact_scan(self._conn, namespace, queries, flt, limit) if found is None else found
        index = self._index(namespace)
        if index is None:
            return [[] for _ in range(queries.shape[0])]
        keep = None
        if flt.where is not None:  # the metadata conditions by SQL, the rest of the filter too
            where, params = filter_sql(namespace, flt)
            keep = index.rows_of([r[0] for r in self._conn.execute(f"SELECT id FROM records WHERE {where}", params)])
        return nearest(index, queries, flt, limit, keep)

    def _index(self, namespace: str) -> NamespaceIndex | None:
        """The namespace's dense index (cached until a write or another connection's commit drops it),
        or None when it holds no record."""
        cached = self._cache.get(namespace)
        if cached is not None:
            return cached
        index = build_index(self._conn, namespace)
        if index is not None:
            self._cache[namespace] = index
        return index

    def _delete(self, op: store_ops.DeleteRecords) -> int:
        if not op.ids:
            return 0
        marks = ",".join("?" * len(op.ids))
        rowids = [
            r[0]
            for r in self._conn.execute(
                f"SELECT rowid FROM records WHERE +namespace = ? AND id IN ({marks})", (op.namespace, *op.ids)
            ).fetchall()
        ]
        purge_edges(self._conn, op.namespace, op.ids)  # never dangling
        forget_provenance(self._conn, op.namespace, op.ids)  # the queries that found them
        return self._purge_rowids(op.namespace, rowids)

    def _delete_namespace(self, op: store_ops.DeleteNamespace) -> int:
        rowids = [r[0] for r in self._conn.execute("SELECT rowid FROM records WHERE namespace = ?", (op.namespace,))]
        self._conn.execute("DELETE FROM provenance WHERE namespace = ?", (op.namespace,))  # queries and states
        purge_edges(self._conn, op.namespace, None)
        return self._purge_rowids(op.namespace, rowids)

    def _purge_rowids(self, namespace: str, rowids: list[int]) -> int:
        for start in range(0, len(rowids), 500):
            chunk = rowids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            self._conn.execute(f"DELETE FROM records_fts WHERE rowid IN ({marks})", chunk)
            self._conn.execute(f"DELETE FROM records WHERE rowid IN ({marks})", chunk)
        if rowids:
            # Rewrite the FTS b-tree so no doclist of the purged rows survives in a segment.
            self._conn.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
        self._cache.pop(namespace, None)
        self._records.pop(namespace, None)
        self._changed(namespace)[1].update(rowids)
        return len(rowids)

    def _namespaces(self, op: store_ops.ListNamespaces) -> list[str]:
        # a skip-scan of the namespace index: one step per namespace, not one per record
        sql = (
            "WITH RECURSIVE n(x) AS (SELECT MIN(namespace) FROM records UNION ALL "
            "SELECT (SELECT MIN(namespace) FROM records WHERE namespace > x) FROM n WHERE x IS NOT NULL) "
            "SELECT x FROM n WHERE x IS NOT NULL"
        )
        return [r[0] for r in self._conn.execute(sql)]


_HANDLERS: dict[type, Any] = {  # handlers on the store: its connection and caches
    store_ops.PutRecords: SQLiteStore._put,
    store_ops.GetRecords: SQLiteStore._get,
    store_ops.FindByHash: SQLiteStore._find_by_hash,
    store_ops.RequireCurrent: SQLiteStore._require_current,
    store_ops.RequireUnchanged: SQLiteStore._require_unchanged,
    store_ops.RequireUnique: SQLiteStore._require_unique,
    store_ops.RequireHot: SQLiteStore._require_hot,
    store_ops.ListRecords: SQLiteStore._list,
    store_ops.ListIds: SQLiteStore._list_ids,
    store_ops.CountRecords: SQLiteStore._count,
    store_ops.LexicalSearch: SQLiteStore._lexical,
    store_ops.VectorSearch: SQLiteStore._vector,
    store_ops.MultiVectorSearch: SQLiteStore._multi_vector,
    store_ops.DeleteRecords: SQLiteStore._delete,
    store_ops.DeleteNamespace: SQLiteStore._delete_namespace,
    store_ops.ListNamespaces: SQLiteStore._namespaces,
}

_CONNECTION_HANDLERS: dict[type, Callable[[sqlite3.Connection, Any], Any]] = {  # need only the connection
    **AUDIT_HANDLERS,
    store_ops.PutEdges: put_edges,
    store_ops.ListEdges: list_edges,
    store_ops.PageIds: page_ids,
    store_ops.NamespaceStats: namespace_stats,
    store_ops.QueryAudit: query_audit,
    store_ops.AuditHistogram: audit_histogram,
}
