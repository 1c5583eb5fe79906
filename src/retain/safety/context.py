"""Context packing with provenance: what went into a prompt, and what was left out and why.

:func:`pack` (``Memory.context``) fills a token budget for one query:

1. the namespace's current hard constraints (type ``hard_constraint``, hot, not superseded) in the
   order they were stored: mandatory, all of them, or :class:`~retain.errors.BudgetInfeasible`;
2. the working tier (``why="working"``): with a state, first up to ``working`` records written in
   the state's current phase, newest first (the task at hand); then the ``working`` newest current
   records of the namespace, newest first;
3. then search hits (:meth:`Memory.search` with the state, so state-adaptive; ``k`` current
   candidates) best first, the long-term tier.

Steps 2 and 3 are greedy: an item that does not fit in what is left is skipped (``budget``) and the
next one is tried.

Each item is one rendered line (:func:`render_line`); the budget counts the tokens of the rendered
lines, counted by the encoder's tokenizer (:meth:`Encoder.count_tokens <retain.encoders.basis.Encoder>`:
WordPiece pieces without special tokens for MiniLM, ``\\w+`` words for ``HashingEncoder``), and the
sum over the included lines never exceeds ``budget_tokens``. The text joins the lines with ``\\n``.

Left-out reasons: ``budget`` (did not fit), ``superseded`` (an older version a newer one replaced),
``below_threshold`` (fused score under ``threshold``), ``duplicate`` (same normalised content as an
included record).

The provenance (ids, scores, score breakdowns, sources, token counts, reasons; the query and the
state; never record content or the rendered text) is stored in the store's ``provenance`` table,
with an audit entry ``retrieve`` (ids and scores) in the same transaction. ``Memory.explain(id)``
reads it back. ``Memory.delete_all`` purges the namespace's provenance too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain.errors import BudgetInfeasible, InvalidInput, RecordNotFound
from retain.record import MemoryRecord, MemoryType, new_id, utcnow, validate_namespace
from retain.retrieval.search import SearchRequest, search
from retain.safety.canary import is_canary
from retain.safety.conflicts import list_conflicts, to_confirm_lines
from retain.safety.observe import annotate, observed
from retain.safety.redaction import redact_record, redact_value, scrub
from retain.state.agent import AgentState
from retain.state.candidates import PHASE_KEY
from retain.store import HOT_TIERS, AppendAudit, AuditEntry, PutProvenance, RecordFilter, Store
from retain.text.lexical import check_query

if TYPE_CHECKING:
    from retain.core import Core
    from retain.retrieval.fusion import Hit

__all__ = [
    "LEFT_OUT_REASONS",
    "Context",
    "ContextItem",
    "LeftOut",
    "Provenance",
    "explain",
    "pack",
    "render_line",
]

LEFT_OUT_REASONS = ("budget", "superseded", "below_threshold", "duplicate")


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One record packed into a context.

    Attributes:
        record_id: the record.
        why: "hard_constraint" (mandatory) or "retrieved" (a search hit that fit).
        tokens: tokens of its rendered line (encoder tokenizer).
        score: fused search score (higher = more relevant), None for a constraint the search did
            not return.
        scores: the search's score breakdown (``bm25``, ``dense``, ``rrf``, ``fused``), {} if none.
        rank: the search rank (1 = best), None if not retrieved.
        source: the record's provenance (e.g. "chat:42"), None if unknown.
        type: the record's memory type.
    """

    record_id: str
    why: str
    tokens: int
    score: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    rank: int | None = None
    source: str | None = None
    type: str = MemoryType.FACT.value


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A candidate not packed: ``reason`` is one of :data:`LEFT_OUT_REASONS`; ``detail`` explains
    (tokens needed and left, the superseding id, the duplicated id)."""

    record_id: str
    reason: str
    score: float | None = None
    rank: int | None = None
    tokens: int | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Provenance:
    """What a packed context was made of, as stored (no record content).

    Attributes:
        id: provenance id (a ULID).
        namespace, query: what was asked; ``state`` the caller's task state (JSON object) or None.
        created_at: when it was packed (UTC).
        k: search candidates considered; ``threshold`` the fused-score floor or None.
        budget_tokens, used_tokens: the budget and the tokens used (encoder tokenizer tokens).
        encoder: name of the encoder that counted the tokens.
        items: included records in context order; ``left_out``: candidates not included.
    """

    id: str
    namespace: str
    created_at: datetime
    query: str
    state: dict[str, Any] | None
    k: int
    threshold: float | None
    budget_tokens: int
    used_tokens: int
    encoder: str
    items: tuple[ContextItem, ...]
    left_out: tuple[LeftOut, ...]

    def body(self) -> dict[str, Any]:
        """The JSON-serialisable body stored in the ``provenance`` table."""
        return {
            "query": self.query,
            "state": self.state,
            "k": self.k,
            "threshold": self.threshold,
            "budget_tokens": self.budget_tokens,
            "used_tokens": self.used_tokens,
            "encoder": self.encoder,
            "items": [_item_dict(i) for i in self.items],
            "left_out": [_left_dict(x) for x in self.left_out],
        }

    def to_dict(self) -> dict[str, Any]:
        """Body plus ``id``, ``namespace`` and ``created_at`` (ISO 8601, UTC)."""
        return {"id": self.id, "namespace": self.namespace, "created_at": self.created_at.isoformat(), **self.body()}

    @classmethod
    def from_stored(cls, row: Mapping[str, Any]) -> Provenance:
        """Rebuild from :class:`~retain.store.GetProvenance`'s result."""
        body = row["body"]
        return cls(
            id=row["id"],
            namespace=row["namespace"],
            created_at=row["created_at"],
            query=body["query"],
            state=body["state"],
            k=body["k"],
            threshold=body["threshold"],
            budget_tokens=body["budget_tokens"],
            used_tokens=body["used_tokens"],
            encoder=body["encoder"],
            items=tuple(ContextItem(**i) for i in body["items"]),
            left_out=tuple(LeftOut(**x) for x in body["left_out"]),
        )


