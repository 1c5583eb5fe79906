"""The SQLite backend's dense channel: a per-namespace index held in memory (every record's
embedding and filter columns, in write order) and the exact cosine scan over it."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput, SchemaError
from retain.numeric.kernels import blocked_product
from retain.record import MemoryRecord
from retain.store.filters import HOT_TIERS, RecordFilter
from retain.store.ops import ScoredId
from retain.store.sqlite_rows import to_us
from retain.store.where import EXPIRES_AT_KEY, parse_expiry

__all__ = ["NamespaceIndex", "build_index", "nearest"]

_MASK_CACHE_LIMIT = 16
_INCREMENTAL_UPDATES = 64
"""Most updated records a write applies to a cached namespace index in place; more drop the index."""


@dataclass
class NamespaceIndex:
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
    expires_us: npt.NDArray[np.float64]  # NaN: never expires
    masks: dict[RecordFilter, npt.NDArray[np.intp]] = field(default_factory=dict)
    searches: dict[tuple[bytes, RecordFilter, int], list[ScoredId]] = field(default_factory=dict)

    def rows(self, flt: RecordFilter) -> npt.NDArray[np.intp]:
        """Row numbers (ascending = oldest written first) of the records ``flt`` keeps; memoised for
        filters without ``seqs`` or ``segments`` (those change with every query: they are applied to
        the memoised rows of the rest of the filter). ``flt.where`` is not applied here: the store
        selects those rows by SQL (:meth:`rows_of`)."""
        if flt.live_at is not None:  # changes with every search: applied to the memoised rows
            rows = self.rows(replace(flt, live_at=None))
            if self.expiring:
                expired = self.expires_us[rows] <= float(to_us(flt.live_at))
                rows = rows[~(expired & np.isin(self.tiers[rows], [t.value for t in HOT_TIERS]))]
            return rows
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

    @property
    def expiring(self) -> bool:
        """Whether any record of the index has an expiry time."""
        return bool(np.isfinite(self.expires_us).any())

    def rows_of(self, ids: Sequence[str]) -> npt.NDArray[np.intp]:
        """Row numbers of the records ``ids`` (ascending; ids not in the index are skipped)."""
        wanted = set(ids)
        return np.flatnonzero(np.fromiter((i in wanted for i in self.ids), dtype=bool, count=len(self.ids)))

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
                self.expires_us[i] = _expires_us(rec.metadata.get(EXPIRES_AT_KEY))
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
            expires = [_expires_us(r.metadata.get(EXPIRES_AT_KEY)) for r in new]
            self.expires_us = np.concatenate([self.expires_us, np.array(expires, dtype=np.float64)])
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
            keep &= self.event_us >= float(to_us(flt.start))
        if flt.end is not None:
            keep &= self.event_us < float(to_us(flt.end))
        return keep


def _index_seq(rec: MemoryRecord) -> int:
    """The record's stream position as the index holds it: an int64, -1 for none."""
    return -1 if rec.seq is None else rec.seq


def _index_columns(rec: MemoryRecord) -> tuple[float, float]:
    """(event time in microseconds or NaN, 1.0 when current) as the index holds them."""
    return (
        np.nan if rec.event_time is None else float(to_us(rec.event_time)),
        1.0 if rec.superseded_by is None else 0.0,
    )


def _expires_us(text: object) -> float:
    """An expiry text as UTC microseconds (a float), NaN for none."""
    when = parse_expiry(text)
    return np.nan if when is None else float(to_us(when))


def _objects(values: Sequence[Any]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def build_index(conn: sqlite3.Connection, namespace: str) -> NamespaceIndex | None:
    """The index of ``namespace`` read from the ``records`` table in write (rowid) order, or None
    when the namespace holds no record.

    Raises:
        SchemaError: the namespace holds embeddings of several dimensions.
    """
    rows = conn.execute(
        "SELECT id, embedding, type, tier, segment, event_time, superseded_by IS NULL, seq, json_extract(metadata, ?) "
        "FROM records WHERE namespace = ? ORDER BY rowid",
        (f'$."{EXPIRES_AT_KEY}"', namespace),
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
    return NamespaceIndex(
        ids=np.array([r[0] for r in rows], dtype=object),
        matrix=matrix,
        has_vector=has_vector,
        types=np.array([r[2] for r in rows], dtype=object),
        tiers=np.array([r[3] for r in rows], dtype=object),
        segments=np.array([r[4] for r in rows], dtype=object),
        seqs=np.array([-1 if r[7] is None else r[7] for r in rows], dtype=np.int64),
        event_us=np.array([np.nan if r[5] is None else float(r[5]) for r in rows], dtype=np.float64),
        current=np.array([bool(r[6]) for r in rows], dtype=bool),
        expires_us=np.array([_expires_us(r[8]) for r in rows], dtype=np.float64),
    )


def _top(row: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Positions of the ``k`` highest of ``row``, best first, ties in row (write) order: the same
    answer as a stable sort, which runs only when ties straddle the cut."""
    top = np.argpartition(-row, k - 1)[:k]
    top = top[np.lexsort((top, -row[top]))]
    cut = row[top[-1]]
    if int(np.count_nonzero(row == cut)) > int(np.count_nonzero(row[top] == cut)):
        top = np.argsort(-row, kind="stable")[:k]
    return top


def nearest(
    index: NamespaceIndex,
    queries: npt.NDArray[np.float32],
    flt: RecordFilter,
    limit: int,
    keep: npt.NDArray[np.intp] | None = None,
) -> list[list[ScoredId]]:
    """Exact cosine top-``limit`` for each row of ``queries`` ((p, d) float32) over the records
    ``flt`` keeps (or the rows ``keep``, when given), best first (score = cosine in [-1, 1], higher =
    closer), in one pass over the index's matrix (no copy of the kept rows) on the calling thread
    (:func:`retain.numeric.kernels.blocked_product`): row blocks each multiplied by all p queries while in
    cache (p matrix-vector products would read the matrix p times; one (n, d) x (d, p) product would
    first copy all of it; a threaded BLAS product stalls when the machine is busy).

    Raises:
        InvalidInput: the queries' width is not the stored embeddings' width.
    """
    p = queries.shape[0]
    if not index.has_vector.any():
        return [[] for _ in range(p)]
    if queries.shape[1] != index.matrix.shape[1]:
        raise InvalidInput(f"vector: dimension {queries.shape[1]}, store holds {index.matrix.shape[1]}")
    queries = queries.copy()
    for j in range(p):  # stored rows are L2-normalised; normalising the queries makes dot = cosine
        norm = float(np.linalg.norm(queries[j]))
        if norm > 0:
            queries[j] = queries[j] / np.float32(norm)
    keep = index.rows(flt) if keep is None else keep
    keep = keep[index.has_vector[keep]]
    if keep.size == 0:
        return [[] for _ in range(p)]
    scores = blocked_product(index.matrix, np.ascontiguousarray(queries.T))[keep].T  # (p, kept)
    k = min(int(limit), keep.size)
    out = []
    for row in scores:
        top = _top(row, k)
        out.append([ScoredId(str(index.ids[keep[i]]), float(row[i])) for i in top])
    return out
