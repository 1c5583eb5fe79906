"""Event ordering: Kendall tau of the timeline order of retrieved evidence against the gold order."""

from __future__ import annotations

import pytest
from scipy.stats import kendalltau

from retain.encoders.basis import HashingEncoder
from retain.eval.ordering import ordering_tau, retrieved_tau
from retain.eval.streams import Stream, StreamQuestion, run_budget_grid
from retain.ingest.draft import NewMemory

TIMELINE = {"a": 0, "b": 5, "c": 9, "d": 12}


def test_all_retrieved_in_gold_order_is_one_and_reversed_is_minus_one() -> None:
    gold = [("a",), ("b",), ("c",), ("d",)]
    assert ordering_tau(["d", "a", "c", "b"], TIMELINE, gold) == pytest.approx(1.0)  # rank order ignored
    assert ordering_tau(["a", "b", "c", "d"], TIMELINE, list(reversed(gold))) == pytest.approx(-1.0)


def test_missing_items_are_tied_last_and_lower_tau() -> None:
    gold = [("a",), ("b",), ("c",), ("d",)]
    partial = ordering_tau(["a", "b"], TIMELINE, gold)
    assert partial == pytest.approx(float(kendalltau([0, 1, 2, 3], [0, 5, 6, 6]).statistic))
    assert 0 < partial < 1  # type: ignore[operator]
    assert retrieved_tau(["a", "b"], TIMELINE, gold) == pytest.approx(1.0)
    assert ordering_tau([], TIMELINE, gold) == 0.0
    assert ordering_tau(["a"], TIMELINE, gold) != 0.0  # one found item still orders before the rest
    assert retrieved_tau(["a"], TIMELINE, gold) is None


def test_groups_take_their_earliest_retrieved_message_and_short_gold_is_unscored() -> None:
    gold = [("c", "a"), ("b",), ("d",)]  # item 1 spans messages c and a: earliest retrieved one counts
    assert ordering_tau(["c", "b", "d"], TIMELINE, gold) == pytest.approx(
        float(kendalltau([0, 1, 2], [9, 5, 12]).statistic)
    )
    assert ordering_tau(["a", "c", "b", "d"], TIMELINE, gold) == pytest.approx(1.0)
    assert ordering_tau(["a"], TIMELINE, [("a",)]) is None


def test_replay_reports_kendall_tau_for_ordering_questions() -> None:
    texts = ["I adopted a cat named Miso.", "Miso learned to open doors.", "We moved Miso to a new flat."]
    batch = tuple(
        NewMemory(content=t, seq=i, segment="b1", metadata={"evidence_id": str(i)}) for i, t in enumerate(texts)
    )
    order = (("0",), ("1",), ("2",))
    questions = (
        StreamQuestion("In what order did things happen with Miso the cat?", "event_ordering", ("0", "1", "2"), order),
        StreamQuestion("What is the cat called?", "information_extraction", ("0",)),
    )
    (run,) = run_budget_grid(
        [Stream("s", (batch,), questions)],
        HashingEncoder(64),
        shares=[1.0],
        policies=["fifo"],
        utility_for=lambda _: None,
        headline=["event_ordering"],
        progress=False,
    )
    assert run["by_category"]["event_ordering"]["kendall_tau"] == pytest.approx(1.0)
    assert "kendall_tau" not in run["by_category"]["information_extraction"]
