"""The storage contract's conformance suite: the tests every :class:`~retain.store.Store` backend passes.

The suite uses only the :class:`~retain.store.Store` API (the typed operations of
:mod:`retain.store.ops` and the helpers built on them), so it runs unchanged against any backend.
It requires pytest and hypothesis (retain's ``dev`` extra); ``import retain.store`` does not import
this package, so retain itself does not need them.

To run it against a backend, subclass :class:`StoreConformance` in your own test suite (the class
name must start with ``Test``, so that pytest collects it) and give it a ``make_store`` fixture: a
factory that takes a fresh folder path (``pathlib.Path``, not yet created: put any files there, or
ignore it) and returns a new store, not yet set up::

    import pytest
    from retain.store.conformance import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture(params=["memory", "file"])
        def make_store(self, request):
            return lambda folder: MyStore(folder / "my.db") if request.param == "file" else MyStore()

pytest then runs every test of the suite once per ``make_store`` parameter. The suite's ``store``
fixture calls the factory, runs ``setup()`` and closes the store after each test. Tests of
properties of one backend (its files, caches, triggers) belong in that backend's own tests
(retain's are in ``tests/store/test_sqlite.py``). The parts: :mod:`~retain.store.conformance.records`,
:mod:`~retain.store.conformance.search`, :mod:`~retain.store.conformance.metadata` (``where`` and
expiry), :mod:`~retain.store.conformance.lifecycle`, :mod:`~retain.store.conformance.browse`; deterministic
records and vectors in :mod:`~retain.store.conformance.helpers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from retain.record import MemoryRecord, MemoryType, Tier
from retain.store.base import Store
from retain.store.conformance.browse import BrowseTests
from retain.store.conformance.helpers import T0, make
from retain.store.conformance.lifecycle import LifecycleTests
from retain.store.conformance.metadata import MetadataTests
from retain.store.conformance.records import RecordTests
from retain.store.conformance.search import SearchTests

__all__ = ["StoreConformance"]


class StoreConformance(RecordTests, SearchTests, MetadataTests, LifecycleTests, BrowseTests):
    """The whole suite: subclass it as ``Test<Backend>`` with a ``make_store`` fixture (see the module docstring)."""

    @pytest.fixture
    def store(self, make_store: Callable[[Path], Store], tmp_path: Path) -> Iterator[Store]:
        """A set-up, empty store from the backend's ``make_store``; closed after the test."""
        backend = make_store(tmp_path / "store")
        backend.setup()
        yield backend
        backend.close()

    @pytest.fixture
    def corpus(self, store: Store) -> dict[str, MemoryRecord]:
        """Six records of namespace "ns" (one superseded, one archived) and one in "other"."""
        recs = {
            "fact": make("ns", "fact one", seed=1, seq=2, segment="s1", event_time=T0 + timedelta(days=2)),
            "goal": make("ns", "goal two", seed=2, seq=0, segment="s1", type=MemoryType.GOAL, event_time=T0),
            "core": make("ns", "core three", seed=3, seq=5, segment="s2", tier=Tier.CORE, pinned=True),
            "archived": make(
                "ns", "archived four", seed=4, seq=1, segment="s2", tier=Tier.ARCHIVE, event_time=T0 + timedelta(days=1)
            ),
            "old": make("ns", "old five", seed=5, seq=3, segment="s1", event_time=T0 + timedelta(days=3)),
            "plan": make(
                "ns", "plan six", seed=6, type=MemoryType.PLAN_STEP, event_time=T0 + timedelta(days=1, hours=1)
            ),
            "foreign": make("other", "foreign seven", seed=7, seq=0, segment="s1", event_time=T0),
        }
        for name in ("fact", "goal", "core", "archived", "old", "plan", "foreign"):
            store.put([recs[name]])
        recs["old"] = recs["old"].evolve(superseded_by=recs["fact"].id)
        store.put([recs["old"]])
        return recs
