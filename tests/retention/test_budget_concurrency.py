"""The budget is hard across connections (issue 21, point 2): a retention decision is committed
only against the hot memory it was made on (:class:`retain.store.RequireHot`); a writer that lost
the race decides again. Each test forces the losing interleaving: a second Memory on the same file
adds (and evicts) between this one's decision and its write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from racing import on_batch, writes_records
from retain import Budget, HashingEncoder, Memory, MemoryConfig
from retain.errors import WriteConflict
from retain.safety.audit import verify_store
from retain.store import RecordFilter, RequireHot

NS = "shared"
CAPACITY = 3


@pytest.fixture
def budgeted(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    path = tmp_path / "shared.db"
    config = MemoryConfig(supersede=False, merge_paraphrases=False)

    def one() -> Memory:
        budget = Budget(CAPACITY, policy="fifo")
        return Memory(path, encoder=HashingEncoder(dim=64), config=config, budget=budget, state_scorer=False)

    a, b = one(), one()
    yield a, b
    a.close()
    b.close()


def _hot(mem: Memory) -> list[str]:
    return [r.id for r in mem.store.list_records(NS, RecordFilter())]


def _evictions_of_archived(mem: Memory) -> int:
    tiers: dict[str, str] = {}
    bad = 0
    for e in mem.store.audit_log(NS):
        if e["op"] == "add":
            tiers[e["record_id"]] = e["details"]["tier"]
        elif e["op"] == "evict":
            bad += tiers.get(e["record_id"]) == "archive"
            tiers[e["record_id"]] = "archive"
    return bad


def test_two_writers_racing_at_capacity_leave_the_budget_full_not_over(budgeted: tuple[Memory, Memory], monkeypatch):
    a, b = budgeted
    for i in range(CAPACITY):
        a.add(f"note {i} about parcel {i}", namespace=NS, type="fact")
    # b adds (evicting the oldest) between a's decision and a's write: a's decision is stale
    on_batch(monkeypatch, a, lambda: b.add("b's note about parcel 99", namespace=NS, type="fact"), writes_records)

    a.add("a's note about parcel 42", namespace=NS, type="fact")

    assert len(_hot(a)) == CAPACITY
    assert _evictions_of_archived(a) == 0
    assert verify_store(a.store).ok


def test_every_evict_row_carries_policy_scores_and_reason(budgeted: tuple[Memory, Memory]) -> None:
    a, _ = budgeted
    for i in range(CAPACITY + 2):
        a.add(f"note {i} about parcel {i}", namespace=NS, type="fact")
    evictions = [e for e in a.store.audit_log(NS) if e["op"] == "evict"]
    assert len(evictions) == 2
    for e in evictions:
        assert e["policy"] == "fifo" and e["reason"]
        assert {"utility", "capacity", "unit", "trigger", "inserted"} <= set(e["details"]), json.dumps(e["details"])


def test_a_write_under_a_stale_hot_set_is_refused_by_the_store(budgeted: tuple[Memory, Memory]) -> None:
    a, b = budgeted
    first = a.add("note about parcel 1", namespace=NS, type="fact")
    guard = RequireHot(NS, frozenset({first}))
    a.store.batch([guard])  # the hot set as read: passes
    b.add("note about parcel 2", namespace=NS, type="fact")
    with pytest.raises(WriteConflict, match="hot memory"):
        a.store.batch([guard])


def test_update_and_unpin_write_under_the_hot_guard(budgeted: tuple[Memory, Memory], monkeypatch) -> None:
    a, b = budgeted
    ids = [a.add(f"note {i} about parcel {i}", namespace=NS, type="fact") for i in range(CAPACITY)]
    a.pin(ids[0], namespace=NS)
    on_batch(monkeypatch, a, lambda: b.add("b's note about parcel 77", namespace=NS, type="fact"), writes_records)
    new = a.update(ids[1], "note 1 about parcel 1, revised", namespace=NS)
    a.unpin(ids[0], namespace=NS)
    assert len(_hot(a)) <= CAPACITY
    assert new in {r.id for r in a.store.list_records(NS, RecordFilter(tiers=None))}
    assert _evictions_of_archived(a) == 0
    assert verify_store(a.store).ok
