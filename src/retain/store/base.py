"""The storage contract, written once.

A backend implements one primitive, :meth:`Store.batch`, which runs a sequence of typed operations
in a single transaction (all or nothing) and returns one result per operation. Everything else —
``put``, ``get``, ``search_lexical``, ``search_vector``, ... — is built here on top of it, the
design of langgraph's ``BaseStore``. Backends declare what they can do with capability flags
instead of callers branching on backend classes.

Every operation names its namespace; no operation reads or writes across namespaces (except
:class:`ListNamespaces`, which returns names only).
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput, WriteConflict
from retain.record import MemoryRecord, MemoryType, Tier, parse_tier, parse_type, utcnow, validate_namespace

__all__ = [
    "ALL_RECORDS",
    "GENESIS_HASH",
    "HOT_TIERS",
    "WRITE_ATTEMPTS",
    "AppendAudit",
    "AuditEntry",
    "CountRecords",
    "DeleteNamespace",
    "DeleteRecords",
    "Edge",
    "EdgeType",
    "FindByHash",
    "GetProvenance",
    "GetRecords",
    "LexicalSearch",
    "ListEdges",
    "ListIds",
    "ListNamespaces",
    "ListRecords",
    "MultiVectorSearch",
    "Op",
    "PutEdges",
    "PutProvenance",
    "PutRecords",
    "RawAudit",
    "ReadAudit",
    "ReadAuditRaw",
    "RecordFilter",
    "RequireCurrent",
    "RequireUnchanged",
    "RequireUnique",
    "ScoredId",
    "Store",
    "VectorSearch",
    "audit_hash",
    "check_edge",
    "retry_on_conflict",
]

HOT_TIERS: tuple[Tier, ...] = (Tier.CORE, Tier.DYNAMIC)


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Metadata filter applied inside every search and listing.

    Attributes:
        types: keep only these types (None = all).
        tiers: keep only these tiers; default the hot memory (core + dynamic), not the archive.
        start, end: keep records whose event_time is in [start, end) (UTC); records with unknown
            event_time are excluded when either bound is set.
        include_superseded: keep records that a newer version replaced (history).
        segments: keep only these segment ids, strings (None = all; () = none). Records without a
            segment are kept only by ``segments=None``.
        seqs: keep only records at these stream positions, ints in [0, 2**63) (None = all; () = none).
            Records without a position are kept only by ``seqs=None``.

    Any iterable is accepted for the tuple fields (type and tier names too); ``types`` and ``tiers``
    are stored as tuples of enums, ``segments`` and ``seqs`` as sorted tuples without duplicates, so
    equal filters compare and hash equal.

    Raises:
        InvalidInput: a field of the wrong kind (a string or a number where a collection is due; a
            segment id that is not a string or holds a lone surrogate; a position that is not an int,
            is negative or does not fit 64 bits; an unknown type or tier name; ``include_superseded`` not a bool).
    """

    types: tuple[MemoryType, ...] | None = None
    tiers: tuple[Tier, ...] | None = HOT_TIERS
    start: datetime | None = None
    end: datetime | None = None
    include_superseded: bool = False
    segments: tuple[str, ...] | None = None
    seqs: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.include_superseded, bool):
            raise InvalidInput(f"include_superseded: must be a bool, got {self.include_superseded!r}")
        if self.types is not None:
            object.__setattr__(self, "types", tuple(parse_type(t) for t in _items(self.types, "types")))
        if self.tiers is not None:
            object.__setattr__(self, "tiers", tuple(parse_tier(t) for t in _items(self.tiers, "tiers")))
        if self.segments is not None:
            segments = _items(self.segments, "segments")
            for segment in segments:
                if not isinstance(segment, str):
                    raise InvalidInput(f"segments: segment ids are strings, got {segment!r}")
                if not segment.isascii():  # a lone surrogate: SQLite cannot bind it, the index matched nothing
                    try:
                        segment.encode("utf-8")
                    except UnicodeEncodeError:
                        raise InvalidInput(f"segments: {segment!r} is not valid UTF-8 text") from None
            object.__setattr__(self, "segments", tuple(sorted(set(segments))))
        if self.seqs is not None:
            items = _items(self.seqs, "seqs")
            # plain ints (the common case) are range-checked at once below; bool and the rest one by one
            seqs = set(items) if all(type(seq) is int for seq in items) else {_position(seq) for seq in items}
            if seqs and (min(seqs) < 0 or max(seqs) >= MAX_SEQ):
                _position(min(seqs) if min(seqs) < 0 else max(seqs))
            object.__setattr__(self, "seqs", tuple(sorted(seqs)))


