"""Context packing under pressure: constraints over budget degrade (ranked, merged, compressed, reported),
the working tier skips chatter, the archive answers when asked, an AgentState is accepted."""

from __future__ import annotations

import pytest

from retain import AgentState, Budget, HashingEncoder, InvalidInput, Memory
from retain.safety.context import LEFT_OUT_REASONS
from retain.safety.packing import is_chatter

NS = "trip"
TOPICS = [
    "peanuts", "pork", "shellfish", "stairs", "smoking", "redeye", "layover", "ferries", "hostels", "camping",
    "scooters", "motorbikes", "heights", "caves", "dogs", "cats", "sushi", "gluten", "dairy", "alcohol",
    "casinos", "nightclubs", "cruises", "helicopters", "zip", "bungee", "diving", "snorkel", "sailing", "kayak",
    "rafting", "skiing", "sledding", "hiking", "climbing", "cycling", "horses", "camels", "elephants", "safaris",
    "museums", "operas", "ballets", "concerts", "stadiums", "markets", "malls", "outlets", "spas", "saunas",
]  # fmt: skip


def constraints_mem(n: int = 50) -> tuple[Memory, dict[str, str]]:
    mem = Memory(encoder=HashingEncoder(256), state_scorer=False)
    ids = {t: mem.add(f"No {t}.", namespace=NS, type="hard_constraint") for t in TOPICS[:n]}
    return mem, ids


def test_fifty_constraints_in_ten_tokens_pack_the_most_relevant_and_report_the_rest() -> None:
    mem, ids = constraints_mem(50)
    assert mem.encoder.count_tokens(["[constraint] No peanuts."]) == [3]  # 3 constraints fit in 10 tokens
    ctx = mem.context("is there peanuts in it", namespace=NS, budget_tokens=10, working=0)
    packed = [i.record_id for i in ctx.items]
    assert ids["peanuts"] in packed and len(packed) == 3 and ctx.used_tokens == 9
    assert all(i.why == "hard_constraint" for i in ctx.items)
    left = {x.record_id: x.reason for x in ctx.left_out}
    assert set(left) | set(packed) == set(ids.values())  # every constraint is packed or reported
    assert {left[i] for i in ids.values() if i not in packed} == {"budget"}
    state = AgentState(phase="dinner", constraints={"diet": "no shellfish"})
    ctx = mem.context("what can we eat", namespace=NS, budget_tokens=10, working=0, state=state)
    assert ids["shellfish"] in [i.record_id for i in ctx.items]  # the state counts as relevance too


def test_a_budget_of_zero_is_invalid_input() -> None:
    mem, _ = constraints_mem(3)
    with pytest.raises(InvalidInput, match="budget_tokens"):
        mem.context("peanuts", namespace=NS, budget_tokens=0)


def test_same_slot_duplicates_are_merged_into_the_newest() -> None:
    mem = Memory(encoder=HashingEncoder(256), state_scorer=False)
    old = mem.add("The hotel budget must stay under 120 EUR per night.", namespace=NS, type="hard_constraint")
    new = mem.add("The hotel budget must stay under 120 EUR per night!", namespace=NS, type="hard_constraint")
    other = mem.add("Never book flights before 9am.", namespace=NS, type="hard_constraint")
    need = sum(mem.encoder.count_tokens([f"[constraint] {r.content}" for r in mem.records(namespace=NS)]))
    ctx = mem.context("hotel", namespace=NS, budget_tokens=need - 1, working=0)
    assert [i.record_id for i in ctx.items] == [new, other]
    assert [(x.record_id, x.reason, x.detail) for x in ctx.left_out] == [(old, "merged", f"same slot as {new}")]
    roomy = mem.context("hotel", namespace=NS, budget_tokens=need, working=0)
    assert [i.record_id for i in roomy.items] == [old, new, other]  # within budget nothing is merged


