"""Predictive prefetch against the same budget without prediction (issue 20, point 6).

Replays each scenario (no budget) and, after the event a probe follows, fills a cache of ``k``
records three ways from what the agent knows *before* its next step (the state of that event, never
the probe's state or query): ``prefetch`` (``Memory.prefetch``: the phase model's stay / move split),
``current`` (a state-adaptive search for the current state with the phase as the query, no
prediction: the same budget), ``current_focus`` (the same search with prefetch's query, the open
questions, top subgoal and last result: no prediction, same query), ``oracle_next_state`` (that search
for the probe's own state: the ceiling of predicting the next state perfectly) and ``recent`` (the
``k`` newest hot records). Reports the mean share of the probe's ``needed`` events in
each cache (probes whose event's phase the model cannot predict from count for all three, with an
empty prefetch), and how many probes had a prediction.

    HF_HUB_OFFLINE=1 python benchmarks/prefetch.py scenarios/dev scenarios/test --cache FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from retain import AgentState, Memory
from retain.encoders.basis import MiniLMEncoder
from retain.eval.scenario_runner import add_event, source_prefix
from retain.eval.scenarios import Scenario, load_scenarios
from retain.state.prefetch import _focus

sys.path.insert(0, str(Path(__file__).parent))
from agent_retention import DiskCache

METHODS = ("prefetch", "current", "current_focus", "oracle_next_state", "recent")


def _events(records: list[Any], prefix: str) -> set[str]:
    return {r.source[len(prefix) :] for r in records if r.source and r.source.startswith(prefix)}


def replay(scenario: Scenario, mem: Memory, k: int) -> list[dict[str, Any]]:
    """Per-probe needed recall of the three caches."""
    ns, prefix, rows = scenario.id, source_prefix(scenario.id), []
    for event in scenario.events:
        add_event(mem, ns, event)
        for p in (p for p in scenario.probes if p.after == event.id and p.needed):
            state = dict(event.state)
            warm = mem.prefetch(state, namespace=ns, k=k)
            now = mem.search(str(state.get("phase") or "continue"), namespace=ns, k=k, state=state or None)
            st = AgentState.from_dict(state)
            focus = mem.search(_focus(st, st.phase or "continue"), namespace=ns, k=k, state=state or None)
            nxt = AgentState.from_dict(dict(p.state))  # the probe's own state: an oracle next state
            oracle = mem.search(_focus(nxt, nxt.phase or "continue"), namespace=ns, k=k, state=dict(p.state) or None)
            recent = mem.records(namespace=ns)[-k:]
            need = set(p.needed)
            rows.append(
                {
                    "predicted": bool(warm.hits),
                    "prefetch": len(need & _events([h.record for h in warm.hits], prefix)) / len(need),
                    "current": len(need & _events([h.record for h in now], prefix)) / len(need),
                    "current_focus": len(need & _events([h.record for h in focus], prefix)) / len(need),
                    "oracle_next_state": len(need & _events([h.record for h in oracle], prefix)) / len(need),
                    "recent": len(need & _events(recent, prefix)) / len(need),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--cache", type=Path, default=None)
    args = parser.parse_args()
    enc = DiskCache(MiniLMEncoder(), args.cache)
    out = {}
    for folder in args.folders:
        rows: list[dict[str, Any]] = []
        for s in load_scenarios(folder):
            with Memory(encoder=enc) as mem:
                rows += replay(s, mem, args.k)
        n = max(1, len(rows))
        out[str(folder)] = {
            "probes": len(rows),
            "predicted": sum(r["predicted"] for r in rows),
            **{m: round(sum(r[m] for r in rows) / n, 4) for m in METHODS},
        }
        enc.save()
    print(json.dumps({"k": args.k, "splits": out}, indent=1))


if __name__ == "__main__":
    main()
