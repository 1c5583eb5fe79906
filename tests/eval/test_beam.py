import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retain.errors import DatasetUnavailable
from retain.eval.beam import BEAM_CATEGORIES, load_beam, load_beam_chat, parse_beam_anchor

SHARED_BEAM = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "beam" / "100K"


def _msg(msg_id, role, content, **extra):
    return {"role": role, "id": msg_id, "content": content, **extra}


def _chat():
    """Two batches shaped like BEAM's chat.json: turn groups of 2 and 4 messages, anchors on the
    first user message of each batch, the plan ``index`` out of order, batch-level anchor null."""
    return [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    _msg(
                        0,
                        "user",
                        "I start the budget app.",
                        time_anchor="March-15-2024",
                        index="1,2",
                        question_type="main_question",
                    ),
                    _msg(1, "assistant", "Let's plan it."),
                    _msg(2, "user", "Sprint one ends March 29.", question_type="answer_ai_question"),
                    _msg(3, "assistant", "Noted."),
                ],
                [
                    _msg(4, "user", "Add SQLite.", index="1,1", question_type="main_question"),
                    _msg(5, "assistant", "Done."),
                ],
            ],
        },
        {
            "batch_number": 2,
            "time_anchor": None,
            "turns": [
                [
                    _msg(
                        6,
                        "user",
                        "Deploy on Render.",
                        time_anchor="April-05-2024",
                        index="2,1",
                        question_type="main_question",
                    ),
                    _msg(7, "assistant", "Here is how."),
                ],
                [
                    _msg(8, "user", "Response time is now 250ms.", index="2,2", question_type="main_question"),
                    _msg(9, "assistant", "Great."),
                ],
            ],
        },
    ]


def _questions():
    return {
        "abstention": [{"question": "What is my dog's name?", "ideal_response": "Not mentioned.", "rubric": ["x"]}],
        "contradiction_resolution": [
            {
                "question": "Did I use SQLite?",
                "ideal_answer": "Contradictory.",
                "source_chat_ids": {"first_statement": [4], "second_statement": [4]},
            }
        ],
        "event_ordering": [
            {"question": "Order?", "answer": "a, b, c", "source_chat_ids": [0, [4, 6], 6, 8, 8]},
        ],
        "information_extraction": [
            {"question": "When does sprint one end?", "answer": "March 29", "source_chat_ids": [2, 999, 2]}
        ],
        "instruction_following": [
            {"question": "Show code.", "expected_compliance": "Uses code blocks.", "source_chat_ids": ["5"]}
        ],
        "knowledge_update": [
            {
                "question": "Response time?",
                "answer": "250ms",
                "source_chat_ids": {"original_info": [6], "updated_info": []},
            }
        ],
        "multi_session_reasoning": [{"question": "How many?", "answer": 2, "source_chat_ids": [0, 6]}],
        "preference_following": [
            {"question": "Suggest tools.", "expected_compliance": "Minimal.", "source_chat_ids": []}
        ],
        "summarization": [{"question": "Summarise.", "ideal_summary": "It grew.", "source_chat_ids": [0, 1, 6]}],
        "temporal_reasoning": [
            {
                "question": "Days between?",
                "answer": "21",
                "source_chat_ids": {"first_event": [8], "second_event": [2, 404]},
            }
        ],
    }


def _write_chat(folder: Path, chat_name="chat.json", chat=None, questions=None, topic=True):
    (folder / "probing_questions").mkdir(parents=True)
    (folder / chat_name).write_text(json.dumps(_chat() if chat is None else chat), encoding="utf-8")
    qs = _questions() if questions is None else questions
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(qs), encoding="utf-8")
    if topic:
        (folder / "topic.json").write_text(json.dumps({"id": 1, "title": "Budget tracker"}), encoding="utf-8")
    return folder


@pytest.fixture
def chat_dir(tmp_path):
    return _write_chat(tmp_path / "1")


def _by_category(chat):
    return {q.category: q for q in chat.questions}


def test_parse_beam_anchor():
    assert parse_beam_anchor("March-15-2024") == datetime(2024, 3, 15, tzinfo=UTC)
    assert parse_beam_anchor("Sept-15-2024") is None
    assert parse_beam_anchor(None) is None


def test_messages_flatten_batches_and_carry_the_anchor_within_a_batch(chat_dir):
    chat = load_beam_chat(chat_dir)
    assert chat.chat_id == "1" and chat.topic == "Budget tracker"
    assert [m.id for m in chat.messages] == list(range(10))
    assert [m.index for m in chat.messages] == list(range(10))
    assert [m.role for m in chat.messages[:2]] == ["user", "assistant"]
    assert [m.session for m in chat.messages] == ["1"] * 6 + ["2"] * 4
    assert chat.messages[5].time == datetime(2024, 3, 15, tzinfo=UTC)
    assert chat.messages[6].time == datetime(2024, 4, 5, tzinfo=UTC)
    assert chat.messages[2].content == "Sprint one ends March 29."


