"""The retention problem, its constraints and their slack: shared by every retention module.

A :class:`RetentionProblem` is one decision over ``n`` candidate items: keep a subset whose cost fits
the budget, that holds every mandatory item, meets each per-type minimum quota and keeps at most
``max_per_cluster`` items of any near-duplicate cluster (the diversity constraint). A
:class:`RetentionResult` reports what a policy kept, the objective, each constraint's slack and
whether the solution is proven optimal. :func:`check_feasible` refuses a problem no selection can
satisfy with :class:`~retain.errors.BudgetInfeasible` naming the constraint. Pure functions over
arrays; nothing here touches a store, the clock or the disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from retain.errors import BudgetInfeasible, InvalidInput, InvalidUtility

__all__ = [
    "DEFAULT_MERGE_THRESHOLD",
    "BoolArray",
    "FloatArray",
    "IntArray",
    "RetentionProblem",
    "RetentionResult",
    "UnitRows",
    "check_feasible",
    "cluster_counts",
    "merge_candidates",
    "near_duplicate_clusters",
]

_REL_TOL = 1e-9  # budget comparisons allow this relative slack (float sums of costs)
_BLOCK = 1 << 22  # similarity blocks hold at most 4M float32 (16 MB)
DEFAULT_MERGE_THRESHOLD = 0.92

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
        clusters: (n,) intp, near-duplicate cluster of each item (>= 0), -1 = in no cluster; see
            :func:`near_duplicate_clusters`.
        max_per_cluster: the diversity constraint, enforced by knapsack: at most this many kept
            items (mandatory ones included) share any one cluster id >= 0. None = no constraint.

    Raises:
        InvalidInput: wrong shape or dtype, negative or non-finite costs or budget, non-finite times,
            non-finite or zero embedding rows, malformed quotas, quotas without types,
            ``max_per_cluster`` < 1 or without ``clusters``, cluster ids < -1. Names the field.
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
    clusters: IntArray | None = None
    max_per_cluster: int | None = None

    def __post_init__(self) -> None:
        costs = _array(self.costs, "costs", np.float64, (None,))
        n = costs.shape[0]
        if not np.all(np.isfinite(costs)) or np.any(costs < 0):
            raise InvalidInput("costs: must be finite and >= 0")
        if not isinstance(self.budget, int | float | np.number) or not 0 <= float(self.budget) < np.inf:
            raise InvalidInput(f"budget: must be a finite number >= 0, got {self.budget!r}")
        if self.quotas and self.types is None:
            raise InvalidInput("types: required when quotas are given")
        m = self.max_per_cluster
        if m is not None and (isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1):
            raise InvalidInput(f"max_per_cluster: must be an int >= 1 or None, got {m!r}")
        if m is not None and self.clusters is None:
            raise InvalidInput("clusters: required when max_per_cluster is given")
        clusters = None if self.clusters is None else _array(self.clusters, "clusters", np.intp, (n,))
        if clusters is not None and np.any(clusters < -1):
            raise InvalidInput("clusters: ids must be >= 0, or -1 for an item in no cluster")
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
            "clusters": clusters,
            "max_per_cluster": None if m is None else int(m),
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

    @property
    def constrained(self) -> bool:
        """True when the problem has quotas or a diversity constraint."""
        return bool(self.quotas) or self.max_per_cluster is not None


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
        slack: "budget" -> budget - kept cost; "quota:<type>" -> kept count - quota;
            "diversity" -> max_per_cluster - the most kept items in one cluster. < 0 = violated.
        evicted: (k,) intp, the items not kept, first victim first where the policy has an order,
            otherwise by ascending utility.
    """

    keep: BoolArray
    objective: float
    exact: bool
    method: str
    slack: dict[str, float]
    evicted: IntArray

    @property
    def feasible(self) -> bool:
        """True when no constraint is violated (every slack >= 0, budget up to float tolerance)."""
        return all(v >= (-_REL_TOL * 1e3 if k == "budget" else 0.0) for k, v in self.slack.items())


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
    if p.max_per_cluster is not None:
        slack["diversity"] = float(p.max_per_cluster - int(cluster_counts(p, keep).max(initial=0)))
    order = np.lexsort((p.times()[0], p.utility)) if order is None else np.asarray(order, dtype=np.intp)
    return RetentionResult(
        keep=keep,
        objective=float(p.utility[keep].sum()) if objective is None else objective,
        exact=bool(keep.all()) if exact is None else exact,
        method=method,
        slack=slack,
        evicted=order[~keep[order]],
    )


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
            raise BudgetInfeasible(f"quota:{t}: needs {q} kept items of type {t!r}, only {int(of_type.sum())} exist")
        keep[pool[: max(missing, 0)]] = True
    return keep


