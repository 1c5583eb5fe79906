"""Audit: verify the hash-chained audit log, and snapshot / diff what a namespace holds.

The audit log (:class:`retain.store.AuditEntry`) is append-only and hash-chained. Entry ``n`` stores
``prev_hash`` = the ``hash`` of entry ``n - 1`` (:data:`GENESIS_HASH` for entry 1) and ``hash`` =
:func:`~retain.store.audit_hash` (sha256) over ``prev_hash`` and the canonical JSON of its
eight fields :data:`HASHED_FIELDS`. :func:`verify_chain` recomputes every hash and checks every
link and sequence number; :func:`verify_store` does it for a whole store.

What a hash chain can and cannot show:

* a changed, removed, inserted or reordered entry, or a details column that is not JSON, is found,
  and ``first_bad_seq`` names the earliest entry that cannot be trusted;
* removing the *newest* entries leaves a shorter chain that is still valid: only a counter kept
  outside the rows catches it (``last_seq``; :func:`verify_store` reads SQLite's AUTOINCREMENT
  counter);
* unkeyed, someone with write access who rewrites an entry *and re-hashes every entry after it*,
  or appends a well-formed entry, leaves a valid chain. A hash recorded outside the store catches
  the rewrite (``checkpoints``; ``retain audit verify`` prints the head to record); the keyed chain
  (HMAC-SHA256 under a key kept outside the database, :mod:`retain.safety.audit_key`) catches both;
* a chain that verifies says nothing about the next edit: :func:`verify_store` also fails when the
  backend's append-only guards (for SQLite, the triggers that refuse UPDATE / DELETE on the audit
  table) have been dropped.

Everything here goes through the store contract (:class:`~retain.store.ReadAuditRaw`,
:meth:`~retain.store.Store.audit_log`); nothing reads a backend's internals.

Snapshots (:func:`snapshot`, :func:`diff`) record ids, content hashes and retention fields of every
record of a namespace, never content, so two points in time can be compared after the fact.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from retain.errors import InvalidInput, RetainError
from retain.safety.audit_key import chain_modes, is_keyed
from retain.safety.audit_snapshot import (
    SNAPSHOT_FIELDS,
    SNAPSHOT_FORMAT,
    HasStore,
    Snapshot,
    SnapshotDiff,
    diff,
    snapshot,
)
from retain.store import GENESIS_HASH, RawAudit, ReadAuditRaw, Store, audit_hash, check_key

__all__ = [
    "ENTRY_FIELDS",
    "GENESIS_HASH",
    "HASHED_FIELDS",
    "MAX_PROBLEMS",
    "SNAPSHOT_FIELDS",
    "SNAPSHOT_FORMAT",
    "HasStore",
    "Snapshot",
    "SnapshotDiff",
    "VerifyReport",
    "diff",
    "read_audit_raw",
    "snapshot",
    "verify_chain",
    "verify_store",
]

HASHED_FIELDS: tuple[str, ...] = ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")
"""The fields an entry's hash covers (with ``prev_hash``); ``seq`` is not hashed, its order is checked."""

ENTRY_FIELDS: tuple[str, ...] = ("seq", *HASHED_FIELDS, "prev_hash", "hash")
"""Every field of an audit entry as :class:`~retain.store.ReadAudit` returns it."""
_ENTRY_SET = frozenset(ENTRY_FIELDS)

MAX_PROBLEMS = 100
"""Problems listed in a :class:`VerifyReport`; any more are summarised in one last line."""


