"""Training and cross-validated evaluation of the state-adaptive scorer (:mod:`retain.state.scorer`).

Each probe of a ``retain-scenario/1`` file becomes one :class:`~retain.state.training.SamExample`: the
scenario is replayed into a fresh :class:`~retain.Memory` (events added in order with their role, time,
position and the agent state at the event; ``gold`` is never read), and at the probe the candidate pool
is built exactly as :meth:`retain.Memory.search` builds it for a state-carrying search. Labels are the
probe's ``needed`` events. Scoring figures count needed events missing from the pool as misses.

Types. A candidate's type at search time is what the memory's type classifier (by default the learned
one, :mod:`retain.text.typemodel`) said when the record was written, which can differ from the
event's ``gold.type``. Fitted on those types, the scorer learns to trust a type as far as the classifier
is right *on the training files*.
:func:`gold_typed` gives the same examples with each candidate's ``gold.type`` instead (the
classifier's type where an event has no gold key); ``train_types="gold"`` fits on them (teacher
forcing: the answer key of the training files, which fitting may read). Scoring always uses the
classifier's types, as a search does. The default is ``"predicted"``: a scorer fitted on gold types
trusts types more than the classifier earns, and ranks worse when scored on the classifier's types.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder
from retain.errors import InvalidInput
from retain.eval.scenario_runner import add_event, source_prefix
from retain.eval.scenarios import load_scenario
from retain.memory import Memory
from retain.record import MemoryType
from retain.retrieval.fusion import PRESETS
from retain.retrieval.pool import candidates, sam_inputs, state_pool
from retain.retrieval.search import fuse
from retain.state.agent import AgentState
from retain.state.candidates import TYPES
from retain.state.scorer import StateScorer
from retain.state.training import SamExample, train_state_scorer
from retain.store import HOT_TIERS, RecordFilter
from retain.text.lexical import is_terse

__all__ = [
    "TRAIN_TYPES",
    "ProbeExample",
    "cross_validate",
    "gold_typed",
    "probe_examples",
    "rank_metrics",
    "scenario_files",
    "score_metrics",
    "training_examples",
]

TrainTypes = Literal["gold", "predicted"]
TRAIN_TYPES: tuple[TrainTypes, ...] = ("gold", "predicted")
"""Which candidate types a scorer is fitted on: the training files' ``gold.type`` or the classifier's."""


@dataclass(frozen=True, slots=True)
class ProbeExample:
    """A :class:`SamExample` with what the figures need: the pool's event ids, all needed event ids.

    ``gold_types`` ((n,) intp index into :data:`retain.state.candidates.TYPES`, one per candidate) is each pool
    event's ``gold.type``, the classifier's type where the event has none; ``example`` carries the
    classifier's types."""

    example: SamExample
    event_ids: tuple[str, ...]
    needed: frozenset[str]
    query: str
    gold_types: npt.NDArray[np.intp] | None = None


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
        gold = {e.id: TYPES.index(MemoryType(e.gold.type)) for e in sc.events if e.gold is not None}
        with Memory(encoder=encoder, state_scorer=False) as mem:
            done = -1
            for probe in sorted(sc.probes, key=lambda p: order[p.after]):
                for event in sc.events[done + 1 : order[probe.after] + 1]:
                    add_event(mem, sc.id, event)
                done = max(done, order[probe.after])
                state = AgentState.from_dict(probe.state)
                encoded = mem.state_encoder.encode(state)
                extra = state_pool(mem.store, sc.id, encoded, flt, mem.config.retrieval)
                pool = candidates(mem.store, mem.encoder, probe.query, sc.id, flt, cfg, extra=extra)
                scores = fuse(mem.fusion, pool, cfg)
                cands, content, n_terms = sam_inputs(mem.store, sc.id, pool, scores, cfg, mem.core.candidate_memo)
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
                gold_types = np.array(
                    [gold.get(i, int(t)) for i, t in zip(ids, cands.types, strict=True)], dtype=np.intp
                )
                out.append(ProbeExample(example, ids, needed, probe.query, gold_types))
    return out


