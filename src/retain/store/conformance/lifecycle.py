"""Conformance tests of namespaces, transactions, the audit log, schema set-up and provenance.

Mixed into :class:`retain.store.conformance.StoreConformance`, which holds the fixtures ``store``
and ``corpus``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from retain.errors import InvalidInput, SchemaError
from retain.record import new_id
from retain.store.audit_chain import GENESIS_HASH, AuditEntry, audit_hash
from retain.store.base import Store
from retain.store.conformance.helpers import T0, ids, make, unit
from retain.store.filters import ALL_RECORDS
from retain.store.ops import (
    AppendAudit,
    CountRecords,
    GetProvenance,
    GetRecords,
    LexicalSearch,
    PutProvenance,
    PutRecords,
    VectorSearch,
)
from retain.text.lexical import query_terms

__all__ = ["LifecycleTests"]


class LifecycleTests:
    """Namespaces, transactions, the audit log, schema set-up and provenance."""

    # --- namespaces ------------------------------------------------------------------------------

    def test_namespace_isolation(self, store: Store) -> None:
        a = make("alpha", "shared secret words", seed=11)
        b = make("beta", "shared secret words", seed=11)
        store.put([a, b])

        assert ids(store.search_lexical("alpha", query_terms("secret"))) == [a.id]
        assert ids(store.search_lexical("beta", query_terms("secret"))) == [b.id]
        assert ids(store.search_vector("alpha", unit(11))) == [a.id]
        assert ids(store.search_vector("beta", unit(11))) == [b.id]
        assert ids(store.list_records("alpha", ALL_RECORDS)) == [a.id]
        assert store.count("alpha", ALL_RECORDS) == 1
        assert store.get("alpha", [b.id]) == []
        assert store.batch([GetRecords("beta", (a.id, b.id))])[0] == [b]
        found = store.find_by_hash("alpha", a.content_hash)
        assert found is not None and found.id == a.id
        assert store.search_lexical("gamma", query_terms("secret")) == []
        assert store.search_vector("gamma", unit(11)) == []

    def test_delete_records_purges_both_channels_in_that_namespace_only(self, store: Store) -> None:
        keep = make("ns", "Bluefin tuna recipe", seed=1)
        gone = make("ns", "Project codename is Bluefin", seed=2)
        twin = make("other", "Project codename is Bluefin", seed=2)
        store.put([keep, gone, twin])
        assert store.search_vector("ns", unit(2))[0].id == gone.id  # warm any vector cache

        assert store.delete("other-ns", [gone.id]) == 0  # wrong namespace: nothing happens
        assert store.delete("ns", [gone.id, "missing"]) == 1

        assert store.get("ns", [gone.id]) == []
        assert ids(store.search_lexical("ns", query_terms("codename Bluefin"))) == [keep.id]
        assert ids(store.search_vector("ns", unit(2))) == [keep.id]
        assert store.find_by_hash("ns", gone.content_hash) is None
        # the other namespace is untouched
        assert ids(store.search_lexical("other", query_terms("codename"))) == [twin.id]
        assert ids(store.search_vector("other", unit(2))) == [twin.id]
        assert store.delete("ns", []) == 0

    def test_delete_namespace_purges_only_that_namespace(self, store: Store) -> None:
        doomed = [make("doomed", f"note {i} about kayaks", seed=i) for i in range(3)]
        survivor = make("survivor", "note about kayaks", seed=0)
        store.put([*doomed, survivor])
        assert len(store.search_vector("doomed", unit(0))) == 3

        assert store.delete_namespace("doomed", [AuditEntry("doomed", "delete_all")]) == 3

        assert store.count("doomed", ALL_RECORDS) == 0
        assert store.search_lexical("doomed", query_terms("kayaks")) == []
        assert store.search_vector("doomed", unit(0)) == []
        assert store.namespaces() == ["survivor"]
        assert ids(store.search_lexical("survivor", query_terms("kayaks"))) == [survivor.id]
        assert ids(store.search_vector("survivor", unit(0))) == [survivor.id]
        assert [e["op"] for e in store.audit_log("doomed")] == ["delete_all"]

    # --- transactions ----------------------------------------------------------------------------

    def test_batch_is_atomic(self, store: Store) -> None:
        elsewhere = make("beta", "owned by beta", seed=1)
        store.put([elsewhere])
        store.search_vector("alpha", unit(1))  # warm caches
        innocent = make("alpha", "innocent unicorn record", seed=2)
        clash = make("alpha", "clashing record", seed=3).evolve(id=elsewhere.id)

        with pytest.raises(InvalidInput, match="another namespace"):
            store.batch(
                [
                    PutRecords((innocent,)),
                    AppendAudit(AuditEntry("alpha", "add", innocent.id)),
                    PutRecords((clash,)),
                ]
            )

        assert store.get("alpha", [innocent.id]) == []
        assert store.count("alpha", ALL_RECORDS) == 0
        assert store.search_lexical("alpha", query_terms("unicorn")) == []
        assert store.search_vector("alpha", unit(2)) == []
        assert store.audit_log() == []
        assert store.namespaces() == ["beta"]
        (kept,) = store.get("beta", [elsewhere.id])
        assert kept.content == "owned by beta"

    def test_batch_returns_one_result_per_op_in_order(self, store: Store) -> None:
        rec = make("ns", "lonely lighthouse", seed=4)
        results = store.batch(
            [
                PutRecords((rec,)),
                GetRecords("ns", (rec.id,)),
                CountRecords("ns"),
                LexicalSearch("ns", ("lighthouse",)),
                VectorSearch("ns", unit(4)),
                AppendAudit(AuditEntry("ns", "add", rec.id)),
            ]
        )
        assert results[0] is None
        assert ids(results[1]) == [rec.id]
        assert results[2] == 1
        assert ids(results[3]) == [rec.id]
        assert ids(results[4]) == [rec.id]
        assert isinstance(results[5], int)

    # --- audit -----------------------------------------------------------------------------------

    def test_audit_entries_are_hash_chained(self, store: Store) -> None:
        rec = make("ns", "audited")
        store.put([rec], [AuditEntry("ns", "add", rec.id, actor="agent", details={"tokens": 1})])
        store.batch([AppendAudit(AuditEntry("other", "evict", "x", policy="lru", reason="budget"))])
        store.delete("ns", [rec.id], [AuditEntry("ns", "delete", rec.id)])

        log = store.audit_log()
        assert [(e["namespace"], e["op"], e["record_id"]) for e in log] == [
            ("ns", "add", rec.id),
            ("other", "evict", "x"),
            ("ns", "delete", rec.id),
        ]
        assert log[0]["details"] == {"tokens": 1} and log[0]["actor"] == "agent"
        assert log[1]["policy"] == "lru" and log[1]["reason"] == "budget"
        for before, after in itertools.pairwise(log):
            assert after["prev_hash"] == before["hash"]
            assert after["seq"] > before["seq"]
        assert len({e["hash"] for e in log}) == 3
        assert all(len(e["hash"]) == 64 for e in log)

        assert [e["op"] for e in store.audit_log("ns")] == ["add", "delete"]
        assert [e["op"] for e in store.audit_log(limit=1)] == ["add"]

    def test_audit_chain_is_the_contract_hash_chain(self, store: Store) -> None:
        """Every backend writes the chain :mod:`retain.safety.audit` verifies."""
        store.batch([AppendAudit(AuditEntry("ns", "add", f"id-{i}", details={"i": i})) for i in range(3)])
        log = store.audit_log()
        prev = GENESIS_HASH
        for entry in log:
            assert entry["prev_hash"] == prev
            fields = {
                k: entry[k] for k in ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")
            }
            assert entry["hash"] == audit_hash(prev, fields)
            prev = entry["hash"]

    # --- schema ----------------------------------------------------------------------------------

    def test_setup_is_idempotent(self, store: Store) -> None:
        rec = make("ns", "survives setup", seed=9)
        store.put([rec], [AuditEntry("ns", "add", rec.id)])
        store.set_meta("encoder_name", "test")
        store.setup()
        store.setup()
        assert ids(store.get("ns", [rec.id])) == [rec.id]
        assert ids(store.search_lexical("ns", ["survives"])) == [rec.id]
        assert ids(store.search_vector("ns", unit(9))) == [rec.id]
        assert len(store.audit_log()) == 1
        assert store.get_meta("encoder_name") == "test"
        assert store.get_meta("missing") is None

    def test_unset_store_refuses_work(self, make_store: Callable[[Path], Store], tmp_path: Path) -> None:
        fresh = make_store(tmp_path / "fresh")
        try:
            with pytest.raises(SchemaError, match="setup"):
                fresh.count("ns")
        finally:
            fresh.close()

    def test_provenance_round_trips_is_written_once_and_purged_with_its_namespace(self, store: Store) -> None:
        body = {"query": "où est le café ☕", "items": [{"record_id": "A", "score": 0.125}], "state": None}
        pid, other = new_id(), new_id()
        assert store.batch([PutProvenance(pid, "ns-a", T0, body), PutProvenance(other, "ns-b", T0, {"x": 1})]) == [
            None,
            None,
        ]
        assert store.provenance(pid) == {"id": pid, "namespace": "ns-a", "created_at": T0, "body": body}
        assert store.provenance(pid, "ns-a") == store.provenance(pid)
        assert store.provenance(pid, "ns-b") is None and store.provenance("absent") is None
        with pytest.raises(InvalidInput, match="already exists"):
            store.batch([AppendAudit(AuditEntry("ns-a", "retrieve")), PutProvenance(pid, "ns-a", T0, {})])
        assert store.audit_log() == []  # all or nothing
        assert store.batch([GetProvenance(other)])[0]["body"] == {"x": 1}
        store.put([make("ns-a", "kept elsewhere")])
        store.delete_namespace("ns-a")
        assert store.provenance(pid) is None and store.provenance(other) is not None
