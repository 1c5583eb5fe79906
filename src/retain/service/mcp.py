"""The MCP server (``retain mcp``): a few tools over one :class:`~retain.memory.Memory`, built with the
official MCP Python SDK (``mcp.server.MCPServer``; the ``mcp`` extra).

Tools: ``remember`` (text, type?, metadata?, ttl?), ``recall`` (query, state?, k?, where?),
``context`` (query, budget_tokens, state?), ``forget`` (id or query, under the trust rules),
``explain`` (a context's provenance id). Every tool takes an optional ``namespace``; the server's
:class:`ServerScope` decides which namespaces a caller may name. Bad arguments (a missing one, a
wrong type, a value retain refuses) come back as a tool error the client shows (``isError``); the
server keeps running. Calls run one at a time on a worker thread, so the event loop stays free
while a search runs.

Importing this module needs the ``mcp`` extra (``pip install 'retain[mcp]'``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retain.errors import InvalidInput, RetainError
from retain.memory import Memory
from retain.record import MemoryRecord, validate_namespace
from retain.retrieval.fusion import Hit

__all__ = ["DEFAULT_ACTOR", "MAX_RECALL", "ServerScope", "build_server", "hit_dict"]

DEFAULT_ACTOR = "agent"
"""The actor of the server's calls when none is configured: untrusted, so ``forget`` keeps protected
records (hard constraints, pinned) and reports them refused."""
MAX_RECALL = 100
"""Most hits one ``recall`` returns."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ServerScope:
    """Which namespaces the server's tools act on, and as whom.

    Attributes:
        namespace: the namespace of a call that names none; None = every call must name one.
        prefixes: the namespaces a call may name besides ``namespace``: every namespace starting with
            one of these prefixes (``""`` = any). Default none: only ``namespace``.
        actor: the actor of every call (audited; trust rules apply to it).

    Raises:
        InvalidInput: a bad namespace or actor, or neither a namespace nor a prefix.
    """

    namespace: str | None = None
    prefixes: tuple[str, ...] = ()
    actor: str = DEFAULT_ACTOR

    def __post_init__(self) -> None:
        if self.namespace is not None:
            validate_namespace(self.namespace)
        if self.namespace is None and not self.prefixes:
            raise InvalidInput("namespace: give the server a namespace, or namespace prefixes its tools may name")
        if not isinstance(self.actor, str) or not self.actor.strip():
            raise InvalidInput(f"actor: a non-empty string, got {self.actor!r}")

    def resolve(self, asked: str | None) -> str:
        """The namespace of a call that asked for ``asked`` (None = the server's own).

        Raises:
            InvalidInput: no namespace asked and none configured; a namespace outside the scope.
        """
        if asked is None or asked == self.namespace:
            if self.namespace is None:
                raise InvalidInput("namespace: this server has no default namespace; pass one")
            return self.namespace
        validate_namespace(asked)
        if any(asked.startswith(prefix) for prefix in self.prefixes):
            return asked
        allowed = [repr(self.namespace)] if self.namespace else []
        allowed += [f"{p!r}..." for p in self.prefixes]
        raise InvalidInput(f"namespace: {asked!r} is outside this server's scope ({', '.join(allowed)})")


def hit_dict(hit: Hit) -> dict[str, Any]:
    """One search hit as JSON-ready fields: rank, id, content (redacted as search returns it), type,
    tier, score (higher = more relevant), created_at and event_time (ISO 8601 UTC), metadata."""
    record = hit.record
    return {"rank": hit.rank, **_record_dict(record), "score": round(float(hit.score), 6)}


def _record_dict(record: MemoryRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "content": record.content,
        "type": record.type.value,
        "tier": record.tier.value,
        "created_at": record.created_at.isoformat(),
        "event_time": None if record.event_time is None else record.event_time.isoformat(),
        "metadata": dict(record.metadata),
    }


Namespace = Annotated[
    str | None, Field(description="Namespace to act on; default the server's own (see the server's instructions).")
]
State = Annotated[
    dict[str, Any] | None,
    Field(
        description="The agent's task state, e.g. {'phase': 'book_hotel', 'subgoals': [...]}: state-adaptive ranking."
    ),
]


def build_server(memory: Memory, scope: ServerScope, *, name: str = "retain") -> MCPServer:
    """An :class:`mcp.server.MCPServer` whose tools act on ``memory`` within ``scope``; run it with
    ``.run("stdio")`` or ``.run("streamable-http", host=..., port=...)``.

    Raises:
        InvalidInput: ``memory`` is not a :class:`~retain.memory.Memory`.
    """
    if not isinstance(memory, Memory):
        raise InvalidInput(f"memory: a retain Memory, got {type(memory).__name__}")
    where = f"namespace {scope.namespace!r}" if scope.namespace else "no default namespace"
    server = MCPServer(
        name,
        log_level="WARNING",
        instructions=(
            f"Long-term memory for this agent ({where}). remember stores a fact, preference, constraint or "
            "observation; recall searches it; context packs the relevant memories into a prompt within a token "
            "budget; explain shows why a packed context holds what it holds; forget removes a memory."
        ),
    )
    limiter = anyio.CapacityLimiter(1)

    async def run(call: Callable[[], _T]) -> _T:
        try:
            return await anyio.to_thread.run_sync(call, limiter=limiter)
        except RetainError as exc:  # a refusal the client can show; the server keeps running
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    _add_write_tools(server, memory, scope, run)
    _add_read_tools(server, memory, scope, run)
    return server


