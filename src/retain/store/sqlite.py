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
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.errors import DuplicateContent, InvalidInput, RecordNotFound, SchemaError, WriteConflict
from retain.numeric.kernels import blocked_product
from retain.record import MemoryRecord, MemoryType, Tier, read_only_json, search_text, utcnow
from retain.store.audit_chain import GENESIS_HASH, AuditEntry, RawAudit, audit_hash
from retain.store.base import Store
from retain.store.edges import Edge
from retain.store.filters import RecordFilter
from retain.store.ops import (
    AppendAudit,
    CountRecords,
    DeleteNamespace,
    DeleteRecords,
    FindByHash,
    GetProvenance,
    GetRecords,
    LexicalSearch,
    ListEdges,
    ListIds,
    ListNamespaces,
    ListRecords,
    MultiVectorSearch,
    Op,
    PutEdges,
    PutProvenance,
    PutRecords,
    ReadAudit,
    ReadAuditRaw,
    RequireCurrent,
    RequireUnchanged,
    RequireUnique,
    ScoredId,
    VectorSearch,
)
from retain.store.sqlite_edges import EDGES_MIGRATION, list_edges, purge_edges, put_edges
from retain.text.lexical import index_terms

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

BUSY_TIMEOUT_MS = 30_000
RECORD_CACHE_LIMIT = 20_000
"""Most decoded records cached (all namespaces together); past it the cache starts over."""
_IN_CHUNK = 500
"""Ids per ``IN (...)`` query (well under SQLite's bound-parameter limit)."""
_MASK_CACHE_LIMIT = 16
_SEARCH_MEMO_LIMIT = 256
_INCREMENTAL_UPDATES = 64
"""Most updated records a write applies to a cached namespace index in place; more drop the index."""

_COLUMNS = (
    "id, namespace, content, type, role, source, event_time, created_at, seq, segment, priority, "
    "importance, access_count, last_accessed, tier, pinned, confidence, supersedes, superseded_by, "
    "token_count, embedding, encoder, metadata, content_hash"
)

