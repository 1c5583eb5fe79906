"""The learned conflict model as the default: its cue features, pool columns, encoder fit and the
distractors it must leave alone (issue 19)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.ingest.conflict_cues import CUE_PATTERNS, cue_flags, is_recap, is_short_choice
from retain.ingest.conflict_features import FEATURES, read_text
from retain.ingest.conflict_features import pool_rows as full_rows
from retain.ingest.conflict_model import default_conflict_model
from retain.memory import Memory
from retain.record import MemoryType

NS = "learned"


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("sorry, wrong box - it's vpn-eu1 that's broken", "self_correct"),
        ("啊不好意思，日期我说错了，是22-23号", "self_correct"),
        ("Good news, the sponsor chipped in, we can go to 2,600 total now.", "news"),
        ("财务批了，追加到95人天，这是硬上限", "news"),
        ("the launch slips a week", "relative"),
        ("科研处说系统切换，内审截止推迟 5 天。", "relative"),
        ("drop the consumer segment entirely", "drop"),
        ("华清宫砍掉吧，第二天太赶", "drop"),
        ("Ana is on leave for a month, Tomas takes over the checks.", "handover"),
        ("btw Jason 下周起离职交接，这个客户转给 Wendy Zhao 了", "handover"),
        ("Let's move it to the Old Mill, go with that.", "switch"),
        ("那改成鲁信吧，本省的，交货稳。", "switch"),
    ],
)
def test_each_cue_family_fires_on_its_kind_of_update(text: str, family: str) -> None:
    flags = dict(zip(CUE_PATTERNS, cue_flags(text), strict=True))
    assert flags[family] == 1.0, (text, flags)


def test_plain_statements_raise_no_self_correction_news_or_handover() -> None:
    for text in ("The hotel is the Alfama Inn.", "We fly out of Brennick (BRK).", "酒店订在西安丝路酒店。"):
        flags = dict(zip(CUE_PATTERNS, cue_flags(text), strict=True))
        assert flags["self_correct"] == flags["news"] == flags["handover"] == 0.0, text


def test_recaps_and_short_choices_are_recognised() -> None:
    assert is_recap("Summary so far: budget under 5,000 EUR, trip in May.")
    assert is_recap("要点：10/15 出院；屈曲 ≤90°；下床 ≤15 分钟且有人扶；青霉素过敏；先去仁和康复两周。")
    assert is_recap("Zwischenstand: Agent Grenzlotsen, Wert 184.600 CHF, Ankunft bis 21.05., max 24 t, Grenze Di")
    assert not is_recap("The budget is 5,000 EUR: that is the hard limit.")
    assert is_short_choice("就定华东包装吧。") and is_short_choice("Let's go with Arredo Emilia.")
    assert not is_short_choice("The supplier sent the invoice for the calibration certificates yesterday.")


def test_words_that_only_label_a_number_are_not_subject_terms() -> None:
    note = read_text("Note number 0: the meeting moved to room 0.")
    filler = read_text("distractor turn number 7")
    assert not note.unlabelled & filler.unlabelled
    assert "budge" in read_text("Budget is 5000 EUR now").unlabelled  # a quantity keeps its subject


def test_pool_rows_rank_each_candidate_against_its_pool() -> None:
    own = len(FEATURES) - 8
    rows = np.zeros((3, own))
    overlap = FEATURES.index("overlap")
    rows[:, overlap] = [0.2, 0.9, 0.5]
    full = full_rows(rows)
    assert full.shape == (3, len(FEATURES))
    rank = full[:, FEATURES.index("overlap_rank")]
    gap = full[:, FEATURES.index("overlap_gap")]
    assert rank.tolist() == [1 / 3, 1.0, 1 / 2]
    assert gap == pytest.approx([0.7, 0.0, 0.4])


def test_the_shipped_model_fits_minilm_only_and_the_rules_are_the_default() -> None:
    model = default_conflict_model()
    assert MemoryConfig().conflict_model is None
    assert MemoryConfig().resolved_conflict_model("all-MiniLM-L6-v2") is None
    auto = MemoryConfig(conflict_model="auto")
    assert auto.resolved_conflict_model("all-MiniLM-L6-v2") is model
    assert auto.resolved_conflict_model("hashing-64") is None
    assert MemoryConfig(conflict_model="shipped").resolved_conflict_model("hashing-64") is model
    assert model.fits("all-MiniLM-L6-v2") and not model.fits("hashing-64") and not model.fits(None)
    assert dataclasses.replace(model, meta={}).fits("hashing-64")


def test_hashing_vectors_fall_back_to_the_rules_by_default() -> None:
    """The default model never judges another encoder's cosines: a tool's claim against a hard
    constraint opens no conflict there (the rules hold the proposal), while the model opens one."""
    texts = (
        "Hard rule: the total budget is 5,000 EUR, never more.",
        "finance.sync: the total budget is now 9,000 EUR.",
    )
    default = Memory(encoder=HashingEncoder(64))
    forced = Memory(
        encoder=HashingEncoder(64),
        config=MemoryConfig(conflict_model="shipped"),
    )
    for m in (default, forced):
        rule = m.add(texts[0], namespace=NS, type=MemoryType.HARD_CONSTRAINT)
        m.add(texts[1], namespace=NS, role="tool", actor="tool")
        assert m.get(rule, namespace=NS).is_current
    assert default.conflicts(NS) == [] and len(forced.conflicts(NS)) == 1


@pytest.fixture(scope="module")
def minilm():
    from retain.encoders.basis import MiniLMEncoder

    return MiniLMEncoder()


def test_minilm_numbered_notes_never_supersede_numbered_distractors(minilm) -> None:
    m = Memory(encoder=minilm, config=MemoryConfig(conflict_model="auto"))
    rules = [
        m.add(t, namespace=NS, type=MemoryType.HARD_CONSTRAINT)
        for t in ("Budget must stay under 4200 EUR", "Must be home by Aug 18", "No flights before 7am")
    ]
    m.add_many([{"content": f"distractor turn number {i}", "type": "chatter"} for i in range(40)], namespace=NS)
    m.add_many([{"content": f"Note number {i}: the meeting moved to room {i}."} for i in range(5)], namespace=NS)
    superseded = [r.content for r in m.records(namespace=NS, include_superseded=True) if r.superseded_by]
    assert not [s for s in superseded if s.startswith("distractor")]
    assert all(m.get(r, namespace=NS).is_current for r in rules)


def test_minilm_a_user_correction_supersedes_and_a_tool_claim_only_opens_a_conflict(minilm) -> None:
    m = Memory(encoder=minilm, config=MemoryConfig(conflict_model="auto"))
    hotel = m.add("We booked the Harbour Hall for the reception.", namespace=NS)
    rule = m.add("The total budget must stay under 5,000 EUR.", namespace=NS, type=MemoryType.HARD_CONSTRAINT)
    moved = m.add("Change of plan: we move the reception from the Harbour Hall to the Old Mill.", namespace=NS)
    assert m.get(hotel, namespace=NS).superseded_by == moved
    m.add("finance.sync: the total budget is now 9,000 EUR.", namespace=NS, role="tool", actor="tool")
    assert m.get(rule, namespace=NS).is_current
    assert [c.old.id for c in m.conflicts(NS)] == [rule]
