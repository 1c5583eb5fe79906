"""Ordering questions: find the distinct episodes in which a topic came up, and lay them out in
event order.

An agent asked "list the order in which I brought up different aspects of X" needs the mentions of X
spread across the whole stream, one per episode, in the order they happened. A plain ranked search
returns the turns most similar to the question, which cluster in one session.
``Memory.search(..., order="time")`` (or ``order="auto"`` when :func:`asks_order` reads an ordering
question) therefore:

1. **Topic.** Searches for the topic of the question (:func:`ordering_topic`: the question minus its
   ordering wording, "can you list the order in which I brought up ...", "... in order?"), so the
   words "order", "list", "conversations" do not pull in turns that happen to use them.
2. **Wide pool.** Ranks a pool of :data:`EPISODE_POOL` candidates (the usual hybrid search and
   fusion), not ``k``.
3. **Speaker.** When the question says the asker brought the topic up ("I brought up", "I
   mentioned", "I asked", :func:`asks_own_mentions`), only the asker's turns (role ``user``) are
   kept, when the pool holds any.
4. **Relevance floor.** Keeps candidates whose fused score is at least :data:`RELATIVE_FLOOR` times
   the best one's (scores are "higher = more relevant"; the floor is relative because absolute
   fused scores differ from query to query), at most the best :data:`EPISODE_CANDIDATES`.
5. **Episodes.** :func:`pick_episodes`: the best candidate of all is always picked first (an answer
   in time order must not leave out the closest match); then round-robin over segments (sessions, in
   order of their best candidate): one candidate of every segment per round, within a segment the earliest one not yet
   picked (a topic is "brought up" where it is first mentioned), skipping a candidate within
   :data:`MIN_GAP` stream positions of one already picked in its segment (the same exchange). So the
   ``k`` items returned are distinct episodes across the stream, not ``k`` turns of the one
   session most similar to the question.
6. **Order.** The picked records are returned in event order (:func:`retain.sequence.order.event_order`:
   event time, then session, then ``seq``).

Query analysis is rules, no model; :func:`asks_order` is what ``order="auto"`` uses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from retain.retrieval.fusion import Hit
from retain.sequence.order import event_order

__all__ = [
    "ASKER_ROLE",
    "EPISODE_CANDIDATES",
    "EPISODE_POOL",
    "MIN_GAP",
    "RELATIVE_FLOOR",
    "asks_order",
    "asks_own_mentions",
    "episodes_in_time",
    "ordering_topic",
    "pick_episodes",
]

EPISODE_POOL = 100
"""Candidates ranked before episodes are picked (the top of the fused ranking)."""
RELATIVE_FLOOR = 0.02
"""A candidate is kept when its fused score >= this share of the best candidate's score (0 = off).
Low: the learned fusion's probabilities are peaked (the gold mentions of a BEAM topic score
0.01-0.03 where the best hit scores 0.3), so the floor should only drop what is clearly off topic
(in a small store, turns about something else entirely score < 0.01 of the best). Chosen on BEAM
chats 1-14 by held-out halves (``benchmarks/beam_ordering.py``;
``docs/benchmarks.md#ordering-questions``)."""
EPISODE_CANDIDATES = 20
"""At most this many candidates (the best, above the floor if one is set) are spread over segments."""
MIN_GAP = 2
"""Two picks of one segment must be at least this many stream positions (``seq``) apart."""
ASKER_ROLE = "user"
"""The role of the asker's own turns (step 3 of the module docstring)."""

# "in order" but not "in order to" (purpose); "the order in which", "in what order", "the / in
# sequence" (the noun, not "sequence my updates"), "chronological(ly)", "the timeline of" (not "the
# development timeline"), "first ... then" within one sentence.
_ORDER = re.compile(
    r"\bin\s+(?:what|which|the|chronological|time|temporal)\s+order\b"
    r"|\bin\s+order\b(?!\s+(?:to|for)\b)"
    r"|\border\s+(?:in\s+which|of\s+(?:events|when|how|the))\b"
    r"|\b(?:the|a|what|which|in)\s+sequence\b|\bchronolog\w*|\b(?:the|a)\s+timeline\s+of\b"
    r"|\bfirst\b[^.?!]{1,80}\bthen\b",
    re.IGNORECASE,
)
_OWN = re.compile(
    r"\b(?:I|I've|I\s+have|did\s+I)\s+(?:first\s+|ever\s+)?"
    r"(?:brought\s+up|bring\s+up|mentioned|mention|raised|raise|asked|ask|talked\s+about|discussed|said|told\s+you)\b",
    re.IGNORECASE,
)
# Ordering wording removed by ordering_topic, in this order.
_WORDING = (
    re.compile(r"\bmention\s+only\b.*$", re.IGNORECASE),  # "Mention ONLY and ONLY five items."
    re.compile(
        r"\b(?:can|could|would)\s+you\s+(?:please\s+)?(?:list|walk\s+me\s+through|tell\s+me|give\s+me|recall|remind\s+me(?:\s+of)?)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:list|walk\s+me\s+through)\b", re.IGNORECASE),
    re.compile(
        r"\b(?:the\s+)?(?:order|sequence)\s+(?:in\s+which|of|that)\b|\bin\s+(?:what|which|the|chronological)\s+order\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bin\s+order\b(?!\s+(?:to|for)\b)|\bchronologically\b", re.IGNORECASE),
    re.compile(r"\bhow\b(?=\s+(?:I|we)\b)", re.IGNORECASE),
    _OWN,
    re.compile(
        r"\bdifferent\s+(?:aspects|ideas|concepts|topics|parts|ways|details)\s+(?:of|related\s+to|about)?",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:throughout|across|during|over|in)\s+(?:all\s+)?(?:of\s+)?our\s+(?:conversations?|chats?|sessions?|discussions?)\b",
        re.IGNORECASE,
    ),
)


