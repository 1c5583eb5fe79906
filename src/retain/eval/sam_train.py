"""Training and cross-validated evaluation of the state-adaptive scorer (:mod:`retain.sam`).

Each probe of a ``retain-scenario/1`` file becomes one :class:`~retain.sam.SamExample`: the scenario is
replayed into a fresh :class:`~retain.Memory` (events added in order with their role, time, position
and the agent state at the event; ``gold`` is never read), and at the probe the candidate pool is built
exactly as :meth:`retain.Memory.search` builds it for a state-carrying search. Labels are the probe's
``needed`` events. Scoring figures count needed events missing from the pool as misses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retain.basis import Encoder
from retain.errors import InvalidInput
from retain.eval.scenario_runner import add_event, source_prefix
from retain.eval.scenarios import load_scenario
from retain.lexical import is_terse
from retain.memory import Memory
from retain.retrieve import PRESETS
from retain.sam import SamExample, StateScorer, train_state_scorer
from retain.state import AgentState
from retain.store.base import HOT_TIERS, RecordFilter

__all__ = ["ProbeExample", "cross_validate", "probe_examples", "rank_metrics", "scenario_files"]


@dataclass(frozen=True, slots=True)
class ProbeExample:
    """A :class:`SamExample` with what the figures need: the pool's event ids, all needed event ids."""

    example: SamExample
    event_ids: tuple[str, ...]
    needed: frozenset[str]
    query: str


def scenario_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``*.json`` under the given files or folders, sorted. Raises InvalidInput when none."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.glob("*.json")) if p.is_dir() else [p])
    if not out:
        raise InvalidInput(f"no scenario files under {[str(p) for p in paths]}")
    return out


def probe_examples(files: Sequence[Path], encoder: Encoder) -> list[ProbeExample]:
    """Replay each scenario file and return one example per probe (see the module docstring).

    Raises:
        InvalidInput: a file that is not a valid ``retain-scenario/1`` document.
    """
    out: list[ProbeExample] = []
    cfg = PRESETS["default"]
    flt = RecordFilter(tiers=HOT_TIERS)
    for path in files:
        sc = load_scenario(path)
        prefix = source_prefix(sc.id)
        order = {e.id: e.index for e in sc.events}
        with Memory(encoder=encoder, state_scorer=False) as mem:
            done = -1
            for probe in sorted(sc.probes, key=lambda p: order[p.after]):
                for event in sc.events[done + 1 : order[probe.after] + 1]:
                    add_event(mem, sc.id, event)
                done = max(done, order[probe.after])
                state = AgentState.from_dict(probe.state)
                encoded = mem.state_encoder.encode(state)
                pool = mem._candidates(probe.query, sc.id, flt, cfg, extra=mem._state_pool(sc.id, encoded, flt))
                scores = mem._fuse(pool, cfg)
                cands, content, n_terms = mem._sam_inputs(sc.id, pool, scores, cfg)
                ids = tuple((r.source or "").removeprefix(prefix) for r in pool.records)
                needed = frozenset(probe.needed)
                example = SamExample(
                    state=encoded,
                    phase=state.phase,
                    cands=cands,
                    content=np.asarray(content, dtype=np.float64),
                    needed=np.array([i in needed for i in ids], dtype=bool),
                    query_terms=n_terms,
                    terse=is_terse(probe.query),
                    group=sc.id,
                )
                out.append(ProbeExample(example, ids, needed, probe.query))
    return out


def _rank_row(p: ProbeExample, scorer: StateScorer | None) -> dict[str, Any]:
    e = p.example
    if scorer is None:
        scores = e.content
    else:
        scores, _, _ = scorer.score(e.state, e.phase, e.cands, e.content, query_terms=e.query_terms, terse=e.terse)
    ranked = [p.event_ids[i] for i in np.argsort(-scores, kind="stable")]
    first = next((r for r, eid in enumerate(ranked, start=1) if eid in p.needed), None)
    return {
        "terse": e.terse,
        "recall@5": len(set(ranked[:5]) & p.needed) / len(p.needed),
        "recall@10": len(set(ranked[:10]) & p.needed) / len(p.needed),
        "mrr": 1.0 / first if first else 0.0,
    }


def _pooled(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def mean(group: list[dict[str, Any]]) -> dict[str, Any]:
        if not group:
            return {"probes": 0}
        figures = {m: round(float(np.mean([r[m] for r in group])), 4) for m in ("recall@5", "recall@10", "mrr")}
        return {"probes": len(group)} | figures

    return {"all": mean(list(rows)), "terse": mean([r for r in rows if r["terse"]])}


def rank_metrics(probes: Sequence[ProbeExample], scorer: StateScorer | None) -> dict[str, Any]:
    """recall@5, recall@10 and MRR (of the first needed event) over all probes and over terse ones
    (probes without needed events are skipped). ``scorer`` None ranks by the content score alone (the
    content-only baseline on the same pools)."""
    return _pooled([_rank_row(p, scorer) for p in probes if p.needed])


def cross_validate(probes: Sequence[ProbeExample], *, folds: int = 5, **train_kwargs: Any) -> dict[str, Any]:
    """Grouped k-fold cross-validation: scenarios are dealt round-robin (sorted by id) into ``folds``
    folds; each fold's probes are scored by a model fitted on the other folds' scenarios only. Figures
    pooled over all held-out probes as :func:`rank_metrics`.

    Raises:
        InvalidInput: fewer than 2 scenarios, or ``folds`` < 2.
    """
    groups = sorted({p.example.group for p in probes})
    if len(groups) < 2 or folds < 2:
        raise InvalidInput(f"cross_validate: needs >= 2 scenarios and folds >= 2 ({len(groups)}, {folds})")
    fold_of = {g: i % min(folds, len(groups)) for i, g in enumerate(groups)}
    rows = []
    for fold in sorted(set(fold_of.values())):
        model = train_state_scorer([p.example for p in probes if fold_of[p.example.group] != fold], **train_kwargs)
        rows += [_rank_row(p, model) for p in probes if fold_of[p.example.group] == fold and p.needed]
    return _pooled(rows)
