"""Copy one store into another (``retain migrate``): SQLite to Postgres and back, or between two
files or two databases, through the store contract only.

What is copied: every namespace's records (every tier, pinned, superseded versions, metadata,
vectors, times) in their write order, every edge, every stored context provenance, the encoder the
store was built with, and the whole audit log. The audit chain is global (one chain over every
namespace), so the entries are appended in their order with their original times, each chained onto
the target's newest entry:

* into a target whose audit log is empty, every entry gets the hash it had in the source (the
  hash covers the previous hash and the entry's fields, all kept): ``retain audit verify`` passes
  and a head recorded from the source (``--checkpoint``) still matches;
* into a target that already holds other namespaces' entries, the entries are re-chained after
  them: the fields and times are kept, the hashes are new, and verify passes on the target.

Refused before anything is written (:class:`~retain.errors.InvalidInput` or
:class:`~retain.errors.EncoderMismatch`): a target namespace that already holds records, a target
provenance id the source uses, a target built with another encoder (name or dimension), a source
audit log whose hashes or links do not check out, and a keyed chain (HMAC-SHA256) without its key.

Records are written in batches of ``chunk``, one transaction each; a copy cut off half-way leaves
records in the target, and a second run refuses those namespaces unless ``resume`` is set, which
skips the records, provenance and audit entries already copied (the target's log must then be the
source's first entries, unchanged). Writers to the source should be stopped while it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from retain.errors import EncoderMismatch, InvalidInput
from retain.record import MemoryRecord
from retain.store.audit_chain import GENESIS_HASH, KEYED_PREFIX, AuditEntry, audit_hash, check_key
from retain.store.base import Store
from retain.store.filters import ALL_RECORDS
from retain.store.ops import AppendAudit, GetProvenance, ListProvenance, PutEdges, PutProvenance, PutRecords

__all__ = ["COPY_CHUNK", "MigrationReport", "check_chain", "migrate"]

COPY_CHUNK = 500
"""Records (edges, audit entries) written per target transaction."""

_HASHED = ("ts", "namespace", "op", "record_id", "actor", "reason", "policy", "details")
_ENCODER_KEYS = ("encoder_name", "encoder_dim")


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What :func:`migrate` copied.

    Attributes:
        records: records copied per namespace (records already there on a resumed run not counted).
        edges: edges written.
        provenance: context provenances copied.
        audit_entries: audit entries appended to the target.
        verbatim: True when the audit entries kept their source hashes (the target's log was empty
            or held exactly the source's first entries); False when they were re-chained after
            another store's entries.
    """

    records: dict[str, int] = field(default_factory=dict)
    edges: int = 0
    provenance: int = 0
    audit_entries: int = 0
    verbatim: bool = True


def migrate(
    source: Store,
    target: Store,
    *,
    key: bytes | None = None,
    resume: bool = False,
    chunk: int = COPY_CHUNK,
    progress: Callable[[str], None] | None = None,
) -> MigrationReport:
    """Copy everything ``source`` holds into ``target`` (both set up); see the module docstring.

    Args:
        key: the audit key (bytes >= 16) of a keyed chain, in the source or the target; None when
            both chains are unkeyed.
        resume: carry on a copy that was cut off (namespaces holding only records of the source).
        chunk: records per target transaction (>= 1).
        progress: called with one line per namespace copied.

    Raises:
        InvalidInput: a refused target or source (see the module docstring), a bad ``key`` or
            ``chunk``; nothing was written.
        EncoderMismatch: the target was built with another encoder; nothing was written.
        StoreUnavailable: a server went away (what was committed stays; rerun with ``resume``).
    """
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise InvalidInput(f"chunk: a positive integer, got {chunk!r}")
    key = None if key is None else check_key(key)
    namespaces = source.namespaces()
    entries = source.audit_log()
    check_chain(entries, key, "source")
    _check_encoder(source, target)
    present = {ns: set(target.list_ids(ns, ALL_RECORDS)) for ns in namespaces}
    _check_namespaces(source, present, resume)
    provenance = _new_provenance(source, target, resume)
    done, verbatim, rekey = _audit_start(entries, target.audit_log(), key, resume)
    # every check passed: from here on, only writes
    _copy_encoder(source, target)
    records, edges = {}, 0
    for ns in namespaces:
        records[ns] = _copy_records(source, target, ns, present[ns], chunk)
        edges += _copy_edges(source, target, ns, chunk)
        if progress is not None:
            progress(f"{ns}: {records[ns]} records copied")
    for i in range(0, len(provenance), chunk):
        target.batch(
            [PutProvenance(p["id"], p["namespace"], p["created_at"], p["body"]) for p in provenance[i : i + chunk]]
        )
    todo = entries[done:]
    for i in range(0, len(todo), chunk):
        target.batch([_append(e, key, rekey) for e in todo[i : i + chunk]])
    _build_indexes(target, namespaces)
    return MigrationReport(records, edges, len(provenance), len(todo), verbatim)


