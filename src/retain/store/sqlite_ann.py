"""The SQLite backend's approximate dense channel: one HNSW graph per namespace (usearch, cosine,
int8-quantised vectors), persisted beside the database file, used as candidate generation only.

* A namespace gets a graph once it holds :attr:`AnnConfig.min_records` records; below that the exact
  numpy scan (:mod:`~retain.store.sqlite_index`) answers. Graphs never cross namespaces: one per
  namespace, keyed by the records' SQLite ``rowid``.
* Candidates from the graph (at least :attr:`AnnConfig.candidates` per query) are read back from
  ``records`` by rowid with the search's filter in SQL (so a deleted, moved or filtered-out record
  never surfaces) and rescored by the exact cosine of their stored float32 embeddings.
* Staleness: each write transaction bumps a per-namespace counter (``meta`` key ``ann_epoch/<ns>``).
  A graph answers only when its epoch equals the database's. Local writes keep it equal (their rowids
  are queued and added to / removed from the graph before the next search); a commit by another
  connection or process, a missing, truncated or corrupted file (size or CRC-32 differs from its
  sidecar JSON) makes the graph stale: it is rebuilt from the records in a background thread while
  searches of that namespace stay exact, streamed by SQL in chunks (:func:`exact_scan`: the namespace's
  matrix is never loaded whole; a search then costs a read of the namespace). After a bulk ingest,
  ``SQLiteStore.build_index`` starts the one build without waiting for a search.
* Files: ``<database>.ann/<sha256(namespace)[:24]>.usearch`` and ``.json`` (namespace, epoch, width,
  size, CRC-32). The file is memory-mapped (``view``) when opened, so the first search after opening
  costs the CRC check, not a load; the first local write to the namespace loads it for updating.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from usearch.index import Index

from retain.errors import InvalidInput
from retain.record import MemoryRecord
from retain.store.filters import RecordFilter
from retain.store.ops import ScoredId
from retain.store.sqlite_lexical import LexicalMemo
from retain.store.sqlite_rows import COLUMNS, filter_sql, row_to_record

__all__ = ["AnnConfig", "AnnSet", "bump_epoch", "exact_filtered", "exact_scan", "read_epoch"]

_EPOCH_KEY = "ann_epoch/"
_READ_CHUNK = 20_000
_R_COLUMNS = ", ".join("r." + c.strip() for c in COLUMNS.split(","))
_EMBEDDING = [c.strip() for c in COLUMNS.split(",")].index("embedding")


@dataclass(frozen=True)
class AnnConfig:
    """Settings of the SQLite store's HNSW channel.

    Attributes:
        min_records: records a namespace holds before it gets a graph (below: exact scan).
        connectivity: HNSW M (graph edges per node and layer).
        expansion_add: HNSW ef_construction.
        expansion_search: HNSW ef_search.
        candidates: graph neighbours read per query at least (rescored exactly; more are read when
            the filter drops too many).
        save_every: graph changes (added or removed vectors) after which the file is rewritten; it
            is rewritten on :meth:`AnnSet.close` too.
        threads: threads the graph uses to add vectors (0: all cores).
    """

    min_records: int = 20_000
    connectivity: int = 16
    expansion_add: int = 64
    expansion_search: int = 256
    candidates: int = 100
    save_every: int = 100_000
    threads: int = 2

    def __post_init__(self) -> None:
        for name in ("min_records", "connectivity", "expansion_add", "expansion_search", "candidates"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise InvalidInput(f"AnnConfig.{name}: must be a positive int, got {getattr(self, name)!r}")


def read_epoch(conn: sqlite3.Connection, namespace: str) -> int:
    """The namespace's write counter (0 before its first write)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_EPOCH_KEY + namespace,)).fetchone()
    return 0 if row is None else int(row[0])


def bump_epoch(conn: sqlite3.Connection, namespace: str) -> int:
    """Add one to the namespace's write counter (inside the caller's write transaction); returns it."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') "
        "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (_EPOCH_KEY + namespace,),
    )
    return read_epoch(conn, namespace)


@dataclass
class _Graph:
    """One namespace's graph, the epoch it reflects, and the local changes not in it yet."""

    index: Index
    epoch: int
    view: bool
    add: set[int] = field(default_factory=set)
    remove: set[int] = field(default_factory=set)
    unsaved: int = 0


