"""The typed operations of the storage contract, one frozen dataclass each, and :data:`Op`, their union.

A backend answers a sequence of them in one transaction (:meth:`retain.store.Store.batch`), one
result per operation, as each docstring says. The guards (:class:`RequireCurrent`,
:class:`RequireUnique`, :class:`RequireUnchanged`) fail the whole batch when what a caller read
before writing no longer holds; :func:`retry_on_conflict` runs such a read-then-write again.
Every operation names its namespace; none reads or writes across namespaces (except
:class:`ListNamespaces`, which returns names only).

Every public name here is part of the contract and exported by :mod:`retain.store`, whose ``__all__``
lists them: code outside this package imports them from there.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from retain.errors import DuplicateContent, HotSetChanged, InvalidInput, RecordNotFound, WriteConflict
from retain.record import MemoryRecord, Tier
from retain.store.audit_chain import AuditEntry
from retain.store.edges import Edge, EdgeType
from retain.store.filters import DEFAULT_FILTER, RecordFilter


class ScoredId(NamedTuple):
    """A search result from a backend channel: id and score (higher = more relevant)."""

    id: str
    score: float


# --- writes and reads of records ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PutRecords:
    """Insert or replace records (by id). Result: None. Lexical index updated in the same txn."""

    records: tuple[MemoryRecord, ...]


@dataclass(frozen=True, slots=True)
class GetRecords:
    """Result: list of the records found, in the order of ``ids`` (missing ids skipped)."""

    namespace: str
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FindByHash:
    """Result: the oldest current record with that content hash, or None.

    With ``in_context`` the record must also have the same ``role``, ``segment`` and ``seq`` (None
    matches None): the same words said by someone else, or at another point of a stream, are not
    a duplicate.
    """

    namespace: str
    content_hash: str
    in_context: bool = False
    role: str | None = None
    segment: str | None = None
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class RequireCurrent:
    """Fail the whole batch unless record ``id`` exists in ``namespace`` and is current (not
    superseded). Guards read-modify-write sequences (``update``) against a concurrent writer.

    Result: None. Raises InvalidInput (superseded) or RecordNotFound (absent)."""

    namespace: str
    id: str


@dataclass(frozen=True, slots=True)
class RequireUnique:
    """Fail the whole batch if ``namespace`` already holds a current record with this content hash,
    ``role``, ``segment`` and ``seq`` (None matches None): the record :class:`FindByHash` with
    ``in_context`` would find. Guards look-up-then-insert (``Memory.add`` with dedupe) against a
    concurrent writer: put before the batch's :class:`PutRecords`, the check and the insert are one
    transaction (a write batch: no other writer commits in between), so two writers adding the same
    content cannot both store it; the one that commits second fails here and may look up again.

    Result: None. Raises DuplicateContent (``existing_id`` = that record's id; the batch rolls
    back, nothing is written)."""

    namespace: str
    content_hash: str
    role: str | None = None
    segment: str | None = None
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class RequireUnchanged:
    """Fail the whole batch unless record ``id`` still exists in ``namespace``, is superseded by
    ``superseded_by`` (None: is current) and, when ``tier`` is given, sits in that tier: the state a
    caller read it in before writing back a changed copy of it (a tier move, a supersede link, merged
    metadata, feedback, a pin) or handing out its id. Guards read-then-write sequences
    (``Memory.add``: duplicates found, archived records restored, records superseded, merged into or
    evicted; ``delete``, ``feedback``, ``pin``) against a concurrent delete, update or move:
    :class:`PutRecords` writes whole records, so a stale copy would bring a purged record back or
    make a replaced version current again. It compares only existence, ``superseded_by`` and the
    tier: two writers changing other fields of one current record in the same tier (importance,
    access count, metadata) are not told apart, and the later write wins.

    Result: None. Raises WriteConflict (the batch rolls back, nothing is written)."""

    namespace: str
    id: str
    tier: Tier | None = None
    superseded_by: str | None = None


@dataclass(frozen=True, slots=True)
class RequireHot:
    """Fail the whole batch unless the current records of ``namespace`` in the hot tiers (core and
    dynamic: what a budget counts) are exactly ``ids``: the hot memory a retention decision was made
    against. Checked in the write transaction, it makes the budget hard across connections and
    processes: a decision taken on a hot set another writer changed since (an add, an eviction, a
    restore) is never committed, so the committed hot memory never exceeds the budget and no writer
    evicts a record another writer already archived. Reading the hot set costs one indexed query over
    at most the budget's records (plus mandatory ones).

    Result: None. Raises WriteConflict (the batch rolls back, nothing is written; the caller reads
    the hot set again and decides again: :func:`retry_on_conflict`)."""

    namespace: str
    ids: frozenset[str]


# --- the guards' verdicts, shared by every backend: each backend reads the row, these decide --------


def check_current(op: RequireCurrent, superseded_by: str | None, found: bool) -> None:
    """Raise what :class:`RequireCurrent` raises for the record read (``found`` False: no such row)."""
    if not found:
        raise RecordNotFound(f"no record {op.id!r} in namespace {op.namespace!r}")
    if superseded_by is not None:
        raise InvalidInput(f"id {op.id} was superseded by {superseded_by} meanwhile; update the current version")


def check_unchanged(op: RequireUnchanged, row: tuple[str | None, str] | None) -> None:
    """Raise what :class:`RequireUnchanged` raises for the ``(superseded_by, tier)`` read (None: no row)."""
    if row is None:
        raise WriteConflict(f"record {op.id} of namespace {op.namespace!r} was deleted meanwhile")
    superseded_by, tier = row
    if superseded_by != op.superseded_by:
        raise WriteConflict(
            f"record {op.id} was superseded by {superseded_by} meanwhile"
            if superseded_by is not None
            else f"record {op.id} is current again (read superseded by {op.superseded_by})"
        )
    if op.tier is not None and tier != op.tier.value:
        raise WriteConflict(f"record {op.id} moved to the {tier} tier meanwhile (read in {op.tier.value})")


def check_hot(op: RequireHot, held: frozenset[str]) -> None:
    """Raise what :class:`RequireHot` raises when the hot ids read (``held``) are not the ones decided on."""
    if held != op.ids:
        raise HotSetChanged(
            f"the hot memory of namespace {op.namespace!r} changed meanwhile "
            f"({len(held - op.ids)} records in, {len(op.ids - held)} out); the retention decision is retaken"
        )


def check_unique(op: RequireUnique, existing_id: str | None) -> None:
    """Raise what :class:`RequireUnique` raises when a current copy (``existing_id``) was found."""
    if existing_id is not None:
        raise DuplicateContent(
            f"namespace {op.namespace!r} already holds this content as current record {existing_id}",
            existing_id=existing_id,
        )


WRITE_ATTEMPTS = 5
_BACKOFF_SECONDS = 0.005
"""First ceiling of the random wait between attempts (doubled after each conflict)."""
"""Most times a read-then-write operation (``Memory.add_many``, ``update``, ``delete``, ``forget``,
``propagate_importance``, segment summaries) runs when its guarded write (:class:`RequireUnique`,
:class:`RequireUnchanged`) finds that another writer changed what it read: each attempt reads again."""

_T = TypeVar("_T")


def retry_on_conflict(attempt_once: Callable[[], _T]) -> _T:
    """``attempt_once()`` (which reads, then writes under guards), run again while it raises
    :class:`~retain.errors.WriteConflict`, up to :data:`WRITE_ATTEMPTS` times in all.

    Raises:
        WriteConflict: the last attempt's, when every attempt conflicted (nothing of it was written).
    """
    for attempt in range(WRITE_ATTEMPTS - 1):
        try:
            return attempt_once()
        except WriteConflict:
            # full-jitter exponential backoff, so writers racing for one namespace stop colliding in step
            time.sleep(random.uniform(0.0, _BACKOFF_SECONDS * 2**attempt))
    return attempt_once()


@dataclass(frozen=True, slots=True)
class ListRecords:
    """Result: list of records matching ``filter``, ordered by ``order``: "seq", "created", "event",
    or "recent" (newest written first)."""

    namespace: str
    filter: RecordFilter = DEFAULT_FILTER
    limit: int | None = None
    order: str = "created"


@dataclass(frozen=True, slots=True)
class ListIds:
    """Result: list of the ids of the records matching ``filter``, in ``order`` (as
    :class:`ListRecords`); the same ids :class:`ListRecords` gives, without reading the records."""

    namespace: str
    filter: RecordFilter = DEFAULT_FILTER
    limit: int | None = None
    order: str = "created"


@dataclass(frozen=True, slots=True)
class CountRecords:
    """Result: int, number of records matching ``filter``."""

    namespace: str
    filter: RecordFilter = DEFAULT_FILTER


@dataclass(frozen=True, slots=True)
class LexicalSearch:
    """BM25 over index terms (see :mod:`retain.text.lexical`); any term may match (OR).

    Result: list of :class:`ScoredId`, best first, score = BM25 (higher = more relevant).
    """

    namespace: str
    terms: tuple[str, ...]
    filter: RecordFilter = DEFAULT_FILTER
    limit: int = 50


@dataclass(frozen=True, slots=True)
class VectorSearch:
    """Cosine similarity against stored embeddings (exact scan unless the backend has an index).

    Result: list of :class:`ScoredId`, best first, score = cosine in [-1, 1] (higher = closer).
    """

    namespace: str
    vector: npt.NDArray[np.float32]
    filter: RecordFilter = DEFAULT_FILTER
    limit: int = 50


@dataclass(frozen=True, slots=True)
class MultiVectorSearch:
    """Several :class:`VectorSearch` queries over one namespace and filter at once.

    ``vectors`` is (p, d) float32, one query per row. Result: p lists of :class:`ScoredId`, list j
    the answer :class:`VectorSearch` gives for row j (best first, cosine in [-1, 1], higher = closer).
    A backend may answer all p rows with one pass over the stored embeddings.
    """

    namespace: str
    vectors: npt.NDArray[np.float32]
    filter: RecordFilter = DEFAULT_FILTER
    limit: int = 50


@dataclass(frozen=True, slots=True)
class DeleteRecords:
    """Purge records from every table and index, with every edge touching them. Result: int,
    number purged."""

    namespace: str
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeleteNamespace:
    """Purge every record (and edge) of one namespace. Result: int, number purged."""

    namespace: str


@dataclass(frozen=True, slots=True)
class ListNamespaces:
    """Result: sorted list of namespace names that hold at least one record."""


@dataclass(frozen=True, slots=True)
class AppendAudit:
    """Append one audit entry (hash-chained). Result: int, the entry's sequence number.

    ``key`` None = the store's :attr:`~retain.store.Store.audit_key` (unkeyed sha256 when that is
    None too); bytes = HMAC-SHA256 under it (:func:`~retain.store.audit_hash`). ``ts`` None = now;
    an int (UTC microseconds) keeps the time an entry copied from another store was first written
    (:mod:`retain.store.migrate`): the entry is still chained onto this store's newest one."""

    entry: AuditEntry
    key: bytes | None = field(default=None, repr=False)
    ts: int | None = None