def _quota_base(p: RetentionProblem) -> BoolArray:
    """Mandatory items plus the cheapest items completing each quota; types are disjoint, so this set
    fits the budget iff the knapsack problem is feasible."""
    keep = _complete_quotas(p, p.mandatory)
    used = float(p.costs[keep].sum())
    if used > p.budget + _tol(p.budget):
        raise BudgetInfeasible(
            f"budget + quotas: mandatory items plus the cheapest quota items cost {used:g}; budget is {p.budget:g}"
        )
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


def cluster_counts(p: RetentionProblem, keep: BoolArray) -> IntArray:
    """(k,) intp, kept items per cluster id 0..k-1 (clusters of -1 are not counted); empty without clusters."""
    if p.clusters is None:
        return np.zeros(0, dtype=np.intp)
    c = p.clusters[keep & (p.clusters >= 0)]
    out: IntArray = np.bincount(c, minlength=int(p.clusters.max(initial=-1)) + 1).astype(np.intp)
    return out


def _diverse(p: RetentionProblem, keep: BoolArray) -> bool:
    return p.max_per_cluster is None or int(cluster_counts(p, keep).max(initial=0)) <= p.max_per_cluster


def check_feasible(p: RetentionProblem) -> None:
    """Refuse a problem that no selection can satisfy, naming the constraint.

    Checks, in order: the mandatory items fit the budget ("budget"); each quota has enough items of
    its type ("quota:<type>"); no cluster holds more mandatory items than ``max_per_cluster``
    ("diversity"); the mandatory items plus the cheapest items completing each quota fit the budget
    ("budget + quotas"; exact without a diversity constraint because types are disjoint). With a
    diversity constraint the remaining joint infeasibility is detected by the exact solver.

    Raises:
        BudgetInfeasible: the message starts with the constraint's name. Nothing is dropped.
    """
    cost = float(p.costs[p.mandatory].sum())
    if cost > p.budget + _tol(p.budget):
        raise BudgetInfeasible(
            f"budget: mandatory items cost {cost:g}, over the budget {p.budget:g}; nothing was dropped"
        )
    for t, q in sorted((p.quotas or {}).items()):
        have = int(np.count_nonzero(p.of_type(t)))
        if have < q:
            raise BudgetInfeasible(f"quota:{t}: needs {q} kept items of type {t!r}, only {have} exist")
    if p.max_per_cluster is not None:
        counts = cluster_counts(p, p.mandatory)
        if counts.size and int(counts.max()) > p.max_per_cluster:
            c = int(counts.argmax())
            raise BudgetInfeasible(
                f"diversity: cluster {c} holds {int(counts[c])} mandatory items, max_per_cluster is {p.max_per_cluster}"
            )
    _quota_base(p)


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


def near_duplicate_clusters(embeddings: Any, threshold: float) -> IntArray:
    """(n,) intp cluster ids: connected components of the graph joining items with cos >= ``threshold``.

    Items with no near-duplicate get -1 (no cluster); clusters are numbered 0.. in order of their
    first item. Single linkage over :func:`merge_candidates` pairs.

    Args:
        embeddings: (n, d) float32; rows are L2-normalised here.
        threshold: cosine in [-1, 1]; higher = stricter.

    Raises:
        InvalidInput: wrong shape, non-finite or zero rows, or a threshold outside [-1, 1].
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    pairs = merge_candidates(embeddings, threshold)
    n = np.asarray(embeddings).shape[0]
    rows = [i for i, _ in pairs]
    cols = [j for _, j in pairs]
    out = np.full(n, -1, dtype=np.intp)
    if not rows:
        return out
    _, comp = connected_components(coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)), directed=False)
    sizes = np.bincount(comp)
    clustered = sizes[comp] > 1
    _, first = np.unique(comp[clustered], return_index=True)
    order = np.argsort(first)
    labels = np.full(comp.max() + 1, -1, dtype=np.intp)
    labels[np.unique(comp[clustered])[order]] = np.arange(order.size)
    out[clustered] = labels[comp[clustered]]
    return out


def _sims(rows: UnitRows, cols: UnitRows) -> UnitRows:
    """(len(rows), len(cols)) float32 similarities max(cos, 0) between unit rows, clipped to [0, 1]."""
    out: UnitRows = np.clip(rows @ cols.T, 0.0, 1.0)
    return out


def _density(value: float, cost: float) -> float:
    return value / cost if cost > 0 else (np.inf if value > 0 else 0.0)


def _check_policy(policy: str, allowed: Any) -> None:
    if policy not in allowed:
        raise InvalidInput(f"policy: {policy!r} is not one of {', '.join(sorted(allowed))}")


def _check_mandatory(p: RetentionProblem) -> None:
    cost = float(p.costs[p.mandatory].sum())
    if cost > p.budget + _tol(p.budget):
        raise BudgetInfeasible(
            f"budget: mandatory items cost {cost:g}, over the budget {p.budget:g}; nothing was dropped"
        )
