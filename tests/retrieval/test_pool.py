"""The candidate pool of one search (:mod:`retain.retrieval.pool`): neighbours, the turn position, the relation
channel, the time filter in every channel, and the state parts and pool sizes a state search reads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from retain import HashingEncoder, InvalidInput
from retain.config import STATE_VECTOR_PARTS, MemoryConfig, RetrievalConfig
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.retrieval.fusion import FEATURE_NAMES, PRESETS, SearchConfig, relation_query
from retain.retrieval.pool import Pool, candidates
from retain.state.agent import AgentState, StateEncoder
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


def test_time_filter_keeps_boundary_records_in_every_channel(mem64: Memory) -> None:
    t = datetime(2004, 11, 20, 2, 16, 14, 655348, tzinfo=UTC)
    rid = mem64.add("flight to Lisbon booked", namespace="n", event_time=t)
    for preset in ("dense", "lexical", "default"):
        hits = mem64.search("Lisbon flight", namespace="n", start=t, config=preset)
        assert [h.record.id for h in hits] == [rid], preset


def test_neighbour_expansion_stays_inside_the_segment(mem64: Memory) -> None:
    mem64.add_many(
        [
            NewMemory(f"turn {i} of session {s} about weather", seq=i, segment=f"s{s}")
            for s in range(20)
            for i in range(3)
        ],
        namespace="n",
    )
    target = mem64.add("the zebra code is 42", namespace="n", seq=1, segment="target")
    hits = mem64.search("zebra code", namespace="n", k=50)
    assert hits[0].record.id == target
    assert not [h for h in hits if h.scores.get("neighbor") and h.record.segment != "target"]


# --- the retrieval settings: state parts and pool sizes, checked when the config is built -----------


STATE = {"phase": "book_flights", "subgoals": ["pick a flight"], "last_result": "found 3 flights"}


@pytest.fixture
def state_memory() -> Iterator[Memory]:
    """A Memory (``HashingEncoder(384)``) holding one record: "The museum opens at nine."."""
    mem = Memory(encoder=HashingEncoder(384))
    mem.add("The museum opens at nine.", namespace=NS)
    yield mem
    mem.close()


def _with_retrieval(mem: Memory, **knobs: object) -> Memory:
    """A second Memory over ``mem``'s store whose retrieval config has ``knobs``."""
    return Memory(store=mem.store, encoder=mem.encoder, config=MemoryConfig(retrieval=RetrievalConfig(**knobs)))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parts", "match"),
    [
        (("subgoal",), "'subgoal'"),
        (("whole", "constraints"), "'constraints'"),
        (("texts",), "'texts'"),
        ("whole", "a tuple"),
        ((1,), "1"),
    ],
)
def test_unknown_state_parts_are_refused_clearly(state_memory: Memory, parts: object, match: str) -> None:
    with pytest.raises(InvalidInput, match=rf"state_parts.*{match}"):
        RetrievalConfig(state_parts=parts)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="state_parts"):
        MemoryConfig(retrieval=RetrievalConfig(state_parts=parts))  # type: ignore[arg-type]
    assert len(state_memory.records(namespace=NS)) == 1


@pytest.mark.parametrize("parts", [(), ("whole",), ("whole", "goal", "result"), ("phase",)])
def test_known_state_parts_search(state_memory: Memory, parts: tuple[str, ...]) -> None:
    assert _with_retrieval(state_memory, state_parts=parts).search("museum", namespace=NS, state=STATE)


def test_state_vector_parts_are_single_vectors() -> None:
    encoded = StateEncoder(HashingEncoder(64)).encode(AgentState.from_dict(STATE))
    for name in STATE_VECTOR_PARTS:
        assert getattr(encoded, name).shape == (64,)


def test_a_state_free_search_uses_the_default_state_parts(state_memory: Memory) -> None:
    assert state_memory.config.retrieval.state_parts == ("whole",)
    assert state_memory.search("museum", namespace=NS)


@pytest.mark.parametrize("setting", ["state_pool", "core_pool", "recent_pool"])
@pytest.mark.parametrize("value", [None, 2.5, "5", -1, True, 10**9])
def test_pool_size_settings_are_checked_at_construction(state_memory: Memory, setting: str, value: object) -> None:
    with pytest.raises(InvalidInput, match=rf"{setting}: must be an int from 0 to 1,000,000"):
        RetrievalConfig(**{setting: value})  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match=rf"{setting}"):
        MemoryConfig(retrieval=RetrievalConfig(**{setting: value}))  # type: ignore[arg-type]
    assert state_memory.search("museum", namespace=NS, state=STATE)  # the memory's own config is unchanged


@pytest.mark.parametrize("setting", ["state_pool", "core_pool", "recent_pool"])
@pytest.mark.parametrize("value", [0, 1, 500])
def test_pool_size_settings_in_range_search(state_memory: Memory, setting: str, value: int) -> None:
    assert _with_retrieval(state_memory, **{setting: value}).search("museum", namespace=NS, state=STATE)