@dataclass(frozen=True, slots=True)
class ReadAudit:
    """Result: list of dicts (seq, ts, namespace, op, record_id, actor, reason, policy, details,
    prev_hash, hash) in sequence order; ``namespace`` None = every namespace; ``record_ids`` not
    None = only the entries about those records (read through the (namespace, record_id) index)."""

    namespace: str | None = None
    limit: int | None = None
    record_ids: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReadAuditRaw:
    """Result: :class:`~retain.store.RawAudit`, the whole audit log (every namespace) as stored, with
    the backend's sequence counter and the state of its append-only guards, read in one transaction
    so that they agree. Answered by backends with ``supports_raw_audit`` (verification reads a
    corrupted row instead of failing on it); an error reading the table itself is the backend's own
    (for SQLite, ``sqlite3.DatabaseError``)."""


@dataclass(frozen=True, slots=True)
class PutProvenance:
    """Store the provenance of one packed context (:mod:`retain.safety.context`). Result: None.

    ``body`` is JSON-serialisable: record ids, scores, token counts, reasons; no record content.
    Raises InvalidInput when ``id`` already exists (provenance is written once).
    """

    id: str
    namespace: str
    created_at: datetime
    body: dict[str, Any]


@dataclass(frozen=True, slots=True)
class GetProvenance:
    """Result: ``{"id", "namespace", "created_at" (UTC datetime), "body"}`` or None when absent;
    ``namespace`` None = look in every namespace (ids are unique store-wide)."""

    id: str
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class ListProvenance:
    """Result: every stored provenance of ``namespace`` (None = every namespace), oldest first
    (``created_at``, then id), each a dict as :class:`GetProvenance` returns it."""

    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class PutEdges:
    """Insert or replace edges (key: namespace, src, dst, type). Result: None.

    Every edge is checked with :func:`check_edge`, and both endpoints must be records of the edge's
    namespace at this point of the transaction (records put earlier in the same batch count).

    Raises InvalidInput (an endpoint in another namespace, deleted or unknown; a self-loop; an
    unknown type; a non-finite weight): the whole batch rolls back, nothing is written.
    """

    edges: tuple[Edge, ...]


