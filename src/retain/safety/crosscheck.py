"""The records checked against the audit log: a chain that verifies says only that the log is
intact, not that the store still holds what the log says was written.

:func:`crosscheck` reads every stored record (every namespace, every tier, superseded versions too)
and the raw log, and reports:

* a record no "add", "update", "summarize" or "compress" entry created (a row inserted behind retain's back,
  or a log emptied or cut while the records stayed);
* a record whose stored content no longer has the sha256 (:func:`retain.record.content_hash`) its
  creating entry recorded (content edited in place);
* an empty log beside stored records.

Entries written before the log carried content hashes (``details["content_hash"]`` absent) are
checked for presence only; :attr:`CrossCheck.unhashed` counts them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from retain.record import content_hash
from retain.store import ALL_RECORDS, Store

__all__ = ["CREATING_OPS", "CrossCheck", "crosscheck"]

CREATING_OPS = frozenset({"add", "update", "summarize", "compress"})
"""The audit operations that write a new record (its id is the entry's ``record_id``)."""


@dataclass(frozen=True, slots=True)
class CrossCheck:
    """Outcome of :func:`crosscheck`.

    Attributes:
        records: records examined.
        problems: one line per finding (record ids, never content).
        unhashed: records whose creating entry predates content hashes (presence checked only).
    """

    records: int
    problems: list[str] = field(default_factory=list)
    unhashed: int = 0


def _details(entry: Mapping[str, Any]) -> dict[str, Any]:
    raw = entry.get("details")
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def crosscheck(store: Store, entries: Sequence[Mapping[str, Any]]) -> CrossCheck:
    """Check every record of ``store`` against the log ``entries`` (oldest first, as stored).

    Returns: a :class:`CrossCheck`; never raises for what the store or the log contains.
    """
    created: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        if entry.get("op") in CREATING_OPS and isinstance(entry.get("record_id"), str):
            created[(str(entry.get("namespace")), entry["record_id"])] = _details(entry)
    problems: list[str] = []
    unhashed = examined = 0
    for namespace in store.namespaces():
        for record in store.list_records(namespace, ALL_RECORDS):
            examined += 1
            details = created.get((namespace, record.id))
            if details is None:
                problems.append(f"record {record.id} of {namespace!r}: no add / update entry in the audit log")
                continue
            logged = details.get("content_hash")
            if logged is None:
                unhashed += 1
            elif logged != content_hash(record.content):
                problems.append(
                    f"record {record.id} of {namespace!r}: content differs from what the log recorded (edited in place)"
                )
    if examined and not entries:
        problems.insert(0, f"the audit log is empty but the store holds {examined} records")
    return CrossCheck(examined, problems, unhashed)
