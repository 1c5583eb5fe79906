"""The storage contract, written once: :class:`Store`.

A backend implements one primitive, :meth:`Store.batch`, which runs a sequence of typed operations
(:mod:`retain.store.ops`) in a single transaction (all or nothing) and returns one result per
operation. Everything else (``put``, ``get``, ``search_lexical``, ``search_vector``, ...) is built
here on top of it, the design of langgraph's ``BaseStore``. Backends declare what they can do with
capability flags instead of callers branching on backend classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

import retain.store.ops as store_ops
from retain.errors import InvalidInput
from retain.record import MemoryRecord
from retain.store.audit_chain import AuditEntry
from retain.store.edges import Edge, EdgeType
from retain.store.filters import RecordFilter

__all__ = ["Store"]


class Store(ABC):
    """Storage contract. Subclasses implement :meth:`batch`, :meth:`setup`, the meta accessors
    and :meth:`close`; the typed helpers below are shared by every backend.

    Capability flags:
        supports_vector: VectorSearch is answered.
        supports_lexical: LexicalSearch is answered.
        supports_ann: vector search uses an approximate index (results may miss exact neighbours).
        supports_raw_audit: ReadAuditRaw is answered (the audit log as stored, with the backend's
            sequence counter and append-only guards), so verification reads what :meth:`audit_log`
            would fail to parse.
        supports_browse: the browsing queries are answered (:class:`PageIds`, :class:`NamespaceStats`,
            :class:`QueryAudit`, :class:`AuditHistogram`; the dashboard needs them).
    """

    supports_vector: bool = True
    supports_lexical: bool = True
    supports_ann: bool = False
    supports_raw_audit: bool = False
    supports_browse: bool = False
    audit_key: bytes | None = None
    """HMAC key of the keyed audit chain (:func:`~retain.store.audit_hash`), set by the owner of the
    store (:class:`~retain.config.MemoryConfig` ``audit_key``); None = unkeyed sha256 chain."""

    def keyed(self, op: store_ops.Op) -> store_ops.Op:
        """``op`` with this store's audit key when it appends an audit entry without one."""
        if self.audit_key is not None and isinstance(op, store_ops.AppendAudit) and op.key is None:
            return replace(op, key=self.audit_key)
        return op

    @abstractmethod
    def setup(self) -> None:
        """Create or migrate the schema (explicit, idempotent, versioned migrations)."""

    @abstractmethod
    def batch(self, ops: Sequence[store_ops.Op]) -> list[Any]:
        """Run ``ops`` in one transaction; return one result per op. All or nothing."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """Read a store-level setting (e.g. "encoder_name"), or None."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Write a store-level setting."""

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Human-readable location (file path, ":memory:", DSN without password)."""

    # --- helpers built on batch -------------------------------------------------------------

    def put(
        self,
        records: Sequence[MemoryRecord],
        audit: Sequence[AuditEntry] = (),
        edges: Sequence[Edge] = (),
        *,
        require: Sequence[
            store_ops.RequireUnique | store_ops.RequireUnchanged | store_ops.RequireCurrent | store_ops.RequireHot
        ] = (),
    ) -> None:
        """Write records, then their edges (if any), and the audit entries atomically.

        ``require`` guards are checked first, in the same transaction: one that fails raises its
        error (:class:`RequireUnique`: DuplicateContent; :class:`RequireUnchanged`: WriteConflict;
        :class:`RequireCurrent`: InvalidInput or RecordNotFound) and nothing is written.
        """
        ops: list[store_ops.Op] = [*require, store_ops.PutRecords(tuple(records))]
        if edges:
            ops.append(store_ops.PutEdges(tuple(edges)))
        self.batch([*ops, *(store_ops.AppendAudit(a) for a in audit)])

    def edges(
        self,
        namespace: str,
        ids: Sequence[str] | None = None,
        *,
        types: Sequence[EdgeType] | None = None,
        direction: str = "both",
    ) -> list[Edge]:
        """Edges of ``namespace``; see :class:`ListEdges`."""
        op = store_ops.ListEdges(
            namespace, None if ids is None else tuple(ids), None if types is None else tuple(types), direction
        )
        result: list[Edge] = self.batch([op])[0]
        return result

    def get(self, namespace: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """Records by id within ``namespace`` (missing ids skipped), in the order asked."""
        result: list[MemoryRecord] = self.batch([store_ops.GetRecords(namespace, tuple(ids))])[0]
        return result

    def find_by_hash(self, namespace: str, digest: str) -> MemoryRecord | None:
        """The oldest current record with that content hash, or None."""
        result: MemoryRecord | None = self.batch([store_ops.FindByHash(namespace, digest)])[0]
        return result

    def list_records(
        self,
        namespace: str,
        filter: RecordFilter = RecordFilter(),
        *,
        limit: int | None = None,
        order: str = "created",
    ) -> list[MemoryRecord]:
        """Records matching ``filter`` in ``order``."""
        result: list[MemoryRecord] = self.batch([store_ops.ListRecords(namespace, filter, limit, order)])[0]
        return result

    def list_ids(
        self,
        namespace: str,
        filter: RecordFilter = RecordFilter(),
        *,
        limit: int | None = None,
        order: str = "created",
    ) -> list[str]:
        """Ids of the records matching ``filter`` in ``order``; see :class:`ListIds`."""
        result: list[str] = self.batch([store_ops.ListIds(namespace, filter, limit, order)])[0]
        return result

    def count(self, namespace: str, filter: RecordFilter = RecordFilter()) -> int:
        """Number of records matching ``filter``."""
        return int(self.batch([store_ops.CountRecords(namespace, filter)])[0])

    def search_lexical(
        self, namespace: str, terms: Sequence[str], filter: RecordFilter = RecordFilter(), limit: int = 50
    ) -> list[store_ops.ScoredId]:
        """BM25 search; see :class:`LexicalSearch`."""
        if not terms:
            return []
        result: list[store_ops.ScoredId] = self.batch(
            [store_ops.LexicalSearch(namespace, tuple(terms), filter, limit)]
        )[0]
        return result

    def search_vector(
        self,
        namespace: str,
        vector: npt.NDArray[np.float32],
        filter: RecordFilter = RecordFilter(),
        limit: int = 50,
    ) -> list[store_ops.ScoredId]:
        """Cosine search; see :class:`VectorSearch`."""
        result: list[store_ops.ScoredId] = self.batch([store_ops.VectorSearch(namespace, vector, filter, limit)])[0]
        return result

    def search_vectors(
        self,
        namespace: str,
        vectors: npt.NDArray[np.float32],
        filter: RecordFilter = RecordFilter(),
        limit: int = 50,
    ) -> list[list[store_ops.ScoredId]]:
        """Cosine search for each row of ``vectors`` ((p, d) float32); see :class:`MultiVectorSearch`.

        Raises:
            InvalidInput: ``vectors`` is not 2-d.
        """
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2:
            raise InvalidInput(f"vectors: expected a (p, d) matrix, got shape {matrix.shape}")
        if matrix.shape[0] == 0:
            return []
        result: list[list[store_ops.ScoredId]] = self.batch(
            [store_ops.MultiVectorSearch(namespace, matrix, filter, limit)]
        )[0]
        return result

    def delete(
        self,
        namespace: str,
        ids: Sequence[str],
        audit: Sequence[AuditEntry] = (),
        *,
        require: Sequence[store_ops.RequireUnchanged | store_ops.RequireCurrent] = (),
    ) -> int:
        """Purge records (and every edge touching them) and append audit entries atomically;
        returns the number purged. ``require`` guards are checked first, in the same transaction, as
        in :meth:`put` (one that fails raises its error and nothing is purged)."""
        ops: list[store_ops.Op] = [
            *require,
            store_ops.DeleteRecords(namespace, tuple(ids)),
            *(store_ops.AppendAudit(a) for a in audit),
        ]
        return int(self.batch(ops)[len(require)])

    def delete_namespace(self, namespace: str, audit: Sequence[AuditEntry] = ()) -> int:
        """Purge a namespace and append audit entries atomically; returns the number purged."""
        return int(self.batch([store_ops.DeleteNamespace(namespace), *(store_ops.AppendAudit(a) for a in audit)])[0])

    def namespaces(self) -> list[str]:
        """Namespaces holding at least one record."""
        result: list[str] = self.batch([store_ops.ListNamespaces()])[0]
        return result

    def audit_log(
        self, namespace: str | None = None, limit: int | None = None, *, record_ids: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """Audit entries in order; see :class:`ReadAudit`."""
        ids = None if record_ids is None else tuple(record_ids)
        result: list[dict[str, Any]] = self.batch([store_ops.ReadAudit(namespace, limit, ids)])[0]
        return result

    def provenance(self, id: str, namespace: str | None = None) -> dict[str, Any] | None:
        """A stored context provenance; see :class:`GetProvenance`."""
        result: dict[str, Any] | None = self.batch([store_ops.GetProvenance(id, namespace)])[0]
        return result

    def page_ids(
        self,
        namespace: str,
        filter: RecordFilter = RecordFilter(),
        *,
        pinned: bool | None = None,
        terms: Sequence[str] = (),
        after: str | None = None,
        limit: int = 50,
        count_limit: int | None = None,
    ) -> store_ops.IdPage:
        """One page of record ids, newest written first, with the total matching (counted up to
        ``count_limit`` matches when given); see :class:`PageIds`."""
        op = store_ops.PageIds(namespace, filter, pinned, tuple(terms), after, limit, count_limit)
        result: store_ops.IdPage = self.batch([op])[0]
        return result

    def stats(self, namespace: str) -> store_ops.RecordStats:
        """Counts of ``namespace``'s records by tier and type; see :class:`NamespaceStats`."""
        result: store_ops.RecordStats = self.batch([store_ops.NamespaceStats(namespace)])[0]
        return result

    def query_audit(self, query: store_ops.QueryAudit) -> list[dict[str, Any]]:
        """Audit entries matching ``query``, newest first; see :class:`QueryAudit`."""
        result: list[dict[str, Any]] = self.batch([query])[0]
        return result

    def audit_histogram(
        self, namespace: str, ops: Sequence[str] | None = None, bucket_seconds: int = 3600
    ) -> list[tuple[Any, str, int]]:
        """Audit entries per time bucket and operation; see :class:`AuditHistogram`."""
        op = store_ops.AuditHistogram(namespace, None if ops is None else tuple(ops), bucket_seconds)
        result: list[tuple[Any, str, int]] = self.batch([op])[0]
        return result

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
