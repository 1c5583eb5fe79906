"""The agent's state as evidence: which candidates of a search state a value the state has replaced.

The state's ``constraints`` are what the agent's task tracker holds now (``{"budget_eur": 6000}``).
A candidate that states another value for one of these slots is out of date, whether or not the
store ever linked it as superseded (the user raised the budget in words no rule read as a
correction, say). :func:`stale_rows` finds them; the search ranks each just below the best-scored
candidate that states the current value (never above it) and marks its hit ``stale``, so a caller never
takes it as current.

A candidate ``m`` is stale for the constraint ``key: value`` when, with ``V`` the canonical values
(:func:`retain.text.values.canonical_values`: dates, clock times, amounts) of the rendered constraint:

- ``V`` is not empty and some other candidate of the pool states one of ``V`` (the current one);
- ``m`` names the slot: a word of ``key`` (three letters or more, not a unit or a bound such as
  ``eur``, ``max``, ``by``) occurs in its text;
- ``m`` states a value of the same kind as one of ``V`` (an amount within a factor of
  :data:`AMOUNT_RATIO` of it, a date, a clock time) and no value of any constraint of the state;
- ``m`` asserts rather than reports: its type is not an observation, an action result or a plan
  step (a quote of 5,200 under a budget of 6,000 is not an old budget).

Pure functions over the pool's records; the canonical values are memoised by text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.record import MemoryRecord, MemoryType
from retain.text.values import canonical_values

__all__ = ["AMOUNT_RATIO", "demote_stale", "stale_rows"]

AMOUNT_RATIO = 3.0
"""Two amounts are values of one slot when neither is more than this many times the other."""
_GENERIC = frozenset(
    {
        "max",
        "min",
        "eur",
        "usd",
        "gbp",
        "cny",
        "rmb",
        "inr",
        "jpy",
        "chf",
        "krw",
        "aud",
        "cad",
        "sek",
        "nok",
        "dkk",
        "pln",
        "czk",
        "huf",
        "brl",
        "mxn",
        "the",
        "and",
        "per",
        "total",
        "day",
        "days",
        "hours",
        "hour",
        "limit",
        "cap",
        "from",
        "until",
        "before",
        "after",
        "date",
        "time",
    }
)
_REPORTS = frozenset({MemoryType.OBSERVATION, MemoryType.ACTION_RESULT, MemoryType.PLAN_STEP})
_WORD = re.compile(r"[a-z]{3,}")


def _slot_words(key: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(key.lower().replace("_", " ")) if w not in _GENERIC)


def _rendered(key: str, value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return f"{key.replace('_', ' ')}: {text}"


def _same_slot(a: str, b: str) -> bool:
    kind = a[:2]
    if kind != b[:2]:
        return False
    if kind != "n:":
        return True
    try:
        x, y = float(a[2:]), float(b[2:])
    except ValueError:
        return False
    return x > 0 and y > 0 and 1 / AMOUNT_RATIO <= x / y <= AMOUNT_RATIO


def stale_rows(constraints: Mapping[str, Any], records: Sequence[MemoryRecord]) -> dict[int, list[int]]:
    """Rows of ``records`` (a search's candidate pool) stating a value the state's ``constraints``
    replaced, each with the rows that state the current value (see the module docstring); {} when
    there are none. Never raises."""
    slots = []
    for key, value in constraints.items():
        values = canonical_values(_rendered(str(key), value))
        words = _slot_words(str(key))
        if values and words:
            slots.append((values, words))
    if not slots:
        return {}
    held = frozenset().union(*(values for values, _ in slots))
    stated = [canonical_values(r.content) for r in records]
    out: dict[int, list[int]] = {}
    for values, words in slots:
        current = [i for i, v in enumerate(stated) if v & values]
        if not current:
            continue
        for i, (record, own) in enumerate(zip(records, stated, strict=True)):
            if not own or own & held or record.type in _REPORTS:
                continue
            if not any(_same_slot(a, b) for a in own for b in values):
                continue
            low = record.content.lower()
            if any(w in low for w in words):
                out.setdefault(i, []).extend(current)
    return out


def demote_stale(
    scores: npt.NDArray[np.float64], stale: Mapping[int, Sequence[int]]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``scores`` ((n,) float64, higher = more relevant) with each stale row just below the best
    score of the rows stating its current value (or kept lower when it already is), and the (n,)
    float64 0/1 ``stale`` column of the hits' breakdown."""
    out = scores.copy()
    flag = np.zeros(len(scores), dtype=np.float64)
    for row, current in stale.items():
        ceiling = max(float(scores[c]) for c in current)
        out[row] = min(out[row], np.nextafter(ceiling, -np.inf) - 1e-9)
        flag[row] = 1.0
    return out, flag
