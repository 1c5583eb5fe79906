"""Storage: one contract (:class:`Store`) and its backends."""

from retain.store.base import ALL_RECORDS, HOT_TIERS, AuditEntry, RecordFilter, ScoredId, Store
from retain.store.sqlite import SQLiteStore

__all__ = ["ALL_RECORDS", "HOT_TIERS", "AuditEntry", "RecordFilter", "SQLiteStore", "ScoredId", "Store"]
