"""``retain migrate``: a SQLite file copied into Postgres and back verifies; a bad URL is named; a
non-empty target is refused with exit code 2 and nothing written."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from typer.testing import CliRunner

from postgres_server import postgres_url
from retain import HashingEncoder, Memory
from retain.cli.app import app

runner = CliRunner()


def _with_schema(schema: str) -> str:
    """The test server's URL with ``schema`` (made here) first on the search path: a schema the path
    names but the database lacks would send the tables to ``public``, shared by every run on a server."""
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urlsplit(postgres_url())
    option = f"options=-csearch_path%3D{schema},public"
    return urlunsplit(parts._replace(query=f"{parts.query}&{option}" if parts.query else option))


def _source(path: Path) -> list[str]:
    with Memory(path, encoder=HashingEncoder(64)) as mem:
        texts = ["The hotel is in Lyon.", "Chloé likes the window seat.", "The museum opens at 10."]
        return [mem.add(text, namespace="trip") for text in texts]


def test_sqlite_to_postgres_and_back_then_audit_verify(tmp_path: Path) -> None:
    ids = _source(tmp_path / "a.db")
    url = _with_schema(f"t_{uuid.uuid4().hex}")
    result = runner.invoke(app, ["migrate", "--from", str(tmp_path / "a.db"), "--to", url])
    assert result.exit_code == 0, result.output
    assert "copied 3 records in 1 namespaces" in result.output and "ok: target verified" in result.output
    result = runner.invoke(app, ["migrate", "--from", url, "--to", str(tmp_path / "b.db")])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["audit", "verify", "--db", str(tmp_path / "b.db")]).exit_code == 0
    with Memory(tmp_path / "b.db", encoder=HashingEncoder(64)) as mem:
        assert [r.id for r in mem.records(namespace="trip")] == ids
    again = runner.invoke(app, ["migrate", "--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "b.db")])
    assert again.exit_code == 2 and "'trip' already holds 3 records" in again.output
    with Memory(tmp_path / "b.db", encoder=HashingEncoder(64)) as mem:
        assert len(mem.records(namespace="trip")) == 3


def test_an_unreachable_target_names_host_and_database(tmp_path: Path) -> None:
    _source(tmp_path / "a.db")
    url = "postgresql://alice:s3cret@127.0.0.1:1/orders_db?connect_timeout=2"
    result = runner.invoke(app, ["migrate", "--from", str(tmp_path / "a.db"), "--to", url])
    assert result.exit_code == 2
    assert "127.0.0.1" in result.output and "orders_db" in result.output and "s3cret" not in result.output
