"""Supersede on write: each update among new records linked to the current records it replaces, with
caution for hard constraints (a weak or untrusted update opens a conflict instead), moved here from
:mod:`retain.ingest.draft` to keep each module small."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from retain.record import MemoryRecord, MemoryType, Tier
from retain.store import AuditEntry, Edge, Store

if TYPE_CHECKING:
    from retain.config import MemoryConfig
    from retain.ingest.conflict import ConflictDecision

__all__ = ["supersede"]


def supersede(
    store: Store,
    namespace: str,
    fresh: list[MemoryRecord],
    actor: str,
    config: MemoryConfig,
    *,
    typed: Collection[str] = (),
) -> tuple[list[MemoryRecord], list[MemoryRecord], list[AuditEntry], list[Edge]]:
    """Link each update among ``fresh`` to the records it supersedes. Returns (fresh with links
    set, stored records now superseded, "supersede" and "conflict" audit entries, open-conflict edges).

    With the conflict model (``config.conflict_model``; by default the shipped one when it fits the records'
    encoder, else the rules: :meth:`MemoryConfig.resolved_conflict_model`) a new record may retire several
    records (each current statement of its slot; its ``supersedes`` names the likeliest) and may open conflicts
    (:mod:`retain.safety.conflicts`). A record that supersedes a hard constraint is itself a hard constraint
    (the corrected limit), unless its caller gave a type (``typed`` ids): it takes the type and the core tier.
    An actor outside ``config.trusted_actors`` never supersedes a hard constraint or a pinned record: the
    proposal is refused, audited as a refused "supersede", and recorded as an open conflict with that actor.
    Without the model, a record without an explicit correction (:func:`retain.text.cues.explicit_cues`) never
    supersedes a hard constraint either: :func:`~retain.ingest.detect.find_updates` holds the proposal back and
    it is audited as a refused "supersede" too (the constraint stays current and mandatory)."""
    from retain.ingest.conflict import Relation
    from retain.ingest.detect import find_updates

    model = config.resolved_conflict_model(next((r.encoder for r in fresh if r.embedding is not None), None))
    found = find_updates(
        store, namespace, fresh, policy=config.conflict_policy, judge=config.conflict_judge, model=model
    )
    refused: list[AuditEntry] = [
        AuditEntry(
            namespace,
            "supersede",
            d.held.target.id,
            actor,
            "hard constraint kept: no explicit correction",  # no content: values and cues stay out
            details={"outcome": "refused", "proposed_by": new.id, "signals": list(d.held.signals)},
        )
        for new, d in found
        if d.held is not None and d.held.target is not None
    ]
    opened = [(new, d) for new, d in found if d.relation is Relation.CONFLICT and d.target is not None]
    found = [(new, d) for new, d in found if d.relation is Relation.UPDATE and d.target is not None]
    if actor not in config.trusted_actors:  # an untrusted writer never retires a protected record
        found, refused_now, opened_now = _untrusted(namespace, actor, found)
        refused += refused_now
        opened += opened_now
    links: dict[str, list[str]] = {}
    back: dict[str, str] = {}
    for new, d in found:
        assert d.target is not None
        if d.target.id not in back:
            links.setdefault(new.id, []).append(d.target.id)
            back[d.target.id] = new.id
    fresh_ids = {r.id for r in fresh}
    retire = list(
        {d.target.id: d.target for _, d in found if d.target is not None and d.target.id not in fresh_ids}.values()
    )
    hard_targets = {
        d.target.id for _, d in found if d.target is not None and d.target.type is MemoryType.HARD_CONSTRAINT
    }

    def relink(r: MemoryRecord) -> MemoryRecord:
        if r.id in back:  # superseded: history now, no longer mandatory unless pinned
            tier = Tier.DYNAMIC if r.tier is Tier.CORE and not r.pinned else r.tier
            r = r.evolve(superseded_by=back[r.id], tier=tier)
        if r.id not in links:
            return r
        r = r.evolve(supersedes=links[r.id][0])
        if hard_targets & set(links[r.id]) and r.id not in typed:
            r = r.evolve(type=MemoryType.HARD_CONSTRAINT, tier=Tier.CORE)
        return r

    audit = [
        AuditEntry(
            namespace,
            "supersede",
            d.target.id,
            actor,
            f"update detected on add ({'+'.join(d.signals)})",  # no content: values and cues stay out
            details={"superseded_by": new.id, "signals": list(d.signals), "n_cues": len(d.cues), **d.scores()},
        )
        for new, d in found
        if d.target is not None and back.get(d.target.id) == new.id
    ]
    edges, opening = _conflicts(namespace, actor, opened, retired=set(back))
    return [relink(r) for r in fresh], [relink(r) for r in retire], audit + opening + refused, edges


def _untrusted(
    namespace: str, actor: str, found: list[tuple[MemoryRecord, ConflictDecision]]
) -> tuple[list[tuple[MemoryRecord, ConflictDecision]], list[AuditEntry], list[tuple[MemoryRecord, ConflictDecision]]]:
    """Split an untrusted actor's updates: (those it may make, refused "supersede" entries for the
    protected records it proposed to retire, those proposals, which become open conflicts)."""
    keep, refused, opened = [], [], []
    for new, d in found:
        assert d.target is not None
        if d.target.pinned or d.target.type is MemoryType.HARD_CONSTRAINT:
            refused.append(
                AuditEntry(
                    namespace,
                    "supersede",
                    d.target.id,
                    actor,
                    "untrusted actor: protected record kept",
                    details={"outcome": "refused", "proposed_by": new.id, "signals": list(d.signals)},
                )
            )
            opened.append((new, d))
        else:
            keep.append((new, d))
    return keep, refused, opened


def _conflicts(
    namespace: str, actor: str, opened: list[tuple[MemoryRecord, ConflictDecision]], *, retired: set[str]
) -> tuple[list[Edge], list[AuditEntry]]:
    """The open-conflict edges and "conflict" audit entries of ``opened`` (one per pair; none against
    a record this add retires)."""
    from retain.safety.conflicts import conflict_edge

    edges: list[Edge] = []
    audit: list[AuditEntry] = []
    for new, d in opened:
        assert d.target is not None
        if d.target.id in retired or any(e.src == new.id and e.dst == d.target.id for e in edges):
            continue
        reason = f"conflict on add: {d.reason.split(' (')[0]}"
        edges.append(
            conflict_edge(
                namespace, new.id, d.target.id, actor=actor, probability=d.probability, signals=d.signals, reason=reason
            )
        )
        details = {"with": new.id, "outcome": "open", "signals": list(d.signals), **d.scores()}
        audit.append(AuditEntry(namespace, "conflict", d.target.id, actor, reason, details=details))
    return edges, audit


# --- importance on arrival (EMBER) --------------------------------------------------------
