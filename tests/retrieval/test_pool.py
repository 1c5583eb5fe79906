"""The candidate pool of one search (:mod:`retain.retrieval.pool`): neighbours, the turn position, the relation
channel."""

from __future__ import annotations

import pytest

from retain.memory import Memory, NewMemory
from retain.retrieval.fusion import FEATURE_NAMES, PRESETS, SearchConfig, relation_query
from retain.retrieval.pool import Pool, candidates
from retain.store import RecordFilter

NS = "agent-1"


def _feature(pool: Pool, name: str) -> list[float]:
    return pool.features()[:, FEATURE_NAMES.index(name)].tolist()


def test_turn_position_counts_the_turns_before_a_record_in_its_segment(memory: Memory) -> None:
    words = ["tulips", "roses", "ferns", "hedges"]
    items = [
        NewMemory(f"the {side} garden has {word}", seq=4 * s + i, segment=f"s{s}")
        for s, side in enumerate(["north", "south"])
        for i, word in enumerate(words)
    ]
    ids = memory.add_many(items, namespace=NS)
    loose = memory.add("a note about the garden without a position", namespace=NS)
    pool = candidates(memory.store, memory.encoder, "garden", NS, RecordFilter(), PRESETS["default"])
    got = dict(zip([r.id for r in pool.records], _feature(pool, "turn_position"), strict=True))
    expected = dict(zip(ids, [1.0, 0.5, 1 / 3, 1 / 3] * 2, strict=True)) | {loose: 1 / 3}  # no seq: unknown
    assert got == pytest.approx(expected)
    # the turns before a record are looked up even when they are not in the pool
    narrow = candidates(
        memory.store, memory.encoder, "south hedges", NS, RecordFilter(), SearchConfig(candidates=1, neighbors=False)
    )
    assert 1 <= len(narrow.records) <= 2 and ids[7] in [r.id for r in narrow.records]
    got = dict(zip([r.id for r in narrow.records], _feature(narrow, "turn_position"), strict=True))
    assert got == pytest.approx({i: expected[i] for i in got})


def test_relation_query_scores_and_retrieves_without_the_named_speaker(memory: Memory) -> None:
    said = [
        ("Melanie", "I just finished reading Charlotte's Web with the kids."),
        ("Caroline", "How are the kids doing?"),
        ("Melanie", "We went camping at the beach last weekend."),
        ("Caroline", "I read a great book about adoption agencies."),
        ("Melanie", "Nothing is Impossible is the book I read on the trip."),
    ]
    ids = memory.add_many([NewMemory(text, role="user", metadata={"speaker": who}) for who, text in said], namespace=NS)
    query = "What books has Melanie read?"
    pool = candidates(memory.store, memory.encoder, query, NS, RecordFilter(), PRESETS["default"])
    expected = memory.encoder.encode([relation_query(query, {"melanie"})])[0]
    by_id = dict(zip([r.id for r in pool.records], _feature(pool, "relation_dense"), strict=True))
    for rid, record in zip(ids, memory.store.get(NS, ids), strict=True):
        assert by_id[rid] == pytest.approx(float(record.embedding @ expected), abs=1e-5)
    assert _feature(pool, "relation_dense") != _feature(pool, "dense")

    unnamed = candidates(memory.store, memory.encoder, "What books were read?", NS, RecordFilter(), PRESETS["default"])
    assert unnamed.relation_dense is None
    assert _feature(unnamed, "relation_dense") == _feature(unnamed, "dense")

    # the relation channel brings its own top hits into the pool
    # (the named speaker is read off the lexical hits: the top 2 include one of Melanie's turns)
    narrow = SearchConfig(candidates=2, neighbors=False, relation_candidates=0)
    wide = SearchConfig(candidates=2, neighbors=False, relation_candidates=5)
    assert len(candidates(memory.store, memory.encoder, query, NS, RecordFilter(), narrow).records) < len(ids)
    assert {r.id for r in candidates(memory.store, memory.encoder, query, NS, RecordFilter(), wide).records} == set(ids)