@dataclass
class _Build:
    """A background build: its thread and the local changes committed while it runs (epoch, added, removed)."""

    thread: threading.Thread
    journal: list[tuple[int, set[int], set[int]]] = field(default_factory=list)
    result: tuple[Index, int] | None = None
    failed: str | None = None


class AnnSet:
    """The HNSW graphs of one SQLite database file (see the module docstring). Not thread-safe on its
    own: the store calls it under its lock; builds run on their own connection and are installed
    under that lock."""

    def __init__(self, path: str, config: AnnConfig, lock: threading.RLock) -> None:
        self._db = path
        self._folder = Path(path + ".ann")
        self.config = config
        self._lock = lock
        self._graphs: dict[str, _Graph] = {}
        self._builds: dict[str, _Build] = {}
        self._failed: set[str] = set()
        self.rebuilds = 0
        """Builds started (a test and the benchmark read it)."""
        self.rows: dict[str, dict[str, tuple[Any, ...]]] = {}
        """Per namespace, the full rows (:data:`~retain.store.sqlite_rows.COLUMNS`) of the hits the last
        :meth:`answer` returned, by id: the store decodes a hit's record from them instead of reading it
        again (a search reads its dense hits next). The store empties it on every write and on another
        connection's commit, as it does its decoded-record cache."""
        self.lexical = LexicalMemo()
        """The large-namespace lexical plan's term stems and counts (:mod:`~retain.store.sqlite_lexical`)."""

    # --- files ----------------------------------------------------------------------------

    def _files(self, namespace: str) -> tuple[Path, Path]:
        stem = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:24]
        return self._folder / f"{stem}.usearch", self._folder / f"{stem}.json"

    def _save(self, namespace: str, graph: _Graph) -> None:
        """Write the graph and its sidecar atomically (temporary files, then rename)."""
        data, side = self._files(namespace)
        self._folder.mkdir(exist_ok=True)
        tmp = data.with_suffix(".usearch.tmp")
        graph.index.save(str(tmp))
        meta = {
            "namespace": namespace,
            "epoch": graph.epoch,
            "ndim": int(graph.index.ndim),
            "size": tmp.stat().st_size,
            "crc32": _crc32(tmp),
        }
        side_tmp = side.with_suffix(".json.tmp")
        side_tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, data)
        os.replace(side_tmp, side)
        graph.unsaved = 0

    def _open_file(self, namespace: str, epoch: int) -> _Graph | None:
        """The namespace's saved graph when its file is intact and of ``epoch``; None otherwise (a
        stale, missing or damaged file is removed)."""
        data, side = self._files(namespace)
        if not side.exists():
            return None
        try:
            meta = json.loads(side.read_text(encoding="utf-8"))
            intact = (
                meta["namespace"] == namespace and data.stat().st_size == meta["size"] and _crc32(data) == meta["crc32"]
            )
            if intact and meta["epoch"] == epoch:
                index = Index.restore(str(data), view=True)
                if index is not None and index.ndim == meta["ndim"]:
                    index.expansion_search = self.config.expansion_search  # type: ignore[misc]  # settable at run time
                    return _Graph(index, epoch, view=True)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError):
            pass
        for path in (data, side):
            path.unlink(missing_ok=True)
        return None

    # --- state ----------------------------------------------------------------------------

    def active(self, namespace: str) -> bool:
        """Whether the namespace has a graph or one is being built (it is past the threshold)."""
        return namespace in self._graphs or namespace in self._builds

    def drop(self, namespace: str) -> None:
        """Forget the namespace's graph (its file stays until found stale)."""
        self._graphs.pop(namespace, None)

    def committed(self, namespace: str, epoch: int, add: set[int], remove: set[int]) -> None:
        """A local transaction moved ``namespace`` to ``epoch``, writing the rowids ``add`` (new or
        changed vectors) and purging ``remove``: queue them for the graph (or the build running)."""
        build = self._builds.get(namespace)
        if build is not None:
            build.journal.append((epoch, set(add), set(remove)))
        graph = self._graphs.get(namespace)
        if graph is None:
            return
        if graph.epoch != epoch - 1:  # another connection wrote in between: stale
            self._graphs.pop(namespace, None)
            return
        graph.epoch = epoch
        graph.remove |= remove | (add & graph.add)
        graph.add = (graph.add - remove) | add

    # --- search ---------------------------------------------------------------------------

    def graph(self, conn: sqlite3.Connection, namespace: str, large: Callable[[], bool]) -> _Graph | None:
        """The namespace's graph, up to date with the database; None when the exact scan must
        answer (below the threshold, or a build just started or still running)."""
        self._install(conn, namespace)
        epoch = read_epoch(conn, namespace)
        graph = self._graphs.get(namespace)
        if graph is not None and graph.epoch != epoch:
            self._graphs.pop(namespace, None)
            graph = None
        if graph is None and namespace not in self._builds:
            graph = self._open_file(namespace, epoch)
            if graph is not None:
                self._graphs[namespace] = graph
            elif namespace not in self._failed and large():
                self._start_build(namespace)
        if graph is None:
            return None
        self._apply(conn, namespace, graph)
        return graph

    def search(
        self,
        conn: sqlite3.Connection,
        graph: _Graph,
        namespace: str,
        query: npt.NDArray[np.float32],
        flt: RecordFilter,
        limit: int,
    ) -> list[ScoredId] | None:
        """Top ``limit`` of ``query`` ((d,) float32, normalised) among the records ``flt`` keeps, best
        first (exact cosine of the candidates), or None when the graph cannot supply enough
        candidates that pass the filter (the caller scans exactly)."""
        size = int(graph.index.size)
        if size == 0:
            return None
        if query.shape[0] != graph.index.ndim:
            raise InvalidInput(f"vector: dimension {query.shape[0]}, store holds {graph.index.ndim}")
        want = min(max(self.config.candidates, 2 * limit), size)
        while True:
            # all of a graph no larger than the candidates wanted: its exact scan (HNSW may miss a node)
            keys = np.asarray(graph.index.search(query, want, exact=want >= size).keys, dtype=np.int64)
            found, rows = _rescore(conn, namespace, keys, query, flt)
            if len(found) >= limit or want >= size:
                found.sort(key=lambda h: -h.score)  # stable: ties stay in write order
                kept = self.rows.setdefault(namespace, {})
                kept.update((h.id, rows[h.id]) for h in found[:limit])
                return found[:limit]
            if want >= 16 * max(self.config.candidates, 2 * limit):
                return None  # a selective filter: the exact scan of the rows it keeps answers
            want = min(want * 4, size)

    def answer(
        self, conn: sqlite3.Connection, namespace: str, queries: npt.NDArray[np.float32], flt: RecordFilter, limit: int
    ) -> list[list[ScoredId]] | None:
        """Top ``limit`` for each row of ``queries`` ((p, d) float32) from the namespace's graph, or
        None when the exact scan must answer (no graph ready). A zero query (no direction to follow)
        and a filter too selective for the graph's candidates are answered by :func:`exact_filtered`."""
        graph = self.graph(conn, namespace, lambda: True)
        if graph is None:
            return None
        self.rows.pop(namespace, None)
        out = []
        for query in queries:
            norm = float(np.linalg.norm(query))
            unit = (query / np.float32(norm or 1.0)).astype(np.float32)
            hits = self.search(conn, graph, namespace, unit, flt, limit) if norm > 0 else None
            out.append(exact_filtered(conn, namespace, unit, flt, limit) if hits is None else hits)
        return out

    def take(self, namespace: str, ids: list[str], cache: dict[str, MemoryRecord]) -> list[str]:
        """Decode those of ``ids`` among the last answer's hits (:attr:`rows`) into ``cache``; returns
        the others."""
        read = self.rows.get(namespace)
        if not read:
            return ids
        cache.update((i, row_to_record(read[i])) for i in ids if i in read)
        return [i for i in ids if i not in read]

    def forget_reads(self) -> None:
        """Drop what a write may change and no cache follows (:attr:`rows`, :attr:`lexical`'s counts);
        the store calls it before every write and on another connection's commit."""
        self.rows.clear()
        self.lexical.clear()

    # --- maintenance ----------------------------------------------------------------------

    def _apply(self, conn: sqlite3.Connection, namespace: str, graph: _Graph) -> None:
        """Bring the graph up to date with the queued local changes (one add call for all)."""
        if not graph.add and not graph.remove:
            return
        if graph.view:  # a memory-mapped file is read-only: load it to change it
            data, _ = self._files(namespace)
            loaded = Index.restore(str(data), view=False)
            if loaded is None:  # pragma: no cover - the file vanished after it was mapped
                self._graphs.pop(namespace, None)
                return
            loaded.expansion_search = self.config.expansion_search  # type: ignore[misc]  # settable at run time
            graph.index, graph.view = loaded, False
        gone = [k for k in graph.remove | graph.add if graph.index.contains(k)]  # purged, or re-added (updated)
        if gone:
            graph.index.remove(gone)
        keys, vectors = _vectors(conn, namespace, sorted(graph.add))
        if len(keys):
            graph.index.add(keys, vectors, threads=self.config.threads)
        graph.unsaved += len(gone) + len(keys)
        graph.add, graph.remove = set(), set()
        if graph.unsaved >= self.config.save_every:
            self._save(namespace, graph)

    def _start_build(self, namespace: str) -> None:
        self.rebuilds += 1
        build = _Build(threading.Thread(target=self._build, args=(namespace,), daemon=True, name="retain-ann"))
        self._builds[namespace] = build
        build.thread.start()

    def _build(self, namespace: str) -> None:
        """Read the namespace's vectors on a connection of its own (one snapshot) and build its graph."""
        build = self._builds[namespace]
        try:
            conn = sqlite3.connect(f"file:{self._db}?mode=ro", uri=True, check_same_thread=False)
            try:
                conn.execute("BEGIN")
                epoch = read_epoch(conn, namespace)
                index: Index | None = None
                for keys, vectors in _all_vectors(conn, namespace):
                    if index is None:
                        index = self._new_index(vectors.shape[1])
                    index.add(keys, vectors, threads=self.config.threads)
                conn.execute("COMMIT")
            finally:
                conn.close()
            if index is not None:
                graph = _Graph(index, epoch, view=False)
                self._save(namespace, graph)
                build.result = (index, epoch)
            else:
                build.failed = "no embeddings"
        except Exception as exc:  # a failed build leaves the exact scan answering
            build.failed = repr(exc)

    def _new_index(self, ndim: int) -> Index:
        cfg = self.config
        return Index(
            ndim=ndim,
            metric="cos",
            dtype="i8",
            connectivity=cfg.connectivity,
            expansion_add=cfg.expansion_add,
            expansion_search=cfg.expansion_search,
        )

    def _install(self, conn: sqlite3.Connection, namespace: str) -> None:
        """Take a finished build: with the local changes journaled since its snapshot when they
        account for every write since (else it is already stale and dropped)."""
        build = self._builds.get(namespace)
        if build is None or build.thread.is_alive():
            return
        del self._builds[namespace]
        if build.result is None:
            self._failed.add(namespace)
            return
        index, epoch = build.result
        graph = _Graph(index, epoch, view=False)
        for after, add, remove in build.journal:
            if after <= epoch:
                continue
            if after != graph.epoch + 1:
                return
            graph.epoch = after
            graph.remove |= remove | (add & graph.add)
            graph.add = (graph.add - remove) | add
        if graph.epoch == read_epoch(conn, namespace):
            self._graphs[namespace] = graph

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the builds running (tests, benchmarks)."""
        for build in list(self._builds.values()):
            build.thread.join(timeout)

    def close(self) -> None:
        """Wait for builds, then save every graph with unsaved changes (the graph file then matches
        the database, so the next open maps it instead of rebuilding)."""
        self.wait()
        for namespace, graph in self._graphs.items():
            if graph.unsaved and not graph.add and not graph.remove:
                self._save(namespace, graph)
        self._graphs.clear()
        self._builds.clear()


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


def _all_vectors(
    conn: sqlite3.Connection, namespace: str
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    """The namespace's (rowids, vectors) in chunks of :data:`_READ_CHUNK` rows, rowid order."""
    last = -1
    while True:
        rows = conn.execute(
            "SELECT rowid, embedding FROM records WHERE namespace = ? AND rowid > ? AND embedding IS NOT NULL "
            "ORDER BY rowid LIMIT ?",
            (namespace, last, _READ_CHUNK),
        ).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        yield _decode(rows)


