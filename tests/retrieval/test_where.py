"""``Memory.search(where=...)``: metadata conditions inside the store query, in every preset, so ``k``
hits come back when ``k`` records match; bad conditions are refused with InvalidInput."""

from __future__ import annotations

from typing import Any

import pytest

from retain.errors import InvalidInput
from retain.memory import Memory

NS = "where"
PRESETS = ("default", "rrf", "lexical", "dense", "diverse")


@pytest.fixture
def notes(memory: Memory) -> Memory:
    for i in range(30):
        topic = "travel" if i % 2 else "food"
        memory.add(f"note {i} about the trip plans", namespace=NS, metadata={"n": i, "topic": topic}, seq=i)
    return memory


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_returns_k_matching_hits(notes: Memory, preset: str) -> None:
    hits = notes.search("trip plans", namespace=NS, k=5, config=preset, where={"n": {"$gte": 20}, "topic": "travel"})
    assert len(hits) == 5
    assert all(h.record.metadata["n"] >= 20 and h.record.metadata["topic"] == "travel" for h in hits)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_rare_match_is_found_among_many_better_ranked_records(notes: Memory, preset: str) -> None:
    hits = notes.search("trip plans", namespace=NS, k=10, config=preset, where={"n": 7})
    assert [h.record.metadata["n"] for h in hits] == [7]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"n": {"$in": [1, 2, 3]}}, {1, 2, 3}),
        ({"n": {"$lt": 3}}, {0, 1, 2}),
        ({"n": {"$gt": 26}}, {27, 28, 29}),
        ({"n": {"$lte": 1}, "topic": {"$ne": "food"}}, {1}),
    ],
)
def test_operators(notes: Memory, where: dict[str, Any], expected: set[int]) -> None:
    hits = notes.search("note", namespace=NS, k=30, where=where)
    assert {h.record.metadata["n"] for h in hits} == expected


@pytest.mark.parametrize(
    "where",
    [{"n": {"$like": 3}}, {"n": {"$gt": None}}, {"n": {"$in": []}}, {"n": [1]}, {"n": {"$gte": "3", "$bad": 1}}, ["n"]],
)
def test_bad_conditions_raise_invalid_input(notes: Memory, where: Any) -> None:
    with pytest.raises(InvalidInput, match="where"):
        notes.search("note", namespace=NS, where=where)


def test_metadata_keyword_still_refused(notes: Memory) -> None:
    with pytest.raises(TypeError):
        notes.search("note", namespace=NS, metadata={"n": 1})  # type: ignore[call-arg]
