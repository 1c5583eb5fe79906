"""The retention optimizer: which memories stay inside the budget, as pure functions over arrays.

:func:`solve` dispatches a :class:`RetentionProblem` to a policy in :data:`POLICIES` and returns a
:class:`RetentionResult`; :class:`IncrementalRetainer` decides one arrival at a time. Nothing here
touches a store, the clock or the disk. Mandatory items are never evicted by any policy.

fifo, lru, random and utility are *eviction orders* (cache semantics): the victims are a prefix of
the order (oldest inserted / least recently accessed / random / lowest utility first), taken until
the rest fits, so a cheap low-priority item never stays in place of an expensive higher-priority
one. That is what lets the incremental heap agree exactly with a full re-solve.
knapsack maximises kept utility exactly (LP reduction, then an exact core DP or HiGHS MILP);
lookahead maximises a facility-location objective (redundancy-aware); oracle reads ground-truth
labels and is the upper bound for evaluations.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from retain.errors import BudgetInfeasible, InvalidInput, InvalidUtility

__all__ = [
    "DEFAULT_EXACT_LIMIT",
    "DEFAULT_MERGE_THRESHOLD",
    "DEFAULT_SEED",
    "DEFAULT_TIME_LIMIT_S",
    "INCREMENTAL_POLICIES",
    "POLICIES",
    "Decision",
    "IncrementalRetainer",
    "RetentionProblem",
    "RetentionResult",
    "choose_victims",
    "merge_candidates",
    "solve",
]

DEFAULT_EXACT_LIMIT = 5000
DEFAULT_TIME_LIMIT_S = 1.0
DEFAULT_SEED = 0
DEFAULT_MERGE_THRESHOLD = 0.92
INCREMENTAL_POLICIES = frozenset({"fifo", "lru", "utility", "knapsack", "lookahead"})
_REL_TOL = 1e-9  # budget comparisons allow this relative slack (float sums of costs)
_BLOCK = 1 << 22  # similarity blocks hold at most 4M float32 (16 MB)
_DENSE_SIMS = 4096  # lookahead holds the (n, n) float32 similarity matrix up to this many items (64 MB)
_MAX_STATES = 200_000  # exact knapsack core: partial solutions kept before handing over to HiGHS

IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]
FloatArray = NDArray[np.float64]
UnitRows = NDArray[np.float32]


def _tol(budget: float) -> float:
    return _REL_TOL * max(1.0, budget)


def _array(value: Any, name: str, dtype: Any, shape: tuple[int | None, ...]) -> NDArray[Any]:
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name}: cannot be read as {np.dtype(dtype).name}") from exc
    if arr.ndim != len(shape) or any(w is not None and g != w for g, w in zip(arr.shape, shape, strict=False)):
        want = ", ".join("d" if s is None else str(s) for s in shape)
        raise InvalidInput(f"{name}: shape {arr.shape}, expected ({want})")
    return arr


def _times(value: Any, name: str, n: int) -> FloatArray | None:
    arr = None if value is None else _array(value, name, np.float64, (n,))
    if arr is not None and not np.all(np.isfinite(arr)):
        raise InvalidInput(f"{name}: must be finite")
    return arr


def _check_utility(value: Any, n: int) -> FloatArray:
    arr = _array(value, "utility", np.float64, (n,))
    bad = ~(np.isfinite(arr) & (arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidUtility(f"utility: {int(bad.sum())} score(s) NaN, infinite or outside [0, 1]; [{i}] = {arr[i]!r}")
    return arr


def _unit_rows(value: Any, name: str, n: int | None) -> UnitRows:
    arr = _array(value, name, np.float32, (n, None))
    norms = np.linalg.norm(arr, axis=1)
    if not np.all(np.isfinite(arr)) or np.any(norms == 0):
        raise InvalidInput(f"{name}: rows must be finite and non-zero")
    out: UnitRows = (arr / norms[:, None]).astype(np.float32)
    return out


def _check_quotas(quotas: Mapping[str, int] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, value in dict(quotas or {}).items():
        if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise InvalidInput(f"quotas: expected str -> int >= 0, got {key!r}: {value!r}")
        out[key] = int(value)
    return out


@dataclass(frozen=True, eq=False)
class RetentionProblem:
    """One retention decision over ``n`` candidate items. Validated (and arrays coerced) on construction.

    Attributes:
        costs: (n,) float64 >= 0, in budget units (tokens, or 1 per record).
        utility: (n,) float64 in [0, 1], predicted future utility; higher = keep.
        mandatory: (n,) bool, must be kept (valid hard constraints, pinned records).
        budget: capacity >= 0 in the units of ``costs``.
        inserted_at: (n,) float64 insertion time or order (fifo, tie-breaks); None = index order.
        last_access: (n,) float64 last access time (lru); None = ``inserted_at`` (never accessed).
        embeddings: (n, d) float32; rows are L2-normalised here (lookahead).
        types: (n,) object, type strings (quotas).
        quotas: type -> minimum number of kept items of that type (enforced by knapsack).
        labels: (n,) bool, ground truth for the oracle: the item is needed later.

    Raises:
        InvalidInput: wrong shape or dtype, negative or non-finite costs or budget, non-finite times,
            non-finite or zero embedding rows, malformed quotas, quotas without types. Names the field.
        InvalidUtility: a utility that is NaN, infinite or outside [0, 1].
    """

    costs: FloatArray
    utility: FloatArray
    mandatory: BoolArray
    budget: float
    inserted_at: FloatArray | None = None
    last_access: FloatArray | None = None
    embeddings: UnitRows | None = None
    types: NDArray[np.object_] | None = None
    quotas: Mapping[str, int] | None = None
    labels: BoolArray | None = None

    def __post_init__(self) -> None:
        costs = _array(self.costs, "costs", np.float64, (None,))
        n = costs.shape[0]
        if not np.all(np.isfinite(costs)) or np.any(costs < 0):
            raise InvalidInput("costs: must be finite and >= 0")
        if not isinstance(self.budget, int | float | np.number) or not 0 <= float(self.budget) < np.inf:
            raise InvalidInput(f"budget: must be a finite number >= 0, got {self.budget!r}")
        if self.quotas and self.types is None:
            raise InvalidInput("types: required when quotas are given")
        fields: dict[str, Any] = {
            "costs": costs,
            "utility": _check_utility(self.utility, n),
            "mandatory": _array(self.mandatory, "mandatory", np.bool_, (n,)),
            "budget": float(self.budget),
            "inserted_at": _times(self.inserted_at, "inserted_at", n),
            "last_access": _times(self.last_access, "last_access", n),
            "embeddings": None if self.embeddings is None else _unit_rows(self.embeddings, "embeddings", n),
            "types": None if self.types is None else _array(self.types, "types", np.object_, (n,)),
            "quotas": _check_quotas(self.quotas),
            "labels": None if self.labels is None else _array(self.labels, "labels", np.bool_, (n,)),
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @property
    def n(self) -> int:
        """Number of candidate items."""
        return int(self.costs.shape[0])

    def times(self) -> tuple[FloatArray, FloatArray]:
        """(inserted_at, last_access), (n,) float64 each, with the documented defaults filled in."""
        inserted = np.arange(self.n, dtype=np.float64) if self.inserted_at is None else self.inserted_at
        return inserted, inserted if self.last_access is None else self.last_access

    def of_type(self, t: str) -> BoolArray:
        """(n,) bool, the items whose type is ``t``."""
        return np.zeros(self.n, dtype=bool) if self.types is None else np.asarray(self.types == t, dtype=bool)


@dataclass(frozen=True, eq=False)
class RetentionResult:
    """What a policy keeps.

    Attributes:
        keep: (n,) bool, True = stays in the budget.
        objective: total utility kept; for lookahead the facility-location value
            ``sum_i utility_i * max_{j kept} max(cos(e_i, e_j), 0)``. Higher = better.
        exact: True when solved to proven optimality (knapsack "dp" / "milp") or trivially (all fits).
        method: the policy name for fifo, lru, random, utility, lookahead, oracle; for knapsack "dp"
            (exact core DP), "milp" (HiGHS on the core), "greedy" (above ``exact_limit``) or "trivial";
            "<policy>:incremental" from :func:`choose_victims`.
        slack: "budget" -> budget - kept cost; "quota:<type>" -> kept count - quota (< 0 = unmet).
        evicted: (k,) intp, the items not kept, first victim first where the policy has an order,
            otherwise by ascending utility.
    """

    keep: BoolArray
    objective: float
    exact: bool
    method: str
    slack: dict[str, float]
    evicted: IntArray


def _result(
    p: RetentionProblem,
    keep: BoolArray,
    method: str,
    *,
    exact: bool | None = None,
    objective: float | None = None,
    order: Any = None,
) -> RetentionResult:
    slack = {"budget": p.budget - float(p.costs[keep].sum())}
    for t, q in sorted((p.quotas or {}).items()):
        slack[f"quota:{t}"] = float(np.count_nonzero(keep & p.of_type(t)) - q)
    order = np.lexsort((p.times()[0], p.utility)) if order is None else np.asarray(order, dtype=np.intp)
    return RetentionResult(
        keep=keep,
        objective=float(p.utility[keep].sum()) if objective is None else objective,
        exact=bool(keep.all()) if exact is None else exact,
        method=method,
        slack=slack,
        evicted=order[~keep[order]],
    )


def _evict_prefix(p: RetentionProblem, order: IntArray) -> BoolArray:
    """Evict ``order`` (non-mandatory indices, first victim first) as a prefix until the rest fits."""
    keep = np.ones(p.n, dtype=bool)
    excess = float(p.costs.sum()) - p.budget - _tol(p.budget)
    if excess > 0 and order.size:
        keep[order[: int(np.searchsorted(np.cumsum(p.costs[order]), excess, side="left")) + 1]] = False
    return keep


def _eviction_policy(name: str, key: Callable[[RetentionProblem, np.random.Generator], IntArray]) -> Any:
    def policy(p: RetentionProblem, *, rng: np.random.Generator, **_: Any) -> RetentionResult:
        order = key(p, rng)
        order = order[~p.mandatory[order]]
        return _result(p, _evict_prefix(p, order), name, order=order)

    return policy


def _fits(p: RetentionProblem, keep: BoolArray) -> bool:
    return float(p.costs[keep].sum()) <= p.budget + _tol(p.budget)


def _quotas_met(p: RetentionProblem, keep: BoolArray) -> bool:
    return all(np.count_nonzero(keep & p.of_type(t)) >= q for t, q in (p.quotas or {}).items())


def _complete_quotas(p: RetentionProblem, keep: BoolArray) -> BoolArray:
    """``keep`` plus the cheapest items completing each quota (ties: higher utility)."""
    keep, cheapest = keep.copy(), np.lexsort((-p.utility, p.costs))
    for t, q in (p.quotas or {}).items():
        of_type = p.of_type(t)
        missing = q - int(np.count_nonzero(keep & of_type))
        pool = cheapest[of_type[cheapest] & ~keep[cheapest]]
        if pool.size < missing:
            raise InvalidInput(f"quotas: type {t!r} needs {q} kept items, only {int(of_type.sum())} exist")
        keep[pool[: max(missing, 0)]] = True
    return keep


def _quota_base(p: RetentionProblem) -> BoolArray:
    """Mandatory items plus the cheapest items completing each quota; types are disjoint, so this set
    fits the budget iff the knapsack problem is feasible."""
    keep = _complete_quotas(p, p.mandatory)
    used = float(p.costs[keep].sum())
    if used > p.budget + _tol(p.budget):
        raise BudgetInfeasible(f"mandatory items plus the cheapest quota items cost {used:g}; budget is {p.budget:g}")
    return keep


def _fill(p: RetentionProblem, keep: BoolArray, order: IntArray) -> BoolArray:
    """Add items in ``order`` to ``keep`` whenever they still fit (skipping those that do not)."""
    keep = keep.copy()
    room = p.budget - float(p.costs[keep].sum()) + _tol(p.budget)
    costs = p.costs.tolist()
    for i in order.tolist():
        if not keep[i] and costs[i] <= room:
            keep[i] = True
            room -= costs[i]
    return keep


def _greedy_knapsack(p: RetentionProblem, order: IntArray) -> BoolArray:
    """Greedy by utility/cost from the mandatory items; repaired by restarting from :func:`_quota_base`
    when it misses a quota; the better of that and the best-single-item start (extended greedy,
    Sahni 1975), which is at least half the optimum when there are no quotas."""
    start = p.mandatory if _quotas_met(p, _fill(p, p.mandatory, order)) else _quota_base(p)
    best = _fill(p, start, order)
    affordable = ~start & (p.costs <= p.budget - float(p.costs[start].sum()) + _tol(p.budget))
    if affordable.any():
        seeded = start.copy()
        seeded[int(np.argmax(np.where(affordable, p.utility, -1.0)))] = True
        other = _fill(p, seeded, order)
        if _quotas_met(p, other) and p.utility[other].sum() > p.utility[best].sum():
            best = other
    return best


def _core_dp(
    c: FloatArray,
    v: FloatArray,
    kinds: NDArray[np.int64],
    needs: NDArray[np.int64],
    prices: FloatArray,
    room: float,
    floor: float,
    deadline: float,
) -> tuple[BoolArray | None, bool]:
    """Exact 0-1 knapsack over a small core: dynamic programming over non-dominated partial solutions.

    Items are decided in order of w/cost, w = utility + kinds @ prices (the quota rows' LP duals); a
    state (cost, value, unmet quota counts) is dropped when another with the same unmet counts costs
    no more and is worth no less (Nemhauser & Ullmann 1969), or when its bound on the undecided items
    cannot beat the best completion found: Dantzig's bound on w minus prices @ unmet (a Lagrangian
    bound, valid for any prices >= 0; Horowitz & Sahni 1974 without quotas). ``kinds`` is (m, q) 0/1,
    the quota types; ``needs`` (q,) their unmet counts.
    Returns (chosen, finished): chosen is None when nothing beats ``floor``; finished is False when
    the states outgrew ``_MAX_STATES`` or the clock passed ``deadline`` (``time.perf_counter``).
    """
    m, w = c.size, v + kinds @ prices
    with np.errstate(all="ignore"):
        order = np.lexsort((-w, -np.where(c > 0, w / c, np.inf)))
    c, v, w, kinds = c[order], v[order], w[order], kinds[order]
    cc, cv, cw = np.r_[0.0, np.cumsum(c)], np.r_[0.0, np.cumsum(v)], np.r_[0.0, np.cumsum(w)]
    c_next, w_next = np.r_[c, 1.0], np.r_[w, 0.0]
    ck = np.vstack([np.zeros((1, kinds.shape[1]), np.int64), np.cumsum(kinds, axis=0)])
    cost, val, need = np.zeros(1), np.zeros(1), needs[None, :].copy()
    bits = np.zeros((1, m // 64 + 1), dtype=np.uint64)
    best, found, eps = floor, None, 1e-10 * (1.0 + cv[-1])
    for s in range(m + 1):  # s items decided
        if s:
            take = cost + c[s - 1] <= room
            added = bits[take].copy()
            added[:, (s - 1) // 64] |= np.uint64(1 << ((s - 1) % 64))
            cost, val, bits = (
                np.r_[cost, cost[take] + c[s - 1]],
                np.r_[val, val[take] + v[s - 1]],
                np.vstack([bits, added]),
            )
            need = np.vstack([need, np.maximum(need[take] - kinds[s - 1], 0)])
        end = np.clip(np.searchsorted(cc, room - cost + cc[s], side="right") - 1, s, m)  # greedy prefix that fits
        whole = val + cv[end] - cv[s]
        fraction = (room - cost - cc[end] + cc[s]) * w_next[end] / c_next[end]  # of the first item that does not fit
        bound = val + cw[end] - cw[s] + fraction - need @ prices
        reachable = np.all(need <= ck[m] - ck[s], axis=1)
        complete = np.where(reachable & np.all(need <= ck[end] - ck[s], axis=1), whole, -np.inf)
        i = int(np.argmax(complete))
        if complete[i] > best + eps:
            best, found = float(complete[i]), (bits[i].copy(), s, int(end[i]))
        live = reachable & (bound > best + eps)
        cost, val, need, bits = cost[live], val[live], need[live], bits[live]
        if cost.size > 1:  # dominance among states with the same unmet quotas
            gid = np.unique(need, axis=0, return_inverse=True)[1].ravel() if need.shape[1] else np.zeros(cost.size)
            by = np.lexsort((-val, cost, gid))
            shifted = val[by] + gid[by] * (cv[-1] + 1.0)
            by = by[shifted > np.maximum.accumulate(np.r_[-np.inf, shifted[:-1]])]
            cost, val, need, bits = cost[by], val[by], need[by], bits[by]
        if cost.size > _MAX_STATES or time.perf_counter() > deadline:
            return None, False
        if not cost.size:
            break
    if found is None:
        return None, True
    word_bits, first, stop = found
    chosen = ((word_bits[np.arange(m) // 64] >> (np.arange(m) % 64).astype(np.uint64)) & np.uint64(1)).astype(bool)
    chosen[first:stop] = True
    out = np.zeros(m, dtype=bool)
    out[order] = chosen
    return out, True


def _exact_knapsack(
    p: RetentionProblem, incumbent: BoolArray, order: IntArray, time_limit_s: float
) -> tuple[BoolArray, bool, str]:
    """Exact 0-1 knapsack with quotas: LP relaxation (HiGHS), reduced-cost fixing, exact core.

    An item whose LP reduced cost exceeds (LP bound - incumbent value) keeps its LP value in every
    solution better than the incumbent (reduced-cost fixing; Nemhauser & Wolsey 1988, II.2.1). The
    remaining core is solved by :func:`_core_dp` ("dp"), or by :func:`scipy.optimize.milp` ("milp")
    if the DP outgrows its state limit. Returns (keep, proven optimal, method); ``keep`` is never
    worse than ``incumbent``.
    """
    deadline = time.perf_counter() + time_limit_s
    rows, lo, hi = [p.costs], [-np.inf], [p.budget]
    for t, q in (p.quotas or {}).items():
        rows, lo, hi = [*rows, p.of_type(t).astype(np.float64)], [*lo, float(q)], [*hi, np.inf]
    a, lo_b, hi_b = np.vstack(rows), np.asarray(lo), np.asarray(hi)
    lb = p.mandatory.astype(np.float64)
    ub = np.maximum(lb, p.costs <= p.budget + _tol(p.budget))
    best = float(p.utility[incumbent].sum())
    lp = linprog(
        -p.utility,
        A_ub=np.vstack([a[:1], -a[1:]]),
        b_ub=np.r_[hi_b[:1], -lo_b[1:]],
        bounds=np.c_[lb, ub],
        method="highs",
        options={"time_limit": time_limit_s},
    )
    free, prices = np.ones(p.n, dtype=bool), np.zeros(a.shape[0] - 1)
    if lp.status == 0:  # a second incumbent: the LP solution rounded down, quotas completed, room filled
        rounded = _fill(p, _complete_quotas(p, p.mandatory | (lp.x > 1 - 1e-9)), order)
        if _fits(p, rounded) and _quotas_met(p, rounded) and float(p.utility[rounded].sum()) > best:
            incumbent, best = rounded, float(p.utility[rounded].sum())
        reduced, prices = np.abs(lp.lower.marginals + lp.upper.marginals), np.abs(lp.ineqlin.marginals[1:])
        at_bound = np.abs(lp.x - np.round(lp.x)) <= 1e-9
        free = ~(at_bound & (reduced > -lp.fun - best + 1e-7 * (1.0 + abs(lp.fun))))  # gap: LP bound - incumbent
    x = np.where(free, lb, np.round(lp.x) if lp.status == 0 else lb)
    core = np.flatnonzero(free & (lb < ub))
    fixed = a @ x
    room = hi_b[0] - fixed[0] + _tol(p.budget)
    if room < 0:  # the fixings alone do not fit: nothing beats the incumbent
        return incumbent, True, "dp"
    needs = np.maximum(lo_b[1:] - fixed[1:], 0).astype(np.int64)
    halfway = time.perf_counter() + (deadline - time.perf_counter()) / 2
    kinds, floor = a[1:, core].T.astype(np.int64), best - float(p.utility @ x)
    chosen, finished = _core_dp(p.costs[core], p.utility[core], kinds, needs, prices, room, floor, halfway)
    method, optimal = "dp", True
    if finished and chosen is None:
        return incumbent, True, method
    if finished and chosen is not None:
        x[core] = chosen
    else:
        res = milp(
            -p.utility[core],
            integrality=np.ones(core.size),
            bounds=Bounds(lb[core], ub[core]),
            constraints=LinearConstraint(a[:, core], lo_b - fixed, hi_b - fixed),
            options={"time_limit": max(deadline - time.perf_counter(), 0.01), "mip_rel_gap": 0.0},
        )
        method = "milp"
        if res.x is None:  # status 2: nothing satisfies the fixings, so nothing beats the incumbent
            return incumbent, res.status == 2, method
        x[core], optimal = np.round(res.x), res.status == 0
    keep = x > 0.5
    feasible = _fits(p, keep) and _quotas_met(p, keep)
    if not feasible or float(p.utility[keep].sum()) < best:
        return incumbent, optimal and feasible, method
    return keep, optimal, method


def _knapsack(p: RetentionProblem, *, exact_limit: int, time_limit_s: float, **_: Any) -> RetentionResult:
    """max sum(utility * keep) s.t. sum(costs * keep) <= budget, keep[mandatory] = 1, and for each
    type t: sum(keep[types == t]) >= quotas[t]. Victims are listed by ascending utility/cost."""
    _quota_base(p)  # refuses infeasible quotas and budgets before any work
    with np.errstate(all="ignore"):
        order = np.lexsort((-p.utility, -np.where(p.costs > 0, p.utility / p.costs, np.inf)))
    if float(p.costs.sum()) <= p.budget + _tol(p.budget):
        return _result(p, np.ones(p.n, dtype=bool), "trivial", exact=True, order=order[::-1])
    greedy = _greedy_knapsack(p, order)
    if p.n > exact_limit:
        return _result(p, greedy, "greedy", exact=False, order=order[::-1])
    keep, optimal, method = _exact_knapsack(p, greedy, order, time_limit_s)
    return _result(p, keep, method, exact=optimal, order=order[::-1])


def _sims(rows: UnitRows, cols: UnitRows) -> UnitRows:
    """(len(rows), len(cols)) float32 similarities max(cos, 0) between unit rows, clipped to [0, 1]."""
    out: UnitRows = np.clip(rows @ cols.T, 0.0, 1.0)
    return out


def _density(value: float, cost: float) -> float:
    return value / cost if cost > 0 else (np.inf if value > 0 else 0.0)


SimColumns = Callable[[IntArray], UnitRows]


def _sim_columns(e: UnitRows) -> SimColumns:
    """cols -> (n, len(cols)) float32 columns of the similarity matrix, held dense up to _DENSE_SIMS items."""
    if e.shape[0] <= _DENSE_SIMS:
        dense = _sims(e, e)  # symmetric: rows are columns
        return lambda cols: dense[cols].T
    return lambda cols: _sims(e, e[cols])


def _fl_gains(sim: SimColumns, u: FloatArray, cover: UnitRows, cols: IntArray) -> FloatArray:
    """Facility-location marginal gains ``sum_i u_i * (sim(i, k) - cover_i)^+`` for each k in ``cols``."""
    out, step = np.empty(cols.size), max(1, _BLOCK // max(u.size, 1))
    for s in range(0, cols.size, step):
        out[s : s + step] = u @ np.maximum(sim(cols[s : s + step]) - cover[:, None], 0.0)
    return out


def _fl_greedy(
    p: RetentionProblem, sim: SimColumns, keep: BoolArray, cover: UnitRows, gains: FloatArray
) -> tuple[BoolArray, UnitRows]:
    """Cost-benefit lazy greedy (CELF; Leskovec et al. 2007) from ``keep``; ``gains`` are upper bounds."""
    u, costs = p.utility, p.costs.tolist()
    keep, cover = keep.copy(), cover.copy()
    room = p.budget - float(p.costs[keep].sum()) + _tol(p.budget)
    heap = [(-_density(gains[k], costs[k]), k, 0) for k in np.flatnonzero(~keep).tolist() if costs[k] <= room]
    heapq.heapify(heap)
    stamp = 0
    while heap:
        _, k, seen = heapq.heappop(heap)
        if costs[k] > room:
            continue
        col = sim(np.array([k]))[:, 0]
        if seen == stamp:  # gain is current, so by submodularity nothing left can beat it
            np.maximum(cover, col, out=cover)
            keep[k], cover[k], room, stamp = True, 1.0, room - costs[k], stamp + 1
        else:
            heapq.heappush(heap, (-_density(float(u @ np.maximum(col - cover, 0.0)), costs[k]), k, stamp))
    return keep, cover


def _lookahead(p: RetentionProblem, **_: Any) -> RetentionResult:
    """Facility location under a knapsack: maximise F(S) = sum_i u_i * max_{j in S} max(cos(e_i, e_j), 0).

    F is monotone submodular (Cornuejols, Fisher & Nemhauser 1977). Adding k to S gains
    ``u_k * (1 - max_{j in S} cos(e_k, e_j))^+`` (its redundancy-discounted utility, the novelty term
    of MMR, Carbonell & Goldstein 1998) plus the utility it newly covers among the items left out.
    Items are added by gain per unit cost (Nemhauser, Wolsey & Fisher 1978 greedy, cost-scaled,
    lazily evaluated) and the result is compared with the best single item (Krause & Guestrin 2005),
    a (1 - 1/e)/2 guarantee. A near-duplicate of a kept item gains ~0, so it goes when space is tight.
    Cost: O(n^2 d) for the similarities (held dense up to 4,096 items), O(n) per re-evaluation.
    """
    if p.embeddings is None:
        raise InvalidInput("embeddings: required by the lookahead policy")
    e, u, n = p.embeddings, p.utility, p.n
    if float(p.costs.sum()) <= p.budget + _tol(p.budget):
        return _result(p, np.ones(n, dtype=bool), "lookahead", exact=True, objective=float(u.sum()))
    sim, cover, mandatory, step = _sim_columns(e), np.zeros(n, np.float32), np.flatnonzero(p.mandatory), _BLOCK // n
    for s in range(0, mandatory.size, max(1, step)):
        np.maximum(cover, sim(mandatory[s : s + max(1, step)]).max(axis=1), out=cover)
    cover[mandatory] = 1.0
    gains = np.zeros(n)
    gains[~p.mandatory] = _fl_gains(sim, u, cover, np.flatnonzero(~p.mandatory))
    keep, final = _fl_greedy(p, sim, p.mandatory, cover, gains)
    room = p.budget - float(p.costs[p.mandatory].sum()) + _tol(p.budget)
    single = np.where(~p.mandatory & (p.costs <= room), gains, -1.0)
    k = int(np.argmax(single))
    if single[k] > 0 and float(u @ cover) + single[k] > float(u @ final):
        seeded, cover = p.mandatory.copy(), np.maximum(cover, sim(np.array([k]))[:, 0])
        seeded[k], cover[k] = True, 1.0
        keep, final = _fl_greedy(p, sim, seeded, cover, _fl_gains(sim, u, cover, np.arange(n)))
    return _result(p, keep, "lookahead", exact=False, objective=float(u @ final))


def _oracle(p: RetentionProblem, **_: Any) -> RetentionResult:
    """Needed items first, cheapest first (that keeps as many as possible), then the rest by utility."""
    if p.labels is None:
        raise InvalidInput("labels: required by the oracle policy")
    keep = _fill(p, p.mandatory, np.lexsort((-p.utility, np.where(p.labels, p.costs, 0.0), ~p.labels)))
    return _result(p, keep, "oracle", order=np.lexsort((p.utility, p.labels)))


POLICIES: Mapping[str, Callable[..., RetentionResult]] = MappingProxyType(
    {
        "fifo": _eviction_policy("fifo", lambda p, _: np.argsort(p.times()[0], kind="stable")),
        "lru": _eviction_policy("lru", lambda p, _: np.lexsort(p.times())),
        "random": _eviction_policy("random", lambda p, rng: rng.permutation(p.n).astype(np.intp)),
        "utility": _eviction_policy("utility", lambda p, _: np.lexsort((p.times()[0], p.utility))),
        "knapsack": _knapsack,
        "lookahead": _lookahead,
        "oracle": _oracle,
    }
)


def _check_policy(policy: str, allowed: Any) -> None:
    if policy not in allowed:
        raise InvalidInput(f"policy: {policy!r} is not one of {', '.join(sorted(allowed))}")


def _check_mandatory(p: RetentionProblem) -> None:
    cost = float(p.costs[p.mandatory].sum())
    if cost > p.budget + _tol(p.budget):
        raise BudgetInfeasible(f"mandatory items cost {cost:g}, over the budget {p.budget:g}; nothing was dropped")


def solve(
    problem: RetentionProblem,
    policy: str,
    *,
    rng: np.random.Generator | None = None,
    exact_limit: int = DEFAULT_EXACT_LIMIT,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> RetentionResult:
    """Decide which of ``problem``'s items to keep under ``policy``, a key of :data:`POLICIES`.

    Args:
        rng: randomness for "random"; None = ``np.random.default_rng(DEFAULT_SEED)``.
        exact_limit: knapsack problems with at most this many items are solved exactly; larger ones
            greedily by utility/cost (``method="greedy"``, ``exact=False``).
        time_limit_s: wall-clock limit of the exact knapsack, seconds; past it the best solution
            found (never worse than the greedy one) is returned with ``exact=False``.

    Raises:
        InvalidInput: unknown policy, bad limits, a field the policy needs is None (lookahead:
            embeddings; oracle: labels), a quota above the number of items of its type.
        BudgetInfeasible: the mandatory items (for knapsack: plus the cheapest quota items) cost more
            than the budget. Nothing is dropped.
    """
    _check_policy(policy, POLICIES)
    if exact_limit < 0 or not time_limit_s > 0:
        raise InvalidInput(f"exact_limit must be >= 0 and time_limit_s > 0, got {exact_limit}, {time_limit_s}")
    _check_mandatory(problem)
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else rng
    return POLICIES[policy](problem, rng=rng, exact_limit=exact_limit, time_limit_s=time_limit_s)


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


def merge_candidates(embeddings: Any, threshold: float = DEFAULT_MERGE_THRESHOLD) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, of near-duplicates, cos(e_i, e_j) >= ``threshold``, in ascending order.

    Args:
        embeddings: (n, d) float32; rows are L2-normalised here.
        threshold: cosine in [-1, 1]; higher = stricter.

    Raises:
        InvalidInput: wrong shape, non-finite or zero rows, or a threshold outside [-1, 1].
    """
    if not -1.0 <= threshold <= 1.0:
        raise InvalidInput(f"threshold: must be in [-1, 1], got {threshold!r}")
    e = _unit_rows(embeddings, "embeddings", None)
    pairs: list[tuple[int, int]] = []
    step = max(1, _BLOCK // max(e.shape[0], 1))
    for s in range(0, e.shape[0], step):
        rows, cols = np.nonzero(e[s : s + step] @ e.T >= np.float32(threshold))
        upper = cols > rows + s
        pairs.extend(zip((rows[upper] + s).tolist(), cols[upper].tolist(), strict=True))
    return pairs
