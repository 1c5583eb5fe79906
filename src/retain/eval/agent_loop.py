"""``retain eval agent``: replay scenarios as an agent loop and score the packed context, not a ranking.

Each scenario (:mod:`retain.eval.scenarios`) is replayed as an agent would use memory: every event is
remembered as it arrives (:func:`~retain.eval.scenario_runner.add_event`: text, role, time, the
event's state; never ``gold``), and at each probe the agent asks for its prompt context,
``Memory.context(query, namespace=..., state=<the probe's state>, budget_tokens=B)``, once per token
budget ``B``. One :class:`~retain.memory.Memory` per hot-memory capacity (plus the full memory), all
sharing one caching encoder. An item of the context is mapped back to its event through the
record's ``source`` (and the id each add returned, so a deduplicated add counts for its event).

Figures per (capacity, token budget), pooled over every probe of every feasible scenario (all
"higher = better" except ``forbidden_rate`` and the token figures):

* ``needed_recall`` — mean over probes with a non-empty ``needed`` of |needed ∩ context| / |needed|;
* ``forbidden_rate`` — share of probes whose context holds a ``forbidden`` event (everything in a
  context is presented as current);
* ``final_coverage`` — at the last probe of each scenario, the share of its hard constraints in the
  context, pooled over scenarios (pairs). The hard constraints of a probe are the events with gold
  type ``hard_constraint`` already ingested and not superseded by gold; ``final_all`` is the share
  of scenarios whose last context holds every one of them;
* ``coverage`` — the same share pooled over every probe;
* ``tokens_mean``, ``tokens_max`` — tokens of the packed lines (the encoder's tokenizer);
* ``infeasible_probes`` — probes where ``context`` raised :class:`~retain.errors.BudgetInfeasible`
  (counted as an empty context: nothing needed found, nothing forbidden shown);
* ``context_ms_p50`` / ``context_ms_p95`` — wall time of the ``context`` calls (information only;
  the latency figure of record is ``benchmarks/context_latency.py``).

``oracle_supersedes=True`` applies each event's gold ``supersedes`` links to the store right after
the event is stored (the older records are marked superseded by the new one), so the figures show
what the packer does with perfect supersede detection. It reads gold, so its figures are an
oracle's, labelled as such in the report, never the system's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqdm import tqdm

from retain.encoders.basis import Encoder
from retain.errors import BudgetInfeasible, InvalidInput
from retain.eval.metrics import latency_summary, mean_or_none
from retain.eval.scenario_runner import add_event, source_prefix
from retain.eval.scenarios import Probe, Scenario
from retain.eval.streams import CachingEncoder
from retain.memory import Memory
from retain.record import MemoryType
from retain.retention.budget import Budget

__all__ = ["DEFAULT_TOKENS", "run_agent_eval", "summarise_context_rows"]

DEFAULT_TOKENS = (1000, 2000, 4000)
"""Token budgets of ``retain eval agent`` when none are given."""


def _apply_gold_supersedes(mem: Memory, scenario: Scenario, index: int, record_of: Mapping[str, str]) -> None:
    """Oracle: mark the records of the events that event ``index`` supersedes (per gold) as superseded."""
    event = scenario.events[index]
    if event.gold is None or not event.gold.supersedes or event.id not in record_of:
        return
    ns, new = scenario.id, record_of[event.id]
    olds = {record_of[o] for o in event.gold.supersedes if o in record_of and record_of[o] != new}
    changed = [r.evolve(superseded_by=new) for r in mem.store.get(ns, sorted(olds)) if r.superseded_by is None]
    if changed:
        mem.store.put(changed)
        mem.core.invalidate(ns)


def _context_events(mem: Memory, ns: str, ids: Sequence[str], record_of: Mapping[str, str]) -> set[str]:
    """Events whose records are among ``ids``: by the record's ``source``, and by the id an add returned."""
    prefix = source_prefix(ns)
    found = {e for e, rid in record_of.items() if rid in set(ids)}
    for rec in mem.store.get(ns, list(ids)):
        if rec.source and rec.source.startswith(prefix):
            found.add(rec.source[len(prefix) :])
    return found


