"""``retain eval scenarios``: replay scenario files into memory and score every probe.

Each scenario (:mod:`retain.eval.scenarios`) is replayed into its own namespace (the scenario id)
of one :class:`~retain.memory.Memory` per capacity budget (plus one without a budget, the full
memory), all sharing one encoder (wrapped in :class:`~retain.eval.streams.CachingEncoder`, so each
text is embedded once across budgets). Events are added one by one, in order, with
``content=text``, ``role``, ``event_time=t``, ``seq`` = position and
``source="scenario:<scenario id>:<event id>"`` and *no type*: the classifier predicts it. ``gold`` is
never passed to the memory or to a retriever; it is read only to score.

After event ``after`` of a probe is ingested, every retriever is asked for the top :data:`K`
(= 10) with the probe's query and state. A hit is mapped back to its event through the record's
``source`` (so a deduplicated add, which returns the id of an earlier identical record, maps to
that earlier event; split parts of one event count once, at their best rank).

Figures (the spec's definitions; all "higher = better" except ``forbidden_rate``):

* ``recall@5``, ``recall@10`` — mean over probes of |needed ∩ top-k| / |needed|;
* ``mrr`` — mean of 1 / rank of the first needed event in the top 10 (0 when none);
  probes with an empty ``needed`` are skipped for recall and MRR and counted (``no_needed``);
* ``forbidden_rate`` — share of all probes whose top 10 holds a ``forbidden`` event presented as
  current (its record not marked superseded, its hit not marked ``stale`` by the search's state);
* ``integrity`` — share of (probe, constraint) pairs where the constraint is held in hot memory
  (tier ``core`` or ``dynamic``, record current) at the probe. The constraints of a probe are the
  events with gold type ``hard_constraint`` already ingested and not superseded by gold
  (``gold.supersedes`` of an event ingested by then). ``integrity_min`` is the lowest per-probe share.
  The goal is 1.0 at every budget; in the full memory it is 1.0 unless the memory itself
  superseded a constraint;
* ``type_accuracy`` — share of events whose predicted record type equals ``gold.type``;
* ``supersede`` — precision, recall and F1 of the supersede links the store made against
  ``gold.supersedes`` (:func:`supersede_counts`), with the counts;
* ``open_conflicts`` — per run and per scenario, the conflicts left open at the end of the replay
  (:meth:`~retain.memory.Memory.conflicts`): contradictions retain surfaced instead of resolving.

Overall figures pool the probes (and events) of every scenario (micro-averages). ``terse`` and
``non_terse`` repeat the probe figures over terse probes only (:func:`~retain.eval.scenarios.is_terse`)
and the others. Under a budget, an add may raise :class:`~retain.errors.BudgetInfeasible` (the
predicted hard constraints alone exceed the capacity): that scenario's replay stops there, it is
reported as infeasible at that event with no figures, and the overall figures of that budget are
over the feasible scenarios only (``feasible`` says how many).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from tqdm import tqdm

from retain.config import DEFAULT_RETRIEVAL_CONFIG, MemoryConfig, RetrievalConfig
from retain.encoders.basis import Encoder
from retain.errors import BudgetInfeasible, InvalidInput
from retain.eval.metrics import mean_or_none, recall_at_k, reciprocal_rank
from retain.eval.scenarios import Event, Probe, Scenario, actor_for_role
from retain.eval.streams import CachingEncoder
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.record import MemoryRecord, MemoryType, Tier
from retain.retention.budget import Budget
from retain.retrieval.fusion import Hit

__all__ = [
    "RETRIEVERS",
    "K",
    "Retriever",
    "content_retriever",
    "get_retriever",
    "register_retriever",
    "run_scenarios",
    "summarise_probes",
]

K = 10
"""Depth of every ranking asked for, and the k of ``forbidden_rate``."""

PROBE_METRICS = ("recall@5", "recall@10", "mrr", "forbidden_rate", "integrity", "integrity_min")


class Retriever(Protocol):
    """Ranks memories for a probe: ``(memory, namespace, query, state, k) -> hits``, best first.

    ``state`` is the probe's task state as given in the scenario file (a dict; may be empty). A
    retriever must not return more than ``k`` hits and must not read gold labels (it is never given
    any).
    """

    def __call__(self, memory: Memory, namespace: str, query: str, state: Mapping[str, Any], k: int) -> list[Hit]: ...


def content_retriever(memory: Memory, namespace: str, query: str, state: Mapping[str, Any], k: int) -> list[Hit]:
    """Plain :meth:`Memory.search` on the query text (default preset, hot memory); state ignored."""
    return memory.search(query, namespace=namespace, k=k)


def state_retriever(memory: Memory, namespace: str, query: str, state: Mapping[str, Any], k: int) -> list[Hit]:
    """State-adaptive :meth:`Memory.search`: the probe's task state drives the ranking with the query
    (:mod:`retain.state.scorer`)."""
    return memory.search(query, namespace=namespace, k=k, state=state or None)


RETRIEVERS: dict[str, Retriever] = {"content": content_retriever, "state": state_retriever}
"""Retrievers by the name ``--retriever`` takes. Add one with :func:`register_retriever`."""


def register_retriever(name: str, retriever: Retriever) -> None:
    """Make ``retriever`` available as ``name`` (replaces an existing one of that name).

    Raises:
        InvalidInput: empty name, or a name containing a comma (the CLI splits on commas).
    """
    if not isinstance(name, str) or not name.strip() or "," in name:
        raise InvalidInput(f"retriever name: a non-empty string without commas, got {name!r}")
    RETRIEVERS[name] = retriever


def get_retriever(name: str) -> Retriever:
    """The retriever registered as ``name``.

    Raises:
        InvalidInput: no retriever of that name (the message lists the known ones).
    """
    try:
        return RETRIEVERS[name]
    except KeyError:
        raise InvalidInput(f"retriever: unknown {name!r}; one of {sorted(RETRIEVERS)}") from None


def source_prefix(scenario_id: str) -> str:
    """The ``source`` prefix of a replayed scenario's records: ``"scenario:<id>:"`` + the event id."""
    return f"scenario:{scenario_id}:"


