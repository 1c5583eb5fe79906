"""Snapshots of a namespace (:func:`snapshot`) and their difference (:func:`diff`): ids, content
hashes and retention fields of every record, never content, so two points in time can be compared
after the fact. Re-exported by :mod:`retain.safety.audit`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from retain.errors import InvalidInput
from retain.record import Tier, utc, utcnow, validate_namespace
from retain.store import ALL_RECORDS, Store

__all__ = ["SNAPSHOT_FIELDS", "SNAPSHOT_FORMAT", "HasStore", "Snapshot", "SnapshotDiff", "diff", "snapshot"]

SNAPSHOT_FIELDS: tuple[str, ...] = (
    "content_hash",
    "tier",
    "type",
    "importance",
    "priority",
    "pinned",
    "superseded_by",
    "token_count",
)
"""The per-record fields a :class:`Snapshot` keeps (no content, no embedding)."""

SNAPSHOT_FORMAT = "retain-snapshot/1"


# --- snapshots ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one namespace held at one moment, without content.

    Attributes:
        taken_at: when the snapshot was taken (UTC).
        namespace: the namespace.
        records: ``{id: {field: value}}`` for every record (archived and superseded included), with
            the fields :data:`SNAPSHOT_FIELDS`; ``tier`` and ``type`` as their string values.
    """

    taken_at: datetime
    namespace: str
    records: dict[str, dict[str, Any]]

    def to_json(self) -> str:
        """JSON text (UTF-8 characters literal, records sorted by id); read back by :meth:`from_json`."""
        doc = {
            "format": SNAPSHOT_FORMAT,
            "namespace": self.namespace,
            "taken_at": self.taken_at.isoformat(),
            "records": {rid: self.records[rid] for rid in sorted(self.records)},
        }
        return json.dumps(doc, ensure_ascii=False, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        """Parse :meth:`to_json` output.

        Raises:
            InvalidInput: not JSON, another format, or a missing / mistyped field (named).
        """
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise InvalidInput(f"snapshot: not valid JSON ({exc})") from exc
        if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            raise InvalidInput(f"snapshot: format must be {SNAPSHOT_FORMAT!r}, got {got!r}")
        namespace = validate_namespace(doc.get("namespace"))
        if not isinstance(doc.get("taken_at"), str):
            raise InvalidInput("snapshot: taken_at must be an ISO 8601 string")
        taken_at = utc(doc["taken_at"], field_name="snapshot: taken_at")
        records = doc.get("records")
        if not isinstance(records, dict):
            raise InvalidInput("snapshot: records must be an object {id: fields}")
        for rid, fields in records.items():
            if not isinstance(fields, dict):
                raise InvalidInput(f"snapshot: records[{rid!r}] must be an object")
            absent = [f for f in SNAPSHOT_FIELDS if f not in fields]
            if absent:
                raise InvalidInput(f"snapshot: records[{rid!r}] lacks {', '.join(absent)}")
        assert taken_at is not None
        return cls(taken_at=taken_at, namespace=namespace, records=records)


@dataclass(frozen=True, slots=True)
class SnapshotDiff:
    """What changed between two snapshots ``a`` (before) and ``b`` (after).

    Attributes:
        added: ids in ``b`` only (new records and new versions), sorted.
        removed: ids in ``a`` only (purged), sorted.
        archived: ids whose tier moved into ``archive``, sorted.
        restored: ids whose tier moved out of ``archive``, sorted.
        changed: ``{id: {field: (before, after)}}`` for every record in both whose fields differ
            (content_hash = content changed, priority, importance, superseded_by, pinned, tier, ...);
            archived and restored records appear here too, with their ``tier`` change.
    """

    added: list[str]
    removed: list[str]
    archived: list[str]
    restored: list[str]
    changed: dict[str, dict[str, tuple[Any, Any]]]

    @property
    def priority_changed(self) -> dict[str, tuple[Any, Any]]:
        """``{id: (priority before, after)}`` for records in both snapshots whose priority changed."""
        return {rid: fields["priority"] for rid, fields in self.changed.items() if "priority" in fields}

    @property
    def is_empty(self) -> bool:
        """True when the two snapshots hold the same records with the same fields."""
        return not (self.added or self.removed or self.changed)


class HasStore(Protocol):
    """Anything holding a set-up store in ``store`` (a :class:`~retain.Memory`)."""

    @property
    def store(self) -> Store: ...


def snapshot(memory: HasStore | Store, namespace: str) -> Snapshot:
    """Snapshot every record of ``namespace`` (archive and superseded versions included).

    Args:
        memory: a :class:`~retain.Memory` (anything with a ``store``), or a set-up
            :class:`~retain.store.Store` (no encoder needed).

    Raises:
        InvalidInput: bad namespace.
    """
    validate_namespace(namespace)
    store = memory if isinstance(memory, Store) else memory.store
    taken_at = utcnow()
    records = {
        r.id: {
            "content_hash": r.content_hash,
            "tier": r.tier.value,
            "type": r.type.value,
            "importance": r.importance,
            "priority": r.priority,
            "pinned": r.pinned,
            "superseded_by": r.superseded_by,
            "token_count": r.token_count,
        }
        for r in store.list_records(namespace, ALL_RECORDS)
    }
    return Snapshot(taken_at=taken_at, namespace=namespace, records=records)


def diff(a: Snapshot, b: Snapshot) -> SnapshotDiff:
    """Compare snapshot ``a`` (before) with ``b`` (after); see :class:`SnapshotDiff`. Pure."""
    before, after = a.records, b.records
    common = sorted(before.keys() & after.keys())
    archive = Tier.ARCHIVE.value
    changed: dict[str, dict[str, tuple[Any, Any]]] = {}
    for rid in common:
        x, y = before[rid], after[rid]
        names = [*SNAPSHOT_FIELDS, *sorted((x.keys() | y.keys()) - set(SNAPSHOT_FIELDS))]
        delta = {f: (x.get(f), y.get(f)) for f in names if x.get(f) != y.get(f)}
        if delta:
            changed[rid] = delta
    return SnapshotDiff(
        added=sorted(after.keys() - before.keys()),
        removed=sorted(before.keys() - after.keys()),
        archived=[r for r in common if before[r].get("tier") != archive and after[r].get("tier") == archive],
        restored=[r for r in common if before[r].get("tier") == archive and after[r].get("tier") != archive],
        changed=changed,
    )
