"""Budgeted hot memory: evictions go to the archive, are audited, and never touch mandatory records."""

import math

import numpy as np
import pytest

from retain import BudgetInfeasible, HashingEncoder, InvalidInput, Memory, MemoryConfig, MemoryType, Tier
from retain.errors import InvalidUtility
from retain.retention.budget import Budget, BudgetUnit

NS = "agent-1"


class FixedUtility:
    """A utility model that returns a fixed score per content keyword (test double)."""

    name = "fixed-test-utility"

    def __init__(self, scores: dict[str, float], default: float = 0.5) -> None:
        self.scores, self.default = scores, default

    def score(self, records, contexts):
        out = []
        for r in records:
            out.append(next((v for k, v in self.scores.items() if k in r.content), self.default))
        return np.array(out, dtype=np.float64)

    def feedback(self, record, context, used):
        pass


def mem(budget: Budget, utility=None) -> Memory:
    return Memory(encoder=HashingEncoder(64), budget=budget, utility=utility)


def tiers(m: Memory) -> dict[str, str]:
    return {r.content: r.tier.value for r in m.records(namespace=NS)}


@pytest.mark.parametrize("policy", ["fifo", "lru", "random", "utility", "knapsack", "lookahead"])
def test_capacity_three_four_adds_hard_constraint_survives(policy):
    m = mem(Budget(3, policy=policy), FixedUtility({"weather": 0.1}))
    first = m.add("The total budget must stay under 5000 EUR.", namespace=NS, type="hard_constraint")
    others = [
        m.add(t, namespace=NS, type="fact") for t in ("Flight is on May 3", "Hotel is in Lyon", "The weather was nice")
    ]
    held = m.records(namespace=NS)
    assert len(held) == 4  # nothing disappeared
    assert m.get(first, namespace=NS).tier is Tier.CORE
    hot = [r for r in held if r.tier is not Tier.ARCHIVE]
    archived = [r for r in held if r.tier is Tier.ARCHIVE]
    assert len(hot) == 3 and len(archived) == 1
    assert archived[0].id in others
    evictions = [e for e in m.store.audit_log(NS) if e["op"] == "evict"]
    assert [e["record_id"] for e in evictions] == [archived[0].id]
    assert evictions[0]["policy"] == policy and "capacity 3" in evictions[0]["reason"]
    assert "utility" in evictions[0]["details"]
    # the archive is searchable on request, not by default
    query = archived[0].content
    assert archived[0].id not in [h.record.id for h in m.search(query, namespace=NS, config="lexical")]
    assert archived[0].id in [h.record.id for h in m.search(query, namespace=NS, config="lexical", tiers=["archive"])]


def test_fifo_evicts_the_oldest_and_utility_the_least_useful():
    f = mem(Budget(2, policy="fifo"))
    for t in ("alpha one", "beta two", "gamma three"):
        f.add(t, namespace=NS, type="fact")
    assert tiers(f) == {"alpha one": "archive", "beta two": "dynamic", "gamma three": "dynamic"}
    u = mem(Budget(2, policy="utility"), FixedUtility({"alpha": 0.9, "beta": 0.1, "gamma": 0.5}))
    for t in ("alpha one", "beta two", "gamma three"):
        u.add(t, namespace=NS, type="fact")
    assert tiers(u) == {"alpha one": "dynamic", "beta two": "archive", "gamma three": "dynamic"}
    assert u.get(u.records(namespace=NS)[0].id, namespace=NS).importance == pytest.approx(0.9)


def test_budget_zero_archives_everything_and_search_is_empty():
    m = mem(Budget(0, policy="utility"), FixedUtility({}))
    for t in ("one fact", "two facts", "three facts"):
        m.add(t, namespace=NS, type="fact")
    assert set(tiers(m).values()) == {"archive"}
    assert m.search("facts", namespace=NS) == []
    assert len(m.search("facts", namespace=NS, tiers=["archive"])) == 3


