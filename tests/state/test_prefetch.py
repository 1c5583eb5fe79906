"""Predictive prefetch: the phase-transition model and Memory.prefetch."""

from __future__ import annotations

import pytest

from retain import Memory, Prefetch
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.state.prefetch import PhaseModel, normalise_phase, prefetch


def test_the_model_predicts_the_most_frequent_departure() -> None:
    model = PhaseModel.fit([["clarify", "clarify", "search", "book"], ["Clarify", "search"], ["clarify", "plan"]])
    nxt, p, reason = model.next_phase("clarify")
    assert nxt == "search" and p == pytest.approx(2 / 3) and "2 of 3" in reason
    assert normalise_phase(" Book  Hotel ") == "book_hotel"
    assert PhaseModel.from_json(model.to_json()).transitions == model.transitions


def test_an_unknown_phase_gives_no_prediction_and_a_reason() -> None:
    with Memory(encoder=HashingEncoder(64), state_scorer=False) as mem:
        mem.add("Flights found: AB123 at 420 EUR.", namespace="t", role="tool", state={"phase": "search"})
        out = mem.prefetch({"phase": "a-phase-nobody-has-seen"}, namespace="t")
        assert isinstance(out, Prefetch) and out.hits == [] and "unknown phase" in out.reason
        assert mem.prefetch({}, namespace="t").hits == []


def test_a_known_phase_warms_records_for_the_predicted_state() -> None:
    model = PhaseModel.load()
    nxt, _, _ = model.next_phase("clarify")
    assert nxt is not None
    with Memory(encoder=HashingEncoder(64), state_scorer=False) as mem:
        mem.add(f"Ready to {nxt.replace('_', ' ')}: the budget is 5000 EUR.", namespace="t", role="user")
        out = mem.prefetch({"phase": "clarify"}, namespace="t", k=3)
        assert out.next_phase == nxt and 0 < out.probability <= 1 and len(out.hits) == 1


def test_bad_k_and_bad_json_are_refused() -> None:
    with Memory(encoder=HashingEncoder(64)) as mem, pytest.raises(InvalidInput):
        mem.prefetch({"phase": "clarify"}, namespace="t", k=0)
    with pytest.raises(InvalidInput):
        PhaseModel.from_json('{"transitions": {"a": {"b": -1}}}')


def _model() -> PhaseModel:
    # clarify stays 8 times and moves to search twice: P(stay) = 0.8
    return PhaseModel.fit(
        [["clarify"] * 9 + ["search"], ["clarify", "search"], ["book_hotel", "pay", "book_hotel", "pay"]]
    )


def test_slots_are_shared_by_the_probability_of_staying() -> None:
    with Memory(encoder=HashingEncoder(64), state_scorer=False) as mem:
        for i in range(12):
            mem.add(f"Clarify note {i}: the traveller asked about seat {i}.", namespace="t", role="user")
        mem.add("Search results: flight AB123 at 420 EUR.", namespace="t", role="tool")
        out = prefetch(
            mem.core, {"phase": "clarify", "subgoals": ["clarify the seat"]}, namespace="t", k=5, model=_model()
        )
        assert out.stay == pytest.approx(0.8) and out.next_phase == "search" and out.known_as == "clarify"
        assert len(out.hits) == 5 and len({h.record.id for h in out.hits}) == 5
        # one slot (round(5 * 0.2)) went to the predicted "search" state: its best hit is the search result
        assert any(h.record.content.startswith("Search results") for h in out.hits)
        stay_only = mem.search("clarify the seat ; clarify", namespace="t", k=5)
        assert not any(h.record.content.startswith("Search results") for h in stay_only)


def test_an_unseen_spelling_is_read_as_the_nearest_known_phase() -> None:
    with Memory(encoder=HashingEncoder(64), state_scorer=False) as mem:
        mem.add("The hotel must have a lift.", namespace="t", role="user")
        out = prefetch(mem.core, {"phase": "hotel book"}, namespace="t", model=_model())
        assert out.known_as == "book_hotel" and "read as" in out.reason and out.hits
        out = prefetch(mem.core, {"phase": "a phase nobody has seen"}, namespace="t", model=_model())
        assert out.hits == [] and out.known_as is None and "unknown phase" in out.reason
