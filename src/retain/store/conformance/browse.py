"""Conformance: the browsing queries of the contract (:class:`~retain.store.PageIds`,
:class:`~retain.store.NamespaceStats`, :class:`~retain.store.QueryAudit`,
:class:`~retain.store.AuditHistogram`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from retain.errors import InvalidInput
from retain.record import MemoryRecord, Tier, utcnow
from retain.store.audit_chain import AuditEntry
from retain.store.base import Store
from retain.store.conformance.helpers import make
from retain.store.filters import ALL_RECORDS, RecordFilter
from retain.store.ops import AppendAudit, QueryAudit
from retain.text.lexical import index_terms

__all__ = ["BrowseTests"]


class BrowseTests:
    """Paging, counts and audit look-ups; uses the suite's ``corpus`` (six records of "ns"). Skipped
    for a backend without ``supports_browse``."""

    @pytest.fixture(autouse=True)
    def _answers_browsing(self, request: pytest.FixtureRequest, store: Store) -> None:
        # autouse reaches every test of the whole suite class: skip only this mixin's own tests
        if request.function.__qualname__.startswith("BrowseTests.") and not store.supports_browse:
            pytest.skip(f"{type(store).__name__} does not answer the browsing queries (supports_browse)")

    def test_pages_run_newest_first_and_join_up(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        everything = store.list_ids("ns", ALL_RECORDS, order="recent")
        first = store.page_ids("ns", ALL_RECORDS, limit=4)
        assert first.ids == everything[:4] and first.total == len(everything) == 6
        second = store.page_ids("ns", ALL_RECORDS, after=first.ids[-1], limit=4)
        assert second.ids == everything[4:] and second.total == 6

    def test_page_filters_pinned_terms_and_history(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        assert store.page_ids("ns", RecordFilter(tiers=None), pinned=True).ids == [corpus["core"].id]
        assert corpus["core"].id not in store.page_ids("ns", RecordFilter(tiers=None), pinned=False).ids
        found = store.page_ids("ns", ALL_RECORDS, terms=index_terms("archived four"))
        assert found.ids == [corpus["archived"].id] and found.total == 1
        assert store.page_ids("ns", ALL_RECORDS, terms=index_terms("four fact")).ids == []  # every term
        assert corpus["old"].id not in store.page_ids("ns", RecordFilter(tiers=None)).ids
        assert store.page_ids("other", ALL_RECORDS).ids == [corpus["foreign"].id]

    def test_a_count_limit_bounds_the_count_not_the_page(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        everything = store.list_ids("ns", ALL_RECORDS, order="recent")
        capped = store.page_ids("ns", ALL_RECORDS, limit=5, count_limit=4)
        assert capped.ids == everything[:5] and (capped.total, capped.exact) == (4, False)
        assert store.page_ids("ns", ALL_RECORDS, count_limit=6)[1:] == (6, True)
        assert store.page_ids("ns", ALL_RECORDS).exact
        store.put([make("ns", f"kayak trip {i}", seed=20 + i) for i in range(3)])
        found = store.page_ids("ns", ALL_RECORDS, terms=index_terms("kayak"), count_limit=2)
        assert len(found.ids) == 3 and (found.total, found.exact) == (2, False)
        exact = store.page_ids("ns", ALL_RECORDS, terms=index_terms("kayak"), count_limit=3)
        assert (exact.total, exact.exact) == (3, True)
        with pytest.raises(InvalidInput, match="count_limit"):
            store.page_ids("ns", count_limit=0)

    def test_page_refuses_a_bad_cursor_or_limit(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        with pytest.raises(InvalidInput, match="after"):
            store.page_ids("ns", after=corpus["foreign"].id)
        with pytest.raises(InvalidInput, match="limit"):
            store.page_ids("ns", limit=0)

    def test_stats_count_current_by_tier_and_type(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        stats = store.stats("ns")
        assert sum(stats.current.values()) == 5 and stats.superseded == 1 and stats.pinned == 1
        assert stats.current[(Tier.CORE.value, "fact")] == 1
        assert stats.current[(Tier.ARCHIVE.value, "fact")] == 1
        assert store.stats("empty").current == {}

    def test_query_audit_filters_newest_first(self, store: Store) -> None:
        entries = [
            AuditEntry("ns", "add", "r1", actor="user"),
            AuditEntry("ns", "pin", "r1", actor="admin"),
            AuditEntry("ns", "add", "r2", actor="agent"),
            AuditEntry("other", "add", "r3"),
        ]
        seqs = store.batch([AppendAudit(e) for e in entries])
        found = store.query_audit(QueryAudit(namespace="ns"))
        assert [e["seq"] for e in found] == seqs[2::-1]
        assert [e["op"] for e in store.query_audit(QueryAudit(namespace="ns", record_id="r1"))] == ["pin", "add"]
        assert [e["record_id"] for e in store.query_audit(QueryAudit(ops=("add",), actor="agent"))] == ["r2"]
        between = store.query_audit(QueryAudit(after_seq=seqs[0], before_seq=seqs[3]))
        assert [e["seq"] for e in between] == [seqs[2], seqs[1]]
        assert len(store.query_audit(QueryAudit(limit=1))) == 1
        later = utcnow() + timedelta(days=1)
        assert store.query_audit(QueryAudit(namespace="ns", start=later)) == []
        assert len(store.query_audit(QueryAudit(namespace="ns", end=later))) == 3
        with pytest.raises(InvalidInput, match="limit"):
            store.query_audit(QueryAudit(limit=0))

    def test_audit_histogram_counts_per_bucket_and_op(self, store: Store) -> None:
        store.batch([AppendAudit(AuditEntry("ns", op)) for op in ("add", "add", "evict")])
        store.batch([AppendAudit(AuditEntry("other", "add"))])
        rows = store.audit_histogram("ns", bucket_seconds=86_400 * 365 * 100)
        assert [(op, n) for _, op, n in rows] == [("add", 2), ("evict", 1)]
        assert [(op, n) for _, op, n in store.audit_histogram("ns", ops=["evict"])] == [("evict", 1)]
        with pytest.raises(InvalidInput, match="bucket_seconds"):
            store.audit_histogram("ns", bucket_seconds=0)
