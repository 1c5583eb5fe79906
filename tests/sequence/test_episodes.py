"""Ordering questions: query analysis, episode picking, and Memory.search(order="time"/"auto")."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from retain import HashingEncoder
from retain.errors import InvalidInput
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.sequence.episodes import asks_order, asks_own_mentions, ordering_topic, pick_episodes

NS = "garden"
BEAM_STYLE = (
    "Can you list the order in which I brought up different aspects of my vegetable garden "
    "throughout our conversations, in order? Mention ONLY and ONLY three items."
)


@pytest.mark.parametrize(
    "query",
    [
        BEAM_STYLE,
        "Can you walk me through the order in which I brought up different aspects of my app?",
        "In what order did we visit the three museums?",
        "List my trips chronologically.",
        "What was the sequence of repairs on the boiler?",
        "Give me the timeline of the kitchen renovation.",
        "Which did I do first, the course or the move, and then what?",
    ],
)
def test_asks_order_reads_ordering_questions(query: str):
    assert asks_order(query)


@pytest.mark.parametrize(
    "query",
    [
        "What did I say about the garden?",
        "I moved in order to be closer to work; where did I move?",
        "Is everything in order for the launch?",
        "What is my order number?",
        "How should I sequence my resume updates?",
        "Summarise the features, the development timeline and the docs.",
        "When did I first mention the boiler?",
    ],
)
def test_asks_order_ignores_other_questions(query: str):
    assert not asks_order(query)


def test_asks_own_mentions():
    assert asks_own_mentions(BEAM_STYLE)
    assert asks_own_mentions("What did I mention about Kelly?")
    assert not asks_own_mentions("In what order did the assistant suggest the fixes?")


def test_ordering_topic_strips_the_ordering_wording():
    assert ordering_topic(BEAM_STYLE) == "my vegetable garden"
    assert ordering_topic("In what order did we visit the museums?") == "did we visit the museums"
    assert ordering_topic("in order?") == "in order?"  # nothing left: the query is kept


def test_pick_episodes_round_robin_over_segments():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.1])
    segments = ["a", "a", "a", "b", "c", "d"]
    seqs = [0, 4, 8, 0, 0, 0]
    # round 1: one of a, b, c, d (segments by their best score); round 2: a's next ones.
    assert pick_episodes(scores, segments, seqs, 4) == [0, 3, 4, 5]
    assert pick_episodes(scores, segments, seqs, 10) == [0, 3, 4, 5, 1, 2]
    assert pick_episodes(scores, segments, seqs, 10, floor=0.3) == [0, 3, 4, 1, 2]  # d: 0.1 < 0.3 * 0.9
    assert pick_episodes(scores, segments, seqs, 10, limit=2) == [0, 1]


def test_pick_episodes_first_mention_within_a_segment():
    scores = np.array([0.9, 0.4, 0.5])
    assert pick_episodes(scores, ["a", "a", "a"], [10, 2, 6], 2) == [0, 1]  # the best, then the earliest mention
    assert pick_episodes(scores, ["a", "a", "a"], [10, 2, 6], 2, first_mention=False) == [0, 2]


def test_the_best_match_is_never_crowded_out_by_an_earlier_turn():
    # a small store: the earlier neighbours of the only matching turn pass the relative floor
    mem = Memory(encoder=HashingEncoder(dim=384))
    texts = [
        "We fly out of Brennick on 2023-05-04.",
        "I prefer aisle seats.",
        "Hotel must be within 1 km.",
        "Breakfast.",
    ]
    for i, text in enumerate(texts, start=1):
        mem.add(text, namespace="n", segment="s1", seq=i)
    assert "I prefer aisle seats." in [h.record.content for h in mem.search("seats", namespace="n", order="time")]
    assert "I prefer aisle seats." in [r.content for r in mem.timeline("n", query="seats")]


def test_pick_episodes_skips_the_same_exchange_and_keeps_unknown_segments_apart():
    scores = np.array([0.9, 0.85, 0.8, 0.7])
    assert pick_episodes(scores, ["a"] * 4, [10, 11, 14, 9], 3) == [0, 2]  # best 10, then 14 (9, 11: next to 10)
    assert pick_episodes(scores, ["a"] * 4, [10, 11, 14, 9], 3, first_mention=False) == [0, 2]
    assert pick_episodes(scores, [None, None, "a", "a"], [None, None, 1, 2], 3) == [0, 1, 2]


def test_pick_episodes_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="differ in length"):
        pick_episodes(np.array([0.5, 0.4]), ["a"], [0, 1], 2)
    assert pick_episodes(np.array([]), [], [], 3) == []


def _garden(memory: Memory) -> None:
    """Three sessions; the user brings the garden up once in each, amid other talk."""
    items = []
    talk = {
        0: ["I planted tomatoes in my vegetable garden today.", "The weather was sunny all week."],
        1: ["My car needs new tyres before winter.", "The vegetable garden has aphids on the beans."],
        2: ["Our book club meets on Friday.", "I am harvesting the vegetable garden pumpkins now."],
    }
    for s, texts in talk.items():
        when = datetime(2024, 3 + s, 1, tzinfo=UTC)
        for i, text in enumerate(texts):
            items.append(NewMemory(content=text, role="user", event_time=when, segment=f"s{s}", seq=2 * i))
            reply = f"Assistant reply {s}-{i} about the vegetable garden and weather and tyres."
            items.append(NewMemory(content=reply, role="assistant", event_time=when, segment=f"s{s}", seq=2 * i + 1))
    memory.add_many(items, namespace=NS)


def test_search_order_time_returns_one_mention_per_session_in_event_order(memory: Memory):
    _garden(memory)
    hits = memory.search(BEAM_STYLE, namespace=NS, k=3, order="time")
    assert [h.record.content for h in hits] == [
        "I planted tomatoes in my vegetable garden today.",
        "The vegetable garden has aphids on the beans.",
        "I am harvesting the vegetable garden pumpkins now.",
    ]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert all(h.record.role == "user" for h in hits)  # "I brought up": the asker's turns
    assert memory.search(BEAM_STYLE, namespace=NS, k=3, order="auto") == hits


def test_search_order_auto_is_rank_for_other_questions(memory: Memory):
    _garden(memory)
    query = "what is in my vegetable garden?"
    assert memory.search(query, namespace=NS, k=4, order="auto") == memory.search(query, namespace=NS, k=4)


def test_search_order_refuses_bad_values(memory: Memory):
    _garden(memory)
    with pytest.raises(InvalidInput, match="order"):
        memory.search("garden", namespace=NS, order="newest")
    with pytest.raises(InvalidInput, match="expand"):
        memory.search("garden", namespace=NS, order="time", expand=3)
