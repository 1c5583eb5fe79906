"""The Lagrangian retention policy: hard guarantees by construction, multipliers driven by violations."""

from __future__ import annotations

import numpy as np
import pytest

from retain.errors import InvalidInput
from retain.retention.knapsack import knapsack
from retain.retention.lagrangian import evaluate, features, simulate_stream, train, violations


def test_simulated_streams_are_seeded_and_feasible() -> None:
    a, b = simulate_stream(3), simulate_stream(3)
    assert np.array_equal(a.utility, b.utility) and not np.array_equal(a.utility, simulate_stream(4).utility)
    best = knapsack(a, exact_limit=10**9, time_limit_s=10.0)
    assert best.feasible and best.exact and features(a).shape == (a.n, 10)
    assert all(v == 0 for v in violations(a, best.keep).values())


def test_training_raises_multipliers_until_training_violations_vanish() -> None:
    problems = [simulate_stream(s) for s in range(8)]
    policy, curve = train(problems, epochs=200)
    assert curve.violation_rate[0] > 0 and curve.violation_rate[-1] == 0.0
    assert all(v >= 0 for lam in curve.lambdas for v in lam.values())
    assert policy.lambdas["diversity"] > 0
    for p in [simulate_stream(s, n=60) for s in range(100, 110)]:
        keep = policy.decide(p)
        assert keep[p.mandatory].all()  # by construction
        assert p.costs[keep].sum() <= p.budget + 1e-9  # by construction
    figures = evaluate(policy, [simulate_stream(s, n=60) for s in range(100, 104)])
    assert figures["exact_share"] == 1.0 and 0.0 <= figures["violation_rate"] <= 1.0


def test_bad_training_input_is_refused() -> None:
    with pytest.raises(InvalidInput):
        train([])
    with pytest.raises(InvalidInput):
        simulate_stream(0, n=5)
