"""Closing an open conflict (:mod:`retain.safety.conflicts`): :func:`resolve`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retain.errors import InvalidInput, RecordNotFound
from retain.record import MemoryRecord, MemoryType, Tier
from retain.safety.conflicts import OPEN, RESOLVED, Conflict, Resolution, conflict_from_edge, edges_of
from retain.store import AppendAudit, AuditEntry, Edge, EdgeType, PutEdges, PutRecords, RequireUnchanged
from retain.store.edges import check_edge

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["resolve"]


def resolve(
    core: Core, namespace: str, conflict_id: str, keep: Resolution | str, *, actor: str, reason: str
) -> Conflict:
    """Close the open conflict ``conflict_id`` (``"<new id>:<old id>"``) keeping ``keep``; audited as
    "resolve_conflict" (and "supersede" when the new record retires the old one), in one transaction.

    Returns the conflict as closed.

    Raises:
        InvalidInput: malformed id, unknown ``keep``, or the conflict is not open.
        RecordNotFound: no such conflict in ``namespace``.
        Forbidden: ``keep="new"`` retires a protected record (hard constraint, pinned) and ``actor``
            is not trusted (audited; nothing changed).
        WriteConflict: another writer changed one of the records meanwhile; nothing written.
    """
    from retain.safety import integrity

    new_id, sep, old_id = conflict_id.partition(":") if isinstance(conflict_id, str) else ("", "", "")
    if not sep or not new_id or not old_id:
        raise InvalidInput(f"conflict_id: expected '<new id>:<old id>', got {conflict_id!r}")
    try:
        how = Resolution(keep)
    except ValueError:
        raise InvalidInput(f"keep: one of {', '.join(r.value for r in Resolution)}, got {keep!r}") from None
    edges = [e for e in edges_of(core.store, namespace, [new_id]) if e.src == new_id and e.dst == old_id]
    if not edges:
        raise RecordNotFound(f"no conflict {conflict_id} in namespace {namespace!r}")
    edge = edges[0]
    if edge.metadata.get("status") != OPEN:
        raise InvalidInput(f"conflict {conflict_id} is already {edge.metadata.get('status')}")
    records = {r.id: r for r in core.store.get(namespace, [new_id, old_id])}
    new, old = records.get(new_id), records.get(old_id)
    if new is None or old is None:
        raise RecordNotFound(f"conflict {conflict_id}: a record of it is gone")
    writes: list[MemoryRecord] = []
    audit = [
        AuditEntry(namespace, "resolve_conflict", old_id, actor, reason, details={"keep": how.value, "new": new_id})
    ]
    if how is Resolution.NEW:
        integrity.check_actor(core, "update", [old], namespace=namespace, actor=actor, reason=reason)
        tier = Tier.DYNAMIC if old.tier is Tier.CORE and not old.pinned else old.tier
        writes.append(old.evolve(superseded_by=new_id, tier=tier))
        if old.type is MemoryType.HARD_CONSTRAINT and new.type is not MemoryType.HARD_CONSTRAINT:
            writes.append(
                new.evolve(type=MemoryType.HARD_CONSTRAINT, tier=Tier.CORE, supersedes=new.supersedes or old_id)
            )
        elif new.supersedes is None:
            writes.append(new.evolve(supersedes=old_id))
        audit.append(
            AuditEntry(namespace, "supersede", old_id, actor, "conflict resolved", details={"superseded_by": new_id})
        )
    closed = Edge(
        namespace,
        new_id,
        old_id,
        EdgeType.CONFLICTS_WITH,
        weight=edge.weight,
        created_at=edge.created_at,
        metadata={**edge.metadata, "status": RESOLVED, "resolution": how.value},
    )
    check_edge(closed)
    core.invalidate(namespace)
    core.store.batch(
        [
            RequireUnchanged(namespace, new_id, new.tier, new.superseded_by),
            RequireUnchanged(namespace, old_id, old.tier, old.superseded_by),
            *([PutRecords(tuple(writes))] if writes else []),
            PutEdges((closed,)),
            *(AppendAudit(a) for a in audit),
        ]
    )
    after = {**records, **{r.id: r for r in writes}}
    resolved = conflict_from_edge(closed, after)
    assert resolved is not None
    return resolved
