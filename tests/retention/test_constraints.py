"""The constrained optimizer (budget, mandatory items, quotas, diversity) against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from retain.errors import BudgetInfeasible, InvalidInput
from retain.retention.policies import RetentionProblem, near_duplicate_clusters, solve

TYPES = ("a", "b", "c")


def brute_force(p: RetentionProblem) -> tuple[float, np.ndarray] | None:
    """Best (objective, keep) over every subset meeting every constraint, or None when none does."""
    masks = ((np.arange(2**p.n)[:, None] >> np.arange(p.n)) & 1).astype(bool)
    ok = (masks @ p.costs <= p.budget + 1e-9) & masks[:, p.mandatory].all(axis=1)
    for t, q in (p.quotas or {}).items():
        ok &= masks[:, p.types == t].sum(axis=1) >= q
    if p.max_per_cluster is not None:
        for c in set(p.clusters.tolist()) - {-1}:
            ok &= masks[:, p.clusters == c].sum(axis=1) <= p.max_per_cluster
    if not ok.any():
        return None
    values = masks[ok] @ p.utility
    return float(values.max()), masks[ok][int(values.argmax())]


def random_problem(rng: np.random.Generator, n: int) -> RetentionProblem:
    costs = rng.integers(1, 6, n).astype(float)
    picked = rng.choice(TYPES, 2, replace=False).tolist()
    return RetentionProblem(
        costs=costs,
        utility=rng.random(n),
        mandatory=rng.random(n) < 0.1,
        budget=float(rng.integers(0, int(costs.sum()) + 1)),
        types=rng.choice(TYPES, n).astype(object),
        quotas={t: int(rng.integers(0, 3)) for t in picked},
        clusters=rng.integers(-1, 3, n),
        max_per_cluster=int(rng.integers(1, 3)),
    )


def check_slack(p: RetentionProblem, result) -> None:
    keep = result.keep
    assert result.slack["budget"] == pytest.approx(p.budget - p.costs[keep].sum())
    for t, q in p.quotas.items():
        assert result.slack[f"quota:{t}"] == np.count_nonzero(keep & (p.types == t)) - q
    most = max((np.count_nonzero(keep & (p.clusters == c)) for c in range(p.clusters.max() + 1)), default=0)
    assert result.slack["diversity"] == p.max_per_cluster - most


def test_exact_matches_brute_force_with_quotas_and_diversity() -> None:
    rng = np.random.default_rng(7)
    solved = infeasible = 0
    for _ in range(150):
        p = random_problem(rng, int(rng.integers(1, 11)))
        best = brute_force(p)
        if best is None:
            with pytest.raises(BudgetInfeasible, match=r"^(budget|quota:|diversity)"):
                solve(p, "knapsack")
            infeasible += 1
            continue
        result = solve(p, "knapsack")
        assert result.exact and result.feasible
        assert result.objective == pytest.approx(best[0], abs=1e-9)
        assert result.keep[p.mandatory].all()
        check_slack(p, result)
        solved += 1
    assert solved > 60 and infeasible > 10  # both branches exercised


def test_greedy_is_feasible_and_not_exact() -> None:
    rng = np.random.default_rng(11)
    seen = 0
    for _ in range(150):
        p = random_problem(rng, int(rng.integers(1, 11)))
        best = brute_force(p)
        if best is None:
            continue
        result = solve(p, "knapsack", exact_limit=0)
        assert result.feasible, result.slack
        assert result.keep[p.mandatory].all()
        assert result.objective <= best[0] + 1e-9
        check_slack(p, result)
        if result.method == "greedy":
            assert not result.exact
            seen += 1
    assert seen > 50


def test_infeasible_constraints_are_named_and_nothing_dropped() -> None:
    base = dict(costs=[1.0, 1.0, 1.0], utility=[0.5, 0.5, 0.5], types=np.array(["a", "a", "b"], dtype=object))
    with pytest.raises(BudgetInfeasible, match=r"^budget: mandatory items cost 3"):
        solve(RetentionProblem(mandatory=[True] * 3, budget=2, **base), "knapsack")
    with pytest.raises(BudgetInfeasible, match=r"^quota:b: needs 2"):
        solve(RetentionProblem(mandatory=[False] * 3, budget=3, quotas={"b": 2}, **base), "knapsack")
    with pytest.raises(BudgetInfeasible, match=r"^diversity: cluster 0 holds 2 mandatory"):
        p = RetentionProblem(mandatory=[True, True, False], budget=3, clusters=[0, 0, -1], max_per_cluster=1, **base)
        solve(p, "knapsack")
    with pytest.raises(BudgetInfeasible, match=r"^budget \+ quotas"):  # quota a needs 2 of a, cluster allows 1
        p = RetentionProblem(
            mandatory=[False] * 3, budget=3, quotas={"a": 2}, clusters=[0, 0, -1], max_per_cluster=1, **base
        )
        solve(p, "knapsack")


def test_diversity_keeps_at_most_m_per_cluster_even_when_all_fit() -> None:
    p = RetentionProblem(
        costs=[1.0] * 4, utility=[0.9, 0.8, 0.7, 0.1], mandatory=[False] * 4, budget=10,
        clusters=[0, 0, 0, -1], max_per_cluster=2,
    )  # fmt: skip
    result = solve(p, "knapsack")
    assert result.keep.tolist() == [True, True, False, True]
    assert result.exact and result.slack["diversity"] == 0 and result.method == "milp"


@pytest.mark.parametrize(("field", "value"), [("max_per_cluster", 0), ("clusters", [-2, 0, 0])])
def test_bad_diversity_fields_are_named(field: str, value: object) -> None:
    kwargs = {"clusters": [0, 0, 1], "max_per_cluster": 1, field: value}
    with pytest.raises(InvalidInput, match=field):
        RetentionProblem(costs=[1.0] * 3, utility=[0.5] * 3, mandatory=[False] * 3, budget=2, **kwargs)
    with pytest.raises(InvalidInput, match="clusters"):
        RetentionProblem(costs=[1.0], utility=[0.5], mandatory=[False], budget=1, max_per_cluster=1)


def test_near_duplicate_clusters_match_union_find() -> None:
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(4, 8))
    e = np.vstack([centres[rng.integers(0, 4, 30)] + 0.05 * rng.normal(size=(30, 8)), rng.normal(size=(10, 8))])
    got = near_duplicate_clusters(e, 0.9)
    u = e / np.linalg.norm(e, axis=1, keepdims=True)
    parent = list(range(len(e)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(len(e)):
        for j in range(i + 1, len(e)):
            if u[i] @ u[j] >= 0.9:
                parent[find(i)] = find(j)
    roots = [find(i) for i in range(len(e))]
    for i in range(len(e)):
        alone = roots.count(roots[i]) == 1
        assert (got[i] == -1) == alone
        for j in range(len(e)):
            if not alone:
                assert (got[i] == got[j]) == (roots[i] == roots[j])
    assert got[got >= 0].min() == 0 and got[0] == 0  # numbered from the first item
