"""Integrity of the core tier: pin / unpin, actor trust, forget requests, the retention report.

A record is *protected* when it is mandatory (:func:`~retain.retention.budget.is_mandatory`): a current hard
constraint or a pinned record. Protected records live in the ``core`` tier; no budget policy evicts
them, and a hard constraint leaves ``core`` only when a newer version supersedes it.

Actors are trusted (``MemoryConfig.trusted_actors``, default ``user`` and ``admin``) or untrusted
(``tool``, ``retrieved``, ``agent`` and every other name). Only a trusted actor may add a pinned
record, or pin, unpin, update or delete a protected one. An untrusted request is refused, never silently narrowed:
``delete``, ``delete_all``, ``update``, ``pin`` and ``unpin`` raise :class:`~retain.errors.Forbidden`;
:func:`forget` (bulk) removes what it may, skips the protected records and reports them. Every
attempt, allowed or refused, is written to the audit log with the actor, the reason and the outcome
(``details["outcome"]``: "done", "refused", "unchanged", "no_match").

The functions here take a :class:`~retain.core.Core`; ``Memory.pin``, ``Memory.unpin``,
``Memory.forget`` and ``Memory.retention_report`` are thin wrappers. :func:`family` (every version
and split part of a record) is what ``delete`` and :func:`forget` purge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from retain.config import DEFAULT_TRUSTED_ACTORS
from retain.errors import Forbidden, InvalidInput
from retain.ingest.draft import check_text
from retain.record import MemoryRecord, Tier, validate_namespace
from retain.retention.budget import is_mandatory
from retain.retrieval.search import SearchRequest, search
from retain.safety.redaction import scrub
from retain.store import (
    ALL_RECORDS,
    AppendAudit,
    AuditEntry,
    DeleteRecords,
    PutRecords,
    RecordFilter,
    RequireHot,
    RequireUnchanged,
    Store,
    retry_on_conflict,
)
from retain.text.lexical import check_query

if TYPE_CHECKING:
    from retain.core import Core

__all__ = [
    "ForgetReport",
    "RetentionReport",
    "check_actor",
    "check_pin_on_add",
    "family",
    "forget",
    "is_trusted",
    "retention_report",
    "set_pinned",
]


def is_trusted(actor: str, trusted: Iterable[str] = DEFAULT_TRUSTED_ACTORS) -> bool:
    """True when ``actor`` (exact, case-sensitive name) is one of ``trusted``."""
    return actor in frozenset(trusted)


def _entry(
    namespace: str, op: str, record_id: str | None, actor: str, reason: str, outcome: str, **details: Any
) -> AuditEntry:
    return AuditEntry(namespace, op, record_id, actor, scrub(reason), details={"outcome": outcome, **details})


def check_actor(
    core: Core, op: str, records: Sequence[MemoryRecord], *, namespace: str, actor: str, reason: str
) -> None:
    """Refuse ``op`` by an untrusted ``actor`` when any of ``records`` is protected.

    The refusal is audited (one entry per protected record, ``outcome="refused"``) before raising.

    Raises:
        Forbidden: names the actor, the operation and the protected record ids.
    """
    if is_trusted(actor, core.config.trusted_actors):
        return
    guarded = [r for r in records if is_mandatory(r)]
    if not guarded:
        return
    why = reason or "untrusted actor"
    core.store.batch(
        [AppendAudit(_entry(namespace, op, r.id, actor, why, "refused", protected=_why(r))) for r in guarded]
    )
    ids = ", ".join(r.id for r in guarded)
    raise Forbidden(
        f"{op}: actor {actor!r} is not trusted and may not change protected records ({ids}); "
        f"trusted actors: {sorted(core.config.trusted_actors)}. The refusal is audited."
    )


def check_pin_on_add(core: Core, indexes: Sequence[int], *, namespace: str, actor: str) -> None:
    """Refuse new records with ``pinned=True`` from an untrusted ``actor``: a pinned record can never
    be evicted, so a tool output or a retrieved page must not be able to create one (it could fill
    the core tier). ``indexes`` are the positions of the pinned items in the batch.

    The refusal is audited (one "add" entry, ``outcome="refused"``) and nothing of the batch is written.

    Raises:
        Forbidden: names the actor and the item positions.
    """
    if is_trusted(actor, core.config.trusted_actors):
        return
    where = ", ".join(map(str, indexes))
    core.store.batch([AppendAudit(_entry(namespace, "add", None, actor, "pinned add by untrusted actor", "refused"))])
    raise Forbidden(
        f"add: actor {actor!r} is not trusted and may not create pinned records (item {where}); "
        f"trusted actors: {sorted(core.config.trusted_actors)}. Nothing was written; the refusal is audited."
    )


def family(store: Store, record: MemoryRecord) -> list[str]:
    """Ids of every version and split part connected to ``record`` (sorted): what a delete purges."""
    everything = {r.id: r for r in store.list_records(record.namespace, ALL_RECORDS)}
    successors: dict[str, list[str]] = {}
    for r in everything.values():
        if r.supersedes:
            successors.setdefault(r.supersedes, []).append(r.id)
    found, stack = set(), [record.id]
    while stack:
        rid = stack.pop()
        if rid in found or rid not in everything:
            continue
        found.add(rid)
        rec = everything[rid]
        stack.extend(x for x in (rec.supersedes, rec.superseded_by) if x)
        stack.extend(successors.get(rid, ()))
        group = rec.metadata.get("split_group")
        if group:
            stack.extend(r.id for r in everything.values() if r.metadata.get("split_group") == group)
    return sorted(found)


def _why(record: MemoryRecord) -> str:
    return "pinned" if record.pinned else "hard_constraint"


def set_pinned(core: Core, id: str, *, namespace: str, pinned: bool, actor: str, reason: str) -> MemoryRecord:
    """Pin (``pinned=True``: core tier, never evicted) or unpin (back to ``dynamic``, subject to the
    budget; a current hard constraint stays in core) the current record ``id``. Audited as "pin" /
    "unpin" with the tiers before and after. Returns the record as stored.

    Raises:
        RecordNotFound: no record ``id`` in ``namespace``.
        InvalidInput: ``id`` is superseded (pin its current version).
        Forbidden: ``actor`` is not trusted (audited).
        BudgetInfeasible: pinning would make the core tier exceed the budget; nothing is written.
        WriteConflict: another writer deleted, superseded or moved the record, or (with a budget)
            changed the hot memory the decision was made on, meanwhile; nothing is written and
            calling again decides on the store as it is.
    """
    op = "pin" if pinned else "unpin"
    record = core.get(id, namespace=namespace)
    if not record.is_current:
        raise InvalidInput(f"id {id} is superseded by {record.superseded_by}; {op} the current version")
    if not is_trusted(actor, core.config.trusted_actors):
        core.store.batch([AppendAudit(_entry(namespace, op, id, actor, reason or "untrusted actor", "refused"))])
        raise Forbidden(f"{op}: actor {actor!r} is not trusted; trusted actors: {sorted(core.config.trusted_actors)}")
    if record.pinned == pinned:
        core.store.batch([AppendAudit(_entry(namespace, op, id, actor, reason, "unchanged", tier=record.tier.value))])
        return record
    new = record.evolve(pinned=pinned)
    new = new.evolve(tier=Tier.CORE if is_mandatory(new) else Tier.DYNAMIC)
    moved: list[MemoryRecord] = []
    evictions: list[AuditEntry] = []
    hot_guard: list[RequireHot] = []
    if core.budget is not None:
        core.invalidate(namespace)
        (new,), moved, evictions, guard = core.apply_budget(
            namespace, [new], actor=actor, trigger=op, exclude=frozenset({id})
        )
        hot_guard = [guard]
    entry = _entry(namespace, op, id, actor, reason, "done", tier_before=record.tier.value, tier_after=new.tier.value)
    try:
        core.store.batch(
            [
                # the record (and those evicted) as read: deleted or changed by another writer since,
                # none is written back from a stale copy
                RequireUnchanged(namespace, id, record.tier),
                *hot_guard,
                *(RequireUnchanged(namespace, r.id) for r in moved),
                PutRecords((new, *moved)),
                AppendAudit(entry),
                *(AppendAudit(a) for a in evictions),
            ]
        )
    except BaseException:
        core.invalidate(namespace)
        raise
    return new


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """Outcome of :func:`forget`.

    Attributes:
        deleted: ids purged (every version and split part of each matched record).
        refused: ids of matched protected records an untrusted actor may not remove (kept).
        actor: who asked; trusted: whether that actor is trusted.
    """

    deleted: tuple[str, ...]
    refused: tuple[str, ...]
    actor: str
    trusted: bool


_ID_SHAPE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
"""A record id (:func:`retain.record.new_id`: a ULID, Crockford base32)."""


def forget(core: Core, query_or_id: str, *, namespace: str, actor: str, reason: str = "", k: int = 1) -> ForgetReport:
    """Forget a record by id, or the ``k`` best search hits (any tier) for a query that share a term
    with it (a BM25 match; a hit found by embedding similarity alone is never forgotten, so a query
    about something not stored forgets nothing). A string shaped like a record id (a 26-character
    ULID) that names no record is a miss, never a query.

    Each matched record is purged with all its versions and split parts, unless ``actor`` is
    untrusted and the record (or any version) is protected: then it is skipped and listed in
    ``refused``. Every match gets an audit entry "forget" with ``outcome`` "done" or "refused"; no
    match gets one entry with ``outcome="no_match"``. The query text is never written to the audit.

    Returns:
        A :class:`ForgetReport`: ``refused`` is non-empty exactly when protected matches were kept.

    The versions are re-checked in the purge's transaction (:class:`~retain.store.RequireUnchanged`):
    when another writer adds a version, pins or moves one in between, nothing is written and the
    forget starts over on the store as it is (up to :data:`~retain.store.WRITE_ATTEMPTS`).

    Raises:
        InvalidInput: empty ``query_or_id``, ``k`` < 1, bad namespace, or a query (not an id) on a store
            without lexical search.
        WriteConflict: other writers changed the matched records on every attempt; nothing purged.
    """
    validate_namespace(namespace)
    if not isinstance(query_or_id, str) or not query_or_id.strip():
        raise InvalidInput("query_or_id: required, a non-empty string")
    check_text(query_or_id, "query_or_id")
    check_query(query_or_id)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k: must be an int >= 1, got {k!r}")
    trusted = is_trusted(actor, core.config.trusted_actors)
    return retry_on_conflict(
        lambda: _forget_once(core, query_or_id, namespace=namespace, actor=actor, reason=reason, k=k, trusted=trusted)
    )


def _forget_once(
    core: Core, query_or_id: str, *, namespace: str, actor: str, reason: str, k: int, trusted: bool
) -> ForgetReport:
    targets = core.store.get(namespace, [query_or_id])
    if not targets and not _ID_SHAPE.match(query_or_id):
        if not core.store.supports_lexical:
            raise InvalidInput("forget: this store has no lexical search; forget by id")
        hits = search(core, query_or_id, namespace=namespace, request=SearchRequest(k=k, tiers=list(Tier)))
        targets = [h.record for h in hits if h.scores.get("bm25", 0.0) > 0.0]
    if not targets:
        core.store.batch([AppendAudit(_entry(namespace, "forget", None, actor, reason, "no_match"))])
        return ForgetReport((), (), actor, trusted)
    everything = {
        r.id: r for r in core.store.list_records(namespace, RecordFilter(tiers=None, include_superseded=True))
    }
    deleted: list[str] = []
    refused: list[str] = []
    audit: list[AuditEntry] = []
    for target in targets:
        versions = [i for i in family(core.store, target) if i not in deleted]
        guarded = [everything[i] for i in versions if i in everything and is_mandatory(everything[i])]
        if guarded and not trusted:
            refused.append(target.id)
            audit.append(
                _entry(
                    namespace,
                    "forget",
                    target.id,
                    actor,
                    reason or "untrusted actor",
                    "refused",
                    protected=_why(guarded[0]),
                )
            )
            continue
        deleted.extend(versions)
        audit.extend(_entry(namespace, "forget", i, actor, reason, "done", matched=target.id) for i in versions)
    core.invalidate(namespace)
    ops: list[Any] = [DeleteRecords(namespace, tuple(deleted))] if deleted else []
    # the versions as read: one written, pinned or moved by another writer since would be left behind
    # current, or purged by an actor the check would have refused
    guards = [RequireUnchanged(namespace, i, r.tier) for i in deleted if (r := everything.get(i)) and r.is_current]
    core.store.batch([*guards, *ops, *(AppendAudit(a) for a in audit)])
    return ForgetReport(tuple(deleted), tuple(refused), actor, trusted)


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """The exact optimizer's view of one namespace's current records under its budget.

    Attributes:
        namespace, policy, capacity, unit: the budget (unit "records" or "tokens").
        records: current records (every tier); hot: of them in ``core`` + ``dynamic``.
        mandatory: protected records (current hard constraints, pinned); mandatory_cost: their cost.
        used: cost of the hot records, budget units.
        held_utility: sum of the hot records' importance (predicted utility).
        objective: the optimum, the most total utility any selection meeting the constraints keeps
            (higher = better); held_utility / objective is how close the live policy is.
        exact: True when ``objective`` is proven optimal (HiGHS / DP), False for greedy.
        method: the knapsack method ("dp", "milp", "greedy", "trivial").
        slack: constraint -> slack of the optimal selection ("budget", "quota:<type>", "diversity").
        feasible: every slack >= 0.
    """

    namespace: str
    policy: str
    capacity: float
    unit: str
    records: int
    hot: int
    mandatory: int
    mandatory_cost: float
    used: float
    held_utility: float
    objective: float
    exact: bool
    method: str
    slack: dict[str, float]
    feasible: bool


def retention_report(
    core: Core,
    namespace: str,
    *,
    quotas: Mapping[str, int] | None = None,
    max_per_cluster: int | None = None,
    cluster_threshold: float = 0.92,
) -> RetentionReport:
    """Solve the namespace's retention problem exactly (knapsack policy) and report it.

    Costs are budget units (1 per record, or tokens), utility is each record's importance,
    mandatory = protected. ``quotas`` (type -> minimum kept) and ``max_per_cluster`` (near-duplicate
    clusters at cosine >= ``cluster_threshold``) add the integrity constraints of
    :mod:`retain.retention.knapsack`.

    Raises:
        InvalidInput: the memory has no budget, or a bad quota / diversity field.
        BudgetInfeasible: the constraints admit no selection; the message names the constraint.
    """
    from retain.retention.constraints import near_duplicate_clusters
    from retain.retention.policies import RetentionProblem, solve

    validate_namespace(namespace)
    budget = core.budget
    if budget is None:
        raise InvalidInput("budget: retention_report needs a Memory with a budget")
    current = core.store.list_records(namespace, RecordFilter(tiers=None), order="created")
    costs = np.array([budget.cost(r) for r in current], dtype=np.float64)
    utility = np.clip(np.array([float(r.importance) for r in current], dtype=np.float64), 0.0, 1.0)
    mandatory = np.array([is_mandatory(r) for r in current], dtype=bool)
    hot = np.array([r.tier is not Tier.ARCHIVE for r in current], dtype=bool)
    clusters = None
    if max_per_cluster is not None:
        emb = [r.embedding for r in current]
        if current and all(e is not None for e in emb):
            clusters = near_duplicate_clusters(np.stack(emb), cluster_threshold)  # type: ignore[arg-type]
        else:
            clusters = np.full(len(current), -1, dtype=np.intp)
    problem = RetentionProblem(
        costs=costs,
        utility=utility,
        mandatory=mandatory,
        budget=float(budget.capacity),
        types=np.array([r.type.value for r in current], dtype=object),
        quotas=quotas,
        clusters=clusters,
        max_per_cluster=max_per_cluster,
    )
    result = solve(problem, "knapsack")
    return RetentionReport(
        namespace=namespace,
        policy=budget.policy,
        capacity=float(budget.capacity),
        unit=budget.unit.value,
        records=len(current),
        hot=int(hot.sum()),
        mandatory=int(mandatory.sum()),
        mandatory_cost=float(costs[mandatory].sum()),
        used=float(costs[hot].sum()),
        held_utility=float(utility[hot].sum()),
        objective=result.objective,
        exact=result.exact,
        method=result.method,
        slack=dict(result.slack),
        feasible=result.feasible,
    )