MAX_SEQ = 2**63
"""One past the largest stream position a filter takes (SQLite integers are 64-bit, signed)."""


def _position(seq: object) -> int:
    """``seq`` as a stream position (an int in [0, :data:`MAX_SEQ`)); numpy integers are accepted."""
    if isinstance(seq, bool) or not isinstance(seq, numbers.Integral) or not 0 <= int(seq) < MAX_SEQ:
        raise InvalidInput(f"seqs: positions are ints in [0, 2**63), got {seq!r}")
    return int(seq)


def _items(value: object, name: str) -> tuple[Any, ...]:
    """``value`` (any iterable but a string or bytes) as a tuple."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidInput(f"{name}: must be a collection (tuple, list, set) or None, got {value!r}")
    return tuple(value)


ALL_RECORDS = RecordFilter(tiers=None, include_superseded=True)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the append-only audit log. Never holds record content.

    Attributes:
        namespace: scope of the change.
        op: "add", "update", "supersede", "delete", "delete_all", "evict", "archive", ...
        record_id: the record concerned, or None for namespace-wide operations.
        actor: who asked ("user", "agent", "system", "policy:<name>", ...).
        reason: free text why.
        policy: retention policy name when a policy decided, else None.
        details: JSON-serialisable scores and before/after fields (no content).
    """

    namespace: str
    op: str
    record_id: str | None = None
    actor: str = "user"
    reason: str = ""
    policy: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first audit entry."""


def audit_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    """sha256 (hex, 64 characters) over the previous entry's hash and this entry's canonical JSON
    (sorted keys, UTF-8 characters literal, no spaces): the hash chain every backend writes and
    :mod:`retain.safety.audit` verifies. ``fields`` are the entry's ts (UTC microseconds), namespace,
    op, record_id, actor, reason, policy and details.

    Raises:
        TypeError, ValueError: ``fields`` are not JSON-serialisable.
    """
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256((prev_hash + canonical).encode("utf-8")).hexdigest()


class RawAudit(NamedTuple):
    """The audit log as stored, uninterpreted (the result of :class:`ReadAuditRaw`).

    Attributes:
        entries: every entry in seq order, each a dict with the keys of :class:`ReadAudit`'s
            entries, ``details`` the stored JSON text (not parsed: a corrupted row is read, not raised).
        last_seq: the backend's sequence counter (the highest seq it ever assigned, kept outside the
            rows), or None before the first entry.
        missing_guards: names of the backend's append-only guards (for SQLite, the triggers that refuse
            UPDATE and DELETE on the audit table) that are missing, sorted; empty when all are in place.
    """

    entries: list[dict[str, Any]]
    last_seq: int | None
    missing_guards: tuple[str, ...] = ()


class ScoredId(NamedTuple):
    """A search result from a backend channel: id and score (higher = more relevant)."""

    id: str
    score: float


class EdgeType(enum.StrEnum):
    """Kinds of typed edges between two records of one namespace (:mod:`retain.retrieval.graph`).

    Direction is ``src -> dst``: ``next`` earlier -> later in a stream; ``derived_from`` the new
    record -> the record its reasoning step used; ``supersedes`` new version -> old version;
    ``same_entity`` newer -> older record naming the same entity; ``supports``, ``conflicts_with``,
    ``elaborates`` are set by callers (:meth:`retain.Memory.link`).
    """

    NEXT = "next"
    DERIVED_FROM = "derived_from"
    SUPPORTS = "supports"
    CONFLICTS_WITH = "conflicts_with"
    SUPERSEDES = "supersedes"
    ELABORATES = "elaborates"
    SAME_ENTITY = "same_entity"


@dataclass(frozen=True, slots=True)
class Edge:
    """A typed, weighted edge ``src -> dst`` between two records of ``namespace``.

    Attributes:
        namespace: both endpoints live here; edges never cross namespaces.
        src, dst: record ids (distinct: no self-loops).
        type: an :class:`EdgeType` (a string value is accepted by :func:`check_edge`).
        weight: finite, > 0; multiplies scores in retrieval expansion and transition
            probabilities in importance propagation (higher = stronger link).
        created_at: when the edge was written (timezone-aware, stored as UTC microseconds).
        metadata: JSON-serialisable details (never record content).

    The key is (namespace, src, dst, type): writing the same key again replaces weight,
    created_at and metadata.
    """

    namespace: str
    src: str
    dst: str
    type: EdgeType
    weight: float = 1.0
    created_at: datetime = field(default_factory=utcnow)
    metadata: Mapping[str, Any] = field(default_factory=dict)


def check_edge(edge: Edge, index: int = 0) -> Edge:
    """Validate the parts of ``edge`` every backend checks the same way; return it with ``type``
    coerced to :class:`EdgeType` and ``weight`` to float. Endpoint existence is the backend's check.

    Raises:
        InvalidInput: not an Edge, bad namespace, empty or equal ids (self-loop), unknown type,
            weight not finite or <= 0, naive ``created_at``, metadata not JSON-serialisable.
    """
    where = f"edge {index}"
    if not isinstance(edge, Edge):
        raise InvalidInput(f"{where}: expected an Edge, got {type(edge).__name__}")
    try:
        validate_namespace(edge.namespace)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from exc
    for name in ("src", "dst"):
        value = getattr(edge, name)
        if not isinstance(value, str) or not value:
            raise InvalidInput(f"{where}: {name} must be a non-empty record id, got {value!r}")
    if edge.src == edge.dst:
        raise InvalidInput(f"{where}: self-loop on {edge.src}; an edge joins two different records")
    try:
        kind = EdgeType(edge.type)
    except ValueError:
        known = ", ".join(t.value for t in EdgeType)
        raise InvalidInput(f"{where}: unknown type {edge.type!r}; one of {known}") from None
    weight = edge.weight
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
        raise InvalidInput(f"{where}: weight must be a finite number > 0, got {weight!r}")
    if not isinstance(edge.created_at, datetime) or edge.created_at.tzinfo is None:
        raise InvalidInput(f"{where}: created_at must be a timezone-aware datetime")
    if not isinstance(edge.metadata, Mapping):
        raise InvalidInput(f"{where}: metadata must be a mapping")
    try:
        json.dumps(dict(edge.metadata), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}: metadata must be JSON-serialisable without NaN/inf ({exc})") from exc
    return replace(edge, type=kind, weight=float(weight))


# --- operations -------------------------------------------------------------------------------


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


WRITE_ATTEMPTS = 5
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
    for _ in range(WRITE_ATTEMPTS - 1):
        try:
            return attempt_once()
        except WriteConflict:
            continue
    return attempt_once()


@dataclass(frozen=True, slots=True)
class ListRecords:
    """Result: list of records matching ``filter``, ordered by ``order``: "seq", "created", "event",
    or "recent" (newest written first)."""

    namespace: str
    filter: RecordFilter = RecordFilter()
    limit: int | None = None
    order: str = "created"


@dataclass(frozen=True, slots=True)
class ListIds:
    """Result: list of the ids of the records matching ``filter``, in ``order`` (as
    :class:`ListRecords`); the same ids :class:`ListRecords` gives, without reading the records."""

    namespace: str
    filter: RecordFilter = RecordFilter()
    limit: int | None = None
    order: str = "created"


@dataclass(frozen=True, slots=True)
class CountRecords:
    """Result: int, number of records matching ``filter``."""

    namespace: str
    filter: RecordFilter = RecordFilter()


@dataclass(frozen=True, slots=True)
class LexicalSearch:
    """BM25 over index terms (see :mod:`retain.text.lexical`); any term may match (OR).

    Result: list of :class:`ScoredId`, best first, score = BM25 (higher = more relevant).
    """

    namespace: str
    terms: tuple[str, ...]
    filter: RecordFilter = RecordFilter()
    limit: int = 50


@dataclass(frozen=True, slots=True)
class VectorSearch:
    """Cosine similarity against stored embeddings (exact scan unless the backend has an index).

    Result: list of :class:`ScoredId`, best first, score = cosine in [-1, 1] (higher = closer).
    """

    namespace: str
    vector: npt.NDArray[np.float32]
    filter: RecordFilter = RecordFilter()
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
    filter: RecordFilter = RecordFilter()
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
    """Append one audit entry (hash-chained). Result: int, the entry's sequence number."""

    entry: AuditEntry


