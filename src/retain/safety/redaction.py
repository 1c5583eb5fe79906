"""Redaction of whole memory records for the outward paths: search results, export and handoff.

:mod:`retain.text.privacy` finds secrets and personal data in one text; this module applies it to a
:class:`~retain.record.MemoryRecord`: every free-text field (``content``, ``role``, ``source``,
``segment``) and every string inside ``metadata`` (merged sources, split-part text, image
captions, ...) is scanned with :func:`retain.text.privacy.detect`, and each finding is replaced by its
typed placeholder (``"[EMAIL]"``, ``"[API_KEY]"``, ...). Detection runs on every record, whatever
its type: a record typed ``fact`` can still hold an e-mail address.

What leaves a redacted copy, and what does not:

- ``metadata["redacted"]`` lists the kinds withheld (sorted, e.g. ``["api_key", "email"]``); a
  record with nothing to withhold is returned as is, without that key.
- ``content_hash`` is the hash of the *redacted* content (a sha256 of a short secret such as a
  card number can be brute-forced, so the hash of the raw text never leaves).
- ``embedding`` is dropped (set to None): an embedding of the raw text can be inverted back into
  much of that text.
- Metadata keys are field names and are kept as they are; only values are scanned.

The store is never changed: redaction works on copies. Texts are cached (LRU, 4,096 entries per
process) so that a record returned by many searches is scanned once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, overload

from retain.errors import InvalidInput
from retain.record import MemoryRecord
from retain.text.privacy import redact

__all__ = [
    "REDACTED_KEY",
    "WITHHELD_REASON",
    "Redaction",
    "redact_record",
    "redact_text",
    "redact_value",
    "scrub",
]

REDACTED_KEY = "redacted"
"""The metadata key of a redacted copy that lists the kinds withheld."""

WITHHELD_REASON = "sensitive: redacted"
"""The reason given for a record whose sensitive spans were replaced by placeholders."""

_CACHE_SIZE = 4096
_TEXT_FIELDS = ("content", "role", "source", "segment")


@dataclass(frozen=True, slots=True)
class Redaction:
    """A record as it may leave the store.

    Attributes:
        record: the redacted copy, or the original record when nothing was found.
        kinds: kinds withheld, sorted and unique (``("api_key", "email")``); empty when none.
        fields: the fields that held them, in record order (``("content", "metadata")``).
    """

    record: MemoryRecord
    kinds: tuple[str, ...]
    fields: tuple[str, ...]

    @property
    def redacted(self) -> bool:
        """True when anything was withheld."""
        return bool(self.kinds)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def redact_text(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with every finding of :func:`retain.text.privacy.detect` replaced by its placeholder.

    Returns:
        ``(redacted_text, kinds)``: kinds withheld, sorted and unique; ``text`` itself and ``()``
        when nothing was found.

    Raises:
        InvalidInput: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"text: expected str, got {type(text).__name__}")
    out, findings = redact(text)
    return out, tuple(sorted({f.kind for f in findings}))


def redact_value(value: Any) -> tuple[Any, set[str]]:
    """Redact every string inside a JSON-like value (str, list, tuple, dict values), recursively.

    Returns:
        ``(value, kinds)``: a redacted copy (lists for lists and tuples; dicts with their string keys
        redacted too, a key that would collide with another after redaction gets ``#2``, ``#3``, ...)
        and the kinds withheld. Numbers, booleans and None are returned as they are.
    """
    if isinstance(value, str):
        text, kinds = redact_text(value)
        return text, set(kinds)
    if isinstance(value, list | tuple):
        items = [redact_value(v) for v in value]
        return [v for v, _ in items], set().union(*(k for _, k in items))
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        found: set[str] = set()
        for key, item in value.items():
            if isinstance(key, str):
                safe, key_kinds = redact_text(key)
                found.update(key_kinds)
                if safe != key:
                    base, n = safe, 1
                    while safe in out or (safe in value and safe != key):
                        n += 1
                        safe = f"{base}#{n}"
                    key = safe
            out[key], item_kinds = redact_value(item)
            found |= item_kinds
        return out, found
    return value, set()


def redact_record(record: MemoryRecord) -> Redaction:
    """The copy of ``record`` that may be shown outside the store (see the module docstring).

    Raises:
        InvalidInput: ``record`` is not a :class:`~retain.record.MemoryRecord`.
    """
    if not isinstance(record, MemoryRecord):
        raise InvalidInput(f"record: expected MemoryRecord, got {type(record).__name__}")
    changes: dict[str, Any] = {}
    kinds: set[str] = set()
    fields: list[str] = []
    for name in _TEXT_FIELDS:
        value = getattr(record, name)
        if value is None:
            continue
        text, found = redact_text(value)
        if found:
            changes[name] = text
            kinds.update(found)
            fields.append(name)
    metadata, found_meta = redact_value(dict(record.metadata))
    if found_meta:
        kinds.update(found_meta)
        fields.append("metadata")
    if not kinds:
        return Redaction(record, (), ())
    withheld = tuple(sorted(kinds))
    copy = record.evolve(
        **changes,
        metadata={**metadata, REDACTED_KEY: list(withheld)},
        embedding=None,
        content_hash="",  # recomputed from the redacted content
    )
    return Redaction(copy, withheld, tuple(fields))


@overload
def scrub(text: str) -> str: ...
@overload
def scrub(text: None) -> None: ...
def scrub(text: str | None) -> str | None:
    """``text`` with secrets replaced by placeholders (None stays None): for audit reasons and
    other free text written to the append-only log, which must never hold a raw secret.

    Raises:
        InvalidInput: ``text`` is neither a ``str`` nor None.
    """
    return None if text is None else redact_text(text)[0]
