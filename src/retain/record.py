"""The memory record: the typed, validated unit everything else in retain stores and ranks.

A record is immutable (a frozen dataclass). Changes produce a new record through
:func:`dataclasses.replace` (bookkeeping fields such as ``access_count``) or a new version that
supersedes the old one (content changes; see :meth:`retain.Memory.update`).
"""

from __future__ import annotations

import enum
import hashlib
import math
import os
import re
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from dataclasses import fields as fields_of
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput

__all__ = [
    "MAX_NAMESPACE_CHARS",
    "MAX_REASON_CHARS",
    "MAX_TIME",
    "MIN_TIME",
    "MemoryRecord",
    "MemoryType",
    "Tier",
    "caller_time",
    "content_hash",
    "new_id",
    "normalise_identifier",
    "normalize_text",
    "parse_tier",
    "parse_type",
    "read_only_json",
    "search_text",
    "speaker_of",
    "utc",
    "utcnow",
    "validate_actor",
    "validate_id",
    "validate_namespace",
    "validate_reason",
]

MAX_NAMESPACE_CHARS = 256
MIN_TIME = datetime(2, 1, 1, tzinfo=UTC)
"""The earliest time retain stores or searches (UTC): a year inside the calendar's first, so that
relative arithmetic ("a year before", whole days, time zones) never leaves the calendar."""
MAX_TIME = datetime(9998, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
"""The latest time retain stores or searches (UTC); see :data:`MIN_TIME`."""
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _refuse_change(self: object, *args: object, **kwargs: object) -> None:
    raise TypeError(
        "stored record metadata is read-only (records are shared between reads); "
        "change a copy (dict(record.metadata)) and write it with a new record"
    )


_refuse: Any = _refuse_change  # replaces methods of several signatures


class ReadOnlyDict(dict):  # type: ignore[type-arg]
    """A ``dict`` that refuses every change (TypeError); JSON-serialisable and equal to a plain dict.
    Copies (``dict(d)``, ``copy.deepcopy``, pickling) are ordinary dicts / this class again."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyDict, (dict(self),))


class ReadOnlyList(list):  # type: ignore[type-arg]
    """A ``list`` that refuses every change (TypeError); JSON-serialisable and equal to a plain list."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReadOnlyList, (list(self),))


def read_only_json(value: Any) -> Any:
    """``value`` (decoded JSON: dicts, lists, str, numbers, bool, None) with every dict and list,
    at any depth, replaced by a :class:`ReadOnlyDict` / :class:`ReadOnlyList` with equal contents.
    For values a store hands out to several readers (its decoded-record cache)."""
    if isinstance(value, dict):
        return ReadOnlyDict({k: read_only_json(v) for k, v in value.items()})
    if isinstance(value, list):
        return ReadOnlyList(read_only_json(v) for v in value)
    return value


class MemoryType(enum.StrEnum):
    """What kind of evidence a record holds. Drives retention priors and integrity rules."""

    HARD_CONSTRAINT = "hard_constraint"
    SOFT_PREFERENCE = "soft_preference"
    FACT = "fact"
    GOAL = "goal"
    PLAN_STEP = "plan_step"
    OBSERVATION = "observation"
    REASONING = "reasoning"
    ACTION_RESULT = "action_result"
    SENSITIVE = "sensitive"
    CHATTER = "chatter"


class Tier(enum.StrEnum):
    """Where a record lives.

    ``core``: mandatory (valid hard constraints, pinned records); never evicted.
    ``dynamic``: the hot memory, counted against the budget and searched by default.
    ``archive``: kept and searchable on request, never counted in the budget.
    """

    CORE = "core"
    DYNAMIC = "dynamic"
    ARCHIVE = "archive"


def utcnow() -> datetime:
    """Current time, timezone-aware UTC."""
    return datetime.now(UTC)


def utc(value: datetime | str | None, *, field_name: str = "time") -> datetime | None:
    """Coerce ``value`` to a timezone-aware UTC datetime.

    Accepts an aware datetime (converted to UTC) or an ISO 8601 string with an offset.

    Raises:
        InvalidInput: naive datetimes (ambiguous) or unparseable strings.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"{field_name}: not an ISO 8601 time: {value!r}") from exc
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field_name}: expected datetime or ISO string, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field_name}: naive datetime {value.isoformat()}; give a timezone (UTC)")
    try:
        converted = value.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidInput(f"{field_name}: {value.isoformat()} is outside the years 1 to 9999 in UTC") from exc
    if not MIN_TIME <= converted <= MAX_TIME:
        raise InvalidInput(
            f"{field_name}: {value.isoformat()} is outside {MIN_TIME.isoformat()} .. {MAX_TIME.isoformat()} (UTC)"
        )
    return converted


_PLAIN_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def caller_time(
    value: datetime | date | str | None, *, field_name: str, naive_zone: str = "UTC", day_end: bool = False
) -> datetime | None:
    """A time a caller gave, as aware UTC, under the naive-time policy (``MemoryConfig.naive_timezone``).

    * an aware datetime or an ISO 8601 string with an offset ("Z" included): converted to UTC;
    * a naive datetime or an ISO string without an offset ("2026-03-14T09:30:00", as pasted from a
      log): read as wall-clock time in ``naive_zone`` (an IANA name; a time that falls in a DST gap or
      overlap is read with ``fold=0``, the earlier offset);
    * a plain date (``datetime.date`` or "2026-03-14"): the whole day in ``naive_zone``: its
      midnight, or with ``day_end`` the next midnight (so ``end="2026-03-14"`` includes that day).

    Raises:
        InvalidInput: not a datetime, date or ISO string; unparseable; an unknown zone; outside
            :data:`MIN_TIME` .. :data:`MAX_TIME`.
    """
    if value is None:
        return None
    zone = _zone(naive_zone)
    if isinstance(value, str):
        text = value.strip()
        if _PLAIN_DATE.match(text):
            try:
                value = date.fromisoformat(text)
            except ValueError as exc:
                raise InvalidInput(f"{field_name}: not a date: {value!r}") from exc
        else:
            try:
                value = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError as exc:
                raise InvalidInput(f"{field_name}: not an ISO 8601 time: {value!r}") from exc
    if isinstance(value, date) and not isinstance(value, datetime):
        try:
            start = datetime.combine(value, datetime.min.time())
            value = start + timedelta(days=1) if day_end else start
        except OverflowError as exc:
            raise InvalidInput(f"{field_name}: {value.isoformat()} is outside the calendar") from exc
    if isinstance(value, datetime) and (value.tzinfo is None or value.utcoffset() is None):
        value = value.replace(tzinfo=zone)
    return utc(value, field_name=field_name)


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidInput(f"naive_timezone: unknown time zone {name!r}") from exc


def new_id(now_ms: int | None = None) -> str:
    """A sortable unique id: a ULID (48-bit millisecond time + 80 random bits, Crockford base32).

    Ids created later sort later (to the millisecond); 26 ASCII characters.
    Source: the ULID specification (github.com/ulid/spec).
    """
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def normalize_text(text: str) -> str:
    """NFC-normalise and collapse runs of whitespace; used for duplicate detection only."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def content_hash(text: str) -> str:
    """sha256 hex digest of :func:`normalize_text` (case-sensitive)."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()


def normalise_identifier(value: object, field_name: str, *, limit: int = MAX_NAMESPACE_CHARS) -> str:
    """``value`` as the one canonical form of a caller-supplied identifier (a namespace, an actor):
    NFC-normalised Unicode, so canonically equivalent spellings ("é" composed or decomposed) name
    the same tenant and hash to the same audit bytes.

    Raises:
        InvalidInput: not a ``str`` (None, numbers, bools, bytes and other objects are refused, never
            converted), empty, over ``limit`` characters, not valid Unicode (lone surrogates), with
            leading or trailing whitespace, or holding control, format (zero-width, bidi) or
            line / paragraph separator characters: look-alikes of another identifier are refused, not
            silently merged.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field_name}: must be a non-empty string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{field_name}: required, a non-empty string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field_name}: not valid Unicode text (lone surrogate)") from exc
    value = unicodedata.normalize("NFC", value)
    if len(value) > limit:
        raise InvalidInput(f"{field_name}: {len(value)} characters, limit is {limit}")
    if value != value.strip():
        raise InvalidInput(f"{field_name}: leading or trailing whitespace is not allowed ({value!r})")
    if any(unicodedata.category(ch) in _REFUSED_CATEGORIES for ch in value):
        raise InvalidInput(f"{field_name}: control, format (zero-width, bidi) or separator characters are not allowed")
    return value


