"""Load on the REST service: 50 concurrent clients, 80% search / 20% add, against one ``retain serve``
process and then two processes over one database file, on loopback.

Prints, for each configuration: requests/s, errors, lost writes (acknowledged ids missing from the
store afterwards), and p50 / p95 / p99 latency per operation (ms, measured by the clients, queueing
in the server included). Then the REST overhead: the p50 of one client's sequential requests minus
the p50 of the same calls made in-process on a ``Memory`` over the same file, interleaved call by
call (the client is ``http.client``; beside it the same with httpx, and the p50 of the time the
server's app spent on them: its ``Server-Timing`` header, auth, validation, the call, encoding; no
network, no client). Then where the REST p50 goes, from ``Server-Timing: app;dur=A, call;dur=C``:
the Memory call in the server (C, against the same call in-process: the two processes' memories
differ in their caches), the service's own work (A - C: routing, the key check, validation, JSON)
and HTTP outside the app (the client's time minus A: loopback, uvicorn, both processes waking up;
the part a loaded host stretches). Last, a summary of the figures against the targets (0 errors, 0 lost writes,
overhead <= 5 ms).

The servers run their Memory calls on the event loop (``retain serve``'s default ``--inline``);
``--threaded`` runs them with ``--threaded`` (a worker thread) instead, for comparison.

The embedding is ``HashingEncoder(256)`` (``--encoder hashing-256``) so the figures measure the
service (HTTP, JSON, auth, the store and the search path), not the MiniLM model. The store is
seeded with ``--seed-records`` records in one namespace first. Loopback only (127.0.0.1); every
client runs in this process on asyncio with httpx.

    python benchmarks/service_load.py [--seconds 60] [--clients 50] [--seed-records 1000] [--threaded]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
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


def start_server(
    db: Path, keys: Path, folder: Path, n: int, extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    ready = folder / f"ready{n}"
    cmd = [sys.executable, "-c", "from retain.cli.app import app; app()", "serve", "--db", str(db), "--keys", str(keys)]
    cmd += ["--encoder", "hashing-256", "--port", "0", "--ready-file", str(ready), *extra]
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


def server_timing(header: str | None) -> dict[str, float]:
    """``Server-Timing: app;dur=A, call;dur=C`` (milliseconds) as {"app": A, "call": C} in seconds,
    NaN for a missing entry."""
    out = {"app": float("nan"), "call": float("nan")}
    for part in (header or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name in out and dur:
            out[name] = float(dur) / 1000
    return out


@dataclass
class Stats:
    latency: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "add": []})
    app: dict[str, list[float]] = field(default_factory=lambda: {"search": [], "add": []})
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
        else:
            stats.app[op].append(server_timing(response.headers.get("server-timing"))["app"])
            if op == "add":
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


def report(title: str, db: Path, stats: Stats, wall: float) -> tuple[int, int]:
    """Print the run's figures; returns (errors, lost writes)."""
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
            f"p99 {pct(values, 99):7.1f} ms  (in the server app: p50 {pct(stats.app[op], 50):6.1f} ms)"
        )
    for line in stats.first_errors:
        print(f"  first errors: {line}")
    return sum(stats.errors.values()), len(lost)


class RawClient:
    """One keep-alive HTTP/1.1 connection with the standard library's ``http.client``: the leanest
    Python client, so the overhead measured is the service's, not the client library's."""

    def __init__(self, url: str, key: str) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def post(self, path: str, body: dict[str, object]) -> tuple[int, dict[str, float]]:
        """POST ``body``; returns the status and the server's ``Server-Timing`` (:func:`server_timing`)."""
        self.conn.request("POST", path, json.dumps(body).encode(), self.headers)
        response = self.conn.getresponse()
        response.read()
        return response.status, server_timing(response.getheader("server-timing"))

    def healthz(self) -> None:
        self.conn.request("GET", "/healthz")
        self.conn.getresponse().read()

    def close(self) -> None:
        self.conn.close()


