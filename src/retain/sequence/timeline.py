"""Records in event order: the timeline of a namespace and the walk along its stream chain.

Event order is: records with a known ``event_time`` first, by event time (UTC), then by the order
in which their segment (session) first appeared, then by ``seq`` (position in the stream; None
last), then by insertion; then the records whose event time is unknown, in insertion order (their
place among the dated records is not guessed). Within one session every turn usually shares the
session's event time, so a session reads in ``seq`` order, and sessions in date order, whatever
order they were added in.

:meth:`retain.Memory.before` / :meth:`retain.Memory.after` walk that order: the previous / next turn
of the same session by ``seq``, then across sessions by time — the temporal ``next`` edges of the
stream, computed from the stored fields rather than stored as edges.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from retain.errors import InvalidInput
from retain.record import MemoryRecord, utc, validate_namespace
from retain.store import RecordFilter

if TYPE_CHECKING:
    from retain.memory import Memory

__all__ = ["event_order", "timeline", "walk"]

ALL_TIERS = RecordFilter(tiers=None)


def event_order(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` (given in insertion order) sorted into event order (see the module docstring).

    Pure; stable; unknown event times go last in the order given.
    """
    segment_rank: dict[str | None, int] = {}
    for rec in records:
        segment_rank.setdefault(rec.segment, len(segment_rank))
    dated = [(i, r) for i, r in enumerate(records) if r.event_time is not None]
    undated = [r for r in records if r.event_time is None]

    def key(item: tuple[int, MemoryRecord]) -> tuple[datetime, int, float, int]:
        i, rec = item
        assert rec.event_time is not None
        return rec.event_time, segment_rank[rec.segment], math.inf if rec.seq is None else rec.seq, i

    return [r for _, r in sorted(dated, key=key)] + undated


def timeline(
    mem: Memory,
    namespace: str,
    *,
    query: str | None = None,
    start: datetime | str | None = None,
    end: datetime | str | None = None,
    limit: int | None = None,
) -> list[MemoryRecord]:
    """The current records of ``namespace`` (every tier) in event order; see :meth:`retain.Memory.timeline`."""
    validate_namespace(namespace)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInput(f"limit: must be an int >= 1 or None, got {limit!r}")
    low, high = utc(start, field_name="start"), utc(end, field_name="end")
    if low is not None and high is not None and low >= high:
        raise InvalidInput(f"start: {low.isoformat()} is not before end {high.isoformat()}")
    if query is not None:
        tiers = ["core", "dynamic", "archive"]
        hits = mem.search(query, namespace=namespace, k=limit or 10, tiers=tiers, start=low, end=high, order="time")
        return [h.record for h in hits]  # the topic's episodes, in event order (retain.sequence.episodes)
    flt = RecordFilter(tiers=None, start=low, end=high)
    ordered = event_order(mem.store.list_records(namespace, flt, order="created"))
    return ordered if limit is None else ordered[:limit]


def walk(mem: Memory, record: MemoryRecord | str, *, namespace: str, n: int, step: int) -> list[MemoryRecord]:
    """Up to ``n`` records before (``step`` -1) or after (+1) ``record`` in event order, in event
    order. See :meth:`retain.Memory.before`."""
    validate_namespace(namespace)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidInput(f"n: must be an int >= 1, got {n!r}")
    if isinstance(record, MemoryRecord):
        if record.namespace != namespace:
            raise InvalidInput(f"record {record.id} belongs to namespace {record.namespace!r}, not {namespace!r}")
        record = record.id
    if not isinstance(record, str):
        raise InvalidInput(f"record: a MemoryRecord or an id, got {type(record).__name__}")
    anchor = mem.get(record, namespace=namespace)
    current = mem.store.list_records(namespace, ALL_TIERS, order="created")
    if not anchor.is_current:  # a superseded version stands in for its current version
        versions = {r.id for r in mem.history(anchor.id, namespace=namespace)}
        current = sorted([*(r for r in current if r.id not in versions), anchor], key=lambda r: r.created_at)
    ordered = event_order(current)
    at = next(i for i, r in enumerate(ordered) if r.id == anchor.id)
    if step < 0:
        return ordered[max(0, at - n) : at]
    return ordered[at + 1 : at + 1 + n]