def test_mandatory_over_budget_raises_and_drops_nothing():
    m = mem(Budget(1, policy="fifo"))
    m.add("Never book flights before 7am", namespace=NS, type="hard_constraint")
    before = m.records(namespace=NS)
    with pytest.raises(BudgetInfeasible):
        m.add("Peanut allergy: nothing with peanuts", namespace=NS, type="hard_constraint")
    assert m.records(namespace=NS) == before
    assert [e["op"] for e in m.store.audit_log(NS)] == ["add"]
    # the memory still works afterwards
    m.add("A plain fact about trains", namespace=NS, type="fact")
    assert len(m.records(namespace=NS)) == 2


def test_token_budget_counts_tokens():
    m = mem(Budget(6, unit=BudgetUnit.TOKENS, policy="fifo"))
    m.add("one two three", namespace=NS, type="fact")  # 3 tokens
    m.add("four five six", namespace=NS, type="fact")  # 6
    m.add("seven eight", namespace=NS, type="fact")  # 8 > 6: the oldest leaves
    assert tiers(m) == {"one two three": "archive", "four five six": "dynamic", "seven eight": "dynamic"}


def test_update_that_grows_is_checked_against_the_budget():
    m = mem(Budget(8, unit=BudgetUnit.TOKENS, policy="fifo"))
    a = m.add("alpha beta", namespace=NS, type="fact")
    m.add("gamma delta", namespace=NS, type="fact")
    m.add("eps zeta", namespace=NS, type="fact")  # 6 of 8 tokens
    new = m.update(a, "alpha beta plus four more words", namespace=NS)  # 2 -> 6 tokens: 10 > 8
    hot = {r.content for r in m.records(namespace=NS) if r.tier is not Tier.ARCHIVE}
    assert "alpha beta plus four more words" in hot
    assert sum(r.token_count for r in m.records(namespace=NS) if r.tier is not Tier.ARCHIVE) <= 8
    assert any(e["op"] == "evict" for e in m.store.audit_log(NS))
    assert m.get(new, namespace=NS).supersedes == a


@pytest.mark.parametrize("bad", [math.nan, math.inf, 1.5, -0.1])
def test_bad_utility_is_refused_naming_the_model(bad):
    m = mem(Budget(5, policy="utility"), FixedUtility({"x": bad}))
    with pytest.raises(InvalidUtility, match="fixed-test-utility"):
        m.add("x marks the spot", namespace=NS, type="fact")
    assert m.records(namespace=NS) == []


def test_explicit_importance_is_kept():
    m = mem(Budget(5, policy="utility"), FixedUtility({}, default=0.2))
    rid = m.add("a fact with a given importance", namespace=NS, type="fact", importance=0.77)
    assert m.get(rid, namespace=NS).importance == pytest.approx(0.77)


@pytest.mark.parametrize(
    "kwargs",
    [{"capacity": -1}, {"capacity": math.nan}, {"capacity": 3, "policy": "mru"}, {"capacity": 3, "unit": "bytes"}],
)
def test_bad_budget_is_refused(kwargs):
    with pytest.raises(InvalidInput):
        Budget(**kwargs)


def test_many_distractors_keep_hard_constraints():
    m = mem(Budget(20, policy="fifo"))
    for t in ("Budget must stay under 4200 EUR", "Must be home by Aug 18", "No flights before 7am"):
        m.add(t, namespace=NS, type=MemoryType.HARD_CONSTRAINT)
    m.add_many([{"content": f"distractor turn number {i}", "type": "chatter"} for i in range(300)], namespace=NS)
    hot = [r for r in m.records(namespace=NS) if r.tier is not Tier.ARCHIVE]
    assert len(hot) == 20
    assert sum(r.type is MemoryType.HARD_CONSTRAINT for r in hot) == 3
    assert len(m.records(namespace=NS)) == 303


