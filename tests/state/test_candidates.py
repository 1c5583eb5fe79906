"""retain.state.candidates: the candidates as arrays, the per-record memo, content terms worked out on write."""

from __future__ import annotations

import numpy as np
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.record import new_id
from retain.state.candidates import candidates_from_records
from sam_support import (
    DIM,
    make_records,
    memory_with_scorer,
    random_records,
)


def test_candidate_memo_works_out_a_changed_record_again() -> None:
    from retain.state.candidates import CandidateMemo

    enc = HashingEncoder(dim=DIM)
    rec = make_records(["peanut allergy"], enc)[0]
    memo = CandidateMemo(limit=2)
    assert candidates_from_records([rec], memo=memo).importance.tolist() == [0.5]
    changed = rec.evolve(importance=0.9, content="tree nut allergy")  # same id, a new record object
    cands = candidates_from_records([changed], memo=memo)
    assert cands.importance.tolist() == [0.9] and "tree" in cands.terms[0]
    more = make_records(["a", "b", "c"], enc)
    assert len(candidates_from_records(more, memo=memo).terms) == 3 and len(memo) <= 2
    with pytest.raises(InvalidInput, match="limit"):
        CandidateMemo(limit=0)
    with pytest.raises(InvalidInput, match="vectors"):
        candidates_from_records([rec], vectors=np.zeros((2, DIM), np.float32))


def test_candidate_memo_gathers_the_same_inputs_as_a_fresh_build() -> None:
    from retain.state.candidates import CandidateMemo

    rng = np.random.default_rng(5)
    enc = HashingEncoder(dim=DIM)
    recs = random_records(rng, 30, enc)
    memo = CandidateMemo(limit=25)
    # repeats within a call, records seen before, a memo that starts over, a call larger than the memo
    for batch in (recs[:10] + recs[:3], recs[5:25], recs[20:] + recs[:5], recs[::-1]):
        got = candidates_from_records(batch, memo=memo)
        want = candidates_from_records(batch)
        assert len(memo) <= 25
        for name in ("types", "positions", "times", "core", "importance", "access", "role_flags"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        assert (got.phases, got.roles, got.terms) == (want.phases, want.roles, want.terms)
        terms = [
            {t for t, i in got.vocab.items() if i in got.term_ids[got.term_rows == row]} for row in range(len(batch))
        ]
        assert terms == [set(t) for t in want.terms]


def test_content_terms_are_worked_out_on_write_unless_state_scoring_is_off() -> None:
    from retain.state.candidates import content_terms

    text = f"walnut allergy {new_id()}"  # a text no earlier test tokenised
    content_terms.cache_clear()
    Memory(encoder=HashingEncoder(dim=DIM), state_scorer=False).add(text, namespace="n")
    assert content_terms.cache_info().currsize == 0
    Memory(encoder=HashingEncoder(dim=DIM)).add(text, namespace="n")
    hits = content_terms.cache_info().hits
    assert "walnut" in content_terms(text) and content_terms.cache_info().hits == hits + 1


def test_a_write_after_a_state_search_is_seen_by_the_next_state_search() -> None:
    mem, _ = memory_with_scorer()
    ns = "trip"
    state = {"phase": "book_hotel", "subgoals": ["hotel with a pool near the old town"]}
    for i in range(30):
        mem.add(f"chatter line number {i} about the weather and the football", namespace=ns)
    before = mem.search("ok, continue", namespace=ns, k=3, state=state)
    hotel = mem.add("We prefer a hotel with a pool near the old town.", namespace=ns)
    after = mem.search("ok, continue", namespace=ns, k=3, state=state)  # same state: scans and memos reused
    assert hotel not in {h.record.id for h in before} and after[0].record.id == hotel
    mem.store.put([mem.get(hotel, namespace=ns).evolve(tier="archive")])  # archived: out of hot search
    assert hotel not in {h.record.id for h in mem.search("ok, continue", namespace=ns, k=3, state=state)}
    mem.store.put([mem.get(hotel, namespace=ns).evolve(tier="dynamic")])
    assert mem.search("ok, continue", namespace=ns, k=3, state=state)[0].record.id == hotel
    new_id_ = mem.update(hotel, "We prefer a hotel with a rooftop pool near the old town.", namespace=ns)
    hits = mem.search("ok, continue", namespace=ns, k=3, state=state)
    assert hits[0].record.id == new_id_ and hotel not in {h.record.id for h in hits}
    mem.delete(new_id_, namespace=ns)
    assert {new_id_, hotel}.isdisjoint(h.record.id for h in mem.search("ok, continue", namespace=ns, k=3, state=state))


def test_add_works_out_the_state_scorers_per_text_inputs_at_write_time() -> None:
    """A stored record's terms and canonical values are memoised when it is written, so the first
    state-adaptive search that reads it does not pay for them; not with the state scorer off."""
    from retain.state.candidates import content_terms
    from retain.text.values import canonical_values

    text = "written-once marker 7f3a: the deposit of 1,240 EUR is due on Aug 9 at 15:30"
    other = "written-once marker 9c2e: the deposit of 980 EUR is due on Aug 11 at 10:00"
    for mem, expected in (
        (Memory(encoder=HashingEncoder(dim=DIM)), 1),
        (Memory(encoder=HashingEncoder(dim=DIM), state_scorer=False), 0),
    ):
        probe = text if expected else other
        mem.add(probe, namespace="ns")
        values_hits, terms_hits = canonical_values.cache_info().hits, content_terms.cache_info().hits
        assert canonical_values(probe) == frozenset(
            {"n:1240", "d:8-9", "t:930"} if expected else {"n:980", "d:8-11", "t:600"}
        )
        content_terms(probe)
        assert canonical_values.cache_info().hits - values_hits == expected
        assert content_terms.cache_info().hits - terms_hits == expected
