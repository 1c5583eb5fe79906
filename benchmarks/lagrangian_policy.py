"""Lagrangian retention policy: optimality gap vs the exact MILP and violation rate on held-out streams.

    python benchmarks/lagrangian_policy.py [--train 40] [--test 60] [--epochs 300] [--margin 1]

Trains :mod:`retain.retention.lagrangian` on simulated streams (seeds 0..train-1), evaluates on seeds
1000..1000+test-1 (held out), and prints the training curve summary, the final multipliers and the
held-out figures; "multipliers off" is the same scorer with lambda = 0 (no constraint pricing).
"""

from __future__ import annotations

import argparse
import time

from retain.retention.lagrangian import LagrangianPolicy, evaluate, simulate_stream, train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=40)
    ap.add_argument("--test", type=int, default=60)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--margin", type=int, default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    policy, curve = train([simulate_stream(s) for s in range(args.train)], epochs=args.epochs, quota_margin=args.margin)
    print(f"trained on {args.train} streams x 160 items in {time.perf_counter() - t0:.1f} s")
    for e in sorted({0, args.epochs // 10, args.epochs // 4, args.epochs // 2, args.epochs - 1}):
        lam = ", ".join(f"{k}={v:.3f}" for k, v in curve.lambdas[e].items())
        print(
            f"  epoch {e + 1:4d}: loss {curve.loss[e]:.4f}  train violation rate {curve.violation_rate[e]:.3f}  {lam}"
        )
    first_zero = next((i + 1 for i, r in enumerate(curve.violation_rate) if r == 0.0), None)
    print(f"  first epoch with zero training violations: {first_zero}")
    print("final multipliers:", {k: round(v, 4) for k, v in policy.lambdas.items()})
    test = [simulate_stream(s) for s in range(1000, 1000 + args.test)]
    off = LagrangianPolicy(policy.weights, policy.bias, policy.mean, policy.scale, quota_margin=args.margin)
    print("| policy | decisions | gap mean % | gap p95 % | gap max % | violation rate | exact MILP share |")
    print("|---|---|---|---|---|---|---|")
    for name, pol in (("lagrangian", policy), ("multipliers off", off)):
        r = evaluate(pol, test)
        print(
            f"| {name} | {r['decisions']:.0f} | {r['gap_mean_pct']:.2f} | {r['gap_p95_pct']:.2f} | "
            f"{r['gap_max_pct']:.2f} | {r['violation_rate']:.3f} | {r['exact_share']:.2f} |"
        )


if __name__ == "__main__":
    main()
