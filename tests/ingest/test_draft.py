"""The write path's drafting (:mod:`retain.ingest.draft`): field checks, splitting long texts, duplicates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.ingest.draft import split_text
from retain.memory import Memory
from retain.store import ALL_RECORDS


@pytest.mark.parametrize(
    "first, second",
    [
        ({"segment": None}, {"segment": "None"}),  # no segment is not a segment named "None"
        ({"role": "a|b", "segment": "c"}, {"role": "a", "segment": "b|c"}),  # the separator in a field
        ({"role": "x|s", "segment": None, "seq": 3}, {"role": "x", "segment": "s|None", "seq": 3}),
    ],
)
def test_one_call_keeps_the_same_words_in_different_contexts_apart(first: dict, second: dict) -> None:
    mem = Memory(encoder=HashingEncoder(64))
    ids = mem.add_many([{"content": "Sounds good!", **first}, {"content": "Sounds good!", **second}], namespace="n")

    assert ids[0] != ids[1]  # as two separate adds would (the store's look-up compares each field)
    assert mem.store.count("n", ALL_RECORDS) == 2
    again = mem.add_many([{"content": "Sounds good!", **first}, {"content": "Sounds good!", **second}], namespace="n")
    assert again == ids


def test_split_metadata_keys_are_reserved(mem64: Memory) -> None:
    mem64.add("Alice likes tea", namespace="n")
    with pytest.raises(InvalidInput, match="reserved"):
        mem64.add("Bob's passport number", namespace="n", metadata={"split_group": "g"})
    assert len(mem64.records(namespace="n")) == 1


def test_same_words_from_another_speaker_or_turn_are_not_duplicates(mem64: Memory) -> None:
    a = mem64.add("Sounds good!", namespace="n", role="Alice", seq=3, segment="s1")
    b = mem64.add("Sounds good!", namespace="n", role="Bob", seq=4, segment="s1")
    assert a != b
    assert mem64.add("Sounds good!", namespace="n", role="Alice", seq=3, segment="s1") == a


def test_long_whitespace_runs_are_stored_not_refused(mem64: Memory) -> None:
    text = "x" * 10 + " " * 5000 + "y"
    rid = mem64.add(text, namespace="n")
    parts = [r for r in mem64.records(namespace="n")]
    assert "".join(r.content for r in parts) == text
    assert all(r.content.strip() for r in parts)
    assert mem64.get(rid, namespace="n").content.startswith("x")
    assert split_text("a" * 40 + " " * 50, 32) == ["a" * 32, "a" * 8 + " " * 50]


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
def test_bad_fields_are_refused_naming_the_field(mem64: Memory, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput, match=next(iter(kwargs))):
        mem64.add("a perfectly fine text", namespace="n", **kwargs)  # type: ignore[arg-type]
    assert mem64.records(namespace="n") == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"segment": "\ud800"},
        {"source": "\ud800"},
        {"metadata": {"\ud800": 1}},
        {"actor": "\ud800"},
        {"state": {"features": "abc"}},
        {"state": {"features": {"\ud800": 1}}},
    ],
)
def test_bad_text_fields_are_refused_at_the_boundary(kwargs: dict[str, object]) -> None:
    m = Memory(encoder=HashingEncoder(dim=384))
    m.add("kept", namespace="a")
    with pytest.raises(InvalidInput):
        m.add("x hello", namespace="a", **kwargs)  # type: ignore[arg-type]
    assert [r.content for r in m.records(namespace="a")] == ["kept"]
