"""Shared fixtures: every store-level and Memory-level test runs once per storage backend.

A backend joins the suites by adding one ``pytest.param`` to :data:`BACKENDS`: a factory that
takes pytest's ``tmp_path`` and returns an un-set-up :class:`~retain.store.Store`. A backend that
needs a server (Postgres) adds its param with a ``skipif`` mark on the missing DSN.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from postgres_server import postgres_url
from retain.encoders.basis import HashingEncoder
from retain.memory import Memory
from retain.store import SQLiteStore, Store
from retain.store.postgres import PostgresStore
from retain.store.sqlite_ann import AnnConfig

StoreFactory = Callable[[Path], Store]

TEST_DIM = 64


def _sqlite_memory(tmp_path: Path) -> Store:
    return SQLiteStore(":memory:")


def _sqlite_file(tmp_path: Path) -> Store:
    return SQLiteStore(tmp_path / "retain.db", create_dirs=True)  # fixtures pass folders not made yet


def _sqlite_ann(tmp_path: Path) -> Store:
    """A file store whose every namespace of 2 records or more gets an HNSW graph (built in the
    background: a test sees the exact scan, then the graph)."""
    return SQLiteStore(tmp_path / "retain.db", create_dirs=True, ann=AnnConfig(min_records=2))


def _postgres(tmp_path: Path) -> Store:
    """A store in a fresh schema of the test Postgres server (started once per test session)."""
    return PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")


BACKENDS = [
    pytest.param(_sqlite_memory, id="sqlite-memory"),
    pytest.param(_sqlite_file, id="sqlite-file"),
    pytest.param(_sqlite_ann, id="sqlite-ann"),
    pytest.param(_postgres, id="postgres"),
]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest) -> StoreFactory:
    """The backend's factory: ``make_store(tmp_path)`` returns a new store, not yet set up."""
    factory: StoreFactory = request.param
    return factory


@pytest.fixture
def store(make_store: StoreFactory, tmp_path: Path) -> Iterator[Store]:
    """A set-up, empty store of each backend; closed after the test."""
    backend = make_store(tmp_path / "store")
    backend.setup()
    yield backend
    backend.close()


@pytest.fixture
def encoder() -> HashingEncoder:
    """The deterministic test encoder (never the MiniLM model: tests stay fast and offline)."""
    return HashingEncoder(TEST_DIM)


@pytest.fixture
def memory(make_store: StoreFactory, tmp_path: Path, encoder: HashingEncoder) -> Iterator[Memory]:
    """A :class:`Memory` over an empty store of each backend, with ``HashingEncoder(64)``."""
    mem = Memory(store=make_store(tmp_path / "memory"), encoder=encoder)
    yield mem
    mem.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """Two Memory objects, each with its own connection, on one SQLite file (the concurrent-writer tests)."""
    path = tmp_path / "shared.db"
    a, b = Memory(path, encoder=HashingEncoder(TEST_DIM)), Memory(path, encoder=HashingEncoder(TEST_DIM))
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def mem64() -> Iterator[Memory]:
    """A :class:`Memory` on one in-memory SQLite store with ``HashingEncoder(64)``: for tests of
    Memory's own checks and write path, which need not run once per backend."""
    mem = Memory(encoder=HashingEncoder(TEST_DIM))
    yield mem
    mem.close()