def _score(probe: Probe, shown: set[str], constraints: Sequence[str]) -> dict[str, Any]:
    needed = set(probe.needed)
    return {
        "needed_recall": len(needed & shown) / len(needed) if needed else None,
        "needed_missing": sorted(needed - shown),
        "forbidden_shown": sorted(set(probe.forbidden) & shown),
        "constraints": list(constraints),
        "constraints_in": [c for c in constraints if c in shown],
    }


def _replay(
    scenario: Scenario,
    mem: Memory,
    tokens: Sequence[int],
    oracle: bool,
    archive: bool | None,
    on_event: Callable[[], None],
) -> dict[str, Any]:
    """Replay one scenario as an agent loop; one row per (probe, token budget)."""
    ns = scenario.id
    probes_after: dict[str, list[Probe]] = {}
    for probe in scenario.probes:
        probes_after.setdefault(probe.after, []).append(probe)
    record_of: dict[str, str] = {}
    rows: dict[int, list[dict[str, Any]]] = {b: [] for b in tokens}
    latencies: list[float] = []
    for event in scenario.events:
        try:
            record_of[event.id] = add_event(mem, ns, event)
        except BudgetInfeasible as exc:
            return {"rows": rows, "infeasible": {"event": event.id, "message": str(exc)}, "ms": latencies}
        finally:
            on_event()
        if oracle:
            _apply_gold_supersedes(mem, scenario, event.index, record_of)
        gone = scenario.superseded_by_gold(event.index)
        constraints = [
            e.id
            for e in scenario.events[: event.index + 1]
            if e.gold is not None and e.gold.type == MemoryType.HARD_CONSTRAINT.value and e.id not in gone
        ]
        for probe in probes_after.get(event.id, []):
            for budget in tokens:
                started = time.perf_counter()
                try:
                    ctx = mem.context(
                        probe.query, namespace=ns, budget_tokens=budget, state=probe.state or None, archive=archive
                    )
                except BudgetInfeasible:
                    ids, used, left, failed = [], 0, 0, True
                else:
                    ids, used, left, failed = (
                        [i.record_id for i in ctx.items],
                        ctx.used_tokens,
                        len(ctx.left_out),
                        False,
                    )
                latencies.append((time.perf_counter() - started) * 1000.0)
                shown = _context_events(mem, ns, ids, record_of)
                row = {"probe": probe.id, "after": probe.after, "tokens": used, "left_out": left, "infeasible": failed}
                rows[budget].append(row | _score(probe, shown, constraints))
    return {"rows": rows, "infeasible": None, "ms": latencies}