_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def validate_namespace(namespace: object) -> str:
    """``namespace`` in its canonical form (:func:`normalise_identifier`): callers store, hash and
    log the returned string, never the argument.

    Raises:
        InvalidInput: not a string, empty, over 256 characters, not valid Unicode (lone
            surrogates), surrounding whitespace, or control / format / separator characters.
    """
    return normalise_identifier(namespace, "namespace")


def validate_id(value: object, field_name: str = "id") -> str:
    """``value`` if it can name a record (or a provenance): a non-empty string of at most 256
    characters, valid Unicode. It is not normalised: ids are compared byte for byte.

    Raises:
        InvalidInput: not a ``str``, empty, too long, or holding lone surrogates or NUL.
    """
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{field_name}: must be a non-empty string, got {type(value).__name__}")
    if len(value) > MAX_NAMESPACE_CHARS or "\x00" in value:
        raise InvalidInput(f"{field_name}: not a record id (over {MAX_NAMESPACE_CHARS} characters, or NUL)")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field_name}: not valid Unicode text (lone surrogate)") from exc
    return value


MAX_REASON_CHARS = 2_000
"""The longest ``reason`` an audited call accepts (characters)."""


def validate_reason(reason: object) -> str:
    """``reason`` (free text an audit entry keeps, redacted) if it is a string of at most
    :data:`MAX_REASON_CHARS` characters, valid Unicode; the empty string is allowed.

    Raises:
        InvalidInput: not a ``str``, too long, or holding lone surrogates.
    """
    if not isinstance(reason, str):
        raise InvalidInput(f"reason: must be a string, got {type(reason).__name__}")
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(f"reason: {len(reason):,} characters, limit is {MAX_REASON_CHARS:,}")
    try:
        reason.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput("reason: not valid Unicode text (lone surrogate)") from exc
    return reason


