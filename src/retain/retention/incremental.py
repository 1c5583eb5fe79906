"""Incremental retention: one arrival at a time, without re-solving (:class:`IncrementalRetainer`).

:func:`choose_victims` decides one arrival of a :class:`~retain.retention.constraints.RetentionProblem` by
replaying it through a retainer. Mandatory items are never evicted.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from retain.errors import BudgetInfeasible, InvalidInput
from retain.retention.constraints import (
    FloatArray,
    IntArray,
    RetentionProblem,
    RetentionResult,
    UnitRows,
    _check_mandatory,
    _check_policy,
    _check_quotas,
    _check_utility,
    _density,
    _result,
    _sims,
    _tol,
    _unit_rows,
)

__all__ = ["INCREMENTAL_POLICIES", "Decision", "IncrementalRetainer", "choose_victims"]

INCREMENTAL_POLICIES = frozenset({"fifo", "lru", "utility", "knapsack", "lookahead"})


@dataclass(frozen=True)
class Decision:
    """One arrival's outcome: ``index`` (0-based stream position), whether it was ``admitted``, and the
    indices ``evicted`` by the decision, first victim first (holding ``index`` when turned away)."""

    index: int
    admitted: bool
    evicted: tuple[int, ...]


class IncrementalRetainer:
    """Keeps a memory inside ``budget`` one arrival at a time, without re-solving.

    fifo, lru, utility: a min-heap keyed (inserted_at | last_access | utility, inserted_at, index);
    victims are popped until the rest fits, O(log n) each, giving exactly the keep set of
    :func:`solve` on the current items plus the new one.
    knapsack, lookahead: a bounded local swap. Victims are the kept items of least value per unit
    cost until the new item fits (knapsack: utility, from a heap, never breaking ``quotas``;
    lookahead: ``u_j * (1 - nearest-neighbour cos_j)^+``, vectorised, O(n d)); the new item is
    admitted only if it is worth more than they are (lookahead: facility-location value over the
    items present). Mandatory items are always admitted, evicting what they must.

    Raises (``add``): InvalidInput (bad cost or embedding), InvalidUtility, BudgetInfeasible (a
    mandatory item that cannot fit).
    """

    def __init__(
        self, policy: str, budget: float, *, dim: int | None = None, quotas: Mapping[str, int] | None = None
    ) -> None:
        _check_policy(policy, INCREMENTAL_POLICIES)
        if not 0 <= budget < np.inf:
            raise InvalidInput(f"budget: must be finite and >= 0, got {budget!r}")
        if policy == "lookahead" and not (dim or 0) >= 1:
            raise InvalidInput("dim: the lookahead policy needs the embedding dimension")
        self.policy, self.budget, self.used = policy, float(budget), 0.0
        self._quotas = _check_quotas(quotas) if policy == "knapsack" else {}
        self._count = dict.fromkeys(self._quotas, 0)
        self._n, self._mandatory_cost = 0, 0.0
        self._num = np.zeros((16, 5))  # cost, utility, inserted_at, last_access, nearest-neighbour cos
        self._flags = np.zeros((16, 2), dtype=bool)  # alive, mandatory
        self._nn_arg = np.zeros(16, dtype=np.intp)
        self._emb = np.zeros((16, dim or 0), dtype=np.float32)  # lookahead: one row per slot, slots reused
        self._owner = np.full(16, -1, dtype=np.intp)  # item held by each slot, -1 = free
        self._slot = np.full(16, -1, dtype=np.intp)  # slot of each item
        self._free: list[int] = []
        self._top = 0  # slots ever used
        self._types: list[str | None] = []
        self._heap: list[tuple[float, float, int]] = []

    @property
    def kept(self) -> IntArray:
        """(k,) intp, the indices currently kept, ascending."""
        return np.flatnonzero(self._flags[: self._n, 0])

    def add(
        self,
        cost: float,
        utility: float,
        *,
        mandatory: bool = False,
        inserted_at: float | None = None,
        last_access: float | None = None,
        embedding: Any = None,
        type: str | None = None,
    ) -> Decision:
        """Offer a new item: cost in budget units, utility in [0, 1], times default to its index,
        embedding (d,) float32 for lookahead, type for knapsack quotas."""
        if not 0 <= cost < np.inf:
            raise InvalidInput(f"cost: must be finite and >= 0, got {cost!r}")
        u = float(_check_utility([utility], 1)[0])
        if mandatory and self._mandatory_cost + cost > self.budget + _tol(self.budget):
            raise BudgetInfeasible(
                f"mandatory items would cost {self._mandatory_cost + cost:g}; budget {self.budget:g}"
            )
        if self.policy == "lookahead":
            vec = _unit_rows(np.reshape(np.asarray(embedding, dtype=np.float32), (1, -1)), "embedding", 1)
            if vec.shape[1] != self._emb.shape[1]:
                raise InvalidInput(f"embedding: dimension {vec.shape[1]}, expected {self._emb.shape[1]}")
        i = self._n
        if i == self._num.shape[0]:
            self._num, self._flags = np.resize(self._num, (2 * i, 5)), np.resize(self._flags, (2 * i, 2))
            self._nn_arg, self._slot = np.resize(self._nn_arg, 2 * i), np.resize(self._slot, 2 * i)
        when = float(i if inserted_at is None else inserted_at)
        self._num[i] = (cost, u, when, when if last_access is None else last_access, 0.0)
        self._flags[i] = (False, mandatory)
        self._types.append(type)
        self._n += 1
        return self._decide_lookahead(i, vec[0]) if self.policy == "lookahead" else self._decide(i)

    def touch(self, index: int, at: float) -> None:
        """Record an access to kept item ``index`` at time ``at`` (moves it back in the lru order)."""
        if not (0 <= index < self._n and self._flags[index, 0]):
            raise InvalidInput(f"index: {index} is not a kept item")
        self._num[index, 3] = at
        if self.policy == "lru" and not self._flags[index, 1]:
            heapq.heappush(self._heap, self._key(index))
            if len(self._heap) > 2 * self._n + 64:  # drop the stale entries older touches left behind
                self._heap = [self._key(j) for j in self.kept.tolist() if not self._flags[j, 1]]
                heapq.heapify(self._heap)

    def _key(self, j: int) -> tuple[float, float, int]:
        cost, u, inserted, accessed, _ = self._num[j].tolist()
        primary = {"fifo": inserted, "lru": accessed, "utility": u}.get(self.policy, _density(u, cost))
        return (primary, inserted, j)

    def _set_alive(self, j: int, alive: bool) -> None:
        sign = 1.0 if alive else -1.0
        self._flags[j, 0] = alive
        self.used += sign * self._num[j, 0]
        self._mandatory_cost += sign * self._num[j, 0] * self._flags[j, 1]
        t = self._types[j]
        if t in self._count:
            self._count[t] += int(sign)

    def _decide(self, i: int) -> Decision:
        """Heap policies. fifo/lru/utility: the new item joins the heap and may be its own victim.
        knapsack: pop victims without the new item, then admit it only if worth more than they are."""
        local = self.policy == "knapsack"
        self._set_alive(i, True)
        if not local and not self._flags[i, 1]:
            heapq.heappush(self._heap, self._key(i))
        popped, victims, freed, lost, drop = [], [], 0.0, 0.0, dict.fromkeys(self._quotas, 0)
        seen: set[int] = set()
        while self.used - freed > self.budget + _tol(self.budget) and self._heap:
            entry = heapq.heappop(self._heap)
            j, t = entry[2], self._types[entry[2]]
            if not self._flags[j, 0] or j in seen or entry != self._key(j):  # gone, or a stale lru entry
                continue
            popped.append(entry)
            seen.add(j)
            if t in drop and self._count[t] - drop[t] <= self._quotas[t]:
                continue  # evicting it would break its quota
            if t in drop:
                drop[t] += 1
            victims.append(j)
            freed, lost = freed + self._num[j, 0], lost + self._num[j, 1]
        fits = self.used - freed <= self.budget + _tol(self.budget)
        if local and not (fits and (self._flags[i, 1] or self._num[i, 1] > lost)):
            for entry in popped:
                heapq.heappush(self._heap, entry)
            self._set_alive(i, False)
            if self._flags[i, 1]:
                raise BudgetInfeasible(f"mandatory item {i} does not fit without breaking the quotas {self._quotas}")
            return Decision(i, False, (i,))
        for j in victims:
            self._set_alive(j, False)
        for entry in popped:
            if self._flags[entry[2], 0]:
                heapq.heappush(self._heap, entry)
        if local and not self._flags[i, 1] and self._num[i, 0] > 0:
            heapq.heappush(self._heap, self._key(i))
        return Decision(i, bool(self._flags[i, 0]), tuple(victims))

    def _decide_lookahead(self, i: int, e: UnitRows) -> Decision:
        owner = self._owner[: self._top]
        held = owner >= 0
        live, sims = owner[held], np.clip(self._emb[: self._top] @ e, 0.0, 1.0)[held]
        need = self.used + self._num[i, 0] - self.budget
        victims = np.zeros(0, dtype=np.intp)
        if need > _tol(self.budget):
            num = self._num[live]
            value = num[:, 1] * np.clip(1.0 - np.maximum(num[:, 4], sims), 0.0, None)
            movable = np.flatnonzero(~self._flags[live, 1] & (num[:, 0] > 0))
            density = value[movable] / num[movable, 0]
            first = np.argpartition(density, 31)[:32] if density.size > 32 else np.arange(density.size)
            first = first[np.argsort(density[first], kind="stable")]
            if num[movable[first], 0].sum() < need - _tol(self.budget):  # the 32 cheapest do not make room
                first = np.argsort(density, kind="stable")
            pos = movable[first]
            k = int(np.searchsorted(np.cumsum(num[pos, 0]), need - _tol(self.budget), side="left"))
            pos = pos[: k + 1]
            victims = live[pos]
            # facility location over the items present: turning the new item away loses its uncovered
            # utility; admitting it loses each victim's utility not covered by what stays
            cover = np.maximum(num[pos, 4], sims[pos])
            lost_nn = np.isin(self._nn_arg[victims], victims)
            if lost_nn.any():
                cover[lost_nn] = np.maximum(self._nearest(victims[lost_nn], victims)[0], sims[pos][lost_nn])
            gain = self._num[i, 1] * (1.0 - float(sims.max(initial=0.0)))
            if k == movable.size or not (self._flags[i, 1] or gain > float(num[pos, 1] @ (1.0 - cover))):
                return Decision(i, False, (i,))
        for j in victims.tolist():
            self._set_alive(j, False)
            self._owner[self._slot[j]] = -1
            self._free.append(int(self._slot[j]))
        self._set_alive(i, True)
        if not self._free and self._top == self._owner.shape[0]:
            self._emb, self._owner = (
                np.resize(self._emb, (2 * self._top, e.shape[0])),
                np.resize(self._owner, 2 * self._top),
            )
        slot = self._free.pop() if self._free else self._top
        self._top = max(self._top, slot + 1)
        self._emb[slot], self._owner[slot], self._slot[i] = e, i, slot
        stay = ~np.isin(live, victims)
        live, sims = live[stay], sims[stay]
        closer = sims > self._num[live, 4]
        self._num[live[closer], 4], self._nn_arg[live[closer]] = sims[closer], i
        self._num[i, 4], self._nn_arg[i] = float(sims.max(initial=0.0)), live[np.argmax(sims)] if live.size else -1
        stale = live[np.isin(self._nn_arg[live], victims)]
        if stale.size:  # their nearest neighbour left: recompute against what stays
            self._num[stale, 4], self._nn_arg[stale] = self._nearest(stale, victims)
        return Decision(i, True, tuple(victims.tolist()))

    def _nearest(self, items: IntArray, exclude: IntArray) -> tuple[FloatArray, IntArray]:
        """Nearest kept neighbour (cos clipped to [0, 1], index or -1) of each of ``items``, ignoring ``exclude``."""
        owner = self._owner[: self._top]
        near = np.clip(self._emb[: self._top] @ self._emb[self._slot[items]].T, 0.0, 1.0)
        near[(owner < 0) | np.isin(owner, exclude)] = -1.0
        near[owner[:, None] == items[None, :]] = -1.0
        best = near.argmax(axis=0)
        value = near[best, np.arange(items.size)]
        return value.clip(0.0), np.where(value < 0, -1, owner[best])


def choose_victims(
    problem: RetentionProblem, policy: str, new_index: int, *, rng: np.random.Generator | None = None
) -> RetentionResult:
    """Decide one arrival locally: every item but ``new_index`` is the current memory (and fits).

    Replays the current items into an :class:`IncrementalRetainer` (O(n log n); O(n^2 d) for
    lookahead), then offers ``new_index``; keep a retainer alive instead for O(log n) decisions.
    ``rng`` is accepted for symmetry with :func:`solve`; no incremental policy is random.

    Raises:
        InvalidInput: a policy without an incremental rule, ``new_index`` out of range, the current
            items already over the budget (call :func:`solve`), lookahead without embeddings.
        BudgetInfeasible: the mandatory items cost more than the budget.
    """
    del rng
    _check_policy(policy, INCREMENTAL_POLICIES)
    if not 0 <= new_index < problem.n:
        raise InvalidInput(f"new_index: {new_index} outside [0, {problem.n})")
    _check_mandatory(problem)
    order = np.r_[np.delete(np.arange(problem.n), new_index), new_index]
    if float(problem.costs[order[:-1]].sum()) > problem.budget + _tol(problem.budget):
        raise InvalidInput("costs: the items other than new_index already exceed the budget; call solve()")
    e = problem.embeddings
    if policy == "lookahead" and e is None:
        raise InvalidInput("embeddings: required by the lookahead policy")
    retainer = IncrementalRetainer(policy, problem.budget, dim=None if e is None else e.shape[1], quotas=problem.quotas)
    inserted, accessed = problem.times()
    for j in order.tolist():
        decision = retainer.add(
            float(problem.costs[j]),
            float(problem.utility[j]),
            mandatory=bool(problem.mandatory[j]),
            inserted_at=float(inserted[j]),
            last_access=float(accessed[j]),
            embedding=None if e is None else e[j],
            type=None if problem.types is None else str(problem.types[j]),
        )
    victims = order[list(decision.evicted)]
    keep = np.ones(problem.n, dtype=bool)
    keep[victims] = False
    objective = None
    if policy == "lookahead" and e is not None and victims.size:
        cover = _sims(e[victims], e[keep]).max(axis=1, initial=0.0)
        objective = float(problem.utility[keep].sum() + problem.utility[victims] @ cover)
    return _result(problem, keep, f"{policy}:incremental", exact=not victims.size, objective=objective, order=victims)
