"""Cost of observability: add / search / context latency with logging and tracing off and on.

Prints p50 and p95 per operation (milliseconds) for three settings: nothing configured (the
default), JSON logs to /dev/null, and JSON logs plus an OpenTelemetry SDK tracer provider with a
no-op span processor. Uses HashingEncoder so that the figures measure retain, not MiniLM.

    python benchmarks/observe_overhead.py [--records 2000] [--queries 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from retain import HashingEncoder, Memory
from retain.safety.observe import configure_logging, disable_logging

WORDS = [
    "harbour",
    "museum",
    "train",
    "hotel",
    "dinner",
    "ferry",
    "island",
    "market",
    "castle",
    "river",
    "bridge",
    "garden",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def run(records: int, queries: int) -> dict[str, list[float]]:
    mem = Memory(encoder=HashingEncoder(256))
    mem.add("The total budget must stay under 5000 EUR.", namespace="bench", type="hard_constraint")
    adds = timed(
        lambda i: mem.add(f"Day {i}: we saw the {WORDS[i % 12]} and the {WORDS[(i * 7) % 12]}.", namespace="bench"),
        records,
    )
    searches = timed(lambda i: mem.search(f"{WORDS[i % 12]} {WORDS[(i * 5) % 12]}", namespace="bench", k=10), queries)
    contexts = timed(
        lambda i: mem.context(WORDS[i % 12], namespace="bench", budget_tokens=200, k=20), max(1, queries // 3)
    )
    mem.close()
    return {"add": adds, "search": searches, "context": contexts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    results = {"off (default)": run(args.records, args.queries)}
    with open(os.devnull, "w") as sink:
        configure_logging(stream=sink)
        results["json logs"] = run(args.records, args.queries)
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        trace.set_tracer_provider(TracerProvider())  # spans are created and ended, no exporter
        results["json logs + SDK spans"] = run(args.records, args.queries)
        disable_logging()
    print(f"{args.records} adds, {args.queries} searches, {max(1, args.queries // 3)} contexts; HashingEncoder(256)")
    print(f"{'setting':<24}" + "".join(f"{op + ' p50':>14}{op + ' p95':>14}" for op in ("add", "search", "context")))
    for name, res in results.items():
        cells = "".join(
            f"{statistics.median(res[op]):>14.3f}{percentile(res[op], 0.95):>14.3f}"
            for op in ("add", "search", "context")
        )
        print(f"{name:<24}{cells}")
    print("milliseconds per call")


if __name__ == "__main__":
    main()