# Append-only: a released migration is never edited; add a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE records (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        content TEXT NOT NULL,
        type TEXT NOT NULL,
        role TEXT NOT NULL,
        source TEXT,
        event_time INTEGER,
        created_at INTEGER NOT NULL,
        seq INTEGER,
        segment TEXT,
        priority INTEGER NOT NULL,
        importance REAL NOT NULL,
        access_count INTEGER NOT NULL,
        last_accessed INTEGER,
        tier TEXT NOT NULL,
        pinned INTEGER NOT NULL,
        confidence REAL NOT NULL,
        supersedes TEXT,
        superseded_by TEXT,
        token_count INTEGER NOT NULL,
        embedding BLOB,
        encoder TEXT,
        metadata TEXT NOT NULL,
        content_hash TEXT NOT NULL
    );
    CREATE INDEX records_ns_hash ON records (namespace, content_hash);
    CREATE INDEX records_ns_tier ON records (namespace, tier);
    CREATE INDEX records_ns_event ON records (namespace, event_time);
    CREATE INDEX records_ns_seq ON records (namespace, seq);
    CREATE VIRTUAL TABLE records_fts USING fts5 (lex, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ts INTEGER NOT NULL,
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
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
    """,
    """
    CREATE TABLE provenance (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX provenance_ns ON provenance (namespace, created_at);
    """,
    EDGES_MIGRATION,  # 3: typed edges between records (retain.retrieval.graph)
)
SCHEMA_VERSION = len(MIGRATIONS)

_AUDIT_KEYS = ("seq", "ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details", "prev_hash", "hash")
"""The columns of an audit entry, in the order :class:`ReadAudit` reads them."""
APPEND_ONLY_TRIGGERS = frozenset({"audit_no_update", "audit_no_delete"})
"""Triggers of migration 1 that refuse UPDATE and DELETE on the audit table."""

_WRITE_OPS = (PutRecords, DeleteRecords, DeleteNamespace, AppendAudit, PutProvenance, PutEdges)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _to_us(value: datetime | None) -> int | None:
    # Integer arithmetic: float timestamps lose a microsecond on about 2% of times.
    if value is None:
        return None
    return (value.astimezone(UTC) - _EPOCH) // _MICROSECOND


def _from_us(value: int | None) -> datetime | None:
    if value is None:
        return None
    return _EPOCH + timedelta(microseconds=value)


@dataclass
class _NamespaceIndex:
    """Per-namespace arrays in write (rowid) order, one row per record: the exact dense scan's
    matrix and every column a :class:`RecordFilter` reads. Rows of records without an embedding
    are zero and have ``has_vector`` False."""

    ids: npt.NDArray[np.object_]
    matrix: npt.NDArray[np.float32]
    has_vector: npt.NDArray[np.bool_]
    types: npt.NDArray[np.object_]
    tiers: npt.NDArray[np.object_]
    segments: npt.NDArray[np.object_]
    seqs: npt.NDArray[np.int64]  # -1: no position (float64 would merge positions above 2**53)
    event_us: npt.NDArray[np.float64]
    current: npt.NDArray[np.bool_]
    masks: dict[RecordFilter, npt.NDArray[np.intp]] = field(default_factory=dict)
    searches: dict[tuple[bytes, RecordFilter, int], list[ScoredId]] = field(default_factory=dict)

    def rows(self, flt: RecordFilter) -> npt.NDArray[np.intp]:
        """Row numbers (ascending = oldest written first) of the records ``flt`` keeps; memoised for
        filters without ``seqs`` or ``segments`` (those change with every query: they are applied to
        the memoised rows of the rest of the filter)."""
        if flt.seqs is not None or flt.segments is not None:
            # the rest of the filter from the memo, then the positions / segments among those rows only
            rows = self.rows(replace(flt, seqs=None, segments=None))
            if flt.segments is not None:  # a set, not np.isin: object arrays holding None do not sort
                wanted = set(flt.segments)
                rows = rows[np.fromiter((s in wanted for s in self.segments[rows]), dtype=bool, count=len(rows))]
            if flt.seqs is not None:  # -1 (no position) matches nothing; int64 compares exactly
                rows = rows[np.isin(self.seqs[rows], np.asarray(flt.seqs, dtype=np.int64))]
            return rows
        if flt in self.masks:
            return self.masks[flt]
        rows = np.flatnonzero(self.mask(flt))
        if len(self.masks) >= _MASK_CACHE_LIMIT:
            self.masks.clear()
        self.masks[flt] = rows
        return rows

    def apply(self, writes: Sequence[tuple[MemoryRecord, bool]]) -> bool:
        """Bring the index up to date with ``writes`` (each record as just written, and whether it was
        inserted, so it took the largest rowid yet, or updated in place) instead of re-reading the
        namespace. Returns False, changing nothing, when it cannot (an id written twice, many updates,
        an embedding of another width): the caller then drops the index."""
        dim = self.matrix.shape[1]
        ids = [rec.id for rec, _ in writes]
        updates = [rec for rec, inserted in writes if not inserted]
        if len(set(ids)) != len(ids) or len(updates) > _INCREMENTAL_UPDATES:
            return False
        if any(rec.embedding is not None and (dim == 0 or len(rec.embedding) != dim) for rec, _ in writes):
            return False
        position: dict[str, int] = {}
        if updates:
            wanted = {rec.id for rec in updates}
            position = {str(v): i for i, v in enumerate(self.ids) if v in wanted}
            if len(position) != len(wanted):
                return False
        new = [rec for rec, inserted in writes if inserted]
        zero = np.zeros(dim, dtype=np.float32)
        if updates:
            self.matrix = np.array(self.matrix)  # writable (the index is built on a read-only buffer)
            for rec in updates:
                i = position[rec.id]
                self.matrix[i] = zero if rec.embedding is None else np.asarray(rec.embedding, dtype="<f4")
                self.has_vector[i] = rec.embedding is not None
                self.types[i], self.tiers[i], self.segments[i] = rec.type.value, rec.tier.value, rec.segment
                self.seqs[i] = _index_seq(rec)
                self.event_us[i], self.current[i] = _index_columns(rec)
        if new:
            rows = [zero if r.embedding is None else np.asarray(r.embedding, dtype="<f4") for r in new]
            self.matrix = np.concatenate([self.matrix, np.stack(rows).reshape(len(new), dim)])
            self.has_vector = np.concatenate([self.has_vector, [r.embedding is not None for r in new]])
            self.ids = np.concatenate([self.ids, np.array([r.id for r in new], dtype=object)])
            self.types = np.concatenate([self.types, np.array([r.type.value for r in new], dtype=object)])
            self.tiers = np.concatenate([self.tiers, np.array([r.tier.value for r in new], dtype=object)])
            self.segments = np.concatenate([self.segments, _objects([r.segment for r in new])])
            columns = np.array([_index_columns(r) for r in new], dtype=np.float64).reshape(len(new), 2)
            self.seqs = np.concatenate([self.seqs, np.array([_index_seq(r) for r in new], dtype=np.int64)])
            self.event_us = np.concatenate([self.event_us, columns[:, 0]])
            self.current = np.concatenate([self.current, columns[:, 1].astype(bool)])
        self.masks.clear()
        self.searches.clear()
        return True

    def mask(self, flt: RecordFilter) -> npt.NDArray[np.bool_]:
        """Which rows ``flt`` keeps, all but its ``seqs`` and ``segments`` (:meth:`rows` applies those)."""
        keep = np.ones(len(self.ids), dtype=bool)
        if flt.types is not None:
            keep &= np.isin(self.types, [t.value for t in flt.types])
        if flt.tiers is not None:
            keep &= np.isin(self.tiers, [t.value for t in flt.tiers])
        if not flt.include_superseded:
            keep &= self.current
        if flt.start is not None:  # NaN compares False: records with unknown times drop out
            keep &= self.event_us >= float(_to_us(flt.start) or 0)
        if flt.end is not None:
            keep &= self.event_us < float(_to_us(flt.end) or 0)
        return keep


def _check_folder(path: Path, *, create: bool) -> None:
    """Refuse ``path`` when its folder is missing (or make it, with ``create``) or is not a folder."""
    folder = path.parent
    if folder.is_dir():
        return
    if folder.exists() or any(p.exists() and not p.is_dir() for p in folder.parents):
        raise InvalidInput(f"path: {path}: {_existing_file(folder)} is a file, not a folder")
    if path.parts[0].startswith("~"):  # used as given: create_dirs would make a folder named "~" here
        raise InvalidInput(
            f"path: {path}: the folder {folder} does not exist (~ is not expanded: pass os.path.expanduser(path))"
        )
    if not create:
        raise InvalidInput(
            f"path: {path}: the folder {folder} does not exist; create it first, or pass create_dirs=True"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"path: {path}: cannot create the folder {folder} ({exc.strerror or exc})") from exc


def _existing_file(folder: Path) -> Path:
    """The nearest of ``folder`` and its ancestors that exists (a file, where this is called)."""
    return next(p for p in (folder, *folder.parents) if p.exists())


def _index_seq(rec: MemoryRecord) -> int:
    """The record's stream position as the index holds it: an int64, -1 for none."""
    return -1 if rec.seq is None else rec.seq


def _index_columns(rec: MemoryRecord) -> tuple[float, float]:
    """(event time in microseconds or NaN, 1.0 when current) as the index holds them."""
    us = _to_us(rec.event_time)
    return (
        np.nan if us is None else float(us),
        1.0 if rec.superseded_by is None else 0.0,
    )


def _objects(values: Sequence[Any]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class SQLiteStore(Store):
    """The default store: one SQLite file (or ``":memory:"``).

    Args:
        path: file path, or ":memory:" for a private in-memory database. The file is created when
            missing; its folder must exist (as for :func:`sqlite3.connect`), unless ``create_dirs``.
            The path is used as given (no ``~`` expansion; a ``~`` path whose folder is missing is
            refused, ``create_dirs`` or not, rather than a folder named ``~`` made here).
        create_dirs: create the missing folders of ``path`` first (``mkdir -p``). Default False: a
            missing folder is refused, so a typo in a path does not quietly start a new store.

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

    def __init__(self, path: str | Path = ":memory:", *, create_dirs: bool = False) -> None:
        if not isinstance(create_dirs, bool):
            raise InvalidInput(f"create_dirs: must be a bool, got {create_dirs!r}")
        # str() of bytes is "b'x.db'" (a file of that name); "" is a temporary database; a NUL fails in os.stat
        if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
            raise InvalidInput(f"path: must be a str or a path, got {type(path).__name__}")
        self._path = os.fspath(path)
        if not self._path or "\x00" in self._path:
            raise InvalidInput(f"path: {self._path!r} is no file path (use ':memory:' for an in-memory store)")
        if self._path != ":memory:":
            _check_folder(Path(self._path), create=create_dirs)
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
        self._cache: dict[str, _NamespaceIndex] = {}
        self._records: dict[str, dict[str, MemoryRecord]] = {}
        self._data_version: int | None = None
        self._ready = False

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
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                current = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
                if current > SCHEMA_VERSION:
                    raise SchemaError(
                        f"{self._path} has schema version {current}; this retain knows up to "
                        f"{SCHEMA_VERSION}. Upgrade retain."
                    )
                for version in range(current, SCHEMA_VERSION):
                    for statement in _split_sql(MIGRATIONS[version]):
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
            self._conn.close()
            self._drop_caches()
            self._ready = False

    def _require_ready(self) -> None:
        if not self._ready:
            raise SchemaError("store is not set up: call setup() first (retain.Memory does)")

    # --- batch ----------------------------------------------------------------------------

    def batch(self, ops: Sequence[Op]) -> list[Any]:
        """Run ``ops`` in one transaction (``BEGIN IMMEDIATE`` when any op writes)."""
        self._require_ready()
        writes = any(isinstance(op, _WRITE_OPS) for op in ops)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
            try:
                # Inside the transaction: a commit by another connection just before BEGIN is seen here,
                # so no op of this batch reads a cached record older than the transaction's snapshot.
                self._check_external_changes()
                results = [self._run(op) for op in ops]
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                if writes:
                    self._drop_caches()
                raise
            if writes:
                self._data_version = self._read_data_version()
            purged = any(isinstance(op, (DeleteRecords, DeleteNamespace)) for op in ops)
        if purged and self._path != ":memory:":
            self._checkpoint()
        return results

    def _run(self, op: Op) -> Any:
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

    def _put(self, op: PutRecords) -> None:
        written: dict[str, list[tuple[MemoryRecord, bool]]] = {}
        for rec in op.records:
            row = self._conn.execute("SELECT rowid, namespace FROM records WHERE id = ?", (rec.id,)).fetchone()
            if row is not None and row[1] != rec.namespace:
                raise InvalidInput(f"id {rec.id} already exists in another namespace")
            values = (
                rec.id,
                rec.namespace,
                rec.content,
                rec.type.value,
                rec.role,
                rec.source,
                _to_us(rec.event_time),
                _to_us(rec.created_at),
                rec.seq,
                rec.segment,
                rec.priority,
                float(rec.importance),
                rec.access_count,
                _to_us(rec.last_accessed),
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
            if row is None:
                cur = self._conn.execute(f"INSERT INTO records ({_COLUMNS}) VALUES ({', '.join('?' * 24)})", values)
                rowid = cur.lastrowid
            else:
                rowid = row[0]
                assignments = ", ".join(f"{c.strip()} = ?" for c in _COLUMNS.split(","))
                self._conn.execute(f"UPDATE records SET {assignments} WHERE rowid = ?", (*values, rowid))
                self._conn.execute("DELETE FROM records_fts WHERE rowid = ?", (rowid,))
            lex = " ".join(index_terms(search_text(rec)))
            self._conn.execute("INSERT INTO records_fts (rowid, lex) VALUES (?, ?)", (rowid, lex))
            written.setdefault(rec.namespace, []).append((rec, row is None))
            self._records.get(rec.namespace, {}).pop(rec.id, None)
        for namespace, writes in written.items():  # cached indexes follow the write (a rollback drops them)
            index = self._cache.get(namespace)
            if index is not None and not index.apply(writes):
                self._cache.pop(namespace, None)

    def _get(self, op: GetRecords) -> list[MemoryRecord]:
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
        for start in range(0, len(missing), _IN_CHUNK):
            chunk = missing[start : start + _IN_CHUNK]
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM records WHERE namespace = ? AND id IN ({','.join('?' * len(chunk))})",
                (namespace, *chunk),
            ).fetchall()
            for row in rows:
                cache[row[0]] = _row_to_record(row)
        return [cache[i] for i in ids if i in cache]

    def _find_by_hash(self, op: FindByHash) -> MemoryRecord | None:
        where, params = _same_content(op)
        sql = f"SELECT {_COLUMNS} FROM records WHERE {where} ORDER BY rowid LIMIT 1"
        row = self._conn.execute(sql, params).fetchone()
        return None if row is None else _row_to_record(row)

    def _require_current(self, op: RequireCurrent) -> None:
        row = self._conn.execute(
            "SELECT superseded_by FROM records WHERE namespace = ? AND id = ?", (op.namespace, op.id)
        ).fetchone()
        if row is None:
            raise RecordNotFound(f"no record {op.id!r} in namespace {op.namespace!r}")
        if row[0] is not None:
            raise InvalidInput(f"id {op.id} was superseded by {row[0]} meanwhile; update the current version")

    def _require_unchanged(self, op: RequireUnchanged) -> None:
        row = self._conn.execute(
            "SELECT superseded_by, tier FROM records WHERE namespace = ? AND id = ?", (op.namespace, op.id)
        ).fetchone()
        if row is None:
            raise WriteConflict(f"record {op.id} of namespace {op.namespace!r} was deleted meanwhile")
        if row[0] != op.superseded_by:
            raise WriteConflict(
                f"record {op.id} was superseded by {row[0]} meanwhile"
                if row[0] is not None
                else f"record {op.id} is current again (read superseded by {op.superseded_by})"
            )
        if op.tier is not None and row[1] != op.tier.value:
            raise WriteConflict(f"record {op.id} moved to the {row[1]} tier meanwhile (read in {op.tier.value})")

    def _require_unique(self, op: RequireUnique) -> None:
        where, params = _same_content(FindByHash(op.namespace, op.content_hash, True, op.role, op.segment, op.seq))
        row = self._conn.execute(f"SELECT id FROM records WHERE {where} ORDER BY rowid LIMIT 1", params).fetchone()
        if row is not None:
            raise DuplicateContent(
                f"namespace {op.namespace!r} already holds this content as current record {row[0]}", existing_id=row[0]
            )

    def _list(self, op: ListRecords) -> list[MemoryRecord]:
        return self._fetch(op.namespace, self._list_ids(ListIds(op.namespace, op.filter, op.limit, op.order)))

    def _list_ids(self, op: ListIds) -> list[str]:
        order = _ORDERS.get(op.order)
        if order is None:
            raise InvalidInput(f"order: {op.order!r} is not one of created, seq, event, recent")
        index = self._cache.get(op.namespace)
        if index is not None and op.order in ("created", "recent"):  # write order is the index's row order
            rows = index.rows(op.filter)
            if op.order == "recent":
                rows = rows[::-1]
            return [str(i) for i in index.ids[rows[: op.limit]]]
        where, params = _where(op.namespace, op.filter)
        sql = f"SELECT id FROM records WHERE {where} ORDER BY {order}"
        if op.limit is not None:
            sql += f" LIMIT {int(op.limit)}"
        return [r[0] for r in self._conn.execute(sql, params).fetchall()]

    def _count(self, op: CountRecords) -> int:
        where, params = _where(op.namespace, op.filter)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM records WHERE {where}", params).fetchone()[0])

    def _lexical(self, op: LexicalSearch) -> list[ScoredId]:
        terms = [t for t in op.terms if t]
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = _where(op.namespace, op.filter, alias="r.")
        rows = self._conn.execute(
            "SELECT r.id, bm25(records_fts) AS s FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
            f"WHERE records_fts MATCH ? AND {where} ORDER BY s LIMIT ?",
            (match, *params, int(op.limit)),
        ).fetchall()
        return [ScoredId(r[0], -float(r[1])) for r in rows]

    def _vector(self, op: VectorSearch) -> list[ScoredId]:
        query = np.asarray(op.vector, dtype=np.float32).reshape(1, -1)
        return self._vectors(op.namespace, query, op.filter, op.limit)[0]

    def _multi_vector(self, op: MultiVectorSearch) -> list[list[ScoredId]]:
        """Answered in one pass over the cached matrix (see :meth:`_vectors`). Each row's answer is memoised in the
        namespace index (dropped with it on any write to the namespace), so a repeated state part
        costs a lookup; filters naming ``seqs`` or ``segments`` are not memoised."""
        queries = np.asarray(op.vectors, dtype=np.float32)
        if queries.ndim != 2:
            raise InvalidInput(f"vectors: expected a (p, d) matrix, got shape {queries.shape}")
        index = self._index(op.namespace)
        if index is None:
            return [[] for _ in queries]
        if op.filter.seqs is not None or op.filter.segments is not None:
            return self._vectors(op.namespace, queries, op.filter, op.limit)
        keys = [(q.tobytes(), op.filter, int(op.limit)) for q in queries]
        found = {j: index.searches[key] for j, key in enumerate(keys) if key in index.searches}
        todo = [j for j in range(len(keys)) if j not in found]
        if todo:
            scanned = self._vectors(op.namespace, queries[todo], op.filter, op.limit)
            found.update(zip(todo, scanned, strict=True))
            if len(index.searches) + len(todo) > _SEARCH_MEMO_LIMIT:
                index.searches.clear()
            index.searches.update((keys[j], found[j]) for j in todo)
        return [list(found[j]) for j in range(len(keys))]

    def _vectors(
        self, namespace: str, queries: npt.NDArray[np.float32], flt: RecordFilter, limit: int
    ) -> list[list[ScoredId]]:
        """Exact cosine top-``limit`` for each row of ``queries`` ((p, d) float32) over the records
        ``flt`` keeps, in one pass over the cached matrix (no copy of the kept rows) on the calling thread
        (:func:`retain.numeric.kernels.blocked_product`): row blocks each multiplied by all p queries while in
        cache (p matrix-vector products would read the matrix p times; one (n, d) x (d, p) product would
        first copy all of it; a threaded BLAS product stalls when the machine is busy)."""
        p = queries.shape[0]
        index = self._index(namespace)
        if index is None or not index.has_vector.any():
            return [[] for _ in range(p)]
        if queries.shape[1] != index.matrix.shape[1]:
            raise InvalidInput(f"vector: dimension {queries.shape[1]}, store holds {index.matrix.shape[1]}")
        queries = queries.copy()
        for j in range(p):  # stored rows are L2-normalised; normalising the queries makes dot = cosine
            norm = float(np.linalg.norm(queries[j]))
            if norm > 0:
                queries[j] = queries[j] / np.float32(norm)
        keep = index.rows(flt)
        keep = keep[index.has_vector[keep]]
        if keep.size == 0:
            return [[] for _ in range(p)]
        scores = blocked_product(index.matrix, np.ascontiguousarray(queries.T))[keep].T  # (p, kept)
        k = min(int(limit), keep.size)
        out = []
        for row in scores:
            top = np.argpartition(-row, k - 1)[:k]
            top = top[np.argsort(-row[top], kind="stable")]
            out.append([ScoredId(str(index.ids[keep[i]]), float(row[i])) for i in top])
        return out

    def _index(self, namespace: str) -> _NamespaceIndex | None:
        cached = self._cache.get(namespace)
        if cached is not None:
            return cached
        rows = self._conn.execute(
            "SELECT id, embedding, type, tier, segment, event_time, superseded_by IS NULL, seq FROM records "
            "WHERE namespace = ? ORDER BY rowid",
            (namespace,),
        ).fetchall()
        if not rows:
            return None
        dims = {len(r[1]) for r in rows if r[1] is not None}
        if len(dims) > 1:
            raise SchemaError(f"namespace {namespace!r} holds embeddings of several dimensions")
        dim = dims.pop() // 4 if dims else 0
        has_vector = np.array([r[1] is not None for r in rows], dtype=bool)
        if has_vector.all():
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
        else:
            zero = bytes(4 * dim)
            matrix = np.frombuffer(b"".join(r[1] or zero for r in rows), dtype="<f4").reshape(len(rows), dim)
        index = _NamespaceIndex(
            ids=np.array([r[0] for r in rows], dtype=object),
            matrix=matrix,
            has_vector=has_vector,
            types=np.array([r[2] for r in rows], dtype=object),
            tiers=np.array([r[3] for r in rows], dtype=object),
            segments=np.array([r[4] for r in rows], dtype=object),
            seqs=np.array([-1 if r[7] is None else r[7] for r in rows], dtype=np.int64),
            event_us=np.array([np.nan if r[5] is None else float(r[5]) for r in rows], dtype=np.float64),
            current=np.array([bool(r[6]) for r in rows], dtype=bool),
        )
        self._cache[namespace] = index
        return index

    def _delete(self, op: DeleteRecords) -> int:
        if not op.ids:
            return 0
        marks = ",".join("?" * len(op.ids))
        rowids = [
            r[0]
            for r in self._conn.execute(
                f"SELECT rowid FROM records WHERE namespace = ? AND id IN ({marks})", (op.namespace, *op.ids)
            ).fetchall()
        ]
        purge_edges(self._conn, op.namespace, op.ids)  # never dangling
        return self._purge_rowids(op.namespace, rowids)

    def _delete_namespace(self, op: DeleteNamespace) -> int:
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
        return len(rowids)

    def _namespaces(self, op: ListNamespaces) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT namespace FROM records ORDER BY namespace")]

    def _append_audit(self, op: AppendAudit) -> int:
        entry: AuditEntry = op.entry
        row = self._conn.execute("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        prev = GENESIS_HASH if row is None else row[0]
        ts = _to_us(utcnow())
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
        digest = audit_hash(prev, fields)
        cur = self._conn.execute(
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
                json.dumps(entry.details, ensure_ascii=False, sort_keys=True),
                prev,
                digest,
            ),
        )
        return int(cur.lastrowid or 0)

    def _read_audit(self, op: ReadAudit) -> list[dict[str, Any]]:
        sql = f"SELECT {', '.join(_AUDIT_KEYS)} FROM audit"
        params: tuple[Any, ...] = ()
        if op.namespace is not None:
            sql += " WHERE namespace = ?"
            params = (op.namespace,)
        sql += " ORDER BY seq"
        if op.limit is not None:
            sql += f" LIMIT {int(op.limit)}"
        out = []
        for row in self._conn.execute(sql, params):
            item = dict(zip(_AUDIT_KEYS, row, strict=True))
            item["details"] = json.loads(item["details"])
            out.append(item)
        return out

    def _read_audit_raw(self, op: ReadAuditRaw) -> RawAudit:
        """The rows as stored, the AUTOINCREMENT counter and the append-only triggers still present."""
        sql = f"SELECT {', '.join(_AUDIT_KEYS)} FROM audit ORDER BY seq"
        rows = [dict(zip(_AUDIT_KEYS, row, strict=True)) for row in self._conn.execute(sql)]
        counter = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'audit'").fetchone()
        triggers = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit'")
        missing = APPEND_ONLY_TRIGGERS - frozenset(name for (name,) in triggers)
        return RawAudit(rows, None if counter is None else int(counter[0]), tuple(sorted(missing)))

    def _put_provenance(self, op: PutProvenance) -> None:
        try:
            self._conn.execute(
                "INSERT INTO provenance (id, namespace, created_at, body) VALUES (?, ?, ?, ?)",
                (op.id, op.namespace, _to_us(op.created_at), json.dumps(op.body, ensure_ascii=False, sort_keys=True)),
            )
        except sqlite3.IntegrityError as exc:
            raise InvalidInput(f"provenance {op.id} already exists") from exc

    def _get_provenance(self, op: GetProvenance) -> dict[str, Any] | None:
        sql = "SELECT id, namespace, created_at, body FROM provenance WHERE id = ?"
        params: tuple[str, ...] = (op.id,)
        if op.namespace is not None:
            sql, params = sql + " AND namespace = ?", (op.id, op.namespace)
        row = self._conn.execute(sql, params).fetchone()
        if row is None:
            return None
        return {"id": row[0], "namespace": row[1], "created_at": _from_us(row[2]), "body": json.loads(row[3])}

    def _put_edges(self, op: PutEdges) -> None:
        put_edges(self._conn, op)

    def _list_edges(self, op: ListEdges) -> list[Edge]:
        return list_edges(self._conn, op)


def _same_content(op: FindByHash) -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause and parameters of the current records ``op`` looks for (one definition for the
    duplicate look-up and the :class:`RequireUnique` guard, so the two can never disagree)."""
    where = "namespace = ? AND content_hash = ? AND superseded_by IS NULL"
    params: tuple[Any, ...] = (op.namespace, op.content_hash)
    if op.in_context:
        where += " AND role IS ? AND segment IS ? AND seq IS ?"
        params += (op.role, op.segment, op.seq)
    return where, params


_HANDLERS: dict[type, Any] = {
    PutRecords: SQLiteStore._put,
    GetRecords: SQLiteStore._get,
    FindByHash: SQLiteStore._find_by_hash,
    RequireCurrent: SQLiteStore._require_current,
    RequireUnchanged: SQLiteStore._require_unchanged,
    RequireUnique: SQLiteStore._require_unique,
    ListRecords: SQLiteStore._list,
    ListIds: SQLiteStore._list_ids,
    CountRecords: SQLiteStore._count,
    LexicalSearch: SQLiteStore._lexical,
    VectorSearch: SQLiteStore._vector,
    MultiVectorSearch: SQLiteStore._multi_vector,
    DeleteRecords: SQLiteStore._delete,
    DeleteNamespace: SQLiteStore._delete_namespace,
    ListNamespaces: SQLiteStore._namespaces,
    AppendAudit: SQLiteStore._append_audit,
    ReadAudit: SQLiteStore._read_audit,
    ReadAuditRaw: SQLiteStore._read_audit_raw,
    PutProvenance: SQLiteStore._put_provenance,
    GetProvenance: SQLiteStore._get_provenance,
    PutEdges: SQLiteStore._put_edges,
    ListEdges: SQLiteStore._list_edges,
}


_ORDERS = {
    "created": "rowid",
    "seq": "seq IS NULL, seq, rowid",
    "event": "event_time IS NULL, event_time, seq, rowid",
    "recent": "rowid DESC",
}


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements, buf = [], []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            statements.append(joined)
            buf = []
    if "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements


_INLINE_VALUES = 500
"""Most ``seqs`` / ``segments`` a query binds one parameter each; longer lists go as one JSON array."""


def _where(namespace: str, flt: RecordFilter, alias: str = "") -> tuple[str, tuple[Any, ...]]:
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
        if len(values) <= _INLINE_VALUES:
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
        params.append(_to_us(flt.start))
    if flt.end is not None:
        clauses.append(f"{alias}event_time < ?")
        params.append(_to_us(flt.end))
    return " AND ".join(clauses), tuple(params)


def _row_to_record(row: Sequence[Any]) -> MemoryRecord:
    """Rebuild a record from a row. Rows were validated when written, so validation is skipped."""
    blob = row[20]
    embedding = None
    if blob is not None:
        embedding = np.frombuffer(blob, dtype="<f4")  # read-only view of an immutable bytes object
    return MemoryRecord.trusted(
        id=row[0],
        namespace=row[1],
        content=row[2],
        type=MemoryType(row[3]),
        role=row[4],
        source=row[5],
        event_time=_from_us(row[6]),
        created_at=_from_us(row[7]) or utcnow(),
        seq=row[8],
        segment=row[9],
        priority=row[10],
        importance=row[11],
        access_count=row[12],
        last_accessed=_from_us(row[13]),
        tier=Tier(row[14]),
        pinned=bool(row[15]),
        confidence=row[16],
        supersedes=row[17],
        superseded_by=row[18],
        token_count=row[19],
        embedding=embedding,
        encoder=row[21],
        metadata=read_only_json(json.loads(row[22])),  # shared via the record cache
        content_hash=row[23],
    )
