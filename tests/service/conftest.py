"""The module-scoped ``retain serve`` subprocess the service tests share (tests/serving.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from serving import Server, make_keys


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for a test module: hashing-384 encoder (the state scorer's width), a budget of
    50 records a namespace, a 64 KiB body limit."""
    folder = tmp_path_factory.mktemp("serve")
    srv = Server(db=folder / "retain.db", keys_path=folder / "keys.json", folder=folder)
    srv.keys = make_keys(srv.keys_path)
    srv.extra = (
        "--encoder",
        "hashing-384",
        "--budget",
        "50",
        "--policy",
        "fifo",
        "--trusted-actor",
        "acme-admin",
        "--max-body",
        str(64 * 1024),
    )
    srv.start()
    yield srv
    srv.stop()
