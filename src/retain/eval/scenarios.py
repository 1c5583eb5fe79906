"""Scenario files (format ``retain-scenario/1``): a validating loader and typed objects.

A scenario is one long-horizon agent task written down as data: the events an agent sees, in order,
the agent's task state at each event, and probes that say which earlier events the agent needs at a
given moment. The format is specified in ``../shared/spec/scenario-format.md``.

:func:`load_scenario` reads one file and refuses anything the runner could not score honestly, with
an :class:`~retain.errors.InvalidInput` naming the file and the JSON path of the bad value
(``events[3].t``, ``probes[1].needed[0]``): a wrong ``format``, duplicate event or probe ids, an
``after`` / ``needed`` / ``forbidden`` / ``gold.supersedes`` naming an unknown event (or, for
``needed`` / ``forbidden`` / ``supersedes``, one that has not happened yet), an unparseable or naive
``t``, an unknown ``role`` or ``gold.type``.

``state`` objects are kept exactly as given (a plain dict), for state-adaptive retrievers.
``gold`` is optional per event (an event without it is not counted in ``type_accuracy`` and is never
a hard constraint); it is the answer key and the runner never shows it to the system under test.

Terse probes: :func:`retain.text.lexical.is_terse` (see :data:`retain.text.lexical.TERSE_FILLERS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from retain.errors import InvalidInput
from retain.record import MemoryType, utc, validate_namespace
from retain.text.lexical import TERSE_FILLERS, is_terse

__all__ = [
    "FORMAT",
    "ROLES",
    "TERSE_FILLERS",
    "Event",
    "Gold",
    "Probe",
    "Scenario",
    "State",
    "actor_for_role",
    "is_terse",
    "load_scenario",
    "load_scenarios",
]

FORMAT = "retain-scenario/1"
ROLES = frozenset({"user", "agent_thought", "agent_action", "tool", "system"})
GOLD_TYPES = frozenset(t.value for t in MemoryType)

State = dict[str, Any]
"""The agent's task state as given in the file (``phase``, ``subgoals``, ``constraints``,
``uncertain``, ``last_result``; all optional, kept verbatim)."""


def actor_for_role(role: str) -> str:
    """The audit actor of an event replayed from a scenario: "user" for the user's own events (a
    trusted actor), else the role itself ("tool", "agent_thought", "system", ...; untrusted)."""
    return "user" if role == "user" else role


@dataclass(frozen=True, slots=True)
class Gold:
    """The answer key of one event (never shown to the system under test).

    Attributes:
        type: the gold memory type (a :class:`~retain.record.MemoryType` value).
        supersedes: ids of earlier events this event corrects or replaces.
    """

    type: str
    supersedes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Event:
    """One event the agent saw or produced.

    Attributes:
        id: unique within the scenario.
        index: 0-based position in the scenario's event list (time order).
        t: event time, timezone-aware UTC.
        role: one of :data:`ROLES`.
        text: what the agent saw or produced, any language.
        state: the agent's task state at the event, verbatim.
        gold: the answer key, or None when the file gives none.
    """

    id: str
    index: int
    t: datetime
    role: str
    text: str
    state: State = field(default_factory=dict)
    gold: Gold | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """A memory request made after event ``after`` has been ingested.

    Attributes:
        id: unique within the scenario.
        after: id of the last event ingested before the probe.
        query: the agent's query (often terse, e.g. "ok, continue").
        state: the agent's task state at the probe, verbatim.
        needed: event ids the next decision depends on (may be empty).
        forbidden: event ids that are wrong to act on now (superseded or otherwise).
    """

    id: str
    after: str
    query: str
    state: State = field(default_factory=dict)
    needed: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()

    @property
    def terse(self) -> bool:
        """See :func:`is_terse`."""
        return is_terse(self.query)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario file, validated.

    Attributes:
        id: scenario id (used as the memory namespace of its replay).
        events: in file (time) order; ``events[i].index == i``.
        probes: in file order.
        path: the file it was read from.
    """

    id: str
    events: tuple[Event, ...]
    probes: tuple[Probe, ...]
    domain: str | None = None
    language: str | None = None
    description: str | None = None
    path: Path | None = None

    def event_index(self) -> dict[str, int]:
        """Event id -> 0-based position."""
        return {e.id: e.index for e in self.events}

    def superseded_by_gold(self, upto: int) -> set[str]:
        """Ids of events superseded (per gold) by an event at position <= ``upto``."""
        return {s for e in self.events[: upto + 1] if e.gold is not None for s in e.gold.supersedes}


