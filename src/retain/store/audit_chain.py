"""The audit log as every backend writes it: entries (:class:`AuditEntry`) chained by sha256
(:func:`audit_hash`, starting from :data:`GENESIS_HASH`), or by HMAC-SHA256 under a key the user
keeps outside the database (keyed chain, :data:`KEYED_PREFIX`), and the log as stored
(:class:`RawAudit`) for :mod:`retain.safety.audit` to verify.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from retain.errors import InvalidInput

__all__ = ["GENESIS_HASH", "KEYED_PREFIX", "MIN_KEY_BYTES", "AuditEntry", "RawAudit", "audit_hash", "check_key"]


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the append-only audit log. Never holds record content.

    Attributes:
        namespace: scope of the change.
        op: "add", "update", "supersede", "delete", "delete_all", "evict", "archive", ...
        record_id: the record concerned, or None for namespace-wide operations.
        actor: who asked ("user", "agent", "system", "policy:<name>", ...).
        reason: free text why.
        policy: retention policy name when a policy decided, else None.
        details: JSON-serialisable scores and before/after fields (no content).
    """

    namespace: str
    op: str
    record_id: str | None = None
    actor: str = "user"
    reason: str = ""
    policy: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("namespace", "op", "actor", "reason"):
            if not isinstance(getattr(self, name), str):
                raise InvalidInput(f"audit {name}: must be a string, got {type(getattr(self, name)).__name__}")
        for name in ("record_id", "policy"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidInput(f"audit {name}: must be a string or None, got {type(value).__name__}")
        if not isinstance(self.details, dict):
            raise InvalidInput(f"audit details: must be a dict, got {type(self.details).__name__}")


GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first audit entry."""

KEYED_PREFIX = "hmac-sha256:"
"""The stored ``hash`` of a keyed entry: this prefix, then 64 hex characters of HMAC-SHA256."""

MIN_KEY_BYTES = 16
"""Shortest audit key accepted (128 bits)."""


def check_key(key: object) -> bytes:
    """``key`` as the audit chain's HMAC key.

    Raises:
        InvalidInput: not bytes, or shorter than :data:`MIN_KEY_BYTES`.
    """
    if not isinstance(key, bytes | bytearray):
        raise InvalidInput(f"audit_key: must be bytes, got {type(key).__name__}")
    if len(key) < MIN_KEY_BYTES:
        raise InvalidInput(f"audit_key: at least {MIN_KEY_BYTES} bytes, got {len(key)}")
    return bytes(key)


def audit_hash(prev_hash: str, fields: dict[str, Any], key: bytes | None = None) -> str:
    """The chain hash of one entry over the previous entry's hash and this entry's canonical JSON
    (sorted keys, UTF-8 characters literal, no spaces): the hash chain every backend writes and
    :mod:`retain.safety.audit` verifies. ``fields`` are the entry's ts (UTC microseconds), namespace,
    op, record_id, actor, reason, policy and details.

    Unkeyed (``key`` None): sha256, 64 hex characters; anyone with write access can compute it.
    Keyed: :data:`KEYED_PREFIX` + HMAC-SHA256 (RFC 2104) under ``key``, which only a holder of the
    key can compute, so a row appended or rewritten without it does not verify.

    Raises:
        TypeError, ValueError: ``fields`` are not JSON-serialisable.
    """
    canonical = (prev_hash + json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))).encode()
    if key is None:
        return hashlib.sha256(canonical).hexdigest()
    return KEYED_PREFIX + hmac.new(key, canonical, hashlib.sha256).hexdigest()


class RawAudit(NamedTuple):
    """The audit log as stored, uninterpreted (the result of :class:`ReadAuditRaw`).

    Attributes:
        entries: every entry in seq order, each a dict with the keys of :class:`ReadAudit`'s
            entries, ``details`` the stored JSON text (not parsed: a corrupted row is read, not raised).
        last_seq: the backend's sequence counter (the highest seq it ever assigned, kept outside the
            rows), or None before the first entry.
        missing_guards: names of the backend's append-only guards (for SQLite, the triggers that refuse
            UPDATE and DELETE on the audit table) that are missing or whose SQL is not the SQL retain
            created them with, and any other trigger on the audit table ("<name> (unexpected
            trigger)"), sorted; empty when all are in place.
    """

    entries: list[dict[str, Any]]
    last_seq: int | None
    missing_guards: tuple[str, ...] = ()