@dataclass(frozen=True, slots=True)
class ReadAudit:
    """Result: list of dicts (seq, ts, namespace, op, record_id, actor, reason, policy, details,
    prev_hash, hash) in sequence order; ``namespace`` None = every namespace."""

    namespace: str | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class ReadAuditRaw:
    """Result: :class:`RawAudit`, the whole audit log (every namespace) as stored, with the backend's
    sequence counter and the state of its append-only guards, read in one transaction so that they
    agree. Answered by backends with ``supports_raw_audit`` (verification reads a corrupted row
    instead of failing on it); an error reading the table itself is the backend's own (for SQLite,
    ``sqlite3.DatabaseError``)."""


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


Op = (
    PutRecords
    | GetRecords
    | FindByHash
    | RequireCurrent
    | RequireUnchanged
    | RequireUnique
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
    | PutEdges
    | ListEdges
)


class Store(ABC):
    """Storage contract. Subclasses implement :meth:`batch`, :meth:`setup`, the meta accessors
    and :meth:`close`; the typed helpers below are shared by every backend.

    Capability flags:
        supports_vector: VectorSearch is answered.
        supports_lexical: LexicalSearch is answered.
        supports_ann: vector search uses an approximate index (results may miss exact neighbours).
        supports_raw_audit: ReadAuditRaw is answered (the audit log as stored, with the backend's
            sequence counter and append-only guards), so verification reads what :meth:`audit_log`
            would fail to parse.
    """

    supports_vector: bool = True
    supports_lexical: bool = True
    supports_ann: bool = False
    supports_raw_audit: bool = False

    @abstractmethod
    def setup(self) -> None:
        """Create or migrate the schema (explicit, idempotent, versioned migrations)."""

    @abstractmethod
    def batch(self, ops: Sequence[Op]) -> list[Any]:
        """Run ``ops`` in one transaction; return one result per op. All or nothing."""

    @abstractmethod
    def get_meta(self, key: str) -> str | None:
        """Read a store-level setting (e.g. "encoder_name"), or None."""

    @abstractmethod
    def set_meta(self, key: str, value: str) -> None:
        """Write a store-level setting."""

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""

    @property
    @abstractmethod
    def location(self) -> str:
        """Human-readable location (file path, ":memory:", DSN without password)."""

    # --- helpers built on batch -------------------------------------------------------------

    def put(
        self,
        records: Sequence[MemoryRecord],
        audit: Sequence[AuditEntry] = (),
        edges: Sequence[Edge] = (),
        *,
        require: Sequence[RequireUnique | RequireUnchanged | RequireCurrent] = (),
    ) -> None:
        """Write records, then their edges (if any), and the audit entries atomically.

        ``require`` guards are checked first, in the same transaction: one that fails raises its
        error (:class:`RequireUnique`: DuplicateContent; :class:`RequireUnchanged`: WriteConflict;
        :class:`RequireCurrent`: InvalidInput or RecordNotFound) and nothing is written.
        """
        ops: list[Op] = [*require, PutRecords(tuple(records))]
        if edges:
            ops.append(PutEdges(tuple(edges)))
        self.batch([*ops, *(AppendAudit(a) for a in audit)])

    def edges(
        self,
        namespace: str,
        ids: Sequence[str] | None = None,
        *,
        types: Sequence[EdgeType] | None = None,
        direction: str = "both",
    ) -> list[Edge]:
        """Edges of ``namespace``; see :class:`ListEdges`."""
        op = ListEdges(
            namespace, None if ids is None else tuple(ids), None if types is None else tuple(types), direction
        )
        result: list[Edge] = self.batch([op])[0]
        return result

    def get(self, namespace: str, ids: Sequence[str]) -> list[MemoryRecord]:
        """Records by id within ``namespace`` (missing ids skipped), in the order asked."""
        result: list[MemoryRecord] = self.batch([GetRecords(namespace, tuple(ids))])[0]
        return result

    def find_by_hash(self, namespace: str, digest: str) -> MemoryRecord | None:
        """The oldest current record with that content hash, or None."""
        result: MemoryRecord | None = self.batch([FindByHash(namespace, digest)])[0]
        return result

    def list_records(
        self,
        namespace: str,
        filter: RecordFilter = RecordFilter(),
        *,
        limit: int | None = None,
        order: str = "created",
    ) -> list[MemoryRecord]:
        """Records matching ``filter`` in ``order``."""
        result: list[MemoryRecord] = self.batch([ListRecords(namespace, filter, limit, order)])[0]
        return result

    def list_ids(
        self,
        namespace: str,
        filter: RecordFilter = RecordFilter(),
        *,
        limit: int | None = None,
        order: str = "created",
    ) -> list[str]:
        """Ids of the records matching ``filter`` in ``order``; see :class:`ListIds`."""
        result: list[str] = self.batch([ListIds(namespace, filter, limit, order)])[0]
        return result

    def count(self, namespace: str, filter: RecordFilter = RecordFilter()) -> int:
        """Number of records matching ``filter``."""
        return int(self.batch([CountRecords(namespace, filter)])[0])

    def search_lexical(
        self, namespace: str, terms: Sequence[str], filter: RecordFilter = RecordFilter(), limit: int = 50
    ) -> list[ScoredId]:
        """BM25 search; see :class:`LexicalSearch`."""
        if not terms:
            return []
        result: list[ScoredId] = self.batch([LexicalSearch(namespace, tuple(terms), filter, limit)])[0]
        return result

    def search_vector(
        self,
        namespace: str,
        vector: npt.NDArray[np.float32],
        filter: RecordFilter = RecordFilter(),
        limit: int = 50,
    ) -> list[ScoredId]:
        """Cosine search; see :class:`VectorSearch`."""
        result: list[ScoredId] = self.batch([VectorSearch(namespace, vector, filter, limit)])[0]
        return result

    def search_vectors(
        self,
        namespace: str,
        vectors: npt.NDArray[np.float32],
        filter: RecordFilter = RecordFilter(),
        limit: int = 50,
    ) -> list[list[ScoredId]]:
        """Cosine search for each row of ``vectors`` ((p, d) float32); see :class:`MultiVectorSearch`.

        Raises:
            InvalidInput: ``vectors`` is not 2-d.
        """
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2:
            raise InvalidInput(f"vectors: expected a (p, d) matrix, got shape {matrix.shape}")
        if matrix.shape[0] == 0:
            return []
        result: list[list[ScoredId]] = self.batch([MultiVectorSearch(namespace, matrix, filter, limit)])[0]
        return result

    def delete(
        self,
        namespace: str,
        ids: Sequence[str],
        audit: Sequence[AuditEntry] = (),
        *,
        require: Sequence[RequireUnchanged | RequireCurrent] = (),
    ) -> int:
        """Purge records (and every edge touching them) and append audit entries atomically;
        returns the number purged. ``require`` guards are checked first, in the same transaction, as
        in :meth:`put` (one that fails raises its error and nothing is purged)."""
        ops: list[Op] = [*require, DeleteRecords(namespace, tuple(ids)), *(AppendAudit(a) for a in audit)]
        return int(self.batch(ops)[len(require)])

    def delete_namespace(self, namespace: str, audit: Sequence[AuditEntry] = ()) -> int:
        """Purge a namespace and append audit entries atomically; returns the number purged."""
        return int(self.batch([DeleteNamespace(namespace), *(AppendAudit(a) for a in audit)])[0])

    def namespaces(self) -> list[str]:
        """Namespaces holding at least one record."""
        result: list[str] = self.batch([ListNamespaces()])[0]
        return result

    def audit_log(self, namespace: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Audit entries in order; see :class:`ReadAudit`."""
        result: list[dict[str, Any]] = self.batch([ReadAudit(namespace, limit)])[0]
        return result

    def provenance(self, id: str, namespace: str | None = None) -> dict[str, Any] | None:
        """A stored context provenance; see :class:`GetProvenance`."""
        result: dict[str, Any] | None = self.batch([GetProvenance(id, namespace)])[0]
        return result

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
