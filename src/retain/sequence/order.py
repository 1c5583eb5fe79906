"""Event order of records: the order a namespace's stream happened in.

Event order is: records with a known ``event_time`` first, by event time (UTC), then by the order
in which their segment (session) first appeared, then by ``seq`` (position in the stream; None
last), then by insertion; then the records whose event time is unknown, in insertion order (their
place among the dated records is not guessed). Within one session every turn usually shares the
session's event time, so a session reads in ``seq`` order, and sessions in date order, whatever
order they were added in. The timeline (:mod:`retain.sequence.timeline`) and the episodes of an
ordering question (:mod:`retain.sequence.episodes`) are read in this order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from retain.record import MemoryRecord

__all__ = ["event_order"]


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
