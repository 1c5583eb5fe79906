"""Time to live: ``add(ttl=...)`` / ``add(expires_at=...)``; an expired record is never a current search
hit, and moves to the archive tier with an audit entry (reason "expired"), never silently purged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from retain.errors import InvalidInput
from retain.memory import Memory
from retain.record import Tier
from retain.store.where import EXPIRES_AT_KEY

NS = "ttl"
PAST = datetime(2020, 1, 1, tzinfo=UTC)


def contents(mem: Memory, query: str, **options: Any) -> list[str]:
    return [h.record.content for h in mem.search(query, namespace=NS, **options)]


def test_an_expired_record_is_never_a_hit_then_moves_to_the_archive(memory: Memory) -> None:
    kept = memory.add("the parcel room key hangs by the fridge", namespace=NS, ttl=3600)
    gone = memory.add("the parcel room is on floor 3", namespace=NS, expires_at=PAST)
    for preset in ("default", "rrf", "lexical", "dense", "diverse"):
        assert contents(memory, "parcel room", config=preset) == ["the parcel room key hangs by the fridge"]
    assert memory.get(gone, namespace=NS).tier is Tier.DYNAMIC  # not swept yet, and still not a hit

    assert memory.expire(NS) == [gone]
    record = memory.get(gone, namespace=NS)
    assert record.tier is Tier.ARCHIVE
    assert contents(memory, "parcel room", tiers=["archive"]) == ["the parcel room is on floor 3"]
    entries = [e for e in memory.store.audit_log(NS) if e["op"] == "archive"]
    assert [(e["record_id"], e["reason"]) for e in entries] == [(gone, "expired")]
    assert memory.expire(NS) == []
    assert memory.get(kept, namespace=NS).tier is Tier.DYNAMIC


def test_add_and_records_sweep_expired_records(memory: Memory) -> None:
    gone = memory.add("the gate opens at nine", namespace=NS, expires_at=PAST)
    memory.add("the gate closes at six", namespace=NS)
    assert memory.get(gone, namespace=NS).tier is Tier.ARCHIVE  # the second add swept it
    pinned = memory.add("always lock the gate", namespace=NS, pinned=True, expires_at=PAST)
    tiers = {r.id: r.tier for r in memory.records(namespace=NS)}
    assert tiers[pinned] is Tier.ARCHIVE
    assert all(r.id not in (gone, pinned) for r in memory.records(namespace=NS, include_archive=False))


def test_ttl_writes_the_expiry_in_metadata(memory: Memory) -> None:
    before = datetime.now(UTC)
    rid = memory.add("the parcel arrives tomorrow", namespace=NS, ttl=60)
    text = memory.get(rid, namespace=NS).metadata[EXPIRES_AT_KEY]
    when = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before + timedelta(seconds=59) < when < before + timedelta(seconds=70)


@pytest.mark.parametrize(
    "options",
    [
        {"ttl": 0},
        {"ttl": -5},
        {"ttl": float("inf")},
        {"ttl": "60"},
        {"ttl": True},
        {"expires_at": "2030-01-01T00:00:00"},
        {"expires_at": "soon"},
        {"ttl": 5, "expires_at": PAST},
        {"metadata": {EXPIRES_AT_KEY: "2020"}},
    ],
)
def test_bad_expiry_is_refused_and_nothing_written(mem64: Memory, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        mem64.add("the parcel arrives tomorrow", namespace=NS, **options)
    assert mem64.store.namespaces() == []
