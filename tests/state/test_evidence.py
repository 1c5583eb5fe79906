"""retain.state.evidence: the agent's state marks records stating a replaced value as stale."""

from __future__ import annotations

import numpy as np

from retain.record import MemoryRecord, MemoryType, new_id
from retain.state.evidence import demote_stale, stale_rows
from sam_support import memory_with_scorer


def _records(*items: tuple[str, MemoryType]) -> list[MemoryRecord]:
    return [MemoryRecord(id=new_id(), namespace="n", content=t, type=k, seq=i) for i, (t, k) in enumerate(items)]


def test_old_value_of_a_slot_is_stale_and_points_at_the_current_one() -> None:
    records = _records(
        ("The total budget is 5000 EUR, hard cap.", MemoryType.HARD_CONSTRAINT),
        ("Good news: budget raised to 6,000 EUR.", MemoryType.FACT),
        ("Hotel quote: 5,200 EUR for the week.", MemoryType.OBSERVATION),
        ("We land at 07:40 on Monday.", MemoryType.FACT),
    )
    assert stale_rows({"budget_eur": 6000}, records) == {0: [1]}


def test_nothing_is_stale_without_a_record_of_the_current_value() -> None:
    records = _records(("The total budget is 5000 EUR.", MemoryType.HARD_CONSTRAINT))
    assert stale_rows({"budget_eur": 6000}, records) == {}


def test_a_record_stating_any_current_value_is_not_stale() -> None:
    records = _records(
        ("Abstract max 350 words.", MemoryType.HARD_CONSTRAINT),
        ("Lay summary max 150 words.", MemoryType.HARD_CONSTRAINT),
    )
    assert stale_rows({"abstract_words_max": 350, "lay_words_max": 150}, records) == {}


def test_a_record_not_naming_the_slot_or_of_another_kind_is_not_stale() -> None:
    records = _records(
        ("Budget: 6000 EUR.", MemoryType.FACT),
        ("Dinner for 40 EUR was lovely.", MemoryType.FACT),  # names no budget; 40 is far from 6000
        ("budget meeting on 2026-05-03", MemoryType.FACT),  # a date, the slot is an amount
        ("the budget was 90,000 once", MemoryType.FACT),  # more than three times 6000: another slot
    )
    assert stale_rows({"budget_eur": 6000}, records) == {}


def test_demote_puts_a_stale_row_just_below_the_current_one() -> None:
    scores = np.array([0.9, 0.5, 0.7, 0.1])
    out, flag = demote_stale(scores, {0: [1, 3]})
    assert out[0] < 0.5 < out[2] and out[0] > 0.1
    assert flag.tolist() == [1.0, 0.0, 0.0, 0.0]
    low, _ = demote_stale(np.array([0.2, 0.5]), {0: [1]})
    assert low[0] == 0.2  # already below: kept


def test_search_with_a_state_marks_the_old_budget_stale() -> None:
    mem, _ = memory_with_scorer()
    with mem:
        mem.add("The total budget is 5000 EUR, hard cap.", namespace="trip", type="hard_constraint")
        mem.add("Update from the family: the budget is 6000 EUR now.", namespace="trip", type="fact")
        mem.add("Shortlist: three hotels near the old town.", namespace="trip", type="observation")
        hits = mem.search("budget", namespace="trip", k=5, state={"constraints": {"budget_eur": 6000}})
        plain = mem.search("budget", namespace="trip", k=5)
    by_text = {h.record.content: h for h in hits}
    old, new = (
        by_text["The total budget is 5000 EUR, hard cap."],
        by_text["Update from the family: the budget is 6000 EUR now."],
    )
    assert old.stale and not new.stale
    assert old.rank > new.rank
    assert not any(h.stale for h in plain)
