"""``Memory.expire``: time to live (:mod:`retain.retention.expiry`)."""

from __future__ import annotations

from datetime import datetime

from retain.facade.base import FacadeBase
from retain.retention.expiry import expire

__all__ = ["ExpiryMixin"]


class ExpiryMixin(FacadeBase):
    """The expiry sweep of :class:`~retain.memory.Memory`."""

    def expire(self, namespace: str, *, now: datetime | str | None = None, actor: str = "system") -> list[str]:
        """Move the records of ``namespace`` whose expiry (``add(ttl=...)`` / ``add(expires_at=...)``)
        is <= ``now`` (UTC, default the current time) from hot memory to the archive tier, each audited
        (op "archive", reason "expired"); returns their ids. Adds and ``records`` run it themselves;
        searches never return an expired record, swept or not. See :func:`retain.retention.expiry.expire`.

        Raises:
            InvalidInput: bad namespace, or ``now`` naive or unparseable.
        """
        return expire(self._core, namespace, now=now, actor=actor)
