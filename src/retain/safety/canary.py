"""Canary records: planted memories whose survival proves the store still holds what it was given.

A canary is a pinned record (core tier, never evicted by a budget) marked in its metadata under
:data:`CANARY_KEY` with the sha256 of its exact content, and registered in the audit log by an
entry ``op="canary"`` holding the record id and the same digest (no content). :func:`check`
compares every registered or marked canary with what the store holds now:

* ``held``: present, current, hot, content unchanged;
* ``missing``: purged (the audit log still names it);
* ``changed``: content no longer hashes to the registered digest, or superseded by a new version;
* ``archived``: moved to the archive tier.

Canaries never surface in :meth:`Memory.search <retain.Memory.search>` results (so never in a
packed context): they are removed from the candidate pool before fusion. ``export`` and snapshots
include them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from retain.errors import InvalidInput, TextTooLong
from retain.record import MemoryRecord, MemoryType, Tier, content_hash, validate_namespace
from retain.store import ALL_RECORDS, AppendAudit, AuditEntry, ScoredId, Store

if TYPE_CHECKING:
    from retain.config import MemoryConfig

__all__ = [
    "CANARY_KEY",
    "CANARY_STATUSES",
    "CanaryReport",
    "CanaryStatus",
    "canary_item",
    "check",
    "drop_canaries",
    "is_canary",
    "register",
]

CANARY_KEY = "canary"
"""Metadata key marking a canary: ``{"sha256": <hex digest of the exact content, UTF-8>}``."""

CANARY_STATUSES = ("held", "missing", "changed", "archived")


@dataclass(frozen=True, slots=True)
class CanaryStatus:
    """One canary's state: ``status`` is one of :data:`CANARY_STATUSES`; ``detail`` says why."""

    namespace: str
    record_id: str
    status: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class CanaryReport:
    """Outcome of :func:`check`: every canary found, sorted by namespace and id."""

    canaries: tuple[CanaryStatus, ...]

    @property
    def ok(self) -> bool:
        """True when every canary is held unchanged (also when there are none)."""
        return all(c.status == "held" for c in self.canaries)

    def counts(self) -> dict[str, int]:
        """Number of canaries per status (every status listed, zeros included)."""
        return {s: sum(c.status == s for c in self.canaries) for s in CANARY_STATUSES}


def digest(content: str) -> str:
    """sha256 hex of the exact content (UTF-8; no normalisation, unlike ``content_hash``)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def is_canary(record: MemoryRecord) -> bool:
    """True when ``record`` is marked as a canary."""
    return CANARY_KEY in record.metadata


def drop_canaries(
    records: Sequence[MemoryRecord], lexical: Sequence[ScoredId], dense: Sequence[ScoredId]
) -> tuple[list[MemoryRecord], list[ScoredId], list[ScoredId]]:
    """Remove canaries from a search pool: the records and both channels' hits without them."""
    hidden = {r.id for r in records if is_canary(r)}
    return (
        [r for r in records if r.id not in hidden],
        [h for h in lexical if h.id not in hidden],
        [h for h in dense if h.id not in hidden],
    )


def canary_item(
    config: MemoryConfig,
    store: Store,
    content: str,
    *,
    namespace: str,
    role: str = "system",
    source: str | None = None,
) -> tuple[dict[str, Any], str]:
    """The ``add_many`` item of a new canary and its content's sha256 (hex). Use through
    :meth:`retain.Memory.add_canary`, which stores the item and then :func:`register` s it.

    The record is a pinned ``fact`` (core tier, importance 1.0) stored in one piece; the audit log
    gets the usual ``add`` entry and a ``canary`` entry with the content's sha256.

    Raises:
        InvalidInput: empty content, bad namespace, or the same content is already held in the
            namespace (a canary must be a record of its own).
        TextTooLong: content over ``config.max_record_chars`` (a canary is never split).
    """
    validate_namespace(namespace)
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content: required, a non-empty string (whitespace only is refused)")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as exc:  # refused before it is hashed, as add refuses it
        raise InvalidInput(f"content: not valid Unicode text (lone surrogate at index {exc.start})") from exc
    limit = config.max_record_chars
    if len(content) > limit:
        raise TextTooLong(f"content: {len(content):,} characters, a canary is one record of at most {limit:,}")
    existing = store.find_by_hash(namespace, content_hash(content))
    if existing is not None:
        raise InvalidInput(f"content: already held as record {existing.id}; a canary must be unique")
    sha = digest(content)
    item = {
        "content": content,
        "type": MemoryType.FACT,
        "role": role,
        "source": source,
        "importance": 1.0,
        "pinned": True,
        "metadata": {CANARY_KEY: {"sha256": sha}},
    }
    return item, sha


def register(store: Store, namespace: str, record_id: str, sha: str, *, actor: str) -> None:
    """Append the ``canary`` audit entry that registers record ``record_id`` (content sha256 ``sha``)."""
    entry = AuditEntry(namespace, "canary", record_id, actor, "canary planted", details={"sha256": sha})
    store.batch([AppendAudit(entry)])


def check(store: Store, namespace: str | None = None) -> CanaryReport:
    """State of every canary of ``namespace`` (None = every namespace); see the module docstring.

    Canaries are those registered in the audit log plus any record marked in its metadata (a crash
    between the add and the registration leaves a marked record only). ``store`` is a set-up
    :class:`~retain.store.Store` (no encoder needed).

    Raises:
        InvalidInput: bad namespace.
    """
    if namespace is not None:
        validate_namespace(namespace)
    expected: dict[tuple[str, str], str | None] = {}
    for entry in store.audit_log(namespace):
        if entry["op"] == "canary" and entry["record_id"]:
            expected[(entry["namespace"], entry["record_id"])] = _sha(entry["details"])
    spaces = [namespace] if namespace is not None else sorted(set(store.namespaces()) | {ns for ns, _ in expected})
    for ns in spaces:
        for rec in store.list_records(ns, ALL_RECORDS):
            if is_canary(rec):
                expected.setdefault((ns, rec.id), _sha(rec.metadata[CANARY_KEY]))
    out = []
    for (ns, rid), sha in sorted(expected.items()):
        found = store.get(ns, [rid])
        out.append(_status(ns, rid, sha, found[0] if found else None))
    return CanaryReport(tuple(out))


def _sha(details: Any) -> str | None:
    value = details.get("sha256") if isinstance(details, dict) else None
    return value if isinstance(value, str) else None


def _status(namespace: str, record_id: str, sha: str | None, rec: MemoryRecord | None) -> CanaryStatus:
    if rec is None:
        return CanaryStatus(namespace, record_id, "missing", "not in the store (purged)")
    if sha is None or digest(rec.content) != sha:
        return CanaryStatus(namespace, record_id, "changed", "content differs from the planted canary")
    if rec.superseded_by is not None:
        return CanaryStatus(namespace, record_id, "changed", f"superseded by {rec.superseded_by}")
    if rec.tier is Tier.ARCHIVE:
        return CanaryStatus(namespace, record_id, "archived", "moved to the archive tier")
    return CanaryStatus(namespace, record_id, "held")
