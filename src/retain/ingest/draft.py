"""The write path's drafting: how one new text becomes records, and what those records do to the
records already stored.

:func:`draft` validates one :class:`NewMemory` (the input of ``Memory.add_many``) and turns it into records (typed,
dated, split at sentence ends by :func:`split_text` when long); :func:`draft_update` does the same
for a new version of a record. :func:`look_up_duplicates` finds the drafts already stored (dedupe);
:func:`merge_paraphrases` and :func:`supersede` decide which stored records the new ones merge into or
supersede (the relations come from :mod:`retain.ingest.conflict`; the trust rules are applied here);
:func:`score_utility` sets the importance EMBER's utility model predicts for each new record. Nothing
here writes: :mod:`retain.ingest.write` stores the result in one transaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput, TextTooLong
from retain.record import MemoryRecord, MemoryType, Tier, caller_time, new_id, parse_type, validate_actor
from retain.retention.budget import is_mandatory
from retain.retention.expiry import check_expiry_metadata
from retain.safety.canary import is_canary
from retain.state.agent import AgentState
from retain.state.candidates import PHASE_KEY
from retain.store import FindByHash, RecordFilter, RequireUnchanged, RequireUnique, Store
from retain.text.directives import DIRECTIVE_KEY, standing_directive
from retain.text.temporal import time_refs_metadata

if TYPE_CHECKING:
    from retain.config import MemoryConfig
    from retain.ingest.conflict import ConflictPolicy
    from retain.retention.utility import UtilityModel

__all__ = [
    "RESERVED_METADATA",
    "UPDATABLE_FIELDS",
    "NewMemory",
    "check_actor_name",
    "check_metadata",
    "check_text",
    "coerce_item",
    "draft",
    "draft_update",
    "look_up_duplicates",
    "merge_paraphrases",
    "nearest_held",
    "predecessor",
    "score_utility",
    "split_text",
]

RESERVED_METADATA = frozenset({"split_group", "part", "parts"})
"""Metadata keys only split texts carry (set by :func:`draft`); a caller's metadata may not hold them."""
UPDATABLE_FIELDS = frozenset(
    {"type", "role", "importance", "priority", "pinned", "confidence", "metadata", "event_time"}
)
"""The fields :meth:`~retain.Memory.update` may change; the others are copied from the old version."""


@dataclass(frozen=True, slots=True)
class NewMemory:
    """Input to :meth:`~retain.Memory.add_many`; the fields mirror the keyword arguments of
    :meth:`~retain.Memory.add`."""

    content: str
    type: MemoryType | str | None = None
    role: str = "user"
    source: str | None = None
    event_time: datetime | str | None = None
    seq: int | None = None
    segment: str | None = None
    priority: int = 0
    importance: float | None = None
    pinned: bool = False
    confidence: float = 1.0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    state: AgentState | Mapping[str, Any] | None = None
    derived_from: Sequence[str] = ()


_NEW_MEMORY_FIELDS = frozenset(f.name for f in fields(NewMemory))
"""The keys a mapping item of :meth:`~retain.Memory.add_many` may have."""


def coerce_item(item: NewMemory | Mapping[str, Any], index: int) -> NewMemory:
    """``item`` as a :class:`NewMemory` (a mapping holds its fields).

    Raises:
        InvalidInput: neither a NewMemory nor a mapping, unknown fields, or no ``content``; the
            message starts with ``item {index}: ``.
    """
    if isinstance(item, NewMemory):
        return item
    if not isinstance(item, Mapping):
        raise InvalidInput(f"item {index}: expected NewMemory or mapping, got {type(item).__name__}")
    unknown = sorted(str(key) for key in item if key not in _NEW_MEMORY_FIELDS)
    if unknown:
        raise InvalidInput(f"item {index}: unknown field(s) {unknown}; known: {sorted(_NEW_MEMORY_FIELDS)}")
    if "content" not in item:
        raise InvalidInput(f"item {index}: 'content' is required")
    return NewMemory(**item)


