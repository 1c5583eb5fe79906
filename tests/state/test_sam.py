"""Agent state, state encoder and state-adaptive scoring (retain.state.agent, retain.state.sam)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest

from retain import HashingEncoder, Memory
from retain.errors import InvalidInput
from retain.record import MemoryRecord, MemoryType, new_id
from retain.state.agent import MAX_CONSTRAINTS, AgentState, StateEncoder, StatePerceiver
from retain.state.candidates import TYPES, candidates_from_records
from retain.state.features import STATE_FEATURES
from retain.state.scorer import StateScorer
from retain.state.training import SamExample, train_state_scorer

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
    assert second is first  # kept whole: a repeated state is one lookup ...
    with pytest.raises(ValueError):
        first.whole[0] = 0.0  # ... so its arrays are read-only
    changed = se.encode(state | {"last_result": "hotel booked"})
    assert changed is not first and not np.array_equal(changed.result, first.result)
    np.testing.assert_array_equal(changed.goal, first.goal)


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


class BatchCountingEncoder(HashingEncoder):
    """HashingEncoder that records the size of every batch it embeds."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim=dim)
        self.batches: list[int] = []

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.batches.append(len(texts))
        return super().encode(texts)


def test_a_new_state_is_embedded_in_the_query_batch_and_ranks_as_if_encoded_apart() -> None:
    _, scorer = _memory_with_scorer()
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


def test_add_vectors_refuses_non_finite_and_keeps_its_own_read_only_copy() -> None:
    enc = HashingEncoder(dim=DIM)
    se = StateEncoder(enc)
    state = {"phase": "a", "subgoals": ["find a room"]}
    texts = se.missing(state)
    bad = enc.encode(texts)
    bad[0, 0] = np.nan
    with pytest.raises(InvalidInput, match="not finite"):
        se.add_vectors(texts, bad)
    assert se.missing(state) == texts  # nothing memoised
    good = enc.encode(texts)
    se.add_vectors(texts, good)
    good[:] = 7.0  # the caller's buffer changes afterwards ...
    encoded = se.encode(state)
    assert float(encoded.goal.max()) < 1.0  # ... the memoised copy does not
    with pytest.raises(TypeError):
        encoded.texts["phase"] = ("x",)  # type: ignore[index]


def test_a_state_with_more_texts_than_the_text_cache_still_encodes() -> None:
    """The text LRU is trimmed after a call has read its own texts, not before (a 3-text state on a
    2-text cache raised KeyError when trimming ran first)."""
    state = {"phase": "a", "subgoals": ["find a room"], "last_result": "no rooms left"}
    small = StateEncoder(HashingEncoder(dim=DIM), cache_size=2).encode(state)
    large = StateEncoder(HashingEncoder(dim=DIM)).encode(state)
    for name in ("phase", "goal", "result", "whole"):
        np.testing.assert_array_equal(getattr(small, name), getattr(large, name))


class ShortEncoder(HashingEncoder):
    """Returns one row fewer than asked for batches of more than one text."""

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = super().encode(texts)
        return out[:-1] if len(texts) > 1 else out


def test_an_encoder_with_a_wrong_batch_shape_is_named_in_a_state_search() -> None:
    _, scorer = _memory_with_scorer()
    mem = Memory(encoder=ShortEncoder(dim=DIM), state_scorer=scorer)
    mem.add("We prefer a hotel with a pool near the old town.", namespace="n")
    with pytest.raises(InvalidInput, match=r"encoder hashing.*returned shape"):
        mem.search("ok, continue", namespace="n", state={"phase": "book", "subgoals": ["pick a hotel"]})
    assert len(mem.search("hotel pool", namespace="n")) == 1  # content search unaffected, record kept


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

    path = Path(__file__).resolve().parents[2] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    examples = probe_examples([path], HashingEncoder(dim=384))
    assert [p.query for p in examples] == [p["query"] for p in doc["probes"]]
    for p, probe in zip(examples, doc["probes"], strict=True):
        assert p.needed == frozenset(probe["needed"])
        labelled = {eid for eid, flag in zip(p.event_ids, p.example.needed, strict=True) if flag}
        assert labelled == p.needed & set(p.event_ids)


