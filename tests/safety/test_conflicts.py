"""Open conflicts and the learned supersede decision through Memory (issue 19's bad inputs)."""

from __future__ import annotations

import pytest

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.errors import Forbidden, InvalidInput, RecordNotFound
from retain.memory import Memory
from retain.record import MemoryType

NS = "conflicts"


def mem(**config: object) -> Memory:
    """A memory deciding with the shipped conflict model over the hashing encoder's vectors (the default,
    "auto", would fall back to the rules for them: the model was fitted on MiniLM cosines)."""
    config.setdefault("conflict_model", "shipped")
    return Memory(encoder=HashingEncoder(64), config=MemoryConfig(**config))  # type: ignore[arg-type]


def budget_rule(m: Memory, ns: str = NS) -> str:
    return m.add("Hard rule: the total budget is 5,000 EUR, never more.", namespace=ns, type="hard_constraint")


def test_a_hedged_question_neither_supersedes_nor_opens_a_conflict() -> None:
    m = mem()
    rule = budget_rule(m)
    m.add("Actually, maybe we could drop the budget rule?", namespace=NS)
    assert m.get(rule, namespace=NS).is_current
    assert m.conflicts(NS) == []


def test_a_tool_claiming_a_new_value_for_a_hard_constraint_opens_a_conflict_with_the_tool_as_actor() -> None:
    m = mem()
    rule = budget_rule(m)
    claim = m.add("finance.sync: the total budget is now 9,000 EUR.", namespace=NS, role="tool", actor="tool")
    old = m.get(rule, namespace=NS)
    assert old.is_current and old.type is MemoryType.HARD_CONSTRAINT
    (conflict,) = m.conflicts(NS)
    assert (conflict.new.id, conflict.old.id, conflict.actor) == (claim, rule, "tool")
    assert conflict.status == "open" and "?" in conflict.question()
    audit = [a for a in m.store.audit_log(NS) if a["op"] == "conflict"]
    assert [a["record_id"] for a in audit] == [rule] and audit[0]["actor"] == "tool"
    hits = {h.record.id: h for h in m.search("total budget", namespace=NS, k=5)}
    assert hits[rule].conflicts_with == (claim,) and hits[rule].superseded_by is None
    assert hits[rule].to_dict()["conflicts_with"] == [claim]


def test_two_contradicting_hard_constraints_in_one_message_are_both_kept_with_one_conflict() -> None:
    m = mem()
    ids = m.add_many(
        [
            {"content": "The total budget must stay under 5,000 EUR.", "type": "hard_constraint"},
            {"content": "The total budget must stay under 4,000 EUR.", "type": "hard_constraint"},
        ],
        namespace=NS,
    )
    assert all(m.get(i, namespace=NS).is_current for i in ids)
    (conflict,) = m.conflicts(NS)
    assert {conflict.new.id, conflict.old.id} == set(ids)


def test_a_correction_in_one_namespace_never_touches_another() -> None:
    m = mem()
    a = m.add("The venue budget is 2,000 EUR all-in.", namespace="a")
    m.add("The venue budget is 2,000 EUR all-in.", namespace="b")
    m.add("Correction: the venue budget is now 2,600 EUR all-in.", namespace="b")
    assert m.get(a, namespace="a").is_current
    assert m.conflicts("a") == []
    assert [a["op"] for a in m.store.audit_log("a")] == ["add"]


def test_a_correction_of_a_slot_that_exists_nowhere_is_stored_as_new() -> None:
    m = mem()
    kept = [m.add(t, namespace=NS) for t in ("We fly to Lisbon on May 3.", "The hotel is the Alfama Inn.")]
    new = m.add("Correction: the parking permit number is 4471.", namespace=NS)
    assert all(m.get(i, namespace=NS).is_current for i in kept)
    assert m.get(new, namespace=NS).supersedes is None
    assert m.conflicts(NS) == []


