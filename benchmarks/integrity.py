"""Integrity: share of hard constraints still in the core tier after 1,000 distractor turns.

    python benchmarks/integrity.py

Three hard constraints, then 1,000 distractor turns (HashingEncoder, record budget), for every
policy and budgets from 100 down to 3 (the size of the mandatory set); then budget 2 must refuse
the third constraint with BudgetInfeasible and lose nothing.
"""

from __future__ import annotations

import numpy as np

from retain import BudgetInfeasible, HashingEncoder, Memory, MemoryType, Tier
from retain.retention.budget import Budget

CONSTRAINTS = ("The total budget must stay under 5000 EUR.", "Must be home by Aug 18.", "No flights before 7am.")


class _Utility:
    name = "bench-utility"

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def score(self, records, contexts):  # type: ignore[no-untyped-def]
        return self.rng.random(len(records))

    def feedback(self, record, context, used):  # type: ignore[no-untyped-def]
        pass


def main() -> None:
    budgets = (100, 20, 10, 5, 4, 3)
    policies = ("fifo", "lru", "random", "utility", "knapsack", "lookahead")
    print("| policy | " + " | ".join(f"budget {b}" for b in budgets) + " |")
    print("|---|" + "---|" * len(budgets))
    for policy in policies:
        row = []
        for b in budgets:
            m = Memory(encoder=HashingEncoder(64), budget=Budget(b, policy=policy), utility=_Utility())
            ids = [m.add(c, namespace="ns", type=MemoryType.HARD_CONSTRAINT) for c in CONSTRAINTS]
            m.add_many([{"content": f"distractor turn {i}", "type": "chatter"} for i in range(1000)], namespace="ns")
            row.append(np.mean([m.get(i, namespace="ns").tier is Tier.CORE for i in ids]))
        print(f"| {policy} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    m = Memory(encoder=HashingEncoder(64), budget=Budget(2, policy="fifo"))
    held = [m.add(c, namespace="ns", type=MemoryType.HARD_CONSTRAINT) for c in CONSTRAINTS[:2]]
    try:
        m.add(CONSTRAINTS[2], namespace="ns", type=MemoryType.HARD_CONSTRAINT)
        print("budget 2: third constraint accepted (unexpected)")
    except BudgetInfeasible as exc:
        kept = all(m.get(i, namespace="ns").tier is Tier.CORE for i in held)
        print(f"budget 2: BudgetInfeasible ({exc}); the two held constraints still in core: {kept}")


if __name__ == "__main__":
    main()
