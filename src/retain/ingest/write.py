"""The write path over a :class:`~retain.core.Core`: add, update, feedback, delete.

:func:`add_many` validates every item and drafts it (:mod:`retain.ingest.draft`), then writes one
attempt (:func:`write_drafts`) under :func:`~retain.store.retry_on_conflict`: duplicates are
looked up, the rest embedded, merged into paraphrases, linked to the records they supersede, given
edges (:mod:`retain.retrieval.graph`) and an importance (EMBER's utility model), offered to the budget
(:meth:`~retain.core.Core.apply_budget`) and stored in one transaction with their audit entries,
each record read under a write guard so a concurrent writer's change is never overwritten.
:func:`update`, :func:`delete` and :func:`delete_all` re-check what they read the same way.
``Memory.add``, ``add_many``, ``update``, ``feedback``, ``delete`` and ``delete_all`` delegate here.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retain.errors import HotSetChanged, InvalidInput
from retain.ingest.directives import apply_directives
from retain.ingest.draft import (
    NewMemory,
    check_actor_name,
    coerce_item,
    draft,
    draft_update,
    look_up_duplicates,
    merge_paraphrases,
    nearest_held,
    predecessor,
    score_utility,
)
from retain.ingest.supersession import supersede
from retain.record import MemoryRecord, MemoryType, Tier, utcnow, validate_namespace
from retain.retrieval.graph import check_derived, edges_on_add
from retain.safety import integrity
from retain.safety.observe import added, observed, superseded
from retain.safety.redaction import scrub
from retain.state.candidates import content_terms
from retain.store import (
    AppendAudit,
    AuditEntry,
    Edge,
    EdgeType,
    PutEdges,
    PutRecords,
    RecordFilter,
    RequireCurrent,
    RequireHot,
    RequireUnchanged,
    RequireUnique,
    retry_on_conflict,
)
from retain.text.values import canonical_values

if TYPE_CHECKING:
    from retain.core import Core

from retain.retention.expiry import expire

__all__ = ["add_many", "delete", "delete_all", "feedback", "update", "write_drafts"]


@observed("add", result=added)
def add_many(
    core: Core, items: Iterable[NewMemory | Mapping[str, Any]], *, namespace: str, actor: str = "user"
) -> list[str]:
    """Store several memories in one transaction (embedded in batches); one id per item.

    Every item is validated before anything is written: one bad item stores none of them.

    With ``config.dedupe`` the duplicate check is atomic with the write: each new record is
    stored under a :class:`~retain.store.RequireUnique` guard in the write transaction, so
    writers on other connections or processes adding the same text at once store it once. When
    another writer stored one of the texts after this call looked, nothing of this call is
    written and it starts over from the look-up (it then returns that record's id), up to
    :data:`~retain.store.WRITE_ATTEMPTS` times. The existing records the look-up found are guarded the same
    way (:class:`~retain.store.RequireUnchanged`): one deleted or superseded meanwhile is
    neither restored from a stale copy nor returned as the id of an item; the call starts over.
    So are the records it supersedes, merges paraphrases into or evicts: none deleted or
    superseded by another writer meanwhile is written back.

    Raises:
        InvalidInput, TextTooLong: as :meth:`retain.Memory.add`, naming the index of the bad item.
        WriteConflict: (an InvalidInput) other writers stored texts of this call
            (DuplicateContent) or changed records it found again on each of
            :data:`~retain.store.WRITE_ATTEMPTS` attempts; nothing was written.
    """
    validate_namespace(namespace)
    check_actor_name(actor)
    parsed = [coerce_item(item, i) for i, item in enumerate(items)]
    used = [check_derived(item.derived_from, i) for i, item in enumerate(parsed)]
    pinned_items = [i for i, item in enumerate(parsed) if item.pinned is True]
    if pinned_items:
        integrity.check_pin_on_add(core, pinned_items, namespace=namespace, actor=actor)
    drafts: list[list[MemoryRecord]] = []
    for i, item in enumerate(parsed):
        try:
            drafts.append(draft(item, namespace, core.config))
        except InvalidInput as exc:
            raise type(exc)(f"item {i}: {exc}") from exc
    expire(core, namespace)  # expired records leave hot memory (to the archive, audited) before it is counted
    # another writer may store one of these texts, or change a record found, between look-up and write
    ids = retry_on_conflict(lambda: write_drafts(core, namespace, actor, parsed, drafts, used))
    apply_directives(core, namespace, actor, parsed, ids)  # memory cues, forget requests, confirmations, phases
    return ids


@dataclass
class _Batch:
    """What one attempt of :func:`add_many` writes: new records, records added again out of the archive,
    paraphrase merges (newcomer, updated existing record, reason), superseded records, records the
    budget moved to the archive, audit entries (supersede, conflict and evict; add, restore and merge
    entries are made at the end), edges and the open-conflict edges among them."""

    fresh: list[MemoryRecord]
    restored: list[MemoryRecord]
    merges: list[tuple[MemoryRecord, MemoryRecord, str]] = field(default_factory=list)
    retired: list[MemoryRecord] = field(default_factory=list)
    moved: list[MemoryRecord] = field(default_factory=list)
    hot_guard: list[RequireHot] = field(default_factory=list)
    superseding: list[AuditEntry] = field(default_factory=list)
    evictions: list[AuditEntry] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    conflicts: list[Edge] = field(default_factory=list)


def write_drafts(
    core: Core,
    namespace: str,
    actor: str,
    parsed: Sequence[NewMemory],
    drafts: Sequence[list[MemoryRecord]],
    used: Sequence[tuple[str, ...]],
) -> list[str]:
    """One attempt of :func:`add_many` over validated ``drafts``: look up duplicates, then
    write the rest in one transaction, each deduplicated new record under a
    :class:`~retain.store.RequireUnique` guard and each existing record found under a
    :class:`~retain.store.RequireUnchanged` one; the stored records it supersedes, merges into or
    evicts (written back as changed copies of what it read) must still be there and current. Raises
    WriteConflict (nothing written) when a guard fails."""
    explicit = {d[0].id for d, item in zip(drafts, parsed, strict=True) if item.importance is not None}
    typed = {r.id for parts, item in zip(drafts, parsed, strict=True) if item.type is not None for r in parts}
    ids, fresh, restored, guards, held = look_up_duplicates(core.store, namespace, drafts, dedupe=core.config.dedupe)
    batch = _Batch(fresh=_learned_types(core, core.embed(fresh), typed) if fresh else [], restored=restored)
    _relate(core, namespace, actor, batch, ids, typed)
    derived = {rid: d for rid, d in zip(ids, used, strict=True) if d}
    batch.edges = edges_on_add(core.store, namespace, batch.fresh, derived=derived, config=core.config.graph)
    batch.edges += batch.conflicts  # open conflicts are written whatever the graph's switches
    if batch.fresh or batch.restored or batch.merges:
        _budget_and_store(core, namespace, actor, batch, explicit, guards, held)
    elif batch.edges:  # every item was already held: only its derived_from edges are new
        core.store.put([], edges=batch.edges, require=held)
    return ids


def _learned_types(core: Core, records: list[MemoryRecord], typed: set[str]) -> list[MemoryRecord]:
    """``records`` with the learned classifier's type where the caller gave none (the draft's rule type
    otherwise stands): one sparse and one (10, d) x (d,) product per record, the embedding used only
    when the core's encoder is the one the model was fitted with."""
    model = core.type_model
    if model is None:
        return records
    own = model.encoder == core.encoder.name
    out = []
    for r in records:
        if r.id in typed:
            out.append(r)
            continue
        mtype = model.predict(r.content, r.role, r.embedding if own else None)
        tier = Tier.CORE if r.pinned or mtype is MemoryType.HARD_CONSTRAINT else Tier.DYNAMIC
        out.append(r if mtype is r.type else r.evolve(type=mtype, tier=tier))
    return out


