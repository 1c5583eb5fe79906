"""Properties of the Postgres backend beyond the conformance suite (which runs on it through
conftest's ``BACKENDS``): its URL handling and errors, its append-only audit table, budgets held across
processes, and Memory over a URL. Every test runs against a real server (tests/postgres_server.py)."""

from __future__ import annotations

import multiprocessing
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from postgres_server import postgres_url
from retain import HashingEncoder, Memory
from retain.errors import EncoderMismatch, InvalidInput, StoreUnavailable, WriteConflict
from retain.retention.budget import Budget
from retain.store import AppendAudit, AuditEntry
from retain.store.locate import open_location
from retain.store.ops import ReadAuditRaw
from retain.store.postgres import PostgresStore, redact_url
from retain.store.postgres_sql import MIGRATIONS


def _schema() -> str:
    return f"t_{uuid.uuid4().hex}"


def test_an_unreachable_server_names_host_and_database_and_creates_nothing() -> None:
    url = "postgresql://alice:s3cret@127.0.0.1:1/orders_db"
    with pytest.raises(StoreUnavailable) as info:
        PostgresStore(url, connect_timeout=2)
    message = str(info.value)
    assert "127.0.0.1" in message and "orders_db" in message
    assert "s3cret" not in message


def test_urls_and_schemas_are_checked_and_passwords_never_shown() -> None:
    with pytest.raises(InvalidInput):
        PostgresStore("mysql://x@y/z")
    with pytest.raises(InvalidInput):
        PostgresStore(postgres_url(), schema='x"; DROP TABLE records; --')
    assert redact_url("postgresql://bob:pw@db.example:5432/mem") == "postgresql://bob:***@db.example:5432/mem"
    assert isinstance(open_location(postgres_url()), PostgresStore)


def test_the_audit_table_refuses_update_delete_and_truncate() -> None:
    schema = _schema()
    store = PostgresStore(postgres_url(), schema=schema)
    store.setup()
    store.batch([AppendAudit(AuditEntry("ns", "add", f"id-{i}")) for i in range(3)])
    log = store.audit_log()
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        for sql in ("UPDATE audit SET reason = 'forged'", "DELETE FROM audit", "TRUNCATE audit"):
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute(sql)
    assert store.audit_log() == log
    assert store.batch([ReadAuditRaw()])[0].missing_guards == ()
    store.close()


def _url_with_schema(schema: str) -> str:
    parts = urlsplit(postgres_url())
    option = f"options=-csearch_path%3D{schema},public"
    query = f"{parts.query}&{option}" if parts.query else option
    return urlunsplit(parts._replace(query=query))


def test_memory_over_a_url_and_an_encoder_of_another_dimension() -> None:
    schema = _schema()
    with Memory(store=PostgresStore(postgres_url(), schema=schema), encoder=HashingEncoder(64)) as mem:
        rid = mem.add("The venue is the Old Mill.", namespace="trip")
        assert mem.get(rid, namespace="trip").content == "The venue is the Old Mill."
        assert [h.record.id for h in mem.search("venue", namespace="trip", k=3)] == [rid]
    with pytest.raises(EncoderMismatch):
        Memory(store=PostgresStore(postgres_url(), schema=schema), encoder=HashingEncoder(32))
    with Memory(_url_with_schema(schema), encoder=HashingEncoder(64)) as mem:  # the URL form opens the same store
        assert mem.get(rid, namespace="trip").content == "The venue is the Old Mill."


def _writer(url: str, schema: str, worker: int, n: int) -> list[str]:
    """Add ``n`` texts; an add that raises WriteConflict wrote nothing (its documented contract) and is
    asked again, as a caller would."""
    mem = Memory(store=PostgresStore(url, schema=schema), encoder=HashingEncoder(64), budget=Budget(5, policy="fifo"))
    acknowledged = []
    try:
        for i in range(n):
            for _ in range(50):
                try:
                    acknowledged.append(
                        mem.add(f"worker {worker} note {i} about item {i * 7 + worker}", namespace="shared")
                    )
                    break
                except WriteConflict:
                    continue
        return acknowledged
    finally:
        mem.close()


def test_four_processes_with_a_budget_keep_it_and_lose_no_write() -> None:
    schema = _schema()
    Memory(
        store=PostgresStore(postgres_url(), schema=schema), encoder=HashingEncoder(64)
    ).close()  # records the encoder
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        written = pool.starmap(_writer, [(postgres_url(), schema, w, 12) for w in range(4)])
    store = PostgresStore(postgres_url(), schema=schema)
    store.setup()
    ids = [i for batch in written for i in batch]
    assert len(store.get("shared", ids)) == len(ids) == 48  # every acknowledged write is there
    assert store.count("shared") == 5  # the budget holds across the four processes
    evicted = [e["record_id"] for e in store.audit_log("shared") if e["op"] == "evict"]
    assert len(evicted) == len(set(evicted)) == 43  # each record evicted once, never an archived one again
    store.close()


def test_setup_adds_the_audit_record_index_to_a_version_1_store_and_the_read_uses_it() -> None:
    """Migration 2: the entries of given records (the FIFO policy's entry order, a record's page) are
    read through (namespace, record_id), not by walking the namespace's log; setup stays idempotent."""
    schema = _schema()
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}", public')
        conn.execute(MIGRATIONS[0])
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (1)")
    store = PostgresStore(postgres_url(), schema=schema)
    store.setup()
    store.setup()
    store.batch([AppendAudit(AuditEntry("ns", "add", f"id-{i % 500}")) for i in range(3000)])
    assert [e["record_id"] for e in store.audit_log("ns", record_ids=["id-7"])] == ["id-7"] * 6
    store.close()
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(len(MIGRATIONS),)]
        conn.execute("ANALYZE audit")
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT seq FROM audit WHERE namespace = 'ns' AND record_id = ANY(%s) ORDER BY seq",
                (["id-7", "id-8"],),
            ).fetchall()
        )
    assert "audit_ns_record" in plan, plan
