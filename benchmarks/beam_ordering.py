"""BEAM event ordering: the ordering retrieval (``Memory.search(order="time")``) and its ablations.

Replays BEAM chats into memory (MiniLM, as ``retain eval beam``), asks every ``event_ordering``
question, and prints, for the top k = 10 the memory returns: ``tau`` (Kendall tau-b against the gold
order, missing items tied last), ``tau_retrieved`` (over the retrieved items only; n = questions with
two or more retrieved) and ``recall`` (share of gold messages retrieved), over all chats and over the
odd / even chats apart. The pool cap and first-mention were chosen on all of chats 1-14 (the split
only shows how much those figures move between halves); the relative floor and the tiling window are
chosen on one half and reported on the other (the ``held out`` lines).

Variants: ``rank`` (plain search, best first, laid out by stream position), ``time`` (the shipped
ordering retrieval) and ``time`` without one step each: the topic extraction, the asker's-turns
filter, first mention within a session (best score instead); relative floors of 0 (none), 0.05 (what
shipped before) and 0.1 (shipped: 0.02); two pool caps; superseded records searched too
(``include_superseded=True``: the order of mentions is history);
and ``tiled w=N``: each session cut into sub-topic episodes (:mod:`tiling`, TextTiling over
the embeddings of all its turns, ``N`` turns a side, Hearst's cutoff), one pick per episode (the
earliest candidate of the session's next episode not yet picked) instead of one per exchange.

    python benchmarks/beam_ordering.py --data ../shared/data/beam/100K [--chats 1,2]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from tiling import episode_labels

from retain.encoders.basis import MiniLMEncoder
from retain.eval.beam import load_beam
from retain.eval.beam_runner import BEAM_CONFIG, ORDERED_CATEGORY, beam_stream
from retain.eval.ordering import ordering_tau, retrieved_tau
from retain.eval.streams import EVIDENCE_KEY, ORDER_K, CachingEncoder
from retain.memory import Memory
from retain.record import MemoryRecord
from retain.retrieval.fusion import Hit
from retain.sequence.episodes import (
    ASKER_ROLE,
    EPISODE_CANDIDATES,
    EPISODE_POOL,
    RELATIVE_FLOOR,
    asks_own_mentions,
    ordering_topic,
    pick_episodes,
)
from retain.sequence.order import event_order

Variant = Callable[[Memory, str, str], list[Hit]]


# "different <up to 3 words> aspects|ideas|... (and <word>) of|related to|about|for": the generic head
# noun of a vague ordering question, kept out of the topic ("different foundational concepts related to
# probability" -> "foundational probability"); tried as a variant of ordering_topic.
_GENERIC = re.compile(
    r"\bdifferent\s+((?:[\w-]+\s+){0,3}?)(?:aspects|ideas|concepts|topics|parts|ways|details|things|points)"
    r"(?:\s+and\s+([\w-]+))?\s*(?:of|related\s+to|about|for|that)?\b",
    re.IGNORECASE,
)


def _generic_dropped(question: str) -> str:
    text = _GENERIC.sub(lambda m: " ".join(x for x in m.groups() if x), question)
    return ordering_topic(re.sub(r"\s+", " ", text))


def _episodes(topic: bool = True, own: bool = True, first: bool = True, floor: float = RELATIVE_FLOOR,
              limit: int = EPISODE_CANDIDATES, history: bool = False, generic: bool = False) -> Variant:  # fmt: skip
    """The ordering retrieval of retain.sequence.episodes with one step changed."""

    def run(mem: Memory, ns: str, question: str) -> list[Hit]:
        text = (_generic_dropped(question) if generic else ordering_topic(question)) if topic else question
        pool = mem.search(text, namespace=ns, k=EPISODE_POOL, allow_raw=True, include_superseded=history)
        if own and asks_own_mentions(question):
            pool = [h for h in pool if h.record.role == ASKER_ROLE] or pool
        if not pool:
            return []
        scores = np.array([h.score for h in pool])
        picked = pick_episodes(
            scores, [h.record.segment for h in pool], [h.record.seq for h in pool], ORDER_K,
            floor=floor, limit=limit, first_mention=first,
        )  # fmt: skip
        chosen = {pool[i].record.id: pool[i] for i in picked}
        records = sorted((h.record for h in chosen.values()), key=lambda r: r.created_at)
        return [chosen[r.id] for r in event_order(records)]

    return run


def _tiled(window: int) -> Variant:
    """The ordering retrieval with sub-topic episodes (tiling) as the unit of one pick."""
    labels: dict[tuple[int, str], dict[str, int]] = {}

    def episode_of(mem: Memory, ns: str, record: MemoryRecord) -> str:
        key = (id(mem), f"{ns}/{record.segment}")
        if key not in labels:
            turns = [r for r in mem.records(namespace=ns) if r.segment == record.segment and r.embedding is not None]
            turns.sort(key=lambda r: (r.seq is None, r.seq or 0))
            found = episode_labels(np.stack([r.embedding for r in turns]), window=window) if turns else []
            labels[key] = {r.id: int(e) for r, e in zip(turns, found, strict=True)}
        return f"{record.segment}#{labels[key].get(record.id, -1)}"

    def run(mem: Memory, ns: str, question: str) -> list[Hit]:
        pool = mem.search(ordering_topic(question), namespace=ns, k=EPISODE_POOL, allow_raw=True)
        if asks_own_mentions(question):
            pool = [h for h in pool if h.record.role == ASKER_ROLE] or pool
        if not pool:
            return []
        best = max(h.score for h in pool)
        kept = [h for h in pool if h.score >= RELATIVE_FLOOR * best][:EPISODE_CANDIDATES]
        sessions: dict[str | None, list[Hit]] = {}
        for h in kept:  # sessions in order of their best candidate, candidates in stream order
            sessions.setdefault(h.record.segment, []).append(h)
        for queue in sessions.values():
            queue.sort(key=lambda h: (h.record.seq is None, h.record.seq or 0))
        picked: list[Hit] = []
        used: set[str] = set()
        while len(picked) < ORDER_K and any(sessions.values()):
            for queue in sessions.values():
                if not queue:
                    continue
                fresh = [h for h in queue if episode_of(mem, ns, h.record) not in used]
                h = (fresh or queue)[0]
                queue.remove(h)
                used.add(episode_of(mem, ns, h.record))
                picked.append(h)
                if len(picked) == ORDER_K:
                    break
        chosen = {h.record.id: h for h in picked}
        records = sorted((h.record for h in picked), key=lambda r: r.created_at)
        return [chosen[r.id] for r in event_order(records)]

    return run


TILING_WINDOWS = (1, 2, 3, 5)
"""Windows tried for the ``tiled`` variants; the one best on one half is reported on the other."""

VARIANTS: dict[str, Variant] = {
    "rank": lambda mem, ns, q: mem.search(q, namespace=ns, k=ORDER_K, allow_raw=True),
    "time (shipped)": lambda mem, ns, q: mem.search(q, namespace=ns, k=ORDER_K, allow_raw=True, order="time"),
    "time, whole question": _episodes(topic=False),
    "time, every speaker": _episodes(own=False),
    "time, best in session": _episodes(first=False),
    "time, no floor": _episodes(floor=0.0),
    "time, floor 0.05 (old)": _episodes(floor=0.05),
    "time, floor 0.1": _episodes(floor=0.1),
    "time, 10 candidates": _episodes(limit=10),
    "time, 30 candidates": _episodes(limit=30),
    "time, with superseded": _episodes(history=True),
    "time, generic nouns out": _episodes(generic=True),
    **{f"tiled w={w}": _tiled(w) for w in TILING_WINDOWS},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="BEAM tier folder (e.g. ../shared/data/beam/100K)")
    parser.add_argument("--chats", default=None, help="only these chats, e.g. 1,2")
    args = parser.parse_args()
    chats = load_beam(args.data, args.chats.split(",") if args.chats else None)
    encoder = CachingEncoder(MiniLMEncoder())
    rows: dict[str, list[tuple[int, Any, Any, float]]] = {name: [] for name in VARIANTS}
    started = time.perf_counter()
    for chat in chats:
        stream = beam_stream(chat)
        ns = f"beam-{chat.chat_id}"
        with Memory(":memory:", encoder=encoder, config=BEAM_CONFIG) as mem:
            for batch in stream.batches:
                for item in batch:
                    mem.add_many([item], namespace=ns, actor="eval")
            timeline = {str(r.metadata.get(EVIDENCE_KEY)): r.seq for r in mem.records(namespace=ns)}
            for q in stream.questions:
                if q.category != ORDERED_CATEGORY or len(q.order) < 2:
                    continue
                for name, variant in VARIANTS.items():
                    ids = [str(h.record.metadata.get(EVIDENCE_KEY)) for h in variant(mem, ns, q.text)]
                    recall = len(set(q.evidence) & set(ids)) / len(q.evidence)
                    number = int(chat.chat_id) if chat.chat_id.isdigit() else 0
                    rows[name].append(
                        (number, ordering_tau(ids, timeline, q.order), retrieved_tau(ids, timeline, q.order), recall)
                    )
    seconds = time.perf_counter() - started
    print(f"{len(chats)} chats, {len(rows['rank'])} ordering questions, k={ORDER_K}, {seconds:.0f} s")
    print(f"{'variant':24s} {'all: tau / tau_retrieved (n) / recall':40s} {'odd chats':30s} even chats")
    for name, found in rows.items():
        halves = (lambda c: True, lambda c: c % 2 == 1, lambda c: c % 2 == 0)
        cells = [_cell([r for r in found if keep(r[0])]) for keep in halves]
        print(f"{name:24s} {cells[0]:40s} {cells[1]:30s} {cells[2]}")
    floors = ["time (shipped)", *(name for name in rows if name.startswith("time, floor"))]
    tiled = ["time (shipped)", *(name for name in rows if name.startswith("tiled"))]
    for what, names in (("floor", floors), ("tiling", tiled)):
        for chosen_on, parity, other in (("odd", 1, 0), ("even", 0, 1)):
            best = max(names, key=lambda name: _half_tau(rows[name], parity))
            shipped = _half_tau(rows["time (shipped)"], other)
            print(f"held out, {what}: chosen on {chosen_on} chats: {best}; tau on the other half "
                  f"{_half_tau(rows[best], other):.3f} (shipped there: {shipped:.3f})")  # fmt: skip


def _half_tau(rows: list[tuple[int, Any, Any, float]], parity: int) -> float:
    """Mean tau over the chats whose number has this parity (1 = odd); NaN when there are none."""
    taus = [r[1] for r in rows if r[0] % 2 == parity]
    return float(np.mean(taus)) if taus else float("nan")


def _cell(rows: list[tuple[int, Any, Any, float]]) -> str:
    if not rows:
        return "-"
    found = [r[2] for r in rows if r[2] is not None]
    tau_found = f"{np.mean(found):.3f}" if found else "-"
    return f"{np.mean([r[1] for r in rows]):.3f} / {tau_found} ({len(found)}) / {np.mean([r[3] for r in rows]):.3f}"


if __name__ == "__main__":
    main()