def _relate(core: Core, namespace: str, actor: str, batch: _Batch, ids: list[str], typed: set[str]) -> None:
    """Merge paraphrases (their ids in ``ids`` become the existing record's) and link supersedes."""
    if batch.fresh and core.config.merge_paraphrases:
        batch.fresh, batch.merges = merge_paraphrases(core.store, namespace, batch.fresh, core.config.conflict_policy)
        for new, old, _ in batch.merges:
            ids[ids.index(new.id)] = old.id
    if batch.fresh and core.config.supersede:
        batch.fresh, batch.retired, batch.superseding, batch.conflicts = supersede(
            core.store, namespace, batch.fresh, actor, core.config, typed=typed
        )


HOT_ATTEMPTS = 25
"""Most times :func:`write_drafts` retakes only its budget decision (a fresh read of the hot memory,
no re-embedding) when the write finds the hot memory changed by another writer
(:class:`~retain.errors.HotSetChanged`); a conflict on anything else starts the whole attempt over."""


def _budget_and_store(
    core: Core,
    namespace: str,
    actor: str,
    batch: _Batch,
    explicit: set[str],
    guards: Mapping[str, RequireUnique],
    held: Sequence[RequireUnchanged],
) -> None:
    """Decide the budget and write ``batch``; when only the hot memory changed meanwhile, decide
    again on the committed one (jittered back-off) up to :data:`HOT_ATTEMPTS` times."""
    fresh, restored = batch.fresh, batch.restored
    for attempt in range(HOT_ATTEMPTS):
        batch.fresh, batch.restored = fresh, restored
        _score_and_budget(core, namespace, actor, batch, explicit)
        try:
            _store(core, namespace, actor, batch, guards, held)
            return
        except HotSetChanged:
            if attempt == HOT_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.0, 0.001 * min(2**attempt, 32)))


