"""``Memory.audit_entries`` and ``Memory.verify_audit``: reading and checking the audit log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retain.errors import InvalidInput
from retain.facade.base import FacadeBase
from retain.record import validate_namespace
from retain.safety.audit import VerifyReport, verify_store

__all__ = ["AuditMixin"]

MAX_AUDIT_ENTRIES = 10_000
"""The most audit entries one :meth:`AuditMixin.audit_entries` call returns."""


class AuditMixin(FacadeBase):
    """The audit log of the store, read and verified through the facade."""

    def audit_entries(self, *, namespace: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Audit entries (of ``namespace``, or of every namespace) in log order, the first ``limit``
        of them (default and at most 10,000). Each is a dict of seq, ts (UTC microseconds), namespace,
        op, record_id, actor, reason, policy, details, prev_hash and hash; never record content.

        Raises:
            InvalidInput: a bad namespace, or ``limit`` not an int in 1..10,000.
        """
        if namespace is not None:
            validate_namespace(namespace)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise InvalidInput(f"limit: an int >= 1, got {limit!r}")
        return self._core.store.audit_log(namespace, min(limit or MAX_AUDIT_ENTRIES, MAX_AUDIT_ENTRIES))

    def verify_audit(self, *, checkpoints: Mapping[int, str] | None = None) -> VerifyReport:
        """Recompute the whole audit log's hash chain (the chain spans every namespace); see
        :func:`retain.safety.audit.verify_store`. ``checkpoints`` maps a seq to the hash recorded
        for it outside the store (a rewrite that re-hashed the rest of the log is caught). With
        ``MemoryConfig(audit_key=...)`` the keyed entries' HMACs are checked under that key (a
        forged appended entry is caught)."""
        return verify_store(self._core.store, checkpoints=checkpoints, key=self._core.config.audit_key)
