"""The storage contract: every backend runs this suite (see the ``store`` fixture in conftest).

Only the :class:`~retain.store.Store` API is used, except in the tests marked "SQLite only", which
check properties of the SQLite file itself.
"""

from __future__ import annotations

import itertools
import sqlite3
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from retain.errors import DuplicateContent, InvalidInput, SchemaError, WriteConflict
from retain.record import MemoryRecord, MemoryType, Tier, content_hash, new_id
from retain.store import (
    ALL_RECORDS,
    GENESIS_HASH,
    AppendAudit,
    AuditEntry,
    CountRecords,
    GetProvenance,
    GetRecords,
    LexicalSearch,
    PutProvenance,
    PutRecords,
    RecordFilter,
    RequireUnchanged,
    RequireUnique,
    SQLiteStore,
    Store,
    VectorSearch,
    audit_hash,
)
from retain.store.sqlite import SCHEMA_VERSION
from retain.text.lexical import query_terms

DIM = 16
T0 = datetime(2024, 3, 1, 9, 30, 15, 123457, tzinfo=UTC)


def unit(seed: int, dim: int = DIM) -> np.ndarray:
    """A deterministic (dim,) float32 L2-normalised vector."""
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def make(namespace: str, content: str, *, seed: int | None = None, **fields: object) -> MemoryRecord:
    """A valid record; embedding ``unit(seed)`` (default: derived from the content)."""
    vec = unit(seed if seed is not None else zlib.crc32(content.encode()))
    return MemoryRecord(id=new_id(), namespace=namespace, content=content, embedding=vec, encoder="test", **fields)


def ids(records_or_hits: list) -> list[str]:
    return [x.id for x in records_or_hits]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Reference cosine similarity, written out by hand in float64."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.sum(a64 * b64) / (np.sqrt(np.sum(a64 * a64)) * np.sqrt(np.sum(b64 * b64))))


# --- put / get -------------------------------------------------------------------------------


def test_put_get_round_trips_every_field(store: Store) -> None:
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


def test_put_get_round_trips_none_fields(store: Store) -> None:
    original = MemoryRecord(id=new_id(), namespace="ns", content="bare", created_at=T0)
    store.put([original])
    (got,) = store.get("ns", [original.id])
    assert got == original
    assert got.event_time is None and got.last_accessed is None and got.seq is None
    assert got.embedding is None and got.encoder is None and got.metadata == {}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)))
@example(datetime(2038, 11, 21, 1, 16, 11, 972337, tzinfo=UTC))  # lost a microsecond via float timestamps
def test_times_round_trip_to_the_microsecond(store: Store, when: datetime) -> None:
    original = MemoryRecord(id=new_id(), namespace="ns", content="tick", event_time=when, created_at=when)
    store.put([original])
    (got,) = store.get("ns", [original.id])
    assert got.event_time == when
    assert got.created_at == when


def test_put_existing_id_replaces_record(store: Store) -> None:
    first = make("ns", "old words here")
    store.put([first])
    store.put([first.evolve(content="fresh words now", access_count=3)])
    (got,) = store.get("ns", [first.id])
    assert got.content == "fresh words now" and got.access_count == 3
    assert store.count("ns", ALL_RECORDS) == 1
    assert store.search_lexical("ns", ["old"]) == []
    assert ids(store.search_lexical("ns", ["fresh"])) == [first.id]


def test_get_returns_in_asked_order_and_skips_missing(store: Store) -> None:
    a, b, c = make("ns", "a1"), make("ns", "b1"), make("ns", "c1")
    store.put([a, b, c])
    assert ids(store.get("ns", [c.id, "missing", a.id, b.id])) == [c.id, a.id, b.id]
    assert store.get("ns", []) == []


