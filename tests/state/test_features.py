"""retain.state.features: the state features against a per-record reference, value and newest-record features."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from retain import HashingEncoder
from retain.state.agent import StateEncoder
from retain.state.candidates import candidates_from_records
from retain.state.features import STATE_FEATURES
from sam_support import (
    DIM,
    make_records,
    random_records,
    reference_features,
)


@pytest.mark.parametrize("seed", range(12))
def test_state_features_match_the_per_record_reference(seed: int) -> None:
    from retain.state.candidates import CandidateMemo
    from retain.state.features import state_features

    rng = np.random.default_rng(seed)
    enc = HashingEncoder(dim=DIM)
    recs = random_records(rng, int(rng.integers(0, 40)), enc)
    words = ["budget", "hotel", "flight", "tag", "bag", "refund", "预算"]
    words += ["Aug 18", "07:00", "4800", "2026-08-08..08-17"]  # values (retain.text.values)
    odd_values: list[object] = [4800, 4.8e3, 10**40, {"nested": {"at": "19:30", "on": ["Aug 8"]}}, True, None]
    state = StateEncoder(enc).encode(
        {
            "phase": "p1",
            "subgoals": [" ".join(rng.choice(words, size=3))],
            "constraints": {
                f"c{j}": " ".join(rng.choice(words, size=2)) if rng.random() < 0.6 else odd_values[j % len(odd_values)]
                for j in range(int(rng.integers(0, 6)))
            },
            "last_result": " ".join(rng.choice(words, size=3)) if rng.random() < 0.7 else None,
            "open_questions": ["which tag?"] if rng.random() < 0.5 else [],
        }
    )
    memo = CandidateMemo()
    for phase in ("p1", None):
        expected = reference_features(state, phase, recs, 3600.0)
        for cands in (candidates_from_records(recs), candidates_from_records(recs, memo=memo)):
            got = state_features(state, phase, cands, half_life_s=3600.0)
            # the cosine columns come from float32 products (7 significant digits); the rest is exact
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


def test_value_features_find_the_record_that_set_the_current_value() -> None:
    """A constraint's value written another way ("4800" <- "4,800") is matched; of a supersede chain the
    record stating the current value is the setter, not the older one; odd constraint values are safe."""
    from retain.state.features import state_features

    enc = HashingEncoder(dim=DIM)
    recs = make_records(
        [
            "Money first: hard ceiling of 4,200 EUR all-in.",
            "Also no flights leaving before 7am please.",
            "New ceiling: 4,800 EUR, my parents chipped in.",
            "The hotel has a pool.",
            "Quote: 4,800 EUR for the villa, 4,200 EUR for the flat.",
        ],
        enc,
    )
    col = {name: i for i, name in enumerate(STATE_FEATURES)}
    state = StateEncoder(enc).encode(
        {"constraints": {"budget_eur_max": 4800, "no_departure_before": "07:00", "odd": {"deep": [[{"x": 10**30}]]}}}
    )
    x = state_features(state, None, candidates_from_records(recs))
    assert x[:, col["value_match"]].tolist() == [0.0, 1.0, 1.0, 0.0, 1.0]
    # the newest record with 4800 is the quote (position 4); the 07:00 constraint is set by record 1
    assert x[:, col["value_setter"]].tolist() == [0.0, 1.0, 0.0, 0.0, 1.0]
    older = StateEncoder(enc).encode({"constraints": {"budget_eur_max": 4200}, "last_result": "villa 4,800 EUR"})
    y = state_features(older, None, candidates_from_records(recs[:4]))
    assert y[:, col["value_setter"]].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert y[:, col["result_value_match"]].tolist() == [0.0, 0.0, 1.0, 0.0]
    # no value anywhere in the state: the value columns are 0
    plain = StateEncoder(enc).encode({"constraints": {"allergy": "peanut"}, "subgoals": ["book"]})
    z = state_features(plain, None, candidates_from_records(recs))
    names = ["value_match", "value_setter", "goal_value_match", "result_value_match"]
    assert not z[:, [col[n] for n in names]].any()


def test_newest_record_features_read_what_the_stream_said_last() -> None:
    """The cosine with the newest record of all and of each role (user, tool, agent), and the share of
    each of those records' terms: a terse "ok, continue" leans on what the stream said last."""
    from retain.state.features import state_features

    enc = HashingEncoder(dim=DIM)
    texts = [
        "Marta is coeliac: strictly gluten free food only.",
        "Hotel list: Alpenhof, Rosengarten, Seeblick.",
        "The quieter one please.",
        "Booking Rosengarten; checking it can cook gluten free food for Marta.",
        "Seeblick is fully booked.",
    ]
    roles = ["user", "tool", "user", "agent_thought", "tool"]
    recs = [replace(r, role=role) for r, role in zip(make_records(texts, enc), roles, strict=True)]
    col = {name: i for i, name in enumerate(STATE_FEATURES)}
    state = StateEncoder(enc).encode({"subgoals": ["book a hotel"]})
    x = state_features(state, None, candidates_from_records(recs))
    vectors = np.stack([r.embedding for r in recs]).astype(np.float64)  # type: ignore[misc]
    for name, newest in (("last_cos", 4), ("last_user_cos", 2), ("last_tool_cos", 4), ("last_agent_cos", 3)):
        np.testing.assert_allclose(x[:, col[name]], vectors @ vectors[newest], atol=1e-6)
    # the agent's latest thought names what the user stated long before: Marta's diet shares its terms
    agent = x[:, col["last_agent_overlap"]]
    assert agent[3] == 1.0 and agent[0] > 0.3 and agent[0] > agent[1] and agent[2] == 0.0
    assert x[4, col["last_overlap"]] == 1.0 and x[1, col["last_overlap"]] > 0.0
    assert x[2, col["last_user_overlap"]] == 1.0 and x[0, col["last_user_overlap"]] == 0.0
    assert x[4, col["last_tool_overlap"]] == 1.0 and x[1, col["last_tool_overlap"]] > 0.0
    # no agent record among the candidates: its columns are 0
    y = state_features(state, None, candidates_from_records([recs[i] for i in (0, 1, 2, 4)]))
    assert not y[:, [col["last_agent_cos"], col["last_agent_overlap"]]].any()
    assert y[:, col["last_user_cos"]].any() and y[:, col["last_tool_overlap"]].any()
