import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retain.errors import DatasetUnavailable
from retain.eval.longmemeval import load_longmemeval, parse_lme_date

SHARED_LME = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "longmemeval"


def _record(**overrides):
    record = {
        "question_id": "gpt4_x_abs",
        "question_type": "temporal-reasoning",
        "question": "What went wrong with my car after the first service?",
        "answer": 3,  # a number, as some released answers are
        "question_date": "2023/04/10 (Mon) 23:07",
        # out of chronological order, and the last weekday is wrong (2023/04/11 was a Tuesday)
        "haystack_dates": ["2023/04/10 (Mon) 17:50", "2023/04/10 (Mon) 14:47", "2023/04/11 (Mon) 09:00"],
        "haystack_session_ids": ["answer_a_2", "sharegpt_b", "answer_a_1"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "The GPS broke.", "has_answer": True},
                {"role": "assistant", "content": "Sorry to hear.", "has_answer": False},
            ],
            [{"role": "user", "content": "Write a poem."}, {"role": "assistant", "content": "Roses..."}],
            [],
        ],
        "answer_session_ids": ["answer_a_2", "answer_a_1"],
    }
    record.update(overrides)
    return record


def _write(tmp_path, data):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_parse_lme_date():
    assert parse_lme_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=UTC)
    assert parse_lme_date("2023/05/20") == datetime(2023, 5, 20, tzinfo=UTC)
    assert parse_lme_date("2023/05/20 (Mon) 02:21") is None  # weekday contradicts the date
    assert parse_lme_date("2023/02/30 (Thu) 02:21") is None
    assert parse_lme_date("yesterday") is None
    assert parse_lme_date(None) is None


def test_load_longmemeval_parses_sessions_in_file_order(tmp_path):
    (q,) = load_longmemeval(_write(tmp_path, [_record()]))
    assert q.question_id == "gpt4_x_abs" and q.abstention
    assert q.question_type == "temporal-reasoning" and q.answer == "3"
    assert q.question_date == datetime(2023, 4, 10, 23, 7, tzinfo=UTC)
    assert q.session_ids == ("answer_a_2", "sharegpt_b", "answer_a_1")
    assert q.answer_session_ids == ("answer_a_2", "answer_a_1")
    assert q.session_dates == (
        datetime(2023, 4, 10, 17, 50, tzinfo=UTC),
        datetime(2023, 4, 10, 14, 47, tzinfo=UTC),
        None,
    )
    assert [len(s) for s in q.sessions] == [2, 2, 0]
    first = q.sessions[0][0]
    assert (first.role, first.content, first.has_answer) == ("user", "The GPS broke.", True)
    assert (first.session_id, first.index_in_session) == ("answer_a_2", 0)
    assert first.session_date == datetime(2023, 4, 10, 17, 50, tzinfo=UTC)
    filler = q.sessions[1][1]
    assert filler.has_answer is False and filler.index_in_session == 1 and filler.session_id == "sharegpt_b"


def test_not_abstention_and_unparseable_question_date(tmp_path):
    (q,) = load_longmemeval(_write(tmp_path, [_record(question_id="e47becba", question_date="soon")]))
    assert not q.abstention and q.question_date is None


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"question_id": "x"}, "expected a JSON list"),
        (["x"], "record 0 is not an object"),
        ([_record(question=None)], "record 0: field 'question' is missing"),
        ([_record(haystack_dates=["2023/04/10 (Mon) 17:50"])], "question gpt4_x_abs: parallel lists differ"),
        ([_record(haystack_sessions=[[], "x", []])], r"haystack_sessions\[1\] is not a list"),
        ([_record(haystack_sessions=[[{"role": "user"}], [], []])], r"haystack_sessions\[0\]\[0\]: role or content"),
        ([_record(haystack_sessions=[[{"role": "user", "content": "x", "has_answer": "yes"}], [], []])], "has_answer"),
        ([_record(answer_session_ids="answer_a_2")], "answer_session_ids is not a list"),
    ],
)
def test_bad_shapes_are_refused(tmp_path, data, match):
    with pytest.raises(DatasetUnavailable, match=match):
        load_longmemeval(_write(tmp_path, data))


def test_unreadable_file_is_refused(tmp_path):
    with pytest.raises(DatasetUnavailable, match="not readable as JSON"):
        load_longmemeval(tmp_path / "missing.json")


@pytest.mark.skipif(not SHARED_LME.is_dir(), reason="shared LongMemEval examples not present")
def test_real_examples_load():
    questions = [q for path in sorted(SHARED_LME.glob("*.json")) for q in load_longmemeval(path)]
    assert len(questions) == 3
    types = Counter(q.question_type for q in questions)
    print(f"LongMemEval example question types: {dict(types)}")
    assert set(types) == {"multi-session", "temporal-reasoning"}
    for q in questions:
        assert q.question_date is not None and all(d is not None for d in q.session_dates)
        assert set(q.answer_session_ids) <= set(q.session_ids)
        assert any(t.has_answer for s in q.sessions for t in s)
        assert all(t.session_date is not None for s in q.sessions for t in s)
