"""Predictive prefetch: the phase-transition model and Memory.prefetch."""

from __future__ import annotations

import pytest

from retain import Memory, Prefetch
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.state.prefetch import PhaseModel, normalise_phase


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
