"""Load on the REST service: 50 concurrent clients, 80% search / 20% add, against one ``retain serve``
process and then two processes over one database file, on loopback.

Prints, for each configuration: requests/s, errors, lost writes (acknowledged ids missing from the
store afterwards), and p50 / p95 / p99 latency per operation (ms, measured by the clients, queueing
in the server included). Then the REST overhead: the p50 of one client's sequential requests minus
the p50 of the same calls made in-process on a ``Memory`` over the same file.

The embedding is ``HashingEncoder(256)`` (``--encoder hashing-256``) so the figures measure the
service (HTTP, JSON, auth, the store and the search path), not the MiniLM model. The store is
seeded with ``--seed-records`` records in one namespace first. Loopback only (127.0.0.1); every
client runs in this process on asyncio with httpx.

    python benchmarks/service_load.py [--seconds 60] [--clients 50] [--seed-records 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

from retain import Grant, HashingEncoder, Memory
from retain.service.keys import KeyStore

NAMESPACE = "bench/load"
WORDS = [
    *("budget", "train", "hotel", "flight", "dock", "crate", "invoice", "meeting", "report", "station"),
    *("museum", "visa", "passport", "ticket", "deadline", "contract", "supplier", "warehouse", "shipment"),
    *("refund", "booking", "dinner", "lunch", "taxi", "airport"),
]
STARTUP_SECONDS = 180


def sentence(rng: random.Random, tag: str) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(8))
    return f"{tag}: the {words} was noted."


def query(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(3))


def start_server(db: Path, keys: Path, folder: Path, n: int) -> tuple[subprocess.Popen[bytes], str]:
    ready = folder / f"ready{n}"
    cmd = [sys.executable, "-c", "from retain.cli.app import app; app()", "serve", "--db", str(db), "--keys", str(keys)]
    cmd += ["--encoder", "hashing-256", "--port", "0", "--ready-file", str(ready)]
    log = open(folder / f"serve{n}.log", "ab")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    deadline = time.monotonic() + STARTUP_SECONDS
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError((folder / f"serve{n}.log").read_text())
        time.sleep(0.1)
    return proc, "http://" + ready.read_text().strip()


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "add": []})
    errors: dict[str, int] = field(default_factory=lambda: {"search": 0, "add": 0})
    acknowledged: list[str] = field(default_factory=list)
    first_errors: list[str] = field(default_factory=list)


async def client_loop(client: httpx.AsyncClient, rng: random.Random, stats: Stats, name: str, stop_at: float) -> None:
    i = 0
    while time.monotonic() < stop_at:
        if rng.random() < 0.8:
            op, path, body = "search", "/v1/search", {"namespace": NAMESPACE, "query": query(rng), "k": 10}
        else:
            op, path, body = "add", "/v1/memories", {"namespace": NAMESPACE, "content": sentence(rng, f"{name}-{i}")}
        t0 = time.perf_counter()
        try:
            response = await client.post(path, json=body)
            good = response.status_code == (201 if op == "add" else 200)
            detail = response.text[:200]
        except httpx.HTTPError as exc:
            good, detail = False, repr(exc)
        stats.latency[op].append(time.perf_counter() - t0)
        if not good:
            stats.errors[op] += 1
            if len(stats.first_errors) < 3:
                stats.first_errors.append(f"{op}: {detail}")
        elif op == "add":
            stats.acknowledged.append(response.json()["id"])
        i += 1


async def load(urls: list[str], key: str, clients: int, seconds: float) -> tuple[Stats, float]:
    stats = Stats()
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    pool = [httpx.AsyncClient(base_url=u, headers=headers, timeout=60, limits=limits) for u in urls]
    start = time.monotonic()
    stop_at = start + seconds
    try:
        await asyncio.gather(
            *(client_loop(pool[c % len(pool)], random.Random(c), stats, f"c{c}", stop_at) for c in range(clients))
        )
    finally:
        for client in pool:
            await client.aclose()
    return stats, time.monotonic() - start


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000, q)) if values else float("nan")


def report(title: str, db: Path, stats: Stats, wall: float) -> None:
    with Memory(db, encoder=HashingEncoder(256), state_scorer=False) as mem:
        stored = {r.id for r in mem.records(namespace=NAMESPACE, include_superseded=True)}
    lost = [rid for rid in stats.acknowledged if rid not in stored]
    total = sum(len(v) for v in stats.latency.values())
    print(f"\n{title}: {total} requests in {wall:.1f} s = {total / wall:.0f} requests/s")
    print(f"  errors: {sum(stats.errors.values())} (search {stats.errors['search']}, add {stats.errors['add']})")
    print(f"  lost writes: {len(lost)} of {len(stats.acknowledged)} acknowledged adds")
    for op, values in stats.latency.items():
        print(
            f"  {op:6s} n={len(values):6d}  p50 {pct(values, 50):7.1f} ms  p95 {pct(values, 95):7.1f} ms  "
            f"p99 {pct(values, 99):7.1f} ms"
        )
    for line in stats.first_errors:
        print(f"  first errors: {line}")


def overhead(db: Path, url: str, key: str, n: int = 300) -> None:
    """p50 of ``n`` sequential calls over HTTP (one client) minus p50 of the same calls in-process,
    the two interleaved call by call so that a change in the machine's load hits both alike."""
    rng = random.Random(7)
    rest: dict[str, list[float]] = {"search": [], "add": []}
    local: dict[str, list[float]] = {"search": [], "add": []}
    floor: list[float] = []
    headers = {"Authorization": f"Bearer {key}"}
    with (
        httpx.Client(base_url=url, headers=headers, timeout=60) as client,
        Memory(db, encoder=HashingEncoder(256)) as mem,
    ):
        for i in range(n):
            op = "add" if i % 4 == 3 else "search"
            if op == "search":
                q = query(rng)
                t0 = time.perf_counter()
                client.post("/v1/search", json={"namespace": NAMESPACE, "query": q, "k": 10}).raise_for_status()
                t1 = time.perf_counter()
                mem.search(q, namespace=NAMESPACE, k=10)
            else:
                text = sentence(rng, f"overhead-{i}")
                t0 = time.perf_counter()
                client.post("/v1/memories", json={"namespace": NAMESPACE, "content": text}).raise_for_status()
                t1 = time.perf_counter()
                mem.add(text.replace("overhead", "local"), namespace=NAMESPACE)
            t2 = time.perf_counter()
            client.get("/healthz").raise_for_status()
            floor.append(time.perf_counter() - t2)
            rest[op].append(t1 - t0)
            local[op].append(t2 - t1)
    print("\nREST overhead (one client, sequential, interleaved; p50 over HTTP minus p50 in-process, one store):")
    for op in ("search", "add"):
        a, b = pct(rest[op], 50), pct(local[op], 50)
        print(f"  {op:6s} n={len(rest[op]):4d}  REST p50 {a:6.2f} ms  in-process p50 {b:6.2f} ms  ", end="")
        print(f"overhead {a - b:+6.2f} ms")
    print(f"  round trip of GET /healthz (no key, no store), p50 {pct(floor, 50):.2f} ms: HTTP on this machine alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="Duration of each load run (seconds).")
    parser.add_argument("--clients", type=int, default=50, help="Concurrent clients.")
    parser.add_argument("--seed-records", type=int, default=1000, help="Records stored before the load.")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="retain-load-"))
    db, keys = folder / "load.db", folder / "keys.json"
    key, _ = KeyStore(keys).add(tenant="bench", actor="load", grants=[Grant("", "admin")])
    rng = random.Random(0)
    with Memory(db, encoder=HashingEncoder(256)) as mem:
        mem.add_many([{"content": sentence(rng, f"seed-{i}")} for i in range(args.seed_records)], namespace=NAMESPACE)
    print(f"service_load: {args.clients} clients, {args.seconds:.0f} s a run, 80% search / 20% add, k=10,")
    print(f"  hashing-256 encoder, {args.seed_records} seed records in one namespace, loopback, store {db}")

    one, url = start_server(db, keys, folder, 1)
    try:
        stats, wall = asyncio.run(load([url], key, args.clients, args.seconds))
        report("one server process", db, stats, wall)
        overhead(db, url, key)
    finally:
        stop(one)
    procs = [start_server(db, keys, folder, n) for n in (2, 3)]
    try:
        stats, wall = asyncio.run(load([u for _, u in procs], key, args.clients, args.seconds))
        report("two server processes, one store file", db, stats, wall)
    finally:
        for proc, _ in procs:
            stop(proc)


if __name__ == "__main__":
    main()