def test_a_confident_user_correction_retires_every_statement_of_its_slot_recap_included() -> None:
    m = mem()
    first = m.add("The total budget is 5,000 EUR.", namespace=NS)
    recap = m.add("Summary so far: budget under 5,000 EUR, trip in May.", namespace=NS, role="agent_thought")
    fix = m.add("Correction: the total budget is 6,000 EUR now.", namespace=NS)
    assert m.get(first, namespace=NS).superseded_by == fix
    assert m.get(recap, namespace=NS).superseded_by == fix
    texts = [h.record.content for h in m.search("budget", namespace=NS, k=10)]
    assert not any("5,000" in t for t in texts)


def test_resolve_conflict_keeps_new_audited_and_refuses_untrusted_or_bad_input() -> None:
    m = mem()
    rule = budget_rule(m)
    claim = m.add("finance.sync: the total budget is now 9,000 EUR.", namespace=NS, role="tool", actor="tool")
    (conflict,) = m.conflicts(NS)
    with pytest.raises(InvalidInput):
        m.resolve_conflict("nonsense", namespace=NS, keep="new")
    with pytest.raises(InvalidInput):
        m.resolve_conflict(conflict.id, namespace=NS, keep="maybe")
    with pytest.raises(RecordNotFound):
        m.resolve_conflict(f"{rule}:{claim}", namespace=NS, keep="new")
    with pytest.raises(Forbidden):
        m.resolve_conflict(conflict.id, namespace=NS, keep="new", actor="tool")
    assert m.get(rule, namespace=NS).is_current  # nothing changed by the refused call
    closed = m.resolve_conflict(conflict.id, namespace=NS, keep="new", reason="user confirmed 9,000")
    assert closed.status == "resolved" and closed.resolution == "new"
    assert m.get(rule, namespace=NS).superseded_by == claim
    assert m.get(claim, namespace=NS).type is MemoryType.HARD_CONSTRAINT
    assert m.conflicts(NS) == [] and len(m.conflicts(NS, include_resolved=True)) == 1
    assert "resolve_conflict" in [a["op"] for a in m.store.audit_log(NS)]
    with pytest.raises(InvalidInput):
        m.resolve_conflict(conflict.id, namespace=NS, keep="old")


def test_the_to_confirm_section_keeps_to_its_share_of_the_budget_newest_first() -> None:
    from retain.safety.context import CONFIRM_SHARE

    m = mem()
    claims = []
    for i, thing in enumerate(("budget", "head count", "word limit", "deadline", "room size", "fee")):
        m.add(f"Hard rule: the {thing} is {5000 + i} units, never more.", namespace=NS, type="hard_constraint")
        claims.append(m.add(f"sync: the {thing} is now {9000 + i} units.", namespace=NS, role="tool", actor="tool"))
    conflicts = m.conflicts(NS)
    assert len(conflicts) >= len(claims)
    ctx = m.context("limits", namespace=NS, budget_tokens=300)
    section = [line for line in ctx.text.splitlines() if line.startswith("- Which holds now")]
    left = [x.record_id for x in ctx.provenance.left_out if x.detail.startswith("to confirm")]
    assert 1 <= len(section) < len(conflicts) and len(section) + len(left) == len(conflicts)
    assert sum(m.encoder.count_tokens(section)) <= 300 * CONFIRM_SHARE
    newest = conflicts[-1]
    assert newest.new.content in section[0] and newest.old.content in section[0] and conflicts[0].new.id in left


def test_context_lists_open_conflicts_to_confirm_and_no_superseded_record() -> None:
    m = mem()
    budget_rule(m)
    m.add("finance.sync: the total budget is now 9,000 EUR.", namespace=NS, role="tool", actor="tool")
    old = m.add("The hotel is the Alfama Inn.", namespace=NS)
    new = m.add("Correction: the hotel is now the Baixa Suites, not the Alfama Inn.", namespace=NS)
    assert m.get(old, namespace=NS).superseded_by == new
    ctx = m.context("budget and hotel", namespace=NS, budget_tokens=400)
    assert "To confirm" in ctx.text and "9,000" in ctx.text and "Which holds now" in ctx.text
    assert old not in {i.record_id for i in ctx.items}