def _score_and_budget(core: Core, namespace: str, actor: str, batch: _Batch, explicit: set[str]) -> None:
    """Set the new records' importance (EMBER utility) and offer them and the restored ones to the budget."""
    hot = core.hot(namespace)
    batch.fresh = score_utility(
        core.utility,
        core.store,
        namespace,
        batch.fresh,
        explicit=explicit,
        mean_tokens=hot.mean_tokens if hot is not None else None,
        dim=core.encoder.dim,
    )
    if core.budget is None:
        return
    restored_ids = {r.id for r in batch.restored}
    gone = frozenset(r.id for r in batch.retired)
    if gone:
        core.invalidate(namespace)
    arrivals, batch.moved, batch.evictions, guard = core.apply_budget(
        namespace, [*batch.fresh, *batch.restored], actor=actor, trigger="add", exclude=gone
    )
    batch.hot_guard = [guard]
    batch.fresh = [r for r in arrivals if r.id not in restored_ids]
    batch.restored = [r for r in arrivals if r.id in restored_ids]


def _audit(namespace: str, actor: str, batch: _Batch) -> list[AuditEntry]:
    """The add, restore and merge entries of ``batch``."""
    audit = [
        AuditEntry(
            namespace=namespace,
            op="add",
            record_id=r.id,
            actor=actor,
            details={
                "type": r.type.value,
                "tokens": r.token_count,
                "tier": r.tier.value,
                "importance": round(r.importance, 6),
                "content_hash": r.content_hash,  # what `retain audit verify` checks the stored content against
            },
        )
        for r in batch.fresh
    ]
    audit += [
        AuditEntry(namespace, "restore", r.id, actor, "added again", details={"tier_after": r.tier.value})
        for r in batch.restored
    ]
    audit += [
        AuditEntry(namespace, "merge", old.id, actor, scrub(reason), details={"merged_source": scrub(new.source)})
        for new, old, reason in batch.merges
    ]
    return audit


