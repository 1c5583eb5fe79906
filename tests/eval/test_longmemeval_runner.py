"""The LongMemEval runner on a tiny synthetic file (HashingEncoder; figures worked out by hand)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from typer.testing import CliRunner

from retain.cli.app import app
from retain.encoders.basis import HashingEncoder
from retain.eval.longmemeval import load_longmemeval
from retain.eval.longmemeval_runner import _score, haystack_items, run_longmemeval


def _question(qid: str, qtype: str, question: str, dates: list[str], sessions: dict[str, list], answers: list[str]):
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "answer": "x",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_dates": dates,
        "haystack_session_ids": list(sessions),
        "haystack_sessions": list(sessions.values()),
        "answer_session_ids": answers,
    }


def _turn(content: str, has_answer: bool = False, role: str = "user") -> dict:
    return {"role": role, "content": content, "has_answer": has_answer}


FILLER = [_turn("Please write a haiku about autumn leaves."), _turn("Crimson leaves drift down.", role="assistant")]
DATA = [
    _question(
        "q1",
        "single-session-user",
        "What colour is my bicycle?",
        # dates out of order between sessions, and one that does not parse
        ["2023/05/20 (Sat) 09:00", "2023/05/02 (Tue) 18:00", "sometime in spring"],
        {
            "answer_1": [
                _turn("My bicycle is bright orange, I bought it yesterday.", True),
                _turn("Nice!", role="assistant"),
            ],
            "filler_a": FILLER,
            "filler_b": [_turn("I met Sam yesterday at the market."), _turn("How was it?", role="assistant")],
        },
        ["answer_1"],
    ),
    _question(
        "q2_abs",
        "temporal-reasoning",
        "When did I adopt my cat?",
        ["2023/05/01 (Mon) 08:00"],
        {"answer_2": [_turn("I adopted my dog last week."), _turn("Congratulations!", role="assistant")]},
        ["answer_2"],
    ),
]


def _write(tmp_path, data=DATA):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_haystack_items_keep_session_position_and_date(tmp_path):
    q1 = load_longmemeval(_write(tmp_path))[0]
    items = haystack_items(q1)
    assert [i.seq for i in items] == list(range(6))
    assert [i.segment for i in items] == ["answer_1"] * 2 + ["filler_a"] * 2 + ["filler_b"] * 2
    assert items[0].event_time == datetime(2023, 5, 20, 9, 0, tzinfo=UTC)
    assert items[4].event_time is None  # the date that does not parse stays unknown
    assert items[0].metadata == {"evidence_id": "answer_1:0", "has_answer": True}


def test_score_by_hand():
    q1 = load_longmemeval_from(DATA[0])
    ranked = ["filler_a:0", "answer_1:1", "filler_b:0", "filler_a:1", "filler_b:1", "answer_1:0"]
    scores = _score(q1, ranked)
    assert scores["session_recall@5"] == 1.0 and scores["session_hit@5"] == 1.0
    assert scores["turn_recall@5"] == 0.0  # the has_answer turn is 6th
    assert scores["turn_recall@10"] == 1.0
    assert _score(q1, ["filler_a:0"])["session_recall@10"] == 0.0


def load_longmemeval_from(record: dict):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "one.json"
        path.write_text(json.dumps([record]), encoding="utf-8")
        return load_longmemeval(path)[0]


def test_run_longmemeval_per_type_and_abstention_apart(tmp_path):
    questions = load_longmemeval(_write(tmp_path))
    result = run_longmemeval(questions, HashingEncoder(64), progress=False)
    assert result["questions"] == 2 and result["abstention_skipped"] == 1 and result["turns"] == 8
    assert set(result["by_type"]) == {"single-session-user", "temporal-reasoning (abstention)"}
    single = result["by_type"]["single-session-user"]
    assert single["questions"] == 1 and single["turn_questions"] == 1
    assert single["session_recall@5"] == 1.0 and single["turn_recall@5"] == 1.0
    assert result["overall"]["questions"] == 1  # the abstention question is not in the overall mean
    assert result["overall"]["session_recall@10"] == single["session_recall@10"]
    abstention = result["by_type"]["temporal-reasoning (abstention)"]
    assert abstention["turn_questions"] == 0 and abstention["turn_recall@5"] is None


def test_cli_longmemeval(tmp_path):
    out = tmp_path / "out.json"
    result = CliRunner().invoke(
        app, ["eval", "longmemeval", "--data", str(_write(tmp_path)), "--encoder", "hashing-64", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "single-session-user" in result.output
    assert json.loads(out.read_text(encoding="utf-8"))["overall"]["session_recall@5"] == 1.0
    missing = CliRunner().invoke(app, ["eval", "longmemeval", "--data", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "not readable" in missing.output
