"""``ActorMemory``: a :class:`~retain.memory.Memory` seen by one :class:`~retain.safety.access.Principal`.

``Memory.as_actor(principal)`` returns one. Each method checks the principal's role on the
namespace it names (:mod:`retain.safety.access` has the rules), refuses with
:class:`~retain.errors.Forbidden` before reading or writing anything (the refusal is audited), and
otherwise calls the same ``Memory`` method with ``actor=principal.actor``, so the principal is the
actor of every audit entry its calls make. Options not spelled out here are passed through to the
``Memory`` method of the same name and validated there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from retain.ingest.draft import NewMemory
from retain.record import MemoryRecord, validate_namespace
from retain.retrieval.fusion import Hit
from retain.safety.access import Principal, Role, refuse
from retain.safety.audit import VerifyReport
from retain.safety.conflicts import Conflict
from retain.safety.context import Context, Provenance
from retain.safety.handoff import Handoff
from retain.safety.integrity import ForgetReport, RetentionReport
from retain.store import Edge

__all__ = ["ActorMemory"]

READ, WRITE, ADMIN = Role.READ, Role.WRITE, Role.ADMIN


class ActorMemory:
    """The operations of a ``Memory`` on behalf of ``principal``, each checked against its rights.

    Not built directly: use ``Memory.as_actor(principal)``. Records are returned as the ``Memory``
    returns them (their ``namespace`` is the full stored name, ``tenant/...`` for a tenant).

    Every method raises :class:`~retain.errors.Forbidden` when the principal's role on the
    namespace is lower than the one it needs (read, write or admin; see
    :mod:`retain.safety.access`), or the namespace lies outside its tenant; nothing is read or
    written and the refusal is audited with the principal as actor. Other errors are those of the
    ``Memory`` method of the same name.
    """

    def __init__(self, memory: Any, principal: Principal) -> None:
        self._memory = memory  # a retain.memory.Memory (not imported: the facade imports this module)
        self.principal = principal

    def _check(self, namespace: str, op: str, needed: Role) -> str:
        validate_namespace(namespace)
        if not self.principal.can(namespace, needed):
            raise refuse(self._memory.store, self.principal, namespace, op, needed)
        return namespace

    @property
    def actor(self) -> str:
        """The principal's actor name, the actor of every audit entry this view writes."""
        return self.principal.actor

    def namespaces(self) -> list[str]:
        """The namespaces holding records that the principal may read, sorted."""
        return self.principal.visible(self._memory.store.namespaces())

    # --- writes ---------------------------------------------------------------------------

    def add(self, content: str, *, namespace: str, **options: Any) -> str:
        """``Memory.add`` (needs write); returns the new record's id."""
        record_id: str = self._memory.add(
            content, namespace=self._check(namespace, "add", WRITE), actor=self.actor, **options
        )
        return record_id

    def add_many(self, items: Iterable[NewMemory | Mapping[str, Any]], *, namespace: str) -> list[str]:
        """``Memory.add_many`` (needs write): one transaction, one id per item."""
        ids: list[str] = self._memory.add_many(items, namespace=self._check(namespace, "add", WRITE), actor=self.actor)
        return ids

    def update(self, id: str, content: str, *, namespace: str, reason: str = "", **fields: Any) -> str:
        """``Memory.update`` (needs write); returns the id of the new version."""
        ns = self._check(namespace, "update", WRITE)
        new_id: str = self._memory.update(id, content, namespace=ns, actor=self.actor, reason=reason, **fields)
        return new_id

    def delete(self, id: str, *, namespace: str, reason: str = "") -> int:
        """``Memory.delete`` (needs write); returns the number of records purged."""
        ns = self._check(namespace, "delete", WRITE)
        purged: int = self._memory.delete(id, namespace=ns, actor=self.actor, reason=reason)
        return purged

    def delete_all(self, *, namespace: str, reason: str = "") -> int:
        """``Memory.delete_all`` (needs admin); returns the number of records purged."""
        ns = self._check(namespace, "delete_all", ADMIN)
        purged: int = self._memory.delete_all(namespace=ns, actor=self.actor, reason=reason)
        return purged

    def forget(self, query_or_id: str, *, namespace: str, reason: str = "", k: int = 1) -> ForgetReport:
        """``Memory.forget`` (needs write)."""
        ns = self._check(namespace, "forget", WRITE)
        report: ForgetReport = self._memory.forget(query_or_id, namespace=ns, actor=self.actor, reason=reason, k=k)
        return report

    def feedback(self, id: str, *, namespace: str, used: bool) -> MemoryRecord:
        """``Memory.feedback`` (needs write)."""
        ns = self._check(namespace, "feedback", WRITE)
        record: MemoryRecord = self._memory.feedback(id, namespace=ns, used=used, actor=self.actor)
        return record

    def pin(self, id: str, *, namespace: str, reason: str = "") -> MemoryRecord:
        """``Memory.pin`` (needs write; the trust rules of protected records still apply)."""
        ns = self._check(namespace, "pin", WRITE)
        record: MemoryRecord = self._memory.pin(id, namespace=ns, actor=self.actor, reason=reason)
        return record

    def unpin(self, id: str, *, namespace: str, reason: str = "") -> MemoryRecord:
        """``Memory.unpin`` (needs write; the trust rules of protected records still apply)."""
        ns = self._check(namespace, "unpin", WRITE)
        record: MemoryRecord = self._memory.unpin(id, namespace=ns, actor=self.actor, reason=reason)
        return record

    def resolve_conflict(self, conflict_id: str, *, namespace: str, keep: str, reason: str = "") -> Conflict:
        """``Memory.resolve_conflict`` (needs write; retiring a protected record still needs a trusted
        actor): close an open conflict keeping ``"new"``, ``"old"`` or ``"both"``."""
        ns = self._check(namespace, "resolve_conflict", WRITE)
        closed: Conflict = self._memory.resolve_conflict(
            conflict_id, namespace=ns, keep=keep, actor=self.actor, reason=reason
        )
        return closed

    # --- reads ----------------------------------------------------------------------------

    def get(self, id: str, *, namespace: str) -> MemoryRecord:
        """``Memory.get`` (needs read)."""
        record: MemoryRecord = self._memory.get(id, namespace=self._check(namespace, "get", READ))
        return record

    def history(self, id: str, *, namespace: str) -> list[MemoryRecord]:
        """``Memory.history`` (needs read)."""
        records: list[MemoryRecord] = self._memory.history(id, namespace=self._check(namespace, "history", READ))
        return records

    def conflicts(self, namespace: str, *, include_resolved: bool = False) -> list[Conflict]:
        """``Memory.conflicts`` (needs read): the open conflicts of ``namespace``, oldest first."""
        found: list[Conflict] = self._memory.conflicts(
            self._check(namespace, "conflicts", READ), include_resolved=include_resolved
        )
        return found

    def records(self, *, namespace: str, **options: Any) -> list[MemoryRecord]:
        """``Memory.records`` (needs read)."""
        records: list[MemoryRecord] = self._memory.records(namespace=self._check(namespace, "records", READ), **options)
        return records

    def timeline(self, namespace: str, query: str | None = None, **options: Any) -> list[MemoryRecord]:
        """``Memory.timeline`` (needs read)."""
        records: list[MemoryRecord] = self._memory.timeline(self._check(namespace, "timeline", READ), query, **options)
        return records

    def search(self, query: str, *, namespace: str, **options: Any) -> list[Hit]:
        """``Memory.search`` with every option (needs read; ``allow_raw=True`` needs admin)."""
        needed = ADMIN if options.get("allow_raw") is True else READ
        hits: list[Hit] = self._memory.search(query, namespace=self._check(namespace, "search", needed), **options)
        return hits

    def context(self, query: str, *, namespace: str, budget_tokens: int, **options: Any) -> Context:
        """``Memory.context`` (needs read; the provenance it stores names the principal)."""
        ns = self._check(namespace, "retrieve", READ)
        ctx: Context = self._memory.context(
            query, namespace=ns, budget_tokens=budget_tokens, actor=self.actor, **options
        )
        return ctx

    def explain(self, provenance_id: str, *, namespace: str) -> Provenance:
        """``Memory.explain`` of a provenance of ``namespace`` (needs read)."""
        provenance: Provenance = self._memory.explain(provenance_id, namespace=self._check(namespace, "explain", READ))
        return provenance

    def export(self, *, namespace: str, allow_raw: bool = False, **options: Any) -> str:
        """``Memory.export`` (needs read; ``allow_raw=True`` needs admin)."""
        ns = self._check(namespace, "export", ADMIN if allow_raw is True else READ)
        text: str = self._memory.export(namespace=ns, allow_raw=allow_raw, actor=self.actor, **options)
        return text

    def handoff(self, namespace: str, **options: Any) -> Handoff:
        """``Memory.handoff`` (needs read)."""
        handoff: Handoff = self._memory.handoff(self._check(namespace, "handoff", READ), actor=self.actor, **options)
        return handoff

    def retention_report(self, namespace: str, **constraints: Any) -> RetentionReport:
        """``Memory.retention_report``, the budget report (needs read)."""
        report: RetentionReport = self._memory.retention_report(self._check(namespace, "report", READ), **constraints)
        return report

    def audit_entries(self, *, namespace: str, limit: int | None = None) -> list[dict[str, Any]]:
        """``Memory.audit_entries`` of one namespace (needs admin)."""
        entries: list[dict[str, Any]] = self._memory.audit_entries(
            namespace=self._check(namespace, "audit", ADMIN), limit=limit
        )
        return entries

    def verify_audit(self, *, namespace: str, checkpoints: Mapping[int, str] | None = None) -> VerifyReport:
        """``Memory.verify_audit`` (the chain spans the store; needs admin on ``namespace``)."""
        self._check(namespace, "audit_verify", ADMIN)
        report: VerifyReport = self._memory.verify_audit(checkpoints=checkpoints)
        return report

    def before(self, record: MemoryRecord | str, *, namespace: str, n: int = 1) -> list[MemoryRecord]:
        """``Memory.before`` (needs read)."""
        records: list[MemoryRecord] = self._memory.before(
            record, namespace=self._check(namespace, "timeline", READ), n=n
        )
        return records

    def after(self, record: MemoryRecord | str, *, namespace: str, n: int = 1) -> list[MemoryRecord]:
        """``Memory.after`` (needs read)."""
        records: list[MemoryRecord] = self._memory.after(
            record, namespace=self._check(namespace, "timeline", READ), n=n
        )
        return records

    def edges(
        self, id: str, *, namespace: str, types: Sequence[str] | None = None, direction: str = "both"
    ) -> list[Edge]:
        """``Memory.edges`` (needs read)."""
        found: list[Edge] = self._memory.edges(
            id, namespace=self._check(namespace, "edges", READ), types=types, direction=direction
        )
        return found
