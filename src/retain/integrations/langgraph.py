"""``RetainStore``: a LangGraph ``BaseStore`` over a :class:`~retain.memory.Memory` (the ``langgraph``
extra), so a graph's nodes read and write retain through ``store.put`` / ``get`` / ``search`` /
``list_namespaces``.

**Namespaces.** A LangGraph namespace tuple maps to one retain namespace: ``prefix`` (default
``"lg/"``) followed by the labels joined with ``"."`` (LangGraph labels never hold a period), each
label escaped: ``%`` as ``%25`` and control characters as ``%XX``. So ``("users", "alice")`` is
``"lg/users.alice"``. Only retain namespaces under ``prefix`` are LangGraph namespaces; the mapped
name must fit retain's namespace limit (256 characters).

**Items.** Each item is one retain record: its ``content`` is the text indexed for search (the
values at the ``index`` config's ``fields``, else the whole value as JSON; the key alone for
``put(..., index=False)``), at most ``config.max_record_chars`` characters; its metadata holds the
item: ``lg_key`` (the key), ``lg_value`` (the value, a JSON object) and ``lg_created_at`` (ISO 8601
UTC); ``updated_at`` is the record's ``created_at``. The record's ``segment`` is the key, so two keys
with the same text stay two records. A put over an existing key writes a new version
(``Memory.update``: the old one is kept as history, superseded); a put of None purges the key with
all its versions (``Memory.delete``), audited.

**Search.** ``filter`` applies to the value's top-level keys (a dotted key reaches into nested
objects) with ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte`` (and ``$in``), inside the store
query (``where`` of :mod:`retain.store.where`: numbers compare with numbers, strings with strings).
With a ``query``, each namespace under the prefix is searched with ``Memory.search`` (raw records) and
the hits merged by score (higher = more relevant); without, the items are listed by creation time.
The ``index`` config's ``embed`` and ``dims`` are not used: the Memory's encoder embeds.

**TTL** (``supports_ttl = True``). ``put(..., ttl=minutes)`` (or the ``ttl`` config's
``default_ttl``) writes the record with an expiry (``metadata["expires_at"]``, UTC, and
``metadata["lg_ttl"]``, the minutes): from then on ``get``, ``search`` and ``Memory.search`` leave it
out, and retain's expiry sweep moves it to the archive (audited "archive", reason "expired"; never
purged silently). ``get`` and ``search`` with ``refresh_ttl`` (LangGraph's default: the ``ttl``
config's ``refresh_on_read``, else True) push the expiry of each item they return to now + its TTL,
in place (no new version), audited as "refresh_ttl". A put without a TTL over an item with one clears
it. ``sweep_interval_minutes`` is not used: retain sweeps before each add and listing.

**Limits.** The Memory must not supersede or merge across keys: build it with ``MemoryConfig(supersede=False)``
(and ``merge_paraphrases=False``, the default); a budget moves items it evicts to the archive, and
those are no longer returned. Calls are serialised by a lock; ``abatch`` runs ``batch`` on a worker
thread.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from retain.errors import InvalidInput, WriteConflict
from retain.memory import Memory
from retain.record import MemoryRecord, utcnow
from retain.retention.expiry import with_expiry
from retain.store import AppendAudit, AuditEntry, PutRecords, RecordFilter, RequireUnchanged
from retain.store.where import EXPIRES_AT_KEY, parse_where

__all__ = ["DEFAULT_PREFIX", "KEY", "RetainStore", "from_namespace", "to_namespace"]

DEFAULT_PREFIX = "lg/"
"""The retain namespace prefix of every LangGraph namespace."""
KEY, VALUE, CREATED, TTL = "lg_key", "lg_value", "lg_created_at", "lg_ttl"
"""The metadata keys of an item's key, value, creation time and time to live (minutes)."""


def to_namespace(labels: tuple[str, ...], prefix: str = DEFAULT_PREFIX) -> str:
    """The retain namespace of a LangGraph namespace tuple (see the module docstring).

    Raises:
        InvalidInput: an empty tuple, a label that is not a non-empty string or holds a period.
    """
    if not isinstance(labels, tuple) or not labels:
        raise InvalidInput(f"namespace: a non-empty tuple of labels, got {labels!r}")
    for label in labels:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidInput(f"namespace: labels are non-empty strings without a period, got {label!r}")
    return prefix + ".".join(_escape(label) for label in labels)


def from_namespace(namespace: str, prefix: str = DEFAULT_PREFIX) -> tuple[str, ...] | None:
    """The LangGraph namespace tuple of a retain namespace, or None when it is not under ``prefix``."""
    if not namespace.startswith(prefix) or len(namespace) == len(prefix):
        return None
    return tuple(_unescape(label) for label in namespace[len(prefix) :].split("."))


def _escape(label: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch == "%" or ord(ch) < 32 or ord(ch) == 127 else ch for ch in label)


