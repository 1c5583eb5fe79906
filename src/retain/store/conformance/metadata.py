"""Conformance tests of metadata conditions (``RecordFilter.where``, :mod:`retain.store.where`) and of
expiry (``RecordFilter.live_at``) in every search and listing of the contract.

Mixed into :class:`retain.store.conformance.StoreConformance`, which holds the ``store`` fixture.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from retain.errors import InvalidInput
from retain.record import MemoryRecord, Tier
from retain.store.base import Store
from retain.store.conformance.helpers import DIM, T0, ids, make, unit
from retain.store.filters import RecordFilter
from retain.store.where import EXPIRES_AT_KEY, expiry_text, parse_where
from retain.text.lexical import query_terms

__all__ = ["MetadataTests"]

_VALUES: dict[str, dict[str, Any]] = {
    "n1": {"n": 1, "topic": "travel", "flag": True},
    "n2": {"n": 2.5, "topic": "food", "flag": False},
    "n3": {"n": 3, "topic": "travel", "nested": {"lang": "fr"}},
    "s": {"n": "3", "topic": "Travel"},
    "none": {"n": None},
    "bare": {},
}


def _kept(store: Store, where: dict[str, Any], records: dict[str, MemoryRecord]) -> set[str]:
    """The names of ``records`` that every channel and listing keeps under ``where`` (all must agree)."""
    flt = RecordFilter(where=parse_where(where))
    names = {r.id: name for name, r in records.items()}
    listed = {names[i] for i in store.list_ids("ns", flt)}
    recent = {names[i] for i in store.list_ids("ns", flt, order="recent")}
    by_seq = {names[i] for i in store.list_ids("ns", flt, order="seq")}
    lexical = {names[h.id] for h in store.search_lexical("ns", query_terms("note"), flt, limit=50)}
    dense = {names[h.id] for h in store.search_vector("ns", unit(0), flt, limit=50)}
    (multi,) = store.search_vectors("ns", unit(0).reshape(1, DIM), flt, limit=50)
    assert listed == recent == by_seq == lexical == dense == {names[h.id] for h in multi}
    assert store.count("ns", flt) == len(listed)
    return listed


class MetadataTests:
    """Metadata conditions and expiry, applied inside every channel and listing."""

    @pytest.fixture
    def tagged(self, store: Store) -> dict[str, MemoryRecord]:
        records = {
            name: make("ns", f"note {name}", seq=i, metadata=meta) for i, (name, meta) in enumerate(_VALUES.items())
        }
        store.put(list(records.values()))
        store.put([make("other", "note elsewhere", metadata={"n": 1, "topic": "travel"})])
        return records

    @pytest.mark.parametrize(
        ("where", "expected"),
        [
            ({"topic": "travel"}, {"n1", "n3"}),
            ({"n": 3}, {"n3"}),
            ({"n": 2.5}, {"n2"}),
            ({"n": "3"}, {"s"}),
            ({"flag": True}, {"n1"}),
            ({"flag": False}, {"n2"}),
            ({"n": None}, {"none", "bare"}),
            ({"n": {"$ne": 3}}, {"n1", "n2", "s", "none", "bare"}),
            ({"n": {"$gt": 1}}, {"n2", "n3"}),
            ({"n": {"$gte": 1, "$lt": 3}}, {"n1", "n2"}),
            ({"n": {"$lte": 2.5}}, {"n1", "n2"}),
            ({"topic": {"$gte": "T", "$lt": "U"}}, {"s"}),
            ({"n": {"$in": [1, "3", None]}}, {"n1", "s", "none", "bare"}),
            ({"topic": "travel", "n": {"$gt": 1}}, {"n3"}),
            ({"nested.lang": "fr"}, {"n3"}),
            ({"missing": {"$gt": 0}}, set()),
        ],
    )
    def test_where_keeps_the_same_records_in_every_channel(
        self, store: Store, tagged: dict[str, MemoryRecord], where: dict[str, Any], expected: set[str]
    ) -> None:
        assert _kept(store, where, tagged) == expected

    def test_where_limit_counts_matching_records_only(self, store: Store) -> None:
        records = [make("ns", f"note {i}", seq=i, metadata={"even": i % 2 == 0}) for i in range(40)]
        store.put(records)
        flt = RecordFilter(where=parse_where({"even": True}))
        assert len(store.search_vector("ns", unit(0), flt, limit=10)) == 10
        assert len(store.search_lexical("ns", query_terms("note"), flt, limit=10)) == 10
        assert store.list_ids("ns", flt, limit=10) == [r.id for r in records[::2][:10]]

    @pytest.mark.parametrize(
        "where",
        [
            {"n": {"$regex": "x"}},
            {"n": {"$gt": None}},
            {"n": {"$gt": True}},
            {"n": {"$in": []}},
            {"n": {"$in": "abc"}},
            {"n": [1, 2]},
            {"n": {"$eq": {"a": 1}}},
            {"n": float("nan")},
            {"": 1},
            {'a"b': 1},
            {"a..b": 1},
            {3: 1},
            "n = 3",
        ],
    )
    def test_bad_conditions_are_refused(self, where: Any) -> None:
        with pytest.raises(InvalidInput):
            RecordFilter(where=parse_where(where))

    def test_live_at_leaves_out_expired_hot_records_only(self, store: Store) -> None:
        soon = make("ns", "note soon", metadata={EXPIRES_AT_KEY: expiry_text(T0 + timedelta(hours=1))})
        later = make("ns", "note later", metadata={EXPIRES_AT_KEY: expiry_text(T0 + timedelta(days=1))})
        never = make("ns", "note never")
        archived = make(
            "ns", "note archived", tier=Tier.ARCHIVE, metadata={EXPIRES_AT_KEY: expiry_text(T0 - timedelta(days=1))}
        )
        store.put([soon, later, never, archived])
        every = (Tier.CORE, Tier.DYNAMIC, Tier.ARCHIVE)
        for at, expected in [
            (T0, {soon.id, later.id, never.id, archived.id}),
            (T0 + timedelta(hours=1), {later.id, never.id, archived.id}),
            (T0 + timedelta(days=2), {never.id, archived.id}),
        ]:
            flt = RecordFilter(tiers=every, live_at=at)
            assert set(store.list_ids("ns", flt)) == expected
            assert set(ids(store.search_vector("ns", unit(0), flt))) == expected
            assert set(ids(store.search_lexical("ns", query_terms("note"), flt))) == expected
            assert store.count("ns", flt) == len(expected)
        assert set(store.list_ids("ns", RecordFilter(tiers=every))) == {soon.id, later.id, never.id, archived.id}