def add_event(mem: Memory, scenario_id: str, event: Event, *, seq_offset: int = 0) -> str:
    """Store one scenario event as every replay does (runner, ``retain trace``, SAM training): text,
    role, time, position (``seq`` = ``seq_offset`` + the event's index), ``source`` =
    :func:`source_prefix` + event id, the event's state, and the event's role as the actor
    (:func:`~retain.eval.scenarios.actor_for_role`). ``gold`` is never read.
    Returns the record id (an earlier one when the text is a duplicate).

    Raises:
        BudgetInfeasible: the namespace's mandatory records no longer fit its budget.
    """
    return mem.add(
        event.text,
        namespace=scenario_id,
        role=event.role,
        event_time=event.t,
        seq=seq_offset + event.index,
        source=source_prefix(scenario_id) + event.id,
        actor=actor_for_role(event.role),
        state=event.state or None,
    )


def _ranked_events(hits: Sequence[Hit], prefix: str) -> tuple[list[str], list[bool]]:
    """Event ids of ``hits`` in rank order (each event once) and whether each hit is current."""
    events: list[str] = []
    current: list[bool] = []
    for hit in hits:
        source = hit.record.source or ""
        eid = source[len(prefix) :] if source.startswith(prefix) else f"?{hit.record.id}"
        if eid in events:
            i = events.index(eid)
            current[i] = current[i] or (hit.record.is_current and not hit.stale)
            continue
        events.append(eid)
        current.append(hit.record.is_current and not hit.stale)
    return events, current


def _is_hot(record: MemoryRecord | None) -> bool:
    return record is not None and record.tier is not Tier.ARCHIVE and record.is_current


def _score_probe(probe: Probe, ranked: list[str], current: list[bool]) -> dict[str, Any]:
    top = ranked[:K]
    forbidden = set(probe.forbidden)
    shown = [e for e, cur in zip(top, current[:K], strict=True) if e in forbidden and cur]
    scored = bool(probe.needed)
    return {
        "top10": top,
        "current": current[:K],
        "recall@5": recall_at_k(top, probe.needed, 5) if scored else None,
        "recall@10": recall_at_k(top, probe.needed, 10) if scored else None,
        "mrr": reciprocal_rank(top, probe.needed) if scored else None,
        "forbidden_shown": shown,
    }