def test_a_long_constraint_is_compressed_by_the_summariser_when_whole_it_does_not_fit() -> None:
    mem = Memory(encoder=HashingEncoder(256), state_scorer=False)
    text = (
        "Every flight must land before 22:00 local time. The client has a strict curfew at the hotel. "
        "Late arrivals were a problem on the last three trips and the team was fined each time."
    )
    rid = mem.add(text, namespace=NS, type="hard_constraint")
    whole = mem.encoder.count_tokens([f"[constraint] {text}"])[0]
    ctx = mem.context("flight landing time", namespace=NS, budget_tokens=whole - 5, working=0)
    assert [(i.record_id, i.why) for i in ctx.items] == [(rid, "compressed")]
    assert ctx.text.startswith("[constraint] ") and len(ctx.text) < len(text) and ctx.used_tokens <= whole - 5
    assert [(x.record_id, x.reason, x.tokens) for x in ctx.left_out] == [(rid, "compressed", whole)]


def test_the_working_tier_skips_acknowledgements_and_reports_them() -> None:
    mem = Memory(encoder=HashingEncoder(64), state_scorer=False)
    fact = mem.add("The hotel in Porto is booked for 3 nights at 95 EUR.", namespace=NS, role="tool")
    acks = [mem.add(t, namespace=NS, role=r) for t, r in [("ok", "user"), ("Nice, thanks!", "user"),
                                                           ("Anything else left to book?", "assistant")]]  # fmt: skip
    assert all(is_chatter(mem.get(a, namespace=NS)) for a in acks)
    assert not is_chatter(mem.get(fact, namespace=NS))
    ctx = mem.context("ok, continue", namespace=NS, budget_tokens=200, working=1)
    assert [(i.record_id, i.why) for i in ctx.items if i.why == "working"] == [(fact, "working")]
    assert {x.record_id for x in ctx.left_out if x.reason == "chatter"} == set(acks)
    assert "chatter" in LEFT_OUT_REASONS


def test_an_agent_state_is_accepted_like_its_mapping() -> None:
    mem, _ = constraints_mem(5)
    state = AgentState(phase="dinner", subgoals=("book table",), constraints={"diet": "no pork"})
    a = mem.context("dinner", namespace=NS, budget_tokens=100, state=state)
    b = mem.context("dinner", namespace=NS, budget_tokens=100, state=state.to_dict())
    assert a.text == b.text and a.provenance.state == b.provenance.state
    with pytest.raises(InvalidInput, match="state: must be an AgentState, a mapping"):
        mem.context("dinner", namespace=NS, budget_tokens=100, state=42)  # type: ignore[arg-type]


def test_the_archive_answers_after_the_hot_tier_unless_turned_off() -> None:
    mem = Memory(encoder=HashingEncoder(256), state_scorer=False, budget=Budget(2, policy="fifo"))
    ferry = mem.add("The ferry to Capri leaves at 08:40 from pier 3.", namespace=NS, type="fact")
    for text in ["The museum opens at ten.", "Dinner is at the trattoria.", "The train is at noon."]:
        mem.add(text, namespace=NS, type="fact")
    assert mem.get(ferry, namespace=NS).tier.value == "archive"
    hot = mem.context("ferry Capri pier", namespace=NS, budget_tokens=200, working=0, archive=False)
    assert ferry not in [i.record_id for i in hot.items] + [x.record_id for x in hot.left_out]
    deep = mem.context("ferry Capri pier", namespace=NS, budget_tokens=200, working=0)  # ARCHIVE_DEFAULT
    whys = [i.why for i in deep.items]
    first = whys.index("archive")
    assert deep.items[first].record_id == ferry  # the best archive hit
    assert set(whys[:first]) == {"retrieved"} and set(whys[first:]) == {"archive"}  # after every hot-tier hit
    with pytest.raises(InvalidInput, match="archive"):
        mem.context("ferry", namespace=NS, budget_tokens=200, archive="yes")  # type: ignore[arg-type]
