"""Request bodies of the /v1 endpoints (pydantic models; unknown fields are refused with 400).

Field names and meanings are those of the ``Memory`` method each endpoint calls; values are
checked again by ``Memory`` (a bad value is a 400 naming the field). Times are ISO 8601 strings
with an offset; ``state`` is the agent state as a JSON object (``phase``, ``subgoals``,
``constraints``, ``open_questions``, ``last_result``, ...).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ERROR_RESPONSES",
    "MAX_BATCH",
    "AddBody",
    "BatchBody",
    "ContextBody",
    "ErrorBody",
    "FeedbackBody",
    "ForgetBody",
    "MemoryItem",
    "ResolveBody",
    "SearchBody",
    "UpdateBody",
]

MAX_BATCH = 1000
"""Most items one batch add takes."""

Namespace = Field(min_length=1, max_length=256, description="The namespace (tenant/...) the call reads or writes.")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryItem(_Body):
    """One memory to add (the fields of ``Memory.add`` but the namespace)."""

    content: str = Field(description="The text (characters; long texts are split at sentence ends).")
    type: str | None = Field(
        default=None, description="hard_constraint, soft_preference, fact, ...; inferred if absent."
    )
    role: str = "user"
    source: str | None = None
    event_time: str | None = Field(default=None, description="ISO 8601 with an offset.")
    seq: int | None = None
    segment: str | None = None
    priority: int = 0
    importance: float | None = Field(default=None, description="0..1; default the utility model's prediction.")
    pinned: bool = False
    confidence: float = 1.0
    metadata: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    derived_from: list[str] | None = None


class AddBody(MemoryItem):
    """``POST /v1/memories``: one memory."""

    namespace: str = Namespace


class BatchBody(_Body):
    """``POST /v1/memories/batch``: several memories, one transaction (one bad item stores none)."""

    namespace: str = Namespace
    items: list[MemoryItem] = Field(min_length=1, max_length=MAX_BATCH)


class UpdateBody(_Body):
    """``PUT /v1/memories/{id}``: a new version; fields left out are copied from the old one."""

    namespace: str = Namespace
    content: str
    reason: str = ""
    type: str | None = None
    role: str | None = None
    importance: float | None = None
    priority: int | None = None
    pinned: bool | None = None
    confidence: float | None = None
    metadata: dict[str, Any] | None = None
    event_time: str | None = None

    def fields(self) -> dict[str, Any]:
        """The overridden fields (those given), for ``Memory.update(**fields)``."""
        skip = {"namespace", "content", "reason"}
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in skip and v is not None}


class SearchBody(_Body):
    """``POST /v1/search``: every option of ``Memory.search``."""

    namespace: str = Namespace
    query: str = Field(description="Free text, at most 10,000 characters.")
    k: int = Field(default=10, ge=1, le=1000)
    preset: str = Field(default="default", description="default, rrf, lexical, dense, diverse.")
    types: list[str] | None = None
    tiers: list[str] | None = Field(default=None, description="core, dynamic, archive; default the hot tiers.")
    start: str | None = None
    end: str | None = None
    include_superseded: bool = False
    where: dict[str, Any] | None = Field(
        default=None, description='Metadata conditions: {"n": {"$gte": 3}}; $eq $ne $gt $gte $lt $lte $in.'
    )
    threshold: float | None = None
    mmr_lambda: float | None = None
    state: dict[str, Any] | None = Field(default=None, description="The agent state: state-adaptive ranking.")
    allow_raw: bool = Field(default=False, description="Content as stored (needs admin); default redacted.")
    time_aware: bool = True
    now: str | None = None
    expand: int = Field(default=0, ge=0, le=100)
    window: int = Field(default=0, ge=0, le=100)
    order: str = Field(default="rank", description="rank, time or auto.")

    def options(self) -> dict[str, Any]:
        """The keyword arguments of ``Memory.search`` but ``query`` and ``namespace``."""
        out = self.model_dump(exclude={"namespace", "query", "preset"})
        out["config"] = self.preset
        return out


class ContextBody(_Body):
    """``POST /v1/context``: pack a prompt context within a token budget."""

    namespace: str = Namespace
    query: str
    budget_tokens: int = Field(ge=1, le=1_000_000, description="Encoder tokenizer tokens.")
    state: dict[str, Any] | None = None
    k: int = Field(default=20, ge=1, le=1000)
    threshold: float | None = None
    working: int = Field(default=5, ge=0, le=1000)


class ForgetBody(_Body):
    """``POST /v1/forget``: forget a record by id, or the ``k`` best hits of a query."""

    namespace: str = Namespace
    query_or_id: str
    reason: str = ""
    k: int = Field(default=1, ge=1, le=100)


class FeedbackBody(_Body):
    """``POST /v1/memories/{id}/feedback``: whether a retrieved memory was used."""

    namespace: str = Namespace
    used: bool


class ResolveBody(_Body):
    """``POST /v1/conflicts/{id}/resolve``: close an open conflict (``<new id>:<old id>``)."""

    namespace: str = Namespace
    keep: Literal["new", "old", "both"] = Field(
        description="new: the newer record supersedes the older; old: the older stays current truth; both: no "
        "contradiction after all."
    )
    reason: str = Field(default="", max_length=2000, description="Why (kept in the audit log, redacted).")


class ErrorDetail(BaseModel):
    """The error: retain's error class name and its message."""

    type: str = Field(description="InvalidInput, Unauthorized, Forbidden, RecordNotFound, WriteConflict, ...")
    message: str


class ErrorBody(BaseModel):
    """Every error response: ``{"error": {"type": ..., "message": ...}}``."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "InvalidInput: a bad field or malformed JSON (named)"},
    401: {"model": ErrorBody, "description": "Unauthorized: no API key, or an unknown or revoked one"},
    403: {"model": ErrorBody, "description": "Forbidden: the key's role on the namespace is too low"},
    404: {"model": ErrorBody, "description": "RecordNotFound"},
    409: {"model": ErrorBody, "description": "WriteConflict or BudgetInfeasible"},
    413: {"model": ErrorBody, "description": "PayloadTooLarge: the body is over the size limit"},
}
"""The error statuses every /v1 endpoint may answer, as OpenAPI responses."""
