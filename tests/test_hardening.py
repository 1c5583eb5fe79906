"""Regressions found by adversarial testing: each input and its right outcome."""

from datetime import UTC, datetime

import pytest

from retain import HashingEncoder, InvalidInput, Memory, MemoryConfig, NewMemory
from retain.ingest.draft import split_text
from retain.store import PutRecords, RequireCurrent

NS = "n"


@pytest.fixture
def m():
    mem = Memory(encoder=HashingEncoder(64))
    yield mem
    mem.close()


def test_split_metadata_keys_are_reserved(m):
    m.add("Alice likes tea", namespace=NS)
    with pytest.raises(InvalidInput, match="reserved"):
        m.add("Bob's passport number", namespace=NS, metadata={"split_group": "g"})
    assert len(m.records(namespace=NS)) == 1


def test_update_loses_cleanly_to_a_concurrent_update(m):
    rid = m.add("my card PIN is 1234", namespace=NS)
    old = m.get(rid, namespace=NS)
    m.update(rid, "my card PIN is 9999", namespace=NS)
    fork = old.evolve(id="01FORK00000000000000000000", content="PIN 5555", supersedes=rid)
    with pytest.raises(InvalidInput, match="superseded"):
        m.store.batch([RequireCurrent(NS, rid), PutRecords((fork,))])
    assert len(m.records(namespace=NS, include_superseded=True)) == 2  # nothing of the loser written


def test_delete_follows_every_version_fork(m):
    rid = m.add("my card PIN is 1234", namespace=NS)
    old = m.get(rid, namespace=NS)
    forks = [old.evolve(id=f"01FORK{i:020d}", content=f"PIN {i}", supersedes=rid) for i in range(3)]
    m.store.put(forks)
    assert m.delete(rid, namespace=NS) == 4
    assert m.records(namespace=NS, include_superseded=True) == []


def test_same_words_from_another_speaker_or_turn_are_not_duplicates(m):
    a = m.add("Sounds good!", namespace=NS, role="Alice", seq=3, segment="s1")
    b = m.add("Sounds good!", namespace=NS, role="Bob", seq=4, segment="s1")
    assert a != b
    assert m.add("Sounds good!", namespace=NS, role="Alice", seq=3, segment="s1") == a


@pytest.mark.parametrize("value", [0, 1, 15, -5, 2.5, None, "100", True])
def test_tiny_or_wrong_record_limits_are_refused(value):
    with pytest.raises(InvalidInput, match="max_record_chars"):
        MemoryConfig(max_record_chars=value)


@pytest.mark.parametrize("field", ["content", "role", "namespace", "query"])
def test_lone_surrogates_are_refused_at_the_boundary(m, field):
    bad = "budget \ud800"
    with pytest.raises(InvalidInput):
        if field == "query":
            m.search(bad, namespace=NS)
        elif field == "namespace":
            m.add("fine text", namespace=bad)
        else:
            m.add(
                bad if field == "content" else "fine text", namespace=NS, **({"role": bad} if field == "role" else {})
            )
    assert m.records(namespace=NS) == []


def test_long_whitespace_runs_are_stored_not_refused(m):
    text = "x" * 10 + " " * 5000 + "y"
    rid = m.add(text, namespace=NS)
    parts = [r for r in m.records(namespace=NS)]
    assert "".join(r.content for r in parts) == text
    assert all(r.content.strip() for r in parts)
    assert m.get(rid, namespace=NS).content.startswith("x")
    assert split_text("a" * 40 + " " * 50, 32) == ["a" * 32, "a" * 8 + " " * 50]


def test_time_filter_keeps_boundary_records_in_every_channel(m):
    t = datetime(2004, 11, 20, 2, 16, 14, 655348, tzinfo=UTC)
    rid = m.add("flight to Lisbon booked", namespace=NS, event_time=t)
    for preset in ("dense", "lexical", "default"):
        assert [h.record.id for h in m.search("Lisbon flight", namespace=NS, start=t, config=preset)] == [rid], preset


def test_neighbour_expansion_stays_inside_the_segment(m):
    m.add_many(
        [
            NewMemory(f"turn {i} of session {s} about weather", seq=i, segment=f"s{s}")
            for s in range(20)
            for i in range(3)
        ],
        namespace=NS,
    )
    target = m.add("the zebra code is 42", namespace=NS, seq=1, segment="target")
    hits = m.search("zebra code", namespace=NS, k=50)
    assert hits[0].record.id == target
    assert not [h for h in hits if h.scores.get("neighbor") and h.record.segment != "target"]


def test_single_cjk_character_query_finds_by_lexical(m):
    cat = m.add("我的猫叫小白", namespace=NS)
    m.add("明天下午三点开会", namespace=NS)
    assert [h.record.id for h in m.search("猫", namespace=NS, config="lexical")] == [cat]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"metadata": {"when": datetime(2024, 1, 1, tzinfo=UTC)}},
        {"metadata": {"x": float("nan")}},
        {"role": None},
        {"role": 5},
        {"seq": 2**63},
        {"priority": True},
        {"pinned": "no"},
        {"segment": 5},
    ],
)
def test_bad_fields_are_refused_naming_the_field(m, kwargs):
    with pytest.raises(InvalidInput, match=next(iter(kwargs))):
        m.add("a perfectly fine text", namespace=NS, **kwargs)
    assert m.records(namespace=NS) == []


@pytest.mark.parametrize(
    "kwargs", [{"types": ["banana"]}, {"tiers": ["attic"]}, {"threshold": float("nan")}, {"config": 5}, {"k": True}]
)
def test_bad_search_arguments_are_invalid_input(m, kwargs):
    m.add("something to find", namespace=NS)
    with pytest.raises(InvalidInput):
        m.search("something", namespace=NS, **kwargs)


def test_a_single_type_string_is_accepted(m):
    rid = m.add("a fact to find", namespace=NS, type="fact")
    assert [h.record.id for h in m.search("fact", namespace=NS, types="fact")] == [rid]