def test_gold_typed_examples_carry_each_pool_event_gold_type_and_scoring_keeps_the_classifier_types() -> None:
    import json
    from pathlib import Path

    from retain.eval.sam_train import gold_typed, probe_examples, training_examples

    path = Path(__file__).resolve().parents[2] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    gold = {e["id"]: e["gold"]["type"] for e in doc["events"] if e.get("gold")}
    probes = probe_examples([path], HashingEncoder(dim=384))
    typed = gold_typed(probes)
    differs = 0
    for p, g in zip(probes, typed, strict=True):
        assert [TYPES[t].value for t in g.cands.types] == [gold[i] for i in p.event_ids]
        differs += int((g.cands.types != p.example.cands.types).sum())
        assert g.needed is p.example.needed and g.content is p.example.content
    assert differs > 0  # the classifier is not the answer key: the test would pass vacuously otherwise
    assert [e.cands.types.tolist() for e in training_examples(probes, "predicted")] == [
        p.example.cands.types.tolist() for p in probes
    ]
    with pytest.raises(InvalidInput, match="train_types"):
        training_examples(probes, "oracle")  # type: ignore[arg-type]
    bare = [replace(probes[0], gold_types=None)]
    with pytest.raises(InvalidInput, match="no gold types"):
        gold_typed(bare)


def test_score_metrics_ranks_any_scores_as_rank_metrics_and_refuses_misfits() -> None:
    from pathlib import Path

    from retain.eval.sam_train import probe_examples, rank_metrics, score_metrics

    path = Path(__file__).resolve().parents[2] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    probes = probe_examples([path], HashingEncoder(dim=384))
    assert score_metrics(probes, [p.example.content for p in probes]) == rank_metrics(probes, None)
    # every needed event first: recall@5 = min(5, |needed in pool|) / |needed|, MRR 1
    oracle = [p.example.needed.astype(np.float64) for p in probes]
    usable = [p for p in probes if p.needed]
    expected = np.mean([min(5, int(p.example.needed.sum())) / len(p.needed) for p in usable])
    figures = score_metrics(probes, oracle)["all"]
    assert figures["probes"] == len(usable) and figures["mrr"] == 1.0
    assert figures["recall@5"] == round(float(expected), 4)
    # every needed event last: no needed event in the top 5 of a pool of more than 5 + |needed|
    worst = score_metrics(probes, [-s for s in oracle])["all"]
    assert worst["recall@5"] == 0.0 and worst["mrr"] < 0.2
    with pytest.raises(InvalidInput, match="arrays for"):
        score_metrics(probes, oracle[:-1])
    with pytest.raises(InvalidInput, match=r"scores\[0\]"):
        score_metrics(probes, [oracle[0][:-1], *oracle[1:]])


# --- the vectorised scorer against a plain per-record reference ---------------------------------