def _store(
    core: Core,
    namespace: str,
    actor: str,
    batch: _Batch,
    guards: Mapping[str, RequireUnique],
    held: Sequence[RequireUnchanged],
) -> None:
    """Write ``batch`` in one guarded transaction (the hot-set cache is invalidated when it fails)."""
    merged_records = list({old.id: old for _, old, _ in batch.merges}.values())
    try:
        core.store.put(
            [*batch.fresh, *batch.restored, *batch.moved, *merged_records, *batch.retired],
            [*_audit(namespace, actor, batch), *batch.superseding, *batch.evictions],
            batch.edges,
            require=[
                *batch.hot_guard,  # the budget's decision holds only on the hot memory it was made on
                *(guards[r.id] for r in batch.fresh if r.id in guards),
                *held,
                # stored records this add rewrites from the copies it read: deleted or
                # superseded since, they must not be written back (tiers: as read, if known)
                *(RequireUnchanged(namespace, r.id, r.tier) for r in merged_records),
                *(RequireUnchanged(namespace, r.id) for r in [*batch.retired, *batch.moved]),
            ],
        )
    except BaseException:
        core.invalidate(namespace)
        raise
    if core.state_scoring:  # the state scorer's terms and values, memoised by text, worked
        for r in batch.fresh:  # out once here rather than by the first search with a state that reads r
            content_terms(r.content)  # (~5 us a record)
            canonical_values(r.content)  # (~60-140 us a record: most of a cold state search)


def feedback(core: Core, id: str, *, namespace: str, used: bool, actor: str = "agent") -> MemoryRecord:
    """Report whether a retrieved memory was actually used (EMBER's online adaptation).

    The utility model learns from the example (one online step; the adapted model lives in this
    process, save it with its ``to_json``), the record's ``importance`` is re-scored, a used
    record's ``access_count`` and ``last_accessed`` (UTC) are updated and it moves to the recent
    end of the LRU order. Recorded in the audit log as "feedback". Returns the updated record.

    Raises:
        RecordNotFound: no record ``id`` in ``namespace``.
        InvalidInput: ``used`` is not a bool.
        WriteConflict: another writer deleted, superseded or moved the record meanwhile; the
            record is not written (the in-process model has taken its step).
    """
    if not isinstance(used, bool):
        raise InvalidInput(f"used: must be a bool, got {used!r}")
    record = core.get(id, namespace=namespace)
    now = utcnow()
    importance = record.importance
    model = core.utility
    if model is not None:
        from retain.retention.utility import UtilityContext, check_scores

        hot = core.hot(namespace)
        context = UtilityContext(
            held=nearest_held(core.store, namespace, record, core.encoder.dim, exclude=record.id),
            previous=predecessor(core.store, record),
            mean_length=hot.mean_tokens if hot is not None else None,
        )
        model.feedback(record, context, used)
        scored = check_scores(model.score([record], [context]), getattr(model, "name", "?"), 1)
        importance = float(scored[0])
    changes: dict[str, Any] = {"importance": importance}
    if used:
        changes.update(access_count=record.access_count + 1, last_accessed=now)
    updated = record.evolve(**changes)
    entry = AuditEntry(
        namespace,
        "feedback",
        id,
        actor,
        "used" if used else "not used",
        details={"importance_before": round(record.importance, 6), "importance_after": round(importance, 6)},
    )
    # the record as read: deleted or superseded by another writer since, it is not written back
    core.store.put([updated], [entry], require=[RequireUnchanged(namespace, id, record.tier, record.superseded_by)])
    hot_set = core.hot(namespace)
    if used and hot_set is not None:
        hot_set.touch(id, now.timestamp())
    return updated


@observed("supersede", result=superseded)
def update(
    core: Core, id: str, content: str, *, namespace: str, actor: str = "user", reason: str = "", **fields: Any
) -> str:
    """:meth:`retain.Memory.update` (its docstring describes ``fields``, the result and the errors).

    WriteConflict is raised when, on every attempt, another writer deleted, superseded or moved a
    record the budget evicted (or moved the old version) between the read and the write; nothing
    is written. Each attempt reads again (up to :data:`~retain.store.WRITE_ATTEMPTS`).
    """
    reason = scrub(reason)  # the audit log never holds a raw secret
    return retry_on_conflict(lambda: _update_once(core, id, content, namespace, actor, reason, fields))