@dataclass(frozen=True, slots=True)
class ListEdges:
    """Edges of one namespace, oldest written first. Result: list of :class:`Edge`.

    ``ids`` None = every edge of the namespace; else edges touching those ids: ``direction``
    "out" (src in ids), "in" (dst in ids) or "both". ``types`` None = every type.
    """

    namespace: str
    ids: tuple[str, ...] | None = None
    types: tuple[EdgeType, ...] | None = None
    direction: str = "both"


@dataclass(frozen=True, slots=True)
class PageIds:
    """One page of a namespace's record ids for browsing, newest written first. Result: :class:`IdPage`.

    Keeps the records ``filter`` keeps, and of those only pinned (``pinned`` True) or unpinned
    (False) ones when ``pinned`` is set, and only those whose indexed terms
    (:func:`retain.text.lexical.index_terms` of the content) hold every one of ``terms``. ``after`` is
    the last id of the previous page (None = the first page): pages are keyed on the write order, so
    a page costs the same at any depth and records written meanwhile do not shift later pages.
    ``count_limit`` (None = count every match) stops the count after that many matches: a common
    word then costs a bounded count instead of one per match, and the result says the total is a
    lower bound.

    Raises InvalidInput: ``limit`` < 1, ``count_limit`` < 1, or ``after`` names no record of the namespace.
    """

    namespace: str
    filter: RecordFilter = DEFAULT_FILTER
    pinned: bool | None = None
    terms: tuple[str, ...] = ()
    after: str | None = None
    limit: int = 50
    count_limit: int | None = None


