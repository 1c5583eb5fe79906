"""Exact and greedy 0-1 knapsack with integrity constraints: the ``knapsack`` retention policy.

maximise sum(utility * keep) subject to sum(costs * keep) <= budget, keep[mandatory] = 1, for each
quota type t sum(keep[types == t]) >= quotas[t], and (diversity) for each near-duplicate cluster c
sum(keep[clusters == c]) <= max_per_cluster.

Without a diversity constraint: LP relaxation (HiGHS), reduced-cost fixing, then an exact core DP or
:func:`scipy.optimize.milp`. With one: :func:`scipy.optimize.milp` (HiGHS branch and cut) on the whole
problem. Above ``exact_limit`` items: greedy by utility/cost with a repair step for quotas.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from retain.errors import BudgetInfeasible
from retain.retention.constraints import (
    BoolArray,
    FloatArray,
    IntArray,
    RetentionProblem,
    RetentionResult,
    _complete_quotas,
    _diverse,
    _fill,
    _fits,
    _quota_base,
    _quotas_met,
    _result,
    _tol,
    check_feasible,
    cluster_counts,
)

__all__ = ["knapsack"]

_MAX_STATES = 200_000  # exact knapsack core: partial solutions kept before handing over to HiGHS


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


def knapsack(p: RetentionProblem, *, exact_limit: int, time_limit_s: float, **_: Any) -> RetentionResult:
    """The ``knapsack`` policy: max sum(utility * keep) under the budget, mandatory items, quotas and
    the diversity constraint (see the module docstring). Victims are listed by ascending utility/cost.

    ``exact=True`` when HiGHS or the core DP proved optimality (method "dp", "milp") or everything
    fits ("trivial"); "greedy" above ``exact_limit`` items, or when the time limit ran out.

    Raises:
        BudgetInfeasible: no selection satisfies the constraints; the message names the constraint.
    """
    check_feasible(p)  # refuses infeasible budgets, quotas and diversity before any work
    with np.errstate(all="ignore"):
        order = np.lexsort((-p.utility, -np.where(p.costs > 0, p.utility / p.costs, np.inf)))
    everything = np.ones(p.n, dtype=bool)
    if float(p.costs.sum()) <= p.budget + _tol(p.budget) and _diverse(p, everything):
        return _result(p, everything, "trivial", exact=True, order=order[::-1])
    if p.max_per_cluster is not None:
        return _diverse_knapsack(p, order, exact_limit, time_limit_s)
    greedy = _greedy_knapsack(p, order)
    if p.n > exact_limit:
        return _result(p, greedy, "greedy", exact=False, order=order[::-1])
    keep, optimal, method = _exact_knapsack(p, greedy, order, time_limit_s)
    return _result(p, keep, method, exact=optimal, order=order[::-1])


def _greedy_diverse(p: RetentionProblem, order: IntArray) -> BoolArray | None:
    """Greedy under the diversity constraint: the mandatory items, then a quota repair (the cheapest
    items of each short type whose cluster has room, ties: higher utility), then the rest by
    utility/cost while budget and cluster room allow. None when the repair cannot meet a quota."""
    assert p.clusters is not None and p.max_per_cluster is not None
    keep = p.mandatory.copy()
    counts = cluster_counts(p, keep).copy()  # one slot per cluster id
    room = p.budget - float(p.costs[keep].sum()) + _tol(p.budget)
    cluster, costs, cap = p.clusters.tolist(), p.costs.tolist(), p.max_per_cluster

    def take(i: int) -> bool:
        nonlocal room
        if keep[i] or costs[i] > room or (cluster[i] >= 0 and counts[cluster[i]] >= cap):
            return False
        keep[i], room = True, room - costs[i]
        if cluster[i] >= 0:
            counts[cluster[i]] += 1
        return True

    cheapest = np.lexsort((-p.utility, p.costs))
    for t, q in sorted((p.quotas or {}).items()):
        missing = q - int(np.count_nonzero(keep & p.of_type(t)))
        for i in cheapest[p.of_type(t)[cheapest]].tolist():
            if missing <= 0:
                break
            missing -= take(i)
        if missing > 0:
            return None
    for i in order.tolist():
        take(i)
    return keep


def _constraint_rows(p: RetentionProblem) -> tuple[FloatArray, FloatArray, FloatArray, list[str]]:
    """(rows, lower, upper, names) of the linear constraints: budget, quotas, crowded clusters."""
    rows, lo, hi, names = [p.costs], [-np.inf], [p.budget + _tol(p.budget)], ["budget"]
    for t, q in sorted((p.quotas or {}).items()):
        rows.append(p.of_type(t).astype(np.float64))
        lo, hi, names = [*lo, float(q)], [*hi, np.inf], [*names, f"quota:{t}"]
    if p.clusters is not None and p.max_per_cluster is not None:
        sizes = np.bincount(p.clusters[p.clusters >= 0]) if np.any(p.clusters >= 0) else np.zeros(0, np.intp)
        for c in np.flatnonzero(sizes > p.max_per_cluster).tolist():
            rows.append((p.clusters == c).astype(np.float64))
            lo, hi, names = [*lo, -np.inf], [*hi, float(p.max_per_cluster)], [*names, "diversity"]
    return np.vstack(rows), np.asarray(lo), np.asarray(hi), names


def _diverse_knapsack(p: RetentionProblem, order: IntArray, exact_limit: int, time_limit_s: float) -> RetentionResult:
    """Greedy (with quota repair) above ``exact_limit``; otherwise HiGHS MILP on the whole problem,
    never returning worse than the greedy selection."""
    greedy = _greedy_diverse(p, order)
    if greedy is not None and p.n > exact_limit:
        return _result(p, greedy, "greedy", exact=False, order=order[::-1])
    a, lo, hi, _ = _constraint_rows(p)
    res = milp(
        -p.utility,
        integrality=np.ones(p.n),
        bounds=Bounds(p.mandatory.astype(np.float64), np.ones(p.n)),
        constraints=LinearConstraint(a, lo, hi),
        options={"time_limit": time_limit_s, "mip_rel_gap": 0.0},
    )
    if res.status == 2:
        raise BudgetInfeasible(
            "budget + quotas + diversity: no selection meets them together (HiGHS proved infeasibility); "
            "nothing was dropped"
        )
    if res.x is None:
        if greedy is None:
            raise BudgetInfeasible(
                f"budget + quotas + diversity: no feasible selection found within {time_limit_s:g} s; "
                "nothing was dropped"
            )
        return _result(p, greedy, "greedy", exact=False, order=order[::-1])
    keep = np.round(res.x) > 0.5
    if greedy is not None and float(p.utility[greedy].sum()) > float(p.utility[keep].sum()):
        keep = greedy
    return _result(p, keep, "milp", exact=res.status == 0, order=order[::-1])
