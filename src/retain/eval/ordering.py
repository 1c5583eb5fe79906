"""Event ordering: how well the retrieved evidence recovers the gold order of events (BEAM).

BEAM's ``event_ordering`` questions list the items to order in ``source_chat_ids``
(:attr:`retain.eval.beam.BeamQuestion.evidence_order`: one group of message ids per item, in the gold
order). The memory answers with its top ``k`` retrieved messages.

**Which order is scored.** The retrieved evidence is ordered by its *timeline* (stream position,
``seq``), not by rank: rank says how relevant a message is to the question, not when it happened,
and every record keeps its stream position, so an agent answering an ordering question lays what it
retrieved out on its timeline. The figure therefore measures what the memory can deliver for
ordering: the items it found, in the order it knows them to have happened.

**Score.** Kendall's tau-b (scipy.stats.kendalltau) between the gold position of each item (group
index) and its predicted position: the stream position of the earliest retrieved message of that
item; items with no retrieved message are tied after every retrieved one (missing items cost
concordant pairs, so the figure falls with recall). tau in [-1, 1], higher = closer to the gold
order; 0 when nothing or only one tie class was retrieved. Questions with fewer than two items are
not scored (None). :func:`retrieved_tau` is the same over the retrieved items only (None when fewer
than two were retrieved): the ordering quality of what was found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from scipy.stats import kendalltau

__all__ = ["ordering_tau", "retrieved_tau"]


def _positions(
    retrieved: Sequence[str], timeline: Mapping[str, int], gold: Sequence[Sequence[str]]
) -> list[float | None]:
    found = set(retrieved)
    out: list[float | None] = []
    for group in gold:
        seen = [timeline[i] for i in group if i in found and i in timeline]
        out.append(float(min(seen)) if seen else None)
    return out


def _tau(gold_rank: list[float], predicted: list[float]) -> float:
    if len(set(predicted)) < 2:
        return 0.0
    result = kendalltau(gold_rank, predicted)
    value = float(result.statistic)
    return 0.0 if math.isnan(value) else value


def ordering_tau(retrieved: Sequence[str], timeline: Mapping[str, int], gold: Sequence[Sequence[str]]) -> float | None:
    """Kendall tau-b between the gold order and the timeline order of the retrieved evidence.

    Args:
        retrieved: ids of the retrieved messages (the top k; order ignored).
        timeline: message id -> stream position (0-based ``seq``).
        gold: the items in gold order, each a group of message ids.

    Returns: tau in [-1, 1] (higher = closer to the gold order), unretrieved items tied last;
    None when ``gold`` has fewer than two items.
    """
    if len(gold) < 2:
        return None
    pos = _positions(retrieved, timeline, gold)
    last = max((p for p in pos if p is not None), default=0.0) + 1.0
    return _tau([float(i) for i in range(len(gold))], [last if p is None else p for p in pos])


def retrieved_tau(retrieved: Sequence[str], timeline: Mapping[str, int], gold: Sequence[Sequence[str]]) -> float | None:
    """Kendall tau-b over the retrieved items only (None when fewer than two were retrieved)."""
    pos = _positions(retrieved, timeline, gold)
    kept = [(float(i), p) for i, p in enumerate(pos) if p is not None]
    if len(kept) < 2:
        return None
    return _tau([g for g, _ in kept], [p for _, p in kept])
