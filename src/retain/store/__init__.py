"""Storage: one contract (:class:`Store` over the typed operations of :mod:`retain.store.ops`),
its backends (:class:`SQLiteStore`), and the conformance suite every backend runs
(:mod:`retain.store.conformance`, imported only by tests: it needs pytest).

Import the contract from here (``from retain.store import RecordFilter, Store``); the submodules
are its parts: :mod:`~retain.store.filters`, :mod:`~retain.store.audit_chain`,
:mod:`~retain.store.edges`, :mod:`~retain.store.ops`, :mod:`~retain.store.base`.
"""

from retain.store.audit_chain import GENESIS_HASH, AuditEntry, RawAudit, audit_hash
from retain.store.base import Store
from retain.store.edges import Edge, EdgeType, check_edge
from retain.store.filters import ALL_RECORDS, DEFAULT_FILTER, HOT_TIERS, MAX_SEQ, RecordFilter
from retain.store.ops import (
    WRITE_ATTEMPTS,
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
    RequireHot,
    RequireUnchanged,
    RequireUnique,
    ScoredId,
    VectorSearch,
    retry_on_conflict,
)
from retain.store.sqlite import SQLiteStore

__all__ = [
    "ALL_RECORDS",
    "DEFAULT_FILTER",
    "GENESIS_HASH",
    "HOT_TIERS",
    "MAX_SEQ",
    "WRITE_ATTEMPTS",
    "AppendAudit",
    "AuditEntry",
    "CountRecords",
    "DeleteNamespace",
    "DeleteRecords",
    "Edge",
    "EdgeType",
    "FindByHash",
    "GetProvenance",
    "GetRecords",
    "LexicalSearch",
    "ListEdges",
    "ListIds",
    "ListNamespaces",
    "ListRecords",
    "MultiVectorSearch",
    "Op",
    "PutEdges",
    "PutProvenance",
    "PutRecords",
    "RawAudit",
    "ReadAudit",
    "ReadAuditRaw",
    "RecordFilter",
    "RequireCurrent",
    "RequireHot",
    "RequireUnchanged",
    "RequireUnique",
    "SQLiteStore",
    "ScoredId",
    "Store",
    "VectorSearch",
    "audit_hash",
    "check_edge",
    "retry_on_conflict",
]
