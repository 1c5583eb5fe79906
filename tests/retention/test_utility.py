"""EMBER's utility predictor: causal features, score checks, rule prior, learned model, oracle traces."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from retain.encoders.basis import HashingEncoder
from retain.errors import EncoderMismatch, InvalidInput, InvalidUtility
from retain.eval.datasets import load_locomo
from retain.eval.utility_traces import (
    beam_traces,
    evaluate,
    evaluate_scores,
    loco_auc,
    locomo_traces,
    stream_contexts,
)
from retain.record import MemoryRecord, search_text
from retain.retention.utility import (
    UTILITY_FEATURES,
    LearnedUtility,
    RulePrior,
    UtilityContext,
    UtilityModel,
    check_scores,
    train_utility,
    utility_features,
)
from retain.text.classify import classify

ENC = HashingEncoder(64)

# (speaker, text, is evidence) per session; evidence turns state facts, the others are chatter.
SESSIONS = [
    [
        ("Ann", "Hey Bob! How have you been?", False),
        ("Bob", "Hey Ann! Good, thanks. What's new with you?", False),
        ("Ann", "I adopted a dog named Rex last Saturday from the Lyon shelter.", True),
        ("Bob", "Wow, that's awesome!", False),
        ("Ann", "My goal is to run the Paris marathon in April 2025.", True),
        ("Bob", "haha ok thanks", False),
    ],
    [
        ("Bob", "Hi Ann!", False),
        ("Ann", "Hi! Did you finish the move?", False),
        ("Bob", "I moved to Berlin on 3 May and started a job at Siemens.", True),
        ("Ann", "Cool, congrats!", False),
        ("Bob", "I prefer working from home on Fridays, my budget for rent is 1200 EUR.", True),
        ("Ann", "lol nice", False),
    ],
]


def _locomo_file(tmp_path: Path, n_conversations: int = 2) -> Path:
    items = []
    for c in range(n_conversations):
        conv: dict[str, object] = {"speaker_a": "Ann", "speaker_b": "Bob"}
        evidence = []
        for s, session in enumerate(SESSIONS, start=1):
            conv[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
            turns = []
            for t, (speaker, text, is_evidence) in enumerate(session, start=1):
                turn = {"speaker": speaker, "dia_id": f"D{s}:{t}", "text": text}
                if s == 2 and t == 3:
                    turn["blip_caption"] = "a photo of a moving van"
                turns.append(turn)
                if is_evidence:
                    evidence.append(f"D{s}:{t}")
            conv[f"session_{s}"] = turns
        qa = [
            {"question": "When did Ann adopt?", "answer": "Saturday", "evidence": [evidence[0]], "category": 2},
            {"question": "Goals?", "answer": "marathon", "evidence": f"{evidence[1]}; {evidence[2]}", "category": 1},
            {"question": "Rent?", "adversarial_answer": "1200", "evidence": [evidence[3]], "category": 5},
        ]
        items.append({"sample_id": f"conv-{c}", "conversation": conv, "qa": qa})
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _record(
    text: str, *, seq: int = 0, role: str = "user", segment: str = "s1", rid: str | None = None
) -> MemoryRecord:
    record = MemoryRecord(
        id=rid or f"r{seq}", namespace="t", content=text, type=classify(text, role), role=role, seq=seq, segment=segment
    )
    return record.evolve(
        embedding=ENC.encode([search_text(record)])[0], token_count=ENC.count_tokens([text])[0], encoder=ENC.name
    )


def _stream(texts: list[str]) -> list[MemoryRecord]:
    return [_record(t, seq=i, role="Ann" if i % 2 else "Bob") for i, t in enumerate(texts)]


@pytest.fixture
def traces(tmp_path):
    return locomo_traces(load_locomo(_locomo_file(tmp_path, 3)), ENC)


def test_features_are_causal():
    texts = [t for session in SESSIONS for _, t, _ in session]
    base = _stream(texts)
    full = utility_features(base, stream_contexts(base))
    assert full.shape == (len(texts), len(UTILITY_FEATURES)) and np.all(np.isfinite(full))
    for later in range(1, len(texts)):
        changed = _stream([*texts[:later], "Totally different: I bought a boat in Oslo?!", *texts[later + 1 :]])
        other = utility_features(changed, stream_contexts(changed))
        np.testing.assert_array_equal(other[:later], full[:later])
        assert not np.array_equal(other[later], full[later])
    prefix = base[:4]
    np.testing.assert_array_equal(utility_features(prefix, stream_contexts(prefix)), full[:4])


@pytest.mark.parametrize(
    "scores", [[0.5, math.nan], [0.5, math.inf], [0.5, -0.1], [1.5, 0.2], [0.1, 0.2, 0.3], [[0.1, 0.2]], ["a", "b"]]
)
def test_check_scores_names_the_model(scores):
    with pytest.raises(InvalidUtility, match="my-model"):
        check_scores(scores, "my-model", 2)


def test_check_scores_accepts_valid():
    out = check_scores([0.0, 1.0], "m", 2)
    assert out.dtype == np.float64 and out.tolist() == [0.0, 1.0]


def test_rule_prior_constraint_beats_chatter():
    prior = RulePrior()
    assert isinstance(prior, UtilityModel)
    hard, chatter = _record("The budget must stay under 5000 EUR"), _record("haha ok thanks")
    ctx = UtilityContext(held=np.zeros((0, ENC.dim), dtype=np.float32), mean_length=6.0)
    scores = prior.score([hard, chatter], [ctx, ctx])
    assert scores[0] > scores[1] + 0.2


def test_novelty_lowers_an_exact_duplicate():
    record = _record("I adopted a dog named Rex last Saturday from the Lyon shelter.")
    unrelated = _record("The weather in the mountains is cold and windy.", rid="u")
    fresh = UtilityContext(held=np.stack([unrelated.embedding]), mean_length=10.0)
    duplicate = UtilityContext(held=np.stack([unrelated.embedding, record.embedding]), mean_length=10.0)
    feats = utility_features([record, record], [fresh, duplicate])
    novelty = UTILITY_FEATURES.index("novelty")
    assert feats[1, novelty] == pytest.approx(0.0, abs=1e-6) and feats[0, novelty] > 0.5
    scores = RulePrior().score([record, record], [fresh, duplicate])
    assert scores[1] < scores[0]


def test_context_validation():
    with pytest.raises(InvalidInput, match="held"):
        UtilityContext(held=np.zeros(4, dtype=np.float32))
    with pytest.raises(InvalidInput, match="contexts"):
        utility_features([_record("hi there")], [])
    with pytest.raises(InvalidInput, match="dimension"):
        utility_features([_record("hi there")], [UtilityContext(held=np.zeros((1, 8), dtype=np.float32))])


def test_locomo_traces_labels(tmp_path):
    (records, contexts, labels), _ = locomo_traces(load_locomo(_locomo_file(tmp_path)), ENC)
    expected = [is_evidence for session in SESSIONS for _, _, is_evidence in session]
    assert labels.dtype == bool and labels.tolist() == expected  # category 5 evidence counts too
    assert [r.seq for r in records] == list(range(len(expected)))
    first = records[0]
    assert first.namespace == "conv-0" and first.role == "Ann" and first.metadata["speaker"] == "Ann"
    assert first.segment == "session_1" and records[6].segment == "session_2"
    assert records[8].metadata["caption"] == "a photo of a moving van"
    assert all(r.embedding is not None and r.embedding.shape == (64,) and r.token_count > 0 for r in records)
    assert contexts[0].previous is None and contexts[0].held.shape == (0, 64) and contexts[0].mean_length is None
    assert contexts[3].previous is records[2] and contexts[3].held.shape == (3, 64)
    assert contexts[3].mean_length == pytest.approx(np.mean([r.token_count for r in records[:3]]))


def test_beam_traces_labels_any_shape(tmp_path):
    chat = tmp_path / "7"
    (chat / "probing_questions").mkdir(parents=True)
    messages = [
        {"role": "user", "id": i, "content": f"message {i} about topic {i} ->-> 1,{i}" if i % 2 == 0 else f"reply {i}"}
        for i in range(8)
    ]
    batches = [{"batch_number": 1, "turns": [messages[:4]]}, {"batch_number": 2, "turns": [messages[4:]]}]
    (chat / "chat.json").write_text(json.dumps(batches), encoding="utf-8")
    questions = {
        "abstention": [{"question": "?", "source_chat_ids": None}],
        "event_ordering": [{"question": "?", "source_chat_ids": [[0], [2, "4"]]}],
        "knowledge_update": [{"question": "?", "source_chat_ids": {"original_info": [5], "updated_info": [5]}}],
    }
    (chat / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions), encoding="utf-8")
    [(records, _, labels)] = beam_traces([chat], ENC)
    assert labels.tolist() == [True, False, True, False, True, True, False, False]
    assert records[0].content == "message 0 about topic 0" and records[0].namespace == "beam-7"
    assert records[4].segment == "batch_2"


def test_learned_json_round_trip(traces, tmp_path):
    model = train_utility(traces, trained_on="synthetic")
    assert model.embedding_dim == 64 and model.encoder == ENC.name
    again = LearnedUtility.from_json(model.to_json())
    records, contexts, _ = traces[0]
    np.testing.assert_allclose(again.score(records, contexts), model.score(records, contexts), atol=1e-3)
    assert again.trained_on == "synthetic"
    path = tmp_path / "utility.json"
    path.write_text(model.to_json(), encoding="utf-8")
    assert LearnedUtility.load(path).weights.shape == model.weights.shape
    bad = json.loads(model.to_json()) | {"feature_names": ["x"]}
    with pytest.raises(InvalidInput, match="features"):
        LearnedUtility.from_json(json.dumps(bad))
    with pytest.raises(InvalidInput, match="malformed"):
        LearnedUtility.from_json("{}")


def test_learned_ranks_evidence_and_refuses_other_encoders(traces):
    model = train_utility(traces)
    records, contexts, labels = traces[0]
    scores = model.score(records, contexts)
    assert scores[labels].mean() > scores[~labels].mean()
    stranger = _record("I adopted a dog.").evolve(embedding=np.ones(32, dtype=np.float32) / math.sqrt(32))
    with pytest.raises(EncoderMismatch):
        model.score([stranger], [UtilityContext(held=np.zeros((0, 32), dtype=np.float32))])


@pytest.mark.parametrize("used", [True, False])
def test_feedback_moves_the_score(traces, used):
    model = train_utility(traces)
    records, contexts, _ = traces[0]
    before = float(model.score(records[2:3], contexts[2:3])[0])
    model.feedback(records[2], contexts[2], used)
    after = float(model.score(records[2:3], contexts[2:3])[0])
    assert (after > before) if used else (after < before)
    moved = math.log(after / (1 - after)) - math.log(before / (1 - before))
    assert moved == pytest.approx(model.learning_rate * (float(used) - before), rel=1e-6)  # lr * (y - p) in logits
    assert model.updates == 1
    prior = RulePrior()
    fixed = prior.score(records[2:3], contexts[2:3])
    prior.feedback(records[2], contexts[2], used)
    np.testing.assert_array_equal(prior.score(records[2:3], contexts[2:3]), fixed)


def test_evaluate_and_loco(traces):
    for result in (loco_auc(traces), evaluate(RulePrior(), traces)):
        assert [row["name"] for row in result["per_trace"]] == ["conv-0", "conv-1", "conv-2"]
        for key in ("mean_auc", "hit@10%", "hit@25%", "hit@50%"):
            assert 0.0 <= result[key] <= 1.0
        assert result["hit@10%"] <= result["hit@25%"] <= result["hit@50%"]
    with pytest.raises(InvalidInput):
        train_utility([(traces[0][0], traces[0][1], np.zeros(len(traces[0][2]), dtype=bool))])


def test_shipped_model_loads_and_scores_without_embeddings():
    model = LearnedUtility.load()
    assert model.encoder == "all-MiniLM-L6-v2" and "rebuild: retain train-utility" in model.trained_on
    record = MemoryRecord(id="x", namespace="t", content="The budget must stay under 5000 EUR")
    scores = model.score([record], [UtilityContext(held=np.zeros((0, 0), dtype=np.float32))])
    assert 0.0 <= scores[0] <= 1.0


def test_cli_train_utility(tmp_path):
    from retain.cli.utility import register

    app = typer.Typer()
    app.command("noop")(lambda: None)  # a second command keeps typer from flattening the group
    register(app)
    out = tmp_path / "model.json"
    data = _locomo_file(tmp_path, 3)
    result = CliRunner().invoke(
        app, ["train-utility", "--data", str(data), "--out", str(out), "--encoder", "hashing-64"]
    )
    assert result.exit_code == 0, result.output
    assert "ROC-AUC" in result.output and "hit@25%" in result.output and "mean LoCoMo" in result.output
    model = LearnedUtility.load(out)
    assert model.encoder == "hashing-64" and "--encoder hashing-64" in model.trained_on
    help_text = CliRunner().invoke(app, ["train-utility", "--help"]).output
    assert "leave-one-conversation-out" in help_text


def test_evaluate_scores_matches_evaluate_and_checks_lengths(traces):
    prior = RulePrior()
    scores = [prior.score(t[0], t[1]) for t in traces]
    assert evaluate_scores(traces, scores) == evaluate(prior, traces)
    perfect = evaluate_scores(traces, [t[2].astype(float) for t in traces])
    assert perfect["mean_auc"] == 1.0 and perfect["hit@50%"] >= perfect["hit@10%"]
    with pytest.raises(InvalidInput, match="one per trace"):
        evaluate_scores(traces, scores[:-1])
    with pytest.raises(InvalidInput, match=r"scores\[0\]"):
        evaluate_scores(traces, [scores[0][:-1], *scores[1:]])
