"""What every page of the dashboard shares: the memory, the caller, the audit chain's status (the
store opens read-only when it is broken), and small helpers to read request values safely."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from retain.errors import InvalidInput
from retain.safety.audit import verify_store
from retain.store import QueryAudit
from retain.ui.auth import Principal, Role
from retain.ui.evaluation import default_path

if TYPE_CHECKING:
    from retain.memory import Memory

__all__ = ["AuditStatus", "Dashboard", "parse_time", "short_time"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class AuditStatus:
    """The audit chain as last verified: ``ok``, the entries examined, the earliest entry that cannot
    be trusted and the first problem found (None when ``ok``)."""

    ok: bool
    entries: int
    first_bad_seq: int | None
    problem: str | None


class Dashboard:
    """The state of one dashboard app: the memory it shows, the capacity of hot memory (the memory's
    budget, else the one named by the newest eviction), and the audit status, re-verified only when
    the log's head moves (a full verification reads the whole log)."""

    def __init__(self, memory: Memory, *, secret: bytes, eval_json: Path | None = None) -> None:
        self.memory = memory
        self.eval_json = eval_json if eval_json is not None else default_path(memory.store.location)
        """Where the budget page looks for the last evaluation report (:mod:`retain.ui.evaluation`)."""
        self.store = memory.store
        self.secret = secret
        self._lock = threading.Lock()
        self._verified: tuple[int | None, AuditStatus] | None = None
        self._memo: dict[Any, Any] = {}
        self._memo_head: int | None = None

    def memo(self, key: Any, compute: Callable[[], _T]) -> _T:
        """``compute()``, kept until the audit log's head moves. Every write to a store is audited in
        its own transaction, so a namespace's counts and the log's histograms cannot change without
        the head moving."""
        head = self.head_seq()
        with self._lock:
            if head != self._memo_head:
                self._memo, self._memo_head = {}, head
            if key in self._memo:
                return cast(_T, self._memo[key])
        value = compute()
        with self._lock:
            if head == self._memo_head:
                self._memo[key] = value
        return value

    def head_seq(self) -> int | None:
        """The sequence number of the newest audit entry, or None for an empty log."""
        newest = self.store.query_audit(QueryAudit(limit=1))
        return int(newest[0]["seq"]) if newest else None

    def audit_status(self) -> AuditStatus:
        """The chain's status, verified again when an entry was appended since the last check."""
        head = self.head_seq()
        with self._lock:
            if self._verified is not None and self._verified[0] == head:
                return self._verified[1]
            report = verify_store(self.store)
            status = AuditStatus(
                report.ok, report.entries, report.first_bad_seq, None if report.ok else (report.problems or ["?"])[0]
            )
            self._verified = (head, status)
            return status

    def read_only(self) -> bool:
        """True when the audit chain is broken: the dashboard then refuses every write."""
        return not self.audit_status().ok

    def capacity(self, namespace: str) -> float | None:
        """Capacity of ``namespace``'s hot memory: the memory's budget, else the newest eviction's, else None."""
        budget = self.memory.budget
        if budget is not None:
            return float(budget.capacity)
        newest = self.store.query_audit(QueryAudit(namespace=namespace, ops=("evict",), limit=1))
        value = newest[0]["details"].get("capacity") if newest else None
        return float(value) if isinstance(value, int | float) else None

    def can_write(self, principal: Principal, namespace: str) -> bool:
        """True when ``principal`` may write in ``namespace`` and the store is not read-only."""
        return principal.may(namespace, Role.WRITE) and not self.read_only()

    def namespaces(self, principal: Principal) -> list[str]:
        """The namespaces ``principal`` may read."""
        return [ns for ns in self.store.namespaces() if principal.may(ns, Role.READ)]


def parse_time(value: str | None, field: str) -> datetime | None:
    """A form's time (ISO 8601; no offset = UTC) as an aware datetime, or None when empty.

    Raises:
        InvalidInput: not an ISO 8601 time (the message names ``field``).
    """
    if value is None or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(f"{field}: not an ISO 8601 time: {value!r}") from exc
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def short_time(value: Any) -> str:
    """A time (datetime or integer UTC microseconds) as ``YYYY-MM-DD HH:MM:SS`` UTC; "" for None."""
    if value is None:
        return ""
    if isinstance(value, int):
        value = datetime.fromtimestamp(value / 1_000_000, tz=UTC)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(value)
