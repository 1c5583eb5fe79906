"""Every /v1 endpoint and every error status, with httpx against a real ``retain serve`` process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from retain.store import SQLiteStore

NS = "acme/trip"
SHARED = "acme/shared/plan"
STATE = {"phase": "book_flights", "subgoals": ["pick a flight"], "constraints": {"budget": "under 5000 EUR"}}


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def call(http: httpx.Client, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    headers.update(kwargs.pop("headers", {}))
    return http.request(method, path, headers=headers, **kwargs)


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def error(response: httpx.Response, status: int, type_name: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["type"] == type_name, body
    return str(body["message"])


def audit(server, namespace: str) -> list[dict[str, Any]]:
    store = SQLiteStore(server.db)
    try:
        store.setup()
        return store.audit_log(namespace)
    finally:
        store.close()


def test_healthz_and_the_openapi_schema_need_no_key(http):
    assert ok(http.get("/healthz")) == {"status": "ok"}
    paths = ok(http.get("/openapi.json"))["paths"]
    assert {"/v1/memories", "/v1/memories/batch", "/v1/search", "/v1/context", "/v1/audit/verify"} <= set(paths)
    assert "413" in paths["/v1/search"]["post"]["responses"]


def test_the_memory_operations_round_trip(http, server):
    admin = server.keys["admin"]
    assert ok(call(http, admin, "GET", "/v1/whoami"))["tenant"] == "acme"
    body = {"namespace": NS, "content": "The total budget must stay under 5000 EUR.", "role": "user"}
    budget_id = ok(call(http, admin, "POST", "/v1/memories", json=body), 201)["id"]
    items = [
        {"content": "We fly out of Brennick (BRK).", "segment": "s1", "seq": 0},
        {
            "content": "Book the hotel near the station.",
            "segment": "s1",
            "seq": 1,
            "event_time": "2024-05-01T09:00:00Z",
        },
    ]
    ids = ok(call(http, admin, "POST", "/v1/memories/batch", json={"namespace": NS, "items": items}), 201)["ids"]
    assert len(ids) == 2
    assert ok(call(http, admin, "GET", f"/v1/memories/{ids[0]}", params={"namespace": NS}))["content"].startswith(
        "We fly"
    )
    assert NS in ok(call(http, admin, "GET", "/v1/namespaces"))["namespaces"]

    update = {"namespace": NS, "content": "The total budget is now 6000 EUR.", "reason": "raised", "importance": 0.9}
    new_id = ok(call(http, admin, "PUT", f"/v1/memories/{budget_id}", json=update))["id"]
    versions = ok(call(http, admin, "GET", f"/v1/memories/{new_id}/history", params={"namespace": NS}))["records"]
    assert [v["content"][-8:] for v in versions] == ["000 EUR.", "000 EUR."] and len(versions) == 2

    search = {
        "namespace": NS, "query": "how much can we spend?", "k": 3, "preset": "default", "types": None,
        "tiers": ["core", "dynamic"], "start": None, "end": None, "include_superseded": False, "threshold": None,
        "mmr_lambda": 0.7, "state": STATE, "allow_raw": False, "time_aware": True, "now": "2024-06-01T00:00:00Z",
        "expand": 1, "window": 1, "order": "rank",
    }  # fmt: skip
    hits = ok(call(http, admin, "POST", "/v1/search", json=search))["hits"]
    assert hits and {"alpha", "state"} <= set(hits[0]["scores"])

    ctx = ok(call(http, admin, "POST", "/v1/context", json={"namespace": NS, "query": "plan", "budget_tokens": 300}))
    assert "6000 EUR" in ctx["text"]
    explained = ok(call(http, admin, "GET", f"/v1/provenance/{ctx['provenance_id']}", params={"namespace": NS}))
    assert explained["id"] == ctx["provenance_id"] and explained["items"]

    timeline = ok(call(http, admin, "GET", "/v1/timeline", params={"namespace": NS, "limit": 10}))["records"]
    assert len(timeline) == 3
    exported = ok(call(http, admin, "GET", "/v1/export", params={"namespace": NS, "raw": "true"}))
    assert exported["namespace"] == NS and len(exported["records"]) == 4  # the superseded version too
    assert "Handoff" in ok(call(http, admin, "GET", "/v1/handoff", params={"namespace": NS}))["text"]
    report = ok(call(http, admin, "GET", "/v1/budget", params={"namespace": NS}))
    assert report["capacity"] == 50 and report["records"] == 3
    used = ok(call(http, admin, "POST", f"/v1/memories/{ids[1]}/feedback", json={"namespace": NS, "used": True}))
    assert used["access_count"] == 1

    entries = ok(call(http, admin, "GET", "/v1/audit", params={"namespace": NS}))["entries"]
    assert {"add", "supersede", "retrieve"} <= {e["op"] for e in entries}
    assert {e["actor"] for e in entries if e["op"] == "add"} == {"acme-admin"}
    assert ok(call(http, admin, "GET", "/v1/audit/verify", params={"namespace": NS}))["ok"] is True

    forgot = ok(call(http, admin, "POST", "/v1/forget", json={"namespace": NS, "query_or_id": ids[0]}))
    assert forgot["deleted"] == [ids[0]] and forgot["actor"] == "acme-admin"
    assert ok(call(http, admin, "DELETE", f"/v1/memories/{ids[1]}", params={"namespace": NS}))["purged"] == 1
    assert ok(call(http, admin, "DELETE", "/v1/memories", params={"namespace": NS}))["purged"] == 2
    assert ok(call(http, admin, "GET", "/v1/timeline", params={"namespace": NS}))["records"] == []


def test_bad_input_is_400_naming_the_field(http, server):
    admin = server.keys["admin"]
    msg = error(
        call(http, admin, "POST", "/v1/memories", json={"namespace": NS, "content": "   "}), 400, "InvalidInput"
    )
    assert "content" in msg
    msg = error(
        call(http, admin, "POST", "/v1/search", json={"namespace": NS, "query": "x", "k": 0}), 400, "InvalidInput"
    )
    assert "body.k" in msg
    msg = error(
        call(http, admin, "POST", "/v1/search", json={"namespace": NS, "query": "x", "order": "up"}),
        400,
        "InvalidInput",
    )
    assert "order" in msg
    bad = {"namespace": NS, "query": "x", "bogus": 1}
    assert "bogus" in error(call(http, admin, "POST", "/v1/search", json=bad), 400, "InvalidInput")


def test_malformed_json_is_400_naming_the_position(http, server):
    raw = b'{"namespace": "acme/trip",\n "content": oops}'
    response = call(
        http, server.keys["admin"], "POST", "/v1/memories", content=raw, headers={"content-type": "application/json"}
    )
    msg = error(response, 400, "InvalidInput")
    assert "malformed JSON at position 39 (line 2, column 13)" in msg


def test_an_unknown_record_is_404(http, server):
    response = call(
        http, server.keys["admin"], "GET", "/v1/memories/01HZX3K8Q2M7V4T9C6B1N5R0WE", params={"namespace": NS}
    )
    error(response, 404, "RecordNotFound")
    error(call(http, server.keys["admin"], "GET", "/v1/nothing-here"), 404, "NotFound")


def test_a_context_that_cannot_hold_the_constraints_is_409(http, server):
    admin = server.keys["admin"]
    ns = "acme/tight"
    body = {
        "namespace": ns,
        "content": "The total budget must stay under 5000 EUR and never above it.",
        "type": "hard_constraint",
    }
    ok(call(http, admin, "POST", "/v1/memories", json=body), 201)
    response = call(http, admin, "POST", "/v1/context", json={"namespace": ns, "query": "plan", "budget_tokens": 2})
    error(response, 409, "BudgetInfeasible")


def test_a_budget_report_without_a_budget_or_a_namespace_is_400(http, server):
    response = call(http, server.keys["admin"], "GET", "/v1/budget")
    assert "namespace" in error(response, 400, "InvalidInput")


def test_a_body_over_the_limit_is_413_before_parsing(http, server):
    admin = server.keys["admin"]
    big = b"{" + b" " * (70 * 1024) + b"}"  # not even valid JSON: refused before it is parsed
    response = call(http, admin, "POST", "/v1/memories", content=big, headers={"content-type": "application/json"})
    assert "declared" in error(response, 413, "PayloadTooLarge")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"namespace": "acme/big", "content": "'
        for _ in range(80):
            yield b"x" * 1024
        yield b'"}'

    response = call(http, admin, "POST", "/v1/memories", content=chunks(), headers={"content-type": "application/json"})
    assert "read" in error(response, 413, "PayloadTooLarge")
    assert "acme/big" not in ok(call(http, admin, "GET", "/v1/namespaces"))["namespaces"]


@pytest.mark.parametrize("who", ["none", "malformed", "unknown", "revoked"])
def test_no_key_or_a_bad_or_revoked_key_is_401_and_audited(http, server, who):
    keys = {"none": None, "malformed": "hello", "unknown": "rk_000000000000_nope", "revoked": server.keys["revoked"]}
    before = len(audit(server, "_service"))
    body = {"namespace": "acme/x401", "content": "Nobody may write this without a key."}
    msg = error(call(http, keys[who], "POST", "/v1/memories", json=body), 401, "Unauthorized")
    assert "rk_" not in msg or who == "revoked"
    entries = audit(server, "_service")[before:]
    assert [(e["op"], e["details"]["outcome"]) for e in entries] == [("authenticate", "refused")]
    assert audit(server, "acme/x401") == []  # nothing written
    error(call(http, keys[who], "GET", "/v1/memories/x", params={"namespace": NS}), 401, "Unauthorized")


def test_another_tenants_namespace_is_403_nothing_read_or_written_and_audited(http, server):
    admin, globex = server.keys["admin"], server.keys["globex"]
    secret_id = ok(
        call(
            http,
            admin,
            "POST",
            "/v1/memories",
            json={"namespace": "acme/secret", "content": "Acme's launch is on Friday."},
        ),
        201,
    )["id"]
    error(call(http, globex, "GET", f"/v1/memories/{secret_id}", params={"namespace": "acme/secret"}), 403, "Forbidden")
    error(
        call(http, globex, "POST", "/v1/search", json={"namespace": "acme/secret", "query": "launch"}), 403, "Forbidden"
    )
    body = {"namespace": "acme/secret", "content": "Globex was here and wrote this."}
    error(call(http, globex, "POST", "/v1/memories", json=body), 403, "Forbidden")
    error(call(http, globex, "DELETE", "/v1/memories", params={"namespace": "acme/secret"}), 403, "Forbidden")
    assert "acme/secret" not in ok(call(http, globex, "GET", "/v1/namespaces"))["namespaces"]
    entries = audit(server, "acme/secret")
    refused = [e for e in entries if e["details"].get("outcome") == "refused"]
    assert [(e["op"], e["actor"]) for e in refused] == [
        ("get", "globex-admin"), ("search", "globex-admin"), ("add", "globex-admin"), ("delete_all", "globex-admin")
    ]  # fmt: skip
    assert [e["actor"] for e in entries if e["op"] == "add" and e not in refused] == ["acme-admin"]


def test_a_write_key_on_a_read_only_prefix_is_403(http, server):
    writer = server.keys["writer"]
    ok(
        call(http, writer, "POST", "/v1/memories", json={"namespace": "acme/notes", "content": "Notes are writable."}),
        201,
    )
    body = {"namespace": "acme/audit/2024", "content": "The audit prefix is read-only for me."}
    assert "needs write, has role read" in error(
        call(http, writer, "POST", "/v1/memories", json=body), 403, "Forbidden"
    )
    error(call(http, writer, "DELETE", "/v1/memories", params={"namespace": "acme/notes"}), 403, "Forbidden")  # admin


def test_a_reader_agent_cannot_forget_a_shared_record(http, server):
    planner, reviewer = server.keys["planner"], server.keys["reviewer"]
    body = {"namespace": SHARED, "content": "Take the 9:40 train to Brennick."}
    rid = ok(call(http, planner, "POST", "/v1/memories", json=body), 201)["id"]
    hits = ok(call(http, reviewer, "POST", "/v1/search", json={"namespace": SHARED, "query": "train"}))["hits"]
    assert [h["record"]["id"] for h in hits] == [rid]
    forget = {"namespace": SHARED, "query_or_id": rid}
    error(call(http, reviewer, "POST", "/v1/forget", json=forget), 403, "Forbidden")
    error(call(http, reviewer, "DELETE", f"/v1/memories/{rid}", params={"namespace": SHARED}), 403, "Forbidden")
    assert ok(call(http, reviewer, "GET", f"/v1/memories/{rid}", params={"namespace": SHARED}))["id"] == rid
    refused = [e for e in audit(server, SHARED) if e["details"].get("outcome") == "refused"]
    assert [(e["op"], e["actor"]) for e in refused] == [("forget", "reviewer"), ("delete", "reviewer")]
    error(call(http, planner, "GET", "/v1/memories/x", params={"namespace": "acme/other"}), 403, "Forbidden")
