"""Procedural memory: procedures written when a plan completes, found again by state similarity."""

from __future__ import annotations

import pytest

from retain import AgentState, HashingEncoder, InvalidInput, Memory, MiniLMEncoder
from retain.sequence.procedures import MAX_STEPS, procedure_namespace

NS = "trip"
HOTEL_STEPS = ["search hotels near the venue", "filter by the budget", "book the cheapest with a lift"]
FLIGHT_STEPS = ["search flights LIS-OPO", "pick the morning flight", "pay with the company card"]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    return MiniLMEncoder()


def test_recorded_procedure_is_stored_apart_and_audited() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    pid = mem.record_procedure(HOTEL_STEPS, state={"phase": "book_hotel"}, namespace=NS)
    record = mem.get(pid, namespace=procedure_namespace(NS))
    assert record.metadata["kind"] == "procedure" and list(record.metadata["steps"]) == HOTEL_STEPS
    assert record.tier.value == "archive" and record.type.value == "plan_step"
    assert mem.search("book the cheapest hotel", namespace=NS, k=5) == []  # not a record of NS itself
    entries = [e for e in mem.audit_entries(namespace=procedure_namespace(NS)) if e["record_id"] == pid]
    assert [e["op"] for e in entries] == ["add"] and entries[0]["reason"] == "procedure"
    assert entries[0]["details"]["steps"] == 3


def test_procedures_ranked_by_state_similarity(minilm: MiniLMEncoder) -> None:
    mem = Memory(encoder=minilm)
    hotel = mem.record_procedure(
        HOTEL_STEPS, state={"phase": "book_hotel", "subgoals": ["find a hotel in Porto"]}, namespace=NS
    )
    flight = mem.record_procedure(
        FLIGHT_STEPS, state={"phase": "book_flight", "subgoals": ["fly from Lisbon to Porto"]}, namespace=NS
    )
    found = mem.procedures({"phase": "book_hotel", "subgoals": ["find a hotel in Madrid"]}, namespace=NS, k=2)
    assert [p.id for p in found] == [hotel, flight]
    assert found[0].score > found[1].score and found[0].steps == tuple(HOTEL_STEPS)
    found = mem.procedures(AgentState(phase="book_flight", subgoals=("fly to Madrid",)), namespace=NS, k=1)
    assert [p.id for p in found] == [flight]


def test_failed_procedures_only_on_request() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    bad = mem.record_procedure(
        ["book without checking"], state={"phase": "book_hotel"}, namespace=NS, outcome="failure"
    )
    assert mem.procedures({"phase": "book_hotel"}, namespace=NS) == []
    assert [p.id for p in mem.procedures({"phase": "book_hotel"}, namespace=NS, include_failed=True)] == [bad]


def test_tracker_writes_when_the_subgoal_stack_empties() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    tracker = mem.procedure_tracker(NS)
    assert tracker.observe({"phase": "plan"}) is None  # no subgoal: nothing started
    start = {"phase": "book_hotel", "subgoals": ["book hotel", "compare prices"]}
    assert tracker.observe(start) is None
    assert tracker.observe({"phase": "book_hotel", "subgoals": ["book hotel"]}) is None
    assert tracker.steps == ("compare prices",)
    pid = tracker.observe({"phase": "book_hotel", "subgoals": []})
    assert pid is not None
    (proc,) = mem.procedures({"phase": "book_hotel"}, namespace=NS)
    assert proc.id == pid and proc.steps == ("compare prices", "book hotel")
    assert proc.state.subgoals == ("book hotel", "compare prices")  # the state it applied to
    assert tracker.steps == ()


def test_tracker_reported_steps_replace_popped_subgoals() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    tracker = mem.procedure_tracker(NS)
    tracker.observe({"phase": "book_flight", "subgoals": ["book a flight"]})
    tracker.observe({"phase": "book_flight", "subgoals": ["book a flight"]}, step="search flights")
    pid = tracker.observe({"phase": "book_flight", "subgoals": []}, step="pay")
    (proc,) = mem.procedures({"phase": "book_flight"}, namespace=NS)
    assert proc.id == pid and proc.steps == ("search flights", "pay")


def test_tracker_stack_emptied_without_a_step_writes_nothing() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    tracker = mem.procedure_tracker(NS)
    tracker.observe({"phase": "p", "subgoals": ["a"]})
    tracker.observe({"phase": "p", "subgoals": ["a"]})
    # a stack that was replaced wholesale: "a" popped counts as the step
    assert tracker.observe({"phase": "p", "subgoals": []}) is not None
    tracker.observe({"phase": "p"})
    assert tracker.observe({"phase": "p", "subgoals": []}) is None


@pytest.mark.parametrize(
    ("steps", "state", "outcome", "needle"),
    [
        ([], {"phase": "x"}, "success", "at least one step"),
        ("one step", {"phase": "x"}, "success", "list of strings"),
        (["ok", "  "], {"phase": "x"}, "success", "steps[1]"),
        (["s"] * (MAX_STEPS + 1), {"phase": "x"}, "success", "limit"),
        (["s"], {}, "success", "state"),
        (["s"], {"phase": "x"}, "maybe", "outcome"),
    ],
)
def test_bad_procedures_are_refused_and_nothing_is_written(steps, state, outcome, needle) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(encoder=HashingEncoder(64))
    with pytest.raises(InvalidInput, match=needle.replace("[", r"\[").replace("]", r"\]")):
        mem.record_procedure(steps, state=state, namespace=NS, outcome=outcome)
    assert mem.procedures({"phase": "x"}, namespace=NS, include_failed=True) == []


def test_bad_k_refused() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    with pytest.raises(InvalidInput, match="k"):
        mem.procedures({"phase": "x"}, namespace=NS, k=0)
