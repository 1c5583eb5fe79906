"""Sequential memory through the Memory facade: time fields on add, timelines, the before/after walk."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retain.config import MemoryConfig, RetrievalConfig
from retain.errors import InvalidInput, RecordNotFound
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.sequence.order import event_order

NS = "trip"
D1 = datetime(2023, 5, 10, 14, 0, tzinfo=UTC)
D2 = datetime(2023, 6, 2, 9, 30, tzinfo=UTC)


def _session(segment: str, when: datetime | None, texts: list[str], first_seq: int) -> list[NewMemory]:
    return [
        NewMemory(content=t, role="user", event_time=when, segment=segment, seq=first_seq + i)
        for i, t in enumerate(texts)
    ]


def test_time_refs_stored_on_add(memory: Memory):
    rid = memory.add("We went to the lake yesterday.", namespace=NS, event_time=D1, segment="s1", seq=0)
    (ref,) = memory.get(rid, namespace=NS).metadata["time_refs"]
    assert ref == {
        "text": "yesterday",
        "span": [20, 29],
        "start": "2023-05-09T00:00:00+00:00",
        "end": "2023-05-10T00:00:00+00:00",
        "granularity": "day",
    }
    plain = memory.add("Nothing about time here.", namespace=NS, event_time=D1)
    assert "time_refs" not in memory.get(plain, namespace=NS).metadata


def test_session_without_date_stores_and_leaves_yesterday_unresolved(memory: Memory):
    rid = memory.add("I met Sam yesterday.", namespace=NS, segment="s1", seq=0)
    record = memory.get(rid, namespace=NS)
    assert record.event_time is None and record.content == "I met Sam yesterday."
    assert record.metadata["time_refs"] == [
        {"text": "yesterday", "span": [10, 19], "start": None, "end": None, "granularity": "unknown"}
    ]


def test_unparseable_event_time_is_refused_and_nothing_stored(memory: Memory):
    memory.add("Kept from before.", namespace=NS)
    with pytest.raises(InvalidInput, match="event_time"):
        memory.add_many(
            [NewMemory(content="ok", event_time=D1), NewMemory(content="bad", event_time="next Tuesday-ish")],
            namespace=NS,
        )
    assert [r.content for r in memory.records(namespace=NS)] == ["Kept from before."]


def test_caller_time_refs_kept_and_switch_off(encoder):
    with Memory(encoder=encoder, config=MemoryConfig(resolve_times=False)) as mem:
        rid = mem.add("yesterday", namespace=NS, event_time=D1)
        assert "time_refs" not in mem.get(rid, namespace=NS).metadata
    with Memory(encoder=encoder) as mem:
        rid = mem.add("yesterday", namespace=NS, event_time=D1, metadata={"time_refs": []})
        assert mem.get(rid, namespace=NS).metadata["time_refs"] == []


def test_timeline_orders_sessions_by_date_and_unknown_last(memory: Memory):
    # sessions added out of date order, one without a date in between
    memory.add_many(_session("june", D2, ["june 0", "june 1"], 0), namespace=NS)
    memory.add_many(_session("nodate", None, ["nodate 0", "nodate 1"], 2), namespace=NS)
    memory.add_many(_session("may", D1, ["may 0", "may 1", "may 2"], 4), namespace=NS)
    contents = [r.content for r in memory.timeline(NS)]
    assert contents == ["may 0", "may 1", "may 2", "june 0", "june 1", "nodate 0", "nodate 1"]
    assert [r.content for r in memory.timeline(NS, limit=2)] == ["may 0", "may 1"]
    june = [r.content for r in memory.timeline(NS, start="2023-06-01T00:00:00Z", end="2023-07-01T00:00:00Z")]
    assert june == ["june 0", "june 1"]


def test_timeline_same_time_keeps_segment_then_seq_order(memory: Memory):
    # same event time for two sessions: the session added first comes first; seq orders within one
    memory.add_many(_session("b", D1, ["b 1"], 1) + _session("b", D1, ["b 0"], 0), namespace=NS)
    memory.add_many(_session("a", D1, ["a 0"], 0), namespace=NS)
    assert [r.content for r in memory.timeline(NS)] == ["b 0", "b 1", "a 0"]


def test_timeline_query_reorders_hits_by_time(memory: Memory):
    memory.add_many(_session("june", D2, ["the lake trip was cold", "we ate pasta"], 0), namespace=NS)
    memory.add_many(_session("may", D1, ["planning the lake trip", "we ate rice"], 2), namespace=NS)
    found = memory.timeline(NS, query="lake trip", limit=2)
    assert [r.content for r in found] == ["planning the lake trip", "the lake trip was cold"]


def test_timeline_empty_namespace_and_bad_arguments(memory: Memory):
    assert memory.timeline("nobody") == []
    assert memory.timeline("nobody", query="anything") == []
    with pytest.raises(InvalidInput, match="limit"):
        memory.timeline(NS, limit=0)
    with pytest.raises(InvalidInput, match="start"):
        memory.timeline(NS, start=D2, end=D1)
    with pytest.raises(InvalidInput, match="start"):
        memory.timeline(NS, start="the first of May")  # not ISO 8601 (a naive time is read in config.naive_timezone)


def test_before_after_walk_the_chain(memory: Memory):
    june = memory.add_many(_session("june", D2, ["june 0", "june 1"], 0), namespace=NS)
    may = memory.add_many(_session("may", D1, ["may 0", "may 1"], 2), namespace=NS)
    assert [r.content for r in memory.after(may[1], namespace=NS)] == ["june 0"]  # across sessions, by time
    assert [r.content for r in memory.before(june[0], namespace=NS)] == ["may 1"]
    assert [r.content for r in memory.before(june[1], namespace=NS, n=3)] == ["may 0", "may 1", "june 0"]
    assert memory.before(may[0], namespace=NS) == []
    assert memory.after(june[1], namespace=NS, n=5) == []
    record = memory.get(may[0], namespace=NS)
    assert [r.content for r in memory.after(record, namespace=NS, n=2)] == ["may 1", "june 0"]


def test_before_after_of_a_superseded_version_and_errors(memory: Memory):
    ids = memory.add_many(_session("s", D1, ["zero", "one", "two"], 0), namespace=NS)
    new = memory.update(ids[1], "one, corrected", namespace=NS)
    assert [r.content for r in memory.after(ids[0], namespace=NS)] == ["one, corrected"]
    assert [r.content for r in memory.after(ids[1], namespace=NS)] == ["two"]  # the old version keeps its place
    assert new
    with pytest.raises(RecordNotFound):
        memory.before("missing", namespace=NS)
    with pytest.raises(InvalidInput, match="n:"):
        memory.before(ids[0], namespace=NS, n=0)
    with pytest.raises(InvalidInput, match="namespace"):
        memory.before(memory.get(ids[0], namespace=NS), namespace="other")


def test_event_order_is_pure_and_stable(memory: Memory):
    ids = memory.add_many(_session("s", None, ["x", "y"], 0) + _session("t", D1, ["z"], 0), namespace=NS)
    records = memory.store.get(NS, ids)
    assert [r.content for r in event_order(records)] == ["z", "x", "y"]
    assert event_order([]) == []


def test_update_resolves_the_new_text(memory: Memory):
    rid = memory.add("We met yesterday.", namespace=NS, event_time=D1)
    new = memory.update(rid, "We met last week, not yesterday.", namespace=NS)
    refs = memory.get(new, namespace=NS).metadata["time_refs"]
    assert [(r["text"], r["start"]) for r in refs] == [
        ("last week", "2023-05-01T00:00:00+00:00"),
        ("yesterday", "2023-05-09T00:00:00+00:00"),
    ]
    plain = memory.update(new, "We met.", namespace=NS)
    assert "time_refs" not in memory.get(plain, namespace=NS).metadata


def test_time_features_and_search_boost(memory: Memory):
    from retain.text import temporal

    ids = memory.add_many(
        [
            NewMemory(content="We adopted the cat in a shelter.", event_time=D1, segment="a", seq=0),
            NewMemory(content="We adopted the cat yesterday.", event_time=D2, segment="b", seq=0),
            NewMemory(content="The cat sleeps a lot.", segment="c", seq=0),
        ],
        namespace=NS,
    )
    records = memory.store.get(NS, ids)
    dated, in_range = temporal.time_features(records, "When did we adopt the cat?", D2)
    assert dated.tolist() == [0.0, 1.0, 0.0] and in_range.tolist() == [0.0, 0.0, 0.0]
    dated, in_range = temporal.time_features(records, "What did we do in May 2023?", D2)
    assert dated.tolist() == [0.0, 0.0, 0.0] and in_range.tolist() == [1.0, 0.0, 0.0]  # by event time
    _, in_range = temporal.time_features(records, "What happened on June 1, 2023?", D2)
    assert in_range.tolist() == [0.0, 1.0, 0.0]  # "yesterday" said on 2 June is 1 June
    memory = Memory(
        store=memory.store, encoder=memory.encoder, config=MemoryConfig(retrieval=RetrievalConfig(range_weight=5.0))
    )
    hits = memory.search("cat", namespace=NS, k=3, now=D2)
    assert all("time" not in h.scores for h in hits)
    hits = memory.search("what did the cat do in May 2023", namespace=NS, k=3, now=D2)
    assert hits[0].record.id == ids[0] and hits[0].scores["time"] == 5.0
    plain = memory.search("what did the cat do in May 2023", namespace=NS, k=3, now=D2, time_aware=False)
    assert all("time" not in h.scores for h in plain)
    rrf = memory.search("what did the cat do in May 2023", namespace=NS, k=3, now=D2, config="rrf")
    assert all("time" not in h.scores for h in rrf)  # the weight is set on learned-fusion probabilities
    with pytest.raises(InvalidInput, match="now"):
        memory.search("cat", namespace=NS, now="early May")  # not ISO 8601 (naive times: config.naive_timezone)