def asks_order(query: str) -> bool:
    """True when ``query`` asks for an order of events: "in order", "the order in which", "in what
    order", "the sequence of", "in sequence", "chronologically", "the timeline of", "first ... then"
    (one sentence). "in order to" / "in order for" (purpose), "sequence" as a verb and a timeline
    as a topic ("the development timeline") do not count. English only."""
    return _ORDER.search(query) is not None


def asks_own_mentions(query: str) -> bool:
    """True when ``query`` asks about what the asker said: "I brought up", "I mentioned", "did I
    ask", "I talked about", ... English only."""
    return _OWN.search(query) is not None


def ordering_topic(query: str) -> str:
    """``query`` without its ordering wording: "Can you list the order in which I brought up
    different aspects of my budget tracker throughout our conversations, in order? Mention ONLY and
    ONLY three items." -> "my budget tracker". Returns ``query`` unchanged when nothing with a
    letter or digit would be left."""
    text = query
    for pattern in _WORDING:
        text = pattern.sub(" ", text)
    text = re.sub(r"\s+([,.?!])", r"\1", re.sub(r"\s+", " ", text))
    text = text.strip(" ,.?!;:")
    return text if any(ch.isalnum() for ch in text) else query


def pick_episodes(
    scores: npt.NDArray[np.float64],
    segments: Sequence[str | None],
    seqs: Sequence[int | None],
    k: int,
    *,
    floor: float = RELATIVE_FLOOR,
    limit: int = EPISODE_CANDIDATES,
    min_gap: int = MIN_GAP,
    first_mention: bool = True,
) -> list[int]:
    """Pick up to ``k`` candidates spread over segments (steps 4-5 of the module docstring).

    Args:
        scores: (n,) float64 fused scores, higher = more relevant (non-negative for the relative
            floor to mean a share of the best).
        segments: (n,) segment (session) of each candidate; None is a segment of its own per record.
        seqs: (n,) stream position of each candidate within its segment, or None (never too close).
        k: how many to pick (>= 1).
        floor: keep candidates with score >= floor * max(scores).
        limit: then keep at most this many, best first.
        min_gap: a candidate closer than this (in ``seq``) to a pick of its segment is skipped.
        first_mention: within a segment pick in stream order (earliest first; None ``seq`` last);
            False: best score first.

    Returns: indices into ``scores``, in pick order (the best candidate, then round by round, best
    segment first).
    """
    n = len(scores)
    if not n == len(segments) == len(seqs):
        raise ValueError(f"scores, segments and seqs differ in length ({n}, {len(segments)}, {len(seqs)})")
    if n == 0 or k < 1:
        return []
    best = float(np.max(scores))
    order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] >= floor * best][:limit]

    def key_of(i: int) -> object:  # a record without a segment is a segment of its own
        return segments[i] if segments[i] is not None else ("record", i)

    queues: dict[object, list[int]] = {}
    for i in order:  # segments keyed in order of their best candidate
        queues.setdefault(key_of(i), []).append(i)
    if first_mention:
        for queue in queues.values():
            queue.sort(key=lambda i: (seqs[i] is None, seqs[i] or 0))
    top = order[0]  # the best candidate of all is always picked: earliest-first must not crowd it out
    top_key = key_of(top)
    queues[top_key].remove(top)
    picked: list[int] = [top]
    taken: dict[object, list[int]] = {key: [] for key in queues}
    top_seq = seqs[top]
    if top_seq is not None:
        taken[top_key].append(top_seq)
    done_this_round: object = top_key  # the best candidate is its segment's pick of the first round
    while len(picked) < k and any(queues.values()):
        for key, queue in queues.items():
            if key == done_this_round:
                continue
            while queue:
                i = queue.pop(0)
                pos = seqs[i]
                if pos is None or all(abs(pos - p) >= min_gap for p in taken[key]):
                    picked.append(i)
                    if pos is not None:
                        taken[key].append(pos)
                    break
            if len(picked) == k:
                break
        done_this_round = None
    return picked


def episodes_in_time(hits: Sequence[Hit], query: str, k: int) -> list[Hit]:
    """Steps 3-6 of the module docstring over ``hits`` (the ranked wide pool, best first).

    Args:
        hits: ranked hits of the topic search, ``Hit.score`` higher = more relevant.
        query: the question as asked (read for "I brought up ..." by :func:`asks_own_mentions`).
        k: how many to return (>= 1).

    Returns: up to ``k`` hits in event order, ``rank`` renumbered 1..n in that order, scores as
    ranked (``Hit.score`` and ``Hit.scores`` unchanged).
    """
    pool = list(hits)
    if asks_own_mentions(query):
        own = [h for h in pool if h.record.role == ASKER_ROLE]
        pool = own or pool
    if not pool:
        return []
    scores = np.array([h.score for h in pool], dtype=np.float64)
    picked = pick_episodes(scores, [h.record.segment for h in pool], [h.record.seq for h in pool], k)
    chosen = [pool[i] for i in picked]
    by_id = {h.record.id: h for h in chosen}
    ordered = event_order(sorted((h.record for h in chosen), key=lambda r: r.created_at))
    return [replace(by_id[r.id], rank=rank) for rank, r in enumerate(ordered, start=1)]
