"""The MCP server (``retain mcp``): a few tools over one :class:`~retain.memory.Memory`, built with the
official MCP Python SDK (``mcp.server.MCPServer``; the ``mcp`` extra).

Tools: ``remember`` (text, type?, metadata?, ttl?), ``recall`` (query, state?, k?, where?),
``context`` (query, budget_tokens, state?), ``forget`` (id or query, under the trust rules),
``explain`` (a context's provenance id), ``conflicts`` (list the open conflicts; with ``resolve``
and ``keep``, close one: needs write, and retiring a protected record needs a trusted actor).
Every tool takes an optional ``namespace``; the server's
:class:`ServerScope` names the default namespace and the principal every call runs as
(``Memory.as_actor``: the rights model of :mod:`retain.safety.access` checks each call, and a
refusal is audited and returned as a tool error). Bad arguments (a missing one, a
wrong type, a value retain refuses) come back as a tool error the client shows (``isError``); the
server keeps running. Calls run one at a time on a worker thread, so the event loop stays free
while a search runs.

Importing this module needs the ``mcp`` extra (``pip install 'retain[mcp]'``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from retain.errors import InvalidInput, RetainError
from retain.facade.actor import ActorMemory
from retain.memory import Memory
from retain.record import MemoryRecord, validate_namespace
from retain.retrieval.fusion import Hit
from retain.safety.access import Grant, Principal, Role
from retain.safety.conflicts import Conflict
from retain.safety.redaction import redact_record

__all__ = ["DEFAULT_ACTOR", "MAX_RECALL", "ServerScope", "build_server", "conflict_summary", "hit_dict"]

DEFAULT_ACTOR = "agent"
"""The actor of the server's calls when none is configured: untrusted, so ``forget`` keeps protected
records (hard constraints, pinned) and reports them refused."""
MAX_RECALL = 100
"""Most hits one ``recall`` returns."""

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ServerScope:
    """Which namespaces the server's tools act on, and as whom (the rights model of
    :mod:`retain.safety.access`).

    Attributes:
        namespace: the namespace of a call that names none; None = every call must name one.
        principal: the principal every call runs as (``Memory.as_actor``: its role on the namespace
            is checked, a refusal is audited and returned as a tool error). None = a principal named
            ``actor`` with write on ``namespace`` alone: calls naming another namespace are refused.
        actor: the actor name of the default principal (audited; the trust rules apply to it).

    Raises:
        InvalidInput: a bad namespace or actor, or neither a namespace nor a principal.
    """

    namespace: str | None = None
    principal: Principal | None = None
    actor: str = DEFAULT_ACTOR

    def __post_init__(self) -> None:
        if self.namespace is not None:
            validate_namespace(self.namespace)
        if self.principal is None and self.namespace is None:
            raise InvalidInput("namespace: give the server a namespace, or a principal with grants")
        if self.principal is not None and not isinstance(self.principal, Principal):
            raise InvalidInput(f"principal: a retain Principal, got {type(self.principal).__name__}")
        Principal(self.actor)  # checks the actor name

    @property
    def acting(self) -> Principal:
        """The principal of every call: ``principal``, else ``actor`` with write on ``namespace``."""
        if self.principal is not None:
            return self.principal
        return Principal(self.actor, grants=(Grant(self.namespace or "", Role.WRITE),))

    def resolve(self, asked: str | None) -> str:
        """The namespace of a call that asked for ``asked`` (None = the server's own); the rights on it
        are checked by the principal's view of the Memory.

        Raises:
            InvalidInput: no namespace asked and none configured; another namespace than the server's
                when the server has no principal of its own.
        """
        if asked is None or asked == self.namespace:
            if self.namespace is None:
                raise InvalidInput("namespace: this server has no default namespace; pass one")
            return self.namespace
        validate_namespace(asked)
        if self.principal is None:
            raise InvalidInput(f"namespace: this server serves {self.namespace!r} only, not {asked!r}")
        return asked


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
            "budget; explain shows why a packed context holds what it holds; forget removes a memory; conflicts "
            "lists contradictions retain did not settle on its own (ask the user its question) and resolves one."
        ),
    )
    limiter = anyio.CapacityLimiter(1)
    view = memory.as_actor(scope.acting)

    async def run(call: Callable[[], _T]) -> _T:
        try:
            return await anyio.to_thread.run_sync(call, limiter=limiter)
        except RetainError as exc:  # a refusal the client can show; the server keeps running
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    _add_write_tools(server, view, scope, run)
    _add_read_tools(server, view, scope, run)
    _add_conflicts_tool(server, view, scope, run)
    return server


_Run = Callable[[Callable[[], Any]], Any]


def _namespace(scope: ServerScope, asked: str | None) -> str:
    """``scope.resolve(asked)``, a refusal raised as a tool error."""
    try:
        return scope.resolve(asked)
    except RetainError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def _add_write_tools(server: MCPServer, memory: ActorMemory, scope: ServerScope, run: _Run) -> None:
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
        rid = await run(lambda: memory.add(text, namespace=ns, type=type, metadata=metadata, ttl=ttl))
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
        report = await run(lambda: memory.forget(target, namespace=ns, reason=reason, k=k))
        return {"deleted": list(report.deleted), "refused": list(report.refused), "trusted": report.trusted}


def _add_read_tools(server: MCPServer, memory: ActorMemory, scope: ServerScope, run: _Run) -> None:
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
        packed = await run(lambda: memory.context(query, namespace=ns, budget_tokens=budget_tokens, state=state))
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


def conflict_summary(conflict: Conflict) -> dict[str, Any]:
    """One conflict as JSON-ready fields: id (what ``resolve`` takes), status, resolution, the
    clarifying question, the actor that wrote the newer record, the reason, the model's probability
    (0..1, higher = more likely the newer record replaces the older) and both records (redacted)."""
    new, old = redact_record(conflict.new).record, redact_record(conflict.old).record
    return {
        "id": conflict.id,
        "status": conflict.status,
        "resolution": conflict.resolution,
        "question": f'Which holds now: "{old.content}" or "{new.content}" (from {conflict.actor})?',
        "actor": conflict.actor,
        "reason": conflict.reason,
        "probability": conflict.probability,
        "new": _record_dict(new),
        "old": _record_dict(old),
    }


def _add_conflicts_tool(server: MCPServer, memory: ActorMemory, scope: ServerScope, run: _Run) -> None:
    @server.tool()
    async def conflicts(
        resolve: Annotated[
            str | None, Field(description="The id of an open conflict to close (from a listing); omit to list")
        ] = None,
        keep: Annotated[
            Literal["new", "old", "both"] | None,
            Field(description="With resolve: which record holds now: new, old, or both (no contradiction)"),
        ] = None,
        reason: Annotated[str, Field(description="Why (kept in the audit log)")] = "",
        namespace: Namespace = None,
    ) -> dict[str, Any]:
        """List the open conflicts (two memories that contradict each other where retain retired
        neither), each with a question to ask the user; or, with resolve and keep, close one: keeping
        the new record retires the old one (a protected record only for a trusted actor)."""
        ns = _namespace(scope, namespace)
        if resolve is None:
            if keep is not None:
                raise ToolError("InvalidInput: keep goes with resolve (the conflict id)")
            found = await run(lambda: memory.conflicts(ns))
            return {"namespace": ns, "conflicts": [conflict_summary(c) for c in found]}
        if keep is None:
            raise ToolError("InvalidInput: resolve needs keep: new, old or both")
        closed = await run(lambda: memory.resolve_conflict(resolve, namespace=ns, keep=keep, reason=reason))
        return {"namespace": ns, "resolved": conflict_summary(closed)}
