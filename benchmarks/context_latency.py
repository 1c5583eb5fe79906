"""What ``Memory.context`` costs at 10,000 records with an agent state (issue 20: p95 <= 50 ms).

Builds one namespace of N records (HashingEncoder at 384 dims, so the shipped state scorer applies
and no model load distorts the timing; ``--encoder minilm`` for the real model), ``--constraints``
of them hard constraints, and ``--budget`` capacity (records over it go to the archive, so the
archive look-up has something to search; 0 = no budget). Then runs ``--queries`` context calls
with a state that changes every ``--state-every`` calls, and, as the reference in the same run, the
same ``Memory.search`` with the same state (the search every context call makes once for the hot
tier). Prints p50 / p95 wall time (``perf_counter``) of both and the ratio context / search, for
``archive=False`` and ``archive=True``, at each ``--tokens`` budget.

    python benchmarks/context_latency.py [--records 10000] [--constraints 100] [--budget 2000]
        [--queries 200] [--state-every 10] [--tokens 1000] [--encoder hashing|minilm]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from retain import Budget, HashingEncoder, Memory, MemoryConfig
from retain.config import GraphConfig
from retain.encoders.basis import Encoder, MiniLMEncoder

# fmt: off
WORDS = (
    "budget", "hotel", "flight", "train", "museum", "allergy", "deadline", "invoice", "refund",
    "courier", "tag", "bag", "kitchen", "permit", "contractor", "quote", "recital", "tempo",
    "chord", "paper", "sample", "window", "api", "webhook", "key", "rate", "limit", "test",
)
ACKS = ("ok", "Nice, thanks!", "Anything else left to book?", "Sounds good.", "Great, go ahead.")
# fmt: on


def _texts(n: int, constraints: int, rng: np.random.Generator) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS, size=6))
        if i % max(n // max(constraints, 1), 1) == 0 and sum(1 for x in items if "type" in x) < constraints:
            items.append({"content": f"The {words} must stay under {100 + i} EUR.", "type": "hard_constraint"})
        elif i % 7 == 0:
            items.append({"content": ACKS[i % len(ACKS)] + f" ({i})", "type": "chatter"})
        else:
            text = f"Turn {i}: the {words} is {i % 97} units."
            items.append({"content": text, "type": "fact", "state": {"phase": f"p{i % 9}"}})
    return items


def _p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--constraints", type=int, default=100)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--state-every", type=int, default=10)
    ap.add_argument("--tokens", type=str, default="1000")
    ap.add_argument("--encoder", choices=("hashing", "minilm"), default="hashing")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    encoder: Encoder = HashingEncoder(384) if args.encoder == "hashing" else MiniLMEncoder()
    fast = MemoryConfig(supersede=False, resolve_times=False, graph=GraphConfig(edges_on_write=False))
    budget = Budget(args.budget, policy="fifo") if args.budget else None
    mem = Memory(encoder=encoder, config=fast, budget=budget)
    items = _texts(args.records, args.constraints, rng)
    started = time.perf_counter()
    for start in range(0, len(items), 1000):
        mem.add_many(items[start : start + 1000], namespace="bench")
    print(f"{args.records:,} records ({args.constraints} hard constraints, budget {args.budget or 'none'}) "
          f"added in {time.perf_counter() - started:.1f} s; encoder {encoder.name}")  # fmt: skip
    queries = [f"what about the {' '.join(rng.choice(WORDS, size=2))}?" for _ in range(args.queries)]
    states = [
        {"phase": f"p{i % 9}", "subgoals": [f"check {WORDS[i % len(WORDS)]}"], "last_result": f"step {i} done"}
        for i in range(args.queries // args.state_every + 1)
    ]
    for tokens in [int(t) for t in args.tokens.split(",")]:
        for archive in (False, True):
            ctx_ms, search_ms = [], []
            for i, query in enumerate(queries):
                state = states[i // args.state_every]
                t0 = time.perf_counter()
                mem.context(query, namespace="bench", budget_tokens=tokens, state=state, archive=archive)
                t1 = time.perf_counter()
                mem.search(query, namespace="bench", k=40, state=state, include_superseded=True)
                t2 = time.perf_counter()
                ctx_ms.append((t1 - t0) * 1000)
                search_ms.append((t2 - t1) * 1000)
            print(
                f"tokens {tokens}, archive={archive}: "
                f"context p50 {_p(ctx_ms, 50):.1f} ms, p95 {_p(ctx_ms, 95):.1f} ms; "
                f"search (reference) p50 {_p(search_ms, 50):.1f} ms, p95 {_p(search_ms, 95):.1f} ms; "
                f"ratio p95 {_p(ctx_ms, 95) / _p(search_ms, 95):.2f}"
            )


if __name__ == "__main__":
    main()
