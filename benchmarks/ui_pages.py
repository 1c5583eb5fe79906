"""Server time of each dashboard page at 100,000 records in one namespace, and the page weight of
the records page.

The store is filled directly through the store contract (records with precomputed random unit
vectors, 64 dimensions, in bulk batches; one "add" audit entry per record, an "evict" entry per
archived one, a few superseded versions and pinned hard constraints), then one context is packed
with ``Memory.context`` (HashingEncoder). Each page is requested in-process through the app
(routing, store queries, templates; no network), after warm-up requests that also verify the audit
chain once (its time is printed apart: the status is cached until the log's head moves).

    python benchmarks/ui_pages.py [--records 100000] [--repeat 40] [--db PATH]

With ``--db`` an existing file filled by an earlier run is reused.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from retain import HashingEncoder, Memory
from retain.record import MemoryRecord, MemoryType, Tier, new_id
from retain.store import ALL_RECORDS, AppendAudit, AuditEntry, PutRecords, QueryAudit
from retain.ui.app import create_app
from retain.ui.auth import local_admin

NS = "bench"
DIM = 64
T0 = datetime(2026, 1, 1, tzinfo=UTC)
WORDS = ["hotel", "budget", "flight", "museum", "dinner", "train", "ticket", "beach", "kayak", "lake", "weather"]


def fill(path: Path, n: int) -> None:
    rng = np.random.default_rng(7)
    with Memory(path, encoder=HashingEncoder(DIM), state_scorer=False) as mem:
        store = mem.store
        step = 5000
        for start in range(0, n, step):
            records, audit = [], []
            for i in range(start, min(n, start + step)):
                vec = rng.standard_normal(DIM).astype(np.float32)
                kind = MemoryType.HARD_CONSTRAINT if i % 2000 == 0 else MemoryType.FACT
                tier = (
                    Tier.CORE
                    if kind is MemoryType.HARD_CONSTRAINT
                    else (Tier.DYNAMIC if i >= n - 2000 else Tier.ARCHIVE)
                )
                words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
                rec = MemoryRecord(
                    id=new_id(),
                    namespace=NS,
                    content=f"record {i}: {words} number {i}" + (" mail me at a.b@example.org" if i % 97 == 0 else ""),
                    type=kind,
                    tier=tier,
                    pinned=kind is MemoryType.HARD_CONSTRAINT,
                    importance=float(rng.random()),
                    segment=f"s{i // 50}",
                    seq=i % 50,
                    event_time=T0 + timedelta(minutes=i),
                    embedding=vec / np.linalg.norm(vec),
                    encoder=mem.encoder.name,
                )
                records.append(rec)
                audit.append(AuditEntry(NS, "add", rec.id, details={"type": kind.value, "importance": rec.importance}))
                if tier is Tier.ARCHIVE:
                    details = {"utility": round(float(rng.random()), 6), "capacity": 2000, "unit": "records"}
                    audit.append(
                        AuditEntry(NS, "evict", rec.id, actor="policy:utility", policy="utility", details=details)
                    )
            store.batch([PutRecords(tuple(records)), *(AppendAudit(a) for a in audit)])
        newest = store.list_ids(NS, order="recent", limit=5)
        for rid in newest[:3]:
            mem.update(rid, f"corrected record {rid}: hotel budget changed", namespace=NS)
        mem.context("hotel budget", namespace=NS, budget_tokens=2000)


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float, int]:
    for _ in range(3):
        assert client.get(url).status_code == 200, url
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, url
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
    return statistics.median(times), p95, len(response.content)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--db", type=Path, default=None)
    args = ap.parse_args()
    path = args.db or Path(tempfile.mkdtemp()) / "ui.db"
    if not path.exists():
        t0 = time.perf_counter()
        fill(path, args.records)
        print(f"filled {args.records:,} records in {time.perf_counter() - t0:.1f} s ({path})")
    with Memory(path, encoder=HashingEncoder(DIM), state_scorer=False) as mem:
        client = TestClient(create_app(mem, local_admin))
        t0 = time.perf_counter()
        client.get("/")
        print(f"first page (verifies the audit chain once): {(time.perf_counter() - t0) * 1000:.0f} ms")
        ids = mem.store.list_ids(NS, order="recent", limit=50_001)
        deep = ids[min(50_000, len(ids) - 2)]
        newest = mem.store.get(NS, mem.store.page_ids(NS, ALL_RECORDS, limit=10).ids)
        superseded = next(r.id for r in newest if r.superseded_by)
        prov = mem.store.query_audit(QueryAudit(namespace=NS, ops=("retrieve",), limit=1))[0]["details"][
            "provenance_id"
        ]
        head = mem.store.query_audit(QueryAudit(limit=1))[0]["seq"]
        pages = {
            "namespaces": "/",
            "records": f"/records?ns={NS}",
            "records, deep page": f"/records?ns={NS}&after={deep}",
            "records, text search": f"/records?ns={NS}&q=kayak+museum",
            "records, broad search": f"/records?ns={NS}&q=kayak",
            "records, search, deep": f"/records?ns={NS}&q=kayak&after={deep}",
            "records, filters": f"/records?ns={NS}&type=fact&tier=archive&pinned=no&superseded=yes",
            "record (superseded)": f"/record?ns={NS}&id={superseded}",
            "budget": f"/budget?ns={NS}",
            "provenance": f"/provenance?id={prov}",
            "timeline": f"/timeline?ns={NS}",
            "audit": f"/audit?ns={NS}&op=evict",
            "diff": f"/diff?ns={NS}&a={head - 500}&b={head}",
        }
        print(f"{mem.store.count(NS, ALL_RECORDS):,} records in namespace {NS!r}; {head:,} audit entries")
        broad = mem.store.page_ids(NS, ALL_RECORDS, terms=("kayak",), limit=1).total
        narrow = mem.store.page_ids(NS, ALL_RECORDS, terms=("kayak", "museum"), limit=1).total
        print(f"text searches: 'kayak museum' matches {narrow:,} records, 'kayak' {broad:,}")
        print(f"{'page':24s} {'median ms':>10s} {'p95 ms':>8s} {'HTML KB':>8s}")
        worst = 0.0
        for name, url in pages.items():
            median, p95, size = timed(client, url, args.repeat)
            worst = max(worst, p95)
            print(f"{name:24s} {median:10.1f} {p95:8.1f} {size / 1024:8.1f}")
        html = len(client.get(f"/records?ns={NS}").content)
        css = len(client.get("/static/style.css").content)
        print(f"worst p95: {worst:.1f} ms (target <= 150 ms)")
        weight = f"HTML {html / 1024:.1f} KB + CSS {css / 1024:.1f} KB + JS 0 KB = {(html + css) / 1024:.1f} KB"
        print(f"records page weight: {weight} (target <= 200 KB)")


if __name__ == "__main__":
    main()
