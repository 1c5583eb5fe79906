"""One place that turns a location into a store: a ``postgresql://`` URL opens the Postgres backend,
anything else the SQLite file at that path (``":memory:"`` for a private in-memory database)."""

from __future__ import annotations

from pathlib import Path

from retain.store.base import Store
from retain.store.postgres import PostgresStore
from retain.store.sqlite import SQLiteStore

__all__ = ["is_url", "open_location"]

_SCHEMES = ("postgresql://", "postgres://")


def is_url(location: object) -> bool:
    """True when ``location`` is a Postgres connection URL."""
    return isinstance(location, str) and location.startswith(_SCHEMES)


def open_location(location: str | Path, *, create_dirs: bool = False, bulk: bool = False) -> Store:
    """The store at ``location``, not yet set up.

    Args:
        location: ``postgresql://user:password@host:port/database`` (any libpq URL: managed services,
            replicas) or a SQLite file path / ``":memory:"``.
        create_dirs: for a file path, create its missing folders.
        bulk: for a Postgres URL, a store for a bulk load: no write builds the HNSW index
            (``index_on_write=False``); call its ``build_index()`` after the load.

    Raises:
        StoreUnavailable: the Postgres server cannot be reached (names host and database).
        InvalidInput, SchemaError: as :class:`~retain.store.sqlite.SQLiteStore` for a path.
    """
    if is_url(location):
        return PostgresStore(str(location), index_on_write=not bulk)
    return SQLiteStore(location, create_dirs=create_dirs)