def _update_once(
    core: Core, id: str, content: str, namespace: str, actor: str, reason: str, fields: Mapping[str, Any]
) -> str:
    old = core.get(id, namespace=namespace)
    if not old.is_current:
        raise InvalidInput(f"id {id} is superseded by {old.superseded_by}; update the current version")
    integrity.check_actor(core, "update", [old], namespace=namespace, actor=actor, reason=reason)
    new = draft_update(old, content, fields, core.config)
    (new,) = core.embed([new])
    retired = old.evolve(superseded_by=new.id)
    moved: list[MemoryRecord] = []
    evictions: list[AuditEntry] = []
    hot_guard: list[RequireHot] = []
    if core.budget is not None:  # the new version is checked against the budget like an add
        core.invalidate(namespace)
        (new,), moved, evictions, guard = core.apply_budget(
            namespace, [new], actor=actor, trigger="update", exclude=frozenset({old.id})
        )
        hot_guard = [guard]
    audit = [
        AuditEntry(namespace, "supersede", old.id, actor, reason, details={"superseded_by": new.id}),
        AuditEntry(
            namespace, "update", new.id, actor, reason, details={"supersedes": old.id, "content_hash": new.content_hash}
        ),
        *evictions,
    ]
    link = Edge(namespace, new.id, old.id, EdgeType.SUPERSEDES, metadata={"on": "update"})
    try:  # RequireCurrent re-checks inside the write transaction: a concurrent update loses cleanly
        core.store.batch(
            [
                RequireCurrent(namespace, old.id),
                *hot_guard,
                # written back whole: the old version moved, or a record evicted for the new one
                # deleted, superseded or moved by another writer since it was read, must not come
                # back (or be made current again) from the stale copy
                RequireUnchanged(namespace, old.id, old.tier),
                *(RequireUnchanged(namespace, r.id) for r in moved),
                PutRecords((retired, new, *moved)),
                *([PutEdges((link,))] if core.config.graph.edges_on_write else []),
                *(AppendAudit(a) for a in audit),
            ]
        )
    except BaseException:  # a WriteConflict too: the next attempt reads the store as it is now
        core.invalidate(namespace)
        raise
    return new.id


def delete(core: Core, id: str, *, namespace: str, actor: str = "user", reason: str = "") -> int:
    """Purge a memory, every version of it and every part of a split text, from every table,
    index and cache. The audit log keeps only the fact of deletion (ids, no content).

    Returns the number of records purged.

    The versions are re-checked in the purge's transaction: when another writer adds a version
    (or pins or moves one) between the look-up and the purge, the delete starts over and purges
    that version too (up to :data:`~retain.store.WRITE_ATTEMPTS` times).

    Raises:
        RecordNotFound: no record ``id`` in ``namespace``.
        Forbidden: ``actor`` is not trusted and a version is protected (audited; nothing purged).
        WriteConflict: other writers changed the versions on every attempt; nothing purged.
    """
    why = scrub(reason)

    def once() -> int:
        record = core.get(id, namespace=namespace)
        ids = integrity.family(core.store, record)
        members = core.store.get(namespace, ids)
        integrity.check_actor(core, "delete", members, namespace=namespace, actor=actor, reason=why)
        audit = [AuditEntry(namespace, "delete", rid, actor, why, details={"outcome": "done"}) for rid in ids]
        # the family as read: a current version superseded (a new version written), pinned or moved by
        # another writer since would leave that new version behind, or purge what the check did not see
        guards = [RequireUnchanged(namespace, r.id, r.tier) for r in members if r.is_current]
        core.invalidate(namespace)
        return core.store.delete(namespace, ids, audit, require=guards)

    return retry_on_conflict(once)


def delete_all(core: Core, *, namespace: str, actor: str = "user", reason: str = "") -> int:
    """Purge every record of ``namespace``; see :meth:`retain.Memory.delete_all`."""
    validate_namespace(namespace)
    held = core.store.list_records(namespace, RecordFilter(types=(MemoryType.HARD_CONSTRAINT,), tiers=None))
    held += core.store.list_records(namespace, RecordFilter(tiers=(Tier.CORE,)))
    protected = list({r.id: r for r in held}.values())
    integrity.check_actor(core, "delete_all", protected, namespace=namespace, actor=actor, reason=scrub(reason))
    audit = [AuditEntry(namespace, "delete_all", None, actor, scrub(reason))]
    core.invalidate(namespace)
    return core.store.delete_namespace(namespace, audit)
