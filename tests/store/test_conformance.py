"""The storage contract's conformance suite (:mod:`retain.store.conformance`) run against the SQLite
backend, in memory and on a file: ``make_store`` comes from the ``BACKENDS`` of tests/conftest.py."""

from __future__ import annotations

from retain.store.conformance import StoreConformance


class TestSQLiteStore(StoreConformance):
    """Every test of the suite, once per backend of conftest's ``make_store``."""
