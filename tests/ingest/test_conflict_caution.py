"""Asymmetric caution for hard constraints inside the learned decision (issue 19, design point 3): a hard
constraint yields only to a same-slot update from a trusted role; questions, hedges without a value and
limits of another quantity change nothing. The model is replaced by one of constant probability, so
each test checks the guards, not the trees."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from retain.ingest.conflict import Relation, decide_all
from retain.ingest.conflict_cues import is_question
from retain.ingest.conflict_features import FEATURES
from retain.ingest.conflict_model import ConflictModel, default_conflict_model
from retain.record import MemoryRecord, MemoryType


def constant(p: float) -> ConflictModel:
    """The shipped model's thresholds with every pair at calibrated probability ``p``."""
    shipped = default_conflict_model()
    return dataclasses.replace(
        shipped, trees=(), calib_x=np.array([0.0, 1.0]), calib_y=np.array([p, p]), meta={}, features=FEATURES
    )


def rec(rid: str, text: str, *, role: str = "user", hard: bool = False) -> MemoryRecord:
    kind = MemoryType.HARD_CONSTRAINT if hard else MemoryType.FACT
    return MemoryRecord(id=rid, namespace="s", content=text, type=kind, role=role)


def relations(new: MemoryRecord, old: MemoryRecord, cos: float, p: float = 0.95) -> list[Relation]:
    return [d.relation for d in decide_all(new, [(old, cos)], model=constant(p))]


BUDGET = "Hard rule: the total budget is 5,000 EUR, never more."
RAISED = "Good news: the total budget is now 6,000 EUR."


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("do we even need the residency language? EU customers are like 3% of our base...", True),
        ("能不能整体往后挪一周？", True),
        ("Is the budget 5,000? …", True),
        ("Budget is 5,000...", False),
        ("Budget is 5,000. Right? No, it is 6,000.", False),
        ("The budget is 5,000 EUR.", False),
    ],
)
def test_a_question_that_trails_off_is_still_a_question(text: str, asks: bool) -> None:
    assert is_question(text) is asks


def test_a_confident_same_slot_update_from_the_user_retires_a_hard_constraint() -> None:
    assert relations(rec("b", RAISED), rec("a", BUDGET, hard=True), 0.8) == [Relation.UPDATE]


@pytest.mark.parametrize("role", ["tool", "agent_thought", "agent_action", "retrieved"])
def test_an_untrusted_role_only_opens_a_conflict_with_a_hard_constraint(role: str) -> None:
    assert relations(rec("b", RAISED, role=role), rec("a", BUDGET, hard=True), 0.8) == [Relation.CONFLICT]


def test_below_the_hard_threshold_a_same_slot_update_is_an_open_conflict() -> None:
    model = default_conflict_model()
    p = (model.hard_threshold + max(model.threshold, model.conflict_threshold)) / 2
    assert relations(rec("b", RAISED), rec("a", BUDGET, hard=True), 0.8, p) == [Relation.CONFLICT]
    # the same pair when the old record is not a hard constraint: the normal threshold retires it
    assert relations(rec("b", RAISED), rec("a", "The total budget is 5,000 EUR."), 0.8, p) == [Relation.UPDATE]


def test_another_slot_of_the_same_kind_never_retires_a_hard_constraint() -> None:
    """A date of another thing at a low cosine: not the same slot, so at most a conflict."""
    deadline = rec("a", "Internal deadline: submit by 2026-03-10.", hard=True)
    venue = rec("b", "The venue is booked for 2026-04-02.")
    assert Relation.UPDATE not in relations(venue, deadline, 0.3)


def test_a_limit_of_another_quantity_updates_nothing() -> None:
    window = rec("a", "Wartungsfenster ist Dienstag, 17.03., 22:00-02:00.")
    offline = rec("b", "Gute Nachricht: wir dürfen in dem Fenster bis zu 40 Minuten offline sein.")
    assert relations(offline, window, 0.55) == []
    assert relations(offline, dataclasses.replace(window, type=MemoryType.HARD_CONSTRAINT), 0.55) == []


@pytest.mark.parametrize(
    "text",
    [
        "do we actually need MFA on the warehouse shared logins? they're on locked-down tablets...",
        "Actually, maybe we could drop the MFA rule?",
    ],
)
def test_a_question_or_hedge_without_a_value_neither_updates_nor_opens_a_conflict(text: str) -> None:
    for hard in (False, True):
        assert relations(rec("b", text), rec("a", "MFA: Okta Verify push for everyone.", hard=hard), 0.6) == []


def test_the_hard_threshold_is_above_the_update_threshold() -> None:
    model = default_conflict_model()
    assert model.conflict_threshold <= model.threshold < model.hard_threshold <= 1.0