# --- verification -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Outcome of :func:`verify_chain` / :func:`verify_store`.

    Attributes:
        ok: True when every hash, link and sequence number checks out (and every given anchor).
        entries: number of entries examined.
        first_bad_seq: the earliest entry that cannot be trusted (every entry before it forms an
            intact chain from genesis); for a removal, the seq of the first missing entry. None when
            ``ok``, or when the log could not be read at all.
        problems: human-readable findings in log order, e.g. ``"entry 42: hash mismatch
            (changed)"``; at most :data:`MAX_PROBLEMS` plus one summary line.
        head_seq, head_hash: seq and stored hash of the last entry (None for an empty log): record
            them outside the store and pass them back as a checkpoint to detect later rewrites.
        records: records cross-checked against the log (:func:`verify_store` only; 0 otherwise).
        keyed: entries whose HMAC was checked with the key (0 when verified without a key).
    """

    ok: bool
    entries: int
    first_bad_seq: int | None
    problems: list[str] = field(default_factory=list)
    head_seq: int | None = None
    head_hash: str | None = None
    records: int = 0
    keyed: int = 0


def verify_chain(
    entries: Sequence[Mapping[str, Any]],
    *,
    last_seq: int | None = None,
    checkpoints: Mapping[int, str] | None = None,
    key: bytes | None = None,
) -> VerifyReport:
    """Recompute every hash of an audit log and check every link and sequence number. Pure.

    Args:
        entries: the whole log in stored order (oldest first), each a mapping with
            :data:`ENTRY_FIELDS` as :meth:`Store.audit_log` returns them. ``details`` may be a dict
            or the raw JSON text of the column (it is then parsed; unreadable text is reported).
        last_seq: the seq the log must end at, known from outside the rows (SQLite's AUTOINCREMENT
            counter); catches removal of the newest entries, which the chain alone cannot.
        checkpoints: ``{seq: hash}`` recorded outside the store earlier (e.g. a report's
            ``head_seq``/``head_hash``); catches a rewrite that re-hashed every later entry.
        key: the audit key (bytes >= 16) the log was written under (keyed chain): every keyed
            entry's HMAC is checked, an unkeyed entry after a keyed one is reported as forged, and
            a log with no keyed entry fails. None: keyed entries are reported as not checkable
            (:func:`retain.safety.audit_key.chain_modes`).

    Returns:
        A :class:`VerifyReport`. Detected: changed fields (hash mismatch), removed entries (gap in
        ``seq`` or broken link), inserted and reordered entries (a link that points elsewhere, or
        ``seq`` out of order), unreadable details. Never raises on malformed entries; they are
        reported.

    Raises:
        InvalidInput: ``key`` is not bytes of >= 16.
    """
    key = None if key is None else check_key(key)
    log = _Log(entries)
    found = _Findings()
    prev_seq = 0
    for p, entry in enumerate(entries):
        before = found.count_at(p)
        missing = [] if entry.keys() >= _ENTRY_SET else [k for k in ENTRY_FIELDS if k not in entry]
        if missing:
            found.add(p, f"{log.name(p)}: missing fields {', '.join(missing)}")
        prev_seq = _check_sequence(log, found, p, prev_seq, seq_missing="seq" in missing)
        _check_hash(log, found, p, key)
        _check_link(log, found, p, before)
    for p, message in chain_modes(log.hashes, [log.name(p) for p in range(len(entries))], keyed_verify=key is not None):
        found.add(p, message)
    if last_seq is not None:
        _check_counter(log, found, prev_seq, last_seq)
    if checkpoints:
        _check_checkpoints(log, found, checkpoints)

    n = len(entries)
    head_seq = log.seqs[-1] if n else None
    head_hash = log.hashes[-1] if n and isinstance(log.hashes[-1], str) else None
    # Every finding at position p is blamed on p or earlier, and positions before the earliest
    # blame passed every check, so their seqs run 1..p: the earliest untrusted seq is p + 1.
    first_bad = None if found.empty else found.first + 1
    return VerifyReport(
        ok=found.empty,
        entries=n,
        first_bad_seq=first_bad,
        problems=found.messages(),
        head_seq=head_seq,
        head_hash=head_hash,
        keyed=sum(map(is_keyed, log.hashes)) if key is not None else 0,
    )


class _Log:
    """The entries under verification with what every check looks up: each position's seq (None
    when not an int) and stored hash, the first position of each hash, and the seqs present."""

    def __init__(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.entries = entries
        self.seqs = [_as_seq(e.get("seq")) for e in entries]
        self.hashes = [e.get("hash") for e in entries]
        self.position_of: dict[str, int] = {GENESIS_HASH: -1}
        for p, h in enumerate(self.hashes):
            if isinstance(h, str):
                self.position_of.setdefault(h, p)
        self.present = sorted({s for s in self.seqs if s is not None})

    def name(self, p: int) -> str:
        seq = self.seqs[p]
        return f"entry {seq}" if seq is not None else f"entry at position {p + 1}"


def _check_sequence(log: _Log, found: _Findings, p: int, prev_seq: int, *, seq_missing: bool) -> int:
    """Sequence numbers run consecutively from 1: report a gap, a repeat or a step back at ``p``;
    return the seq the next entry follows."""
    seq, expected = log.seqs[p], prev_seq + 1
    if seq is None:
        if not seq_missing:
            found.add(p, f"{log.name(p)}: sequence number {log.entries[p].get('seq')!r} is not an integer")
    elif seq != expected:
        if seq > expected and not _any_between(log.present, expected, seq):
            found.add(p, f"{_missing(expected, seq - 1)} (gap in sequence)")
        elif seq == prev_seq:
            found.add(p, f"entry {seq} appears twice")
        else:
            follows = f"entry {prev_seq}" if p else "the start of the log"
            found.add(p, f"entry {seq} out of sequence order (follows {follows})")
    return seq if seq is not None else expected


def _check_hash(log: _Log, found: _Findings, p: int, key: bytes | None) -> None:
    """The entry's own hash, recomputed over its stored ``prev_hash`` and fields (details parsed
    when stored as text; unreadable details are reported instead): sha256, or for a keyed entry
    HMAC-SHA256 under ``key`` (not checkable without it: :func:`verify_chain` reports that)."""
    entry, seq, label = log.entries[p], log.seqs[p], log.name(p)
    details = entry.get("details")
    readable = True
    if isinstance(details, str | bytes | bytearray):
        try:
            details = json.loads(details)
        except ValueError:
            readable = False
            if p == len(log.entries) - 1:
                found.add(p, f"last entry ({seq if seq is not None else p + 1}) truncated / unreadable JSON in details")
            else:
                found.add(p, f"{label}: unreadable JSON in details (corrupted)")
    stored_prev = entry.get("prev_hash")
    if not isinstance(stored_prev, str):
        found.add(p, f"{label}: prev_hash {stored_prev!r} is not a string")
    elif readable and not (is_keyed(log.hashes[p]) and key is None):
        keyed = is_keyed(log.hashes[p])
        fields = {k: entry.get(k) for k in HASHED_FIELDS}
        fields["details"] = dict(details) if isinstance(details, Mapping) else details
        try:
            recomputed: str | None = audit_hash(stored_prev, fields, key if keyed else None)
        except (TypeError, ValueError):
            recomputed = None
            found.add(p, f"{label}: fields are not JSON-serialisable (corrupted)")
        if recomputed is not None and recomputed != log.hashes[p]:
            what = "HMAC mismatch (changed, or keyed with another key)" if keyed else "hash mismatch (changed)"
            found.add(p, f"{label}: {what}")


def _check_link(log: _Log, found: _Findings, p: int, before: int) -> None:
    """The entry's ``prev_hash`` names the entry stored before it (the genesis hash for the first);
    ``before`` is the number of findings at ``p`` before this entry's checks."""
    stored_prev = log.entries[p].get("prev_hash")
    link = GENESIS_HASH if p == 0 else log.hashes[p - 1]
    if stored_prev == link:
        return
    label = log.name(p)
    pred = log.name(p - 1) if p else "the genesis hash"
    q = log.position_of.get(stored_prev) if isinstance(stored_prev, str) else None
    if q is None:
        # Nothing references the predecessor's hash: either it was rewritten (blame it) or this
        # entry was (it then fails a check of its own) or entries between were removed (gap).
        blame = p if found.count_at(p) > before else max(p - 1, 0)
        found.add(blame, f"{label}: prev_hash does not match {pred} (changed, reordered or removed)")
    else:
        target = "the genesis hash" if q == -1 else log.name(q)
        blame = q + 1 if q < p - 1 else p  # entries q+1 .. p-1 are not part of the chain
        found.add(blame, f"{label}: prev_hash does not match {pred}; it points to {target} (inserted or reordered)")


