"""retain.state.scorer: the state-conditioned scorer, its parameters and the shipped model; state-adaptive search."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.state.agent import StateEncoder
from retain.state.candidates import TYPES, candidates_from_records
from retain.state.features import STATE_FEATURES
from retain.state.scorer import StateScorer
from sam_support import (
    DIM,
    make_records,
    memory_with_scorer,
    random_records,
    reference_features,
    zero_scorer,
)


def test_scorer_mixes_state_and_content_by_alpha() -> None:
    enc = HashingEncoder(dim=DIM)
    recs = make_records(["hotel near the beach", "flight at 9am", "peanut allergy"], enc)
    cands = candidates_from_records(recs)
    state = StateEncoder(enc).encode({"phase": "book_hotel", "subgoals": ["hotel near the beach"]})
    theta = np.zeros(len(STATE_FEATURES))
    theta[STATE_FEATURES.index("goal_cos")] = 5.0
    scorer = zero_scorer(DIM, theta=theta, alpha=np.array([30.0, 0, 0, 0, 0]))  # alpha ~ 1: state decides
    content = np.array([0.0, 1.0, 0.0])
    final, parts, alpha = scorer.score(state, "book_hotel", cands, content, query_terms=0, terse=True)
    assert alpha > 0.99
    assert int(np.argmax(final)) == 0  # the record matching the subgoal, not the content favourite
    final, parts, alpha = scorer.score(state, "book_hotel", cands, content, query_terms=0, terse=True, empty_state=True)
    assert alpha == 0.0
    np.testing.assert_allclose(final, content)
    assert set(parts) == {"content", "state", "prior", "importance", "alpha", "phase_known"}


def test_unseen_phase_is_reported_and_scoring_stays_finite() -> None:
    enc = HashingEncoder(dim=DIM)
    recs = make_records(["a", "b"], enc)
    scorer = zero_scorer(DIM)
    state = StateEncoder(enc).encode({"phase": "never seen"})
    final, parts, alpha = scorer.score(
        state, "never seen", candidates_from_records(recs), np.zeros(2), query_terms=1, terse=False
    )
    assert np.all(np.isfinite(final))
    assert parts["phase_known"].tolist() == [0.0, 0.0]
    assert 0.0 <= alpha <= 1.0


def test_scorer_refuses_bad_parameters_and_shapes() -> None:
    with pytest.raises(InvalidInput, match="theta"):
        zero_scorer(DIM, theta=np.full(len(STATE_FEATURES), np.nan))
    with pytest.raises(InvalidInput, match="half_life_s"):
        StateScorer.__init__(zero_scorer(DIM), {}, half_life_s=-1)
    scorer = zero_scorer(DIM)
    enc = HashingEncoder(dim=DIM)
    cands = candidates_from_records(make_records(["a", "b"], enc))
    with pytest.raises(InvalidInput, match="content"):
        scorer.score(StateEncoder(enc).encode({"phase": "x"}), "x", cands, np.zeros(3), query_terms=0, terse=True)
    other = candidates_from_records(make_records(["a"], HashingEncoder(dim=32)))
    with pytest.raises(InvalidInput, match="dims"):
        scorer.score(StateEncoder(enc).encode({"phase": "x"}), "x", other, np.zeros(1), query_terms=0, terse=True)


def test_scorer_json_round_trip() -> None:
    scorer = zero_scorer(DIM, type_bias=np.arange(len(TYPES), dtype=float))
    again = StateScorer.from_json(scorer.to_json())
    np.testing.assert_allclose(again.type_bias, scorer.type_bias)
    with pytest.raises(InvalidInput):
        StateScorer.from_json('{"format": "other"}')


def test_shipped_model_loads_for_minilm() -> None:
    scorer = StateScorer.load()
    assert scorer.dim == 384
    assert scorer.meta.get("trained_on")


def test_scorer_state_score_matches_the_reference() -> None:
    rng = np.random.default_rng(3)
    enc = HashingEncoder(dim=DIM)
    recs = random_records(rng, 25, enc)
    state = StateEncoder(enc).encode(
        {
            "phase": "p2",
            "subgoals": ["hotel budget"],
            "last_result": "tag refund",
            "constraints": {"cap": "budget 300", "diet": "allergy"},
            "open_questions": ["which bag?"],
        }
    )
    gamma = np.array([1.5, -2.0, 0.7])
    theta = rng.standard_normal(len(STATE_FEATURES))
    scorer = zero_scorer(
        DIM, gamma=gamma, theta=theta, W1=rng.standard_normal((2, 2 * DIM)), W2=rng.standard_normal((DIM, 2))
    )
    linear = reference_features(state, "p2", recs, scorer.half_life_s) @ theta
    _, parts, _ = scorer.score(
        state, "p2", candidates_from_records(recs), np.zeros(len(recs)), query_terms=1, terse=True
    )
    s_phase = state.phase.astype(np.float64)  # p2 has no learned vector
    w = 1.0 + scorer.W2 @ np.tanh(scorer.W1 @ np.concatenate([state.whole, s_phase]))
    expected = []
    for r, lin in zip(recs, linear, strict=True):
        we = w * r.embedding.astype(np.float64)
        cosines = [
            float(we @ p) / (np.linalg.norm(we) * np.linalg.norm(p)) if np.linalg.norm(p) > 0 else 0.0
            for p in (state.whole.astype(np.float64), state.goal.astype(np.float64), state.result.astype(np.float64))
        ]
        expected.append(1.0 / (1.0 + np.exp(-(lin + np.dot(gamma, cosines)))))
    np.testing.assert_allclose(parts["state"], expected, rtol=0, atol=1e-6)  # float32 cosines


def test_search_with_state_surfaces_what_the_phase_needs() -> None:
    mem, _ = memory_with_scorer()
    ns = "trip"
    mem.add("Hard limit: total budget 4200 EUR.", namespace=ns, type="hard_constraint", state={"phase": "clarify"})
    hotel = mem.add("We prefer a hotel with a pool near the old town.", namespace=ns, state={"phase": "clarify"})
    for i in range(30):
        mem.add(f"chatter line number {i} about the weather and the football", namespace=ns)
    plain = mem.search("ok, continue", namespace=ns, k=3)
    stated = mem.search(
        "ok, continue",
        namespace=ns,
        k=3,
        state={"phase": "book_hotel", "subgoals": ["hotel with a pool near the old town"]},
    )
    assert stated[0].record.id == hotel  # the state's subgoal decides, not the terse query
    assert stated[0].scores["state"] > max(h.scores["state"] for h in stated[1:])
    assert [h.record.id for h in plain] != [h.record.id for h in stated]
    assert {"content", "state", "alpha", "phase_known"} <= set(stated[0].scores)
    assert mem.get(hotel, namespace=ns).metadata["phase"] == "clarify"
    # an empty state is content search
    assert [h.record.id for h in mem.search("ok, continue", namespace=ns, k=3, state={})] == [
        h.record.id for h in plain
    ]


class BatchCountingEncoder(HashingEncoder):
    """HashingEncoder that records the size of every batch it embeds."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim=dim)
        self.batches: list[int] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.batches.append(len(texts))
        return super().encode(texts)


