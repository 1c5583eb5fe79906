"""Case handoff: a redacted summary of one namespace for another agent or a person.

:func:`build_handoff` reads the current records of a namespace (superseded versions excluded,
archive tier included: archived records are still true, only out of hot memory) and writes them
grouped by type, each group in event order (``event_time``, else the time the record was written;
then ``seq``):

==================================  =====================================================
section                             record types
==================================  =====================================================
Hard constraints                    ``hard_constraint``
Preferences                         ``soft_preference``
Goals                               ``goal``
Plan                                ``plan_step``
Facts                               ``fact``
Recent observations and results     ``observation``, ``action_result`` (the last ``recent``)
==================================  =====================================================

``reasoning`` (the agent's own thinking) and ``chatter`` are left out; the header counts them, so
nothing is dropped silently. When ``recent`` cuts the last section, the section says how many
earlier items it does not show.

Privacy (:mod:`retain.safety.redaction`): every record shown is a redacted copy, secrets and personal
data replaced by typed placeholders (``[EMAIL]``, ``[API_KEY]``, ...). Records typed
``sensitive`` exist to carry a secret (a card, a password, an id number), so they are withheld
entirely, their content not shown at all. The "Withheld" section lists each record concerned: id,
type, the kinds withheld and the reason (``"sensitive: redacted"`` for placeholders in a shown
record, ``"sensitive: withheld (typed sensitive)"`` for a record left out). There is no raw mode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, utcnow, validate_namespace
from retain.safety.redaction import WITHHELD_REASON, redact_record
from retain.text.findings import PLACEHOLDERS

__all__ = [
    "DEFAULT_RECENT",
    "HANDOFF_FORMAT",
    "SECTIONS",
    "TYPED_SENSITIVE_REASON",
    "Handoff",
    "WithheldItem",
    "build_handoff",
]

HANDOFF_FORMAT = "retain-handoff/1"
"""The ``format`` field of the JSON rendering."""

DEFAULT_RECENT = 10
"""How many of the latest observations and action results the last section shows."""

TYPED_SENSITIVE_REASON = "sensitive: withheld (typed sensitive)"
"""The reason given for a record typed ``sensitive``, left out of the handoff entirely."""

SECTIONS: tuple[tuple[str, tuple[MemoryType, ...]], ...] = (
    ("Hard constraints", (MemoryType.HARD_CONSTRAINT,)),
    ("Preferences", (MemoryType.SOFT_PREFERENCE,)),
    ("Goals", (MemoryType.GOAL,)),
    ("Plan", (MemoryType.PLAN_STEP,)),
    ("Facts", (MemoryType.FACT,)),
    ("Recent observations and results", (MemoryType.OBSERVATION, MemoryType.ACTION_RESULT)),
)
"""Section titles and the record types each one holds, in the order they are written."""

_RECENT_SECTION = SECTIONS[-1][0]
_LEFT_OUT = (MemoryType.REASONING, MemoryType.CHATTER)

HandoffFormat = Literal["markdown", "json"]
"""The two renderings of a handoff."""


@dataclass(frozen=True, slots=True)
class WithheldItem:
    """One record whose sensitive content the handoff does not show.

    Attributes:
        record_id: the record's id.
        type: its memory type (``"fact"``, ``"sensitive"``, ...).
        kinds: kinds of data withheld (``("api_key", "email")``); empty when a record typed
            ``sensitive`` holds nothing the detector recognises (it is withheld all the same).
        reason: :data:`retain.safety.redaction.WITHHELD_REASON` or :data:`TYPED_SENSITIVE_REASON`.
    """

    record_id: str
    type: str
    kinds: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"record_id": self.record_id, "type": self.type, "kinds": list(self.kinds), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Handoff:
    """A rendered case summary.

    Attributes:
        namespace: the namespace summarised.
        fmt: ``"markdown"`` or ``"json"``.
        text: the summary in that format (UTF-8 characters literal in JSON).
        withheld: one item per record with something withheld, in event order.
        generated_at: when it was written (UTC).
    """

    namespace: str
    fmt: str
    text: str
    withheld: tuple[WithheldItem, ...]
    generated_at: datetime


def _event_key(record: MemoryRecord) -> tuple[datetime, int, str]:
    when = record.event_time if record.event_time is not None else record.created_at
    return when, -1 if record.seq is None else record.seq, record.id


def _item(record: MemoryRecord, kinds: tuple[str, ...]) -> dict[str, Any]:
    return {
        "id": record.id,
        "type": record.type.value,
        "role": record.role,
        "event_time": None if record.event_time is None else record.event_time.isoformat(),
        "content": record.content,
        "redacted": list(kinds),
    }


def build_handoff(
    records: Sequence[MemoryRecord],
    *,
    namespace: str,
    fmt: HandoffFormat = "markdown",
    recent: int | None = DEFAULT_RECENT,
) -> Handoff:
    """Summarise ``records`` (one namespace) for another agent or a person, redacted.

    Args:
        records: the namespace's records, any order; superseded versions are skipped.
        namespace: the namespace they belong to (named in the summary).
        fmt: ``"markdown"`` (for a person) or ``"json"`` (format :data:`HANDOFF_FORMAT`).
        recent: how many of the latest observations and action results to show (>= 1), None
            for all; the section states how many earlier ones it leaves out.

    Returns:
        A :class:`Handoff`; see the module docstring for sections and what is withheld.

    Raises:
        InvalidInput: bad namespace, unknown ``fmt``, ``recent`` not None or an int >= 1, or a
            record of another namespace.
    """
    validate_namespace(namespace)
    if fmt not in ("markdown", "json"):
        raise InvalidInput(f"fmt: 'markdown' or 'json', got {fmt!r}")
    if recent is not None and (isinstance(recent, bool) or not isinstance(recent, int) or recent < 1):
        raise InvalidInput(f"recent: None or an int >= 1, got {recent!r}")
    stray = [r.id for r in records if r.namespace != namespace]
    if stray:
        raise InvalidInput(f"records: {len(stray)} belong to another namespace than {namespace!r} (first {stray[0]})")
    current = sorted((r for r in records if r.is_current), key=_event_key)
    withheld: list[WithheldItem] = []
    grouped: dict[str, list[dict[str, Any]]] = {title: [] for title, _ in SECTIONS}
    section_of = {t: title for title, types in SECTIONS for t in types}
    left_out = {t.value: 0 for t in _LEFT_OUT}
    for record in current:
        redaction = redact_record(record)
        if record.type is MemoryType.SENSITIVE:
            withheld.append(WithheldItem(record.id, record.type.value, redaction.kinds, TYPED_SENSITIVE_REASON))
            continue
        if record.type in _LEFT_OUT:
            left_out[record.type.value] += 1
            continue
        if redaction.redacted:
            withheld.append(WithheldItem(record.id, record.type.value, redaction.kinds, WITHHELD_REASON))
        grouped[section_of[record.type]].append(_item(redaction.record, redaction.kinds))
    not_shown = {title: 0 for title in grouped}
    if recent is not None and len(grouped[_RECENT_SECTION]) > recent:
        not_shown[_RECENT_SECTION] = len(grouped[_RECENT_SECTION]) - recent
        grouped[_RECENT_SECTION] = grouped[_RECENT_SECTION][-recent:]
    now = utcnow()
    doc: dict[str, Any] = {
        "format": HANDOFF_FORMAT,
        "namespace": namespace,
        "generated_at": now.isoformat(),
        "records": len(current),
        "left_out": left_out,
        "sections": [
            {
                "title": title,
                "types": [t.value for t in types],
                "items": grouped[title],
                "not_shown": not_shown[title],
            }
            for title, types in SECTIONS
        ],
        "withheld": [w.to_dict() for w in withheld],
    }
    text = json.dumps(doc, ensure_ascii=False, indent=2) if fmt == "json" else _markdown(doc)
    return Handoff(namespace, fmt, text, tuple(withheld), now)


def _placeholders(kinds: Sequence[str]) -> str:
    return ", ".join(PLACEHOLDERS.get(k, f"[{k.upper()}]") for k in kinds) or "nothing recognised"


def _markdown(doc: dict[str, Any]) -> str:
    left_out = ", ".join(f"{n} {t}" for t, n in doc["left_out"].items() if n) or "none"
    lines = [
        f"# Handoff: {doc['namespace']}",
        "",
        f"Generated {doc['generated_at']} by retain from {doc['records']} current records (superseded "
        f"versions excluded; left out: {left_out}). Secrets and personal data are replaced by typed "
        "placeholders such as [EMAIL]; records typed sensitive are not shown. See Withheld.",
    ]
    for section in doc["sections"]:
        lines += ["", f"## {section['title']}", ""]
        if section["not_shown"]:
            lines.append(
                f"({section['not_shown']} earlier items not shown; the latest {len(section['items'])} follow.)"
            )
        if not section["items"]:
            lines.append("(none)")
        for item in section["items"]:
            when = item["event_time"][:16].replace("T", " ") + " UTC · " if item["event_time"] else ""
            content = "\n  ".join(item["content"].splitlines())
            lines.append(f"- {when}{item['role']}: {content} (id {item['id']})")
    lines += ["", "## Withheld", ""]
    if not doc["withheld"]:
        lines.append("(nothing)")
    for w in doc["withheld"]:
        lines.append(f"- {w['record_id']} ({w['type']}): {_placeholders(w['kinds'])}; {w['reason']}")
    return "\n".join(lines) + "\n"
