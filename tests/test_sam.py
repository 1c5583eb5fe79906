"""Agent state, state encoder and state-adaptive scoring (retain.state, retain.sam)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, new_id
from retain.sam import STATE_FEATURES, TYPES, SamExample, StateScorer, candidates_from_records, train_state_scorer
from retain.state import MAX_CONSTRAINTS, AgentState, StateEncoder, StatePerceiver

DIM = 64


class CountingEncoder(HashingEncoder):
    """HashingEncoder that counts the texts it was asked to embed."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim=dim)
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += len(texts)
        return super().encode(texts)


# --- AgentState -------------------------------------------------------------------------------------


def test_state_from_dict_keeps_unknown_keys_and_drops_blanks() -> None:
    st = AgentState.from_dict(
        {
            "phase": "book_hotel",
            "subgoals": ["", "pick hotel"],
            "constraints": {"budget": 5000, " ": "x"},
            "uncertain": ["dates"],
            "last_result": "  ",
            "mood": "tired",
        }
    )
    assert st.phase == "book_hotel"
    assert st.subgoals == ("pick hotel",)
    assert dict(st.constraints) == {"budget": 5000}
    assert st.open_questions == ("dates",)
    assert st.last_result is None
    assert st.features == {"mood": "tired"}
    assert not st.empty
    assert AgentState.from_dict({"phase": ""}).empty


@pytest.mark.parametrize(
    "bad",
    [
        {"constraints": {f"c{i}": i for i in range(5_000)}},
        {"constraints": ["not", "a", "mapping"]},
        {"subgoals": 5},
        {"phase": "x" * 5_000},
        {"last_result": "\ud800"},
        "phase: booking",
    ],
)
def test_state_refuses_bad_input_with_a_clear_error(bad: object) -> None:
    with pytest.raises(InvalidInput, match="state"):
        AgentState.from_dict(bad)  # type: ignore[arg-type]


def test_state_limit_is_the_documented_one() -> None:
    AgentState.from_dict({"constraints": {f"c{i}": i for i in range(MAX_CONSTRAINTS)}})
    with pytest.raises(InvalidInput, match=str(MAX_CONSTRAINTS)):
        AgentState.from_dict({"constraints": {f"c{i}": i for i in range(MAX_CONSTRAINTS + 1)}})


def test_perceiver_tracks_constraints_corrections_and_results() -> None:
    p = StatePerceiver({"phase": "clarify"})
    old = MemoryRecord(id=new_id(), namespace="n", content="Budget under 4000 EUR", type=MemoryType.HARD_CONSTRAINT)
    p.observe(old)
    assert list(p.state.constraints.values()) == ["Budget under 4000 EUR"]
    new = MemoryRecord(
        id=new_id(),
        namespace="n",
        content="Correction: budget under 4500 EUR",
        type=MemoryType.HARD_CONSTRAINT,
        supersedes=old.id,
    )
    p.observe(new)
    assert list(p.state.constraints.values()) == ["Correction: budget under 4500 EUR"]
    p.observe(MemoryRecord(id=new_id(), namespace="n", content="Flight booked", type=MemoryType.ACTION_RESULT))
    assert p.state.last_result == "Flight booked"
    p.set_phase("book_hotel")
    p.push_subgoal("pick a hotel")
    assert (p.state.phase, p.state.subgoals) == ("book_hotel", ("pick a hotel",))
    assert p.pop_subgoal().subgoals == ()


def test_state_encoder_memoises_texts() -> None:
    enc = CountingEncoder()
    se = StateEncoder(enc)
    state = {"phase": "book_hotel", "subgoals": ["pick hotel"], "constraints": {"budget": 5000}, "last_result": "ok"}
    first = se.encode(state)
    calls = enc.calls
    assert calls > 0
    second = se.encode(state)
    assert enc.calls == calls  # a repeated state costs no encoder call
    np.testing.assert_array_equal(first.whole, second.whole)
    assert abs(float(np.linalg.norm(first.whole)) - 1.0) < 1e-5
    empty = se.encode(None)
    assert not empty.whole.any()


# --- scorer -----------------------------------------------------------------------------------------


def _zero_scorer(dim: int, **changes: object) -> StateScorer:
    f, t = len(STATE_FEATURES), len(TYPES)
    params: dict[str, object] = {
        "theta": np.zeros(f),
        "gamma": np.zeros(3),
        "type_bias": np.zeros(t),
        "B": np.zeros((t, 2)),
        "P": np.zeros((dim, 2)),
        "W1": np.zeros((2, 2 * dim)),
        "W2": np.zeros((dim, 2)),
        "alpha": np.array([0.0, 0.0, 0.0, 0.0, 0.0]),
        "mean": np.zeros(f),
        "scale": np.ones(f),
    }
    params.update(changes)
    return StateScorer(params)


def _records(texts: Sequence[str], enc: HashingEncoder) -> list[MemoryRecord]:
    vectors = enc.encode(list(texts))
    return [
        MemoryRecord(id=new_id(), namespace="n", content=t, seq=i, embedding=v)
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]