def _build_indexes(target: Store, namespaces: Sequence[str]) -> None:
    """The target's ANN index built once after the copy when the target was opened for a bulk load
    (a Postgres store with ``index_on_write=False``: no write built it). A SQLite target builds its
    large namespaces' graphs in the background at their first search, as it always does."""
    if getattr(target, "index_deferred", False):
        for ns in namespaces:
            target.build_index(ns)  # type: ignore[attr-defined]


def check_chain(entries: Sequence[Mapping[str, Any]], key: bytes | None, which: str) -> None:
    """Every entry's hash recomputed over its fields and the previous entry's hash (sha256, or
    HMAC-SHA256 under ``key`` for a keyed entry), and its sequence number one past the previous.

    Raises:
        InvalidInput: the first entry that does not check out (names it; ``retain audit verify``
            tells more), or a keyed entry with ``key`` None.
    """
    prev = GENESIS_HASH
    for n, e in enumerate(entries, start=1):
        stored = e["hash"]
        keyed = isinstance(stored, str) and stored.startswith(KEYED_PREFIX)
        if keyed and key is None:
            raise InvalidInput(f"the {which} audit chain is keyed (HMAC-SHA256): pass its key (--key-file)")
        if (
            e["seq"] != n
            or e["prev_hash"] != prev
            or audit_hash(prev, {k: e[k] for k in _HASHED}, key if keyed else None) != stored
        ):
            raise InvalidInput(
                f"the {which} audit log does not verify at entry {e['seq']} (see `retain audit verify`); "
                "nothing was written"
            )
        prev = stored


def _check_encoder(source: Store, target: Store) -> None:
    theirs = [source.get_meta(k) for k in _ENCODER_KEYS]
    ours = [target.get_meta(k) for k in _ENCODER_KEYS]
    if theirs[0] is not None and ours[0] is not None and theirs != ours:
        raise EncoderMismatch(
            f"{target.location} was built with {ours[0]} ({ours[1]} dims); {source.location} with "
            f"{theirs[0]} ({theirs[1]} dims): vectors of one cannot be searched with the other; nothing was written"
        )


def _copy_encoder(source: Store, target: Store) -> None:
    for k in _ENCODER_KEYS:
        value = source.get_meta(k)
        if value is not None and target.get_meta(k) is None:
            target.set_meta(k, value)


def _check_namespaces(source: Store, present: Mapping[str, set[str]], resume: bool) -> None:
    for ns, ids in present.items():
        if not ids:
            continue
        if not resume:
            raise InvalidInput(
                f"target namespace {ns!r} already holds {len(ids)} records: migrate copies only into "
                "empty namespaces (--resume carries on a copy cut off); nothing was written"
            )
        foreign = ids - set(source.list_ids(ns, ALL_RECORDS))
        if foreign:
            raise InvalidInput(
                f"target namespace {ns!r} holds {len(foreign)} records the source does not "
                f"(e.g. {sorted(foreign)[0]}): not a copy of this source to resume; nothing was written"
            )


def _new_provenance(source: Store, target: Store, resume: bool) -> list[dict[str, Any]]:
    mine = source.batch([ListProvenance()])[0]
    found = target.batch([GetProvenance(p["id"]) for p in mine]) if mine else []
    clash = [p["id"] for p, there in zip(mine, found, strict=True) if there is not None]
    if clash and not resume:
        raise InvalidInput(f"target already holds provenance {clash[0]} ({len(clash)} in all); nothing was written")
    return [p for p, there in zip(mine, found, strict=True) if there is None]


def _audit_start(
    entries: Sequence[Mapping[str, Any]], there: Sequence[Mapping[str, Any]], key: bytes | None, resume: bool
) -> tuple[int, bool, bool]:
    """How many source entries the target already holds, whether the copies keep their source
    hashes, and whether every copy must be keyed (re-chained after a keyed target chain, where an
    unkeyed entry would read as forged)."""
    if not there:
        return 0, True, False
    check_chain(there, key, "target")
    head = [str(e["hash"]) for e in there]
    if resume and head == [e["hash"] for e in entries[: len(there)]]:
        return len(there), True, False
    keyed = any(h.startswith(KEYED_PREFIX) for h in head)
    return 0, False, keyed


def _copy_records(source: Store, target: Store, ns: str, present: set[str], chunk: int) -> int:
    ids = [i for i in source.list_ids(ns, ALL_RECORDS, order="created") if i not in present]
    for i in range(0, len(ids), chunk):
        records: list[MemoryRecord] = source.get(ns, ids[i : i + chunk])
        target.batch([PutRecords(tuple(records))])
    return len(ids)


def _copy_edges(source: Store, target: Store, ns: str, chunk: int) -> int:
    edges = source.edges(ns)
    for i in range(0, len(edges), chunk):
        target.batch([PutEdges(tuple(edges[i : i + chunk]))])
    return len(edges)


def _append(e: Mapping[str, Any], key: bytes | None, rekey: bool) -> AppendAudit:
    entry = AuditEntry(e["namespace"], e["op"], e["record_id"], e["actor"], e["reason"], e["policy"], e["details"])
    keyed = rekey or str(e["hash"]).startswith(KEYED_PREFIX)
    return AppendAudit(entry, key if keyed else None, ts=int(e["ts"]))
