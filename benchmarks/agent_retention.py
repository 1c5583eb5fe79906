"""Needed tool and action results still hot at a capacity, on scenario files (issue 20, point 3).

Replays every scenario of the given folders into a ``Memory`` with ``Budget(capacity, policy)`` and,
at each probe, checks which of its ``needed`` events are still in hot memory (tier core or dynamic,
current). Reports the share of needed tool / action results (events whose role is ``tool`` or
``agent_action``: the role is what the agent saw, not gold) that are hot, the share of all needed
events that are hot, and the number of probes where a needed tool result was archived (evicted, not superseded)
while a record the classifier typed as chatter stayed in the dynamic tier. Gold is read only to score.

    HF_HUB_OFFLINE=1 python benchmarks/agent_retention.py scenarios/train scenarios/dev --capacity 20

``--cache FILE`` keeps MiniLM vectors between runs (an .npz keyed by text); ``--utility FILE`` scores
with another utility model JSON; ``--base`` uses the LoCoMo/BEAM model alone (no agent model).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from retain import Budget, Memory, MemoryType, Tier
from retain.encoders.basis import MiniLMEncoder
from retain.eval.scenario_runner import add_event
from retain.eval.scenarios import Scenario, load_scenarios
from retain.eval.streams import CachingEncoder

TOOL_ROLES = frozenset({"tool", "agent_action"})


class DiskCache(CachingEncoder):
    """A CachingEncoder whose vectors survive between runs in an .npz file."""

    def __init__(self, inner: Any, path: Path | None) -> None:
        super().__init__(inner)
        self.path = path
        if path is not None and path.is_file():
            data = np.load(path, allow_pickle=False)
            self._vectors.update(zip(data["texts"].tolist(), data["vectors"], strict=True))
            self._tokens.update(zip(data["counted"].tolist(), data["tokens"].tolist(), strict=True))

    def save(self) -> None:
        """Write every vector and token count held so far to :attr:`path` (nothing when None)."""
        if self.path is None or not self._vectors:
            return
        texts, counted = sorted(self._vectors), sorted(self._tokens)
        np.savez(
            self.path,
            texts=np.array(texts),
            vectors=np.stack([self._vectors[t] for t in texts]),
            counted=np.array(counted),
            tokens=np.array([self._tokens[t] for t in counted], dtype=np.int64),
        )


def replay(scenario: Scenario, mem: Memory) -> list[dict[str, Any]]:
    """Per-probe rows: needed tool results hot / total, needed hot / total, chatter kept over a tool result."""
    ns, record_of, rows = scenario.id, {}, []
    role = {e.id: e.role for e in scenario.events}
    for event in scenario.events:
        record_of[event.id] = add_event(mem, ns, event)
        probes = [p for p in scenario.probes if p.after == event.id]
        if not probes:
            continue
        records = {r.id: r for r in mem.records(namespace=ns, include_archive=True, include_superseded=True)}

        def hot(eid: str, records: dict[str, Any] = records) -> bool:
            r = records.get(record_of.get(eid, ""))
            return r is not None and r.tier is not Tier.ARCHIVE and r.is_current

        chatter_hot = any(r.type is MemoryType.CHATTER and r.tier is Tier.DYNAMIC for r in records.values())

        def archived(eid: str, records: dict[str, Any] = records) -> bool:
            r = records.get(record_of.get(eid, ""))
            return r is not None and r.tier is Tier.ARCHIVE

        for p in probes:
            tools = [n for n in p.needed if role.get(n) in TOOL_ROLES and n in record_of]
            lost = [n for n in tools if not hot(n)]
            rows.append(
                {
                    "tools": len(tools),
                    "tools_hot": len(tools) - len(lost),
                    "needed": len(p.needed),
                    "needed_hot": sum(hot(n) for n in p.needed),
                    "chatter_over_tool": any(archived(n) for n in lost) and chatter_hot,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--capacity", type=int, default=20)
    parser.add_argument("--policy", default="utility")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--utility", type=Path, default=None, help="a LearnedUtility / AgentUtility JSON")
    parser.add_argument("--base", action="store_true", help="the LoCoMo/BEAM utility model alone")
    args = parser.parse_args()
    enc = DiskCache(MiniLMEncoder(), args.cache)
    out = {}
    for folder in args.folders:
        scenarios = load_scenarios(folder)
        utility = None
        if args.base:
            from retain.retention.utility import LearnedUtility

            utility = LearnedUtility.load()
        elif args.utility is not None:
            from retain.retention.agent_utility import AgentUtility

            utility = AgentUtility.load(args.utility)
        rows = []
        for s in scenarios:
            with Memory(encoder=enc, budget=Budget(capacity=args.capacity, policy=args.policy), utility=utility) as mem:
                rows += replay(s, mem)
        tool_rows = [r for r in rows if r["tools"]]
        out[str(folder)] = {
            "scenarios": len(scenarios),
            "probes": len(rows),
            "needed_tool_results_hot": round(
                sum(r["tools_hot"] for r in rows) / max(1, sum(r["tools"] for r in rows)), 4
            ),
            "needed_hot": round(sum(r["needed_hot"] for r in rows) / max(1, sum(r["needed"] for r in rows)), 4),
            "probes_chatter_kept_over_tool": sum(r["chatter_over_tool"] for r in tool_rows),
        }
        enc.save()
    print(json.dumps({"capacity": args.capacity, "policy": args.policy, "splits": out}, indent=1))


if __name__ == "__main__":
    main()
