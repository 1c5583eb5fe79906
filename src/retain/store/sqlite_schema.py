"""The SQLite backend's file and schema: the folder check before opening, and the versioned,
append-only migrations that :meth:`~retain.store.SQLiteStore.setup` applies in order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from retain.errors import InvalidInput
from retain.store.sqlite_edges import EDGES_MIGRATION

__all__ = ["APPEND_ONLY_TRIGGERS", "BROWSE_MIGRATION", "MIGRATIONS", "SCHEMA_VERSION", "check_folder", "split_sql"]

BROWSE_MIGRATION = """
    CREATE INDEX records_ns ON records (namespace);
    CREATE INDEX records_ns_stats ON records (namespace, type, tier, pinned, superseded_by, event_time);
    CREATE INDEX records_ns_event_order ON records (namespace, event_time IS NULL, event_time, seq);
    CREATE INDEX audit_ns_op ON audit (namespace, op, seq, ts);
    CREATE INDEX audit_ns_record ON audit (namespace, record_id, seq);
"""
"""Migration 4: the indexes of the browsing queries (:mod:`retain.store.sqlite_browse`)."""

# Append-only: a released migration is never edited; add a new one.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE records (
        rowid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        namespace TEXT NOT NULL,
        content TEXT NOT NULL,
        type TEXT NOT NULL,
        role TEXT NOT NULL,
        source TEXT,
        event_time INTEGER,
        created_at INTEGER NOT NULL,
        seq INTEGER,
        segment TEXT,
        priority INTEGER NOT NULL,
        importance REAL NOT NULL,
        access_count INTEGER NOT NULL,
        last_accessed INTEGER,
        tier TEXT NOT NULL,
        pinned INTEGER NOT NULL,
        confidence REAL NOT NULL,
        supersedes TEXT,
        superseded_by TEXT,
        token_count INTEGER NOT NULL,
        embedding BLOB,
        encoder TEXT,
        metadata TEXT NOT NULL,
        content_hash TEXT NOT NULL
    );
    CREATE INDEX records_ns_hash ON records (namespace, content_hash);
    CREATE INDEX records_ns_tier ON records (namespace, tier);
    CREATE INDEX records_ns_event ON records (namespace, event_time);
    CREATE INDEX records_ns_seq ON records (namespace, seq);
    CREATE VIRTUAL TABLE records_fts USING fts5 (lex, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE TABLE audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ts INTEGER NOT NULL,
        namespace TEXT,
        op TEXT NOT NULL,
        record_id TEXT,
        actor TEXT NOT NULL,
        reason TEXT NOT NULL,
        policy TEXT,
        details TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL
    );
    CREATE INDEX audit_ns ON audit (namespace, seq);
    CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
        BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
    CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
        BEGIN SELECT RAISE(ABORT, 'audit log is append-only'); END;
    """,
    """
    CREATE TABLE provenance (
        id TEXT PRIMARY KEY,
        namespace TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX provenance_ns ON provenance (namespace, created_at);
    """,
    EDGES_MIGRATION,  # 3: typed edges between records (retain.retrieval.graph)
    BROWSE_MIGRATION,  # 4: indexes of the browsing queries (paging, counts, audit look-ups; retain.ui)
)
SCHEMA_VERSION = len(MIGRATIONS)

APPEND_ONLY_TRIGGERS = frozenset({"audit_no_update", "audit_no_delete"})
"""Triggers of migration 1 that refuse UPDATE and DELETE on the audit table."""


def split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements, buf = [], []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            statements.append(joined)
            buf = []
    if "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements


def check_folder(path: Path, *, create: bool) -> None:
    """Refuse ``path`` when its folder is missing (or make it, with ``create``) or is not a folder."""
    folder = path.parent
    if folder.is_dir():
        return
    if folder.exists() or any(p.exists() and not p.is_dir() for p in folder.parents):
        raise InvalidInput(f"path: {path}: {_existing_file(folder)} is a file, not a folder")
    if path.parts[0].startswith("~"):  # used as given: create_dirs would make a folder named "~" here
        raise InvalidInput(
            f"path: {path}: the folder {folder} does not exist (~ is not expanded: pass os.path.expanduser(path))"
        )
    if not create:
        raise InvalidInput(
            f"path: {path}: the folder {folder} does not exist; create it first, or pass create_dirs=True"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"path: {path}: cannot create the folder {folder} ({exc.strerror or exc})") from exc


def _existing_file(folder: Path) -> Path:
    """The nearest of ``folder`` and its ancestors that exists (a file, where this is called)."""
    return next(p for p in (folder, *folder.parents) if p.exists())
