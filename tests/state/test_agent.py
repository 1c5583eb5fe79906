"""The agent state (:mod:`retain.state.agent`): a caller's objects are rendered with ``str()``, and one
whose ``str()`` raises is refused before anything is searched or stored."""

from __future__ import annotations

import pytest

from retain import HashingEncoder, InvalidInput, Memory
from retain.state.agent import AgentState

NS = "n"


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
    m.add("The hotel is near the river.", namespace=NS)
    with pytest.raises(InvalidInput, match="state"):
        m.search("hotel", namespace=NS, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.add("Dinner is booked for eight.", namespace=NS, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.context("hotel", namespace=NS, state=state, budget_tokens=100)
    with pytest.raises(InvalidInput, match="str\\(\\) raised RuntimeError"):
        AgentState.from_dict(state)
    assert len(m.records(namespace=NS)) == 1  # the refused add wrote nothing


def test_a_state_object_with_a_working_str_is_rendered_as_text() -> None:
    assert AgentState.from_dict({"phase": _Printable(), "features": {"seat": _Printable()}}).phase == '"window seat"'
