"""The data of the budget, provenance, timeline, audit and diff pages, read from the audit log and
the store through the :class:`~retain.store.Store` API (bounded queries: the newest entries, counts
per time bucket), never the whole log."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from retain.errors import InvalidInput
from retain.record import MemoryType
from retain.sequence.segments import is_summary
from retain.store import QueryAudit, RecordFilter
from retain.ui import charts, evaluation
from retain.ui.context import Dashboard, parse_time, short_time
from retain.ui.views import audit_row, record_row

__all__ = ["AUDIT_PAGE", "DIFF_LIMIT", "audit_page", "budget_page", "diff_page", "provenance_page", "timeline_page"]

AUDIT_PAGE = 100
"""Audit entries per page."""
DIFF_LIMIT = 1000
"""Most audit entries a diff reads (the newest of the range; the page says when there are more)."""
DIFF_ROWS = 100
"""Most entries a diff lists per group (the newest; each group's heading gives its count)."""
_RECENT = 500
_BUCKETS = 48
_IN = {"add": 1, "restore": 1}
_OUT = {"evict": -1, "archive": -1, "delete": -1, "forget": -1, "compress": -1}
_DIFF_GROUPS = {
    "add": "added",
    "supersede": "superseded",
    "update": "superseded",
    "evict": "archived",
    "archive": "archived",
    "compress": "archived",
    "restore": "restored",
    "delete": "deleted",
    "delete_all": "deleted",
    "forget": "deleted",
    "pin": "pinned / unpinned",
    "unpin": "pinned / unpinned",
}


def _span(dash: Dashboard, namespace: str) -> tuple[datetime, datetime] | None:
    oldest = dash.store.audit_log(namespace, limit=1)
    newest = dash.store.query_audit(QueryAudit(namespace=namespace, limit=1))
    if not oldest or not newest:
        return None
    first, last = (datetime.fromtimestamp(int(e["ts"]) / 1e6, tz=UTC) for e in (oldest[0], newest[0]))
    return first, last


def hot_curve(dash: Dashboard, namespace: str, hot_now: int) -> tuple[list[float], tuple[str, str]]:
    """Hot records at the end of each of about :data:`_BUCKETS` time buckets, reconstructed backwards
    from the count now: each bucket's adds and restores raised it, evictions, archives, compressions,
    forgets and deletions lowered it (one each; a forget of several versions counts once)."""
    span = _span(dash, namespace)
    if span is None:
        return [float(hot_now)], ("", "now")
    seconds = max(1, int((span[1] - span[0]).total_seconds() / _BUCKETS) + 1)
    rows = dash.memo(
        ("histogram", namespace, seconds),
        lambda: dash.store.audit_histogram(namespace, [*_IN, *_OUT], bucket_seconds=seconds),
    )
    change: dict[datetime, int] = {}
    for start, op, n in rows:
        change[start] = change.get(start, 0) + n * (_IN.get(op, 0) + _OUT.get(op, 0))
    buckets = sorted(change)
    level, curve = float(hot_now), []
    for start in reversed(buckets):
        curve.append(level)
        level -= change[start]
    curve.reverse()
    return curve, (short_time(buckets[0]) if buckets else "", short_time(span[1]))


def budget_page(dash: Dashboard, namespace: str) -> dict[str, Any]:
    """Hot count against capacity over time, recent evictions with their scores and policy, the
    utility of what was evicted, every hard constraint's tier, and what the archive holds."""
    stats = dash.memo(("stats", namespace), lambda: dash.store.stats(namespace))
    hot = sum(n for (tier, _), n in stats.current.items() if tier in ("core", "dynamic"))
    capacity = dash.capacity(namespace)
    curve, span = hot_curve(dash, namespace, hot)
    evictions = dash.store.query_audit(QueryAudit(namespace=namespace, ops=("evict",), limit=_RECENT))
    per_policy: dict[str, int] = {}
    for e in evictions:
        per_policy[e.get("policy") or "?"] = per_policy.get(e.get("policy") or "?", 0) + 1
    utilities = [
        float(e["details"]["utility"]) for e in evictions if isinstance(e["details"].get("utility"), int | float)
    ]
    hard = RecordFilter(types=(MemoryType.HARD_CONSTRAINT,), tiers=None, include_superseded=True)
    constraints = dash.store.get(namespace, dash.store.page_ids(namespace, hard, limit=200).ids)
    archive = sorted(((t, n) for (tier, t), n in stats.current.items() if tier == "archive"), key=lambda kv: -kv[1])
    return {
        "hot": hot,
        "capacity": capacity,
        "hot_chart": charts.line(
            [("hot records", curve)], span, "hot records over time against capacity", ceiling=capacity
        ),
        "evictions": [audit_row(e) | {"utility": e["details"].get("utility")} for e in evictions[:50]],
        "per_policy": sorted(per_policy.items()),
        "policy_chart": charts.bars(sorted(per_policy.items()), f"evictions per policy (last {_RECENT})"),
        "utility_chart": charts.histogram(utilities, f"utility of the last {len(utilities)} evicted records"),
        "constraints": [
            {
                "id": r.id,
                "tier": r.tier.value,
                "status": "superseded"
                if r.superseded_by
                else ("archived: not in the prompt" if r.tier.value == "archive" else "held"),
            }
            for r in constraints
        ],
        "archive": archive,
        "archive_total": sum(n for _, n in archive),
        "evaluation": evaluation.curves(dash.eval_json),
    }


def provenance_page(dash: Dashboard, provenance_id: str, *, reveal: bool) -> dict[str, Any]:
    """What went into the context ``provenance_id`` (scores, sources), what was left out and why, the
    agent state, and the graph from the decision back to the records and their sources.

    Raises:
        RecordNotFound: no such provenance.
    """
    prov = dash.memory.explain(provenance_id)
    found = {r.id: r for r in dash.store.get(prov.namespace, [i.record_id for i in prov.items])}
    items = []
    for item in prov.items:
        rec = found.get(item.record_id)
        row = record_row(rec, reveal=reveal) if rec is not None else {"text": "(deleted)"}
        items.append({"item": item, "text": row["text"]})
    sources = sorted({i.source or "(no source)" for i in prov.items})
    columns = [
        [("ctx", f"context {prov.id}", "decision")],
        [(i.record_id, f"{i.why}: {i.record_id}", "in") for i in prov.items]
        + [(x.record_id, f"left out ({x.reason}): {x.record_id}", "out") for x in prov.left_out[:20]],
        [(f"src:{s}", s, "source") for s in sources],
    ]
    links = [("ctx", i.record_id) for i in prov.items] + [("ctx", x.record_id) for x in prov.left_out[:20]]
    links += [(i.record_id, f"src:{i.source or '(no source)'}") for i in prov.items]
    return {
        "prov": prov,
        "items": items,
        "graph": charts.graph(columns, links, "from the context back to its records and their sources"),
    }


def timeline_page(dash: Dashboard, namespace: str, args: Mapping[str, str], *, reveal: bool) -> dict[str, Any]:
    """Up to 200 records in event order within the form's [start, end), grouped by segment, with the
    segment summaries among them marked.

    Raises:
        InvalidInput: a bad time, or start >= end.
    """
    start, end = parse_time(args.get("start"), "start"), parse_time(args.get("end"), "end")
    if start is not None and end is not None and start >= end:
        raise InvalidInput("start: must be before end")
    flt = RecordFilter(tiers=None, start=start, end=end)
    ids = dash.store.list_ids(namespace, flt, order="event", limit=200)
    rows = []
    for rec in dash.store.get(namespace, ids):
        rows.append(record_row(rec, reveal=reveal) | {"summary": is_summary(rec)})
    return {"rows": rows}


def audit_page(dash: Dashboard, namespace: str, args: Mapping[str, str]) -> dict[str, Any]:
    """A page of the namespace's audit trail, newest first, filtered by actor, operation and time;
    ``before`` (a seq) pages back.

    Raises:
        InvalidInput: a bad time or sequence number.
    """
    before = _seq(args.get("before"), "before")
    query = QueryAudit(
        namespace=namespace,
        ops=(args["op"],) if args.get("op") else None,
        actor=args.get("actor") or None,
        start=parse_time(args.get("start"), "start"),
        end=parse_time(args.get("end"), "end"),
        before_seq=before,
        limit=AUDIT_PAGE,
    )
    entries = dash.store.query_audit(query)
    return {
        "entries": [audit_row(e) for e in entries],
        "next_before": entries[-1]["seq"] if len(entries) == AUDIT_PAGE else None,
    }


def _seq(value: str | None, field: str) -> int | None:
    if value is None or not value.strip():
        return None
    if not value.strip().isdigit():
        raise InvalidInput(f"{field}: a sequence number is a whole number >= 0, got {value!r}")
    return int(value)


def diff_page(dash: Dashboard, namespace: str, args: Mapping[str, str]) -> dict[str, Any]:
    """What changed in ``namespace`` between two snapshots, a snapshot being an audit sequence number
    (the log's head at that moment): the records added, superseded, archived, restored, deleted,
    pinned or unpinned by the entries after ``a`` up to and including ``b``.

    Raises:
        InvalidInput: a bad sequence number, or a > b.
    """
    head = dash.head_seq() or 0
    a, b = _seq(args.get("a"), "a"), _seq(args.get("b"), "b")
    if a is None or b is None:
        return {"head": head, "groups": None}
    if a > b:
        raise InvalidInput("a: the first snapshot must not be after the second")
    entries = dash.store.query_audit(QueryAudit(namespace=namespace, after_seq=a, before_seq=b + 1, limit=DIFF_LIMIT))
    groups: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    for e in entries:
        group = _DIFF_GROUPS.get(e["op"], "other")
        counts[group] = counts.get(group, 0) + 1
        if counts[group] <= DIFF_ROWS:
            groups.setdefault(group, []).append(audit_row(e))
    return {"head": head, "groups": groups, "counts": counts, "a": a, "b": b, "truncated": len(entries) == DIFF_LIMIT}
