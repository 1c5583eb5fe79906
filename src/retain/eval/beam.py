"""Loader for BEAM ("Beyond a Million Tokens", Tavakoli et al. 2025, arXiv:2510.27246): one chat per
folder, each with its probing questions. Pure parsing; nothing is retrieved or scored here.

A chat folder holds::

    <n>/chat.json                                 or chat_trunecated.json (sic), see below
    <n>/probing_questions/probing_questions.json  {category: [question, ...]} for the 10 categories
    <n>/topic.json                                {"id", "category", "title", "theme", "subtopics"}

Shapes and quirks found in the 128K tier (folder ``100K``, chats 1-14) and handled here:

* **File name.** Some chats ship only ``chat_trunecated.json`` (misspelt), the truncated chat that
  BEAM's own answer generation reads in preference to ``chat.json``. The loader does the same:
  ``chat_trunecated.json``, then the correctly spelt ``chat_truncated.json``, then ``chat.json``.
* **Nesting.** ``chat.json`` is a list of *batches* ``{"batch_number", "time_anchor", "turns"}``;
  ``turns`` is a list of turn groups, each a list of 2, 4 or 6 messages alternating user/assistant
  (a ``main_question`` user message, optionally followed by ``followup_question`` or
  ``answer_ai_question`` user messages with their replies). The stream is the batches in file order,
  the groups in order, the messages in order; ``BeamMessage.session`` is the batch number as a string
  (its 1-based position when ``batch_number`` is missing).
* **Ids.** Every message has an integer ``id``, unique within the chat (0..n-1 in stream order in
  the data, but the loader relies only on uniqueness). A duplicate or missing id is refused.
* **Time.** The batch-level ``time_anchor`` is always null; the anchor sits on the first user message
  of each batch as ``"March-15-2024"`` (month name, day, year; date only). A message's ``time`` is the
  most recent anchor within its batch, at midnight UTC; messages before any anchor in their batch,
  and batches without one, get None (an anchor is never carried into the next batch). An anchor
  that does not parse is treated as absent.
* **The message ``index`` field** (``"1,2"`` = plan batch, bullet) is present on main questions only
  and is not in stream order (``"1,2"`` precedes ``"1,1"`` in several chats); it is ignored.
  ``BeamMessage.index`` is the position in the stream.
* **Evidence** (``source_chat_ids``) names message ids, and its shape varies by category:

  - absent: ``abstention`` (nothing to find, by design);
  - a flat list: ``information_extraction``, ``instruction_following``, ``multi_session_reasoning``,
    ``preference_following``, ``summarization`` and most ``event_ordering`` questions; one of them
    (chat 9, ``preference_following``) is an empty list;
  - a list mixing ids and lists of ids in ``event_ordering`` (chats 4 and 13): an inner list is one
    ordered item mentioned across several messages, e.g. ``[20, 22, [70, 72, 74], [174, 176]]``;
  - flat ``event_ordering`` lists may repeat an id (``[6, 62, 118, 118, 120]``): two ordered items
    from the same message; the repeat is kept in ``evidence_order`` and dropped from ``evidence``;
  - a dict of named lists: ``contradiction_resolution`` (``first_statement``/``second_statement``),
    ``knowledge_update`` (``original_info``/``updated_info``), ``temporal_reasoning``
    (``first_event``/``second_event``); one ``updated_info`` (chat 12) is an empty list. Both keys
    can name the same message (chat 1 ``contradiction_resolution``: ``[66]`` and ``[66]``; nine such
    questions in chats 1-14), and ``first_event`` need not precede ``second_event`` in the stream
    (chat 1: ``[2]`` then ``[0]``); both are kept as given.

  The questions' ``conversation_references`` ("Session 116", "chat_id: 58") also name message ids,
  not batches; they are kept in ``raw`` only.
* **Answers** are stored under a category-specific key: ``answer``; ``ideal_answer``
  (contradiction_resolution); ``ideal_response`` (abstention); ``ideal_summary`` (summarization);
  ``expected_compliance`` (instruction_following, preference_following: a description of the
  expected behaviour rather than an answer). BEAM grades against ``rubric``, kept in
  ``BeamQuestion.rubric``.

Every evidence id of chats 1-14 resolves to a message. Ids that do not resolve are kept apart in
``BeamQuestion.unresolved``; every id in ``evidence``, ``evidence_order`` and ``evidence_roles`` names
a message of the chat. Shapes not listed above raise :class:`DatasetUnavailable` naming the file and
the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from retain.errors import DatasetUnavailable

__all__ = [
    "BEAM_ANSWER_KEYS",
    "BEAM_CATEGORIES",
    "BEAM_CHAT_FILES",
    "BeamChat",
    "BeamId",
    "BeamMessage",
    "BeamQuestion",
    "load_beam",
    "load_beam_chat",
    "parse_beam_anchor",
]

BeamId = int | str
"""A message id as the chat gives it (``int`` in every known chat)."""

BEAM_CATEGORIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
BEAM_CHAT_FILES = ("chat_trunecated.json", "chat_truncated.json", "chat.json")
"""Chat file names in order of preference; the first is BEAM's own misspelling."""
BEAM_ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")
"""Keys holding a question's reference answer, tried in this order."""
_QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"
_ANCHOR_FORMATS = ("%B-%d-%Y", "%b-%d-%Y", "%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class BeamMessage:
    """One chat message. ``time`` is the date of the batch's time anchor at 00:00 UTC, or None."""

    id: BeamId
    role: str
    content: str
    session: str | None
    time: datetime | None
    index: int


@dataclass(frozen=True, slots=True)
class BeamQuestion:
    """A probing question with its evidence, normalised across the category-specific shapes.

    ``evidence``: resolvable ids, flattened, de-duplicated, in order of appearance.
    ``evidence_order``: one group per listed item (for ``event_ordering`` the gold order; an inner
    list is one group); for dict-shaped evidence one group per key in file order. Empty groups are
    left out. ``evidence_roles``: the dict-shaped evidence by key (``original_info``, ...), empty
    for list-shaped evidence. These three hold only ids that name a message of the chat;
    ``unresolved``: listed ids that name none. ``raw``: the question object as loaded; ``rubric``: the
    items BEAM's judge grades against. Hashing ignores the two dict fields.
    """

    category: str
    question: str
    answer: str | None
    evidence: tuple[BeamId, ...]
    evidence_order: tuple[tuple[BeamId, ...], ...]
    evidence_roles: dict[str, tuple[BeamId, ...]] = field(default_factory=dict, hash=False)
    unresolved: tuple[BeamId, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    rubric: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BeamChat:
    """One BEAM chat: ``chat_id`` is the folder name, ``topic`` the title from topic.json."""

    chat_id: str
    topic: str | None
    messages: tuple[BeamMessage, ...]
    questions: tuple[BeamQuestion, ...]


def parse_beam_anchor(text: object) -> datetime | None:
    """Parse a BEAM time anchor ("March-15-2024") as midnight UTC. None when absent or unparseable."""
    if not isinstance(text, str) or not text.strip():
        return None
    for fmt in _ANCHOR_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def load_beam(root: str | Path, chats: Sequence[str] | None = None) -> list[BeamChat]:
    """Load BEAM chats from ``root`` (a tier folder such as ``shared/data/beam/100K``).

    ``chats`` names chat folders to load; None loads every sub-folder holding a chat file. The
    result is sorted numerically by folder name (non-numeric names after, alphabetically).

    Raises:
        DatasetUnavailable: ``root`` is not a folder, a named chat is missing, no chat is found, or a
            chat does not parse (see :func:`load_beam_chat`).
    """
    base = Path(root)
    if not base.is_dir():
        raise DatasetUnavailable(f"BEAM root {base}: no such folder")
    if chats is None:
        names = [p.name for p in base.iterdir() if p.is_dir() and _chat_file(p) is not None]
        if not names:
            raise DatasetUnavailable(f"BEAM root {base}: no chat folders (expected <n>/chat.json)")
    else:
        names = list(dict.fromkeys(str(c) for c in chats))
        missing = [n for n in names if not (base / n).is_dir()]
        if missing:
            raise DatasetUnavailable(f"BEAM root {base}: no chat folder {', '.join(missing)}")
    return [load_beam_chat(base / name) for name in sorted(names, key=_numeric_key)]


def load_beam_chat(folder: str | Path) -> BeamChat:
    """Load one BEAM chat folder: messages in stream order and the probing questions.

    Raises:
        DatasetUnavailable: the chat or questions file is missing or not JSON, or a field has a shape
            not described in the module docstring (the message names the file and the field).
    """
    folder = Path(folder)
    chat_path = _chat_file(folder)
    if chat_path is None:
        raise DatasetUnavailable(f"{folder}: no chat file (looked for {', '.join(BEAM_CHAT_FILES)})")
    messages = _parse_messages(chat_path, _read_json(chat_path))
    known: dict[BeamId, BeamId] = {m.id: m.id for m in messages}
    questions_path = folder / _QUESTIONS_FILE
    questions = _parse_questions(questions_path, _read_json(questions_path), known)
    return BeamChat(folder.name, _topic(folder / "topic.json"), messages, questions)


def _numeric_key(name: str) -> tuple[int, int, str]:
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _chat_file(folder: Path) -> Path | None:
    for name in BEAM_CHAT_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetUnavailable(f"{path}: not readable as JSON ({exc})") from exc


def _topic(path: Path) -> str | None:
    if not path.is_file():
        return None
    raw = _read_json(path)
    title = raw.get("title") if isinstance(raw, dict) else None
    return title.strip() if isinstance(title, str) and title.strip() else None


def _parse_messages(path: Path, raw: Any) -> tuple[BeamMessage, ...]:
    if not isinstance(raw, list):
        raise DatasetUnavailable(f"{path}: expected a JSON list of batches, got {type(raw).__name__}")
    messages: list[BeamMessage] = []
    seen: set[BeamId] = set()
    for b, batch in enumerate(raw):
        where = f"batches[{b}]"
        if not isinstance(batch, dict) or not isinstance(batch.get("turns"), list):
            raise DatasetUnavailable(f"{path}: {where}.turns is missing or not a list")
        number = batch.get("batch_number")
        session = str(number if number is not None else b + 1)
        current = parse_beam_anchor(batch.get("time_anchor"))
        for g, group in enumerate(batch["turns"]):
            if not isinstance(group, list):
                raise DatasetUnavailable(f"{path}: {where}.turns[{g}] is not a list of messages")
            for k, msg in enumerate(group):
                field_path = f"{where}.turns[{g}][{k}]"
                if not isinstance(msg, dict):
                    raise DatasetUnavailable(f"{path}: {field_path} is not an object")
                msg_id = msg.get("id")
                if isinstance(msg_id, bool) or not isinstance(msg_id, int | str):
                    raise DatasetUnavailable(f"{path}: {field_path}.id is missing or not an int/str ({msg_id!r})")
                if msg_id in seen:
                    raise DatasetUnavailable(f"{path}: {field_path}.id {msg_id!r} is not unique")
                seen.add(msg_id)
                role, content = msg.get("role"), msg.get("content")
                if not isinstance(role, str):
                    raise DatasetUnavailable(f"{path}: {field_path}.role is missing or not a string")
                if not isinstance(content, str):
                    raise DatasetUnavailable(f"{path}: {field_path}.content is missing or not a string")
                anchor = parse_beam_anchor(msg.get("time_anchor"))
                current = anchor if anchor is not None else current
                messages.append(BeamMessage(msg_id, role, content, session, current, len(messages)))
    return tuple(messages)


def _parse_questions(path: Path, raw: Any, known: dict[BeamId, BeamId]) -> tuple[BeamQuestion, ...]:
    if not isinstance(raw, dict):
        raise DatasetUnavailable(f"{path}: expected a JSON object {{category: [questions]}}")
    out: list[BeamQuestion] = []
    for category, items in raw.items():
        if category not in BEAM_CATEGORIES:
            raise DatasetUnavailable(f"{path}: unknown category {category!r} (known: {', '.join(BEAM_CATEGORIES)})")
        if not isinstance(items, list):
            raise DatasetUnavailable(f"{path}: {category} is not a list of questions")
        for i, item in enumerate(items):
            out.append(_parse_question(path, f"{category}[{i}]", category, item, known))
    return tuple(out)


def _parse_question(path: Path, where: str, category: str, item: Any, known: dict[BeamId, BeamId]) -> BeamQuestion:
    if not isinstance(item, dict):
        raise DatasetUnavailable(f"{path}: {where} is not an object")
    question = item.get("question")
    if not isinstance(question, str):
        raise DatasetUnavailable(f"{path}: {where}.question is missing or not a string")
    answer = next((item[k] for k in BEAM_ANSWER_KEYS if item.get(k) is not None), None)
    rubric = item.get("rubric") or []
    if not isinstance(rubric, list):
        raise DatasetUnavailable(f"{path}: {where}.rubric is not a list")

    groups, roles = _evidence_groups(path, f"{where}.source_chat_ids", item.get("source_chat_ids"))
    listed = [i for group in groups for i in group] + [i for ids in roles.values() for i in ids]
    resolved = {i: _resolve(i, known) for i in listed}
    unresolved = tuple(dict.fromkeys(i for i in listed if resolved[i] is None))

    def keep(ids: Iterable[BeamId]) -> tuple[BeamId, ...]:
        return tuple(r for i in ids if (r := resolved[i]) is not None)

    by_role = {name: keep(ids) for name, ids in roles.items()}
    kept = by_role.values() if roles else (keep(group) for group in groups)
    order = tuple(g for g in kept if g)
    evidence = tuple(dict.fromkeys(i for group in order for i in group))
    return BeamQuestion(
        category=category,
        question=question,
        answer=None if answer is None else str(answer),
        evidence=evidence,
        evidence_order=order,
        evidence_roles=by_role,
        unresolved=unresolved,
        raw=item,
        rubric=tuple(str(r) for r in rubric),
    )


def _evidence_groups(
    path: Path, where: str, value: Any
) -> tuple[list[tuple[BeamId, ...]], dict[str, tuple[BeamId, ...]]]:
    """Split ``source_chat_ids`` into list groups (list shapes) or named groups (dict shape)."""
    if value is None:
        return [], {}
    if _is_id(value):
        return [(value,)], {}
    if isinstance(value, list):
        groups: list[tuple[BeamId, ...]] = []
        for j, entry in enumerate(value):
            if _is_id(entry):
                groups.append((entry,))
            elif isinstance(entry, list) and all(_is_id(x) for x in entry):
                groups.append(tuple(entry))
            else:
                raise DatasetUnavailable(f"{path}: {where}[{j}] is neither an id nor a list of ids ({entry!r})")
        return groups, {}
    if isinstance(value, dict):
        roles: dict[str, tuple[BeamId, ...]] = {}
        for name, ids in value.items():
            if _is_id(ids):
                roles[str(name)] = (ids,)
            elif isinstance(ids, list) and all(_is_id(x) for x in ids):
                roles[str(name)] = tuple(ids)
            else:
                raise DatasetUnavailable(f"{path}: {where}.{name} is not a list of ids ({ids!r})")
        return [], roles
    raise DatasetUnavailable(f"{path}: {where} has an unknown shape ({type(value).__name__})")


def _is_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _resolve(value: BeamId, known: dict[BeamId, BeamId]) -> BeamId | None:
    """The message id ``value`` names, or None. A digit string matches an integer id ("58" -> 58)."""
    if value in known:
        return known[value]
    if isinstance(value, str) and value.strip().isdigit() and int(value) in known:
        return known[int(value)]
    return None