def test_adding_archived_content_again_restores_it_to_hot_memory():
    m = mem(Budget(1, policy="fifo"))
    door = m.add("Remember: the door code is 4711", namespace=NS, type="fact")
    m.add("filler text", namespace=NS, type="fact")
    assert m.get(door, namespace=NS).tier is Tier.ARCHIVE
    assert m.add("Remember: the door code is 4711", namespace=NS, type="fact") == door
    assert m.get(door, namespace=NS).tier is Tier.DYNAMIC
    assert [h.record.id for h in m.search("door code", namespace=NS, config="lexical")] == [door]
    ops = [e["op"] for e in m.store.audit_log(NS)]
    assert ops.count("restore") == 1 and ops.count("evict") == 2
    assert len([r for r in m.records(namespace=NS) if r.tier is not Tier.ARCHIVE]) == 1


def test_same_words_by_two_speakers_in_one_batch_are_two_records():
    m = mem(Budget(10, policy="fifo"))
    ids = m.add_many(
        [
            {"content": "Sounds good!", "role": "Alice", "type": "chatter"},
            {"content": "Sounds good!", "role": "Bob", "type": "chatter"},
        ],
        namespace=NS,
    )
    assert len(set(ids)) == 2


def test_feedback_adapts_the_model_and_moves_lru_order():
    from retain import MiniLMEncoder
    from retain.retention.utility import LearnedUtility

    model = LearnedUtility.load()  # trained on MiniLM vectors: it refuses another encoder's
    m = Memory(encoder=MiniLMEncoder(), budget=Budget(2, policy="lru"), utility=model)
    first = m.add("The ferry to the island leaves at 9:40 from pier 3", namespace=NS, type="fact")
    m.add("We booked two cabins on the night train", namespace=NS, type="fact")
    before = m.get(first, namespace=NS).importance
    updated = m.feedback(first, namespace=NS, used=True)
    assert updated.access_count == 1 and updated.last_accessed is not None
    assert updated.importance > before  # one online step towards "needed"
    m.add("The museum opens at ten", namespace=NS, type="fact")  # over capacity: lru evicts the train, not the ferry
    tiers_now = tiers(m)
    assert tiers_now["The ferry to the island leaves at 9:40 from pier 3"] == "dynamic"
    assert tiers_now["We booked two cabins on the night train"] == "archive"
    assert [e["op"] for e in m.store.audit_log(NS)].count("feedback") == 1
    with pytest.raises(InvalidInput):
        m.feedback(first, namespace=NS, used="yes")


def test_paraphrase_merge_keeps_one_record_with_both_sources():
    m = Memory(encoder=HashingEncoder(64), config=MemoryConfig(merge_paraphrases=True))
    first = m.add("Alice prefers window seats on long flights", namespace=NS, source="chat:1", type="soft_preference")
    again = m.add("alice prefers window seats on long flights!", namespace=NS, source="chat:7", type="soft_preference")
    other = m.add("Alice prefers aisle seats on long flights", namespace=NS, source="chat:9", type="soft_preference")
    changed = m.add("Alice has flown 5 long flights", namespace=NS, type="fact")
    updated = m.add("Alice has flown 6 long flights", namespace=NS, type="fact")
    assert again == first and other != first and updated != changed  # numbers differ: not a paraphrase
    rec = m.get(first, namespace=NS)
    assert [e["source"] for e in rec.metadata["merged"]] == ["chat:7"]
    assert rec.metadata["merged"][0]["content"] == "alice prefers window seats on long flights!"
    assert [e["op"] for e in m.store.audit_log(NS)].count("merge") == 1
    assert m.get(changed, namespace=NS).superseded_by == updated  # 5 -> 6 flights: an update (supersede on add)
    assert len(m.records(namespace=NS)) == 3


def test_random_policy_refuses_mandatory_records_over_the_budget():
    m = Memory(encoder=HashingEncoder(dim=384), budget=Budget(1, policy="random"))
    m.add("The total budget must stay under 5000 EUR.", namespace="b", type="hard_constraint")
    with pytest.raises(BudgetInfeasible):
        m.add("Pinned: the user's name is Sam.", namespace="b", pinned=True)
    assert len(m.records(namespace="b")) == 1