def check_page(op: PageIds) -> None:
    """Refuse a :class:`PageIds` whose ``limit`` or ``count_limit`` is not an int >= 1.

    Raises:
        InvalidInput: naming the field.
    """
    checked = {"limit": op.limit} if op.count_limit is None else {"limit": op.limit, "count_limit": op.count_limit}
    for name, value in checked.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInput(f"{name}: must be an int >= 1, got {value!r}")


def count_sql(source: str, where: str, op: PageIds) -> str:
    """The SQL (SQLite and Postgres alike) counting the rows of ``source`` that match ``where``: every
    one, or with ``op.count_limit`` at most ``count_limit + 1`` of them (read :func:`capped_total`)."""
    if op.count_limit is None:
        return f"SELECT COUNT(*) FROM {source} WHERE {where}"
    return f"SELECT COUNT(*) FROM (SELECT 1 FROM {source} WHERE {where} LIMIT {int(op.count_limit) + 1}) AS capped"


def capped_total(count: int, op: PageIds) -> tuple[int, bool]:
    """``(total, exact)`` of a count read by :func:`count_sql`: past ``count_limit``, the limit and
    False."""
    if op.count_limit is not None and count > op.count_limit:
        return op.count_limit, False
    return count, True


class IdPage(NamedTuple):
    """A page of :class:`PageIds`: the ids (newest written first) and ``total``, the number of
    records matching on every page together; ``exact`` False when the count stopped at
    ``count_limit`` (then more than ``total`` match)."""

    ids: list[str]
    total: int
    exact: bool = True


@dataclass(frozen=True, slots=True)
class NamespaceStats:
    """Counts of one namespace's records in one pass. Result: :class:`RecordStats`."""

    namespace: str


class RecordStats(NamedTuple):
    """What :class:`NamespaceStats` returns.

    Attributes:
        current: ``{(tier, type): count}`` of the current records (not superseded), values as strings.
        superseded: versions a newer one replaced (kept as history).
        pinned: current records that are pinned.
    """

    current: dict[tuple[str, str], int]
    superseded: int
    pinned: int


@dataclass(frozen=True, slots=True)
class QueryAudit:
    """Audit entries matching every given field, newest first, at most ``limit``. Result: list of
    dicts as :class:`ReadAudit` returns them (``details`` parsed).

    ``namespace`` None = every namespace; ``ops`` and ``actor``: exact values; ``record_id``: entries
    about that record; ``start`` / ``end``: entry time in [start, end) (UTC); ``after_seq`` /
    ``before_seq``: sequence numbers strictly between them (a page of the log, or the entries
    between two snapshots). Raises InvalidInput when ``limit`` < 1.
    """

    namespace: str | None = None
    ops: tuple[str, ...] | None = None
    actor: str | None = None
    record_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    after_seq: int | None = None
    before_seq: int | None = None
    limit: int = 100


@dataclass(frozen=True, slots=True)
class AuditHistogram:
    """Audit entries of one namespace counted per operation and per time bucket of ``bucket_seconds``
    (buckets start at multiples of it since the Unix epoch, UTC). Result: list of
    ``(bucket start (UTC datetime), op, count)`` by bucket, then op. ``ops`` None = every operation.
    Raises InvalidInput when ``bucket_seconds`` < 1."""

    namespace: str
    ops: tuple[str, ...] | None = None
    bucket_seconds: int = 3600


Op = (
    PutRecords
    | GetRecords
    | FindByHash
    | RequireCurrent
    | RequireUnchanged
    | RequireUnique
    | RequireHot
    | ListRecords
    | ListIds
    | CountRecords
    | LexicalSearch
    | VectorSearch
    | MultiVectorSearch
    | DeleteRecords
    | DeleteNamespace
    | ListNamespaces
    | AppendAudit
    | ReadAudit
    | ReadAuditRaw
    | PutProvenance
    | GetProvenance
    | ListProvenance
    | PutEdges
    | ListEdges
    | PageIds
    | NamespaceStats
    | QueryAudit
    | AuditHistogram
)
