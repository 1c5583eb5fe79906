"""Issue 21's bad inputs, each the smallest reproduction with the right outcome as the expected
value: a refusal with retain's own error (InvalidInput naming the field), never a raw Python
exception, and nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput


@pytest.fixture
def mem() -> Iterator[Memory]:
    m = Memory(encoder=HashingEncoder(dim=64), state_scorer=False)
    yield m
    m.close()


@pytest.fixture
def rid(mem: Memory) -> str:
    return mem.add("The flight to Lisbon leaves at 9am.", namespace="ns", metadata={"k": "v"})


def test_update_metadata_none_means_not_given_as_in_add(mem: Memory, rid: str) -> None:
    new = mem.update(rid, "The flight to Lisbon leaves at 10am.", namespace="ns", metadata=None)
    assert dict(mem.get(new, namespace="ns").metadata).get("k") == "v"


@pytest.mark.parametrize("metadata", ["yes", 3, ["k", "v"], {1: "int key"}, {"k": object()}], ids=repr)
def test_update_with_bad_metadata_is_refused(mem: Memory, rid: str, metadata: Any) -> None:
    with pytest.raises(InvalidInput, match="metadata"):
        mem.update(rid, "The flight leaves at 10am.", namespace="ns", metadata=metadata)
    assert [r.id for r in mem.records(namespace="ns")] == [rid]


@pytest.mark.parametrize(
    ("option", "value"),
    [("tiers", 6), ("types", datetime(2026, 1, 1, tzinfo=UTC)), ("mmr_lambda", {}), ("threshold", [0.5])],
    ids=str,
)
def test_search_option_of_the_wrong_type_is_refused(mem: Memory, rid: str, option: str, value: Any) -> None:
    with pytest.raises(InvalidInput, match=option):
        mem.search("flight", namespace="ns", **{option: value})


def test_forget_with_a_lone_surrogate_is_refused_like_search(mem: Memory, rid: str) -> None:
    with pytest.raises(InvalidInput, match="query"):
        mem.search("\ud800", namespace="ns")
    with pytest.raises(InvalidInput, match="query_or_id"):
        mem.forget("\ud800", namespace="ns")
    assert len(mem.records(namespace="ns")) == 1


@pytest.mark.parametrize("edge", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+01:00"])
def test_times_at_the_edges_of_the_calendar_are_refused(mem: Memory, edge: str) -> None:
    with pytest.raises(InvalidInput, match="event_time"):
        mem.add("At the end of time.", namespace="ns", event_time=edge)
    with pytest.raises(InvalidInput, match="start"):
        mem.search("time", namespace="ns", start=edge)
    with pytest.raises(InvalidInput, match="end"):
        mem.timeline("ns", end=edge)
    with pytest.raises(InvalidInput, match="now"):
        mem.search("last week", namespace="ns", now=edge)
    assert mem.records(namespace="ns") == []


@pytest.mark.parametrize("bad", [{"a": 1}, b"01ARZ3NDEKTSV4RRFFQ69G5FAV", 7, None, "\ud800"], ids=repr)
def test_a_record_id_of_the_wrong_type_is_refused(mem: Memory, rid: str, bad: Any) -> None:
    for call in (mem.get, mem.history, mem.pin, mem.delete):
        with pytest.raises(InvalidInput, match="id"):
            call(bad, namespace="ns")
    with pytest.raises(InvalidInput, match="id"):
        mem.feedback(bad, namespace="ns", used=True)


@pytest.mark.parametrize("reason", [5, None, "\ud800", "x" * 5000], ids=lambda r: repr(r)[:12])
def test_a_bad_reason_is_refused_before_it_is_audited(mem: Memory, rid: str, reason: Any) -> None:
    before = len(mem.store.audit_log())
    with pytest.raises(InvalidInput, match="reason"):
        mem.delete(rid, namespace="ns", reason=reason)
    assert len(mem.store.audit_log()) == before


@pytest.mark.parametrize("seeds", [3, {1: 1.0}, ["a"]], ids=repr)
def test_propagate_importance_with_bad_seeds_is_refused(mem: Memory, rid: str, seeds: Any) -> None:
    with pytest.raises(InvalidInput, match="seeds"):
        mem.propagate_importance("ns", seeds=seeds)