def validate_actor(actor: object) -> str:
    """``actor`` in its canonical form (:func:`normalise_identifier`), the string the audit log
    stores and hashes.

    Raises:
        InvalidInput: as :func:`validate_namespace`, for the field ``actor``.
    """
    return normalise_identifier(actor, "actor")


_SLOT_SETTERS: dict[type, dict[str, Any]] = {}
"""Per record class, each field's slot setter (:meth:`MemoryRecord.trusted`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """One memory.

    Attributes:
        id: sortable unique id (ULID, 26 chars).
        namespace: tenant / user / agent / session scope; every operation is confined to one.
        content: the text, any language, stored byte for byte.
        type: :class:`MemoryType`.
        role: who produced it ("user", "assistant", a speaker name, "tool", ...).
        source: where it came from, e.g. ``"locomo:conv-26:D1:3"``.
        event_time: when the event happened (UTC) or None when unknown.
        created_at: when the record was written (UTC).
        seq: position in its stream (0-based) or None.
        segment: session / segment id or None.
        priority: caller-set integer priority; higher = keep first.
        importance: in [0, 1]; higher = more important.
        access_count: times returned by a search and marked used.
        last_accessed: UTC time of the last access, or None.
        tier: :class:`Tier`.
        pinned: pinned by the user; never evicted.
        confidence: in [0, 1]; how sure the writer is of the content.
        supersedes: id of the record this one replaces, or None.
        superseded_by: id of the record that replaced this one, or None (None = current).
        token_count: tokens of ``content`` under the store's encoder tokenizer.
        embedding: (dim,) float32, L2-normalised, or None before encoding.
        encoder: name of the encoder that made ``embedding``.
        metadata: JSON-serialisable extra fields (speaker, image caption, split part, ...).
        content_hash: sha256 of the normalised content (duplicate detection).
    """

    id: str
    namespace: str
    content: str
    type: MemoryType = MemoryType.FACT
    role: str = "user"
    source: str | None = None
    event_time: datetime | None = None
    created_at: datetime = field(default_factory=utcnow)
    seq: int | None = None
    segment: str | None = None
    priority: int = 0
    importance: float = 0.5
    access_count: int = 0
    last_accessed: datetime | None = None
    tier: Tier = Tier.DYNAMIC
    pinned: bool = False
    confidence: float = 1.0
    supersedes: str | None = None
    superseded_by: str | None = None
    token_count: int = 0
    embedding: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)
    encoder: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    content_hash: str = ""

    def __post_init__(self) -> None:
        validate_namespace(self.namespace)
        if not isinstance(self.content, str) or not self.content.strip():
            raise InvalidInput("content: required, a non-empty string (whitespace only is refused)")
        if not isinstance(self.id, str) or not self.id:
            raise InvalidInput("id: required, a non-empty string")
        object.__setattr__(self, "type", _coerce_enum(MemoryType, self.type, "type"))
        object.__setattr__(self, "tier", _coerce_enum(Tier, self.tier, "tier"))
        object.__setattr__(self, "event_time", utc(self.event_time, field_name="event_time"))
        object.__setattr__(self, "created_at", utc(self.created_at, field_name="created_at"))
        object.__setattr__(self, "last_accessed", utc(self.last_accessed, field_name="last_accessed"))
        for name in ("importance", "confidence"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
                raise InvalidInput(f"{name}: must be a number in [0, 1], got {value!r}")
        for name in ("priority", "access_count", "token_count"):
            if not isinstance(getattr(self, name), int):
                raise InvalidInput(f"{name}: must be an int")
        if self.access_count < 0 or self.token_count < 0:
            raise InvalidInput("access_count and token_count must be >= 0")
        if self.seq is not None and (not isinstance(self.seq, int) or self.seq < 0):
            raise InvalidInput("seq: must be a non-negative int or None")
        if self.embedding is not None:
            vec = np.asarray(self.embedding, dtype=np.float32)
            if vec.ndim != 1 or not np.all(np.isfinite(vec)):
                raise InvalidInput("embedding: must be a finite 1-d float32 vector")
            vec.setflags(write=False)
            object.__setattr__(self, "embedding", vec)
        if not self.content_hash:
            object.__setattr__(self, "content_hash", content_hash(self.content))
        object.__setattr__(self, "metadata", dict(self.metadata))

    @classmethod
    def trusted(cls, **fields: Any) -> MemoryRecord:
        """Build a record from already-validated fields (e.g. a store row) without re-validating.

        For backends only: every field must be given, with the right types.
        """
        record = object.__new__(cls)
        setters = _SLOT_SETTERS.get(cls)
        if setters is None:  # each field's slot descriptor: setting through it skips the frozen check
            setters = _SLOT_SETTERS[cls] = {f.name: getattr(cls, f.name).__set__ for f in fields_of(cls)}
        for name, value in fields.items():
            setters[name](record, value)
        return record

    @property
    def is_current(self) -> bool:
        """True when no newer record supersedes this one."""
        return self.superseded_by is None

    @property
    def dim(self) -> int | None:
        """Dimension of the embedding, or None."""
        return None if self.embedding is None else int(self.embedding.shape[0])

    def evolve(self, **changes: Any) -> MemoryRecord:
        """A copy with ``changes`` applied (validated again)."""
        return replace(self, **changes)

    def to_dict(self, *, with_embedding: bool = False) -> dict[str, Any]:
        """JSON-ready dict; times as ISO 8601 UTC strings; embedding omitted unless asked."""
        out: dict[str, Any] = {
            "id": self.id,
            "namespace": self.namespace,
            "content": self.content,
            "type": self.type.value,
            "role": self.role,
            "source": self.source,
            "event_time": _iso(self.event_time),
            "created_at": _iso(self.created_at),
            "seq": self.seq,
            "segment": self.segment,
            "priority": self.priority,
            "importance": self.importance,
            "access_count": self.access_count,
            "last_accessed": _iso(self.last_accessed),
            "tier": self.tier.value,
            "pinned": self.pinned,
            "confidence": self.confidence,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "token_count": self.token_count,
            "encoder": self.encoder,
            "dim": self.dim,
            "metadata": dict(self.metadata),
            "content_hash": self.content_hash,
        }
        if with_embedding and self.embedding is not None:
            out["embedding"] = [float(x) for x in self.embedding]
        return out


def parse_type(value: MemoryType | str) -> MemoryType:
    """``value`` as a :class:`MemoryType`.

    Raises:
        InvalidInput: not one of the ten type names.
    """
    result: MemoryType = _coerce_enum(MemoryType, value, "type")
    return result


def parse_tier(value: Tier | str) -> Tier:
    """``value`` as a :class:`Tier`.

    Raises:
        InvalidInput: not core, dynamic or archive.
    """
    result: Tier = _coerce_enum(Tier, value, "tier")
    return result


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _coerce_enum(enum_type: type[enum.StrEnum], value: object, name: str) -> Any:
    try:
        return enum_type(str(value))
    except ValueError as exc:
        allowed = ", ".join(m.value for m in enum_type)
        raise InvalidInput(f"{name}: {value!r} is not one of {allowed}") from exc


def speaker_of(record: MemoryRecord) -> str:
    """The speaker's name: ``metadata["speaker"]`` when set, else the role."""
    speaker = record.metadata.get("speaker")
    return str(speaker) if speaker else record.role


def search_text(record: MemoryRecord) -> str:
    """The text the lexical and dense channels index for ``record``.

    ``"<speaker>: <content>"``, followed by an attached image caption (``metadata["caption"]``)
    when there is one. Prefixing the speaker lets "What did Caroline say about ..." match her turns
    (``docs/benchmarks.md#locomo-retrieval``).
    """
    caption = record.metadata.get("caption")
    text = f"{speaker_of(record)}: {record.content}"
    return f"{text} [image: {caption}]" if caption else text
