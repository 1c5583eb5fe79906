"""A learned retention policy trained with a Lagrangian relaxation of the integrity constraints.

The policy is cheap and per-item: a logistic score ``p_i = sigmoid(theta . phi_i + b)`` over item
features (utility, cost, utility per cost, type one-hots, age, near-duplicate redundancy, rank inside
the cluster), plus the multipliers' terms of the Lagrangian

    value_i = p_i + lambda_quota * [i is one of the q best items of a quota type]
                  - lambda_diversity * [rank_i in its cluster >= m]

(the second term is item i's contribution to meeting a quota q, counted over the items not crowded
out of their cluster; the third its contribution to a diversity violation: the (m+1)-th and later
items of a cluster by score). Mandatory items are kept first, by
construction; the rest are taken by decreasing value while value > 0 and the budget allows, so the
budget is never exceeded. Quotas and diversity are soft, priced by the multipliers.

Training (constrained policy optimisation, primal-dual; Altman 1999, Tessler et al. 2019) on
simulated streams (:func:`simulate_stream`): each epoch one full-batch gradient step of
cross-entropy towards the exact MILP's keep decisions (primal), then dual ascent on every constraint
``lambda <- max(0, lambda + eta * mean violation)``: the multipliers rise until violations reach zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from retain.errors import InvalidInput
from retain.retention.constraints import BoolArray, FloatArray, IntArray, RetentionProblem, cluster_counts
from retain.retention.knapsack import knapsack

__all__ = [
    "STREAM_TYPES",
    "LagrangianPolicy",
    "TrainingCurve",
    "evaluate",
    "features",
    "simulate_stream",
    "train",
    "violations",
]

STREAM_TYPES = ("fact", "soft_preference", "event", "chatter")
_TYPE_P = (0.3, 0.15, 0.2, 0.35)
_TYPE_UTILITY = {"fact": (4.0, 3.0), "soft_preference": (2.0, 5.0), "event": (3.0, 3.0), "chatter": (1.5, 6.0)}


def simulate_stream(
    seed: int, *, n: int = 160, budget_share: float = 0.3, quota: int = 6, max_per_cluster: int = 2
) -> RetentionProblem:
    """One simulated memory of ``n`` items (a stream read to its end), seeded.

    Types from :data:`STREAM_TYPES` (soft preferences are rarer and less useful, so their quota
    binds); costs are tokens, 5-80; utility ~ Beta by type; 40% of items are near-duplicates in
    clusters of 2-6 (a paraphrase: utility within +-0.05 of the cluster's first item); 2-4 items
    are hard constraints (mandatory, cost <= 40). Budget = ``budget_share`` x total cost, at least
    the mandatory cost. Quota: ``quota`` soft preferences (capped at the number
    that cluster caps allow; the budget is raised to fit them if needed);
    diversity: ``max_per_cluster``.

    Raises:
        InvalidInput: n < 10, budget_share outside (0, 1], quota < 0 or max_per_cluster < 1.
    """
    if n < 10 or not 0 < budget_share <= 1 or quota < 0 or max_per_cluster < 1:
        raise InvalidInput(f"simulate_stream: bad n={n}, budget_share={budget_share}, quota={quota}")
    rng = np.random.default_rng(seed)
    types = rng.choice(np.array(STREAM_TYPES, dtype=object), n, p=_TYPE_P)
    utility = np.array([rng.beta(*_TYPE_UTILITY[t]) for t in types])
    costs = rng.integers(5, 81, n).astype(np.float64)
    clusters = np.full(n, -1, dtype=np.intp)
    i, c = 0, 0
    while i < n:
        if rng.random() < 0.12:
            size = int(rng.integers(2, 7))
            members = np.arange(i, min(n, i + size * 4), 4)[:size]  # paraphrases spread over the stream
            members = members[clusters[members] < 0]
            if members.size >= 2:
                clusters[members] = c
                types[members] = types[members[0]]
                utility[members] = np.clip(utility[members[0]] + rng.uniform(-0.05, 0.05, members.size), 0, 1)
                c += 1
        i += 1
    mandatory = np.zeros(n, dtype=bool)
    hard = rng.choice(np.flatnonzero(clusters < 0), int(rng.integers(2, 5)), replace=False)
    mandatory[hard], costs[hard] = True, np.minimum(costs[hard], 40.0)
    soft = np.flatnonzero(types == "soft_preference")
    by_cost = soft[np.argsort(costs[soft], kind="stable")]
    eligible = [
        i
        for k, i in enumerate(by_cost)
        if clusters[i] < 0 or np.sum(clusters[by_cost[:k]] == clusters[i]) < max_per_cluster
    ]
    have = min(quota, len(eligible))  # the quota is always attainable: within cluster caps and the budget
    need = float(costs[mandatory].sum() + costs[eligible[:have]].sum())
    budget = max(budget_share * float(costs.sum()), need)
    return RetentionProblem(
        costs=costs,
        utility=utility,
        mandatory=mandatory,
        budget=budget,
        inserted_at=np.arange(n, dtype=np.float64),
        types=types,
        quotas={"soft_preference": have},
        clusters=clusters,
        max_per_cluster=max_per_cluster,
    )


def _cluster_rank(p: RetentionProblem, score: FloatArray) -> IntArray:
    """(n,) intp, rank of each item inside its cluster by decreasing ``score`` (mandatory first); 0
    outside clusters."""
    rank = np.zeros(p.n, dtype=np.intp)
    if p.clusters is None:
        return rank
    order = np.lexsort((-score, ~p.mandatory, p.clusters))
    cl = p.clusters[order]
    start = np.r_[0, np.flatnonzero(np.diff(cl)) + 1]
    pos = np.arange(p.n) - np.repeat(start, np.diff(np.r_[start, p.n]))
    rank[order] = np.where(cl >= 0, pos, 0)
    return rank


def features(p: RetentionProblem) -> FloatArray:
    """(n, 10) float64 item features: utility, cost / mean cost, utility per 10 tokens, the four
    :data:`STREAM_TYPES` one-hots, age (0 = newest, 1 = oldest), redundancy (cluster size - 1), rank in
    the cluster by utility (0 = best)."""
    n = p.n
    types = p.types if p.types is not None else np.full(n, "", dtype=object)
    sizes = np.zeros(n)
    if p.clusters is not None and np.any(p.clusters >= 0):
        counts = np.bincount(p.clusters[p.clusters >= 0])
        sizes = np.where(p.clusters >= 0, counts[np.maximum(p.clusters, 0)], 1) - 1.0
    inserted = p.times()[0]
    span = max(float(np.ptp(inserted)), 1e-9) if n else 1.0
    return np.column_stack(
        [
            p.utility,
            p.costs / max(float(p.costs.mean()), 1e-9) if n else p.costs,
            10.0 * p.utility / np.maximum(p.costs, 1e-9),
            *[(types == t).astype(np.float64) for t in STREAM_TYPES],
            (inserted.max(initial=0.0) - inserted) / span,
            sizes,
            _cluster_rank(p, p.utility).astype(np.float64),
        ]
    )


def violations(p: RetentionProblem, keep: BoolArray) -> dict[str, float]:
    """Constraint -> normalised violation (0 = satisfied): "budget" (excess / budget), "quota"
    (shortfall / quota, summed over types), "diversity" (items over ``max_per_cluster``, summed over
    clusters, / max_per_cluster), "mandatory" (share of mandatory items dropped)."""
    out = {"budget": max(0.0, float(p.costs[keep].sum()) - p.budget) / max(p.budget, 1e-9)}
    out["quota"] = sum(
        max(0, q - int(np.count_nonzero(keep & p.of_type(t)))) / max(q, 1) for t, q in (p.quotas or {}).items()
    )
    m = p.max_per_cluster
    out["diversity"] = 0.0 if m is None else float(np.maximum(cluster_counts(p, keep) - m, 0).sum()) / m
    out["mandatory"] = float(np.count_nonzero(p.mandatory & ~keep)) / max(int(p.mandatory.sum()), 1)
    return out


@dataclass
class LagrangianPolicy:
    """The learned policy: weights (10,) float64 over :func:`features` (standardised by ``mean``,
    ``scale``), ``bias``, the multipliers ``lambdas`` ("quota", "diversity"; >= 0), and
    ``quota_margin``: the policy aims at ``q + quota_margin`` items of each quota type (a tightened
    constraint, trained against too, so the multiplier carries a safety margin to unseen streams)."""

    weights: FloatArray
    bias: float
    mean: FloatArray
    scale: FloatArray
    lambdas: dict[str, float] = field(default_factory=lambda: {"quota": 0.0, "diversity": 0.0})
    quota_margin: int = 1

    def prob(self, x: FloatArray) -> FloatArray:
        """(n,) float64 in (0, 1): predicted probability that the exact solver keeps each item."""
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))
        return out

    def decide(self, p: RetentionProblem, x: FloatArray | None = None) -> BoolArray:
        """(n,) bool keep decision for ``p``: mandatory items, then by decreasing Lagrangian value
        while positive and within the budget (see the module docstring). O(n log n)."""
        score = self.prob(features(p) if x is None else x)
        crowded = np.zeros(p.n, dtype=bool)
        if p.max_per_cluster is not None and p.clusters is not None:
            crowded = (p.clusters >= 0) & (_cluster_rank(p, score) >= p.max_per_cluster)
        needed = np.zeros(p.n, dtype=bool)  # the q best uncrowded items of each quota type
        for t, q in (p.quotas or {}).items():
            pool = np.flatnonzero(p.of_type(t) & ~crowded & ~p.mandatory)
            held = int(np.count_nonzero(p.of_type(t) & p.mandatory))
            want = 0 if q == 0 else q + self.quota_margin
            needed[pool[np.argsort(-score[pool], kind="stable")][: max(want - held, 0)]] = True
        value = score + self.lambdas["quota"] * needed - self.lambdas["diversity"] * crowded
        keep = p.mandatory.copy()
        room = p.budget - float(p.costs[keep].sum())
        costs = p.costs.tolist()
        for i in np.argsort(-value, kind="stable").tolist():
            if value[i] <= 0:
                break
            if not keep[i] and costs[i] <= room:
                keep[i], room = True, room - costs[i]
        return keep


@dataclass(frozen=True)
class TrainingCurve:
    """Per epoch: mean cross-entropy loss, share of training decisions violating any constraint,
    and the multipliers after the dual step."""

    loss: tuple[float, ...]
    violation_rate: tuple[float, ...]
    lambdas: tuple[dict[str, float], ...]


def train(
    problems: Sequence[RetentionProblem],
    *,
    epochs: int = 300,
    lr: float = 0.5,
    eta: float = 0.5,
    quota_margin: int = 1,
) -> tuple[LagrangianPolicy, TrainingCurve]:
    """Primal-dual training on ``problems`` (simulated streams): labels are the exact knapsack
    solver's decisions (HiGHS MILP, every constraint); each epoch one gradient step on the mean
    cross-entropy (``lr``), then ``lambda_c <- max(0, lambda_c + eta * mean violation_c)``, the
    quota violation measured against the tightened quota ``q + quota_margin`` (capped at the
    items of that type).

    Raises:
        InvalidInput: no problems, epochs < 1, lr or eta not > 0.
    """
    if not problems or epochs < 1 or not lr > 0 or not eta > 0:
        raise InvalidInput(f"train: need problems, epochs >= 1, lr > 0, eta > 0; got {len(problems)}, {epochs}")
    xs = [features(p) for p in problems]
    ys = [knapsack(p, exact_limit=10**9, time_limit_s=10.0).keep for p in problems]
    x_all, y_all = np.vstack(xs), np.concatenate(ys).astype(np.float64)
    mean, scale = x_all.mean(axis=0), x_all.std(axis=0)
    scale[scale == 0] = 1.0
    z_all = (x_all - mean) / scale
    policy = LagrangianPolicy(np.zeros(x_all.shape[1]), 0.0, mean, scale, quota_margin=quota_margin)
    tight = [_tightened(p, quota_margin) for p in problems]
    losses: list[float] = []
    rates: list[float] = []
    history: list[dict[str, float]] = []
    for _ in range(epochs):
        prob = policy.prob(x_all)
        losses.append(float(-np.mean(y_all * np.log(prob + 1e-12) + (1 - y_all) * np.log(1 - prob + 1e-12))))
        policy.weights -= lr * (z_all.T @ (prob - y_all)) / y_all.size
        policy.bias -= lr * float(np.mean(prob - y_all))
        viol = [violations(t, policy.decide(p, x)) for p, t, x in zip(problems, tight, xs, strict=True)]
        rates.append(float(np.mean([any(v > 0 for v in d.values()) for d in viol])))
        for c in ("quota", "diversity"):
            policy.lambdas[c] = max(0.0, policy.lambdas[c] + eta * float(np.mean([d[c] for d in viol])))
        history.append(dict(policy.lambdas))
    return policy, TrainingCurve(tuple(losses), tuple(rates), tuple(history))


def _tightened(p: RetentionProblem, margin: int) -> RetentionProblem:
    quotas = {t: min(q + margin, int(np.count_nonzero(p.of_type(t)))) if q else 0 for t, q in (p.quotas or {}).items()}
    return replace(p, quotas=quotas)


def evaluate(policy: LagrangianPolicy, problems: Sequence[RetentionProblem]) -> dict[str, float]:
    """Held-out figures: optimality gap vs the exact MILP, % of the optimum (mean, p95, max; lower =
    better), violation rate (share of decisions violating any constraint; goal 0), and the share of
    decisions where the exact solver proved optimality.

    Raises:
        InvalidInput: no problems.
    """
    if not problems:
        raise InvalidInput("evaluate: no problems")
    gaps: list[float] = []
    violated: list[bool] = []
    exact: list[bool] = []
    for p in problems:
        best = knapsack(p, exact_limit=10**9, time_limit_s=10.0)
        keep = policy.decide(p)
        gaps.append(100.0 * (best.objective - float(p.utility[keep].sum())) / max(best.objective, 1e-12))
        violated.append(any(v > 0 for v in violations(p, keep).values()))
        exact.append(best.exact)
    g: NDArray[np.float64] = np.asarray(gaps)
    return {
        "decisions": float(len(problems)),
        "gap_mean_pct": float(g.mean()),
        "gap_p95_pct": float(np.percentile(g, 95)),
        "gap_max_pct": float(g.max()),
        "violation_rate": float(np.mean(violated)),
        "exact_share": float(np.mean(exact)),
    }