def test_anchor_is_not_carried_into_the_next_batch(tmp_path):
    chat = _chat()
    del chat[1]["turns"][0][0]["time_anchor"]
    loaded = load_beam_chat(_write_chat(tmp_path / "7", chat=chat))
    assert loaded.messages[5].time is not None
    assert all(m.time is None for m in loaded.messages[6:])


def test_every_evidence_shape(chat_dir):
    q = _by_category(load_beam_chat(chat_dir))

    assert q["abstention"].evidence == () and q["abstention"].evidence_order == ()
    assert q["abstention"].answer == "Not mentioned." and q["abstention"].rubric == ("x",)

    nested = q["event_ordering"]  # inner list = one item; a repeated id = two items
    assert nested.evidence_order == ((0,), (4, 6), (6,), (8,), (8,))
    assert nested.evidence == (0, 4, 6, 8)
    assert nested.evidence_roles == {}

    flat = q["information_extraction"]  # missing id and a duplicate
    assert flat.evidence == (2,) and flat.unresolved == (999,)
    assert flat.evidence_order == ((2,), (2,))

    same = q["contradiction_resolution"]  # both keys name one message
    assert same.evidence_roles == {"first_statement": (4,), "second_statement": (4,)}
    assert same.evidence == (4,) and same.evidence_order == ((4,), (4,))
    assert same.answer == "Contradictory."

    update = q["knowledge_update"]  # an empty role is kept in roles, left out of the order
    assert update.evidence_roles == {"original_info": (6,), "updated_info": ()}
    assert update.evidence_order == ((6,),)

    temporal = q["temporal_reasoning"]  # dict with an unresolved id
    assert temporal.evidence_roles == {"first_event": (8,), "second_event": (2,)}
    assert temporal.evidence == (8, 2) and temporal.unresolved == (404,)

    assert q["instruction_following"].evidence == (5,)  # a digit string resolves to the int id
    assert q["instruction_following"].answer == "Uses code blocks."
    assert q["preference_following"].evidence == () and q["preference_following"].unresolved == ()
    assert q["multi_session_reasoning"].answer == "2"
    assert q["summarization"].answer == "It grew."
    assert q["summarization"].raw["source_chat_ids"] == [0, 1, 6]


def test_truncated_file_is_preferred(tmp_path):
    folder = _write_chat(tmp_path / "5", chat_name="chat_trunecated.json", topic=False)
    full = _chat()
    full[1]["turns"].append([_msg(10, "user", "extra"), _msg(11, "assistant", "extra")])
    (folder / "chat.json").write_text(json.dumps(full), encoding="utf-8")
    chat = load_beam_chat(folder)
    assert len(chat.messages) == 10 and chat.topic is None


def test_load_beam_sorts_numerically_and_selects(tmp_path):
    for name in ("10", "2", "1"):
        _write_chat(tmp_path / name)
    (tmp_path / "notes").mkdir()
    assert [c.chat_id for c in load_beam(tmp_path)] == ["1", "2", "10"]
    assert [c.chat_id for c in load_beam(tmp_path, ["10", "2"])] == ["2", "10"]
    with pytest.raises(DatasetUnavailable, match="no chat folder 3"):
        load_beam(tmp_path, ["3"])
    with pytest.raises(DatasetUnavailable, match="no such folder"):
        load_beam(tmp_path / "missing")
    with pytest.raises(DatasetUnavailable, match="no chat folders"):
        load_beam(tmp_path / "notes")


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ([[0, [1]]], r"source_chat_ids\[0\]"),
        ({"first_event": {"x": 1}}, r"source_chat_ids\.first_event"),
        (3.5, r"source_chat_ids has an unknown shape"),
        ([True], r"source_chat_ids\[0\]"),
    ],
)
def test_unknown_evidence_shapes_are_refused(tmp_path, source, match):
    questions = {"event_ordering": [{"question": "q", "answer": "a", "source_chat_ids": source}]}
    folder = _write_chat(tmp_path / "1", questions=questions)
    with pytest.raises(DatasetUnavailable, match=r"probing_questions\.json: event_ordering\[0\]\." + match):
        load_beam_chat(folder)


@pytest.mark.parametrize(
    ("chat", "questions", "match"),
    [
        ({"turns": []}, None, r"chat\.json: expected a JSON list of batches"),
        ([{"batch_number": 1}], None, r"chat\.json: batches\[0\]\.turns"),
        ([{"turns": [[{"role": "user", "content": "x"}]]}], None, r"batches\[0\]\.turns\[0\]\[0\]\.id"),
        ([{"turns": [[_msg(0, "user", "x"), _msg(0, "assistant", "y")]]}], None, r"\[1\]\.id 0 is not unique"),
        ([{"turns": [[{"role": "user", "id": 0}]]}], None, r"\[0\]\.content"),
        (None, {"gossip": []}, r"unknown category 'gossip'"),
        (None, {"abstention": [{"ideal_response": "x"}]}, r"abstention\[0\]\.question"),
        (None, [], r"expected a JSON object"),
    ],
)
def test_bad_shapes_name_file_and_field(tmp_path, chat, questions, match):
    folder = _write_chat(tmp_path / "1", chat=chat, questions=questions)
    with pytest.raises(DatasetUnavailable, match=match):
        load_beam_chat(folder)