def _replay(
    scenario: Scenario,
    mem: Memory,
    retrievers: Mapping[str, Retriever],
    on_event: Callable[[], None],
    history: Sequence[NewMemory] = (),
) -> dict[str, Any]:
    """Replay one scenario into ``mem`` (after ``history``); per-probe rows for every retriever, predicted types."""
    ns = scenario.id
    if history:  # older, unrelated records first: positions 0 .. len(history) - 1, the events after them
        # written through a second Memory on the same store that skips the write-time work among the
        # history records themselves (supersede detection, edges, time expressions): they are only
        # distractors, so that work would be spent on nothing the probes read
        quick = replace(
            mem.config, supersede=False, resolve_times=False, graph=replace(mem.config.graph, edges_on_write=False)
        )
        writer = Memory(store=mem.store, encoder=mem.encoder, config=quick, state_scorer=False)
        writer.add_many([replace(h, seq=i) for i, h in enumerate(history)], namespace=ns)
    prefix = source_prefix(ns)
    by_after: dict[str, list[Probe]] = {}
    for probe in scenario.probes:
        by_after.setdefault(probe.after, []).append(probe)
    record_of: dict[str, str] = {}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in retrievers}
    infeasible: dict[str, str] | None = None
    for event in scenario.events:
        try:
            record_of[event.id] = add_event(mem, ns, event, seq_offset=len(history))
        except BudgetInfeasible as exc:
            infeasible = {"event": event.id, "message": str(exc)}
            break
        finally:
            on_event()
        probes = by_after.get(event.id, [])
        if not probes:
            continue
        records = {r.id: r for r in mem.records(namespace=ns, include_archive=True, include_superseded=True)}
        gone = scenario.superseded_by_gold(event.index)
        constraints = [
            e.id
            for e in scenario.events[: event.index + 1]
            if e.gold is not None and e.gold.type == MemoryType.HARD_CONSTRAINT.value and e.id not in gone
        ]
        held = [_is_hot(records.get(record_of[c])) for c in constraints]
        for probe in probes:
            base = {
                "probe": probe.id,
                "after": probe.after,
                "query": probe.query,
                "terse": probe.terse,
                "needed": list(probe.needed),
                "forbidden": list(probe.forbidden),
                "constraints": constraints,
                "constraints_held": [c for c, h in zip(constraints, held, strict=True) if h],
            }
            for name, retriever in retrievers.items():
                hits = retriever(mem, ns, probe.query, probe.state, K)
                ranked, current = _ranked_events(hits, prefix)
                rows[name].append(base | _score_probe(probe, ranked, current))
    types: dict[str, str] = {}
    for eid, rid in record_of.items():
        types[eid] = mem.get(rid, namespace=ns).type.value
    golds = {e.id: e.gold.type for e in scenario.events if e.gold is not None and e.id in types}
    return {
        "rows": rows,
        "infeasible": infeasible,
        "predicted_types": types,
        "type_correct": sum(types[e] == g for e, g in golds.items()),
        "type_total": len(golds),
        "links": supersede_counts(scenario, mem, record_of),
        "open_conflicts": len(mem.conflicts(ns)),
    }


def supersede_counts(scenario: Scenario, mem: Memory, record_of: Mapping[str, str]) -> tuple[int, int, int]:
    """(true, false, missed) supersede links of a replayed scenario: a stored link new -> old (each
    superseded record's ``superseded_by``, so a correction that retired several records counts each,
    mapped to events by their ``source``) is true when ``gold.supersedes`` of
    the new event names the old one; gold links among the events stored (``record_of``) that the store
    lacks are missed. Links inside one event (the parts of a split text) are not counted."""
    prefix = source_prefix(scenario.id)
    stored = mem.records(namespace=scenario.id, include_archive=True, include_superseded=True)
    event_of = {r.id: r.source[len(prefix) :] for r in stored if r.source and r.source.startswith(prefix)}
    predicted = {
        (event_of[r.superseded_by], event_of[r.id])
        for r in stored
        if r.superseded_by
        and r.id in event_of
        and r.superseded_by in event_of
        and event_of[r.id] != event_of[r.superseded_by]
    }
    gold = {
        (e.id, old)
        for e in scenario.events
        if e.gold is not None and e.id in record_of
        for old in e.gold.supersedes
        if old in record_of
    }
    return len(predicted & gold), len(predicted - gold), len(gold - predicted)


