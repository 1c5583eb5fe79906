"""Budgeted hot memory (EMBER): the capacity, the eviction decisions, and their records.

A :class:`Budget` caps the hot memory (tiers ``core`` + ``dynamic``) of each namespace in records or
in tokens. When an add would exceed it, the namespace's :class:`HotSet` decides incrementally which
records leave (:class:`~retain.retention.policies.IncrementalRetainer`: O(log n) per decision for the heap
policies, a bounded local swap for knapsack and lookahead; reservoir sampling for ``random``). Records
that leave go to the ``archive`` tier: kept, searchable on request, never counted, never deleted.
Every move is returned as an audit entry naming the policy, the scores and the reason, and is
written in the same transaction as the add that caused it.

Mandatory records (a current hard constraint, or a pinned record) live in the ``core`` tier and are
never chosen; when they alone exceed the budget the add fails with :class:`BudgetInfeasible` and
nothing is written.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from retain.errors import BudgetInfeasible, InvalidInput
from retain.record import MemoryRecord, MemoryType, Tier
from retain.retention.policies import INCREMENTAL_POLICIES, Decision, IncrementalRetainer
from retain.store import AuditEntry, RequireHot, Store

__all__ = [
    "BUDGET_POLICIES",
    "HOT_ENTRY_OPS",
    "Budget",
    "BudgetDecision",
    "BudgetUnit",
    "HotSet",
    "entry_order",
    "eviction_entries",
    "is_mandatory",
]

BUDGET_POLICIES = frozenset({*INCREMENTAL_POLICIES, "random"})


class BudgetUnit(enum.StrEnum):
    """What the capacity counts: records, or encoder tokens of their content."""

    RECORDS = "records"
    TOKENS = "tokens"


@dataclass(frozen=True, slots=True)
class Budget:
    """Capacity of the hot memory of each namespace.

    Attributes:
        capacity: records or tokens (>= 0, finite). 0 = nothing is hot, everything is archived.
        unit: :class:`BudgetUnit`.
        policy: "fifo", "lru", "random" (reservoir), "utility" (evict the lowest predicted utility),
            "knapsack" (utility per unit cost), or "lookahead" (utility discounted by redundancy with
            what is kept). An "oracle" is a utility model that knows the labels, used with "utility".
        seed: seed of the random policy.

    Raises:
        InvalidInput: negative / non-finite capacity, unknown unit or policy.
    """

    capacity: float
    unit: BudgetUnit = BudgetUnit.RECORDS
    policy: str = "utility"
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int | float):
            raise InvalidInput("budget.capacity: must be a number")
        if not math.isfinite(self.capacity) or self.capacity < 0:
            raise InvalidInput(f"budget.capacity: must be finite and >= 0, got {self.capacity!r}")
        try:
            object.__setattr__(self, "unit", BudgetUnit(self.unit))
        except ValueError as exc:
            raise InvalidInput(f"budget.unit: {self.unit!r} is not 'records' or 'tokens'") from exc
        if self.policy not in BUDGET_POLICIES:
            raise InvalidInput(f"budget.policy: {self.policy!r} is not one of {sorted(BUDGET_POLICIES)}")

    def cost(self, record: MemoryRecord) -> float:
        """Budget units one record takes (1, or its token count)."""
        return 1.0 if self.unit is BudgetUnit.RECORDS else float(record.token_count)

    @property
    def needs_utility(self) -> bool:
        """True when the policy ranks by predicted utility."""
        return self.policy in ("utility", "knapsack", "lookahead")


class BudgetDecision(NamedTuple):
    """What offering new records to a namespace's budget decided (:meth:`retain.core.Core.apply_budget`).

    Attributes:
        arrivals: the records offered, tiers set (core, dynamic, or archive when turned away).
        moved: stored records the decision moves to the archive (evicted), as changed copies.
        entries: one "evict" audit entry per record leaving the hot memory, with policy and scores.
        guard: the hot memory the decision was made on; the write that commits ``arrivals`` and
            ``moved`` must carry it, so a decision on a hot set another writer changed is retaken.
    """

    arrivals: list[MemoryRecord]
    moved: list[MemoryRecord]
    entries: list[AuditEntry]
    guard: RequireHot


def is_mandatory(record: MemoryRecord) -> bool:
    """A record no policy may evict: a current hard constraint, or a pinned record."""
    return record.pinned or (record.type is MemoryType.HARD_CONSTRAINT and record.is_current)


HOT_ENTRY_OPS = frozenset({"add", "update", "restore", "unpin"})
"""Audit operations by which a record enters the hot memory at the back of the insertion order:
added, a new version written by update, added again out of the archive (restore), unpinned
(evictable again). A pin, a merge into it, an access or a feedback does not move it."""


def entry_order(store: Store, namespace: str, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """``records`` (hot, in write order) sorted by when each last entered the hot memory.

    The insertion order of fifo (and the tie-break of lru and utility) is the order of entry into
    the hot memory, not of creation: a record added again out of the archive is the newest, as the
    cached :class:`HotSet` that offered it last holds it. A rebuilt hot set must agree with the
    cached one, so the order is read from the audit log (the last :data:`HOT_ENTRY_OPS` entry of
    each record, an "unpin" only when it was done); records without such an entry keep their write
    order ahead of the others. Cost: one indexed audit read of the records' entries.
    """
    if len(records) < 2:
        return list(records)
    entered: dict[str, int] = {}
    for e in store.audit_log(namespace, record_ids=[r.id for r in records]):
        if e["op"] in HOT_ENTRY_OPS and (e["op"] != "unpin" or e["details"].get("outcome") == "done"):
            entered[e["record_id"]] = int(e["seq"])
    rank = {r.id: i for i, r in enumerate(records)}
    return sorted(records, key=lambda r: (entered.get(r.id, -1), rank[r.id]))


class _Reservoir:
    """Reservoir sampling (Vitter 1985, Algorithm R) with the IncrementalRetainer interface.

    In record units the kept set is a uniform sample of the non-mandatory items seen; in token
    units a uniformly chosen kept item is evicted until the newcomer fits.
    """

    def __init__(self, budget: float, seed: int) -> None:
        self.budget = budget
        self.used = 0.0
        self._rng = np.random.default_rng(seed)
        self._costs: list[float] = []
        self._alive: list[bool] = []
        self._mandatory: list[bool] = []
        self._seen = 0

    def add(self, cost: float, utility: float, *, mandatory: bool = False, **_: object) -> Decision:
        if mandatory:
            held = sum(c for c, a, m in zip(self._costs, self._alive, self._mandatory, strict=True) if a and m)
            if held + cost > self.budget:
                raise BudgetInfeasible(
                    f"budget: mandatory items would cost {held + cost:g}; budget {self.budget:g} (policy random)"
                )
        i = len(self._costs)
        self._costs.append(cost)
        self._alive.append(False)
        self._mandatory.append(mandatory)
        if not mandatory:
            self._seen += 1
        evicted: list[int] = []
        if not mandatory and self.used + cost > self.budget:
            kept = [j for j, a in enumerate(self._alive) if a and not self._mandatory[j]]
            capacity = max(1, len(kept))
            if not kept or self._rng.random() >= capacity / self._seen:
                return Decision(i, False, (i,))
            while self.used + cost > self.budget and kept:
                j = kept.pop(int(self._rng.integers(len(kept))))
                self._alive[j] = False
                self.used -= self._costs[j]
                evicted.append(j)
            if self.used + cost > self.budget:
                return Decision(i, False, (*evicted, i))
        elif mandatory:
            kept = [j for j, a in enumerate(self._alive) if a and not self._mandatory[j]]
            while self.used + cost > self.budget and kept:
                j = kept.pop(int(self._rng.integers(len(kept))))
                self._alive[j] = False
                self.used -= self._costs[j]
                evicted.append(j)
        self._alive[i] = True
        self.used += cost
        return Decision(i, True, tuple(evicted))

    def touch(self, index: int, at: float) -> None:
        """Accesses do not change a uniform sample."""


@dataclass
class HotSet:
    """Incremental retention state of one namespace, aligned with the store's hot records."""

    budget: Budget
    dim: int | None
    ids: list[str] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)
    utility: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    retainer: IncrementalRetainer | _Reservoir | None = None
    hot: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.budget.policy == "random":
            self.retainer = _Reservoir(float(self.budget.capacity), self.budget.seed)
        else:
            self.retainer = IncrementalRetainer(
                self.budget.policy,
                float(self.budget.capacity),
                dim=self.dim if self.budget.policy == "lookahead" else None,
            )

    def offer(self, record: MemoryRecord, *, at: float) -> list[int]:
        """Offer one record; returns the indices (into :attr:`ids`) of the records that leave
        (the newcomer's own index when it is turned away).

        Raises:
            BudgetInfeasible: a mandatory record that cannot fit beside the other mandatory ones.
        """
        assert self.retainer is not None
        decision = self.retainer.add(
            self.budget.cost(record),
            float(record.importance),
            mandatory=is_mandatory(record),
            inserted_at=at,
            last_access=record.last_accessed.timestamp() if record.last_accessed else at,
            embedding=record.embedding,
            type=record.type.value,
        )
        index = len(self.ids)
        self.ids.append(record.id)
        self.position[record.id] = index
        self.utility.append(float(record.importance))
        self.tokens.append(record.token_count)
        if decision.admitted:
            self.hot.add(record.id)
        for j in decision.evicted:
            self.hot.discard(self.ids[j])
        assert decision.index == index
        return list(decision.evicted)

    def touch(self, record_id: str, at: float) -> None:
        """Record an access (LRU order)."""
        if record_id in self.hot and self.retainer is not None:
            self.retainer.touch(self.position[record_id], at)

    @property
    def mean_tokens(self) -> float | None:
        """Mean token length of every record offered so far (None before the first)."""
        return float(np.mean(self.tokens)) if self.tokens else None


def eviction_entries(
    hot: HotSet, namespace: str, victims: Sequence[int], *, actor: str, trigger: str
) -> list[AuditEntry]:
    """Audit entries for records moved to the archive by the budget."""
    budget = hot.budget
    used = hot.retainer.used if hot.retainer is not None else 0.0
    return [
        AuditEntry(
            namespace=namespace,
            op="evict",
            record_id=hot.ids[j],
            actor=f"policy:{budget.policy}",
            reason=f"hot memory over capacity {budget.capacity:g} {budget.unit.value} after {trigger} by {actor}",
            policy=budget.policy,
            details={
                "trigger": trigger,
                "utility": round(hot.utility[j], 6),
                "inserted": j,
                "tokens": hot.tokens[j],
                "capacity": budget.capacity,
                "unit": budget.unit.value,
                "used_after": round(float(used), 6),
                "tier_before": Tier.DYNAMIC.value,
                "tier_after": Tier.ARCHIVE.value,
            },
        )
        for j in victims
    ]