unicode_text = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_categories=("Cs",)),  # any code point UTF-8 can carry
        st.sampled_from("用户喜欢绿茶東京でラーメンを食べましたカタカナ한국어🍵😀👩‍👩‍👧éßİ\u0301\u200d"),
    ),
    min_size=1,
    max_size=200,
).filter(lambda s: s.strip() != "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unicode_text)
def test_unicode_content_round_trips_byte_for_byte(store: Store, text: str) -> None:
    original = make("uni", text, seed=1)
    store.put([original])
    (got,) = store.get("uni", [original.id])
    assert got.content == text
    assert got.content.encode("utf-8") == text.encode("utf-8")
    assert got.content_hash == content_hash(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unicode_text)
def test_lexical_search_finds_any_text_by_its_own_terms(store: Store, text: str) -> None:
    namespace = f"lex-{new_id()}"
    original = make(namespace, text, seed=1)
    store.put([original])
    terms = query_terms(text)
    hits = store.search_lexical(namespace, terms)
    assert ids(hits) == ([original.id] if terms else [])


# --- find by hash ----------------------------------------------------------------------------


def test_find_by_hash_returns_oldest_current(store: Store) -> None:
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


def test_require_unique_refuses_a_current_copy_and_writes_nothing(store: Store) -> None:
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


def test_require_unchanged_refuses_a_record_deleted_superseded_or_moved(store: Store) -> None:
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
def test_require_unique_counts_only_the_same_role_segment_and_position(store: Store, context: dict) -> None:
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


@pytest.fixture
def corpus(store: Store) -> dict[str, MemoryRecord]:
    """Six records of namespace "ns" (one superseded, one archived) and one in "other"."""
    recs = {
        "fact": make("ns", "fact one", seed=1, seq=2, segment="s1", event_time=T0 + timedelta(days=2)),
        "goal": make("ns", "goal two", seed=2, seq=0, segment="s1", type=MemoryType.GOAL, event_time=T0),
        "core": make("ns", "core three", seed=3, seq=5, segment="s2", tier=Tier.CORE, pinned=True),
        "archived": make(
            "ns", "archived four", seed=4, seq=1, segment="s2", tier=Tier.ARCHIVE, event_time=T0 + timedelta(days=1)
        ),
        "old": make("ns", "old five", seed=5, seq=3, segment="s1", event_time=T0 + timedelta(days=3)),
        "plan": make("ns", "plan six", seed=6, type=MemoryType.PLAN_STEP, event_time=T0 + timedelta(days=1, hours=1)),
        "foreign": make("other", "foreign seven", seed=7, seq=0, segment="s1", event_time=T0),
    }
    for name in ("fact", "goal", "core", "archived", "old", "plan", "foreign"):
        store.put([recs[name]])
    recs["old"] = recs["old"].evolve(superseded_by=recs["fact"].id)
    store.put([recs["old"]])
    return recs


def names(corpus: dict[str, MemoryRecord], records: list[MemoryRecord]) -> list[str]:
    by_id = {r.id: name for name, r in corpus.items()}
    return [by_id[r.id] for r in records]


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
def test_list_filters(store: Store, corpus: dict[str, MemoryRecord], flt: RecordFilter, expected: list[str]) -> None:
    assert names(corpus, store.list_records("ns", flt)) == expected
    assert store.count("ns", flt) == len(expected)


def test_list_orders_and_limit(store: Store, corpus: dict[str, MemoryRecord]) -> None:
    def ordered(order: str) -> str:
        return " ".join(names(corpus, store.list_records("ns", ALL_RECORDS, order=order)))

    assert ordered("created") == "fact goal core archived old plan"  # insertion order
    assert ordered("seq") == "goal archived fact old core plan"  # seq ascending, unknown last
    assert ordered("event") == "goal archived plan fact old core"  # event time ascending, unknown last
    assert names(corpus, store.list_records("ns", ALL_RECORDS, order="seq", limit=2)) == ["goal", "archived"]
    with pytest.raises(InvalidInput, match="order"):
        store.list_records("ns", order="sideways")


def test_count_records(store: Store, corpus: dict[str, MemoryRecord]) -> None:
    assert store.count("ns") == 4
    assert store.count("ns", ALL_RECORDS) == 6
    assert store.count("other", ALL_RECORDS) == 1
    assert store.count("empty", ALL_RECORDS) == 0
    assert store.batch([CountRecords("ns", RecordFilter(tiers=None))]) == [5]
    assert store.namespaces() == ["ns", "other"]


# --- lexical channel -------------------------------------------------------------------------


def test_lexical_finds_english_words_best_first(store: Store) -> None:
    tea = make("ns", "The user drinks green tea every morning")
    teas = make("ns", "Green tea, green tea, always green tea")
    coffee = make("ns", "The user drinks black coffee")
    store.put([tea, teas, coffee])

    hits = store.search_lexical("ns", query_terms("green tea"))
    assert ids(hits) == [teas.id, tea.id]
    assert hits[0].score > hits[1].score > 0
    # porter stemming on both sides: "drinking" matches "drinks"
    assert set(ids(store.search_lexical("ns", query_terms("drinking")))) == {tea.id, coffee.id}
    assert store.search_lexical("ns", query_terms("zeppelin")) == []
    assert ids(store.search_lexical("ns", query_terms("coffee"), limit=1)) == [coffee.id]


@pytest.mark.parametrize(
    ("content", "queries"),
    [
        ("用户喜欢绿茶", ["绿茶", "喜欢", "用户喜欢绿茶"]),
        ("私は抹茶アイスが好きです", ["抹茶", "アイス", "好き"]),
        ("東京でラーメンを食べました", ["ラーメン", "東京", "食べ"]),
        ("おすしがすきです", ["すし"]),
        ("저는 녹차를 좋아해요", ["녹차"]),
    ],
)
def test_lexical_finds_cjk_terms(store: Store, content: str, queries: list[str]) -> None:
    target = make("ns", content)
    decoys = [make("ns", "The user likes green tea"), make("ns", "今日は雨です"), make("ns", "他爱喝咖啡")]
    store.put([target, *decoys])
    for query in queries:
        terms = query_terms(query)
        assert terms, query
        hits = store.search_lexical("ns", terms)
        assert hits and hits[0].id == target.id, query
    assert target.id not in ids(store.search_lexical("ns", query_terms("咖啡")))


def test_lexical_honours_filters(store: Store, corpus: dict[str, MemoryRecord]) -> None:
    def found(words: str, flt: RecordFilter = RecordFilter()) -> list[str]:
        return names(corpus, store.get("ns", ids(store.search_lexical("ns", query_terms(words), flt))))

    assert found("old five archived four") == []
    assert sorted(found("old five archived four", ALL_RECORDS)) == ["archived", "old"]
    assert found("goal plan", RecordFilter(types=(MemoryType.PLAN_STEP,))) == ["plan"]
    assert found("fact core", RecordFilter(segments=("s2",))) == ["core"]
    assert found("fact goal", RecordFilter(start=T0 + timedelta(hours=1))) == ["fact"]
    assert found("fact goal", RecordFilter(seqs=(0,))) == ["goal"]


# --- dense channel ---------------------------------------------------------------------------


def test_vector_search_matches_reference_cosine(store: Store) -> None:
    records = [make("ns", f"record {i}", seed=100 + i) for i in range(12)]
    store.put(records)
    raw_query = unit(999) * 3.5 + 0.1  # deliberately not unit length
    hits = store.search_vector("ns", raw_query.astype(np.float32))

    reference = sorted(((cosine(raw_query, r.embedding), r.id) for r in records), reverse=True)
    assert ids(hits) == [rid for _, rid in reference]
    np.testing.assert_allclose([h.score for h in hits], [s for s, _ in reference], rtol=1e-5, atol=1e-6)
    assert all(-1.0 - 1e-6 <= h.score <= 1.0 + 1e-6 for h in hits)

    top3 = store.search_vector("ns", raw_query.astype(np.float32), limit=3)
    assert ids(top3) == [rid for _, rid in reference[:3]]


def test_vector_search_exact_match_scores_one(store: Store) -> None:
    records = [make("ns", f"record {i}", seed=i) for i in range(5)]
    store.put(records)
    hits = store.search_vector("ns", unit(3))
    assert hits[0].id == records[3].id
    assert hits[0].score == pytest.approx(1.0, abs=1e-6)


def test_vector_search_honours_filters(store: Store, corpus: dict[str, MemoryRecord]) -> None:
    query = unit(5)  # exactly the superseded "old" record

    def found(flt: RecordFilter) -> list[str]:
        return sorted(names(corpus, store.get("ns", ids(store.search_vector("ns", query, flt)))))

    assert "old" not in found(RecordFilter())
    assert found(RecordFilter()) == ["core", "fact", "goal", "plan"]
    assert store.search_vector("ns", query, ALL_RECORDS)[0].id == corpus["old"].id
    assert found(ALL_RECORDS) == ["archived", "core", "fact", "goal", "old", "plan"]
    assert found(RecordFilter(tiers=(Tier.ARCHIVE,))) == ["archived"]
    assert found(RecordFilter(types=(MemoryType.GOAL,))) == ["goal"]
    assert found(RecordFilter(segments=("s1",), include_superseded=True)) == ["fact", "goal", "old"]
    assert found(RecordFilter(seqs=(2, 5))) == ["core", "fact"]
    assert found(RecordFilter(seqs=frozenset({2, 5}))) == ["core", "fact"]  # any collection of positions
    assert found(RecordFilter(start=T0 + timedelta(days=1), end=T0 + timedelta(days=3))) == ["fact", "plan"]
    assert found(RecordFilter(start=T0 + timedelta(days=30))) == []


def test_vector_search_sees_writes_and_rejects_wrong_dimension(store: Store) -> None:
    assert store.search_vector("ns", unit(1)) == []
    first = make("ns", "first", seed=1)
    store.put([first])
    assert ids(store.search_vector("ns", unit(1))) == [first.id]
    second = make("ns", "second", seed=2)
    store.put([second])  # a cached matrix must not hide the new row
    assert store.search_vector("ns", unit(2))[0].id == second.id
    with pytest.raises(InvalidInput, match="dimension"):
        store.search_vector("ns", unit(1, dim=DIM + 1))


def test_multi_vector_search_answers_each_row_as_a_single_search(store: Store, corpus: dict[str, MemoryRecord]) -> None:
    queries = np.stack([unit(5), unit(1) * 2.0, unit(77), np.zeros(DIM, np.float32)])  # scaled, zero rows too
    for flt in (RecordFilter(), ALL_RECORDS, RecordFilter(tiers=(Tier.CORE,)), RecordFilter(seqs=(2, 5))):
        for limit in (1, 3, 50):
            many = store.search_vectors("ns", queries, flt, limit)
            single = [store.search_vector("ns", q, flt, limit) for q in queries]
            assert [ids(h) for h in many] == [ids(h) for h in single]
            for a, b in zip(many, single, strict=True):
                np.testing.assert_allclose([h.score for h in a], [h.score for h in b], rtol=1e-5, atol=1e-6)
            again = store.search_vectors("ns", queries, flt, limit)  # a repeated search: the same answer
            assert [ids(h) for h in again] == [ids(h) for h in many]
    assert store.search_vectors("empty", queries) == [[], [], [], []]
    assert store.search_vectors("ns", np.zeros((0, DIM), np.float32)) == []
    with pytest.raises(InvalidInput, match="vectors"):
        store.search_vectors("ns", unit(1))
    with pytest.raises(InvalidInput, match="dimension"):
        store.search_vectors("ns", np.stack([unit(1, dim=DIM + 1)]))


def test_multi_vector_search_sees_every_kind_of_write(store: Store) -> None:
    first = make("ns", "first", seed=1)
    store.put([first])
    probe = np.stack([unit(2), unit(3)])
    assert [ids(h) for h in store.search_vectors("ns", probe)] == [[first.id], [first.id]]
    second = make("ns", "second", seed=2)
    store.put([second])  # an add after a search is seen by the next search
    assert store.search_vectors("ns", probe)[0][0].id == second.id
    store.put([second.evolve(tier=Tier.ARCHIVE)])  # archived: out of the hot memory
    assert ids(store.search_vectors("ns", probe)[0]) == [first.id]
    store.put([second.evolve(tier=Tier.DYNAMIC, embedding=unit(3))])  # re-embedded in place
    assert store.search_vectors("ns", probe)[1][0].id == second.id
    store.delete("ns", [second.id])
    assert [ids(h) for h in store.search_vectors("ns", probe)] == [[first.id], [first.id]]
    store.delete_namespace("ns")
    assert store.search_vectors("ns", probe) == [[], []]


def test_list_ids_are_the_ids_of_list_records(store: Store, corpus: dict[str, MemoryRecord]) -> None:
    filters = (RecordFilter(), ALL_RECORDS, RecordFilter(tiers=(Tier.CORE,)), RecordFilter(seqs=(0, 2, 3)))
    for flt, order, limit in itertools.product(filters, ("created", "seq", "event", "recent"), (None, 1, 2)):
        listed = ids(store.list_records("ns", flt, order=order, limit=limit))
        assert store.list_ids("ns", flt, order=order, limit=limit) == listed
        store.search_vector("ns", unit(1))  # the same answer with the namespace's vectors cached
        assert store.list_ids("ns", flt, order=order, limit=limit) == listed
    late = make("ns", "written last", seed=8)
    store.put([late])  # a write after a listing is seen by the next one
    assert store.list_ids("ns", RecordFilter(tiers=None), order="recent", limit=1) == [late.id]
    with pytest.raises(InvalidInput, match="order"):
        store.list_ids("ns", order="sideways")


def test_records_handed_out_reflect_the_latest_write(store: Store) -> None:
    rec = make("ns", "cached then changed", seed=4)
    store.put([rec])
    assert store.get("ns", [rec.id])[0].importance == rec.importance
    store.put([rec.evolve(importance=0.9, tier=Tier.CORE)])
    got = store.get("ns", [rec.id])[0]
    assert (got.importance, got.tier) == (0.9, Tier.CORE)
    assert store.list_records("ns", RecordFilter(tiers=(Tier.CORE,)))[0].importance == 0.9
    store.delete("ns", [rec.id])
    assert store.get("ns", [rec.id]) == []


def test_sqlite_caches_see_commits_of_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    a.setup()
    b.setup()
    rec = make("ns", "seen by both", seed=6)
    a.put([rec])
    assert ids(b.search_vectors("ns", np.stack([unit(6)]))[0]) == [rec.id]
    assert b.get("ns", [rec.id])[0].importance == rec.importance
    a.put([rec.evolve(importance=0.25)])
    other = make("ns", "written by a", seed=7)
    a.put([other])
    assert b.get("ns", [rec.id])[0].importance == 0.25
    assert b.search_vectors("ns", np.stack([unit(7)]))[0][0].id == other.id
    a.close()
    b.close()


def test_sqlite_index_kept_up_to_date_by_writes_equals_a_rebuilt_one() -> None:
    store = SQLiteStore()
    store.setup()
    first = [make("ns", f"first {i}", seq=i, segment="s1") for i in range(6)]
    store.put(first)
    store.search_vector("ns", unit(1))  # the index is cached from here on
    bare = MemoryRecord(id=new_id(), namespace="ns", content="no embedding", embedding=None)
    store.put([make("ns", "later", seq=9, event_time=T0), bare])  # inserts: appended
    store.put(
        [
            first[1].evolve(tier=Tier.ARCHIVE, superseded_by=first[2].id, event_time=T0 + timedelta(days=1)),
            first[3].evolve(embedding=unit(99), segment="s2", type=MemoryType.GOAL),
            make("other", "another namespace", seed=5),
        ]
    )  # updates in place, and a namespace with no cached index
    kept = store._cache["ns"]  # type: ignore[attr-defined]
    found = [h.id for h in store.search_vector("ns", unit(99), limit=3)]
    recent = store.list_ids("ns", RecordFilter(), order="recent")
    store._cache.clear()  # type: ignore[attr-defined]
    rebuilt = store._index("ns")  # type: ignore[attr-defined]
    for name in ("ids", "has_vector", "types", "tiers", "segments", "current"):
        assert getattr(kept, name).tolist() == getattr(rebuilt, name).tolist(), name
    for name in ("matrix", "seqs", "event_us"):
        np.testing.assert_array_equal(getattr(kept, name), getattr(rebuilt, name), err_msg=name)
    assert found == [h.id for h in store.search_vector("ns", unit(99), limit=3)] and found[0] == first[3].id
    assert recent == store.list_ids("ns", RecordFilter(), order="recent")
    assert first[1].id not in recent  # superseded and archived: not in the default filter
    store.put([first[0].evolve(embedding=unit(1, dim=DIM + 1))])  # another width: the index is dropped
    assert "ns" not in store._cache  # type: ignore[attr-defined]


# --- namespaces ------------------------------------------------------------------------------


def test_namespace_isolation(store: Store) -> None:
    a = make("alpha", "shared secret words", seed=11)
    b = make("beta", "shared secret words", seed=11)
    store.put([a, b])

    assert ids(store.search_lexical("alpha", query_terms("secret"))) == [a.id]
    assert ids(store.search_lexical("beta", query_terms("secret"))) == [b.id]
    assert ids(store.search_vector("alpha", unit(11))) == [a.id]
    assert ids(store.search_vector("beta", unit(11))) == [b.id]
    assert ids(store.list_records("alpha", ALL_RECORDS)) == [a.id]
    assert store.count("alpha", ALL_RECORDS) == 1
    assert store.get("alpha", [b.id]) == []
    assert store.batch([GetRecords("beta", (a.id, b.id))])[0] == [b]
    found = store.find_by_hash("alpha", a.content_hash)
    assert found is not None and found.id == a.id
    assert store.search_lexical("gamma", query_terms("secret")) == []
    assert store.search_vector("gamma", unit(11)) == []


def test_delete_records_purges_both_channels_in_that_namespace_only(store: Store) -> None:
    keep = make("ns", "Bluefin tuna recipe", seed=1)
    gone = make("ns", "Project codename is Bluefin", seed=2)
    twin = make("other", "Project codename is Bluefin", seed=2)
    store.put([keep, gone, twin])
    assert store.search_vector("ns", unit(2))[0].id == gone.id  # warm any vector cache

    assert store.delete("other-ns", [gone.id]) == 0  # wrong namespace: nothing happens
    assert store.delete("ns", [gone.id, "missing"]) == 1

    assert store.get("ns", [gone.id]) == []
    assert ids(store.search_lexical("ns", query_terms("codename Bluefin"))) == [keep.id]
    assert ids(store.search_vector("ns", unit(2))) == [keep.id]
    assert store.find_by_hash("ns", gone.content_hash) is None
    # the other namespace is untouched
    assert ids(store.search_lexical("other", query_terms("codename"))) == [twin.id]
    assert ids(store.search_vector("other", unit(2))) == [twin.id]
    assert store.delete("ns", []) == 0


def test_delete_namespace_purges_only_that_namespace(store: Store) -> None:
    doomed = [make("doomed", f"note {i} about kayaks", seed=i) for i in range(3)]
    survivor = make("survivor", "note about kayaks", seed=0)
    store.put([*doomed, survivor])
    assert len(store.search_vector("doomed", unit(0))) == 3

    assert store.delete_namespace("doomed", [AuditEntry("doomed", "delete_all")]) == 3

    assert store.count("doomed", ALL_RECORDS) == 0
    assert store.search_lexical("doomed", query_terms("kayaks")) == []
    assert store.search_vector("doomed", unit(0)) == []
    assert store.namespaces() == ["survivor"]
    assert ids(store.search_lexical("survivor", query_terms("kayaks"))) == [survivor.id]
    assert ids(store.search_vector("survivor", unit(0))) == [survivor.id]
    assert [e["op"] for e in store.audit_log("doomed")] == ["delete_all"]


# --- transactions ----------------------------------------------------------------------------


def test_batch_is_atomic(store: Store) -> None:
    elsewhere = make("beta", "owned by beta", seed=1)
    store.put([elsewhere])
    store.search_vector("alpha", unit(1))  # warm caches
    innocent = make("alpha", "innocent unicorn record", seed=2)
    clash = make("alpha", "clashing record", seed=3).evolve(id=elsewhere.id)

    with pytest.raises(InvalidInput, match="another namespace"):
        store.batch(
            [
                PutRecords((innocent,)),
                AppendAudit(AuditEntry("alpha", "add", innocent.id)),
                PutRecords((clash,)),
            ]
        )

    assert store.get("alpha", [innocent.id]) == []
    assert store.count("alpha", ALL_RECORDS) == 0
    assert store.search_lexical("alpha", query_terms("unicorn")) == []
    assert store.search_vector("alpha", unit(2)) == []
    assert store.audit_log() == []
    assert store.namespaces() == ["beta"]
    (kept,) = store.get("beta", [elsewhere.id])
    assert kept.content == "owned by beta"


def test_batch_returns_one_result_per_op_in_order(store: Store) -> None:
    rec = make("ns", "lonely lighthouse", seed=4)
    results = store.batch(
        [
            PutRecords((rec,)),
            GetRecords("ns", (rec.id,)),
            CountRecords("ns"),
            LexicalSearch("ns", ("lighthouse",)),
            VectorSearch("ns", unit(4)),
            AppendAudit(AuditEntry("ns", "add", rec.id)),
        ]
    )
    assert results[0] is None
    assert ids(results[1]) == [rec.id]
    assert results[2] == 1
    assert ids(results[3]) == [rec.id]
    assert ids(results[4]) == [rec.id]
    assert isinstance(results[5], int)


# --- audit -----------------------------------------------------------------------------------


def test_audit_entries_are_hash_chained(store: Store) -> None:
    rec = make("ns", "audited")
    store.put([rec], [AuditEntry("ns", "add", rec.id, actor="agent", details={"tokens": 1})])
    store.batch([AppendAudit(AuditEntry("other", "evict", "x", policy="lru", reason="budget"))])
    store.delete("ns", [rec.id], [AuditEntry("ns", "delete", rec.id)])

    log = store.audit_log()
    assert [(e["namespace"], e["op"], e["record_id"]) for e in log] == [
        ("ns", "add", rec.id),
        ("other", "evict", "x"),
        ("ns", "delete", rec.id),
    ]
    assert log[0]["details"] == {"tokens": 1} and log[0]["actor"] == "agent"
    assert log[1]["policy"] == "lru" and log[1]["reason"] == "budget"
    for before, after in itertools.pairwise(log):
        assert after["prev_hash"] == before["hash"]
        assert after["seq"] > before["seq"]
    assert len({e["hash"] for e in log}) == 3
    assert all(len(e["hash"]) == 64 for e in log)

    assert [e["op"] for e in store.audit_log("ns")] == ["add", "delete"]
    assert [e["op"] for e in store.audit_log(limit=1)] == ["add"]


def test_sqlite_audit_chain_verifies_and_refuses_update_and_delete(store: Store) -> None:
    """SQLite only: recompute the chain from the rows, then try to tamper with raw SQL."""
    if not isinstance(store, SQLiteStore):
        pytest.skip("SQLite only")
    store.batch([AppendAudit(AuditEntry("ns", "add", f"id-{i}", details={"i": i})) for i in range(3)])
    log = store.audit_log()
    prev = GENESIS_HASH
    for entry in log:
        assert entry["prev_hash"] == prev
        fields = {k: entry[k] for k in ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")}
        assert entry["hash"] == audit_hash(prev, fields)
        prev = entry["hash"]

    conn = store._conn  # type: ignore[attr-defined]
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("UPDATE audit SET reason = 'forged' WHERE seq = 1")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM audit")
    assert store.audit_log() == log


# --- schema ----------------------------------------------------------------------------------


def test_setup_is_idempotent(store: Store) -> None:
    rec = make("ns", "survives setup", seed=9)
    store.put([rec], [AuditEntry("ns", "add", rec.id)])
    store.set_meta("encoder_name", "test")
    store.setup()
    store.setup()
    assert ids(store.get("ns", [rec.id])) == [rec.id]
    assert ids(store.search_lexical("ns", ["survives"])) == [rec.id]
    assert ids(store.search_vector("ns", unit(9))) == [rec.id]
    assert len(store.audit_log()) == 1
    assert store.get_meta("encoder_name") == "test"
    assert store.get_meta("missing") is None


def test_unset_store_refuses_work(make_store: Callable[[Path], Store], tmp_path: Path) -> None:
    fresh = make_store(tmp_path / "fresh")
    try:
        with pytest.raises(SchemaError, match="setup"):
            fresh.count("ns")
    finally:
        fresh.close()


def test_sqlite_newer_schema_version_is_refused(tmp_path: Path) -> None:
    """SQLite only: a file written by a newer retain raises SchemaError at setup."""
    path = tmp_path / "future.db"
    with SQLiteStore(path) as first:
        first.setup()
        assert first._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()

    later = SQLiteStore(path)
    try:
        with pytest.raises(SchemaError, match=f"schema version {SCHEMA_VERSION + 1}"):
            later.setup()
        assert later._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    finally:
        later.close()


def test_provenance_round_trips_is_written_once_and_purged_with_its_namespace(store: Store) -> None:
    body = {"query": "où est le café ☕", "items": [{"record_id": "A", "score": 0.125}], "state": None}
    pid, other = new_id(), new_id()
    assert store.batch([PutProvenance(pid, "ns-a", T0, body), PutProvenance(other, "ns-b", T0, {"x": 1})]) == [
        None,
        None,
    ]
    assert store.provenance(pid) == {"id": pid, "namespace": "ns-a", "created_at": T0, "body": body}
    assert store.provenance(pid, "ns-a") == store.provenance(pid)
    assert store.provenance(pid, "ns-b") is None and store.provenance("absent") is None
    with pytest.raises(InvalidInput, match="already exists"):
        store.batch([AppendAudit(AuditEntry("ns-a", "retrieve")), PutProvenance(pid, "ns-a", T0, {})])
    assert store.audit_log() == []  # all or nothing
    assert store.batch([GetProvenance(other)])[0]["body"] == {"x": 1}
    store.put([make("ns-a", "kept elsewhere")])
    store.delete_namespace("ns-a")
    assert store.provenance(pid) is None and store.provenance(other) is not None


def test_sqlite_record_cache_limit_keeps_answers_right(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import retain.store.sqlite as backend

    monkeypatch.setattr(backend, "RECORD_CACHE_LIMIT", 3)
    store = SQLiteStore(tmp_path / "small-cache.db")
    store.setup()
    records = [make("ns", f"record {i}", seed=i) for i in range(5)]
    store.put(records)
    for _ in range(2):  # the second round reads through a cache that had to start over
        assert ids(store.get("ns", [r.id for r in reversed(records)])) == [r.id for r in reversed(records)]
        assert ids(store.list_records("ns")) == [r.id for r in records]
    store.close()


def test_sqlite_refuses_a_directory_and_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"this is not an SQLite database, just text " * 100)
    with pytest.raises(SchemaError, match="not a usable SQLite database"):
        SQLiteStore(junk).setup()
    with pytest.raises(SchemaError, match="cannot open"):
        SQLiteStore(tmp_path).setup()
    assert junk.read_bytes().startswith(b"this is not")  # left as it was
