"""MCP recall round trip over stdio, beside the in-process ``Memory.search`` it wraps, in the same run.

Builds a store of N records in a temporary folder (HashingEncoder, so that no model load or forward
pass hides the cost of the protocol; ``--encoder minilm`` for the real model), then runs the same
queries twice: ``Memory.search(query, k=5)`` in this process, and the ``recall`` tool of ``retain mcp``
launched over stdio by the official ``mcp`` client (JSON-RPC over pipes, argument validation, a worker
thread, JSON results). Prints p50 and p95 wall-clock milliseconds of each, over the queries after
``--warmup`` untimed calls of each kind.

    python benchmarks/mcp_roundtrip.py [--records 2000] [--queries 200] [--warmup 20] [--encoder hashing|minilm]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import anyio
import numpy as np
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from retain import Memory
from retain.cli.common import make_encoder

WORDS = [
    "budget",
    "hotel",
    "flight",
    "train",
    "museum",
    "allergy",
    "deadline",
    "invoice",
    "refund",
    "courier",
    "bag",
    "kitchen",
    "permit",
    "contractor",
    "quote",
    "recital",
    "tempo",
    "chord",
    "paper",
    "sample",
    "window",
    "webhook",
    "key",
    "rate",
    "limit",
    "test",
    "lisbon",
    "porto",
    "paris",
    "tuesday",
]
NAMESPACE = "bench"


def texts(n: int, rng: random.Random) -> list[str]:
    return [f"note {i}: the " + " ".join(rng.sample(WORDS, 6)) for i in range(n)]


def percentiles(ms: list[float]) -> str:
    p50, p95 = np.percentile(np.asarray(ms), [50, 95])
    return f"p50 {p50:.2f} ms, p95 {p95:.2f} ms"


async def mcp_times(db: Path, queries: list[str], warmup: int) -> list[float]:
    server = StdioServerParameters(
        command=str(Path(sys.executable).with_name("retain")),
        args=["mcp", "--db", str(db), "--namespace", NAMESPACE],  # the store names its encoder
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    times = []
    async with Client(server, read_timeout_seconds=300) as client:
        for i, query in enumerate(queries[:warmup] + queries):
            start = time.perf_counter()
            result = await client.call_tool("recall", {"query": query, "k": 5})
            elapsed = (time.perf_counter() - start) * 1000
            if result.is_error:
                raise SystemExit(f"recall failed: {result.content}")
            if i >= warmup:
                times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--encoder", default="hashing", choices=["hashing", "minilm"])
    args = parser.parse_args()
    encoder = "hashing-384" if args.encoder == "hashing" else "minilm"
    rng = random.Random(7)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        with Memory(db, encoder=make_encoder(encoder)) as mem:
            mem.add_many([{"content": t} for t in texts(args.records, rng)], namespace=NAMESPACE)
            for query in queries[: args.warmup]:
                mem.search(query, namespace=NAMESPACE, k=5)
            local = []
            for query in queries:
                start = time.perf_counter()
                mem.search(query, namespace=NAMESPACE, k=5)
                local.append((time.perf_counter() - start) * 1000)
        remote = anyio.run(mcp_times, db, queries, args.warmup)
    print(f"{args.records} records, {args.queries} queries (k=5), encoder {encoder}")
    print(f"  Memory.search in process:  {percentiles(local)}")
    print(f"  MCP recall over stdio:     {percentiles(remote)}")


if __name__ == "__main__":
    main()