def _reference_features(
    state: object, phase: str | None, recs: Sequence[MemoryRecord], half_life_s: float
) -> np.ndarray:
    """STATE_FEATURES written out one record at a time in float64 (the definition, not the fast path)."""
    import math

    from retain.record import Tier
    from retain.state.candidates import content_terms
    from retain.text.values import canonical_values

    def cos(e: np.ndarray, v: np.ndarray) -> float:
        return float(np.dot(e.astype(np.float64), v.astype(np.float64)))

    def share(terms: frozenset[str], wanted: frozenset[str]) -> float:
        return len(terms & wanted) / len(wanted) if wanted else 0.0

    positions = [float(r.seq) if r.seq is not None else float(i) for i, r in enumerate(recs)]
    newest = max(positions, default=0.0)
    times = [r.event_time.timestamp() for r in recs if r.event_time is not None]
    newest_time = max(times) if times else math.nan
    texts = state.texts  # type: ignore[attr-defined]
    goal_terms = content_terms(" ".join(texts.get("goal", ())))
    result_terms = content_terms(" ".join(texts.get("result", ())))
    constraint_terms = [content_terms(c) for c in texts.get("constraints", ())]
    constraint_values = [v for v in (canonical_values(c) for c in texts.get("constraints", ())) if v]
    goal_values = canonical_values(" ".join(texts.get("goal", ())))
    result_values = canonical_values(" ".join(texts.get("result", ())))
    record_values = [canonical_values(r.content) for r in recs]

    def setter(i: int) -> float:
        """1 when record i is, for some constraint, the newest (first on ties) with the best share > 0."""
        for wanted in constraint_values:
            shares = [share(v, wanted) for v in record_values]
            best = max(shares)
            if best > 0 and shares[i] == best:
                newest = max(positions[j] for j in range(len(recs)) if shares[j] == best)
                first = min(j for j in range(len(recs)) if shares[j] == best and positions[j] == newest)
                if first == i:
                    return 1.0
        return 0.0

    def newest_of(keep: object) -> int | None:
        """The record of highest position (the first on ties) whose lower-cased role passes ``keep``."""
        rows = [j for j, o in enumerate(recs) if keep(o.role.lower())]  # type: ignore[operator]
        return max(rows, key=lambda j: (positions[j], -j)) if rows else None

    last = {
        "last": newest_of(lambda role: True),
        "last_user": newest_of(lambda role: role == "user"),
        "last_tool": newest_of(lambda role: role in {"tool", "system", "function", "observation"}),
        "last_agent": newest_of(lambda role: role.startswith(("agent", "assistant"))),
    }
    rows = []
    for i, r in enumerate(recs):
        e = r.embedding
        terms = content_terms(r.content)
        newest_cos = {
            f"{name}_cos": 0.0 if j is None else cos(e, recs[j].embedding)  # type: ignore[arg-type]
            for name, j in last.items()
        }
        newest_share = {
            f"{name}_overlap": 0.0 if last[name] is None else share(terms, content_terms(recs[last[name]].content))  # type: ignore[index]
            for name in last
        }
        same_type_newer = sum(
            1
            for j, o in enumerate(recs)
            if o.type is r.type and (positions[j] > positions[i] or (positions[j] == positions[i] and j < i))
        )
        age = max(newest - positions[i], 0.0)
        if r.event_time is None or math.isnan(newest_time):
            decay = 0.5
        else:
            decay = math.exp(-math.log(2) * max(newest_time - r.event_time.timestamp(), 0.0) / half_life_s)
        written = r.metadata.get("phase") or None
        same = 0.5 if not phase else 1.0 if written == phase else 0.0 if written else 0.5
        role = r.role.lower()
        goal_cos, result_cos = cos(e, state.goal), cos(e, state.result)  # type: ignore[attr-defined]
        goal_share = share(terms, goal_terms)
        hard = float(r.type is MemoryType.HARD_CONSTRAINT)
        pref = float(r.type is MemoryType.SOFT_PREFERENCE)
        obs = float(r.type is MemoryType.OBSERVATION)
        row = {
            "goal_cos": goal_cos,
            "result_cos": result_cos,
            "constraint_max": max((cos(e, c) for c in state.constraints), default=0.0),  # type: ignore[attr-defined]
            "open_max": max((cos(e, q) for q in state.open), default=0.0),  # type: ignore[attr-defined]
            "whole_cos": cos(e, state.whole),  # type: ignore[attr-defined]
            "latest": float(age == 0),
            "log_age_events": math.log1p(age),
            "time_decay": decay,
            "same_phase": same,
            "earlier_phase_observation": float(bool(phase) and obs == 1.0 and same == 0.0),
            "core": float(r.tier is Tier.CORE),
            "importance": r.importance,
            "log_access": math.log1p(r.access_count),
            "newest_of_type": float(same_type_newer == 0),
            "log_type_rank": math.log1p(same_type_newer),
            "role_user": float(role == "user"),
            "role_tool": float(role in {"tool", "system", "function", "observation"}),
            "role_agent": float(role.startswith(("agent", "assistant"))),
            "goal_overlap": goal_share,
            "result_overlap": share(terms, result_terms),
            "constraint_overlap": max((share(terms, w) for w in constraint_terms), default=0.0),
            "hard_x_goal": hard * goal_cos,
            "hard_x_goal_overlap": hard * goal_share,
            "pref_x_goal": pref * goal_cos,
            "pref_x_goal_overlap": pref * goal_share,
            "observation_x_result": obs * result_cos,
            "value_match": max((share(record_values[i], w) for w in constraint_values), default=0.0),
            "value_setter": setter(i),
            "goal_value_match": share(record_values[i], goal_values),
            "result_value_match": share(record_values[i], result_values),
            **newest_cos,
            **newest_share,
        }
        rows.append([row[name] for name in STATE_FEATURES])
    return np.array(rows, dtype=np.float64).reshape(len(recs), len(STATE_FEATURES))


