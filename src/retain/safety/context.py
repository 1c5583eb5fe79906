"""Context packing with provenance: what went into a prompt, and what was left out and why.

:func:`pack` (``Memory.context``) fills a token budget for one query, section by section
(:class:`~retain.safety.packing.Filling`):

1. the namespace's current hard constraints (type ``hard_constraint``, hot, not superseded) in the
   order they were stored. All of them when they fit; when they alone exceed the budget they
   degrade instead of failing (:func:`~retain.safety.packing.fit_constraints`): same-slot
   duplicates merged, the rest ranked by relevance to the query and the state, packed best first,
   compressed by the summariser when whole they do not fit, the others reported left out;
2. the working tier (``why="working"``): with a state, first up to ``working`` records written in
   the state's current phase, newest first (the task at hand); then the ``working`` newest current
   records of the namespace, newest first. Acknowledgements and small talk
   (:func:`~retain.safety.packing.is_chatter`) take no slot (reason ``chatter``);
3. then search hits of the hot tier (:meth:`Memory.search` with the state, so state-adaptive; ``k``
   current candidates) best first, the long-term tier;
4. with ``archive`` on (the default, :data:`ARCHIVE_DEFAULT`), when the hot tier left part of the
   budget unused and the namespace has archived (evicted) records, search hits of the archive tier
   (preset :data:`ARCHIVE_PRESET`, with the state) best first in what is left (``why="archive"``):
   the archive answers what the hot tier could not.

Steps 2 to 4 are greedy: an item that does not fit in what is left is skipped (``budget``) and the
next one is tried. :class:`~retain.errors.BudgetInfeasible` is raised only when candidates exist and
not even one of them fits (nothing is stored then).

Each item is one rendered line (:func:`render_line`); the budget counts the tokens of the rendered
lines, counted by the encoder's tokenizer (:meth:`Encoder.count_tokens <retain.encoders.basis.Encoder>`:
WordPiece pieces without special tokens for MiniLM, ``\\w+`` words for ``HashingEncoder``), and the
sum over the included lines never exceeds ``budget_tokens``. The text joins the lines with ``\\n``.

Left-out reasons (:data:`LEFT_OUT_REASONS`): ``budget`` (did not fit), ``superseded`` (an older
version a newer one replaced), ``below_threshold`` (fused score under ``threshold``), ``duplicate``
(same normalised content as an included record), ``merged`` (a hard constraint on the same slot as
a newer one, when constraints exceed the budget), ``compressed`` (a hard constraint packed as its
summary: the rest of its text is out), ``chatter`` (an acknowledgement skipped by the working tier).

The provenance (ids, scores, score breakdowns, sources, token counts, reasons; the query and the
state; never record content or the rendered text) is stored in the store's ``provenance`` table,
with an audit entry ``retrieve`` (ids and scores) in the same transaction. ``Memory.explain(id)``
reads it back. ``Memory.delete_all`` purges the namespace's provenance too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from retain.errors import BudgetInfeasible, InvalidInput, RecordNotFound
from retain.record import MemoryRecord, MemoryType, Tier, new_id, utcnow, validate_namespace
from retain.retrieval.search import SearchRequest, search
from retain.safety.canary import is_canary
from retain.safety.conflicts import list_conflicts, to_confirm_lines
from retain.safety.observe import annotate, observed
from retain.safety.packing import ContextItem, Filling, LeftOut, fit_constraints, is_chatter, render_line, state_text
from retain.safety.redaction import redact_record, redact_value, scrub
from retain.safety.standing import standing_records
from retain.state.agent import AgentState
from retain.state.candidates import PHASE_KEY
from retain.store import HOT_TIERS, AppendAudit, AuditEntry, PutProvenance, RecordFilter, Store
from retain.text.lexical import check_query

if TYPE_CHECKING:
    from retain.core import Core
    from retain.retrieval.fusion import Hit
    from retain.sequence.segments import Summariser

__all__ = [
    "ARCHIVE_DEFAULT",
    "LEFT_OUT_REASONS",
    "Context",
    "ContextItem",
    "LeftOut",
    "Provenance",
    "explain",
    "pack",
    "render_line",
]

LEFT_OUT_REASONS = ("budget", "superseded", "below_threshold", "duplicate", "merged", "compressed", "chatter")


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


def _packed(args: Sequence[Any], kwargs: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    return {
        "provenance_id": ctx.provenance_id,
        "used_tokens": ctx.used_tokens,
        "n_included": len(ctx.items),
        "n_left_out": len(ctx.left_out),
    }


PHASE_LOOKBACK = 200
"""How many of the newest records the working tier searches for the current phase's records."""

