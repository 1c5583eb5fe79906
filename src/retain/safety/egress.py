"""Data leaving the store: the JSON export and the case handoff, redacted by default and audited.

:func:`export` writes a namespace as JSON (redacted copies unless a trusted actor asks for the raw
records); :func:`handoff` builds a redacted case summary (:func:`retain.safety.handoff.build_handoff`).
Each call appends one audit entry (:func:`audit_egress`: who, how many records, raw or redacted;
never content). ``Memory.export`` and ``Memory.handoff`` delegate here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from retain.errors import Forbidden
from retain.ingest.draft import check_actor_name
from retain.record import utcnow, validate_namespace
from retain.retrieval.search import check_allow_raw
from retain.safety.handoff import Handoff, HandoffFormat, build_handoff
from retain.safety.integrity import is_trusted
from retain.safety.redaction import redact_record
from retain.sequence.segments import is_index_summary
from retain.store import AppendAudit, AuditEntry, RecordFilter, Store

if TYPE_CHECKING:
    from retain.core import Core

__all__ = ["audit_egress", "export", "handoff"]


def export(core: Core, namespace: str, flt: RecordFilter, *, allow_raw: bool, actor: str) -> str:
    """The records of ``namespace`` that ``flt`` keeps as JSON (UTF-8 characters kept literal, not
    escaped), without embeddings. ``Memory.export`` passes every tier or the hot ones, with or
    without superseded versions.

    Shape: ``{"namespace", "encoder", "exported_at", "redacted", "records": [record dicts]}``.
    By default (``allow_raw=False``) each record is a redacted copy
    (:func:`retain.safety.redaction.redact_record`: placeholders such as ``"[API_KEY]"`` in content
    and metadata, ``metadata["redacted"]`` = kinds withheld, ``content_hash`` of the redacted
    text) and ``"redacted"`` is true; ``allow_raw=True`` exports what is stored and is allowed
    only to an actor in ``config.trusted_actors``. Every export is audited ("export": actor,
    record count, redacted or raw; never content).

    Raises:
        InvalidInput: bad namespace; ``allow_raw`` not a bool; bad actor.
        Forbidden: ``allow_raw=True`` from an untrusted actor (the refusal is audited).
    """
    validate_namespace(namespace)
    check_allow_raw(allow_raw)
    check_actor_name(actor)
    trusted = core.config.trusted_actors
    if allow_raw and not is_trusted(actor, trusted):
        audit_egress(core.store, namespace, "export", actor, "refused", raw=True)
        raise Forbidden(
            f"export: actor {actor!r} is not trusted and may not export unredacted records; "
            f"trusted actors: {sorted(trusted)}. The refusal is audited."
        )
    records = core.store.list_records(namespace, flt)
    audit_egress(core.store, namespace, "export", actor, "done", raw=allow_raw, records=len(records))
    if not allow_raw:
        records = [redact_record(r).record for r in records]
    doc = {
        "namespace": namespace,
        "encoder": core.encoder.name,
        "exported_at": utcnow().isoformat(),
        "redacted": not allow_raw,
        "records": [r.to_dict() for r in records],
    }
    return json.dumps(doc, ensure_ascii=False, indent=2)


def handoff(
    store: Store, namespace: str, *, fmt: HandoffFormat = "markdown", recent: int | None = 10, actor: str = "user"
) -> Handoff:
    """A redacted case summary of ``namespace`` for another agent or a person
    (:func:`retain.safety.handoff.build_handoff`): hard constraints, preferences, goals, plan steps,
    facts and the ``recent`` latest observations and results, by type in event order,
    superseded records and index summaries excluded, with a "Withheld" list (record id, kinds, reason). Audited
    ("handoff": actor, format, records included and withheld; never content).

    Raises:
        InvalidInput: bad namespace, ``fmt`` not "markdown" or "json", bad ``recent``, bad actor.
    """
    validate_namespace(namespace)
    check_actor_name(actor)
    records = store.list_records(namespace, RecordFilter(tiers=None))
    records = [r for r in records if not is_index_summary(r)]  # index entries repeat their turns
    result = build_handoff(records, namespace=namespace, fmt=fmt, recent=recent)
    audit_egress(
        store,
        namespace,
        "handoff",
        actor,
        "done",
        raw=False,
        format=fmt,
        records=len(records),
        withheld=len(result.withheld),
    )
    return result


def audit_egress(store: Store, namespace: str, op: str, actor: str, outcome: str, *, raw: bool, **details: Any) -> None:
    """Append one audit entry for data leaving the store (export, handoff): who, raw or redacted."""
    reason = "raw export requested" if raw else "redacted copy"
    entry = AuditEntry(namespace, op, None, actor, reason, details={"outcome": outcome, "raw": raw, **details})
    store.batch([AppendAudit(entry)])
