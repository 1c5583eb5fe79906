"""retain.eval.store_scale: the retention decision at capacity is timed on real adds that each evict
one record, and the budget holds throughout."""

from __future__ import annotations

from pathlib import Path

from retain.eval.store_scale import NAMESPACE, ingest, measure_decisions
from retain.store import SQLiteStore


def test_adds_at_capacity_each_evict_one_record_and_their_decisions_are_timed(tmp_path: Path) -> None:
    location = str(tmp_path / "scale.db")
    ingest("sqlite", location, 300)
    out = measure_decisions("sqlite", location, 300, 6)
    assert out["hot_after"] == 300  # the budget held: one out for each one in
    assert 0 < out["decision_ms"][0] <= out["decision_ms"][1] and out["first_decision_s"] > 0
    assert out["add_ms"][0] >= out["decision_ms"][0]  # the decision is a part of the add
    store = SQLiteStore(location)
    store.setup()
    evictions = [e for e in store.audit_log(NAMESPACE) if e["op"] == "evict"]
    assert len(evictions) == len({e["record_id"] for e in evictions}) == 7
    store.close()


def test_run_scale_skips_decisions_above_the_limit_and_keeps_the_store_when_asked(tmp_path: Path) -> None:
    from retain.eval.store_scale import run_scale, table_row

    rows = run_scale([200, 300], ["sqlite"], count=10, decisions_max=200, keep=tmp_path / "kept")
    small, big = rows
    assert "decision_ms" in small and small["hot_after"] == 200
    assert "decision_ms" not in big and "hot_after" not in big
    assert table_row(big).endswith("| - | - | - |") and not table_row(small).endswith("| - | - | - |")
    assert {p.name for p in (tmp_path / "kept").glob("*.db")} == {"scale-200.db", "scale-300.db"}
    store = SQLiteStore(tmp_path / "kept" / "scale-300.db")
    store.setup()
    assert store.count(NAMESPACE) == 300  # kept whole: hybrid_scale.py --db reuses it
    store.close()


def test_peak_rss_is_this_process_own_and_covers_what_it_holds() -> None:
    import numpy as np

    from retain.eval.store_scale import peak_rss_mb

    block = np.ones(64 * 2**20 // 8)  # 64 MB, touched
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    now = int(status.split("VmRSS:")[1].split()[0]) / 1024
    assert block.sum() > 0 and now >= 64
    assert peak_rss_mb() >= now  # the peak covers what is resident now, this block included


def test_a_postgres_run_measures_its_schema_on_disk_and_drops_it_unless_kept(tmp_path: Path) -> None:
    import psycopg

    from postgres_server import postgres_url
    from retain.eval.store_scale import run_scale

    def schemas() -> set[str]:
        with psycopg.connect(postgres_url()) as conn:
            return {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'bench_%'")}

    before = schemas()
    (row,) = run_scale([200], ["postgres"], count=10, decisions_max=0)
    assert row["bytes_per_record"] > 1_536  # a 384-dim float32 vector alone is 1,536 bytes
    assert schemas() == before  # dropped
    (kept,) = run_scale([200], ["postgres"], count=10, decisions_max=0, keep=tmp_path / "kept")
    schema = kept["location"].rsplit("#", 1)[1]
    assert schemas() == before | {schema}
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema}".records').fetchone()[0] == 200
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