def gold_typed(probes: Sequence[ProbeExample]) -> list[SamExample]:
    """The probes' examples with each candidate typed by its ``gold.type`` (see the module docstring).

    Raises:
        InvalidInput: a probe built without gold types (not by :func:`probe_examples`).
    """
    out = []
    for p in probes:
        if p.gold_types is None or p.gold_types.shape != p.example.cands.types.shape:
            raise InvalidInput(f"probe of {p.example.group}: no gold types for its {len(p.event_ids)} candidates")
        out.append(replace(p.example, cands=replace(p.example.cands, types=p.gold_types)))
    return out


def training_examples(probes: Sequence[ProbeExample], train_types: TrainTypes) -> list[SamExample]:
    """The examples a scorer is fitted on: :func:`gold_typed` for ``"gold"``, as built for ``"predicted"``.

    Raises:
        InvalidInput: ``train_types`` is neither.
    """
    if train_types == "gold":
        return gold_typed(probes)
    if train_types == "predicted":
        return [p.example for p in probes]
    raise InvalidInput(f"train_types: {train_types!r}, expected one of {TRAIN_TYPES}")


def _rank_row(p: ProbeExample, scorer: StateScorer | None) -> dict[str, Any]:
    e = p.example
    if scorer is None:
        return _ranked_row(p, e.content)
    scores, _, _ = scorer.score(e.state, e.phase, e.cands, e.content, query_terms=e.query_terms, terse=e.terse)
    return _ranked_row(p, scores)


def _ranked_row(p: ProbeExample, scores: npt.NDArray[np.float64]) -> dict[str, Any]:
    e = p.example
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


def score_metrics(probes: Sequence[ProbeExample], scores: Sequence[npt.NDArray[np.float64]]) -> dict[str, Any]:
    """:func:`rank_metrics` for scores from any ranker: ``scores[i]`` ((n_i,) float64, higher = more
    relevant) ranks probe ``i``'s candidates (ties keep pool order).

    Raises:
        InvalidInput: not one score array per probe, or an array whose length is not its pool's.
    """
    if len(scores) != len(probes):
        raise InvalidInput(f"scores: {len(scores)} arrays for {len(probes)} probes")
    rows = []
    for i, (p, s) in enumerate(zip(probes, scores, strict=True)):
        s = np.asarray(s, dtype=np.float64)
        if s.shape != (len(p.event_ids),):
            raise InvalidInput(f"scores[{i}]: shape {s.shape}, expected ({len(p.event_ids)},)")
        if p.needed:
            rows.append(_ranked_row(p, s))
    return _pooled(rows)


def cross_validate(
    probes: Sequence[ProbeExample], *, folds: int = 5, train_types: TrainTypes = "predicted", **train_kwargs: Any
) -> dict[str, Any]:
    """Grouped k-fold cross-validation: scenarios are dealt round-robin (sorted by id) into ``folds``
    folds; each fold's probes are scored by a model fitted on the other folds' scenarios only (on the
    types ``train_types`` names, :func:`training_examples`; scored on the classifier's types). Figures
    pooled over all held-out probes as :func:`rank_metrics`.

    Raises:
        InvalidInput: fewer than 2 scenarios, ``folds`` < 2, or an unknown ``train_types``.
    """
    groups = sorted({p.example.group for p in probes})
    if len(groups) < 2 or folds < 2:
        raise InvalidInput(f"cross_validate: needs >= 2 scenarios and folds >= 2 ({len(groups)}, {folds})")
    fold_of = {g: i % min(folds, len(groups)) for i, g in enumerate(groups)}
    rows = []
    for fold in sorted(set(fold_of.values())):
        fit = [p for p in probes if fold_of[p.example.group] != fold]
        model = train_state_scorer(training_examples(fit, train_types), **train_kwargs)
        rows += [_rank_row(p, model) for p in probes if fold_of[p.example.group] == fold and p.needed]
    return _pooled(rows)
