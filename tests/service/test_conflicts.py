"""The conflict endpoints (GET /v1/conflicts, POST /v1/conflicts/{id}/resolve) with httpx against a
real ``retain serve --conflict-model shipped``: listed to readers, resolved by writers (audited),
refused to readers and other tenants (403, audited), and the trust rule on protected records."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from retain.store import SQLiteStore
from serving import Server, make_keys

SHARED = "acme/shared/rules"
RULES = [
    {"content": "The total budget must stay under 5,000 EUR.", "type": "hard_constraint"},
    {"content": "The total budget must stay under 4,000 EUR.", "type": "hard_constraint"},
]


def call(http: httpx.Client, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return http.request(method, path, headers=headers, **kwargs)


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def error(response: httpx.Response, status: int, type_name: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["type"] == type_name, body
    return str(body["message"])


def audit(server: Server, namespace: str) -> list[dict[str, Any]]:
    store = SQLiteStore(server.db)
    try:
        store.setup()
        return store.audit_log(namespace)
    finally:
        store.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("conflicts")
    srv = Server(db=folder / "retain.db", keys_path=folder / "keys.json", folder=folder)
    srv.keys = make_keys(srv.keys_path)
    srv.extra = ("--encoder", "hashing-384", "--conflict-model", "shipped", "--trusted-actor", "acme-admin")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def http(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def open_conflict(http: httpx.Client, key: str, namespace: str) -> dict[str, Any]:
    ok(call(http, key, "POST", "/v1/memories/batch", json={"namespace": namespace, "items": RULES}), 201)
    (conflict,) = ok(call(http, key, "GET", "/v1/conflicts", params={"namespace": namespace}))["conflicts"]
    return dict(conflict)


def test_a_reader_lists_a_writer_resolves_and_the_resolution_is_audited(http, server):
    planner, reviewer, globex = server.keys["planner"], server.keys["reviewer"], server.keys["globex"]
    conflict = open_conflict(http, planner, SHARED)
    assert conflict["status"] == "open" and "?" in conflict["question"]
    assert {conflict["new"]["content"], conflict["old"]["content"]} == {r["content"] for r in RULES}
    listed = ok(call(http, reviewer, "GET", "/v1/conflicts", params={"namespace": SHARED}))["conflicts"]
    assert [c["id"] for c in listed] == [conflict["id"]]

    path = f"/v1/conflicts/{conflict['id']}/resolve"
    body = {"namespace": SHARED, "keep": "both", "reason": "two budgets, two trips"}
    error(call(http, reviewer, "POST", path, json=body), 403, "Forbidden")
    error(call(http, globex, "GET", "/v1/conflicts", params={"namespace": SHARED}), 403, "Forbidden")
    error(call(http, None, "GET", "/v1/conflicts", params={"namespace": SHARED}), 401, "Unauthorized")
    assert ok(call(http, reviewer, "GET", "/v1/conflicts", params={"namespace": SHARED}))["conflicts"] != []

    # the planner is not trusted: keeping the new rule would retire a hard constraint
    msg = error(call(http, planner, "POST", path, json={**body, "keep": "new"}), 403, "Forbidden")
    assert "planner" in msg or "trusted" in msg
    closed = ok(call(http, planner, "POST", path, json=body))
    assert (closed["status"], closed["resolution"]) == ("resolved", "both")
    assert ok(call(http, reviewer, "GET", "/v1/conflicts", params={"namespace": SHARED}))["conflicts"] == []
    every = ok(call(http, reviewer, "GET", "/v1/conflicts", params={"namespace": SHARED, "include_resolved": True}))
    assert [c["status"] for c in every["conflicts"]] == ["resolved"]
    assert "already resolved" in error(call(http, planner, "POST", path, json=body), 400, "InvalidInput")

    entries = audit(server, SHARED)
    resolved = [e for e in entries if e["op"] == "resolve_conflict" and e["details"].get("outcome") != "refused"]
    assert [(e["actor"], e["details"]["keep"]) for e in resolved] == [("planner", "both")]
    refused = [(e["op"], e["actor"]) for e in entries if e["details"].get("outcome") == "refused"]
    assert refused == [("resolve_conflict", "reviewer"), ("conflicts", "globex-admin"), ("update", "planner")]


def test_a_trusted_writer_keeps_the_new_record_and_the_old_one_is_superseded(http, server):
    admin, ns = server.keys["admin"], "acme/trip"
    conflict = open_conflict(http, admin, ns)
    closed = ok(
        call(http, admin, "POST", f"/v1/conflicts/{conflict['id']}/resolve", json={"namespace": ns, "keep": "new"})
    )
    assert closed["resolution"] == "new"
    old = ok(call(http, admin, "GET", f"/v1/memories/{conflict['old']['id']}", params={"namespace": ns}))
    assert old["superseded_by"] == conflict["new"]["id"]


def test_bad_conflict_ids_and_choices_are_400_or_404(http, server):
    admin, ns = server.keys["admin"], "acme/bad"
    ok(call(http, admin, "POST", "/v1/memories", json={"namespace": ns, "content": "One record, no conflict."}), 201)
    unknown = "01HZX3K8Q2M7V4T9C6B1N5R0WE:01HZX3K8Q2M7V4T9C6B1N5R0WF"
    error(
        call(http, admin, "POST", f"/v1/conflicts/{unknown}/resolve", json={"namespace": ns, "keep": "old"}),
        404,
        "RecordNotFound",
    )
    msg = error(
        call(http, admin, "POST", "/v1/conflicts/nocolon/resolve", json={"namespace": ns, "keep": "old"}),
        400,
        "InvalidInput",
    )
    assert "conflict_id" in msg
    msg = error(
        call(http, admin, "POST", f"/v1/conflicts/{unknown}/resolve", json={"namespace": ns, "keep": "maybe"}),
        400,
        "InvalidInput",
    )
    assert "keep" in msg