def check_actor_name(actor: object) -> str:
    """``actor`` in its canonical form (:func:`retain.record.validate_actor`).

    Raises:
        InvalidInput: not a clean non-empty string (see :func:`~retain.record.normalise_identifier`).
    """
    return validate_actor(actor)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？\n])\s*")


# --- drafting ------------------------------------------------------------------------------


def check_metadata(metadata: object) -> dict[str, Any]:
    """``metadata`` as a plain dict when it is a mapping with string keys, JSON-serialisable
    without NaN / inf, valid Unicode, without the keys reserved for split texts, and with an expiry
    (``metadata["expires_at"]``) only as :mod:`retain.retention.expiry` writes it.

    Raises:
        InvalidInput: otherwise, naming the problem.
    """
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata: must be a mapping (or None), got {type(metadata).__name__}")
    if not all(isinstance(key, str) for key in metadata):
        raise InvalidInput("metadata: keys must be strings")
    reserved = RESERVED_METADATA & set(metadata)
    if reserved:
        raise InvalidInput(f"metadata: keys {sorted(reserved)} are reserved for split texts")
    check_expiry_metadata(metadata)
    try:
        json.dumps(dict(metadata), allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidInput(f"metadata: must be JSON-serialisable without NaN/inf ({type(exc).__name__})") from exc
    return dict(metadata)


def check_text(text: str, name: str) -> None:
    """Refuse text that cannot be stored as UTF-8 (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{name}: not valid Unicode text (lone surrogate at index {exc.start})") from exc


def split_text(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, at sentence ends where possible,
    else at whitespace, else hard. ``"".join(pieces) == text`` always (nothing lost); pieces that
    are whitespace only are merged into their neighbour."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = max((m.end() for m in _SENTENCE_END.finditer(window) if 0 < m.end() < limit), default=0)
        if cut < limit // 2:
            space = window.rfind(" ")
            cut = space + 1 if space > limit // 2 else limit
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    merged: list[str] = []
    for piece in pieces:  # a whitespace-only piece joins its predecessor (or the next piece)
        if merged and (not piece.strip() or not merged[-1].strip()):
            merged[-1] += piece
        else:
            merged.append(piece)
    return merged


def draft(item: NewMemory, namespace: str, config: MemoryConfig) -> list[MemoryRecord]:
    """The records of one new memory of ``namespace``: its content in one record, or split at sentence
    ends into linked parts (``metadata["split_group"]``, ``part``, ``parts``) when longer than
    ``config.max_record_chars`` characters; not embedded, importance 0.5 unless given.

    Raises:
        InvalidInput: a bad field, named in the message.
        TextTooLong: content over ``config.max_text_chars`` (or over ``max_record_chars`` without
            ``split_long``).
    """
    content = item.content
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content: required, a non-empty string (whitespace only is refused)")
    check_text(content, "content")
    if not isinstance(item.role, str) or not item.role:
        raise InvalidInput(f"role: must be a non-empty string, got {item.role!r}")
    check_text(item.role, "role")
    for name in ("source", "segment"):
        value = getattr(item, name)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{name}: must be a string or None, got {type(value).__name__}")
        if value is not None:
            check_text(value, name)
    for name in ("seq", "priority"):
        value = getattr(item, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**62):
            raise InvalidInput(f"{name}: must be an int below 2**62 in magnitude, got {value!r}")
    if not isinstance(item.pinned, bool):
        raise InvalidInput(f"pinned: must be a bool, got {item.pinned!r}")
    check_metadata(item.metadata)
    limit = config.max_text_chars
    if len(content) > limit:
        raise TextTooLong(f"content: {len(content):,} characters, limit is {limit:,} (max_text_chars)")
    if len(content) > config.max_record_chars and not config.split_long:
        raise TextTooLong(
            f"content: {len(content):,} characters, limit is {config.max_record_chars:,} "
            "(max_record_chars; enable split_long to store it as linked parts)"
        )
    mtype = _memory_type(content, item.role, config) if item.type is None else parse_type(item.type)
    if item.state is not None:
        phase = AgentState.from_dict(item.state).phase
        if phase:
            item = replace(item, metadata={**item.metadata, PHASE_KEY: phase})
    if item.role.strip().lower() == "user" and DIRECTIVE_KEY not in item.metadata:
        kind = standing_directive(content)  # an instruction or preference in force: carried by context()
        if kind:
            item = replace(item, metadata={**item.metadata, DIRECTIVE_KEY: kind})
    pieces = split_text(content, config.max_record_chars)
    event_time = caller_time(item.event_time, field_name="event_time", naive_zone=config.naive_timezone)
    group = new_id()
    records = []
    for part, piece in enumerate(pieces):
        meta = dict(item.metadata)
        if len(pieces) > 1:
            meta.update(split_group=group, part=part, parts=len(pieces))
        refs = time_refs_metadata(piece, event_time) if config.resolve_times else []
        if refs and "time_refs" not in meta:
            meta["time_refs"] = refs
        records.append(
            MemoryRecord(
                id=group if part == 0 else new_id(),
                namespace=namespace,
                content=piece,
                type=mtype,
                role=item.role,
                source=item.source,
                event_time=event_time,
                seq=item.seq,
                segment=item.segment,
                priority=item.priority,
                importance=0.5 if item.importance is None else item.importance,
                pinned=item.pinned,
                tier=Tier.CORE if item.pinned or mtype is MemoryType.HARD_CONSTRAINT else Tier.DYNAMIC,
                confidence=item.confidence,
                metadata=meta,
            )
        )
    return records


def _memory_type(content: str, role: str, config: MemoryConfig) -> MemoryType:
    if not config.classify:
        return MemoryType.FACT
    from retain.text.classify import classify

    return classify(content, role)


def draft_update(old: MemoryRecord, content: str, changes: Mapping[str, Any], config: MemoryConfig) -> MemoryRecord:
    """The new version of ``old`` with ``content`` and the field ``changes`` (names from
    :data:`UPDATABLE_FIELDS`; the others are copied from ``old``); linked to ``old``, not embedded.
    With ``config.resolve_times`` and no new metadata, its time expressions are those of ``content``.

    Raises:
        InvalidInput: an unknown field, or empty content.
        TextTooLong: content over ``config.max_record_chars`` (an update is never split).
    """
    unknown = set(changes) - UPDATABLE_FIELDS
    if unknown:
        raise InvalidInput(f"update: unknown fields {sorted(unknown)}; allowed: {sorted(UPDATABLE_FIELDS)}")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput("content: required, a non-empty string (whitespace only is refused)")
    check_text(content, "content")
    if len(content) > config.max_record_chars:
        raise TextTooLong(f"content: {len(content):,} characters, limit for an update is {config.max_record_chars:,}")
    changes = {key: value for key, value in changes.items() if value is not None}  # None = not given, as in add
    if "event_time" in changes:
        changes["event_time"] = caller_time(
            changes["event_time"], field_name="event_time", naive_zone=config.naive_timezone
        )
    if "metadata" in changes:
        changes["metadata"] = check_metadata(changes["metadata"])
    if "role" in changes and (not isinstance(changes["role"], str) or not changes["role"].strip()):
        raise InvalidInput(f"role: must be a non-empty string, got {type(changes['role']).__name__}")
    if "role" in changes:
        check_text(changes["role"], "role")
    for name in ("priority",):
        value = changes.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= 2**62:
            raise InvalidInput(f"{name}: must be an int below 2**62 in magnitude, got {value!r}")
    if not isinstance(changes.get("pinned", False), bool):
        raise InvalidInput(f"pinned: must be a bool, got {changes['pinned']!r}")
    pinned = changes.get("pinned", old.pinned)
    new_type = parse_type(changes.get("type", old.type))
    new = MemoryRecord(
        id=new_id(),
        namespace=old.namespace,
        content=content,
        type=new_type,
        role=changes.get("role", old.role),
        source=old.source,
        event_time=changes.get("event_time", old.event_time),
        seq=old.seq,
        segment=old.segment,
        priority=changes.get("priority", old.priority),
        importance=changes.get("importance", old.importance),
        pinned=pinned,
        tier=Tier.CORE if pinned or new_type is MemoryType.HARD_CONSTRAINT else Tier.DYNAMIC,
        confidence=changes.get("confidence", old.confidence),
        supersedes=old.id,
        metadata=changes.get("metadata", old.metadata),
    )
    if config.resolve_times and "metadata" not in changes:  # the new text's own time expressions
        meta = {key: value for key, value in new.metadata.items() if key != "time_refs"}
        refs = time_refs_metadata(content, new.event_time)
        new = new.evolve(metadata=meta | {"time_refs": refs} if refs else meta)
    return new


# --- what the new records do to the stored ones ---------------------------------------------


def look_up_duplicates(
    store: Store, namespace: str, drafts: Sequence[list[MemoryRecord]], *, dedupe: bool
) -> tuple[list[str], list[MemoryRecord], list[MemoryRecord], dict[str, RequireUnique], list[RequireUnchanged]]:
    """Which ``drafts`` (the records of each new memory, from :func:`draft`) are already current in
    ``namespace``: with ``dedupe``, a one-record draft whose content, role, segment and seq a current
    record (or an earlier draft) has is not new.

    Returns (one id per draft: the existing record's, else the draft's first record's; the records
    to write; archived records said again, moved back to a hot tier; the
    :class:`~retain.store.RequireUnique` guard of each new deduplicated record id, and the
    :class:`~retain.store.RequireUnchanged` guard of each existing record found, current and in
    the tier it was found in: both re-check the look-up in the write transaction, so a record
    deleted or superseded meanwhile is neither written back from a stale copy nor handed out).
    """
    ids: list[str] = []
    fresh: list[MemoryRecord] = []
    seen: dict[tuple[str, str | None, str | None, int | None], str] = {}  # the look-up's fields, compared as such
    guards: dict[str, RequireUnique] = {}  # the look-up each new record passed, re-checked as it is written
    held: dict[str, RequireUnchanged] = {}  # the existing records the look-up found, likewise
    restored: list[MemoryRecord] = []
    for parts in drafts:
        head = parts[0]
        key = (head.content_hash, head.role, head.segment, head.seq)
        if dedupe and len(parts) == 1:
            if key in seen:
                ids.append(seen[key])
                continue
            existing = store.batch(
                [
                    FindByHash(
                        namespace,
                        head.content_hash,
                        in_context=True,
                        role=head.role,
                        segment=head.segment,
                        seq=head.seq,
                    )
                ]
            )[0]
            if existing is not None:
                ids.append(existing.id)
                seen[key] = existing.id
                held[existing.id] = RequireUnchanged(namespace, existing.id, existing.tier)
                if existing.tier is Tier.ARCHIVE:  # said again: it matters again, back to hot
                    tier = Tier.CORE if is_mandatory(existing) else Tier.DYNAMIC
                    restored.append(existing.evolve(tier=tier))
                continue
            seen[key] = head.id
            guards[head.id] = RequireUnique(namespace, head.content_hash, head.role, head.segment, head.seq)
        ids.append(head.id)
        fresh.extend(parts)
    return ids, fresh, restored, guards, list(held.values())


def merge_paraphrases(
    store: Store, namespace: str, fresh: list[MemoryRecord], policy: ConflictPolicy
) -> tuple[list[MemoryRecord], list[tuple[MemoryRecord, MemoryRecord, str]]]:
    """Split ``fresh`` into records to store and (newcomer, updated existing record, reason)
    merges of paraphrases of current records (split parts are never merged; ``policy`` gives the
    paraphrase threshold, :func:`retain.ingest.conflict.decide`)."""
    from retain.ingest.conflict import Relation, decide

    keep: list[MemoryRecord] = []
    merges: list[tuple[MemoryRecord, MemoryRecord, str]] = []
    merged_into: dict[str, MemoryRecord] = {}
    for rec in fresh:
        if rec.embedding is None or "split_group" in rec.metadata or is_canary(rec):
            keep.append(rec)
            continue
        near = store.search_vector(namespace, rec.embedding, RecordFilter(tiers=None), limit=3)
        found = {r.id: r for r in store.get(namespace, [h.id for h in near]) if not is_canary(r)}
        candidates = [(merged_into.get(h.id, found[h.id]), h.score) for h in near if h.id in found]
        decision = decide(rec, candidates, policy=policy)
        if decision.relation is not Relation.PARAPHRASE or decision.target is None:
            keep.append(rec)
            continue
        old = decision.target
        entry = {
            "source": rec.source,
            "role": rec.role,
            "event_time": None if rec.event_time is None else rec.event_time.isoformat(),
            "content": rec.content,
        }
        merged_into[old.id] = old.evolve(metadata={**old.metadata, "merged": [*old.metadata.get("merged", []), entry]})
        merges.append((rec, old, decision.reason))
    return keep, [(new, merged_into[old.id], reason) for new, old, reason in merges]


def score_utility(
    model: UtilityModel | None,
    store: Store,
    namespace: str,
    records: list[MemoryRecord],
    *,
    explicit: set[str],
    mean_tokens: float | None,
    dim: int,
) -> list[MemoryRecord]:
    """Set ``importance`` = the utility ``model``'s prediction (0..1, higher = more likely needed later)
    on ``records`` whose caller gave none (ids and split groups not in ``explicit``). Each record is
    scored in its causal context (:class:`~retain.retention.utility.UtilityContext`): the record before it in its
    segment, the embeddings of the hot records nearest to it ((<=5, ``dim``) float32) and the hot set's
    ``mean_tokens``. No model: ``records`` unchanged.
    """
    todo = [
        i for i, r in enumerate(records) if r.id not in explicit and r.metadata.get("split_group", r.id) not in explicit
    ]
    if model is None or not todo:
        return records
    from retain.retention.utility import UtilityContext, check_scores

    contexts = []
    previous: MemoryRecord | None = None
    for i in todo:
        rec = records[i]
        if previous is None or previous.seq is None or rec.seq != previous.seq + 1:
            previous = predecessor(store, rec)
        held = nearest_held(store, namespace, rec, dim)
        contexts.append(UtilityContext(held=held, previous=previous, mean_length=mean_tokens))
        previous = rec
    scores = check_scores(model.score([records[i] for i in todo], contexts), getattr(model, "name", "?"), len(todo))
    out = list(records)
    for i, score in zip(todo, scores, strict=True):
        out[i] = records[i].evolve(importance=float(score))
    return out


def predecessor(store: Store, record: MemoryRecord) -> MemoryRecord | None:
    """The record just before ``record`` in its segment (``seq`` - 1, any tier), or None."""
    if record.seq is None or record.seq == 0:
        return None
    flt = RecordFilter(tiers=None, seqs=(record.seq - 1,))
    found = [r for r in store.list_records(record.namespace, flt) if r.segment == record.segment]
    return found[0] if found else None


def nearest_held(
    store: Store, namespace: str, record: MemoryRecord, dim: int, k: int = 5, exclude: str | None = None
) -> npt.NDArray[np.float32]:
    """(<=k, dim) float32 embeddings of the hot records closest to ``record`` (novelty context)."""
    if record.embedding is None:
        return np.zeros((0, dim), dtype=np.float32)
    near = [h for h in store.search_vector(namespace, record.embedding, RecordFilter(), limit=k + 1)]
    ids = [h.id for h in near if h.id != exclude][:k]
    held = [r.embedding for r in store.get(namespace, ids) if r.embedding is not None]
    return np.stack(held).astype(np.float32) if held else np.zeros((0, dim), dtype=np.float32)