def _vectors(
    conn: sqlite3.Connection, namespace: str, rowids: Sequence[int]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """(rowids, vectors) of those of ``rowids`` still in ``namespace`` with an embedding."""
    rows: list[tuple[int, bytes]] = []
    for start in range(0, len(rowids), 500):
        chunk = rowids[start : start + 500]
        rows += conn.execute(
            f"SELECT rowid, embedding FROM records WHERE rowid IN ({','.join('?' * len(chunk))}) "
            "AND +namespace = ? AND embedding IS NOT NULL",
            (*chunk, namespace),
        ).fetchall()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    return _decode(rows)


def _decode(rows: Sequence[tuple[int, bytes]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    dims = {len(r[1]) for r in rows}
    if len(dims) > 1:
        raise InvalidInput("embeddings of several dimensions in one namespace")
    dim = dims.pop() // 4
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
    return np.array([r[0] for r in rows], dtype=np.int64), matrix


def _rescore(
    conn: sqlite3.Connection,
    namespace: str,
    keys: npt.NDArray[np.int64],
    query: npt.NDArray[np.float32],
    flt: RecordFilter,
) -> tuple[list[ScoredId], dict[str, tuple[Any, ...]]]:
    """The candidates ``keys`` (rowids) the filter keeps in ``namespace``, scored by exact cosine, in
    write (rowid) order (a stable sort by score then breaks ties as the exact scan does), and their
    full rows by id (:data:`~retain.store.sqlite_rows.COLUMNS`; read with the embedding at little
    extra cost, so that the hits need not be read again)."""
    if keys.size == 0:
        return [], {}
    where, params = filter_sql(namespace, flt, alias="r.")
    rows = conn.execute(
        f"SELECT {_R_COLUMNS} FROM json_each(?) AS k CROSS JOIN records AS r ON r.rowid = k.value "
        f"WHERE r.embedding IS NOT NULL AND {where} ORDER BY r.rowid",
        (json.dumps(keys.tolist()), *params),
    ).fetchall()
    if not rows:
        return [], {}
    matrix = np.frombuffer(b"".join(r[_EMBEDDING] for r in rows), dtype="<f4").reshape(len(rows), -1)
    if matrix.shape[1] != query.shape[0]:
        return [], {}
    scores = matrix @ query
    return [ScoredId(r[0], float(s)) for r, s in zip(rows, scores, strict=True)], {r[0]: r for r in rows}


def exact_filtered(
    conn: sqlite3.Connection, namespace: str, query: npt.NDArray[np.float32], flt: RecordFilter, limit: int
) -> list[ScoredId]:
    """Exact cosine top ``limit`` of one ``query`` ((d,) float32, normalised) over the rows ``flt``
    keeps: :func:`exact_scan` of one query."""
    return exact_scan(conn, namespace, query[None, :], flt, limit)[0]


def exact_scan(
    conn: sqlite3.Connection, namespace: str, queries: npt.NDArray[np.float32], flt: RecordFilter, limit: int
) -> list[list[ScoredId]]:
    """Exact cosine top ``limit`` for each row of ``queries`` ((p, d) float32; normalised here, a zero row
    scores 0 everywhere) over the rows ``flt`` keeps, best first, ties in write (rowid) order as in the
    in-memory exact scan. The rows are read by SQL in chunks of :data:`_READ_CHUNK` and only each chunk's
    best ``limit`` per query kept: memory stays bounded whatever the namespace's size (a selective
    filter's answer, and a large namespace's while its graph is being built: its matrix is never loaded
    whole).

    Raises:
        InvalidInput: the queries' width is not the stored embeddings' width.
    """
    norms = np.linalg.norm(queries, axis=1, keepdims=True)
    queries = (queries / np.where(norms > 0, norms, 1)).astype(np.float32)
    where, params = filter_sql(namespace, flt)
    best: list[list[tuple[float, int, str]]] = [[] for _ in range(queries.shape[0])]
    sql = f"SELECT id, embedding FROM records WHERE embedding IS NOT NULL AND {where} ORDER BY rowid"
    cursor = conn.execute(sql, params)  # write order: ties break as in the exact scan
    seen = 0
    while rows := cursor.fetchmany(_READ_CHUNK):
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
        if matrix.shape[1] != queries.shape[1]:
            raise InvalidInput(f"vector: dimension {queries.shape[1]}, store holds {matrix.shape[1]}")
        scores = matrix @ queries.T  # (m, p)
        top = min(limit, len(rows))
        for j, kept in enumerate(best):
            column = scores[:, j]
            floor = np.partition(column, len(rows) - top)[len(rows) - top] if top > 0 else np.inf
            picks = np.flatnonzero(column >= floor)  # ties at the floor all kept: write order decides
            kept += [(float(column[i]), seen + int(i), rows[int(i)][0]) for i in picks]
            kept.sort(key=lambda h: (-h[0], h[1]))
            del kept[limit:]
        seen += len(rows)
    return [[ScoredId(i, score) for score, _, i in kept] for kept in best]
