"""Expiry (time to live): a record added with ``ttl`` or ``expires_at`` leaves hot memory when its time
comes, to the archive tier with an audit entry (op "archive", reason "expired"); it is never purged
silently.

The expiry time is kept in ``metadata["expires_at"]`` (:data:`~retain.store.where.EXPIRES_AT_KEY`, UTC
text). Searches never return an expired record as a current hit, swept or not (their filter's
``live_at``); :func:`expire` moves the expired records of a namespace to the archive. It runs before
each add and each listing of ``Memory.records``, and on ``Memory.expire``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from retain.errors import InvalidInput
from retain.record import Tier, utc, utcnow, validate_namespace
from retain.store import HOT_TIERS, AuditEntry, RecordFilter, RequireUnchanged, retry_on_conflict
from retain.store.where import EXPIRES_AT_KEY, MetadataCondition, expiry_text, parse_expiry

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["MAX_TTL_SECONDS", "check_expiry_metadata", "expire", "with_expiry"]

MAX_TTL_SECONDS = 100 * 365 * 86_400
"""Longest time to live ``add`` takes (seconds, about 100 years)."""


def with_expiry(
    metadata: Mapping[str, Any] | None, ttl: float | None, expires_at: datetime | str | None
) -> Mapping[str, Any] | None:
    """``metadata`` with the expiry of ``ttl`` (seconds from now, > 0) or ``expires_at`` (an aware
    time or ISO 8601 text with an offset) in ``metadata["expires_at"]``; ``metadata`` itself when both
    are None.

    Raises:
        InvalidInput: both given; ``ttl`` not a finite number in (0, :data:`MAX_TTL_SECONDS`];
            ``expires_at`` naive or unparseable.
    """
    if ttl is None and expires_at is None:
        return metadata
    if ttl is not None and expires_at is not None:
        raise InvalidInput("ttl, expires_at: give one of them, not both")
    if ttl is not None:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
            raise InvalidInput(f"ttl: a number of seconds, got {ttl!r}")
        if not 0 < ttl <= MAX_TTL_SECONDS:
            raise InvalidInput(f"ttl: seconds in (0, {MAX_TTL_SECONDS}], got {ttl!r}")
        when = utcnow() + timedelta(seconds=ttl)
    else:
        when = utc(expires_at, field_name="expires_at")  # type: ignore[assignment]
    return {**(metadata or {}), EXPIRES_AT_KEY: expiry_text(when)}


def check_expiry_metadata(metadata: Mapping[str, Any]) -> None:
    """Raises InvalidInput when ``metadata["expires_at"]`` is set but is not an expiry text
    (``YYYY-MM-DDTHH:MM:SS.ffffffZ``; ``add(ttl=...)`` or ``add(expires_at=...)`` write it)."""
    if EXPIRES_AT_KEY in metadata and parse_expiry(metadata[EXPIRES_AT_KEY]) is None:
        raise InvalidInput(
            f"metadata: {EXPIRES_AT_KEY!r} is the expiry time, UTC as YYYY-MM-DDTHH:MM:SS.ffffffZ; "
            f"got {metadata[EXPIRES_AT_KEY]!r} (pass add(ttl=seconds) or add(expires_at=time))"
        )


def expire(core: Core, namespace: str, *, now: datetime | str | None = None, actor: str = "system") -> list[str]:
    """Move the current hot records of ``namespace`` whose expiry is <= ``now`` (UTC; default the
    current time) to the archive tier (unpinned), each with an audit entry (op "archive", reason
    "expired", details: the expiry and the tier before). Returns their ids, oldest first.

    Raises:
        InvalidInput: bad namespace, or ``now`` naive or unparseable.
    """
    validate_namespace(namespace)
    at = utc(now, field_name="now") or utcnow()
    due = (MetadataCondition(EXPIRES_AT_KEY, "$lte", f'"{expiry_text(at)}"'),)
    flt = RecordFilter(tiers=HOT_TIERS, where=due)

    def once() -> list[str]:
        records = core.store.list_records(namespace, flt)
        if not records:
            return []
        moved = [r.evolve(tier=Tier.ARCHIVE, pinned=False) for r in records]
        audit = [
            AuditEntry(
                namespace,
                "archive",
                r.id,
                actor,
                "expired",
                details={"expires_at": r.metadata[EXPIRES_AT_KEY], "tier_before": r.tier.value},
            )
            for r in records
        ]
        guards = [RequireUnchanged(namespace, r.id, r.tier, r.superseded_by) for r in records]
        core.store.put(moved, audit, require=guards)
        core.invalidate(namespace)
        return [r.id for r in records]

    return retry_on_conflict(once)