ARCHIVE_DEFAULT = True
"""Whether ``context`` searches the archive tier when ``archive`` is None (docs/benchmarks.md,
"Agent loop", gives the figures behind this default)."""

ARCHIVE_PRESET = "dense"
"""The search preset of the archive look-up (step 4). The hot tier's search already ran the full
hybrid pipeline with the state; the archive look-up only fills the room it left, and its BM25 pass
over the (usually much larger) archive cost as much as the whole hot search. The dense channel with
the state scorer keeps the archive's answers (docs/benchmarks.md, "Agent loop": needed recall in
context on dev at capacity 20) at half the cost."""


@observed("context", args=("namespace", "k", "budget_tokens"), result=_packed)
def pack(
    core: Core,
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
    """Pack the prompt context for ``query`` within ``budget_tokens`` (encoder tokenizer tokens
    of the rendered lines): the namespace's current hard constraints first (degraded when they
    alone exceed the budget), then the open conflicts "to confirm" with a clarifying question each
    (:mod:`retain.safety.conflicts`), then the working tier (the ``working`` newest records and, with a
    state, the current phase's newest records; chatter skipped), then state-adaptive search hits
    best first (the long-term tier), then with ``archive`` (default :data:`ARCHIVE_DEFAULT`) hits
    from the archive tier. ``summariser`` compresses a constraint that does not fit whole (default
    the centroid summariser). Returns a :class:`Context` (``text``, ``provenance_id``, included
    items with scores and sources, left-out candidates with the reason); the provenance is stored
    and audited as "retrieve". ``state`` (an :class:`~retain.state.agent.AgentState` or a mapping
    in the scenario format) is stored as given. See the module docstring. Use ``Memory.context``.

    Raises:
        InvalidInput: bad namespace, query not a string or longer than
            :data:`~retain.text.lexical.MAX_QUERY_CHARS` characters, ``budget_tokens`` or ``k`` not an int
            >= 1, ``threshold`` not a finite number, ``state`` not an AgentState nor a
            JSON-serialisable mapping, ``archive`` not a bool or None.
        BudgetInfeasible: candidates exist and not even one fits in ``budget_tokens`` (the message
            gives the smallest need); nothing is stored.
    """
    validate_namespace(namespace)
    check_query(query)
    _check_numbers(budget_tokens, k, working, threshold)
    if archive is not None and not isinstance(archive, bool):
        raise InvalidInput(f"archive: must be a bool or None, got {archive!r}")
    state_doc = _check_state(state)
    mandatory, working_set = _tiers(core.store, namespace, state_doc, working)
    candidates = _candidates(core, query, namespace, state_doc, k, HOT_TIERS)
    standing = [redact_record(r).record for r in standing_records(core, namespace, query)]
    tokens = _token_counts(core, [*mandatory, *standing, *working_set, *(h.record for h in candidates)])
    filled = Filling(budget_tokens, threshold, tokens)
    fit_constraints(
        filled,
        mandatory,
        {h.record.id: h for h in candidates},
        encoder=core.encoder,
        query=query,
        state_text=state_text(state_doc),
        summariser=summariser,
    )
    _to_confirm(core, namespace, filled)
    filled.add_section(standing, "standing")  # the user's instructions and preferences in force
    filled.add_section(working_set, "working", skip_chatter=True)
    filled.add_hits(candidates)
    look = ARCHIVE_DEFAULT if archive is None else archive
    if look and filled.used < budget_tokens and core.store.count(namespace, RecordFilter(tiers=(Tier.ARCHIVE,))):
        archived = _candidates(core, query, namespace, state_doc, k, (Tier.ARCHIVE,), ARCHIVE_PRESET)
        tokens.update(_token_counts(core, [h.record for h in archived if h.record.id not in tokens]))
        filled.add_hits(archived, frozenset(h.record.id for h in archived))
    if not filled.items and any(x.reason in ("budget", "compressed") for x in filled.left):
        smallest = min(x.tokens for x in filled.left if x.tokens is not None)
        raise BudgetInfeasible(
            f"context: not even one of the {len(filled.left)} candidates of namespace {namespace!r} fits "
            f"budget_tokens={budget_tokens} (the smallest needs {smallest} tokens); nothing was packed"
        )
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


def _token_counts(core: Core, records: Sequence[MemoryRecord]) -> dict[str, int]:
    """Record id -> tokens of its rendered line."""
    counts = core.encoder.count_tokens([render_line(r) for r in records]) if records else []
    return dict(zip((r.id for r in records), counts, strict=True))


def _check_numbers(budget_tokens: object, k: object, working: object, threshold: object) -> None:
    if isinstance(working, bool) or not isinstance(working, int) or not 0 <= working < 2**62:
        raise InvalidInput(f"working: must be an int in [0, 2**62), got {working!r}")
    for name, value in (("budget_tokens", budget_tokens), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**62:
            raise InvalidInput(f"{name}: must be an int in [1, 2**62), got {value!r}")
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, int | float) or not math.isfinite(threshold)
    ):
        raise InvalidInput(f"threshold: must be a finite number or None, got {threshold!r}")