@dataclass(frozen=True, slots=True)
class Context:
    """A packed prompt context: ``text`` (the rendered lines joined by newlines) and its provenance."""

    text: str
    provenance: Provenance

    @property
    def provenance_id(self) -> str:
        """Pass to ``Memory.explain`` / ``retain explain`` to see how this context was made."""
        return self.provenance.id

    @property
    def items(self) -> tuple[ContextItem, ...]:
        """Included records, in context order."""
        return self.provenance.items

    @property
    def left_out(self) -> tuple[LeftOut, ...]:
        """Candidates not included, with the reason."""
        return self.provenance.left_out

    @property
    def used_tokens(self) -> int:
        """Tokens of the included lines (<= budget_tokens)."""
        return self.provenance.used_tokens


def render_line(record: MemoryRecord) -> str:
    """The line a record contributes: ``"[constraint] <content>"`` for a hard constraint, else
    ``"[memory] <content>"``."""
    tag = "constraint" if record.type is MemoryType.HARD_CONSTRAINT else "memory"
    return f"[{tag}] {record.content}"


def _packed(args: Sequence[Any], kwargs: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    return {
        "provenance_id": ctx.provenance_id,
        "used_tokens": ctx.used_tokens,
        "n_included": len(ctx.items),
        "n_left_out": len(ctx.left_out),
    }


PHASE_LOOKBACK = 200
"""How many of the newest records the working tier searches for the current phase's records."""


@observed("context", args=("namespace", "k", "budget_tokens"), result=_packed)
def pack(
    core: Core,
    query: str,
    *,
    namespace: str,
    budget_tokens: int,
    state: Mapping[str, Any] | None = None,
    k: int = 20,
    threshold: float | None = None,
    actor: str = "agent",
    working: int = 5,
) -> Context:
    """Pack the prompt context for ``query`` within ``budget_tokens`` (encoder tokenizer tokens
    of the rendered lines): the namespace's current hard constraints first (mandatory), then the open
    conflicts "to confirm" with a clarifying question each (:mod:`retain.safety.conflicts`), then the
    working tier (the ``working`` newest records and, with a state, the current phase's newest
    records), then state-adaptive search hits best first (the long-term tier). Returns a
    :class:`Context` (``text``, ``provenance_id``, included items with scores and sources, left-out
    candidates with the reason); the provenance is stored and audited as "retrieve". ``state`` (an
    agent state mapping) is stored as given. See the module docstring. Use ``Memory.context``.

    Raises:
        InvalidInput: bad namespace, query not a string or longer than
            :data:`~retain.text.lexical.MAX_QUERY_CHARS` characters, ``budget_tokens`` or ``k`` not an int
            >= 1, ``threshold`` not a finite number, ``state`` not a JSON-serialisable mapping.
        BudgetInfeasible: the hard constraints alone need more than ``budget_tokens`` (the message
            gives both figures); nothing is stored.
    """
    validate_namespace(namespace)
    check_query(query)
    if isinstance(working, bool) or not isinstance(working, int) or working < 0:
        raise InvalidInput(f"working: must be an int >= 0, got {working!r}")
    for name, value in (("budget_tokens", budget_tokens), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInput(f"{name}: must be an int >= 1, got {value!r}")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold)
    ):
        raise InvalidInput(f"threshold: must be a finite number or None, got {threshold!r}")
    state_doc = _check_state(state)
    mandatory, working_set = _tiers(core.store, namespace, state, working)
    candidates = _candidates(core, query, namespace, state, k)
    records = [*mandatory, *working_set, *(h.record for h in candidates)]
    counts = core.encoder.count_tokens([render_line(r) for r in records]) if records else []
    tokens = dict(zip((r.id for r in records), counts, strict=True))
    need = sum(tokens[r.id] for r in mandatory)
    if need > budget_tokens:
        raise BudgetInfeasible(
            f"context: the {len(mandatory)} current hard constraint{'s' if len(mandatory) != 1 else ''} of "
            f"namespace {namespace!r} need{'s' if len(mandatory) == 1 else ''} {need} "
            f"tokens, budget_tokens is {budget_tokens}; nothing was packed"
        )
    filled = _Filling(budget_tokens, threshold, tokens)
    filled.add_mandatory(mandatory, {h.record.id: h for h in candidates})
    filled.add_to_confirm(core, namespace)
    filled.add_working(working_set)
    filled.add_hits(candidates)
    provenance = Provenance(
        id=new_id(),
        namespace=namespace,
        created_at=utcnow(),
        query=scrub(query),  # the provenance table is read back by explain(): no raw secret in it
        state=None if state_doc is None else redact_value(state_doc)[0],
        k=k,
        threshold=None if threshold is None else float(threshold),
        budget_tokens=budget_tokens,
        used_tokens=filled.used,
        encoder=core.encoder.name,
        items=tuple(filled.items),
        left_out=tuple(filled.left),
    )
    _store(core.store, provenance, actor)
    return Context(text="\n".join(filled.lines), provenance=provenance)