def _random_records(rng: np.random.Generator, n: int, enc: HashingEncoder) -> list[MemoryRecord]:
    from datetime import UTC, datetime, timedelta

    from retain.record import Tier

    words = [
        "budget",
        "hotel",
        "flight",
        "train",
        "museum",
        "allergy",
        "deadline",
        "invoice",
        "refund",
        "courier",
        "tag",
        "bag",
        "预算",
        "酒店",
        "Aug 8",
        "4,800",
        "7am",
        "2026-08-18",
        "19:30",
    ]
    roles = ["user", "Tool", "assistant", "agent-7", "system", "Bob"]
    texts = [" ".join(rng.choice(words, size=5)) for _ in range(n)]
    vectors = enc.encode(texts) if n else np.zeros((0, DIM), np.float32)
    return [
        MemoryRecord(
            id=new_id(),
            namespace="n",
            content=texts[i],
            type=TYPES[int(rng.integers(len(TYPES)))],
            role=roles[int(rng.integers(len(roles)))],
            seq=int(rng.integers(0, 8)) if rng.random() < 0.8 else None,  # ties and unknown positions
            event_time=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=int(rng.integers(0, 300)))
            if rng.random() < 0.6
            else None,
            tier=Tier.CORE if rng.random() < 0.2 else Tier.DYNAMIC,
            importance=float(rng.random()),
            access_count=int(rng.integers(0, 5)),
            metadata={"phase": f"p{rng.integers(3)}"} if rng.random() < 0.7 else {},
            embedding=vectors[i],
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("seed", range(12))
def test_state_features_match_the_per_record_reference(seed: int) -> None:
    from retain.state.candidates import CandidateMemo
    from retain.state.features import state_features

    rng = np.random.default_rng(seed)
    enc = HashingEncoder(dim=DIM)
    recs = _random_records(rng, int(rng.integers(0, 40)), enc)
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
        expected = _reference_features(state, phase, recs, 3600.0)
        for cands in (candidates_from_records(recs), candidates_from_records(recs, memo=memo)):
            got = state_features(state, phase, cands, half_life_s=3600.0)
            # the cosine columns come from float32 products (7 significant digits); the rest is exact
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


def test_scorer_state_score_matches_the_reference() -> None:
    rng = np.random.default_rng(3)
    enc = HashingEncoder(dim=DIM)
    recs = _random_records(rng, 25, enc)
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
    scorer = _zero_scorer(
        DIM, gamma=gamma, theta=theta, W1=rng.standard_normal((2, 2 * DIM)), W2=rng.standard_normal((DIM, 2))
    )
    linear = _reference_features(state, "p2", recs, scorer.half_life_s) @ theta
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


def test_candidate_memo_works_out_a_changed_record_again() -> None:
    from retain.state.candidates import CandidateMemo

    enc = HashingEncoder(dim=DIM)
    rec = _records(["peanut allergy"], enc)[0]
    memo = CandidateMemo(limit=2)
    assert candidates_from_records([rec], memo=memo).importance.tolist() == [0.5]
    changed = rec.evolve(importance=0.9, content="tree nut allergy")  # same id, a new record object
    cands = candidates_from_records([changed], memo=memo)
    assert cands.importance.tolist() == [0.9] and "tree" in cands.terms[0]
    more = _records(["a", "b", "c"], enc)
    assert len(candidates_from_records(more, memo=memo).terms) == 3 and len(memo) <= 2
    with pytest.raises(InvalidInput, match="limit"):
        CandidateMemo(limit=0)
    with pytest.raises(InvalidInput, match="vectors"):
        candidates_from_records([rec], vectors=np.zeros((2, DIM), np.float32))


def test_candidate_memo_gathers_the_same_inputs_as_a_fresh_build() -> None:
    from retain.state.candidates import CandidateMemo

    rng = np.random.default_rng(5)
    enc = HashingEncoder(dim=DIM)
    recs = _random_records(rng, 30, enc)
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
    mem, _ = _memory_with_scorer()
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


def test_value_features_find_the_record_that_set_the_current_value() -> None:
    """A constraint's value written another way ("4800" <- "4,800") is matched; of a supersede chain the
    record stating the current value is the setter, not the older one; odd constraint values are safe."""
    from retain.state.features import state_features

    enc = HashingEncoder(dim=DIM)
    recs = _records(
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
    recs = [replace(r, role=role) for r, role in zip(_records(texts, enc), roles, strict=True)]
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
