"""Metadata conditions: the ``where`` of a search or listing, parsed once into :class:`MetadataCondition` tuples.

``where`` maps a metadata key to a value (equality) or to operators: ``{"topic": "travel", "n":
{"$gte": 3, "$lt": 10}, "lang": {"$in": ["en", "fr"]}}``. Conditions are ANDed. Backends apply them
inside the store query (the SQLite backend with ``json_extract``), so a search that asks for ``k``
hits gets ``k`` when ``k`` records match.

Comparison rules, the same in every backend:

- A key names a top-level metadata key, or a nested one by a dotted path (``"a.b"`` is
  ``metadata["a"]["b"]``); a record without the key (or with JSON null) holds None.
- ``$eq`` / ``$ne``: equal in JSON type and value (``1 == 1.0``, but ``"1" != 1``, ``True != 1``;
  ``None`` matches a missing key). ``$ne`` keeps records without the key.
- ``$gt`` / ``$gte`` / ``$lt`` / ``$lte``: numbers with numbers, strings with strings (by code
  point); a record whose value is of another type (or missing) never matches.
- ``$in``: equal to one of the listed values (as ``$eq``).

Operand values are str, int, float (finite), bool or None (None only for ``$eq``, ``$ne`` and
``$in``); ``$in`` takes a list of them (at most :data:`MAX_IN` values).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from retain.errors import InvalidInput

__all__ = [
    "EXPIRES_AT_KEY",
    "MAX_CONDITIONS",
    "MAX_IN",
    "OPERATORS",
    "MetadataCondition",
    "Operand",
    "expiry_text",
    "parse_expiry",
    "parse_where",
]

EXPIRES_AT_KEY = "expires_at"
"""The metadata key of a record's expiry time: UTC, as :func:`expiry_text` writes it (fixed width, so
texts compare as times). A record is expired at ``t`` when its expiry is <= ``t``."""

OPERATORS: tuple[str, ...] = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in")
"""The operators a condition may use."""
RANGE_OPERATORS = frozenset({"$gt", "$gte", "$lt", "$lte"})
MAX_IN = 500
"""Most values one ``$in`` lists."""
MAX_CONDITIONS = 64
"""Most conditions one ``where`` holds."""
MAX_KEY_CHARS = 200
"""Longest metadata key a condition names (characters)."""

Operand = str | int | float | bool | None
"""One value a condition compares with."""


@dataclass(frozen=True, slots=True)
class MetadataCondition:
    """One metadata condition: ``metadata[key] <op> value``.

    Attributes:
        key: a metadata key or dotted path (non-empty parts without ``"``, ``\\`` or NUL, at most
            :data:`MAX_KEY_CHARS` characters in all).
        op: one of :data:`OPERATORS`.
        value_json: the operand as JSON text (for ``$in`` a JSON array), so that ``1`` and ``True``
            stay distinct conditions.
    """

    key: str
    op: str
    value_json: str

    @property
    def value(self) -> Any:
        """The operand (for ``$in`` a list of operands)."""
        return json.loads(self.value_json)

    @property
    def path(self) -> str:
        """The key as a JSON path (``$."a"."b"``) for SQL ``json_extract``."""
        return "$" + "".join(f'."{part}"' for part in self.key.split("."))


def parse_where(where: Mapping[str, Any] | None) -> tuple[MetadataCondition, ...] | None:
    """``where`` (see the module docstring) as sorted conditions, or None when ``where`` is None or empty.

    Raises:
        InvalidInput: ``where`` is not a mapping; a key is not a valid metadata key; an unknown
            operator; an operand of the wrong type (a list, a dict, NaN, None in a range operator, a
            bool in a range operator); an empty or too long ``$in``; too many conditions.
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidInput(f"where: must be a mapping of metadata key to value or operators, got {where!r}")
    conditions: list[MetadataCondition] = []
    for key, spec in where.items():
        _check_key(key)
        if isinstance(spec, Mapping):
            if not spec:
                raise InvalidInput(f"where[{key!r}]: an empty operator mapping")
            for op, value in spec.items():
                conditions.append(_condition(key, op, value))
        else:
            conditions.append(_condition(key, "$eq", spec))
    if len(conditions) > MAX_CONDITIONS:
        raise InvalidInput(f"where: at most {MAX_CONDITIONS} conditions, got {len(conditions)}")
    if not conditions:
        return None
    return tuple(sorted(set(conditions), key=lambda c: (c.key, c.op, c.value_json)))


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"where: keys are non-empty strings of at most {MAX_KEY_CHARS} characters, got {key!r}")
    if '"' in key or "\\" in key or "\x00" in key or "" in key.split("."):
        raise InvalidInput(f"where: key {key!r} holds a quote, a backslash, a NUL or an empty dotted part")


def _condition(key: str, op: object, value: object) -> MetadataCondition:
    if op not in OPERATORS:
        raise InvalidInput(f"where[{key!r}]: unknown operator {op!r}; one of {list(OPERATORS)}")
    assert isinstance(op, str)
    if op == "$in":
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, list | tuple | set | frozenset):
            raise InvalidInput(f"where[{key!r}]['$in']: must be a list of values, got {value!r}")
        if not value or len(value) > MAX_IN:
            raise InvalidInput(f"where[{key!r}]['$in']: 1 to {MAX_IN} values, got {len(value)}")
        items = {_dumps(_operand(key, op, v)): None for v in value}
        return MetadataCondition(key, op, "[" + ",".join(sorted(items)) + "]")
    return MetadataCondition(key, op, _dumps(_operand(key, op, value)))


def _dumps(value: Operand) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _operand(key: str, op: str, value: object) -> Operand:
    if value is None or isinstance(value, bool):
        if op in RANGE_OPERATORS:
            raise InvalidInput(f"where[{key!r}][{op!r}]: compares numbers or strings, got {value!r}")
        return value
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInput(f"where[{key!r}][{op!r}]: a string with a NUL")
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise InvalidInput(f"where[{key!r}][{op!r}]: integers fit 64 bits, got {value!r}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"where[{key!r}][{op!r}]: a finite number, got {value!r}")
        return value
    raise InvalidInput(f"where[{key!r}][{op!r}]: a str, int, float, bool or None, got {type(value).__name__}")


def expiry_text(when: datetime) -> str:
    """``when`` (timezone-aware) as the expiry text stored in ``metadata["expires_at"]``:
    ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, UTC."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_expiry(text: object) -> datetime | None:
    """The expiry time of ``metadata["expires_at"]`` (UTC), or None when ``text`` is not an expiry text."""
    if not isinstance(text, str) or len(text) != 27 or not text.endswith("Z"):
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None