def test_missing_files_are_refused(tmp_path):
    (tmp_path / "1").mkdir()
    with pytest.raises(DatasetUnavailable, match="no chat file"):
        load_beam_chat(tmp_path / "1")
    (tmp_path / "1" / "chat.json").write_text(json.dumps(_chat()), encoding="utf-8")
    with pytest.raises(DatasetUnavailable, match=r"probing_questions\.json: not readable"):
        load_beam_chat(tmp_path / "1")


@pytest.mark.skipif(not SHARED_BEAM.is_dir(), reason="shared BEAM data not present")
def test_real_beam_chats_load_and_resolve():
    chats = load_beam(SHARED_BEAM)
    assert [c.chat_id for c in chats] == [str(n) for n in range(1, 15)]
    by_category = Counter(q.category for c in chats for q in c.questions)
    assert set(by_category) == set(BEAM_CATEGORIES)
    assert all(n == 28 for n in by_category.values())
    assert sum(len(c.questions) for c in chats) == 280
    for chat in chats:
        assert chat.topic and len(chat.messages) >= 188
        assert len({m.id for m in chat.messages}) == len(chat.messages)
        assert all(m.time is not None for m in chat.messages)
        assert {m.role for m in chat.messages} == {"user", "assistant"}
    resolved = sum(len(q.evidence) for c in chats for q in c.questions)
    unresolved = sum(len(q.unresolved) for c in chats for q in c.questions)
    share = resolved / (resolved + unresolved)
    print(f"BEAM 100K chats 1-14: {resolved} resolved, {unresolved} unresolved evidence ids ({share:.3f})")
    assert share > 0.9
    assert all(not q.evidence for c in chats for q in c.questions if q.category == "abstention")
    nested = [q for c in chats for q in c.questions if any(len(g) > 1 for g in q.evidence_order)]
    assert any(q.category == "event_ordering" for q in nested)
    roles = {k for c in chats for q in c.questions for k in q.evidence_roles}
    assert {"original_info", "updated_info", "first_event", "second_event"} <= roles


def test_run_beam_full_and_budgets_write_a_report(tmp_path):
    from retain.encoders.basis import HashingEncoder
    from retain.eval.beam_runner import run_beam, write_beam_report

    folder = _write_chat(tmp_path / "1")
    chats = load_beam(tmp_path)
    report = run_beam(chats, [folder], HashingEncoder(64), shares=[0.5], policies=["fifo", "oracle"], progress=False)
    assert [(r["policy"], r["budget"]) for r in report["runs"]] == [("full", 1.0), ("fifo", 0.5), ("oracle", 0.5)]
    full, fifo, oracle = report["runs"]
    assert full["hit_rate"] == 1.0 and full["evictions"] == 0
    assert fifo["evictions"] > 0 and oracle["hit_rate"] >= fifo["hit_rate"]
    md = write_beam_report(report, tmp_path / "report").read_text(encoding="utf-8")
    assert "budget-performance" in md and (tmp_path / "report" / "budget_curves.png").is_file()


def test_beam_stream_carries_the_gold_order_of_event_ordering_questions(chat_dir):
    from retain.encoders.basis import HashingEncoder
    from retain.eval.beam_runner import beam_stream, run_beam

    chat = load_beam_chat(chat_dir)
    questions = {q.category: q for q in beam_stream(chat).questions}
    assert questions["event_ordering"].order == (("0",), ("4", "6"), ("6",), ("8",), ("8",))
    assert all(q.order == () for c, q in questions.items() if c != "event_ordering")
    report = run_beam([chat], [chat_dir], HashingEncoder(64), progress=False)
    ordering = report["runs"][0]["by_category"]["event_ordering"]
    assert -1.0 <= ordering["kendall_tau"] <= 1.0
    assert "kendall_tau" not in report["runs"][0]["by_category"]["knowledge_update"]


def test_instructions_in_force_reach_the_context_without_echoing_the_question(tmp_path):
    from retain.encoders.basis import HashingEncoder
    from retain.eval.beam_runner import run_beam_context

    chat = _chat()
    chat[0]["turns"][1][0]["content"] = "Always use code blocks when I ask about implementation details."
    questions = _questions()
    questions["instruction_following"][0]["source_chat_ids"] = [4]
    loaded = load_beam_chat(_write_chat(tmp_path / "1", chat=chat, questions=questions))
    result = run_beam_context([loaded], HashingEncoder(64), progress=False)
    assert result["by_category"]["instruction_following"] == {
        "questions": 1,
        "recall@10": 1.0,
        "in_context": 1.0,
        "context_items": result["questions"][0]["items"],
    }
    assert result["questions"][0]["standing"] == 1
    assert "preference_following" not in result["by_category"]  # its only question has no evidence
