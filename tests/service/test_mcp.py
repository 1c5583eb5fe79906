"""The MCP server with the official ``mcp`` Python client: ``retain mcp`` launched over stdio (every
tool), once over streamable HTTP, and in process for the bad-input cases (a tool error the client
shows, the server still answering afterwards)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.memory import Memory
from retain.safety.access import Grant, Principal, Role
from retain.service.mcp import ServerScope, build_server

RETAIN = str(Path(sys.executable).with_name("retain"))
ENV = {**os.environ, "RETAIN_ENCODER": "hashing-64", "HF_HUB_OFFLINE": "1"}
TOOLS = {"remember", "recall", "context", "forget", "explain", "conflicts"}


def run(session: Callable[[Client], Awaitable[None]], server: Any) -> None:
    async def main() -> None:
        async with Client(server, read_timeout_seconds=120) as client:
            await session(client)

    anyio.run(main)


def data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return " ".join(getattr(part, "text", "") for part in result.content)


async def every_tool(client: Client) -> None:
    """remember, recall (with where), context, explain, forget (trust rules: the agent may not forget a
    constraint), as a client sees them."""
    assert {t.name for t in (await client.list_tools()).tools} >= TOOLS
    kept = data(await client.call_tool("remember", {"text": "The total budget must stay under 5000 EUR."}))
    note = data(
        await client.call_tool(
            "remember", {"text": "We fly out of Brennick airport.", "type": "fact", "metadata": {"leg": 1}}
        )
    )
    hits = data(await client.call_tool("recall", {"query": "airport", "k": 3, "where": {"leg": {"$gte": 1}}}))["hits"]
    assert [h["id"] for h in hits] == [note["id"]]
    assert hits[0]["metadata"] == {"leg": 1}
    packed = data(await client.call_tool("context", {"query": "plan the flights", "budget_tokens": 200}))
    assert "5000 EUR" in packed["text"]
    why = data(await client.call_tool("explain", {"provenance_id": packed["provenance_id"]}))
    assert kept["id"] in json.dumps(why)
    refused = data(await client.call_tool("forget", {"query": "total budget"}))
    assert refused["refused"] == [kept["id"]] and refused["deleted"] == []
    done = data(await client.call_tool("forget", {"id": note["id"]}))
    assert done["deleted"] == [note["id"]]
    assert note["id"] not in [h["id"] for h in data(await client.call_tool("recall", {"query": "airport"}))["hits"]]
    assert data(await client.call_tool("conflicts", {})) == {"namespace": "trip", "conflicts": []}


def test_stdio_every_tool(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=RETAIN, args=["mcp", "--db", str(tmp_path / "m.db"), "--namespace", "trip"], env=ENV
    )
    run(every_tool, params)
    with Memory(tmp_path / "m.db", encoder=HashingEncoder(64)) as mem:  # the same store, as written
        assert [r.content for r in mem.records(namespace="trip")] == ["The total budget must stay under 5000 EUR."]


RULES = ("The total budget must stay under 5,000 EUR.", "The total budget must stay under 4,000 EUR.")


async def conflict_session(client: Client) -> None:
    """Two contradicting hard constraints open a conflict; the tool lists it with its question; the
    untrusted agent may not retire a hard constraint; keeping both closes it (audited)."""
    for text in RULES:
        data(await client.call_tool("remember", {"text": text, "type": "hard_constraint"}))
    (conflict,) = data(await client.call_tool("conflicts", {}))["conflicts"]
    assert conflict["status"] == "open" and {conflict["new"]["content"], conflict["old"]["content"]} == set(RULES)
    assert "?" in conflict["question"]
    refused = error_text(await client.call_tool("conflicts", {"resolve": conflict["id"], "keep": "new"}))
    assert "Forbidden" in refused
    done = data(await client.call_tool("conflicts", {"resolve": conflict["id"], "keep": "both", "reason": "ok"}))
    assert (done["resolved"]["status"], done["resolved"]["resolution"]) == ("resolved", "both")
    assert data(await client.call_tool("conflicts", {}))["conflicts"] == []


def test_stdio_conflicts_listed_and_resolved(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    args = ["mcp", "--db", db, "--namespace", "trip", "--conflict-model", "shipped"]
    run(conflict_session, StdioServerParameters(command=RETAIN, args=args, env=ENV))
    with Memory(db, encoder=HashingEncoder(64)) as mem:
        resolved = [e for e in mem.store.audit_log("trip") if e["op"] == "resolve_conflict"]
        assert [(e["actor"], e["details"].get("keep")) for e in resolved if "keep" in e["details"]] == [
            ("agent", "both")
        ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    args = [RETAIN, "mcp", "--db", str(tmp_path / "h.db"), "-n", "trip", "--http", "--port", str(port)]
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_streamable_http_every_tool(http_server: str) -> None:
    run(every_tool, http_server)


@pytest.fixture
def server() -> Iterator[Any]:
    mem = Memory(encoder=HashingEncoder(64))
    yield build_server(mem, ServerScope(namespace="trip"))
    mem.close()


@pytest.mark.parametrize(
    ("tool", "arguments", "names"),
    [
        ("recall", {}, "query"),
        ("recall", {"query": "x", "k": "many"}, "k"),
        ("recall", {"query": "x", "k": 0}, "k"),
        ("recall", {"query": 42}, "query"),
        ("recall", {"query": "x", "where": {"n": {"$like": 1}}}, "where"),
        ("remember", {}, "text"),
        ("remember", {"text": ["a"]}, "text"),
        ("remember", {"text": "   "}, "content"),
        ("remember", {"text": "a note", "type": "gossip"}, "type"),
        ("remember", {"text": "a note", "ttl": -1}, "ttl"),
        ("context", {"query": "x"}, "budget_tokens"),
        ("context", {"query": "x", "budget_tokens": "lots"}, "budget_tokens"),
        ("forget", {}, "id or query"),
        ("forget", {"id": "a", "query": "b"}, "id or query"),
        ("explain", {"provenance_id": "nope"}, "RecordNotFound"),
        ("recall", {"query": "x", "namespace": "elsewhere"}, "serves 'trip' only"),
        ("conflicts", {"resolve": "a:b"}, "keep"),
        ("conflicts", {"keep": "new"}, "resolve"),
        ("conflicts", {"resolve": "a:b", "keep": "newest"}, "keep"),
        ("conflicts", {"resolve": "nocolon", "keep": "old"}, "conflict_id"),
    ],
)
def test_bad_input_is_a_tool_error_and_the_server_keeps_running(
    server: Any, tool: str, arguments: dict[str, Any], names: str
) -> None:
    async def session(client: Client) -> None:
        assert names in error_text(await client.call_tool(tool, arguments))
        data(await client.call_tool("remember", {"text": "still here"}))
        assert data(await client.call_tool("recall", {"query": "still here"}))["hits"]

    run(session, server)


def test_namespaces_follow_the_principal_rights() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    principal = Principal("planner", grants=(Grant("trip", Role.WRITE), Grant("team/", Role.READ)))
    mem.add("the team meets on Monday", namespace="team/a")

    async def session(client: Client) -> None:
        data(await client.call_tool("remember", {"text": "the hotel is booked"}))
        found = data(await client.call_tool("recall", {"query": "team meets", "namespace": "team/a"}))
        assert found["namespace"] == "team/a" and len(found["hits"]) == 1
        refused = error_text(await client.call_tool("remember", {"text": "a note", "namespace": "team/a"}))
        assert "Forbidden" in refused
        assert "Forbidden" in error_text(await client.call_tool("recall", {"query": "x", "namespace": "private"}))

    run(session, build_server(mem, ServerScope(namespace="trip", principal=principal)))
    refusals = [
        e for e in mem.store.audit_log() if e["actor"] == "planner" and e["details"].get("outcome") == "refused"
    ]
    assert len(refusals) == 2
    assert [r.content for r in mem.records(namespace="trip")] == ["the hotel is booked"]
    mem.close()


def test_scope_needs_a_namespace_or_a_principal() -> None:
    with pytest.raises(InvalidInput):
        ServerScope()
    with pytest.raises(InvalidInput, match="no default namespace"):
        ServerScope(principal=Principal("a", grants=(Grant("", Role.READ),))).resolve(None)
