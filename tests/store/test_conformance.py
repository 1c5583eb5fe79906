"""The storage contract's conformance suite (:mod:`retain.store.conformance`) run against the SQLite
backend, in memory and on a file: ``make_store`` comes from the ``BACKENDS`` of tests/conftest.py."""

from __future__ import annotations

import subprocess
import sys

from retain.store.conformance import StoreConformance


class TestSQLiteStore(StoreConformance):
    """Every test of the suite, once per backend of conftest's ``make_store``."""


def test_retain_and_its_store_import_without_pytest() -> None:
    """The suite needs pytest and hypothesis (dev dependencies); retain itself must not."""
    code = "import sys, retain, retain.store; assert not {'pytest', 'hypothesis'} & set(sys.modules), sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