class _Checker:
    """Builds error messages naming the file and the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> InvalidInput:
        return InvalidInput(f"{self.source}: {path}: {message}")

    def obj(self, value: Any, path: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"expected an object, got {type(value).__name__}")
        return value

    def text(self, value: Any, path: str, *, empty: bool = False) -> str:
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.fail(path, f"expected a non-empty string, got {value!r}")
        return value

    def opt_text(self, value: Any, path: str) -> str | None:
        return None if value is None else self.text(value, path, empty=True)

    def ids(self, value: Any, path: str) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list of event ids, got {type(value).__name__}")
        return tuple(self.text(v, f"{path}[{i}]") for i, v in enumerate(value))

    def state(self, value: Any, path: str) -> State:
        if value is None:
            return {}
        return dict(self.obj(value, path))


def _parse(data: Any, source: str, path: Path | None) -> Scenario:
    c = _Checker(source)
    root = c.obj(data, "$")
    if root.get("format") != FORMAT:
        raise c.fail("format", f"expected {FORMAT!r}, got {root.get('format')!r}")
    sid = c.text(root.get("id"), "id")
    try:
        validate_namespace(sid)
    except InvalidInput as exc:
        raise c.fail("id", f"not usable as a namespace ({exc})") from exc
    raw_events = root.get("events")
    if not isinstance(raw_events, list) or not raw_events:
        raise c.fail("events", "expected a non-empty list")
    events: list[Event] = []
    position: dict[str, int] = {}
    for i, raw in enumerate(raw_events):
        events.append(_parse_event(c, raw, i, raw_events, position))
    raw_probes = root.get("probes", [])
    if not isinstance(raw_probes, list):
        raise c.fail("probes", "expected a list")
    probes: list[Probe] = []
    probe_ids: set[str] = set()
    for i, raw in enumerate(raw_probes):
        probes.append(_parse_probe(c, raw, i, position, probe_ids))
    return Scenario(
        id=sid,
        events=tuple(events),
        probes=tuple(probes),
        domain=c.opt_text(root.get("domain"), "domain"),
        language=c.opt_text(root.get("language"), "language"),
        description=c.opt_text(root.get("description"), "description"),
        path=path,
    )


def _parse_event(c: _Checker, raw: Any, i: int, raw_events: list[Any], position: dict[str, int]) -> Event:
    """Event ``i``; ``position`` (event id -> index of the events before it) gains its id."""
    at = f"events[{i}]"
    ev = c.obj(raw, at)
    eid = c.text(ev.get("id"), f"{at}.id")
    if eid in position:
        raise c.fail(f"{at}.id", f"duplicate event id {eid!r} (first at events[{position[eid]}])")
    t_raw = c.text(ev.get("t"), f"{at}.t")
    try:
        t = utc(t_raw, field_name="t")
    except InvalidInput as exc:
        raise c.fail(f"{at}.t", f"not an ISO 8601 time with an offset: {t_raw!r} ({exc})") from exc
    assert t is not None
    role = ev.get("role")
    if role not in ROLES:
        raise c.fail(f"{at}.role", f"unknown role {role!r}; one of {sorted(ROLES)}")
    text = c.text(ev.get("text"), f"{at}.text")
    gold = None if ev.get("gold") is None else _parse_gold(c, ev["gold"], at, raw_events, position)
    position[eid] = i
    return Event(eid, i, t, str(role), text, c.state(ev.get("state"), f"{at}.state"), gold)


def _parse_gold(c: _Checker, raw: Any, at: str, raw_events: list[Any], position: dict[str, int]) -> Gold:
    g = c.obj(raw, f"{at}.gold")
    gtype = g.get("type")
    if gtype not in GOLD_TYPES:
        raise c.fail(f"{at}.gold.type", f"unknown type {gtype!r}; one of {sorted(GOLD_TYPES)}")
    sup = c.ids(g.get("supersedes"), f"{at}.gold.supersedes")
    for j, s in enumerate(sup):
        if s not in position:
            later = any(isinstance(e, Mapping) and e.get("id") == s for e in raw_events)
            what = "a later event" if later else "an unknown event"
            raise c.fail(f"{at}.gold.supersedes[{j}]", f"{s!r} is {what}; supersedes must name earlier events")
    return Gold(type=str(gtype), supersedes=sup)


def _parse_probe(c: _Checker, raw: Any, i: int, position: dict[str, int], probe_ids: set[str]) -> Probe:
    """Probe ``i``; ``probe_ids`` (the ids of the probes before it) gains its id."""
    at = f"probes[{i}]"
    pr = c.obj(raw, at)
    pid = c.text(pr.get("id"), f"{at}.id")
    if pid in probe_ids:
        raise c.fail(f"{at}.id", f"duplicate probe id {pid!r}")
    probe_ids.add(pid)
    after = c.text(pr.get("after"), f"{at}.after")
    if after not in position:
        raise c.fail(f"{at}.after", f"unknown event {after!r}")
    query = c.text(pr.get("query"), f"{at}.query", empty=True)
    lists = {}
    for name in ("needed", "forbidden"):
        ids = c.ids(pr.get(name), f"{at}.{name}")
        for j, e in enumerate(ids):
            if e not in position:
                raise c.fail(f"{at}.{name}[{j}]", f"unknown event {e!r}")
            if position[e] > position[after]:
                raise c.fail(f"{at}.{name}[{j}]", f"event {e!r} comes after the probe's 'after' event {after!r}")
        lists[name] = ids
    return Probe(pid, after, query, c.state(pr.get("state"), f"{at}.state"), **lists)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one ``retain-scenario/1`` JSON file (UTF-8).

    Raises:
        InvalidInput: unreadable or invalid JSON, or any violation listed in the module docstring;
            the message starts with the file and the JSON path of the bad value.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"{p}: cannot read scenario file ({exc.strerror or exc})") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{p}: not UTF-8 ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{p}: not JSON ({exc})") from exc
    return _parse(data, str(p), p)


def load_scenarios(path: str | Path | Sequence[str | Path]) -> list[Scenario]:
    """Load one scenario file, or every ``*.json`` file of a folder (sorted by file name); given several
    paths, each in turn.

    Raises:
        InvalidInput: no path, no such file or folder, a folder without ``*.json`` files, any invalid
            file (see :func:`load_scenario`), or two files with the same scenario ``id``.
    """
    paths = [path] if isinstance(path, str | Path) else list(path)
    if not paths:
        raise InvalidInput("scenarios: give at least one scenario file or folder")
    files: list[Path] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            found = sorted(p.glob("*.json"))
            if not found:
                raise InvalidInput(f"{p}: no *.json scenario files in this folder")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            raise InvalidInput(f"{p}: no such scenario file or folder")
    scenarios = [load_scenario(f) for f in files]
    seen: dict[str, Path | None] = {}
    for s in scenarios:
        if s.id in seen:
            raise InvalidInput(f"{s.path}: id: scenario id {s.id!r} already used by {seen[s.id]}")
        seen[s.id] = s.path
    return scenarios