def test_scorer_mixes_state_and_content_by_alpha() -> None:
    enc = HashingEncoder(dim=DIM)
    recs = _records(["hotel near the beach", "flight at 9am", "peanut allergy"], enc)
    cands = candidates_from_records(recs)
    state = StateEncoder(enc).encode({"phase": "book_hotel", "subgoals": ["hotel near the beach"]})
    theta = np.zeros(len(STATE_FEATURES))
    theta[STATE_FEATURES.index("goal_cos")] = 5.0
    scorer = _zero_scorer(DIM, theta=theta, alpha=np.array([30.0, 0, 0, 0, 0]))  # alpha ~ 1: state decides
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
    recs = _records(["a", "b"], enc)
    scorer = _zero_scorer(DIM)
    state = StateEncoder(enc).encode({"phase": "never seen"})
    final, parts, alpha = scorer.score(
        state, "never seen", candidates_from_records(recs), np.zeros(2), query_terms=1, terse=False
    )
    assert np.all(np.isfinite(final))
    assert parts["phase_known"].tolist() == [0.0, 0.0]
    assert 0.0 <= alpha <= 1.0


def test_scorer_refuses_bad_parameters_and_shapes() -> None:
    with pytest.raises(InvalidInput, match="theta"):
        _zero_scorer(DIM, theta=np.full(len(STATE_FEATURES), np.nan))
    with pytest.raises(InvalidInput, match="half_life_s"):
        StateScorer.__init__(_zero_scorer(DIM), {}, half_life_s=-1)
    scorer = _zero_scorer(DIM)
    enc = HashingEncoder(dim=DIM)
    cands = candidates_from_records(_records(["a", "b"], enc))
    with pytest.raises(InvalidInput, match="content"):
        scorer.score(StateEncoder(enc).encode({"phase": "x"}), "x", cands, np.zeros(3), query_terms=0, terse=True)
    other = candidates_from_records(_records(["a"], HashingEncoder(dim=32)))
    with pytest.raises(InvalidInput, match="dims"):
        scorer.score(StateEncoder(enc).encode({"phase": "x"}), "x", other, np.zeros(1), query_terms=0, terse=True)


def test_scorer_json_round_trip() -> None:
    scorer = _zero_scorer(DIM, type_bias=np.arange(len(TYPES), dtype=float))
    again = StateScorer.from_json(scorer.to_json())
    np.testing.assert_allclose(again.type_bias, scorer.type_bias)
    with pytest.raises(InvalidInput):
        StateScorer.from_json('{"format": "other"}')


def test_shipped_model_loads_for_minilm() -> None:
    scorer = StateScorer.load()
    assert scorer.dim == 384
    assert scorer.meta.get("trained_on")


def test_training_learns_to_find_what_the_state_needs() -> None:
    """Synthetic probes: the needed record is the one matching the subgoal, the query is terse and the
    content score points elsewhere; after training the needed record ranks first far more often."""
    enc = HashingEncoder(dim=DIM)
    se = StateEncoder(enc)
    rng = np.random.default_rng(0)
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
    topics = [f"topic {w} item" for w in words]
    examples = []
    for i in range(40):
        pick = rng.choice(len(topics), size=6, replace=False)
        recs = _records([topics[j] + f" note {i}" for j in pick], enc)
        target = int(rng.integers(6))
        content = rng.random(6) * 0.5
        content[(target + 1) % 6] = 0.9
        examples.append(
            SamExample(
                state=se.encode({"phase": "work", "subgoals": [topics[pick[target]]]}),
                phase="work",
                cands=candidates_from_records(recs),
                content=content,
                needed=np.arange(6) == target,
                query_terms=0,
                terse=True,
                group=f"s{i % 4}",
            )
        )
    train, test = examples[:30], examples[30:]
    model = train_state_scorer(train, epochs=150, rank=2, prior_rank=2)

    def top1(scorer: StateScorer | None) -> float:
        hits = 0
        for e in test:
            scores = (
                e.content
                if scorer is None
                else scorer.score(e.state, e.phase, e.cands, e.content, query_terms=0, terse=True)[0]
            )
            hits += int(np.argmax(scores) == int(np.flatnonzero(e.needed)[0]))
        return hits / len(test)

    assert top1(model) >= top1(None) + 0.5


# --- Memory -----------------------------------------------------------------------------------------


def _memory_with_scorer() -> tuple[Memory, StateScorer]:
    theta = np.zeros(len(STATE_FEATURES))
    theta[STATE_FEATURES.index("goal_cos")] = 8.0
    theta[STATE_FEATURES.index("core")] = 3.0
    scorer = _zero_scorer(DIM, theta=theta, alpha=np.array([0.0, -2.0, 3.0, 0.0, 0.0]))
    return Memory(encoder=HashingEncoder(dim=DIM), state_scorer=scorer), scorer


def test_search_with_state_surfaces_what_the_phase_needs() -> None:
    mem, _ = _memory_with_scorer()
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


def test_search_refuses_bad_state_and_keeps_records() -> None:
    mem, _ = _memory_with_scorer()
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


def test_probe_examples_replay_a_scenario_and_label_its_needed_events() -> None:
    import json
    from pathlib import Path

    from retain.eval.sam_train import probe_examples

    path = Path(__file__).resolve().parents[1] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    examples = probe_examples([path], HashingEncoder(dim=384))
    assert [p.query for p in examples] == [p["query"] for p in doc["probes"]]
    for p, probe in zip(examples, doc["probes"], strict=True):
        assert p.needed == frozenset(probe["needed"])
        labelled = {eid for eid, flag in zip(p.event_ids, p.example.needed, strict=True) if flag}
        assert labelled == p.needed & set(p.event_ids)
