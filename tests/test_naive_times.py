"""Naive times and plain dates (issue 21, point 6): read under ``MemoryConfig.naive_timezone``
(default UTC) instead of refused; a plain date for start / end is a whole day in that zone."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from retain import HashingEncoder, Memory, MemoryConfig
from retain.errors import InvalidInput
from retain.record import caller_time


def _mem(zone: str = "UTC") -> Memory:
    return Memory(encoder=HashingEncoder(dim=64), state_scorer=False, config=MemoryConfig(naive_timezone=zone))


def test_a_naive_event_time_pasted_from_a_log_is_read_as_utc_by_default() -> None:
    with _mem() as mem:
        rid = mem.add("The deploy finished.", namespace="ns", event_time="2026-03-14T09:30:00")
        assert mem.get(rid, namespace="ns").event_time == datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


def test_a_naive_time_is_read_in_the_configured_zone() -> None:
    with _mem("Europe/Paris") as mem:
        rid = mem.add("The deploy finished.", namespace="ns", event_time=datetime(2026, 3, 14, 9, 30))
        assert mem.get(rid, namespace="ns").event_time == datetime(2026, 3, 14, 8, 30, tzinfo=UTC)


def test_a_plain_date_is_a_whole_day_for_start_and_end() -> None:
    with _mem() as mem:
        late = mem.add("Late deploy.", namespace="ns", event_time="2026-03-14T23:59:00Z")
        mem.add("Next day deploy.", namespace="ns", event_time="2026-03-15T00:00:00Z")
        mem.add("Day before deploy.", namespace="ns", event_time="2026-03-13T23:59:00Z")
        hits = mem.search("deploy", namespace="ns", start="2026-03-14", end="2026-03-14", config="lexical")
        assert [h.record.id for h in hits] == [late]
        assert [r.id for r in mem.timeline("ns", start=date(2026, 3, 14), end=date(2026, 3, 14))] == [late]


def test_whole_days_follow_the_zone() -> None:
    assert caller_time("2026-03-14", field_name="start", naive_zone="Asia/Tokyo") == datetime(
        2026, 3, 13, 15, 0, tzinfo=UTC
    )
    assert caller_time("2026-03-14", field_name="end", naive_zone="Asia/Tokyo", day_end=True) == datetime(
        2026, 3, 14, 15, 0, tzinfo=UTC
    )


@pytest.mark.parametrize("zone", ["Mars/Base", "", "UTC+99"])
def test_an_unknown_zone_is_refused_by_the_config(zone: str) -> None:
    with pytest.raises(InvalidInput, match="naive_timezone"):
        MemoryConfig(naive_timezone=zone)


def test_an_aware_time_is_unchanged_by_the_policy() -> None:
    with _mem("Asia/Tokyo") as mem:
        rid = mem.add("Deploy.", namespace="ns", event_time="2026-03-14T09:30:00+01:00")
        assert mem.get(rid, namespace="ns").event_time == datetime(2026, 3, 14, 8, 30, tzinfo=UTC)
