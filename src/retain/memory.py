"""The :class:`Memory` facade: the public entry point of retain.

Every call names its namespace. ``Memory`` checks its arguments, delegates to the function that
does the work over its :class:`~retain.core.Core` (store, encoder, config, models and the hot-set
cache) and returns: the write path is :mod:`retain.ingest.write`, the search path
:mod:`retain.retrieval.search`, and the features live in their packages (integrity, canaries,
context and egress in :mod:`retain.safety`, segments and the timeline in :mod:`retain.sequence`,
the graph in :mod:`retain.retrieval.graph`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Never, NoReturn, TypeVar, overload

from retain.config import DEFAULT_MEMORY_CONFIG, MemoryConfig
from retain.core import Core, reembed
from retain.encoders.basis import Encoder, MiniLMEncoder
from retain.errors import InvalidInput
from retain.facade.access import AccessMixin
from retain.facade.agent import AgentLoopMixin
from retain.facade.audit import AuditMixin
from retain.facade.conflicts import ConflictsMixin
from retain.facade.expiry import ExpiryMixin
from retain.facade.messages import MessagesMixin
from retain.facade.procedures import ProceduresMixin
from retain.ingest import write
from retain.ingest.draft import NewMemory
from retain.record import MemoryRecord, MemoryType, Tier
from retain.retention.budget import Budget
from retain.retention.expiry import expire, with_expiry
from retain.retention.utility import UtilityModel
from retain.retrieval import graph
from retain.retrieval.fusion import Hit, LinearFusion, SearchConfig, SearchOrder
from retain.retrieval.search import SearchRequest, search
from retain.safety import canary, egress, integrity
from retain.safety.canary import CanaryReport
from retain.safety.conflicts import Conflict  # noqa: F401 (the mixins' annotations resolve here)
from retain.safety.context import Context, Provenance, explain, pack
from retain.safety.handoff import Handoff, HandoffFormat
from retain.safety.integrity import ForgetReport, RetentionReport
from retain.sequence import segments, timeline
from retain.sequence.procedures import Procedure, ProcedureTracker  # noqa: F401  (the mixin's signatures)
from retain.sequence.segments import Summariser
from retain.state.agent import AgentState
from retain.state.prefetch import Prefetch  # noqa: F401  (resolves AgentLoopMixin.prefetch in signature checks)
from retain.state.scorer import StateScorer
from retain.store import HOT_TIERS, Edge, EdgeType, RecordFilter, Store
from retain.store.locate import open_location

__all__ = ["Memory"]

_T = TypeVar("_T")


class _FromCore(Generic[_T]):
    """A read-only attribute of :class:`Memory` delegating to its :class:`~retain.core.Core`:
    ``memory.<name>`` is ``get(memory.core)``; it cannot be set or deleted."""

    def __init__(self, get: Callable[[Core], _T], doc: str) -> None:
        self._get = get
        self._name = ""
        self.__doc__ = doc

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> _FromCore[_T]: ...
    @overload
    def __get__(self, obj: Memory, owner: type[Any] | None = None) -> _T: ...
    def __get__(self, obj: Memory | None, owner: type[Any] | None = None) -> _FromCore[_T] | _T:
        return self if obj is None else self._get(obj._core)

    def __set__(self, obj: Memory, value: Never) -> NoReturn:
        raise AttributeError(f"property {self._name!r} of {type(obj).__name__!r} object has no setter")

    def __delete__(self, obj: Memory) -> NoReturn:
        raise AttributeError(f"property {self._name!r} of {type(obj).__name__!r} object has no deleter")


class Memory(AccessMixin, AgentLoopMixin, AuditMixin, ConflictsMixin, ExpiryMixin, MessagesMixin, ProceduresMixin):
    """A memory store for agents.

    Args:
        path: SQLite file path, or ":memory:" (default) for a private in-memory store. The file is
            created when missing; its folder must exist unless ``create_dirs``. A
            ``postgresql://`` URL opens the Postgres backend (the ``postgres`` extra).
        encoder: an :class:`~retain.encoders.basis.Encoder`; default all-MiniLM-L6-v2 (loaded on first use).
        store: an already constructed :class:`~retain.store.Store` (``path`` is then ignored).
        config: limits and switches (:class:`MemoryConfig`).
        fusion: learned fusion model; default the one shipped with the package.
        budget: capacity of each namespace's hot memory (:class:`~retain.retention.budget.Budget`); None =
            unbounded. Records over it move to the archive tier, with an audit entry each.
        utility: EMBER utility model predicting P(needed later), the ``importance`` of new records;
            default the shipped model when the budget policy ranks by utility, else none (0.5).
        state_scorer: the state-adaptive scorer used when a search carries an agent state
            (:class:`~retain.state.scorer.StateScorer`); default the shipped model; False = never state-adaptive.
        create_dirs: create the missing folders of ``path`` (``mkdir -p``); default False.

    Raises:
        InvalidInput: the folder of ``path`` does not exist (without ``create_dirs``) or is a file.
        EncoderMismatch: the store was built with another encoder (name or dimension).
        SchemaError: ``path`` is not an SQLite database, or its schema is newer than this retain.

    Example::

        mem = Memory("agent.db")
        mem.add("The total budget must stay under 5000 EUR.", namespace="trip-42")
        hits = mem.search("how much can we spend?", namespace="trip-42", k=5)
    """

    def __init__(
        self,
        path: str | Path = ":memory:",
        *,
        encoder: Encoder | None = None,
        store: Store | None = None,
        config: MemoryConfig = DEFAULT_MEMORY_CONFIG,
        fusion: LinearFusion | None = None,
        budget: Budget | None = None,
        utility: UtilityModel | None = None,
        state_scorer: StateScorer | bool | None = None,
        create_dirs: bool = False,
    ) -> None:
        chosen = encoder if encoder is not None else MiniLMEncoder()
        opened = store if store is not None else open_location(path, create_dirs=create_dirs)
        self._core = Core(
            opened, chosen, config, budget=budget, utility=utility, fusion=fusion, state_scorer=state_scorer
        )
        try:
            opened.setup()
            self._core.check_encoder()
        except BaseException:
            if store is None:  # ours to close; a caller's store stays open for the caller
                opened.close()
            raise

    @property
    def core(self) -> Core:
        """The :class:`~retain.core.Core` this facade delegates to (for retain's own evaluation code)."""
        return self._core

    store = _FromCore(lambda core: core.store, "The underlying :class:`~retain.store.Store`.")
    encoder = _FromCore(lambda core: core.encoder, "The encoder of every record and query.")
    config = _FromCore(lambda core: core.config, "Limits and switches (:class:`~retain.config.MemoryConfig`).")
    budget = _FromCore(lambda core: core.budget, "Capacity of each namespace's hot memory; None = unbounded.")
    fusion = _FromCore(lambda core: core.fusion, "The learned fusion model (loaded on first use).")
    utility = _FromCore(
        lambda core: core.utility, "The utility model in use (the shipped learned model is loaded on first need)."
    )
    state_scorer = _FromCore(
        lambda core: core.state_scorer,
        "The state-adaptive scorer (the shipped model, loaded on first use; None when disabled "
        "with ``Memory(state_scorer=False)``).",
    )
    state_encoder = _FromCore(
        lambda core: core.state_encoder, "Embeds agent states with this memory's encoder (memoised by text)."
    )

    @classmethod
    def reembed(cls, path: str | Path, encoder: Encoder, *, batch_size: int = 256) -> int:
        """Re-encode every record of the store at ``path`` with ``encoder`` and record it as the
        store's encoder. Returns the number of records re-embedded.

        Raises:
            InvalidInput: no file at ``path`` (nothing is created).
            SchemaError: ``path`` is not an SQLite database, or has a newer schema than this retain.
        """
        return reembed(path, encoder, batch_size=batch_size)

    def close(self) -> None:
        """Close the underlying store."""
        self._core.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writes (retain.ingest.write) -----------------------------------------------------

    def add(
        self,
        content: str,
        *,
        namespace: str,
        type: MemoryType | str | None = None,
        role: str = "user",
        source: str | None = None,
        event_time: datetime | str | None = None,
        seq: int | None = None,
        segment: str | None = None,
        priority: int = 0,
        importance: float | None = None,
        pinned: bool = False,
        confidence: float = 1.0,
        metadata: Mapping[str, Any] | None = None,
        actor: str = "user",
        state: AgentState | Mapping[str, Any] | None = None,
        derived_from: Sequence[str] | None = None,
        ttl: float | None = None,
        expires_at: datetime | str | None = None,
    ) -> str:
        """Store one memory and return its id.

        Texts over ``config.max_record_chars`` characters are split at sentence ends into linked
        parts (the first part's id is returned). Content already current in the namespace (same role,
        segment and ``seq``) is stored once and its id returned (``config.dedupe``; atomic, see
        :meth:`add_many`). ``state`` keeps its phase in ``metadata["phase"]``; ``importance`` (0..1)
        defaults to the utility model's prediction, else 0.5; ``derived_from`` ids get edges. ``ttl``
        (seconds) or ``expires_at`` (UTC) sets an expiry: then the record moves to the archive, audited
        (:mod:`retain.retention.expiry`).

        Raises:
            InvalidInput: empty or whitespace-only content, bad namespace, bad field values, a
                ``derived_from`` id that is not a record of ``namespace`` (nothing is written).
            TextTooLong: content over ``config.max_text_chars`` (or over ``max_record_chars`` with
                splitting off); the message names the limit.
            BudgetInfeasible: the namespace's mandatory records (hard constraints, pinned) would no
                longer fit in the budget; nothing is written.
            Forbidden: ``pinned=True`` from an actor outside ``config.trusted_actors`` (audited;
                nothing is written).
            WriteConflict: other writers kept changing what it read; nothing is written.
        """
        item = NewMemory(
            content=content,
            type=type,
            role=role,
            source=source,
            event_time=event_time,
            seq=seq,
            segment=segment,
            priority=priority,
            importance=importance,
            pinned=pinned,
            confidence=confidence,
            metadata=with_expiry(metadata, ttl, expires_at) or {},
            state=state,
            derived_from=graph.check_derived(derived_from),
        )
        try:
            return self.add_many([item], namespace=namespace, actor=actor)[0]
        except InvalidInput as exc:  # one item: the batch's "item 0: " prefix says nothing
            message = str(exc)
            if not message.startswith("item 0: "):
                raise
            raise exc.__class__(message.removeprefix("item 0: ")) from exc

    def add_many(
        self, items: Iterable[NewMemory | Mapping[str, Any]], *, namespace: str, actor: str = "user"
    ) -> list[str]:
        """Store several memories in one transaction (embedded in batches); one id per item.

        Every item is validated before anything is written: one bad item stores none of them. The
        duplicate check and the records read are guarded in the write transaction, so concurrent
        writers never store a text twice nor write back a stale record
        (:func:`retain.ingest.write.add_many` describes the guards).

        Raises:
            InvalidInput, TextTooLong: as :meth:`add`, naming the index of the bad item.
            WriteConflict: (an InvalidInput) other writers stored texts of this call
                (DuplicateContent) or changed records it found again on each of
                :data:`~retain.store.WRITE_ATTEMPTS` attempts; nothing was written.
        """
        return write.add_many(self._core, items, namespace=namespace, actor=actor)

    def feedback(self, id: str, *, namespace: str, used: bool, actor: str = "agent") -> MemoryRecord:
        """Report whether a retrieved memory was actually used (EMBER's online adaptation): the
        utility model takes one online step, the record is re-scored and, when used, counted and
        touched; audited as "feedback". Returns the updated record. See :func:`retain.ingest.write.feedback`.

        Raises:
            RecordNotFound: no record ``id`` in ``namespace``.
            InvalidInput: ``used`` is not a bool.
            WriteConflict: another writer deleted, superseded or moved the record meanwhile.
        """
        return write.feedback(self._core, id, namespace=namespace, used=used, actor=actor)

    def update(
        self,
        id: str,
        content: str,
        *,
        namespace: str,
        actor: str = "user",
        reason: str = "",
        **fields: Any,
    ) -> str:
        """Write a new version of a memory; the old one is kept as history, marked superseded.

        ``fields`` may override ``type``, ``role``, ``importance``, ``priority``, ``pinned``,
        ``confidence``, ``metadata``, ``event_time``; others are copied from the old version.
        Returns the id of the new version.

        Raises:
            RecordNotFound: no current record ``id`` in ``namespace``.
            InvalidInput: empty content, unknown field, or ``id`` is already superseded.
            BudgetInfeasible: with a budget, the new version is mandatory and does not fit.
            WriteConflict: other writers changed the records read on every attempt; nothing written.
        """
        return write.update(self._core, id, content, namespace=namespace, actor=actor, reason=reason, **fields)

    def delete(self, id: str, *, namespace: str, actor: str = "user", reason: str = "") -> int:
        """Purge a memory, every version of it and every part of a split text, from every table,
        index and cache. The audit log keeps only the fact of deletion (ids, no content). Returns
        the number of records purged; versions added meanwhile are purged too (:func:`retain.ingest.write.delete`).

        Raises:
            RecordNotFound: no record ``id`` in ``namespace``.
            Forbidden: ``actor`` is not trusted and a version is protected (audited; nothing purged).
            WriteConflict: other writers changed the versions on every attempt; nothing purged.
        """
        return write.delete(self._core, id, namespace=namespace, actor=actor, reason=reason)

    def delete_all(self, *, namespace: str, actor: str = "user", reason: str = "") -> int:
        """Purge every memory of ``namespace`` (that namespace only). Returns the number purged.

        Raises:
            Forbidden: ``actor`` is not trusted and the namespace holds protected records (audited;
                nothing purged).
        """
        return write.delete_all(self._core, namespace=namespace, actor=actor, reason=reason)

    # --- integrity (retain.safety.integrity) ----------------------------------------------

    def pin(self, id: str, *, namespace: str, actor: str = "user", reason: str = "") -> MemoryRecord:
        """Pin a current record: core tier, never evicted. See :func:`retain.safety.integrity.set_pinned`."""
        return integrity.set_pinned(self._core, id, namespace=namespace, pinned=True, actor=actor, reason=reason)

    def unpin(self, id: str, *, namespace: str, actor: str = "user", reason: str = "") -> MemoryRecord:
        """Unpin: back to dynamic, subject to the budget. See :func:`retain.safety.integrity.set_pinned`."""
        return integrity.set_pinned(self._core, id, namespace=namespace, pinned=False, actor=actor, reason=reason)

    def forget(
        self, query_or_id: str, *, namespace: str, actor: str = "user", reason: str = "", k: int = 1
    ) -> ForgetReport:
        """Forget a record by id or the ``k`` best hits of a query that share a term with it;
        protected records are skipped for untrusted actors and reported. See
        :func:`retain.safety.integrity.forget`."""
        return integrity.forget(self._core, query_or_id, namespace=namespace, actor=actor, reason=reason, k=k)

    def retention_report(self, namespace: str, **constraints: Any) -> RetentionReport:
        """The exact optimizer's report for ``namespace``. See :func:`retain.safety.integrity.retention_report`."""
        return integrity.retention_report(self._core, namespace, **constraints)

    # --- memory graph (retain.retrieval.graph) --------------------------------------------

    def link(
        self, src: str, dst: str, type: EdgeType | str, *, namespace: str, weight: float = 1.0, actor: str = "user"
    ) -> Edge:
        """Write an explicit edge ``src -> dst`` (audited as "link"). See :func:`retain.retrieval.graph.link`."""
        return graph.link(self._core.store, src, dst, type, namespace=namespace, weight=weight, actor=actor)

    def edges(
        self, id: str, *, namespace: str, types: Sequence[EdgeType | str] | None = None, direction: str = "both"
    ) -> list[Edge]:
        """Edges touching record ``id`` ("out", "in" or "both"). See :func:`retain.retrieval.graph.neighbours`."""
        return graph.neighbours(self._core.store, namespace, id, types=types, direction=direction)

    def propagate_importance(
        self, namespace: str, *, seeds: Mapping[str, float] | None = None, alpha: float = 0.85, actor: str = "system"
    ) -> dict[str, float]:
        """Personalised PageRank from used records (``access_count``, raised by ``feedback``) into
        ``importance``, audited as "importance". See :func:`retain.retrieval.graph.propagate_importance`."""
        return graph.propagate_importance(self._core.store, namespace, seeds=seeds, alpha=alpha, actor=actor)

    # --- reads ----------------------------------------------------------------------------

    def get(self, id: str, *, namespace: str) -> MemoryRecord:
        """The record ``id`` of ``namespace`` (current or superseded), as stored: not redacted
        (``get``, ``history`` and ``records`` are the owner's raw API; search, export and handoff
        redact).

        Raises:
            RecordNotFound: no such record in that namespace.
        """
        return self._core.get(id, namespace=namespace)

    def history(self, id: str, *, namespace: str) -> list[MemoryRecord]:
        """Every version of the memory ``id``, oldest first, as stored (not redacted)."""
        return timeline.history(self._core, id, namespace=namespace)

    def records(
        self, *, namespace: str, include_archive: bool = True, include_superseded: bool = False
    ) -> list[MemoryRecord]:
        """All records of ``namespace`` in insertion order, as stored (not redacted)."""
        expire(self._core, namespace)
        flt = RecordFilter(tiers=None if include_archive else HOT_TIERS, include_superseded=include_superseded)
        return self._core.store.list_records(namespace, flt)

    def timeline(
        self,
        namespace: str,
        query: str | None = None,
        start: datetime | str | None = None,
        end: datetime | str | None = None,
        limit: int | None = None,
        allow_raw: bool = False,
    ) -> list[MemoryRecord]:
        """Current records of ``namespace`` (every tier) in event order; with ``query``, up to
        ``limit`` episodes of that topic; ``start`` / ``end`` keep event times in [start, end) (naive times
        in ``config.naive_timezone``; a plain date is a whole day: ``end`` includes it). Redacted
        copies (secrets and personal data as placeholders, as search returns them) unless ``allow_raw``.
        See :func:`retain.sequence.timeline.timeline`.

        Raises:
            InvalidInput: bad namespace, limit < 1, unparseable times, start >= end, ``allow_raw`` not a bool.
        """
        return timeline.timeline(
            self._core, namespace, query=query, start=start, end=end, limit=limit, allow_raw=allow_raw
        )

    def before(self, record: MemoryRecord | str, *, namespace: str, n: int = 1) -> list[MemoryRecord]:
        """Up to ``n`` records just before ``record`` (a record or an id) in event order, oldest
        first: earlier turns of its session by ``seq``, then earlier sessions by time. [] at the start.

        Raises:
            RecordNotFound: no such record in ``namespace``.
            InvalidInput: n < 1, or the record belongs to another namespace.
        """
        return timeline.walk(self._core, record, namespace=namespace, n=n, step=-1)

    def after(self, record: MemoryRecord | str, *, namespace: str, n: int = 1) -> list[MemoryRecord]:
        """Up to ``n`` records just after ``record`` in event order, oldest first; see :meth:`before`."""
        return timeline.walk(self._core, record, namespace=namespace, n=n, step=1)

    def search(
        self,
        query: str,
        *,
        namespace: str,
        k: int = 10,
        config: SearchConfig | str = "default",
        types: Sequence[MemoryType | str] | None = None,
        tiers: Sequence[Tier | str] | None = None,
        start: datetime | str | None = None,
        end: datetime | str | None = None,
        include_superseded: bool = False,
        where: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        mmr_lambda: float | None = None,
        state: AgentState | Mapping[str, Any] | None = None,
        allow_raw: bool = False,
        time_aware: bool = True,
        now: datetime | str | None = None,
        expand: int = 0,
        window: int = 0,
        order: SearchOrder | str = SearchOrder.RANK,
    ) -> list[Hit]:
        """Hybrid search of one namespace; returns up to ``k`` :class:`~retain.retrieval.fusion.Hit`, best
        first (scores higher = more relevant), or in event order with ``order="time"``. Canary records
        are never returned. Every option is described in :class:`retain.retrieval.search.SearchRequest`.

        Args:
            query: free text, at most :data:`~retain.text.lexical.MAX_QUERY_CHARS` characters; blank = [].
            k: number of hits (>= 1). config: a :class:`SearchConfig` or a preset name. types, tiers,
                start, end, include_superseded: filters (default: hot tiers, current records).
            where: metadata conditions (``{"key": value, "n": {"$gte": 3}}``; :mod:`retain.store.where`).
            threshold, mmr_lambda: override the config's relevance threshold and MMR trade-off.
            state: the agent's task state: state-adaptive ranking (:mod:`retain.state.scorer`).
            allow_raw: records as stored; default False returns redacted copies.
            time_aware, now: boost records dated in a time range the query names (read at ``now``, UTC).
            expand: graph expansion of the top hits; window: neighbouring turns of each hit.
            order: "rank" (best first), "time" (episodes in event order) or "auto".

        Raises:
            InvalidInput: bad namespace; query not a string or over ``MAX_QUERY_CHARS`` characters; k < 1;
                unknown preset, type, tier or order; ``allow_raw`` not a bool; ``expand`` not an int
                >= 0, or ``expand`` with ``order="time"``; a bad ``where`` operator or value.
        """
        # the parameters after ``namespace`` are the fields of SearchRequest, same names, defaults
        # and annotations (tests/test_exported_members.py checks it)
        options = {name: value for name, value in locals().items() if name not in ("self", "query", "namespace")}
        return search(self._core, query, namespace=namespace, request=SearchRequest(**options))

    # --- segments (retain.sequence.segments) ----------------------------------------------

    def summarize(
        self, namespace: str, segment: str, *, summariser: Summariser | None = None, actor: str = "system"
    ) -> MemoryRecord:
        """Store an extractive summary of ``segment`` (an index entry: archive tier, hidden from plain
        search until the segment is compressed) and return it. See :func:`retain.sequence.segments.summarize`.

        Raises:
            InvalidInput: bad namespace or segment, or the segment holds no records.
        """
        return segments.summarize(self._core, namespace, segment, summariser=summariser, actor=actor)

    def compress_segment(
        self, namespace: str, segment: str, *, actor: str = "system", summariser: Summariser | None = None
    ) -> MemoryRecord:
        """Replace ``segment``'s hot turns by its summary record (the turns move to the archive,
        linked to it and audited), so a budget counts the segment as one record. Returns the
        summary. See :func:`retain.sequence.segments.compress`.

        Raises:
            InvalidInput: bad namespace or segment, or no hot turn of the segment may move.
        """
        return segments.compress(self._core, namespace, segment, actor=actor, summariser=summariser)

    # --- context, provenance, canaries (retain.safety.context, retain.safety.canary) ------

    def context(
        self,
        query: str,
        *,
        namespace: str,
        budget_tokens: int,
        state: AgentState | Mapping[str, Any] | None = None,
        k: int = 20,
        threshold: float | None = None,
        actor: str = "agent",
        working: int = 5,
        archive: bool | None = None,
        summariser: Summariser | None = None,
    ) -> Context:
        """Pack the prompt context for ``query`` within ``budget_tokens`` (encoder tokenizer tokens):
        current hard constraints (ranked, merged and compressed when they alone exceed the budget),
        the working tier (chatter skipped), state-adaptive search hits, and with ``archive`` hits
        from the archive tier; what is left out is listed with the reason; the provenance is stored
        and audited as "retrieve". See :func:`retain.safety.context.pack`.

        Raises:
            InvalidInput: bad arguments (named in the message); nothing stored.
            BudgetInfeasible: not even one candidate fits in ``budget_tokens``; nothing stored.
        """
        options = {name: value for name, value in locals().items() if name not in ("self", "query")}
        return pack(self._core, query, **options)

    def explain(self, provenance_id: str, *, namespace: str | None = None) -> Provenance:
        """How the context ``provenance_id`` was packed: records in, their scores and sources, and
        candidates left out and why (:class:`~retain.safety.context.Provenance`).

        Raises:
            RecordNotFound: no such provenance (in ``namespace`` when given).
        """
        return explain(self._core.store, provenance_id, namespace=namespace)

    def add_canary(self, content: str, *, namespace: str, source: str | None = None, actor: str = "user") -> str:
        """Plant a canary record (pinned, marked with its content's sha256, never returned by search)
        and return its id; :meth:`check_canaries` reports whether it is still held unchanged. See
        :mod:`retain.safety.canary`.

        Raises:
            InvalidInput: empty content, or the content is already held in the namespace.
            TextTooLong: over ``config.max_record_chars`` (a canary is never split).
            BudgetInfeasible: with a budget, the mandatory records would no longer fit.
        """
        item, sha = canary.canary_item(self._core.config, self._core.store, content, namespace=namespace, source=source)
        (record_id,) = write.add_many(self._core, [item], namespace=namespace, actor=actor)
        canary.register(self._core.store, namespace, record_id, sha, actor=actor)
        return record_id

    def check_canaries(self, namespace: str | None = None) -> CanaryReport:
        """Every canary (of ``namespace``, or of all namespaces) with its status: held, missing,
        changed or archived (:class:`~retain.safety.canary.CanaryReport`; ``ok`` when all are held)."""
        return canary.check(self._core.store, namespace)

    # --- export / info (retain.safety.egress) ---------------------------------------------

    def export(
        self,
        *,
        namespace: str,
        include_history: bool = True,
        include_archive: bool = True,
        allow_raw: bool = False,
        actor: str = "user",
    ) -> str:
        """The namespace as JSON (UTF-8 kept literal), without embeddings: redacted copies of the
        records unless ``allow_raw`` (trusted actors only); audited. See :func:`retain.safety.egress.export`.

        Raises:
            InvalidInput: bad namespace; ``allow_raw`` not a bool; bad actor.
            Forbidden: ``allow_raw=True`` from an untrusted actor (the refusal is audited).
        """
        flt = RecordFilter(tiers=None if include_archive else HOT_TIERS, include_superseded=include_history)
        return egress.export(self._core, namespace, flt, allow_raw=allow_raw, actor=actor)

    def handoff(
        self, namespace: str, *, fmt: HandoffFormat = "markdown", recent: int | None = 10, actor: str = "user"
    ) -> Handoff:
        """A redacted case summary of ``namespace`` for another agent or a person, audited
        (:func:`retain.safety.egress.handoff`).

        Raises:
            InvalidInput: bad namespace, ``fmt`` not "markdown" or "json", bad ``recent``, bad actor.
        """
        return egress.handoff(self._core.store, namespace, fmt=fmt, recent=recent, actor=actor)

    def info(self) -> dict[str, Any]:
        """Store location, encoder, schema version, and record counts per namespace and tier."""
        return self._core.info()