def overhead(db: Path, url: str, key: str, n: int = 200) -> dict[str, float]:
    """p50 of ``n`` sequential searches, then ``n // 2`` adds, over HTTP (one client) minus p50 of the
    same calls in-process, interleaved call by call so that a change in the machine's load hits both
    alike. Each call is made three ways in a row: with ``http.client`` (:class:`RawClient`), in-process
    on a ``Memory`` over the same file, and with httpx. The searches read the seeded namespace and
    nothing writes meanwhile; each side adds to a namespace of its own, so neither pays for following
    the other's writes. Returns the p50 differences (ms) by op, ``http.client`` side."""
    rng = random.Random(7)
    ops = ("search", "add")
    rest: dict[str, list[float]] = {op: [] for op in ops}
    viahttpx: dict[str, list[float]] = {op: [] for op in ops}
    local: dict[str, list[float]] = {op: [] for op in ops}
    inside: dict[str, list[float]] = {op: [] for op in ops}
    called: dict[str, list[float]] = {op: [] for op in ops}
    own: dict[str, list[float]] = {op: [] for op in ops}
    outside: dict[str, list[float]] = {op: [] for op in ops}
    floor: list[float] = []
    calls = [("search", query(rng)) for _ in range(n)] + [("add", sentence(rng, f"o{i}")) for i in range(n // 2)]
    raw = RawClient(url, key)
    with (
        httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client,
        Memory(db, encoder=HashingEncoder(256)) as mem,
    ):
        for i, (op, text) in enumerate(calls):
            if op == "search":
                body: dict[str, object] = {"namespace": NAMESPACE, "query": text, "k": 10}
                path, status_ok = "/v1/search", 200
            else:
                body, path, status_ok = {"namespace": "bench/rest", "content": text}, "/v1/memories", 201
            t0 = time.perf_counter()
            status, timing = raw.post(path, body)
            t1 = time.perf_counter()
            if op == "search":
                mem.search(text, namespace=NAMESPACE, k=10)
            else:
                mem.add(text, namespace="bench/local")
            t2 = time.perf_counter()
            second = {**body, "content": f"{text} (httpx {i})"} if op == "add" else body
            response = client.post(path, json=second)
            t3 = time.perf_counter()
            raw.healthz()
            floor.append(time.perf_counter() - t3)
            assert status == status_ok and response.status_code == status_ok, (status, response.text)
            rest[op].append(t1 - t0)
            local[op].append(t2 - t1)
            viahttpx[op].append(t3 - t2)
            inside[op].append(timing["app"])
            called[op].append(timing["call"])
            own[op].append(timing["app"] - timing["call"])
            outside[op].append(t1 - t0 - timing["app"])
    raw.close()
    print("\nREST overhead (one client, sequential, interleaved call by call; p50 over HTTP minus p50 in-process):")
    diffs = {}
    for op in ops:
        a, b, h, app = pct(rest[op], 50), pct(local[op], 50), pct(viahttpx[op], 50), pct(inside[op], 50)
        diffs[op] = a - b
        print(f"  {op:6s} n={len(rest[op]):4d}  REST p50 {a:6.2f} ms  in-process p50 {b:6.2f} ms  ", end="")
        print(f"overhead {a - b:+6.2f} ms")
        print(f"         with httpx p50 {h:6.2f} ms ({h - b:+6.2f} ms); ", end="")
        print(f"in the server app p50 {app:6.2f} ms ({app - b:+6.2f} ms)")
        print(
            f"         where it goes (p50s): the Memory call in the server {pct(called[op], 50):6.2f} ms "
            f"({pct(called[op], 50) - b:+6.2f} ms against in-process), the service's own work (app minus call) "
            f"{pct(own[op], 50):5.2f} ms, HTTP outside the app (REST minus app) {pct(outside[op], 50):5.2f} ms"
        )
    print(f"  round trip of GET /healthz (no key, no store), p50 {pct(floor, 50):.2f} ms: HTTP on this machine alone")
    return diffs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="Duration of each load run (seconds).")
    parser.add_argument("--clients", type=int, default=50, help="Concurrent clients.")
    parser.add_argument("--seed-records", type=int, default=1000, help="Records stored before the load.")
    parser.add_argument("--threaded", action="store_true", help="Run the servers with --threaded.")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="retain-load-"))
    db, keys = folder / "load.db", folder / "keys.json"
    key, _ = KeyStore(keys).add(tenant="bench", actor="load", grants=[Grant("", "admin")])
    rng = random.Random(0)
    with Memory(db, encoder=HashingEncoder(256)) as mem:
        mem.add_many([{"content": sentence(rng, f"seed-{i}")} for i in range(args.seed_records)], namespace=NAMESPACE)
    print(f"service_load: {args.clients} clients, {args.seconds:.0f} s a run, 80% search / 20% add, k=10,")
    print(f"  hashing-256 encoder, {args.seed_records} seed records in one namespace, loopback, store {db}")

    extra = ("--threaded",) if args.threaded else ()
    print(f"  servers run Memory calls {'on a worker thread (--threaded)' if args.threaded else 'inline (--inline)'}")
    results: list[tuple[str, int, int]] = []
    one, url = start_server(db, keys, folder, 1, extra)
    try:
        stats, wall = asyncio.run(load([url], key, args.clients, args.seconds))
        results.append(("one server process", *report("one server process", db, stats, wall)))
        diffs = overhead(db, url, key)
    finally:
        stop(one)
    procs = [start_server(db, keys, folder, n, extra) for n in (2, 3)]
    try:
        stats, wall = asyncio.run(load([u for _, u in procs], key, args.clients, args.seconds))
        title = "two server processes, one store file"
        results.append((title, *report(title, db, stats, wall)))
    finally:
        for proc, _ in procs:
            stop(proc)
    print("\nsummary (targets: 0 errors, 0 lost writes, REST overhead p50 <= 5 ms):")
    for title, errors, lost in results:
        print(f"  {title}: errors {errors}, lost writes {lost}: {'met' if errors == lost == 0 else 'NOT met'}")
    for op, diff in diffs.items():
        print(f"  REST overhead, {op}: {diff:+.2f} ms p50: {'met' if diff <= 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