_Run = Callable[[Callable[[], Any]], Any]


def _namespace(scope: ServerScope, asked: str | None) -> str:
    """``scope.resolve(asked)``, a refusal raised as a tool error."""
    try:
        return scope.resolve(asked)
    except RetainError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def _add_write_tools(server: MCPServer, memory: Memory, scope: ServerScope, run: _Run) -> None:
    @server.tool()
    async def remember(
        text: Annotated[str, Field(description="What to remember, in plain language (one fact, turn or note).")],
        type: Annotated[
            str | None,
            Field(description="hard_constraint, soft_preference, fact, goal, plan_step, ...; default: inferred"),
        ] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="JSON fields kept with the memory")] = None,
        ttl: Annotated[float | None, Field(description="Seconds until the memory expires (then archived)")] = None,
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """Store one memory; returns its id. An exact duplicate returns the stored id; a correction
        ("actually, the budget is now 6000 EUR") supersedes what it corrects."""
        ns = _namespace(scope, namespace)
        rid = await run(
            lambda: memory.add(text, namespace=ns, type=type, metadata=metadata, ttl=ttl, actor=scope.actor)
        )
        return {"id": rid, "namespace": ns}

    @server.tool()
    async def forget(
        id: Annotated[str | None, Field(description="The id of the memory to forget")] = None,
        query: Annotated[str | None, Field(description="Or: forget the best matches of this query")] = None,
        k: Annotated[int, Field(description="Matches of the query to forget", ge=1, le=20)] = 1,
        reason: Annotated[str, Field(description="Why (kept in the audit log)")] = "",
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """Forget a memory by id, or the k best matches of a query, with every version. Protected
        memories (hard constraints, pinned) are kept for this server's actor unless it is trusted;
        they are listed as refused."""
        if (id is None) == (query is None):
            raise ToolError("InvalidInput: give exactly one of id or query")
        ns = _namespace(scope, namespace)
        target = id if id is not None else query
        assert target is not None
        report = await run(lambda: memory.forget(target, namespace=ns, actor=scope.actor, reason=reason, k=k))
        return {"deleted": list(report.deleted), "refused": list(report.refused), "trusted": report.trusted}


def _add_read_tools(server: MCPServer, memory: Memory, scope: ServerScope, run: _Run) -> None:
    @server.tool()
    async def recall(
        query: Annotated[str, Field(description="What to look for, in plain language")],
        state: State = None,
        k: Annotated[int, Field(description="Number of memories to return", ge=1, le=MAX_RECALL)] = 5,
        where: Annotated[
            dict[str, Any] | None,
            Field(
                description='Metadata conditions: {"topic": "travel", "n": {"$gte": 3}}; $eq $ne $gt $gte $lt $lte $in'
            ),
        ] = None,
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """Search memory; returns the best k memories, best first, each with its id, content, type and
        score (higher = more relevant). Secrets and personal data come back as placeholders ([EMAIL])."""
        ns = _namespace(scope, namespace)
        hits = await run(lambda: memory.search(query, namespace=ns, k=k, state=state, where=where))
        return {"namespace": ns, "hits": [hit_dict(h) for h in hits]}

    @server.tool()
    async def context(
        query: Annotated[str, Field(description="The task or question the context is for")],
        budget_tokens: Annotated[int, Field(description="Most tokens the context may take", ge=1)],
        state: State = None,
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """Pack the memories relevant to a task into a prompt context within a token budget: hard
        constraints first, then the newest records, then search hits. Returns the text and a
        provenance id (pass it to explain)."""
        ns = _namespace(scope, namespace)
        packed = await run(
            lambda: memory.context(query, namespace=ns, budget_tokens=budget_tokens, state=state, actor=scope.actor)
        )
        return {"text": packed.text, "provenance_id": packed.provenance_id, "used_tokens": packed.used_tokens}

    @server.tool()
    async def explain(
        provenance_id: Annotated[str, Field(description="The provenance id a context call returned")],
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """How a context was packed: the memories in (scores, sources, tokens) and those left out, and why."""
        ns = _namespace(scope, namespace)
        provenance = await run(lambda: memory.explain(provenance_id, namespace=ns))
        body: dict[str, Any] = json.loads(json.dumps(provenance.to_dict(), default=str))
        return body