def _check_counter(log: _Log, found: _Findings, prev_seq: int, last_seq: int) -> None:
    """The log ends at the seq the store's counter holds: fewer entries mean the newest were removed."""
    n = len(log.entries)
    if prev_seq < last_seq:
        found.add(n, f"{_missing(prev_seq + 1, last_seq)} at the end of the log (the store's counter is at {last_seq})")
    elif prev_seq > last_seq:
        first = next(p for p, s in enumerate(log.seqs) if s is not None and s > last_seq)
        found.add(first, f"entries after {last_seq} are past the store's counter (not written by the store)")


def _check_checkpoints(log: _Log, found: _Findings, checkpoints: Mapping[int, str]) -> None:
    """Each ``{seq: hash}`` recorded outside the store matches the entry's stored hash."""
    position_of_seq: dict[int, int] = {}
    for p, s in enumerate(log.seqs):
        if s is not None:
            position_of_seq.setdefault(s, p)
    trusted = 0  # positions before this one are vouched for by a matching checkpoint
    for cseq, chash in sorted(checkpoints.items()):
        p = position_of_seq.get(cseq, -1)
        if p < 0:
            found.add(trusted, f"checkpoint entry {cseq} is not in the log (removed or renumbered)")
        elif log.hashes[p] != chash:
            found.add(trusted, f"entry {cseq}: hash differs from the checkpoint (rewritten at or before it)")
        else:
            trusted = p + 1