def _unescape(label: str) -> str:
    parts = label.split("%")
    return parts[0] + "".join(chr(int(part[:2], 16)) + part[2:] for part in parts[1:])


class RetainStore(BaseStore):
    """A LangGraph ``BaseStore`` over ``memory`` (see the module docstring for the mapping).

    Args:
        memory: the :class:`~retain.memory.Memory`; built with ``MemoryConfig(supersede=False)``.
        index: LangGraph's index config; only ``fields`` is read (paths into the value whose text is
            indexed; default the whole value).
        prefix: the retain namespace prefix of the store's namespaces.
        actor: the actor of every write (audited).
        ttl: LangGraph's TTL config: ``default_ttl`` (minutes) for puts that give none,
            ``refresh_on_read`` (default True) for reads that do not say.

    Raises:
        InvalidInput: ``memory`` is not a Memory, or supersedes or merges records (which would retire
            one key's item when another key's value reads like a correction of it).
    """

    supports_ttl: bool = True

    def __init__(
        self,
        memory: Memory,
        *,
        index: Mapping[str, Any] | None = None,
        prefix: str = DEFAULT_PREFIX,
        actor: str = "agent",
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(memory, Memory):
            raise InvalidInput(f"memory: a retain Memory, got {type(memory).__name__}")
        if memory.config.supersede or memory.config.merge_paraphrases:
            raise InvalidInput(
                "memory: a LangGraph store needs Memory(config=MemoryConfig(supersede=False)) "
                "(and merge_paraphrases=False): one key's put must never retire another key's item"
            )
        self.memory = memory
        self.prefix = prefix
        self.actor = actor
        self.ttl_config = None if ttl is None else dict(ttl)  # type: ignore[assignment]
        fields = list((index or {}).get("fields") or ["$"])
        self._fields = [(f, tokenize_path(f) if f != "$" else f) for f in fields]
        self._lock = threading.Lock()

    # --- the two primitives --------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: reads (GetOp, SearchOp, ListNamespacesOp) first, in order, then the puts, the
        last put of a (namespace, key) winning, as LangGraph's InMemoryStore does.

        Raises:
            InvalidInput: an unknown op, a bad namespace, a value that is not a JSON object, a bad filter.
        """
        ops = list(ops)
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        with self._lock:
            for op in ops:
                if isinstance(op, GetOp):
                    record = self._current(to_namespace(op.namespace, self.prefix), op.key)
                    if record is not None and op.refresh_ttl:
                        record = self._refresh(record)
                    results.append(None if record is None else self._item(record, op.namespace))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                elif isinstance(op, PutOp):
                    puts[(op.namespace, op.key)] = op
                    results.append(None)
                else:
                    raise InvalidInput(f"op: unknown operation {type(op).__name__}")
            for put in puts.values():
                self._put(put)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    # --- reads ---------------------------------------------------------------------------------

    def _current(self, namespace: str, key: str) -> MemoryRecord | None:
        flt = RecordFilter(where=parse_where({KEY: key}), live_at=utcnow())
        found = self.memory.store.list_records(namespace, flt, limit=1)
        return found[0] if found else None

    def _item(self, record: MemoryRecord, labels: tuple[str, ...]) -> Item:
        meta = record.metadata
        return Item(
            value=dict(meta[VALUE]),
            key=str(meta[KEY]),
            namespace=labels,
            created_at=datetime.fromisoformat(str(meta[CREATED])),
            updated_at=record.created_at,
        )

    def _namespaces(self, prefix: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
        found = []
        for namespace in self.memory.store.namespaces():
            labels = from_namespace(namespace, self.prefix)
            if labels is not None and labels[: len(prefix)] == tuple(prefix):
                found.append((namespace, labels))
        return found

    def _search(self, op: SearchOp) -> list[SearchItem]:
        conditions = {**_conditions(op.filter or {}), KEY: {"$ne": None}}  # items only
        where = parse_where(conditions)
        now = utcnow()
        scored: list[tuple[float | None, MemoryRecord, tuple[str, ...]]] = []
        for namespace, labels in self._namespaces(op.namespace_prefix):
            if op.query:
                hits = self.memory.search(
                    op.query,
                    namespace=namespace,
                    k=max(1, op.offset + op.limit),
                    where=conditions,
                    allow_raw=True,
                )
                scored += [(h.score, h.record, labels) for h in hits]
            else:
                flt = RecordFilter(where=where, live_at=now)
                records = self.memory.store.list_records(namespace, flt)
                scored += [(None, r, labels) for r in records]
        if op.query:
            scored.sort(key=lambda s: -(s[0] or 0.0))
        else:
            scored.sort(key=lambda s: (str(s[1].metadata[CREATED]), s[1].id))
        page = scored[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            page = [(score, self._refresh(record), labels) for score, record, labels in page]
        return [self._search_item(record, labels, score) for score, record, labels in page]

    def _search_item(self, record: MemoryRecord, labels: tuple[str, ...], score: float | None) -> SearchItem:
        meta = record.metadata
        return SearchItem(
            namespace=labels,
            key=str(meta[KEY]),
            value=dict(meta[VALUE]),
            created_at=datetime.fromisoformat(str(meta[CREATED])),
            updated_at=record.created_at,
            score=score,
        )

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = [labels for _, labels in self._namespaces(())]
        for condition in op.match_conditions or ():
            found = [labels for labels in found if _matches(condition, labels)]
        if op.max_depth is not None:
            found = list({labels[: op.max_depth] for labels in found})
        return sorted(found)[op.offset : op.offset + op.limit]

    # --- writes --------------------------------------------------------------------------------

    def _put(self, op: PutOp) -> None:
        namespace = to_namespace(op.namespace, self.prefix)
        if not isinstance(op.key, str) or not op.key:
            raise InvalidInput(f"key: a non-empty string, got {op.key!r}")
        existing = self._current(namespace, op.key)
        if op.value is None:
            if existing is not None:
                self.memory.delete(existing.id, namespace=namespace, actor=self.actor, reason="langgraph delete")
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInput(f"value: a dict, got {type(op.value).__name__}")
        value = dict(op.value)
        content = self._content(op.key, value, op.index)
        created = existing.metadata[CREATED] if existing is not None else utcnow().isoformat()
        metadata: dict[str, Any] = {KEY: op.key, VALUE: value, CREATED: created}
        if op.ttl is not None:
            metadata = {**_expiring(op.ttl), **metadata}
        if existing is None:
            self.memory.add(content, namespace=namespace, segment=op.key, metadata=metadata, actor=self.actor)
        else:
            self.memory.update(existing.id, content, namespace=namespace, actor=self.actor, metadata=metadata)

    def _refresh(self, record: MemoryRecord) -> MemoryRecord:
        """``record`` with its expiry pushed to now + its TTL, written in place and audited; the
        record as read when it has no TTL or another writer changed it meanwhile."""
        minutes = record.metadata.get(TTL)
        if not isinstance(minutes, int | float) or isinstance(minutes, bool):
            return record
        refreshed = record.evolve(metadata={**record.metadata, **_expiring(minutes)})
        entry = AuditEntry(
            record.namespace,
            "refresh_ttl",
            record.id,
            self.actor,
            "langgraph read",
            details={EXPIRES_AT_KEY: refreshed.metadata[EXPIRES_AT_KEY]},
        )
        try:
            self.memory.store.batch(
                [
                    RequireUnchanged(record.namespace, record.id, record.tier, None),
                    PutRecords((refreshed,)),
                    AppendAudit(entry),
                ]
            )
        except WriteConflict:
            return record
        return refreshed

    def _content(self, key: str, value: dict[str, Any], index: Any) -> str:
        """The text indexed for ``value``: the texts at the index fields (``index`` when a list, else
        the store's), the key alone for ``index=False``; cut to ``config.max_record_chars``."""
        if index is False:
            return key
        fields = [(f, tokenize_path(f) if f != "$" else f) for f in index] if isinstance(index, list) else self._fields
        texts: list[str] = []
        for field, path in fields:
            if field == "$":
                texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            else:
                texts += [t for t in get_text_at_path(value, path) if t]
        text = "\n".join(texts).strip() or key
        return text[: self.memory.config.max_record_chars]


def _expiring(minutes: float) -> dict[str, Any]:
    """The metadata of an item expiring ``minutes`` from now (LangGraph's TTL unit).

    Raises:
        InvalidInput: ``minutes`` not a positive finite number (at most about 100 years).
    """
    if isinstance(minutes, bool) or not isinstance(minutes, int | float):
        raise InvalidInput(f"ttl: minutes, a number, got {minutes!r}")
    return {**(with_expiry(None, minutes * 60.0, None) or {}), TTL: minutes}


def _conditions(filter: Mapping[str, Any]) -> dict[str, Any]:
    """A LangGraph filter on the value as retain ``where`` conditions on ``metadata["lg_value"]``:
    nested objects without operators become dotted keys."""
    where: dict[str, Any] = {}

    def walk(path: str, spec: Any) -> None:
        if isinstance(spec, Mapping) and spec and not any(str(k).startswith("$") for k in spec):
            for k, v in spec.items():
                walk(f"{path}.{k}", v)
        else:
            where[path] = spec

    for key, spec in filter.items():
        walk(f"{VALUE}.{key}", spec)
    return where


def _matches(condition: MatchCondition, labels: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(labels) < len(path):
        return False
    if condition.match_type == "prefix":
        part = labels[: len(path)]
    elif condition.match_type == "suffix":
        part = labels[len(labels) - len(path) :]
    else:
        raise InvalidInput(f"match_type: 'prefix' or 'suffix', got {condition.match_type!r}")
    return all(p == "*" or p == label for p, label in zip(path, part, strict=True))
