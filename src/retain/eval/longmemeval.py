"""Loader for LongMemEval (Wu et al., ICLR 2025, arXiv:2410.10813) files in the released format
(``longmemeval_s``, ``longmemeval_m``, ``longmemeval_oracle``). Pure parsing; nothing is retrieved.

A file is a JSON list of question records::

    {"question_id", "question_type", "question", "answer", "question_date",
     "haystack_dates": [str], "haystack_session_ids": [str], "haystack_sessions": [[turn]],
     "answer_session_ids": [str]}            turn = {"role", "content", "has_answer"}

Quirks handled here:

* **Dates** read "2023/05/20 (Sat) 02:21" (no zone; read as UTC). A date that does not parse, or whose
  weekday contradicts the date, becomes None: it is never guessed.
* **Session order.** ``haystack_sessions`` are kept in file order, which need not be chronological
  (an example has dates 17:50, 14:47, 17:15 in that order); sort by ``session_dates`` if needed.
* **``has_answer``** marks evidence turns; a missing or null ``has_answer`` reads as False.
* **Answers** may be JSON numbers rather than strings; they are kept as strings.
* The same question can appear in two files (both shared examples hold ``09ba9854_abs``); records
  are returned as given, duplicates included.
* **Abstention** questions carry the suffix ``_abs`` on ``question_id`` (:attr:`LmeQuestion.abstention`).
  Their ``answer_session_ids`` still name the sessions that make the question look answerable.
* **Evidence sessions** have ids starting ``answer_``; the filler sessions of the ``_s``/``_m``
  haystacks have other ids. ``answer_session_ids`` is the gold list and is kept as given.
* The three parallel lists must have the same length; otherwise the file is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retain.errors import DatasetUnavailable

__all__ = ["LmeQuestion", "LmeTurn", "load_longmemeval", "parse_lme_date"]

_DATE = re.compile(r"^\s*(\d{4}/\d{1,2}/\d{1,2})\s*(?:\((\w{3})\w*\))?\s*(\d{1,2}:\d{2})?\s*$")
_PARALLEL = ("haystack_dates", "haystack_session_ids", "haystack_sessions")
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True, slots=True)
class LmeTurn:
    """One turn of a haystack session. ``index_in_session`` counts from 0; ``session_date`` is UTC."""

    role: str
    content: str
    has_answer: bool
    session_id: str
    session_date: datetime | None
    index_in_session: int


@dataclass(frozen=True, slots=True)
class LmeQuestion:
    """One LongMemEval question with its haystack. ``sessions[i]`` has id ``session_ids[i]`` and date
    ``session_dates[i]``; ``answer_session_ids`` are the evidence sessions as given."""

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: datetime | None
    sessions: tuple[tuple[LmeTurn, ...], ...]
    session_ids: tuple[str, ...]
    answer_session_ids: tuple[str, ...]
    session_dates: tuple[datetime | None, ...] = ()

    @property
    def abstention(self) -> bool:
        """True for the unanswerable variants (``question_id`` ending in ``_abs``)."""
        return self.question_id.endswith("_abs")


def parse_lme_date(text: object) -> datetime | None:
    """Parse "2023/05/20 (Sat) 02:21" as UTC. The weekday and the time are optional ("2023/05/20").

    Returns None when ``text`` is absent, does not parse, or its weekday contradicts the date.
    """
    if not isinstance(text, str) or not (match := _DATE.match(text)):
        return None
    day, weekday, clock = match.groups()
    try:
        parsed = datetime.strptime(f"{day} {clock or '00:00'}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)
    except ValueError:
        return None
    if weekday is not None and _WEEKDAYS[parsed.weekday()] != weekday[:3].lower():
        return None
    return parsed


def load_longmemeval(path: str | Path) -> list[LmeQuestion]:
    """Read a LongMemEval file (a JSON list of question records; see the module docstring).

    Raises:
        DatasetUnavailable: the file is not readable JSON, is not a list, or a record lacks a field or
            has one of the wrong shape (the message names the file, the record and the field).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetUnavailable(f"{path}: not readable as JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise DatasetUnavailable(f"{path}: expected a JSON list of questions, got {type(raw).__name__}")
    return [_parse_question(path, i, item) for i, item in enumerate(raw)]


def _parse_question(path: Path, index: int, item: Any) -> LmeQuestion:
    where = f"{path}: record {index}"
    if not isinstance(item, dict):
        raise DatasetUnavailable(f"{where} is not an object")
    for key in ("question_id", "question_type", "question", "answer", *_PARALLEL):
        if item.get(key) is None:
            raise DatasetUnavailable(f"{where}: field {key!r} is missing")
    where = f"{path}: question {item['question_id']}"
    lists = {key: item[key] for key in _PARALLEL}
    for key, value in lists.items():
        if not isinstance(value, list):
            raise DatasetUnavailable(f"{where}: {key} is not a list")
    lengths = {key: len(value) for key, value in lists.items()}
    if len(set(lengths.values())) != 1:
        raise DatasetUnavailable(f"{where}: parallel lists differ in length ({lengths})")
    answer_ids = item.get("answer_session_ids") or []
    if not isinstance(answer_ids, list):
        raise DatasetUnavailable(f"{where}: answer_session_ids is not a list")

    session_ids = tuple(str(s) for s in lists["haystack_session_ids"])
    dates = tuple(parse_lme_date(d) for d in lists["haystack_dates"])
    sessions = []
    for s, (session_id, date, turns) in enumerate(zip(session_ids, dates, lists["haystack_sessions"], strict=True)):
        if not isinstance(turns, list):
            raise DatasetUnavailable(f"{where}: haystack_sessions[{s}] is not a list of turns")
        parsed = []
        for t, turn in enumerate(turns):
            field_path = f"{where}: haystack_sessions[{s}][{t}]"
            if not isinstance(turn, dict):
                raise DatasetUnavailable(f"{field_path} is not an object")
            role, content = turn.get("role"), turn.get("content")
            if not isinstance(role, str) or not isinstance(content, str):
                raise DatasetUnavailable(f"{field_path}: role or content is missing or not a string")
            has_answer = turn.get("has_answer") or False
            if not isinstance(has_answer, bool):
                raise DatasetUnavailable(f"{field_path}.has_answer is not a boolean ({has_answer!r})")
            parsed.append(LmeTurn(role, content, has_answer, session_id, date, t))
        sessions.append(tuple(parsed))
    return LmeQuestion(
        question_id=str(item["question_id"]),
        question_type=str(item["question_type"]),
        question=str(item["question"]),
        answer=str(item["answer"]),
        question_date=parse_lme_date(item.get("question_date")),
        sessions=tuple(sessions),
        session_ids=session_ids,
        answer_session_ids=tuple(str(a) for a in answer_ids),
        session_dates=dates,
    )
