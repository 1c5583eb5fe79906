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
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from retain.errors import InvalidInput
from retain.retention.constraints import (
    _BLOCK,
    DEFAULT_MERGE_THRESHOLD,
    BoolArray,
    FloatArray,
    IntArray,
    RetentionProblem,
    RetentionResult,
    UnitRows,
    _check_mandatory,
    _check_policy,
    _density,
    _fill,
    _result,
    _sims,
    _tol,
    merge_candidates,
    near_duplicate_clusters,
)
from retain.retention.incremental import INCREMENTAL_POLICIES, Decision, IncrementalRetainer, choose_victims
from retain.retention.knapsack import knapsack

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
    "near_duplicate_clusters",
    "solve",
]

DEFAULT_EXACT_LIMIT = 5000
DEFAULT_TIME_LIMIT_S = 1.0
DEFAULT_SEED = 0
_DENSE_SIMS = 4096  # lookahead holds the (n, n) float32 similarity matrix up to this many items (64 MB)


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
        "knapsack": knapsack,
        "lookahead": _lookahead,
        "oracle": _oracle,
    }
)


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
