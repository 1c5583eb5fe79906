"""Memory.as_actor: rights checked in the Python API, refusals audited, the principal as audit actor."""

from __future__ import annotations

import pytest

from retain import Forbidden, Grant, HashingEncoder, InvalidInput, Memory, Principal, Role

NS = "trip/42"


@pytest.fixture
def mem():
    m = Memory(encoder=HashingEncoder(64), state_scorer=False)
    yield m
    m.close()


def _refusals(mem: Memory, namespace: str) -> list[dict]:
    return [e for e in mem.audit_entries(namespace=namespace) if e["details"].get("outcome") == "refused"]


def test_a_planner_writes_and_a_reviewer_reads_one_shared_namespace(mem):
    planner = mem.as_actor(Principal("planner", grants=(Grant("trip/", Role.WRITE),)))
    reviewer = mem.as_actor(Principal("reviewer", grants=(Grant("trip/", Role.READ),)))
    rid = planner.add("Book the 9:40 train to Brennick.", namespace=NS)
    assert [h.record.id for h in reviewer.search("train", namespace=NS)] == [rid]
    assert reviewer.get(rid, namespace=NS).content.startswith("Book the 9:40")
    adds = [e for e in mem.audit_entries(namespace=NS) if e["op"] == "add"]
    assert [e["actor"] for e in adds] == ["planner"]


def test_a_reader_cannot_forget_delete_or_add_and_each_refusal_is_audited(mem):
    planner = mem.as_actor(Principal("planner", grants=(Grant("trip/", Role.WRITE),)))
    reviewer = mem.as_actor(Principal("reviewer", grants=(Grant("trip/", Role.READ),)))
    rid = planner.add("Book the 9:40 train to Brennick.", namespace=NS)
    for call in (
        lambda: reviewer.forget(rid, namespace=NS),
        lambda: reviewer.delete(rid, namespace=NS),
        lambda: reviewer.add("Cancel the train.", namespace=NS),
        lambda: reviewer.update(rid, "Take the 11:00 train.", namespace=NS),
    ):
        with pytest.raises(Forbidden, match="needs write, has role read"):
            call()
    assert mem.get(rid, namespace=NS).superseded_by is None
    assert len(mem.records(namespace=NS)) == 1
    refused = _refusals(mem, NS)
    assert [(e["op"], e["actor"]) for e in refused] == [
        ("forget", "reviewer"),
        ("delete", "reviewer"),
        ("add", "reviewer"),
        ("update", "reviewer"),
    ]
    assert refused[0]["details"] == {"outcome": "refused", "needed": "write", "held": "read"}


def test_a_writer_needs_admin_to_purge_a_namespace_or_read_raw(mem):
    writer = mem.as_actor(Principal("w", grants=(Grant("", Role.WRITE),)))
    writer.add("my key is sk-live-abcdefghijklmnop1234", namespace=NS)
    with pytest.raises(Forbidden, match="needs admin"):
        writer.delete_all(namespace=NS)
    with pytest.raises(Forbidden, match="needs admin"):
        writer.export(namespace=NS, allow_raw=True)
    with pytest.raises(Forbidden, match="needs admin"):
        writer.search("key", namespace=NS, allow_raw=True)
    with pytest.raises(Forbidden, match="needs admin"):
        writer.audit_entries(namespace=NS)
    admin = mem.as_actor(Principal("root", grants=(Grant("", Role.ADMIN),)))
    assert admin.verify_audit(namespace=NS).ok
    assert admin.delete_all(namespace=NS) == 1


def test_a_tenant_never_reads_writes_or_lists_another_tenants_namespaces(mem):
    acme = mem.as_actor(Principal("acme-key", grants=(Grant("", Role.ADMIN),), tenant="acme"))
    globex = mem.as_actor(Principal("globex-key", grants=(Grant("", Role.ADMIN),), tenant="globex"))
    rid = globex.add("Globex launches on Friday.", namespace="globex/plans")
    acme.add("Acme ships on Monday.", namespace="acme/plans")
    for call in (
        lambda: acme.get(rid, namespace="globex/plans"),
        lambda: acme.search("launch", namespace="globex/plans"),
        lambda: acme.add("x" * 20, namespace="globex/plans"),
        lambda: acme.delete_all(namespace="globex/plans"),
    ):
        with pytest.raises(Forbidden, match="outside its tenant 'acme'"):
            call()
    assert acme.namespaces() == ["acme/plans"]
    assert globex.namespaces() == ["globex/plans"]
    assert len(mem.records(namespace="globex/plans")) == 1
    assert {e["actor"] for e in _refusals(mem, "globex/plans")} == {"acme-key"}


def test_as_actor_refuses_what_is_not_a_principal(mem):
    with pytest.raises(InvalidInput, match="principal"):
        mem.as_actor("admin")  # type: ignore[arg-type]