def test_a_new_state_is_embedded_in_the_query_batch_and_ranks_as_if_encoded_apart() -> None:
    _, scorer = memory_with_scorer()
    enc = BatchCountingEncoder()
    mem = Memory(encoder=enc, state_scorer=scorer)
    ns = "trip"
    mem.add("Hard limit: total budget 4200 EUR.", namespace=ns, type="hard_constraint", state={"phase": "clarify"})
    mem.add("We prefer a hotel with a pool near the old town.", namespace=ns)
    mem.add("The train to Lyon leaves at 9.", namespace=ns)
    state = {"phase": "book_hotel", "subgoals": ["hotel with a pool"], "constraints": {"budget": "4200 EUR"}}
    enc.batches.clear()
    hits = mem.search("ok, continue", namespace=ns, k=3, state=state)
    # one forward pass: the query, the phase, the subgoal and the constraint
    assert enc.batches == [4]
    mem.search("ok, continue", namespace=ns, k=3, state=state)
    assert enc.batches == [4, 1]  # a repeated state: the query alone
    mem.search("ok, continue", namespace=ns, k=3, state=state | {"last_result": "3 hotels found"})
    assert enc.batches == [4, 1, 2]  # only the new part joins the query
    # the same ranking and scores as a Memory that embeds the state on its own first
    other = Memory(encoder=HashingEncoder(dim=DIM), state_scorer=scorer)
    for r in mem.records(namespace=ns):
        other.add(
            r.content, namespace=ns, type=r.type, state=r.metadata.get("phase") and {"phase": r.metadata["phase"]}
        )
    other.state_encoder.encode(state)
    again = other.search("ok, continue", namespace=ns, k=3, state=state)
    assert [h.record.content for h in again] == [h.record.content for h in hits]
    np.testing.assert_allclose([h.score for h in again], [h.score for h in hits], rtol=0, atol=1e-9)


class ShortEncoder(HashingEncoder):
    """Returns one row fewer than asked for batches of more than one text."""

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = super().encode(texts)
        return out[:-1] if len(texts) > 1 else out


def test_an_encoder_with_a_wrong_batch_shape_is_named_in_a_state_search() -> None:
    _, scorer = memory_with_scorer()
    mem = Memory(encoder=ShortEncoder(dim=DIM), state_scorer=scorer)
    mem.add("We prefer a hotel with a pool near the old town.", namespace="n")
    with pytest.raises(InvalidInput, match=r"encoder hashing.*returned shape"):
        mem.search("ok, continue", namespace="n", state={"phase": "book", "subgoals": ["pick a hotel"]})
    assert len(mem.search("hotel pool", namespace="n")) == 1  # content search unaffected, record kept


def test_search_refuses_bad_state_and_keeps_records() -> None:
    mem, _ = memory_with_scorer()
    mem.add("Hard limit: total budget 4200 EUR.", namespace="n")
    with pytest.raises(InvalidInput, match="constraints"):
        mem.search("budget", namespace="n", state={"constraints": {str(i): i for i in range(5_000)}})
    hits = mem.search("budget", namespace="n", state={"phase": "x", "whatever": [1, 2]})
    assert len(mem.records(namespace="n")) == 1 and hits


def test_state_scorer_false_disables_state_scoring() -> None:
    mem = Memory(encoder=HashingEncoder(dim=DIM), state_scorer=False)
    mem.add("Hard limit: total budget 4200 EUR.", namespace="n")
    hits = mem.search("budget", namespace="n", state={"phase": "x"})
    assert "alpha" not in hits[0].scores
