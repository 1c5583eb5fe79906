"""A server killed with SIGKILL during a write load loses no acknowledged write."""

from __future__ import annotations

import threading
import time

import httpx

from serving import Server, make_keys

WRITERS = 8


def test_every_acknowledged_write_survives_sigkill(tmp_path):
    srv = Server(db=tmp_path / "crash.db", keys_path=tmp_path / "keys.json", folder=tmp_path)
    srv.keys = make_keys(srv.keys_path)
    srv.extra = ("--encoder", "hashing-64")
    srv.start()
    headers = {"Authorization": f"Bearer {srv.keys['admin']}"}
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        with httpx.Client(base_url=srv.url, headers=headers, timeout=30) as client:
            i = 0
            while not stop.is_set():
                body = {"namespace": "acme/load", "content": f"Writer {n} note {i}: the crate left dock {i % 7}."}
                try:
                    response = client.post("/v1/memories", json=body)
                except httpx.HTTPError:
                    return  # the server is gone: this write was never acknowledged
                if response.status_code == 201:
                    with lock:
                        acknowledged.append(response.json()["id"])
                i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acknowledged) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        srv.kill()
        stop.set()
        for t in threads:
            t.join(timeout=60)
        assert len(acknowledged) >= 40
        srv.start()
        with httpx.Client(base_url=srv.url, headers=headers, timeout=60) as client:
            exported = client.get("/v1/export", params={"namespace": "acme/load"}).json()
        stored = {r["id"] for r in exported["records"]}
        missing = [rid for rid in acknowledged if rid not in stored]
        assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged writes lost"
    finally:
        stop.set()
        srv.stop()
