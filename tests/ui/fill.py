"""A small store with one of everything the dashboard shows, written by the UI tests: a superseded
record and its successor, a record holding an e-mail address (redacted by default), a pinned hard
constraint, evictions by a budget, a packed context, and namespaces whose names hold markup."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.memory import Memory
from retain.retention.budget import Budget

__all__ = ["EVAL_REPORT", "EVIL", "SECRET", "Filled", "fill"]

SECRET = "ada.lovelace@example.org"
"""Stored in a record; must never reach a page unless revealed."""
EVIL = "<script>alert(1)</script>"
"""Markup used as a namespace and as a query."""


EVAL_REPORT = {
    "dataset": "locomo:locomo_dev.json",
    "runs": [
        {"policy": "full", "budget": 1.0, "retriever": "learned", "recall@10": 0.8},
        *(
            {"policy": policy, "budget": budget, "recall@10": recall, "hit_rate": hit}
            for policy, budget, recall, hit in (
                ("lru", 0.1, 0.31, 0.4), ("lru", 0.25, 0.48, 0.55), ("lru", 0.5, 0.66, 0.74),
                ("utility", 0.1, 0.42, 0.5), ("utility", 0.25, 0.61, 0.7), ("utility", 0.5, 0.72, 0.8),
            )
        ),
    ],
}  # fmt: skip
"""An evaluation report (the shape ``retain eval locomo --budget ... --json`` writes), figures made
up for the tests; :func:`fill` writes it beside the store (``<store>.eval.json``)."""


@dataclass(frozen=True)
class Filled:
    path: Path
    old_id: str
    new_id: str
    secret_id: str
    plain_id: str
    provenance_id: str
    conflicts: tuple[tuple[str, str], ...] = ()
    """``(namespace, conflict id)`` of the open conflicts (ids ``<new id>:<old id>``): one in ``rules``
    and one in ``rules2``."""


def fill(path: Path, ns: str = "trip") -> Filled:
    """Write namespace ``ns`` of the store at ``path`` (HashingEncoder, 64 dimensions); return its known ids."""
    with Memory(path, encoder=HashingEncoder(64), budget=Budget(12, policy="lru"), state_scorer=False) as mem:
        mem.add("The budget must stay under 5000 EUR", namespace=ns, type="hard_constraint")
        old_id = mem.add("The hotel is the Grand Budapest", namespace=ns, type="fact")
        new_id = mem.update(old_id, "The hotel is the Hotel Adlon", namespace=ns)
        secret_id = mem.add(f"Contact the organiser at {SECRET}", namespace=ns, type="fact")
        plain_id = mem.add("Kayaking on the lake is planned for Tuesday", namespace=ns, type="plan_step")
        for i in range(20):
            mem.add(f"Turn {i}: chatter about the weather number {i}", namespace=ns, segment="s1", seq=i)
        ctx = mem.context("which hotel and budget?", namespace=ns, budget_tokens=40)
        mem.add("A namespace whose name is markup", namespace=EVIL)
    path.with_name(path.name + ".eval.json").write_text(json.dumps(EVAL_REPORT), encoding="utf-8")
    return Filled(path, old_id, new_id, secret_id, plain_id, ctx.provenance_id, conflicts=_conflicts(path))


RULES = (
    ("The total budget must stay under 5,000 EUR.", "The total budget must stay under 4,000 EUR."),
    ("The flight must land before 9 pm.", "The flight must land before 6 pm."),
)


def _conflicts(path: Path) -> tuple[tuple[str, str], ...]:
    """Namespaces ``rules`` and ``rules2``: a pair of contradicting hard constraints stated in one call
    in each, an open conflict (the shipped conflict model decides)."""
    config = MemoryConfig(conflict_model="shipped")
    found = []
    with Memory(path, encoder=HashingEncoder(64), config=config, state_scorer=False) as mem:
        for ns, pair in zip(("rules", "rules2"), RULES, strict=True):
            mem.add_many([{"content": text, "type": "hard_constraint"} for text in pair], namespace=ns)
            (conflict,) = mem.conflicts(ns)
            found.append((ns, conflict.id))
    return tuple(found)
