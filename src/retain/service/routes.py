"""The /v1 endpoints: one per ``Memory`` operation, each through the caller's
:class:`~retain.facade.actor.ActorMemory` view (so its role is checked on the namespace named).

Records are JSON objects as ``MemoryRecord.to_dict`` makes them (times ISO 8601 UTC, no
embedding). Errors are ``{"error": {"type", "message"}}`` with the status of
:mod:`retain.service.errors`; every endpoint may answer 400, 401, 403 and 413 besides those named.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic_core import to_json

from retain.record import MemoryRecord
from retain.safety.conflicts import Conflict
from retain.safety.redaction import redact_record
from retain.service.auth import ActorMemoryDep, PrincipalDep
from retain.service.schemas import (
    ERROR_RESPONSES,
    AddBody,
    BatchBody,
    ContextBody,
    FeedbackBody,
    ForgetBody,
    ResolveBody,
    SearchBody,
    UpdateBody,
)

__all__ = ["conflict_dict", "router"]

router = APIRouter(prefix="/v1", responses=ERROR_RESPONSES)

NamespaceQ = Annotated[str, Query(min_length=1, max_length=256, description="The namespace (tenant/...).")]
Id = Annotated[str, "a record id"]


def _records(records: list[MemoryRecord]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in records]


def _plain(value: Any) -> dict[str, Any]:
    """A result dataclass (reports) as a dict."""
    out: dict[str, Any] = dataclasses.asdict(value)
    return out


def conflict_dict(conflict: Conflict) -> dict[str, Any]:
    """A conflict as JSON, both records redacted (secrets and personal data as placeholders), as
    search returns records by default."""
    shown = dataclasses.replace(
        conflict, new=redact_record(conflict.new).record, old=redact_record(conflict.old).record
    )
    return shown.to_dict()


def _json(data: Any, status: int = 200) -> Response:
    """``data`` as a JSON response (pydantic-core's encoder: datetimes as ISO 8601, UTF-8 literal),
    without FastAPI's slower generic encoder."""
    return Response(to_json(data, fallback=_scalar), status_code=status, media_type="application/json")


def _scalar(value: Any) -> Any:
    """numpy scalars as Python numbers; anything else pydantic-core cannot encode as its text."""
    return value.item() if hasattr(value, "item") else str(value)


@router.get("/whoami", summary="The caller's principal: tenant, actor and grants")
async def whoami(principal: PrincipalDep) -> Response:
    return _json(principal.to_dict())


@router.get("/namespaces", summary="Namespaces holding records that the caller may read")
async def namespaces(mem: ActorMemoryDep) -> Response:
    return _json({"namespaces": await mem.namespaces()})


@router.post("/memories", status_code=201, summary="Add one memory (write); 409 when the budget cannot hold it")
async def add(body: AddBody, mem: ActorMemoryDep) -> Response:
    fields = body.model_dump(exclude={"namespace", "content"})
    return _json({"id": await mem.add(body.content, namespace=body.namespace, **fields)}, 201)


@router.post("/memories/batch", status_code=201, summary="Add several memories in one transaction (write)")
async def add_batch(body: BatchBody, mem: ActorMemoryDep) -> Response:
    items = [item.model_dump() for item in body.items]
    for item in items:
        item["metadata"] = item["metadata"] or {}
    return _json({"ids": await mem.add_many(items, namespace=body.namespace)}, 201)


@router.get("/memories/{id}", summary="One record, current or superseded (read); 404 when absent")
async def get(id: Id, namespace: NamespaceQ, mem: ActorMemoryDep) -> Response:
    return _json((await mem.get(id, namespace=namespace)).to_dict())


@router.put("/memories/{id}", summary="Write a new version of a memory (write); 404 when absent")
async def update(id: Id, body: UpdateBody, mem: ActorMemoryDep) -> Response:
    new_id = await mem.update(id, body.content, namespace=body.namespace, reason=body.reason, **body.fields())
    return _json({"id": new_id})


@router.delete("/memories/{id}", summary="Purge a memory and all its versions (write); 404 when absent")
async def delete(id: Id, namespace: NamespaceQ, mem: ActorMemoryDep, reason: str = "") -> Response:
    return _json({"purged": await mem.delete(id, namespace=namespace, reason=reason)})


@router.delete("/memories", summary="Purge every memory of a namespace (admin)")
async def delete_all(namespace: NamespaceQ, mem: ActorMemoryDep, reason: str = "") -> Response:
    return _json({"purged": await mem.delete_all(namespace=namespace, reason=reason)})


@router.get("/memories/{id}/history", summary="Every version of a memory, oldest first (read)")
async def history(id: Id, namespace: NamespaceQ, mem: ActorMemoryDep) -> Response:
    return _json({"records": _records(await mem.history(id, namespace=namespace))})


@router.post("/memories/{id}/feedback", summary="Whether a retrieved memory was used (write)")
async def feedback(id: Id, body: FeedbackBody, mem: ActorMemoryDep) -> Response:
    return _json((await mem.feedback(id, namespace=body.namespace, used=body.used)).to_dict())


@router.post("/forget", summary="Forget a record by id or a query's best hits (write)")
async def forget(body: ForgetBody, mem: ActorMemoryDep) -> Response:
    report = await mem.forget(body.query_or_id, namespace=body.namespace, reason=body.reason, k=body.k)
    return _json(_plain(report))


@router.post("/search", summary="Hybrid search with every option, the agent state included (read)")
async def search(body: SearchBody, mem: ActorMemoryDep) -> Response:
    hits = await mem.search(body.query, namespace=body.namespace, **body.options())
    return _json({"hits": [hit.to_dict() for hit in hits]})


@router.post("/context", summary="Pack a prompt context within a token budget (read); 409 when it cannot fit")
async def context(body: ContextBody, mem: ActorMemoryDep) -> Response:
    options = body.model_dump(exclude={"namespace", "query", "budget_tokens"})
    ctx = await mem.context(body.query, namespace=body.namespace, budget_tokens=body.budget_tokens, **options)
    return _json({"text": ctx.text, "provenance_id": ctx.provenance_id, "provenance": ctx.provenance.to_dict()})


@router.get("/provenance/{id}", summary="Explain how a context was packed (read); 404 when absent")
async def explain(id: Id, namespace: NamespaceQ, mem: ActorMemoryDep) -> Response:
    return _json((await mem.explain(id, namespace=namespace)).to_dict())


@router.get("/timeline", summary="Current records in event order (read)")
async def timeline(
    namespace: NamespaceQ,
    mem: ActorMemoryDep,
    query: str | None = None,
    start: str | None = None,
    end: str | None = None,
    limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
) -> Response:
    records = await mem.timeline(namespace, query, start=start, end=end, limit=limit)
    return _json({"records": _records(records)})


@router.get("/export", summary="The namespace as JSON, redacted unless raw (raw needs admin)")
async def export(
    namespace: NamespaceQ,
    mem: ActorMemoryDep,
    include_history: bool = True,
    include_archive: bool = True,
    raw: bool = False,
) -> Response:
    text = await mem.export(
        namespace=namespace, include_history=include_history, include_archive=include_archive, allow_raw=raw
    )
    return Response(content=text.encode("utf-8"), media_type="application/json")


@router.get("/handoff", summary="A redacted case summary for another agent or a person (read)")
async def handoff(
    namespace: NamespaceQ,
    mem: ActorMemoryDep,
    fmt: Literal["markdown", "json"] = "markdown",
    recent: Annotated[int | None, Query(ge=0, le=10_000)] = 10,
) -> Response:
    return _json(_plain(await mem.handoff(namespace, fmt=fmt, recent=recent)))


@router.get("/audit", summary="Audit entries of a namespace, in log order (admin)")
async def audit(
    namespace: NamespaceQ, mem: ActorMemoryDep, limit: Annotated[int | None, Query(ge=1, le=10_000)] = None
) -> Response:
    return _json({"entries": await mem.audit_entries(namespace=namespace, limit=limit)})


@router.get("/audit/verify", summary="Recompute the audit log's hash chain (admin on the namespace named)")
async def audit_verify(namespace: NamespaceQ, mem: ActorMemoryDep) -> Response:
    return _json(_plain(await mem.verify_audit(namespace=namespace)))


@router.get("/budget", summary="The budget report of a namespace (read); 400 when the server has no budget")
async def budget(namespace: NamespaceQ, mem: ActorMemoryDep) -> Response:
    return _json(_plain(await mem.retention_report(namespace)))


@router.get("/conflicts", summary="Open conflicts of a namespace, oldest first (read)")
async def conflicts(namespace: NamespaceQ, mem: ActorMemoryDep, include_resolved: bool = False) -> Response:
    found = await mem.conflicts(namespace, include_resolved=include_resolved)
    return _json({"conflicts": [conflict_dict(c) for c in found]})


@router.post(
    "/conflicts/{id}/resolve",
    summary="Close an open conflict keeping new, old or both (write; audited); 404 when absent",
)
async def resolve_conflict(id: Id, body: ResolveBody, mem: ActorMemoryDep) -> Response:
    closed = await mem.resolve_conflict(id, namespace=body.namespace, keep=body.keep, reason=body.reason)
    return _json(conflict_dict(closed))
