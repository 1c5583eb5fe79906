"""The data of the namespace, records and record pages: plain dicts for the templates, read through
the :class:`~retain.Memory` and :class:`~retain.store.Store` APIs. Content is redacted
(:func:`~retain.safety.redaction.redact_record`) unless the caller may reveal and asked to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, Tier, parse_tier, parse_type
from retain.safety.conflicts import Conflict
from retain.safety.redaction import redact_record
from retain.store import QueryAudit, RecordFilter
from retain.text.lexical import index_terms
from retain.ui import charts
from retain.ui.auth import Principal
from retain.ui.context import Dashboard, parse_time, short_time

__all__ = [
    "PAGE_SIZE",
    "conflict_rows",
    "namespace_rows",
    "open_conflicts",
    "record_page",
    "record_row",
    "records_page",
]

PAGE_SIZE = 50

SEARCH_COUNT_LIMIT = 1_000
"""Matches of a text search counted at most: past it the page says "more than 1,000" (a common word
in a large namespace would otherwise cost one index look-up per match on every page)."""
"""Rows per page of the records table."""

_SERIES_KEYS = {"add": "importance", "feedback": "importance_after", "importance": "after", "evict": "utility"}


def record_row(rec: MemoryRecord, *, reveal: bool) -> dict[str, Any]:
    """One record as a table row; ``text`` redacted unless ``reveal``; ``redacted`` lists the kinds withheld."""
    kinds: tuple[str, ...] = ()
    if reveal:
        text = rec.content
    else:
        redaction = redact_record(rec)
        text, kinds = redaction.record.content, redaction.kinds
    return {
        "id": rec.id,
        "text": text,
        "redacted": kinds,
        "type": rec.type.value,
        "tier": rec.tier.value,
        "pinned": rec.pinned,
        "superseded_by": rec.superseded_by,
        "supersedes": rec.supersedes,
        "created": short_time(rec.created_at),
        "event_time": short_time(rec.event_time),
        "importance": round(rec.importance, 3),
        "access_count": rec.access_count,
        "source": rec.source or "",
        "segment": rec.segment or "",
        "seq": "" if rec.seq is None else rec.seq,
    }


def namespace_rows(dash: Dashboard, principal: Principal) -> list[dict[str, Any]]:
    """One row per namespace the caller may read: counts by tier and type, hot / capacity, open
    conflicts (when the memory reports them), last activity."""
    rows = []
    for ns in dash.namespaces(principal):
        stats = dash.memo(("stats", ns), partial(dash.store.stats, ns))
        by_tier = {t.value: 0 for t in Tier}
        by_type: dict[str, int] = {}
        for (tier, type_), n in stats.current.items():
            by_tier[tier] = by_tier.get(tier, 0) + n
            by_type[type_] = by_type.get(type_, 0) + n
        newest = dash.store.query_audit(QueryAudit(namespace=ns, limit=1))
        hot = by_tier["core"] + by_tier["dynamic"]
        capacity = dash.capacity(ns)
        rows.append(
            {
                "name": ns,
                "tiers": by_tier,
                "types": sorted(by_type.items(), key=lambda kv: -kv[1]),
                "superseded": stats.superseded,
                "pinned": stats.pinned,
                "hot": hot,
                "capacity": capacity,
                "use": None if not capacity else round(100 * hot / capacity),
                "conflicts": len(open_conflicts(dash, ns)),
                "last_activity": short_time(newest[0]["ts"]) if newest else "",
            }
        )
    return rows


def open_conflicts(dash: Dashboard, namespace: str) -> list[Conflict]:
    """The namespace's open conflicts (``Memory.conflicts``), oldest first; kept until the audit log's
    head moves (opening or resolving a conflict is audited)."""
    return dash.memo(("conflicts", namespace), lambda: list(dash.memory.conflicts(namespace)))


def conflict_rows(conflicts: Sequence[Conflict], *, reveal: bool) -> list[dict[str, Any]]:
    """Conflicts for the conflicts sections: id (what resolving takes), the clarifying question and
    both records as table rows (redacted unless ``reveal``), the actor of the newer record, the rule
    that opened it and the conflict model's probability (0..1, higher = more likely the newer record
    replaces the older), opened at (UTC)."""
    rows = []
    for c in conflicts:
        new, old = record_row(c.new, reveal=reveal), record_row(c.old, reveal=reveal)
        rows.append(
            {
                "id": c.id,
                "question": f'Which holds now: "{old["text"]}" or "{new["text"]}" (from {c.actor})?',
                "new": new,
                "old": old,
                "actor": c.actor,
                "reason": c.reason,
                "probability": None if c.probability is None else round(c.probability, 3),
                "opened": short_time(c.created_at),
            }
        )
    return rows


def records_filter(args: Mapping[str, str]) -> tuple[RecordFilter, bool | None, tuple[str, ...]]:
    """The filter, pinned choice and search terms of the records page's form.

    Raises:
        InvalidInput: an unknown type or tier, a bad time, or start >= end.
    """
    types = (parse_type(args["type"]),) if args.get("type") else None
    tiers = (parse_tier(args["tier"]),) if args.get("tier") else None
    start, end = parse_time(args.get("start"), "start"), parse_time(args.get("end"), "end")
    if start is not None and end is not None and start >= end:
        raise InvalidInput("start: must be before end")
    pinned = {"yes": True, "no": False}.get(args.get("pinned", ""))
    flt = RecordFilter(
        types=types, tiers=tiers, start=start, end=end, include_superseded=args.get("superseded") == "yes"
    )
    return flt, pinned, tuple(index_terms(args.get("q", "")))


def records_page(dash: Dashboard, namespace: str, args: Mapping[str, str], *, reveal: bool) -> dict[str, Any]:
    """One page of the records table for the form values ``args`` (q, type, tier, pinned, start, end,
    superseded, after).

    Raises:
        InvalidInput: a bad form value (named) or an ``after`` cursor that names no record.
    """
    flt, pinned, terms = records_filter(args)
    if args.get("q", "").strip() and not terms:
        return {"rows": [], "total": 0, "exact": True, "next_after": None, "conflicts": []}
    page = dash.store.page_ids(
        namespace,
        flt,
        pinned=pinned,
        terms=terms,
        after=args.get("after") or None,
        limit=PAGE_SIZE,
        count_limit=SEARCH_COUNT_LIMIT if terms else None,
    )
    records = dash.store.get(namespace, page.ids)
    rows = [record_row(r, reveal=reveal) for r in records]
    return {
        "rows": rows,
        "total": page.total,
        "exact": page.exact,
        "next_after": page.ids[-1] if len(page.ids) == PAGE_SIZE else None,
        "conflicts": conflict_rows(open_conflicts(dash, namespace), reveal=reveal),
    }


def record_page(dash: Dashboard, namespace: str, record_id: str, *, reveal: bool) -> dict[str, Any]:
    """Everything the record page shows about ``record_id``: versions, supersede chain, edges,
    importance over time, retrievals, feedback and every audit entry about any of its versions.

    Raises:
        RecordNotFound: no such record in ``namespace``.
    """
    rec = dash.memory.get(record_id, namespace=namespace)
    versions = dash.memory.history(record_id, namespace=namespace)
    version_ids = [v.id for v in versions] or [rec.id]
    entries: list[dict[str, Any]] = []
    for vid in version_ids:
        entries.extend(dash.store.query_audit(QueryAudit(namespace=namespace, record_id=vid, limit=500)))
    entries.sort(key=lambda e: e["seq"])
    series = [
        float(e["details"][_SERIES_KEYS[e["op"]]])
        for e in entries
        if e["op"] in _SERIES_KEYS and isinstance(e["details"].get(_SERIES_KEYS[e["op"]]), int | float)
    ]
    retrievals = [
        {"provenance_id": e["details"].get("provenance_id", ""), "ts": short_time(e["ts"]), "score": score}
        for e in dash.store.query_audit(QueryAudit(namespace=namespace, ops=("retrieve",), limit=300))
        for rid, score in e["details"].get("included", [])
        if rid in version_ids
    ]
    edges = dash.memory.edges(rec.id, namespace=namespace)
    return {
        "record": record_row(rec, reveal=reveal),
        "versions": [record_row(v, reveal=reveal) for v in versions],
        "neighbours": [
            {
                "type": e.type.value,
                "direction": "out" if e.src == rec.id else "in",
                "id": e.dst if e.src == rec.id else e.src,
            }
            for e in edges
        ],
        "entries": [audit_row(e) for e in reversed(entries)],
        "feedback": [audit_row(e) for e in entries if e["op"] == "feedback"],
        "retrievals": retrievals,
        "chart": charts.line(
            [("importance / utility", series)], ("first entry", "newest"), "importance and utility over time"
        ),
        "conflicts": conflict_rows(
            [c for c in open_conflicts(dash, namespace) if rec.id in (c.new.id, c.old.id)], reveal=reveal
        ),
        "current": rec.superseded_by is None,
    }


def audit_row(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An audit entry for a table: time as text, details as compact ``key=value`` pairs."""
    details = entry.get("details") or {}
    return {
        "seq": entry["seq"],
        "ts": short_time(entry["ts"]),
        "namespace": entry.get("namespace") or "",
        "op": entry["op"],
        "record_id": entry.get("record_id") or "",
        "actor": entry["actor"],
        "reason": entry.get("reason") or "",
        "policy": entry.get("policy") or "",
        "details": ", ".join(f"{k}={v}" for k, v in sorted(details.items()))[:300],
    }


TYPE_NAMES = [t.value for t in MemoryType]
TIER_NAMES = [t.value for t in Tier]