def supersede_figures(tp: int, fp: int, fn: int) -> dict[str, Any]:
    """Precision, recall and F1 of supersede detection (in [0, 1], 4 places) beside the counts they
    come from. Precision is None when nothing was linked, recall when gold has no link, and F1 when
    either is None; F1 is 0 when both are 0."""
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if precision is None or recall is None:
        f1 = None
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "true": tp,
        "false": fp,
        "missed": fn,
        "precision": None if precision is None else round(precision, 4),
        "recall": None if recall is None else round(recall, 4),
        "f1": None if f1 is None else round(f1, 4),
    }


def summarise_probes(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures over per-probe rows (see the module docstring); None where nothing is measured.

    Returns a dict with ``probes``, ``no_needed``, ``recall@5``, ``recall@10``, ``mrr``,
    ``forbidden_rate``, ``integrity`` and ``integrity_min`` (floats in [0, 1], rounded to 4 places).
    """
    scored = [r for r in rows if r["needed"]]
    pairs = [c in r["constraints_held"] for r in rows for c in r["constraints"]]
    per_probe = [len(r["constraints_held"]) / len(r["constraints"]) for r in rows if r["constraints"]]
    return {
        "probes": len(rows),
        "no_needed": len(rows) - len(scored),
        "recall@5": mean_or_none([r["recall@5"] for r in scored]),
        "recall@10": mean_or_none([r["recall@10"] for r in scored]),
        "mrr": mean_or_none([r["mrr"] for r in scored]),
        "forbidden_rate": mean_or_none([1.0 if r["forbidden_shown"] else 0.0 for r in rows]),
        "integrity": mean_or_none([1.0 if p else 0.0 for p in pairs]),
        "integrity_min": round(min(per_probe), 4) if per_probe else None,
    }


def _figures(
    rows: Sequence[Mapping[str, Any]], correct: int, total: int, links: tuple[int, int, int]
) -> dict[str, Any]:
    return {
        "all": summarise_probes(rows),
        "terse": summarise_probes([r for r in rows if r["terse"]]),
        "non_terse": summarise_probes([r for r in rows if not r["terse"]]),
        "type_accuracy": round(correct / total, 4) if total else None,
        "events_typed": total,
        "supersede": supersede_figures(*links),
    }


def _scenario_entry(s: Scenario, rep: Mapping[str, Any], name: str) -> dict[str, Any]:
    """One scenario's entry of a run: status, figures of retriever ``name``, predicted types, probe rows."""
    return {
        "id": s.id,
        "events": len(s.events),
        "status": "infeasible" if rep["infeasible"] else "ok",
        "infeasible_at": rep["infeasible"]["event"] if rep["infeasible"] else None,
        "infeasible_reason": rep["infeasible"]["message"] if rep["infeasible"] else None,
        "figures": None
        if rep["infeasible"]
        else _figures(rep["rows"][name], rep["type_correct"], rep["type_total"], rep["links"]),
        "predicted_types": rep["predicted_types"],
        "open_conflicts": rep["open_conflicts"],
        "probes": rep["rows"][name],
    }


def _summed_links(links: Sequence[tuple[int, int, int]]) -> tuple[int, int, int]:
    return (sum(a for a, _, _ in links), sum(b for _, b, _ in links), sum(c for _, _, c in links))


def run_scenarios(
    scenarios: Sequence[Scenario],
    encoder: Encoder,
    *,
    budgets: Sequence[int] = (),
    retrievers: Sequence[str] = ("content",),
    policy: str = "utility",
    utility_factory: Callable[[], Any] | None = None,
    progress: bool = True,
    dataset: str = "scenarios",
    history: Sequence[NewMemory] = (),
    retrieval: RetrievalConfig = DEFAULT_RETRIEVAL_CONFIG,
) -> dict[str, Any]:
    """Replay every scenario in the full memory and under each capacity budget; score each retriever.

    Args:
        scenarios: loaded scenarios (:func:`~retain.eval.scenarios.load_scenarios`).
        encoder: shared by every replay (wrapped in a :class:`CachingEncoder` here).
        budgets: hot-memory capacities in records (``Budget(capacity=N, policy=policy)``), each >= 0.
        retrievers: names registered in :data:`RETRIEVERS`.
        policy: the budget policy (:data:`retain.retention.budget.BUDGET_POLICIES`).
        utility_factory: builds the utility model of each budgeted memory; None = the memory's
            default (the shipped learned model for utility policies, which needs MiniLM vectors).
        history: records stored in every scenario's namespace before its events (one ``add_many``;
            ``seq`` 0 .. len - 1, the events' positions after them): unrelated older history, so the
            probes are searched among many distractors (``benchmarks/sam_scale.py``). Its records are
            never needed; a hit on one counts as a miss. Stored without supersede detection, edges or
            time expressions among themselves; not with ``budgets``.
        retrieval: the search pool sizes and state parts of every memory (:class:`~retain.config.RetrievalConfig`).

    Returns: the report dict written by ``--json``: ``runs`` holds one entry per (budget,
    retriever) with ``budget`` (None = full memory), ``overall`` (figures, see
    :func:`summarise_probes`, under ``all`` / ``terse`` / ``non_terse`` plus ``type_accuracy``),
    ``feasible``, ``infeasible`` and ``scenarios`` (per-scenario figures and per-probe rows with
    the top-10 event ids, needed, forbidden, constraints held).

    Raises:
        InvalidInput: unknown retriever, duplicate retriever or budget, negative budget, bad policy,
            ``history`` with ``budgets`` or holding anything but :class:`~retain.memory.NewMemory`.
    """
    chosen = {name: get_retriever(name) for name in retrievers}
    if len(chosen) != len(retrievers) or not chosen:
        raise InvalidInput(f"retrievers: give distinct names, got {list(retrievers)}")
    if len(set(budgets)) != len(budgets):
        raise InvalidInput(f"budgets: duplicates in {list(budgets)}")
    history = list(history)
    for i, item in enumerate(history):
        if not isinstance(item, NewMemory):
            raise InvalidInput(f"history: item {i} is a {type(item).__name__}, expected a NewMemory")
    if history and budgets:
        raise InvalidInput("history: for the full-memory run only, not with budgets")
    grid: list[Budget | None] = [None, *(Budget(capacity=n, policy=policy) for n in budgets)]
    cached, config = CachingEncoder(encoder), MemoryConfig(retrieval=retrieval)
    events = sum(len(s.events) for s in scenarios)
    bar = tqdm(total=events * len(grid), disable=not progress, desc="scenario events", unit="ev", mininterval=5.0)
    runs: list[dict[str, Any]] = []
    for budget in grid:
        utility = utility_factory() if budget is not None and budget.needs_utility and utility_factory else None
        mem = Memory(":memory:", encoder=cached, budget=budget, utility=utility, config=config)
        try:
            replays = [(s, _replay(s, mem, chosen, lambda: bar.update(1), history)) for s in scenarios]
        finally:
            mem.close()
        for name in chosen:
            per_scenario = [_scenario_entry(s, rep, name) for s, rep in replays]
            ok = [(e, rep) for e, (_, rep) in zip(per_scenario, replays, strict=True) if e["status"] == "ok"]
            runs.append(
                {
                    "budget": None if budget is None else budget.capacity,
                    "policy": "full" if budget is None else budget.policy,
                    "retriever": name,
                    "feasible": f"{len(ok)}/{len(per_scenario)}",
                    "infeasible": [
                        {"scenario": e["id"], "event": e["infeasible_at"]} for e in per_scenario if e["status"] != "ok"
                    ],
                    "overall": _figures(
                        [r for e, _ in ok for r in e["probes"]],
                        sum(rep["type_correct"] for _, rep in ok),
                        sum(rep["type_total"] for _, rep in ok),
                        _summed_links([rep["links"] for _, rep in ok]),
                    ),
                    "open_conflicts": sum(rep["open_conflicts"] for _, rep in ok),
                    "scenarios": per_scenario,
                }
            )
    bar.close()
    return {
        "dataset": dataset,
        "scenarios": len(scenarios),
        "events": events,
        "probes": sum(len(s.probes) for s in scenarios),
        "terse_probes": sum(p.terse for s in scenarios for p in s.probes),
        "k": K,
        "runs": runs,
    }
