"""A property-based driver of :class:`retain.Memory`'s public API (issue 21, point 4).

:func:`calls` draws sequences of public calls whose arguments are mostly plausible and sometimes
hostile (wrong types, lone surrogates, naive and out-of-range times, huge numbers, NaN, objects);
:func:`run_call` makes one call and classifies its outcome. The property: every call returns or
raises an error of retain's own tree (:class:`~retain.errors.RetainError`), and no stored record
disappears except by a delete, delete_all or forget that reports it. ``tests/test_fuzz.py`` runs a
bounded number of examples in CI; ``benchmarks/fuzz_api.py`` runs it for minutes and prints counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from retain import HashingEncoder, Memory
from retain.errors import RetainError
from retain.store import RecordFilter

NS = "ns"

HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    2**70,
    -(2**70),
    1.5,
    -0.25,
    math.nan,
    math.inf,
    -math.inf,
    "",
    " ",
    "\ud800",
    "x\x00y",
    "\u200b",
    "caf\u0065\u0301",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+01:00",
    "2026-03-14T09:30:00",
    "2026-03-14",
    "not a time",
    b"bytes",
    bytearray(b"ba"),
    {},
    {"a": 1},
    {"a": object()},
    {1: "int key"},
    [],
    [1, 2],
    ["a", None],
    (),
    {"x"},
    datetime(2026, 3, 14, 9, 30),
    datetime(2026, 3, 14, 9, 30, tzinfo=UTC),
    datetime.max,
    datetime.min,
    datetime.max.replace(tzinfo=timezone(timedelta(hours=-14))),
    datetime.min.replace(tzinfo=timezone(timedelta(hours=1))),
    date(2026, 3, 14),
    timedelta(days=1),
    object(),
    type,
    "fact",
    "archive",
    "dense",
    "time",
]
"""Values that are wrong for most parameters, several right for some."""

hostile = st.sampled_from(HOSTILE) | st.text(max_size=40) | st.integers() | st.floats()
texts = st.sampled_from(
    [
        "The flight to Lisbon leaves at 9am on Friday.",
        "I prefer window seats.",
        "Never book flights before 9am.",
        "The budget must stay under 5000 EUR.",
        "My card number is 4111 1111 1111 1111 and the CVV is 737.",
        "携帯は090-1234-5678です",
        "Meeting with Anna yesterday about the Berlin office.",
        "User no longer likes spicy food.",
    ]
) | st.text(min_size=1, max_size=80)


@dataclass
class Tally:
    """What a fuzz run saw: calls made, calls refused by retain's errors, other exceptions (by
    type, method and message) and records lost."""

    calls: int = 0
    refused: int = 0
    foreign: dict[str, list[str]] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)

    def note_foreign(self, call: tuple[str, tuple[Any, ...], dict[str, Any]], exc: BaseException) -> None:
        method, args, kw = call
        key = f"{type(exc).__name__} in {method}"
        self.foreign.setdefault(key, []).append(f"{str(exc)[:120]} <- {method}{args!r:.150} {kw!r:.300}")


def _maybe(draw: st.DrawFn, good: st.SearchStrategy[Any], p_bad: float = 0.25) -> Any:
    return draw(hostile) if draw(st.floats(0, 1)) < p_bad else draw(good)


def _ids(mem: Memory) -> list[str]:
    return [r.id for r in mem.store.list_records(NS, RecordFilter(tiers=None, include_superseded=True))]


def _call(draw: st.DrawFn, mem: Memory) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """One public call: its method name, positional and keyword arguments."""
    held = _ids(mem)
    ident = st.sampled_from(held) if held else st.just("01ARZ3NDEKTSV4RRFFQ69G5FAV")
    ns = st.just(NS)
    actor = st.sampled_from(["user", "tool", "agent", "admin"])
    time = st.sampled_from(["2026-03-14T09:30:00+00:00", "2025-01-01T00:00:00Z", None])
    kind = st.sampled_from([t.value for t in __import__("retain").MemoryType])
    method = draw(
        st.sampled_from(
            [
                "add",
                "add",
                "add",
                "add_many",
                "update",
                "feedback",
                "search",
                "search",
                "pin",
                "unpin",
                "delete",
                "forget",
                "timeline",
                "context",
                "link",
                "edges",
                "export",
                "handoff",
                "records",
                "get",
                "history",
                "before",
                "explain",
                "summarize",
                "retention_report",
                "propagate_importance",
                "add_canary",
                "check_canaries",
            ]
        )
    )
    kw: dict[str, Any] = {}
    args: tuple[Any, ...] = ()
    if method == "add":
        args = (_maybe(draw, texts, 0.1),)
        kw = {"namespace": _maybe(draw, ns, 0.1)}
        for name, good in [
            ("type", kind),
            ("event_time", time),
            ("actor", actor),
            ("metadata", st.just({"k": "v"})),
            ("importance", st.floats(0, 1)),
            ("priority", st.integers(-5, 5)),
            ("pinned", st.booleans()),
            ("seq", st.integers(0, 9)),
            ("segment", st.sampled_from(["s1", "s2"])),
            ("state", st.just({"phase": "plan"})),
            ("confidence", st.floats(0, 1)),
            ("role", st.sampled_from(["user", "assistant"])),
            ("source", st.just("test")),
            ("derived_from", st.lists(ident, max_size=1)),
        ]:
            if draw(st.booleans()):
                kw[name] = _maybe(draw, good)
    elif method == "add_many":
        items = draw(st.lists(st.fixed_dictionaries({"content": texts}) | hostile, max_size=3))
        args, kw = (items,), {"namespace": _maybe(draw, ns, 0.1), "actor": _maybe(draw, actor, 0.1)}
    elif method == "update":
        args = (_maybe(draw, ident, 0.1), _maybe(draw, texts, 0.1))
        kw = {"namespace": NS, "actor": _maybe(draw, actor, 0.2)}
        for name, good in [
            ("metadata", st.just({"k": "v"})),
            ("type", kind),
            ("event_time", time),
            ("importance", st.floats(0, 1)),
            ("pinned", st.booleans()),
            ("reason", st.just("changed")),
        ]:
            if draw(st.booleans()):
                kw[name] = _maybe(draw, good, 0.4)
    elif method == "feedback":
        args = (_maybe(draw, ident, 0.1),)
        kw = {"namespace": NS, "used": _maybe(draw, st.booleans(), 0.2), "actor": _maybe(draw, actor, 0.2)}
    elif method == "search":
        args = (_maybe(draw, texts, 0.1),)
        kw = {"namespace": _maybe(draw, ns, 0.05)}
        for name, good in [
            ("k", st.integers(1, 20)),
            ("config", st.sampled_from(["default", "rrf", "lexical", "dense", "diverse"])),
            ("types", st.lists(kind, max_size=2)),
            ("tiers", st.lists(st.sampled_from(["core", "dynamic", "archive"]), max_size=3)),
            ("start", time),
            ("end", time),
            ("include_superseded", st.booleans()),
            ("threshold", st.floats(0, 1)),
            ("mmr_lambda", st.floats(0, 1)),
            ("state", st.just({"phase": "plan", "goal": "book a flight"})),
            ("allow_raw", st.booleans()),
            ("time_aware", st.booleans()),
            ("now", time),
            ("expand", st.integers(0, 3)),
            ("window", st.integers(0, 3)),
            ("order", st.sampled_from(["rank", "time", "auto"])),
        ]:
            if draw(st.booleans()):
                kw[name] = _maybe(draw, good, 0.3)
    elif method in ("pin", "unpin", "delete"):
        args = (_maybe(draw, ident, 0.1),)
        kw = {"namespace": NS, "actor": _maybe(draw, actor, 0.2), "reason": _maybe(draw, st.just("why"), 0.2)}
    elif method == "forget":
        args = (_maybe(draw, ident | texts, 0.2),)
        kw = {"namespace": NS, "actor": _maybe(draw, actor, 0.2), "k": _maybe(draw, st.integers(1, 3), 0.2)}
    elif method == "timeline":
        args = (_maybe(draw, ns, 0.1),)
        kw = {
            "query": _maybe(draw, st.none() | texts, 0.2),
            "start": _maybe(draw, time, 0.4),
            "end": _maybe(draw, time, 0.4),
            "limit": _maybe(draw, st.none() | st.integers(1, 5), 0.2),
        }
    elif method == "context":
        args = (_maybe(draw, texts, 0.1),)
        kw = {
            "namespace": NS,
            "budget_tokens": _maybe(draw, st.integers(20, 400), 0.2),
            "k": _maybe(draw, st.integers(1, 10), 0.2),
            "threshold": _maybe(draw, st.none() | st.floats(0, 1), 0.2),
            "working": _maybe(draw, st.integers(0, 5), 0.2),
            "actor": _maybe(draw, actor, 0.1),
        }
    elif method == "link":
        args = (_maybe(draw, ident, 0.1), _maybe(draw, ident, 0.1), _maybe(draw, st.just("related"), 0.3))
        kw = {"namespace": NS, "weight": _maybe(draw, st.floats(0, 1), 0.3), "actor": _maybe(draw, actor, 0.1)}
    elif method == "edges":
        args = (_maybe(draw, ident, 0.1),)
        kw = {"namespace": NS, "direction": _maybe(draw, st.sampled_from(["in", "out", "both"]), 0.3)}
    elif method == "export":
        kw = {"namespace": _maybe(draw, ns, 0.1), "allow_raw": _maybe(draw, st.booleans(), 0.2)}
        kw["actor"] = _maybe(draw, actor, 0.2)
    elif method == "handoff":
        args = (_maybe(draw, ns, 0.1),)
        kw = {"recent": _maybe(draw, st.integers(1, 5), 0.3), "fmt": _maybe(draw, st.just("json"), 0.3)}
    elif method == "records":
        kw = {"namespace": _maybe(draw, ns, 0.2), "include_archive": _maybe(draw, st.booleans(), 0.2)}
    elif method in ("get", "history"):
        args, kw = (_maybe(draw, ident, 0.3),), {"namespace": _maybe(draw, ns, 0.2)}
    elif method == "before":
        args, kw = (_maybe(draw, ident, 0.3),), {"namespace": NS, "n": _maybe(draw, st.integers(1, 3), 0.3)}
    elif method == "explain":
        args, kw = (_maybe(draw, ident, 0.5),), {"namespace": _maybe(draw, st.none() | ns, 0.3)}
    elif method == "summarize":
        args = (_maybe(draw, ns, 0.1), _maybe(draw, st.sampled_from(["s1", "s2"]), 0.3))
    elif method == "retention_report":
        args = (_maybe(draw, ns, 0.2),)
    elif method == "propagate_importance":
        args = (_maybe(draw, ns, 0.1),)
        kw = {"alpha": _maybe(draw, st.floats(0.1, 0.9), 0.3), "seeds": _maybe(draw, st.none(), 0.3)}
    elif method == "add_canary":
        args, kw = (_maybe(draw, texts, 0.2),), {"namespace": NS}
    elif method == "check_canaries":
        args = (_maybe(draw, st.none() | ns, 0.3),)
    return method, args, kw


@st.composite
def call_for(draw: st.DrawFn, mem: Memory) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """A strategy of one public call on ``mem`` (drawn against what it holds now)."""
    return _call(draw, mem)


_REMOVING = {"delete", "forget", "delete_all"}


def run_call(mem: Memory, call: tuple[str, tuple[Any, ...], dict[str, Any]], tally: Tally) -> None:
    """Make ``call`` on ``mem`` and record its outcome in ``tally``: a non-retain exception, or a
    record gone after a call that does not remove records (or removes none), is noted."""
    method, args, kw = call
    before = set(_ids(mem))
    tally.calls += 1
    result: Any = None
    try:
        result = getattr(mem, method)(*args, **kw)
    except RetainError:
        tally.refused += 1
    except Exception as exc:  # the property under test: nothing but retain's own errors escape
        tally.note_foreign(call, exc)
    gone = before - set(_ids(mem))
    if gone and not (method in _REMOVING and _removed_some(result)):
        tally.lost += [f"{method}: {rid}" for rid in sorted(gone)]


def _removed_some(result: Any) -> bool:
    if isinstance(result, int):
        return result > 0
    return bool(getattr(result, "deleted", ()))


def new_memory() -> Memory:
    """A fresh in-memory store with the deterministic hashing encoder (no model, no state scorer)."""
    return Memory(encoder=HashingEncoder(dim=64), state_scorer=False)


def drive(data: st.DataObject, steps: int, tally: Tally, seed_records: Callable[[Memory], None] | None = None) -> None:
    """One example: a fresh memory, ``steps`` drawn calls."""
    mem = new_memory()
    try:
        if seed_records is not None:
            seed_records(mem)
        for _ in range(steps):
            run_call(mem, data.draw(call_for(mem)), tally)
    finally:
        mem.close()