def _tiers(
    store: Store, namespace: str, state: Mapping[str, Any] | None, working: int
) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """(the current hard constraints, the working tier redacted as search hits are); no canaries.
    The working tier's newest part holds ``working`` records that are not chatter, and the chatter
    met on the way (reported left out by the packer)."""
    mandatory = [
        r
        for r in store.list_records(
            namespace, RecordFilter(types=(MemoryType.HARD_CONSTRAINT,), tiers=HOT_TIERS), order="created"
        )
        if not is_canary(r)
    ]
    phase = AgentState.from_dict(state).phase if state else None
    depth = max(PHASE_LOOKBACK if phase else 0, CHATTER_LOOKBACK * working)  # one read serves both parts
    listed = store.list_records(namespace, RecordFilter(tiers=HOT_TIERS), limit=depth, order="recent")
    newest = [r for r in listed if not is_canary(r)]
    recent: list[MemoryRecord] = []
    content = 0  # records of ``recent`` that are not chatter
    for rec in newest:
        if content == working:
            break
        recent.append(rec)
        content += not is_chatter(rec)
    in_phase: list[MemoryRecord] = []
    for rec in newest if phase else []:
        if len(in_phase) == working:
            break
        if rec.metadata.get(PHASE_KEY) == phase and not is_chatter(rec):
            in_phase.append(rec)
    working_set = list({r.id: r for r in [*in_phase, *recent]}.values()) if working else []
    return mandatory, [redact_record(r).record for r in working_set]


CHATTER_LOOKBACK = 4
"""The working tier reads up to this many times ``working`` newest records to find ``working`` that are not chatter."""


def _to_confirm(core: Core, namespace: str, filled: Filling) -> None:
    """The "To confirm" section (:func:`retain.safety.conflicts.to_confirm_lines`: open conflicts, each
    with a clarifying question, secrets scrubbed) right after the hard constraints, newest conflict
    first, within :data:`CONFIRM_SHARE` of the budget (and what is left of it); each conflict that does
    not fit is reported left out for the budget (its records may still be packed)."""
    conflicts = list_conflicts(core.store, namespace)[::-1]
    if not conflicts:
        return
    lines = [scrub(line) for line in to_confirm_lines(conflicts)]
    counts = core.encoder.count_tokens(lines)
    room = min(filled.budget - filled.used, int(filled.budget * CONFIRM_SHARE))
    need = counts[0]  # the heading
    taken = 0
    for count in counts[1:]:
        if need + count > room:
            break
        need += count
        taken += 1
    for c in conflicts[taken:]:
        detail = f"to confirm: over the section's {CONFIRM_SHARE:.0%} of the budget"
        filled.left.append(LeftOut(c.new.id, "budget", None, None, 0, detail))
    if taken:
        filled.used += need
        filled.lines += lines[: taken + 1]


CONFIRM_SHARE = 0.2
"""Largest share of ``budget_tokens`` the "To confirm" section may take: open conflicts come second in
the context, and without a cap a namespace with many of them crowds out the records the agent needs
(chosen on ``scenarios/dev``, docs/benchmarks.md)."""


def _candidates(
    core: Core,
    query: str,
    namespace: str,
    state: Mapping[str, Any] | None,
    k: int,
    tiers: tuple[Tier, ...],
    preset: str = "default",
) -> list[Hit]:
    """The search hits of ``tiers`` (search preset ``preset``) best first, history included, until
    ``k`` current ones."""
    hits = (
        search(
            core,
            query,
            namespace=namespace,
            request=SearchRequest(k=2 * k, config=preset, include_superseded=True, state=state or None, tiers=tiers),
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


def _check_state(state: AgentState | Mapping[str, Any] | None) -> dict[str, Any] | None:
    if state is None:
        return None
    if isinstance(state, AgentState):
        state = state.to_dict()
    if not isinstance(state, Mapping):
        raise InvalidInput(
            f"state: must be an AgentState, a mapping (a JSON object) or None, got {type(state).__name__}"
        )
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
