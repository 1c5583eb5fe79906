"""Conformance tests of writes and reads of records: round trips, duplicate look-up and the
write guards, listing and counting.

Mixed into :class:`retain.store.conformance.StoreConformance`, which holds the fixtures ``store``
and ``corpus``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from retain.errors import DuplicateContent, InvalidInput, WriteConflict
from retain.record import MemoryRecord, MemoryType, Tier, content_hash, new_id
from retain.store.audit_chain import AuditEntry
from retain.store.base import Store
from retain.store.conformance.helpers import T0, ids, make, names, unicode_text, unit
from retain.store.filters import ALL_RECORDS, RecordFilter
from retain.store.ops import AppendAudit, CountRecords, PutRecords, RequireUnchanged, RequireUnique
from retain.text.lexical import query_terms

__all__ = ["RecordTests"]


class RecordTests:
    """Writes and reads of records: round trips, duplicate look-up and the write guards, listing and counting."""

    # --- put / get -------------------------------------------------------------------------------

    def test_put_get_round_trips_every_field(self, store: Store) -> None:
        plus_two = timezone(timedelta(hours=2))
        vec = unit(7)
        original = MemoryRecord(
            id=new_id(),
            namespace="ns-1",
            content="Meeting with Dr. Müller moved to Friday — bring the 日本語 notes 📎",
            type=MemoryType.GOAL,
            role="assistant",
            source="locomo:conv-26:D1:3",
            event_time=datetime(2023, 5, 8, 13, 56, 12, 654321, tzinfo=plus_two),
            created_at=T0,
            seq=7,
            segment="session-3",
            priority=-2,
            importance=0.25,
            access_count=4,
            last_accessed=datetime(2024, 3, 2, 0, 0, 0, 1, tzinfo=UTC),
            tier=Tier.ARCHIVE,
            pinned=True,
            confidence=0.75,
            supersedes="01HZZZZZZZZZZZZZZZZZZZZZZZ",
            superseded_by=None,
            token_count=13,
            embedding=vec,
            encoder="hashing-16",
            metadata={"speaker": "Ann", "caption": "a map", "nested": {"list": [1, 2.5, None, "ü", True]}},
        )
        store.put([original])

        (got,) = store.get("ns-1", [original.id])

        assert got == original  # dataclass equality over every field except the embedding
        assert got.event_time == datetime(2023, 5, 8, 11, 56, 12, 654321, tzinfo=UTC)
        for name in ("event_time", "created_at", "last_accessed"):
            assert getattr(got, name).utcoffset() == timedelta(0), name
        assert got.created_at == T0
        assert got.type is MemoryType.GOAL and got.tier is Tier.ARCHIVE
        assert got.pinned is True
        assert got.metadata == {"speaker": "Ann", "caption": "a map", "nested": {"list": [1, 2.5, None, "ü", True]}}
        assert got.content_hash == content_hash(original.content)
        assert got.embedding is not None
        assert got.embedding.dtype == np.float32
        np.testing.assert_array_equal(got.embedding, vec)

    def test_put_get_round_trips_none_fields(self, store: Store) -> None:
        original = MemoryRecord(id=new_id(), namespace="ns", content="bare", created_at=T0)
        store.put([original])
        (got,) = store.get("ns", [original.id])
        assert got == original
        assert got.event_time is None and got.last_accessed is None and got.seq is None
        assert got.embedding is None and got.encoder is None and got.metadata == {}

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)))
    @example(datetime(2038, 11, 21, 1, 16, 11, 972337, tzinfo=UTC))  # lost a microsecond via float timestamps
    def test_times_round_trip_to_the_microsecond(self, store: Store, when: datetime) -> None:
        original = MemoryRecord(id=new_id(), namespace="ns", content="tick", event_time=when, created_at=when)
        store.put([original])
        (got,) = store.get("ns", [original.id])
        assert got.event_time == when
        assert got.created_at == when

    def test_put_existing_id_replaces_record(self, store: Store) -> None:
        first = make("ns", "old words here")
        store.put([first])
        store.put([first.evolve(content="fresh words now", access_count=3)])
        (got,) = store.get("ns", [first.id])
        assert got.content == "fresh words now" and got.access_count == 3
        assert store.count("ns", ALL_RECORDS) == 1
        assert store.search_lexical("ns", ["old"]) == []
        assert ids(store.search_lexical("ns", ["fresh"])) == [first.id]

    def test_get_returns_in_asked_order_and_skips_missing(self, store: Store) -> None:
        a, b, c = make("ns", "a1"), make("ns", "b1"), make("ns", "c1")
        store.put([a, b, c])
        assert ids(store.get("ns", [c.id, "missing", a.id, b.id])) == [c.id, a.id, b.id]
        assert store.get("ns", []) == []

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(unicode_text)
    def test_unicode_content_round_trips_byte_for_byte(self, store: Store, text: str) -> None:
        original = make("uni", text, seed=1)
        store.put([original])
        (got,) = store.get("uni", [original.id])
        assert got.content == text
        assert got.content.encode("utf-8") == text.encode("utf-8")
        assert got.content_hash == content_hash(text)

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(unicode_text)
    def test_lexical_search_finds_any_text_by_its_own_terms(self, store: Store, text: str) -> None:
        namespace = f"lex-{new_id()}"
        original = make(namespace, text, seed=1)
        store.put([original])
        terms = query_terms(text)
        hits = store.search_lexical(namespace, terms)
        assert ids(hits) == ([original.id] if terms else [])

    # --- find by hash ----------------------------------------------------------------------------

    def test_find_by_hash_returns_oldest_current(self, store: Store) -> None:
        digest = content_hash("same words")
        assert store.find_by_hash("ns", digest) is None
        first = make("ns", "same words", created_at=T0)
        second = make("ns", "same  words", created_at=T0 + timedelta(seconds=1))  # same normalised text
        other = make("ns", "different words")
        store.put([first])
        store.put([second, other])

        found = store.find_by_hash("ns", digest)
        assert found is not None and found.id == first.id

        store.put([first.evolve(superseded_by=other.id)])  # the oldest is no longer current
        found = store.find_by_hash("ns", digest)
        assert found is not None and found.id == second.id

        store.put([second.evolve(superseded_by=other.id)])
        assert store.find_by_hash("ns", digest) is None
        assert store.find_by_hash("elsewhere", content_hash("different words")) is None

    def test_require_unique_refuses_a_current_copy_and_writes_nothing(self, store: Store) -> None:
        first = make("ns", "same words", role="Alice", segment="s1", seq=3)
        second = make("ns", "same  words", role="Alice", segment="s1", seq=3)  # same normalised text
        guard = RequireUnique("ns", first.content_hash, role="Alice", segment="s1", seq=3)
        note = AuditEntry("ns", "add", second.id)
        store.batch([guard, PutRecords((first,))])  # no copy yet: the guard passes
        store.put([make("ns", "unrelated")])

        with pytest.raises(DuplicateContent, match=first.id) as info:
            store.batch([guard, PutRecords((second,)), AppendAudit(note)])
        assert info.value.existing_id == first.id
        assert isinstance(info.value, InvalidInput)
        assert store.get("ns", [second.id]) == []  # the whole batch rolled back
        assert store.audit_log() == []
        with pytest.raises(DuplicateContent):
            store.put([second], [note], require=[guard])
        assert store.count("ns", ALL_RECORDS) == 2

        store.put([first.evolve(superseded_by=second.id)])  # the copy is history now: the guard passes
        store.put([second], require=[guard])
        assert ids(store.get("ns", [first.id, second.id])) == [first.id, second.id]
        with pytest.raises(DuplicateContent) as info:
            store.batch([guard])
        assert info.value.existing_id == second.id

    def test_require_unchanged_refuses_a_record_deleted_superseded_or_moved(self, store: Store) -> None:
        held, other = make("ns", "held words", tier=Tier.ARCHIVE), make("ns", "other words")
        store.put([held, other])
        note = AuditEntry("ns", "restore", held.id)
        store.batch([RequireUnchanged("ns", held.id), RequireUnchanged("ns", held.id, Tier.ARCHIVE)])  # as read

        with pytest.raises(WriteConflict, match=r"moved to the archive tier meanwhile \(read in dynamic\)"):
            store.batch([RequireUnchanged("ns", held.id, Tier.DYNAMIC), PutRecords((other,)), AppendAudit(note)])
        with pytest.raises(WriteConflict, match="deleted"):
            store.batch([RequireUnchanged("elsewhere", held.id)])  # another namespace's record is not this one
        assert store.audit_log() == []  # the failed batch wrote nothing

        store.put([held.evolve(superseded_by=other.id)])
        with pytest.raises(WriteConflict, match=f"superseded by {other.id}") as info:
            store.put([held.evolve(tier=Tier.DYNAMIC)], [note], require=[RequireUnchanged("ns", held.id)])
        assert isinstance(info.value, InvalidInput)
        (stored,) = store.get("ns", [held.id])
        assert stored.superseded_by == other.id and stored.tier is Tier.ARCHIVE

        store.delete("ns", [held.id])
        with pytest.raises(WriteConflict, match="deleted"):
            store.put([held.evolve(tier=Tier.DYNAMIC)], require=[RequireUnchanged("ns", held.id, Tier.ARCHIVE)])
        assert store.get("ns", [held.id]) == []  # not brought back

    @pytest.mark.parametrize(
        "context",
        [
            {"role": "Bob", "segment": "s1", "seq": 3},
            {"role": "Alice", "segment": "s2", "seq": 3},
            {"role": "Alice", "segment": None, "seq": 3},
            {"role": "Alice", "segment": "s1", "seq": 4},
            {"role": "Alice", "segment": "s1", "seq": None},
        ],
    )
    def test_require_unique_counts_only_the_same_role_segment_and_position(
        self, store: Store, context: dict[str, Any]
    ) -> None:
        held = make("ns", "Sounds good!", role="Alice", segment="s1", seq=3)
        store.put([held])
        digest = held.content_hash
        store.batch([RequireUnique("ns", digest, **context)])  # passes: another speaker or turn
        store.batch([RequireUnique("elsewhere", digest, role="Alice", segment="s1", seq=3)])  # another namespace
        store.batch([RequireUnique("ns", content_hash("other words"), role="Alice", segment="s1", seq=3)])
        plain = make("ns", "Sounds good!")  # role "user", no segment, no position: None matches None
        store.put([plain])
        with pytest.raises(DuplicateContent) as info:
            store.batch([RequireUnique("ns", digest, role="user")])
        assert info.value.existing_id == plain.id

    # --- list / count ----------------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("flt", "expected"),
        [
            (RecordFilter(), ["fact", "goal", "core", "plan"]),
            (RecordFilter(tiers=None), ["fact", "goal", "core", "archived", "plan"]),
            (ALL_RECORDS, ["fact", "goal", "core", "archived", "old", "plan"]),
            (RecordFilter(include_superseded=True), ["fact", "goal", "core", "old", "plan"]),
            (RecordFilter(tiers=(Tier.ARCHIVE,)), ["archived"]),
            (RecordFilter(tiers=(Tier.CORE,)), ["core"]),
            (RecordFilter(types=(MemoryType.GOAL, MemoryType.PLAN_STEP)), ["goal", "plan"]),
            (RecordFilter(segments=("s2",), tiers=None), ["core", "archived"]),
            (RecordFilter(seqs=(0, 2, 3)), ["fact", "goal"]),
            (RecordFilter(seqs=(0, 2, 3), include_superseded=True), ["fact", "goal", "old"]),
            (RecordFilter(start=T0 + timedelta(days=1)), ["fact", "plan"]),
            (RecordFilter(end=T0 + timedelta(days=1)), ["goal"]),
            (RecordFilter(start=T0 + timedelta(days=1), end=T0 + timedelta(days=2), tiers=None), ["archived", "plan"]),
            (RecordFilter(start=T0 + timedelta(days=10)), []),
        ],
    )
    def test_list_filters(
        self, store: Store, corpus: dict[str, MemoryRecord], flt: RecordFilter, expected: list[str]
    ) -> None:
        assert names(corpus, store.list_records("ns", flt)) == expected
        assert store.count("ns", flt) == len(expected)

    def test_list_orders_and_limit(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        def ordered(order: str) -> str:
            return " ".join(names(corpus, store.list_records("ns", ALL_RECORDS, order=order)))

        assert ordered("created") == "fact goal core archived old plan"  # insertion order
        assert ordered("seq") == "goal archived fact old core plan"  # seq ascending, unknown last
        assert ordered("event") == "goal archived plan fact old core"  # event time ascending, unknown last
        assert names(corpus, store.list_records("ns", ALL_RECORDS, order="seq", limit=2)) == ["goal", "archived"]
        with pytest.raises(InvalidInput, match="order"):
            store.list_records("ns", order="sideways")

    def test_count_records(self, store: Store, corpus: dict[str, MemoryRecord]) -> None:
        assert store.count("ns") == 4
        assert store.count("ns", ALL_RECORDS) == 6
        assert store.count("other", ALL_RECORDS) == 1
        assert store.count("empty", ALL_RECORDS) == 0
        assert store.batch([CountRecords("ns", RecordFilter(tiers=None))]) == [5]
        assert store.namespaces() == ["ns", "other"]