def summarise_context_rows(rows: Sequence[Mapping[str, Any]], finals: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures over per-probe rows and the last probe of each scenario (``finals``); see the module
    docstring. Floats in [0, 1] rounded to 4 places; None where nothing is measured."""
    scored = [r["needed_recall"] for r in rows if r["needed_recall"] is not None]
    pairs = [c in r["constraints_in"] for r in rows for c in r["constraints"]]
    final_pairs = [c in r["constraints_in"] for r in finals for c in r["constraints"]]
    used = [r["tokens"] for r in rows]
    return {
        "probes": len(rows),
        "needed_recall": mean_or_none(scored),
        "forbidden_rate": mean_or_none([1.0 if r["forbidden_shown"] else 0.0 for r in rows]),
        "final_coverage": mean_or_none([1.0 if p else 0.0 for p in final_pairs]),
        "final_constraints": len(final_pairs),
        "final_all": mean_or_none([1.0 if set(r["constraints"]) <= set(r["constraints_in"]) else 0.0 for r in finals]),
        "coverage": mean_or_none([1.0 if p else 0.0 for p in pairs]),
        "tokens_mean": round(sum(used) / len(used), 1) if used else None,
        "tokens_max": max(used) if used else None,
        "infeasible_probes": sum(r["infeasible"] for r in rows),
    }


def _check(tokens: Sequence[int], capacities: Sequence[int]) -> None:
    for name, values, low in (("tokens", tokens, 1), ("capacities", capacities, 0)):
        if any(isinstance(v, bool) or not isinstance(v, int) or v < low for v in values):
            raise InvalidInput(f"{name}: whole numbers >= {low}, got {list(values)}")
        if len(set(values)) != len(values):
            raise InvalidInput(f"{name}: duplicates in {list(values)}")
    if not tokens:
        raise InvalidInput("tokens: give at least one token budget")


def run_agent_eval(
    scenarios: Sequence[Scenario],
    encoder: Encoder,
    *,
    tokens: Sequence[int] = DEFAULT_TOKENS,
    capacities: Sequence[int] = (),
    policy: str = "utility",
    oracle_supersedes: bool = False,
    archive: bool | None = None,
    progress: bool = True,
    dataset: str = "scenarios",
) -> dict[str, Any]:
    """Replay every scenario as an agent loop in the full memory and under each hot-memory capacity,
    and score the context packed at every probe for every token budget (see the module docstring).

    Args:
        scenarios: loaded scenarios (:func:`~retain.eval.scenarios.load_scenarios`).
        encoder: shared by every replay (wrapped in a :class:`CachingEncoder` here).
        tokens: ``budget_tokens`` of each context call (tokens, each >= 1).
        capacities: hot-memory capacities in records (``Budget(capacity=N, policy=policy)``), each >= 0.
        oracle_supersedes: apply gold supersede links (an oracle; the report says so).
        archive: the ``archive`` argument of every ``context`` call (None = its default).

    Returns: the report dict written by ``--json``: ``runs`` holds one entry per (capacity, token
    budget) with ``capacity`` (None = full memory), ``tokens``, ``overall`` (see
    :func:`summarise_context_rows`), ``feasible``, ``infeasible`` and per-scenario figures and rows.

    Raises:
        InvalidInput: a token budget < 1, a capacity < 0, duplicates, no token budget, a bad policy.
    """
    _check(tokens, capacities)
    grid: list[Budget | None] = [None, *(Budget(capacity=n, policy=policy) for n in capacities)]
    cached = CachingEncoder(encoder)
    events = sum(len(s.events) for s in scenarios)
    bar = tqdm(total=events * len(grid), disable=not progress, desc="agent loop", unit="ev", mininterval=5.0)
    runs: list[dict[str, Any]] = []
    for budget in grid:
        mem = Memory(":memory:", encoder=cached, budget=budget)
        try:
            replays = [
                (s, _replay(s, mem, tokens, oracle_supersedes, archive, lambda: bar.update(1))) for s in scenarios
            ]
        finally:
            mem.close()
        ok = [(s, rep) for s, rep in replays if rep["infeasible"] is None]
        ms = [m for _, rep in ok for m in rep["ms"]]
        for b in tokens:
            per_scenario = [
                {
                    "id": s.id,
                    "status": "ok" if rep["infeasible"] is None else "infeasible",
                    "infeasible_at": None if rep["infeasible"] is None else rep["infeasible"]["event"],
                    "figures": summarise_context_rows(rep["rows"][b], rep["rows"][b][-1:]) if rep["rows"][b] else None,
                    "probes": rep["rows"][b],
                }
                for s, rep in replays
            ]
            runs.append(
                {
                    "capacity": None if budget is None else budget.capacity,
                    "tokens": b,
                    "feasible": f"{len(ok)}/{len(replays)}",
                    "infeasible": [e["id"] for e in per_scenario if e["status"] != "ok"],
                    "overall": summarise_context_rows(
                        [r for _, rep in ok for r in rep["rows"][b]],
                        [rep["rows"][b][-1] for _, rep in ok if rep["rows"][b]],
                    ),
                    "context_ms": latency_summary(ms),
                    "scenarios": per_scenario,
                }
            )
    bar.close()
    return {
        "dataset": dataset,
        "oracle_supersedes": oracle_supersedes,
        "archive": archive,
        "scenarios": len(scenarios),
        "events": events,
        "probes": sum(len(s.probes) for s in scenarios),
        "runs": runs,
    }
