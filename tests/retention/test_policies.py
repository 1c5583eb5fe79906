"""retain.retention.policies against brute force and plain reference implementations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import Bounds, LinearConstraint, milp

from retain.errors import BudgetInfeasible, InvalidInput, InvalidUtility
from retain.retention import knapsack
from retain.retention import policies as retention
from retain.retention.policies import (
    POLICIES,
    IncrementalRetainer,
    RetentionProblem,
    choose_victims,
    merge_candidates,
    solve,
)

TYPES = ("a", "b", "c")


def all_subsets(n: int) -> np.ndarray:
    """(2**n, n) bool, every subset of n items."""
    return ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)


def feasible_subsets(p: RetentionProblem) -> np.ndarray:
    masks = all_subsets(p.n)
    ok = (masks @ p.costs <= p.budget + 1e-9) & masks[:, p.mandatory].all(axis=1)
    for t, q in (p.quotas or {}).items():
        ok &= masks[:, p.types == t].sum(axis=1) >= q
    return masks[ok]


def random_problem(rng: np.random.Generator, n: int, *, quotas: bool = True, float_costs: bool = False):
    costs = rng.uniform(0.1, 7.0, n) if float_costs else rng.integers(1, 8, n).astype(float)
    utility = rng.random(n) if rng.random() < 0.7 else rng.integers(0, 4, n) / 3.0  # ties too
    types = rng.choice(TYPES, n).astype(object)
    picked = rng.choice(TYPES, 2, replace=False).tolist()
    mandatory = rng.random(n) < 0.15
    low = int(costs[mandatory].sum()) if rng.random() < 0.85 else 0  # mostly feasible, sometimes not
    return RetentionProblem(
        costs=costs,
        utility=utility,
        mandatory=mandatory,
        budget=float(rng.integers(low, int(costs.sum()) + 2)),
        inserted_at=rng.integers(0, 5, n).astype(float),
        last_access=rng.integers(0, 5, n).astype(float),
        embeddings=rng.normal(size=(n, 6)),
        types=types,
        quotas={t: int(rng.integers(0, 3)) for t in picked} if quotas else None,
        labels=rng.random(n) < 0.4,
    )


def assert_feasible(p: RetentionProblem, keep: np.ndarray) -> None:
    assert keep[p.mandatory].all(), "a mandatory item was dropped"
    assert p.costs[keep].sum() <= p.budget + 1e-9 * max(1.0, p.budget), "over budget"


# --- knapsack ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("float_costs", [False, True])
def test_knapsack_matches_brute_force(float_costs: bool) -> None:
    rng = np.random.default_rng(7)
    solved = 0
    for _ in range(400):
        p = random_problem(rng, int(rng.integers(0, 13)), float_costs=float_costs)
        feasible = feasible_subsets(p)
        if feasible.shape[0] == 0:
            with pytest.raises((BudgetInfeasible, InvalidInput)):
                solve(p, "knapsack")
            continue
        result = solve(p, "knapsack")
        best = float((feasible @ p.utility).max())
        assert result.exact
        assert result.method in {"dp", "milp", "trivial"}
        assert result.objective == pytest.approx(best, abs=1e-7)
        assert result.objective == pytest.approx(float(p.utility[result.keep].sum()))
        assert_feasible(p, result.keep)
        for t, q in p.quotas.items():
            assert result.slack[f"quota:{t}"] == np.count_nonzero(result.keep & (p.types == t)) - q >= 0
        solved += 1
    assert solved >= 180  # enough feasible instances to mean something


def test_knapsack_milp_fallback_matches_brute_force(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knapsack, "_MAX_STATES", 0)  # the core DP gives up at once: HiGHS solves the core
    rng = np.random.default_rng(8)
    methods = set()
    for _ in range(80):
        p = random_problem(rng, int(rng.integers(1, 11)))
        feasible = feasible_subsets(p)
        if feasible.shape[0] == 0:
            continue
        result = solve(p, "knapsack")
        methods.add(result.method)
        assert result.exact and result.objective == pytest.approx(float((feasible @ p.utility).max()), abs=1e-7)
        assert_feasible(p, result.keep)
    assert "milp" in methods


def test_knapsack_matches_highs_on_a_large_core() -> None:
    """Near-equal utility/cost ratios leave every item in the core (more than 64: multi-word states)."""
    rng = np.random.default_rng(0)
    n = 120
    costs = rng.integers(1, 400, n).astype(float)
    utility = costs / 400 * (1 + 0.01 * rng.random(n))
    types = rng.choice(["a", "b"], n).astype(object)
    p = RetentionProblem(costs, utility, np.zeros(n, bool), costs.sum() / 3, types=types, quotas={"a": n // 3})
    result = solve(p, "knapsack")
    reference = milp(
        -utility,
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
        constraints=[
            LinearConstraint(costs[None], -np.inf, p.budget),
            LinearConstraint((types == "a").astype(float)[None], n // 3, np.inf),
        ],
        options={"mip_rel_gap": 0.0},
    )
    assert reference.status == 0 and result.exact
    assert result.objective == pytest.approx(-reference.fun, abs=1e-7)
    assert_feasible(p, result.keep) and result.slack["quota:a"] >= 0


@st.composite
def problems(draw: st.DrawFn, max_n: int = 30) -> RetentionProblem:
    n = draw(st.integers(0, max_n))

    def floats(lo: float, hi: float) -> st.SearchStrategy[list[float]]:
        return st.lists(st.floats(lo, hi, allow_nan=False), min_size=n, max_size=n)

    return RetentionProblem(
        costs=draw(floats(0.0, 20.0)),
        utility=draw(floats(0.0, 1.0)),
        mandatory=draw(st.lists(st.sampled_from([False, False, False, True]), min_size=n, max_size=n)),
        budget=draw(st.floats(0.0, 150.0)),
        types=np.array(draw(st.lists(st.sampled_from(TYPES), min_size=n, max_size=n)), dtype=object),
        quotas=draw(st.dictionaries(st.sampled_from(TYPES), st.integers(0, 3), max_size=3)),
    )


def truly_infeasible(p: RetentionProblem) -> bool:
    """Independent check: mandatory items plus the cheapest items completing each quota exceed the budget."""
    cost = p.costs[p.mandatory].sum()
    for t, q in p.quotas.items():
        of_type = p.types == t
        missing = q - np.count_nonzero(of_type & p.mandatory)
        pool = np.sort(p.costs[of_type & ~p.mandatory])
        if pool.size < missing:
            return True
        cost += pool[: max(missing, 0)].sum()
    return cost > p.budget + 1e-9 * max(1.0, p.budget)  # the library's documented float tolerance


@settings(max_examples=300, deadline=None)
@given(problems())
def test_greedy_fallback_never_violates_constraints(p: RetentionProblem) -> None:
    try:
        result = solve(p, "knapsack", exact_limit=0)
    except (BudgetInfeasible, InvalidInput):
        assert truly_infeasible(p)
        return
    assert not truly_infeasible(p)
    assert result.method in {"greedy", "trivial"}
    assert_feasible(p, result.keep)
    assert all(result.slack[f"quota:{t}"] >= 0 for t in p.quotas)
    assert result.slack["budget"] >= -1e-9 * max(1.0, p.budget)


def test_greedy_fallback_is_within_half_of_optimum_without_quotas() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        p = random_problem(rng, int(rng.integers(1, 11)), quotas=False)
        feasible = feasible_subsets(p)
        if feasible.shape[0] == 0:
            continue
        result = solve(p, "knapsack", exact_limit=0)
        mandatory_value = float(p.utility[p.mandatory].sum())
        best = float((feasible @ p.utility).max())
        assert result.objective - mandatory_value >= 0.5 * (best - mandatory_value) - 1e-9


def test_knapsack_above_exact_limit_is_greedy() -> None:
    rng = np.random.default_rng(3)
    p = random_problem(rng, 40, quotas=False)
    p = RetentionProblem(costs=p.costs, utility=p.utility, mandatory=np.zeros(40, bool), budget=p.costs.sum() / 3)
    assert solve(p, "knapsack", exact_limit=39).method == "greedy"
    assert solve(p, "knapsack", exact_limit=40).method in {"dp", "milp"}


# --- eviction orders against a sorted-list reference -------------------------------------------------


def reference_evict(p: RetentionProblem, policy: str) -> tuple[np.ndarray, list[int]]:
    """Plain cache eviction: walk the non-mandatory items in policy order, evict until the rest fits."""
    ins = p.inserted_at if p.inserted_at is not None else np.arange(p.n, dtype=float)
    acc = p.last_access if p.last_access is not None else ins
    keys = {
        "fifo": lambda i: (ins[i], i),
        "lru": lambda i: (acc[i], ins[i], i),
        "utility": lambda i: (p.utility[i], ins[i], i),
    }[policy]
    keep, used, evicted = np.ones(p.n, dtype=bool), float(p.costs.sum()), []
    for i in sorted((i for i in range(p.n) if not p.mandatory[i]), key=keys):
        if used <= p.budget:
            break
        keep[i], used = False, used - p.costs[i]
        evicted.append(i)
    return keep, evicted


@pytest.mark.parametrize("policy", ["fifo", "lru", "utility"])
def test_eviction_orders_match_reference(policy: str) -> None:
    rng = np.random.default_rng(5)
    for _ in range(300):
        p = random_problem(rng, int(rng.integers(0, 25)), quotas=False)
        if p.costs[p.mandatory].sum() > p.budget:
            continue
        keep, evicted = reference_evict(p, policy)
        result = solve(p, policy)
        assert result.keep.tolist() == keep.tolist()
        assert result.evicted.tolist() == evicted
        assert result.method == policy


def test_random_policy_is_seeded_uniform_and_keeps_mandatory() -> None:
    n = 6
    p = RetentionProblem(costs=np.ones(n), utility=np.full(n, 0.5), mandatory=np.eye(n, dtype=bool)[0], budget=3)
    counts = np.zeros(n)
    for seed in range(3000):
        result = solve(p, "random", rng=np.random.default_rng(seed))
        assert result.keep[0] and result.keep.sum() == 3
        counts += result.keep
    assert solve(p, "random").keep.tolist() == solve(p, "random").keep.tolist()
    assert np.all(np.abs(counts[1:] / 3000 - 0.4) < 0.03)  # 2 of 5 non-mandatory slots


def test_oracle_keeps_as_many_needed_items_as_possible() -> None:
    rng = np.random.default_rng(9)
    for _ in range(150):
        p = random_problem(rng, int(rng.integers(1, 11)), quotas=False)
        feasible = feasible_subsets(p)
        if feasible.shape[0] == 0:
            continue
        result = solve(p, "oracle")
        assert_feasible(p, result.keep)
        assert np.count_nonzero(result.keep & p.labels) == (feasible & p.labels).sum(axis=1).max()


# --- lookahead -----------------------------------------------------------------------------------------


def test_lookahead_keeps_one_of_two_duplicates_and_the_distinct_item() -> None:
    e = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)
    p = RetentionProblem(costs=np.ones(3), utility=[0.9, 0.8, 0.5], mandatory=np.zeros(3, bool), budget=2, embeddings=e)
    result = solve(p, "lookahead")
    assert result.keep[2] and result.keep[:2].sum() == 1
    assert result.objective == pytest.approx(0.9 + 0.8 + 0.5)
    assert solve(p, "utility").keep.tolist() == [True, True, False]  # the redundancy-blind baseline


def test_lookahead_without_the_dense_matrix_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(12)
    p = random_problem(rng, 60, quotas=False)
    p = RetentionProblem(p.costs, p.utility, np.zeros(60, bool), p.costs.sum() / 3, embeddings=p.embeddings)
    dense = solve(p, "lookahead")
    monkeypatch.setattr(retention, "_DENSE_SIMS", 0)
    computed = solve(p, "lookahead")
    assert_feasible(p, computed.keep)  # float32 GEMM vs GEMV rounding may swap items tied in value
    assert computed.objective == pytest.approx(dense.objective, rel=1e-6)
    assert computed.objective == pytest.approx(facility_location(p, computed.keep), abs=1e-5)


def facility_location(p: RetentionProblem, keep: np.ndarray) -> float:
    if not keep.any():
        return 0.0
    sims = np.clip(p.embeddings @ p.embeddings[keep].T, 0.0, 1.0)
    return float(p.utility @ sims.max(axis=1))


def test_lookahead_objective_and_greedy_guarantee_against_brute_force() -> None:
    rng = np.random.default_rng(13)
    bound = (1 - 1 / math.e) / 2
    for _ in range(120):
        n = int(rng.integers(1, 10))
        base = rng.normal(size=(3, 5))
        e = base[rng.integers(0, 3, n)] + 0.3 * rng.normal(size=(n, 5))  # clusters of near-duplicates
        p = random_problem(rng, n, quotas=False)
        p = RetentionProblem(costs=p.costs, utility=p.utility, mandatory=p.mandatory, budget=p.budget, embeddings=e)
        feasible = feasible_subsets(p)
        if feasible.shape[0] == 0:
            continue
        result = solve(p, "lookahead")
        assert_feasible(p, result.keep)
        assert result.objective == pytest.approx(facility_location(p, result.keep), abs=1e-5)
        best = max(facility_location(p, keep) for keep in feasible)
        assert result.objective >= bound * best - 1e-6


# --- errors and edge cases ---------------------------------------------------------------------------


def full_problem(**changes: object) -> RetentionProblem:
    fields: dict[str, object] = {
        "costs": [3.0, 2.0, 1.0],
        "utility": [0.2, 0.5, 0.9],
        "mandatory": [True, True, False],
        "budget": 4.0,
        "embeddings": np.eye(3),
        "labels": [True, False, True],
        "types": np.array(["a", "b", "a"], dtype=object),
    }
    return RetentionProblem(**{**fields, **changes})  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_mandatory_over_budget_raises_and_names_costs(policy: str) -> None:
    with pytest.raises(BudgetInfeasible, match=r"cost 5.*budget 4"):
        solve(full_problem(), policy)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -0.1, 1.5])
def test_bad_utility_is_refused(bad: float) -> None:
    with pytest.raises(InvalidUtility, match="utility"):
        full_problem(utility=[0.2, bad, 0.9])


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_zero_budget_keeps_nothing(policy: str) -> None:
    result = solve(full_problem(mandatory=[False] * 3, budget=0), policy)
    assert not result.keep.any()
    assert sorted(result.evicted.tolist()) == [0, 1, 2]
    assert result.slack["budget"] == 0


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_empty_problem(policy: str) -> None:
    p = RetentionProblem(costs=[], utility=[], mandatory=[], budget=1, embeddings=np.zeros((0, 3)), labels=[])
    assert solve(p, policy).keep.shape == (0,)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("utility", [0.5, 0.5]),
        ("mandatory", [True]),
        ("embeddings", np.eye(2)),
        ("labels", [[True, False, True]]),
        ("inserted_at", [0.0, math.nan, 1.0]),
        ("costs", [1.0, -1.0, 1.0]),
        ("budget", -1.0),
        ("quotas", {"a": -1}),
    ],
)
def test_invalid_fields_are_named(field: str, value: object) -> None:
    with pytest.raises(InvalidInput, match=field):
        full_problem(**{field: value})


def test_missing_inputs_and_unknown_policy() -> None:
    p = full_problem(mandatory=[False] * 3, embeddings=None, labels=None)
    for policy, field in [("lookahead", "embeddings"), ("oracle", "labels"), ("lfu", "policy")]:
        with pytest.raises(InvalidInput, match=field):
            solve(p, policy)
    with pytest.raises(BudgetInfeasible, match="quota:a"):  # a quota above the items of its type
        solve(full_problem(mandatory=[False] * 3, quotas={"a": 3}), "knapsack")
    assert set(POLICIES) == {"fifo", "lru", "random", "utility", "knapsack", "lookahead", "oracle"}


# --- incremental decisions ----------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["fifo", "lru", "utility"])
def test_incremental_heap_agrees_with_full_resolve(policy: str) -> None:
    for seed in range(15):
        rng = np.random.default_rng(seed)
        budget = float(rng.integers(0, 25))
        retainer = IncrementalRetainer(policy, budget)
        cost, util, ins, acc, mand = [], [], [], [], []
        for step in range(150):
            if policy == "lru" and retainer.kept.size and rng.random() < 0.5:
                j = int(rng.choice(retainer.kept))
                acc[j] = float(rng.integers(0, step + 1))
                retainer.touch(j, acc[j])
            c, u, t = float(rng.integers(0, 6)), float(rng.integers(0, 5)) / 4, float(step // 3)
            m = bool(rng.random() < 0.05 and sum(x for x, y in zip(cost, mand, strict=True) if y) + c <= budget)
            cost, util, ins, acc, mand = [*cost, c], [*util, u], [*ins, t], [*acc, t], [*mand, m]
            current = np.r_[retainer.kept, step]
            p = RetentionProblem(
                costs=np.array(cost)[current],
                utility=np.array(util)[current],
                mandatory=np.array(mand)[current],
                budget=budget,
                inserted_at=np.array(ins)[current],
                last_access=np.array(acc)[current],
            )
            expected = current[solve(p, policy).keep]
            assert current[choose_victims(p, policy, current.size - 1).keep].tolist() == expected.tolist()
            decision = retainer.add(c, u, mandatory=m, inserted_at=t)
            assert retainer.kept.tolist() == expected.tolist()
            assert decision.admitted == (step in expected)
            assert retainer.used <= budget


@pytest.mark.parametrize("policy", ["fifo", "utility"])
def test_incremental_unit_costs_match_solve_over_whole_history(policy: str) -> None:
    rng = np.random.default_rng(1)
    utility = rng.random(400)
    retainer = IncrementalRetainer(policy, 50)
    for i, u in enumerate(utility):
        retainer.add(1.0, float(u))
        history = RetentionProblem(costs=np.ones(i + 1), utility=utility[: i + 1], mandatory=np.zeros(i + 1), budget=50)
        assert retainer.kept.tolist() == np.flatnonzero(solve(history, policy).keep).tolist()


def test_incremental_knapsack_swaps_only_for_more_value_and_keeps_quotas() -> None:
    retainer = IncrementalRetainer("knapsack", 4, quotas={"a": 1})
    for u, t in [(0.2, "a"), (0.1, "b"), (0.3, "b"), (0.4, "b")]:
        assert retainer.add(1, u, type=t).admitted
    assert retainer.add(1, 0.05, type="b").evicted == (4,)  # worth less than any victim: turned away
    assert retainer.add(1, 0.9, type="b").evicted == (1,)  # lowest ratio goes; item 0 holds quota "a"
    assert retainer.add(2, 0.9, type="b").evicted == (2, 3)  # 0.3 + 0.4 < 0.9
    assert retainer.add(1, 1.0, type="b").evicted == (6,)  # item 0 is locked by its quota
    assert retainer.kept.tolist() == [0, 5, 7]

    rng = np.random.default_rng(2)
    stream, types, reached = IncrementalRetainer("knapsack", 30, quotas={"a": 2}), [], False
    for _ in range(500):
        types.append(str(rng.choice(TYPES)))
        stream.add(float(rng.integers(1, 6)), float(rng.random()), type=types[-1])
        count = sum(types[j] == "a" for j in stream.kept)
        assert stream.used <= 30 and (count >= 2 or not reached)  # once met, a quota is never broken
        reached = reached or count >= 2
    assert reached


def test_incremental_lookahead_turns_away_duplicates_and_admits_new_information() -> None:
    e = np.eye(4, dtype=np.float32)
    retainer = IncrementalRetainer("lookahead", 2, dim=4)
    retainer.add(1, 0.8, embedding=e[0])
    retainer.add(1, 0.5, embedding=e[1])
    assert retainer.add(1, 0.9, embedding=e[0]).evicted == (2,)  # adds nothing the memory lacks
    assert retainer.add(1, 0.9, embedding=e[2]).evicted == (1,)  # new information beats the weakest
    assert retainer.kept.tolist() == [0, 3]

    dup = RetentionProblem(
        costs=np.ones(3), utility=[0.8, 0.8, 0.6], mandatory=np.zeros(3), budget=2, embeddings=e[[0, 0, 1]]
    )
    result = choose_victims(dup, "lookahead", 2)  # memory holds two copies; the distinct newcomer replaces one
    assert result.keep[2] and result.keep[:2].sum() == 1
    assert result.objective == pytest.approx(0.8 + 0.8 + 0.6)


def test_incremental_lookahead_stream_respects_budget_and_mandatory() -> None:
    rng = np.random.default_rng(4)
    retainer = IncrementalRetainer("lookahead", 20, dim=8)
    centres = rng.normal(size=(5, 8))
    mandatory = []
    for i in range(300):
        m = i % 50 == 0
        retainer.add(
            float(rng.integers(1, 4)),
            float(rng.random()),
            mandatory=m,
            embedding=centres[i % 5] + 0.1 * rng.normal(size=8),
        )
        mandatory += [i] if m else []
        assert retainer.used <= 20 and set(mandatory) <= set(retainer.kept.tolist())
    with pytest.raises(BudgetInfeasible):
        IncrementalRetainer("utility", 1).add(2, 0.5, mandatory=True)


def test_incremental_lru_after_many_touches() -> None:
    rng = np.random.default_rng(3)
    retainer, accessed = IncrementalRetainer("lru", 5), [0.0, 1.0, 2.0, 3.0, 4.0]
    for _ in range(5):
        retainer.add(1.0, 0.5)
    for t in range(5, 1005):  # enough touches to force a rebuild of the heap
        j = int(rng.integers(0, 5))
        accessed[j] = float(t)
        retainer.touch(j, float(t))
    assert retainer.add(1.0, 0.5, inserted_at=2000.0).evicted == (int(np.argmin(accessed)),)


def test_incremental_edge_cases() -> None:
    alone = RetentionProblem(costs=[2.0], utility=[0.5], mandatory=[False], budget=1, embeddings=[[1.0, 0.0]])
    for policy in ("fifo", "utility", "knapsack", "lookahead"):
        result = choose_victims(alone, policy, 0)  # does not fit even in an empty memory
        assert result.evicted.tolist() == [0] and result.objective == 0 and not result.exact
    with pytest.raises(InvalidInput, match="dim"):
        IncrementalRetainer("lookahead", 5)
    with pytest.raises(InvalidInput, match="policy"):
        IncrementalRetainer("random", 5)
    with pytest.raises(InvalidInput, match="new_index"):
        choose_victims(alone, "fifo", 1)


# --- merge candidates --------------------------------------------------------------------------------


def test_merge_candidates_matches_pairwise_loop() -> None:
    rng = np.random.default_rng(6)
    e = rng.normal(size=(60, 16))
    e[10], e[40], e[41] = e[3] + 0.01, e[7] * 2, e[7] + 0.2 * rng.normal(size=16)
    unit = e / np.linalg.norm(e, axis=1, keepdims=True)
    for threshold in (0.92, 0.5, 0.0):
        expected = [
            (i, j) for i, j in itertools.combinations(range(60), 2) if float(unit[i] @ unit[j]) >= threshold + 1e-6
        ]
        found = merge_candidates(e, threshold)
        assert set(expected) <= set(found) and found == sorted(found)
        assert all(float(unit[i] @ unit[j]) >= threshold - 1e-6 for i, j in found)
    assert {(3, 10), (7, 40)} <= set(merge_candidates(e))
    with pytest.raises(InvalidInput, match="threshold"):
        merge_candidates(e, 1.5)
