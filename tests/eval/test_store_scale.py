"""retain.eval.store_scale: the retention decision at capacity is timed on real adds that each evict
one record, and the budget holds throughout."""

from __future__ import annotations

from pathlib import Path

from retain.eval.store_scale import NAMESPACE, ingest, measure_decisions
from retain.store import SQLiteStore


def test_adds_at_capacity_each_evict_one_record_and_their_decisions_are_timed(tmp_path: Path) -> None:
    location = str(tmp_path / "scale.db")
    ingest("sqlite", location, 300)
    out = measure_decisions("sqlite", location, 300, 6)
    assert out["hot_after"] == 300  # the budget held: one out for each one in
    assert 0 < out["decision_ms"][0] <= out["decision_ms"][1] and out["first_decision_s"] > 0
    assert out["add_ms"][0] >= out["decision_ms"][0]  # the decision is a part of the add
    store = SQLiteStore(location)
    store.setup()
    evictions = [e for e in store.audit_log(NAMESPACE) if e["op"] == "evict"]
    assert len(evictions) == len({e["record_id"] for e in evictions}) == 7
    store.close()