def read_audit_raw(store: Store) -> RawAudit:
    """Read a store's whole audit log as stored, without interpreting it (:class:`ReadAuditRaw`).

    :meth:`Store.audit_log` parses each ``details`` column with ``json.loads`` and so raises on a
    corrupted row; verification must read such a row and report it.

    Returns: :class:`~retain.store.RawAudit`; entries in seq order with :data:`ENTRY_FIELDS`,
    ``details`` a str.

    Raises:
        InvalidInput: the backend does not answer :class:`ReadAuditRaw` (``supports_raw_audit`` False).
        SchemaError: the store is not set up.
        Exception: the backend's own error when the audit table itself cannot be read
            (``sqlite3.DatabaseError`` for SQLite).
    """
    if not store.supports_raw_audit:
        raise InvalidInput(f"store: {type(store).__name__} does not read its audit log raw (supports_raw_audit)")
    result: RawAudit = store.batch([ReadAuditRaw()])[0]
    return result


def verify_store(
    store: Store, *, checkpoints: Mapping[int, str] | None = None, key: bytes | None = None
) -> VerifyReport:
    """Verify a store's whole audit log (every namespace: the chain is global).

    For a backend with ``supports_raw_audit`` (:class:`~retain.store.SQLiteStore`) the rows are read
    raw (:func:`read_audit_raw`), so a row whose details are not valid JSON (a crash mid-write, a bad
    edit) is reported rather than raised, removal of the newest entries is caught by the backend's
    sequence counter, and missing append-only guards are reported. Other backends are read with
    :meth:`Store.audit_log`; if that fails, the report says so.

    Args:
        checkpoints: ``{seq: hash}`` recorded earlier outside the store; see :func:`verify_chain`.
        key: the audit key of a keyed chain; see :func:`verify_chain`.

    Returns: a :class:`VerifyReport`; never raises for what the log contains.

    Raises:
        SchemaError: the store is not set up.
        InvalidInput: ``key`` is not bytes of >= 16.
    """
    if store.supports_raw_audit:
        try:
            raw = read_audit_raw(store)
        except RetainError:
            raise
        except Exception as exc:  # the backend cannot read the table itself: a finding, not a crash
            return _unreadable(f"audit table unreadable: {exc}")
        report = verify_chain(raw.entries, last_seq=raw.last_seq, checkpoints=checkpoints, key=key)
        report = _with_records(report, store, raw.entries)
        if raw.missing_guards:  # the chain may still verify, but nothing stops the next in-place edit
            note = (
                f"append-only trigger(s) {', '.join(raw.missing_guards)} missing or altered: "
                "the log can be edited in place"
            )
            report = replace(report, ok=False, problems=[*report.problems, note])
        return report
    try:
        entries = store.audit_log()
    except Exception as exc:  # any backend failure is a finding, not a crash
        return _unreadable(f"audit log unreadable ({type(exc).__name__}: {exc})")
    return _with_records(verify_chain(entries, checkpoints=checkpoints, key=key), store, entries)


def _with_records(report: VerifyReport, store: Store, entries: Sequence[Mapping[str, Any]]) -> VerifyReport:
    """``report`` with the records cross-checked against the log (:mod:`retain.safety.crosscheck`)."""
    from retain.safety.crosscheck import crosscheck

    checked = crosscheck(store, entries)
    if not checked.problems:
        return replace(report, records=checked.records)
    return replace(report, ok=False, problems=[*report.problems, *checked.problems], records=checked.records)


def _unreadable(message: str) -> VerifyReport:
    return VerifyReport(ok=False, entries=0, first_bad_seq=None, problems=[message])


class _Findings:
    """Problems found, each blamed on a position of the log (the earliest that may be affected)."""

    def __init__(self) -> None:
        self._items: list[tuple[int, str]] = []
        self._per_position: dict[int, int] = {}
        self.first = -1

    @property
    def empty(self) -> bool:
        return not self._items

    def add(self, position: int, message: str) -> None:
        self._items.append((position, message))
        self._per_position[position] = self._per_position.get(position, 0) + 1
        self.first = position if self.first < 0 else min(self.first, position)

    def count_at(self, position: int) -> int:
        return self._per_position.get(position, 0)

    def messages(self) -> list[str]:
        out = [message for _, message in self._items[:MAX_PROBLEMS]]
        if len(self._items) > MAX_PROBLEMS:
            out.append(f"... and {len(self._items) - MAX_PROBLEMS} more problems")
        return out


def _as_seq(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _any_between(present: list[int], lo: int, hi: int) -> bool:
    """True when some value of the sorted list ``present`` is in [lo, hi)."""
    i = bisect_left(present, lo)
    return i < len(present) and present[i] < hi


def _missing(lo: int, hi: int) -> str:
    return f"entry {lo} missing" if lo == hi else f"entries {lo}-{hi} missing"
