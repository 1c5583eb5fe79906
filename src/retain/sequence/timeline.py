"""Records in event order: the timeline of a namespace and the walk along its stream chain.

Event order is defined in :mod:`retain.sequence.order` (:func:`~retain.sequence.order.event_order`):
by event time, then session, then ``seq``; records of unknown time last.

:meth:`retain.Memory.before` / :meth:`retain.Memory.after` walk that order: the previous / next turn
of the same session by ``seq``, then across sessions by time — the temporal ``next`` edges of the
stream, computed from the stored fields rather than stored as edges.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from retain.errors import InvalidInput
from retain.record import MemoryRecord, caller_time, validate_id, validate_namespace
from retain.retrieval.search import SearchRequest, check_allow_raw, search
from retain.safety.redaction import redact_record
from retain.sequence.order import event_order
from retain.store import RecordFilter

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["history", "timeline", "walk"]

ALL_TIERS = RecordFilter(tiers=None)


def timeline(
    core: Core,
    namespace: str,
    *,
    query: str | None = None,
    start: datetime | str | None = None,
    end: datetime | str | None = None,
    limit: int | None = None,
    allow_raw: bool = False,
) -> list[MemoryRecord]:
    """Current records of ``namespace`` (every tier) in event order: by event time (UTC), then
    session order, then ``seq``; records with unknown event time last, in insertion order.
    Redacted copies (:func:`retain.safety.redaction.redact_record`: secrets and personal data as
    typed placeholders), with or without ``query``, as search and ``retain timeline`` return them,
    unless ``allow_raw``.

    With ``query``: up to ``limit`` (default 10) episodes of that topic, one per session per
    round, in event order (``search(query, order="time")``, :mod:`retain.sequence.episodes`). ``start`` /
    ``end`` keep event times in [start, end) (UTC; unknown times are then left out). ``limit``
    caps the number of records. An empty namespace gives [].

    Raises:
        InvalidInput: bad namespace, limit < 1, unparseable times, start >= end, ``allow_raw``
            not a bool.
    """
    validate_namespace(namespace)
    check_allow_raw(allow_raw)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidInput(f"limit: must be an int >= 1 or None, got {limit!r}")
    zone = core.config.naive_timezone
    low = caller_time(start, field_name="start", naive_zone=zone)
    high = caller_time(end, field_name="end", naive_zone=zone, day_end=True)
    if low is not None and high is not None and low >= high:
        raise InvalidInput(f"start: {low.isoformat()} is not before end {high.isoformat()}")
    if query is not None:
        tiers = ["core", "dynamic", "archive"]
        request = SearchRequest(k=limit or 10, tiers=tiers, start=low, end=high, order="time", allow_raw=allow_raw)
        hits = search(core, query, namespace=namespace, request=request)
        return [h.record for h in hits]  # the topic's episodes, in event order (retain.sequence.episodes)
    flt = RecordFilter(tiers=None, start=low, end=high)
    ordered = event_order(core.store.list_records(namespace, flt, order="created"))
    ordered = ordered if limit is None else ordered[:limit]
    return ordered if allow_raw else [redact_record(r).record for r in ordered]


def walk(core: Core, record: MemoryRecord | str, *, namespace: str, n: int, step: int) -> list[MemoryRecord]:
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
    validate_id(record, "record")
    anchor = core.get(record, namespace=namespace)
    current = core.store.list_records(namespace, ALL_TIERS, order="created")
    if not anchor.is_current:  # a superseded version stands in for its current version
        versions = {r.id for r in history(core, anchor.id, namespace=namespace)}
        current = sorted([*(r for r in current if r.id not in versions), anchor], key=lambda r: r.created_at)
    ordered = event_order(current)
    at = next(i for i, r in enumerate(ordered) if r.id == anchor.id)
    if step < 0:
        return ordered[max(0, at - n) : at]
    return ordered[at + 1 : at + 1 + n]


def history(core: Core, id: str, *, namespace: str) -> list[MemoryRecord]:
    """Every version of the record ``id``, oldest first, as stored (not redacted).

    Raises:
        RecordNotFound: no record ``id`` (or a version it links to) in ``namespace``.
    """
    record = core.get(id, namespace=namespace)
    while record.supersedes:
        record = core.get(record.supersedes, namespace=namespace)
    chain = [record]
    while chain[-1].superseded_by:
        chain.append(core.get(chain[-1].superseded_by, namespace=namespace))
    return chain
