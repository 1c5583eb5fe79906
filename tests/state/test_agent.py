"""retain.state.agent: the agent state, its perceiver and the state encoder."""

from __future__ import annotations

import numpy as np
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, new_id
from retain.state.agent import MAX_CONSTRAINTS, AgentState, StateEncoder, StatePerceiver
from sam_support import (
    DIM,
    CountingEncoder,
)


def test_state_from_dict_keeps_unknown_keys_and_drops_blanks() -> None:
    st = AgentState.from_dict(
        {
            "phase": "book_hotel",
            "subgoals": ["", "pick hotel"],
            "constraints": {"budget": 5000, " ": "x"},
            "uncertain": ["dates"],
            "last_result": "  ",
            "mood": "tired",
        }
    )
    assert st.phase == "book_hotel"
    assert st.subgoals == ("pick hotel",)
    assert dict(st.constraints) == {"budget": 5000}
    assert st.open_questions == ("dates",)
    assert st.last_result is None
    assert st.features == {"mood": "tired"}
    assert not st.empty
    assert AgentState.from_dict({"phase": ""}).empty


@pytest.mark.parametrize(
    "bad",
    [
        {"constraints": {f"c{i}": i for i in range(5_000)}},
        {"constraints": ["not", "a", "mapping"]},
        {"subgoals": 5},
        {"phase": "x" * 5_000},
        {"last_result": "\ud800"},
        "phase: booking",
    ],
)
def test_state_refuses_bad_input_with_a_clear_error(bad: object) -> None:
    with pytest.raises(InvalidInput, match="state"):
        AgentState.from_dict(bad)  # type: ignore[arg-type]


def test_state_limit_is_the_documented_one() -> None:
    AgentState.from_dict({"constraints": {f"c{i}": i for i in range(MAX_CONSTRAINTS)}})
    with pytest.raises(InvalidInput, match=str(MAX_CONSTRAINTS)):
        AgentState.from_dict({"constraints": {f"c{i}": i for i in range(MAX_CONSTRAINTS + 1)}})


def test_perceiver_tracks_constraints_corrections_and_results() -> None:
    p = StatePerceiver({"phase": "clarify"})
    old = MemoryRecord(id=new_id(), namespace="n", content="Budget under 4000 EUR", type=MemoryType.HARD_CONSTRAINT)
    p.observe(old)
    assert list(p.state.constraints.values()) == ["Budget under 4000 EUR"]
    new = MemoryRecord(
        id=new_id(),
        namespace="n",
        content="Correction: budget under 4500 EUR",
        type=MemoryType.HARD_CONSTRAINT,
        supersedes=old.id,
    )
    p.observe(new)
    assert list(p.state.constraints.values()) == ["Correction: budget under 4500 EUR"]
    p.observe(MemoryRecord(id=new_id(), namespace="n", content="Flight booked", type=MemoryType.ACTION_RESULT))
    assert p.state.last_result == "Flight booked"
    p.set_phase("book_hotel")
    p.push_subgoal("pick a hotel")
    assert (p.state.phase, p.state.subgoals) == ("book_hotel", ("pick a hotel",))
    assert p.pop_subgoal().subgoals == ()


def test_state_encoder_memoises_texts() -> None:
    enc = CountingEncoder()
    se = StateEncoder(enc)
    state = {"phase": "book_hotel", "subgoals": ["pick hotel"], "constraints": {"budget": 5000}, "last_result": "ok"}
    first = se.encode(state)
    calls = enc.calls
    assert calls > 0
    second = se.encode(state)
    assert enc.calls == calls  # a repeated state costs no encoder call
    np.testing.assert_array_equal(first.whole, second.whole)
    assert abs(float(np.linalg.norm(first.whole)) - 1.0) < 1e-5
    empty = se.encode(None)
    assert not empty.whole.any()
    assert second is first  # kept whole: a repeated state is one lookup ...
    with pytest.raises(ValueError):
        first.whole[0] = 0.0  # ... so its arrays are read-only
    changed = se.encode(state | {"last_result": "hotel booked"})
    assert changed is not first and not np.array_equal(changed.result, first.result)
    np.testing.assert_array_equal(changed.goal, first.goal)


def test_add_vectors_refuses_non_finite_and_keeps_its_own_read_only_copy() -> None:
    enc = HashingEncoder(dim=DIM)
    se = StateEncoder(enc)
    state = {"phase": "a", "subgoals": ["find a room"]}
    texts = se.missing(state)
    bad = enc.encode(texts)
    bad[0, 0] = np.nan
    with pytest.raises(InvalidInput, match="not finite"):
        se.add_vectors(texts, bad)
    assert se.missing(state) == texts  # nothing memoised
    good = enc.encode(texts)
    se.add_vectors(texts, good)
    good[:] = 7.0  # the caller's buffer changes afterwards ...
    encoded = se.encode(state)
    assert float(encoded.goal.max()) < 1.0  # ... the memoised copy does not
    with pytest.raises(TypeError):
        encoded.texts["phase"] = ("x",)  # type: ignore[index]


def test_a_state_with_more_texts_than_the_text_cache_still_encodes() -> None:
    """The text LRU is trimmed after a call has read its own texts, not before (a 3-text state on a
    2-text cache raised KeyError when trimming ran first)."""
    state = {"phase": "a", "subgoals": ["find a room"], "last_result": "no rooms left"}
    small = StateEncoder(HashingEncoder(dim=DIM), cache_size=2).encode(state)
    large = StateEncoder(HashingEncoder(dim=DIM)).encode(state)
    for name in ("phase", "goal", "result", "whole"):
        np.testing.assert_array_equal(getattr(small, name), getattr(large, name))


# --- a caller's objects in the state: rendered with str(), refused when str() raises ---

NS_STATE = "n"


class _Unprintable:
    """A caller's object whose ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("boom")

    __repr__ = __str__


class _Printable:
    def __str__(self) -> str:
        return "window seat"


@pytest.mark.parametrize(
    "state",
    [
        {"phase": _Unprintable()},
        {"subgoals": [_Unprintable()]},
        {"constraints": {"seat": _Unprintable()}},
        {"constraints": {_Unprintable(): "x"}},
        {"features": {"k": _Unprintable()}},
        {"features": {_Unprintable(): 1}},
        {_Unprintable(): "an unknown key"},
    ],
)
def test_a_state_value_or_key_whose_str_raises_is_refused_by_search_add_and_context(state: dict) -> None:
    m = Memory(":memory:", encoder=HashingEncoder(64))
    m.add("The hotel is near the river.", namespace=NS_STATE)
    with pytest.raises(InvalidInput, match="state"):
        m.search("hotel", namespace=NS_STATE, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.add("Dinner is booked for eight.", namespace=NS_STATE, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.context("hotel", namespace=NS_STATE, state=state, budget_tokens=100)
    with pytest.raises(InvalidInput, match="str\\(\\) raised RuntimeError"):
        AgentState.from_dict(state)
    assert len(m.records(namespace=NS_STATE)) == 1  # the refused add wrote nothing


def test_a_state_object_with_a_working_str_is_rendered_as_text() -> None:
    assert AgentState.from_dict({"phase": _Printable(), "features": {"seat": _Printable()}}).phase == '"window seat"'