def _tiers(
    store: Store, namespace: str, state: Mapping[str, Any] | None, working: int
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """(the current hard constraints, the working tier redacted as search hits are); no canaries."""
    mandatory = [
        r
        for r in store.list_records(
            namespace, RecordFilter(types=(MemoryType.HARD_CONSTRAINT,), tiers=HOT_TIERS), order="created"
        )
        if not is_canary(r)
    ]
    phase = AgentState.from_dict(state).phase if state else None
    depth = PHASE_LOOKBACK if phase and working else working  # one read serves both parts of the tier
    newest = store.list_records(namespace, RecordFilter(tiers=HOT_TIERS), limit=depth, order="recent")
    recent = newest[:working]
    in_phase = [r for r in newest if r.metadata.get(PHASE_KEY) == phase][:working] if phase else []
    working_set = [r for r in {r.id: r for r in [*in_phase, *recent]}.values() if not is_canary(r)]
    return mandatory, [redact_record(r).record for r in working_set]


def _candidates(core: Core, query: str, namespace: str, state: Mapping[str, Any] | None, k: int) -> list[Hit]:
    """The search hits best first, history included, until ``k`` current ones."""
    hits = (
        search(
            core,
            query,
            namespace=namespace,
            request=SearchRequest(k=2 * k, include_superseded=True, state=state or None),
        )
        if query.strip()
        else []
    )
    candidates = []
    current = 0
    for hit in hits:
        if current == k:
            break
        candidates.append(hit)
        current += hit.record.superseded_by is None
    annotate(n_candidates=len(candidates))
    return candidates


class _Filling:
    """The context being filled within ``budget`` tokens: lines, items, left-out candidates, tokens used."""

    def __init__(self, budget: int, threshold: float | None, tokens: Mapping[str, int]) -> None:
        self.budget, self.threshold, self.tokens = budget, threshold, tokens
        self.items: list[ContextItem] = []
        self.lines: list[str] = []
        self.left: list[LeftOut] = []
        self.used = 0
        self.held: dict[str, str] = {}  # content hash -> record id packed
        self.packed: set[str] = set()  # ids of the constraints and working records packed

    def _put(self, rec: MemoryRecord, tier: str, hit: Hit | None) -> None:
        self.used += self.tokens[rec.id]
        self.held[rec.content_hash] = rec.id
        self.lines.append(render_line(rec))
        self.items.append(_item(rec, tier, self.tokens[rec.id], hit))

    def add_mandatory(self, mandatory: Sequence[MemoryRecord], hits: Mapping[str, Hit]) -> None:
        """Every hard constraint (their total is known to fit)."""
        for rec in mandatory:
            self.packed.add(rec.id)
            self._put(rec, "hard_constraint", hits.get(rec.id))

    def add_to_confirm(self, core: Core, namespace: str) -> None:
        """The "To confirm" section (:func:`retain.safety.conflicts.to_confirm_lines`, secrets
        scrubbed) right after the hard constraints, when it fits; else each conflict is left out
        for the budget."""
        conflicts = list_conflicts(core.store, namespace)
        lines = [scrub(line) for line in to_confirm_lines(conflicts)]
        if not lines:
            return
        need = sum(core.encoder.count_tokens(lines))
        if self.used + need > self.budget:
            detail = f"to confirm: needs {need} tokens, {self.budget - self.used} left"
            self.left += [LeftOut(c.new.id, "budget", None, None, 0, detail) for c in conflicts]
            return
        self.used += need
        self.lines += lines

    def add_working(self, working_set: Sequence[MemoryRecord]) -> None:
        """The working tier, newest first, each record that fits."""
        for rec in working_set:
            if rec.id in self.packed:
                continue
            if self.used + self.tokens[rec.id] > self.budget:
                self.left.append(
                    LeftOut(rec.id, "budget", None, None, self.tokens[rec.id], "working tier: did not fit")
                )
                continue
            self.packed.add(rec.id)
            self._put(rec, "working", None)

    def add_hits(self, candidates: Sequence[Hit]) -> None:
        """The search hits best first, each current, new, above the threshold and fitting."""
        left_working = {x.record_id for x in self.left}
        for hit in candidates:
            rec = hit.record
            if rec.id in self.packed or rec.id in left_working:
                continue  # already in (a constraint or the working tier), or already left out as working
            need_here = self.tokens[rec.id]
            if rec.superseded_by is not None:
                reason, detail = "superseded", f"superseded by {rec.superseded_by}"
            elif rec.content_hash in self.held:
                reason, detail = "duplicate", f"same content as {self.held[rec.content_hash]}"
            elif self.threshold is not None and hit.score < self.threshold:
                reason, detail = "below_threshold", f"score below {self.threshold:g}"
            elif self.used + need_here > self.budget:
                reason, detail = "budget", f"needs {need_here} tokens, {self.budget - self.used} left"
            else:
                reason, detail = "", ""
            if reason:
                self.left.append(LeftOut(rec.id, reason, hit.score, hit.rank, need_here, detail))
            else:
                self._put(rec, "retrieved", hit)


def _store(store: Store, provenance: Provenance, actor: str) -> None:
    """Store ``provenance`` with its "retrieve" audit entry (ids and scores) in one transaction."""
    reasons = {r: sum(x.reason == r for x in provenance.left_out) for r in LEFT_OUT_REASONS}
    entry = AuditEntry(
        provenance.namespace,
        "retrieve",
        None,
        actor,
        "context packed",
        details={
            "provenance_id": provenance.id,
            "included": [[i.record_id, None if i.score is None else round(i.score, 6)] for i in provenance.items],
            "left_out": reasons,
            "budget_tokens": provenance.budget_tokens,
            "used_tokens": provenance.used_tokens,
        },
    )
    store.batch(
        [
            PutProvenance(provenance.id, provenance.namespace, provenance.created_at, provenance.body()),
            AppendAudit(entry),
        ]
    )


def explain(store: Store, provenance_id: str, *, namespace: str | None = None) -> Provenance:
    """The stored provenance of a packed context (a set-up :class:`~retain.store.Store`: no encoder
    needed). Use through ``Memory.explain``.

    Raises:
        InvalidInput: ``provenance_id`` not a non-empty string; bad namespace.
        RecordNotFound: no such provenance (in ``namespace``, when given).
    """
    if not isinstance(provenance_id, str) or not provenance_id.strip():
        raise InvalidInput("provenance_id: required, a non-empty string")
    if namespace is not None:
        validate_namespace(namespace)
    row = store.provenance(provenance_id.strip(), namespace)
    if row is None:
        where = "" if namespace is None else f" in namespace {namespace!r}"
        raise RecordNotFound(f"no context provenance {provenance_id!r}{where}")
    return Provenance.from_stored(row)


def _check_state(state: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if state is None:
        return None
    if not isinstance(state, Mapping):
        raise InvalidInput(f"state: must be a mapping (a JSON object) or None, got {type(state).__name__}")
    try:
        doc: dict[str, Any] = json.loads(json.dumps(dict(state), allow_nan=False, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"state: must be JSON-serialisable without NaN/inf ({exc})") from exc
    return doc


def _item_dict(item: ContextItem) -> dict[str, Any]:
    return {
        "record_id": item.record_id,
        "why": item.why,
        "tokens": item.tokens,
        "score": item.score,
        "scores": item.scores,
        "rank": item.rank,
        "source": item.source,
        "type": item.type,
    }


def _left_dict(item: LeftOut) -> dict[str, Any]:
    return {
        "record_id": item.record_id,
        "reason": item.reason,
        "score": item.score,
        "rank": item.rank,
        "tokens": item.tokens,
        "detail": item.detail,
    }


def _item(record: MemoryRecord, why: str, tokens: int, hit: Hit | None) -> ContextItem:
    """The provenance entry of ``record`` packed for reason ``why`` (with its search scores when it was a hit)."""
    return ContextItem(
        record_id=record.id,
        why=why,
        tokens=tokens,
        score=hit.score if hit is not None else None,
        scores=dict(hit.scores) if hit is not None else {},
        rank=hit.rank if hit is not None else None,
        source=record.source,
        type=record.type.value,
    )
