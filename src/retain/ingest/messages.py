"""Chat messages (``{"role", "content"}``, the shape chat frameworks and mem0 use) as memories to add.

:func:`messages_to_items` turns a list of messages into one :class:`~retain.ingest.draft.NewMemory`
per message, or refuses the whole list with :class:`~retain.errors.InvalidInput` naming the index
of the first bad message (``messages[7].role: ...``). Nothing is dropped silently: an unknown key,
a part that is not text, or an empty message is refused.

A message is a mapping with:

* ``role`` (required): ``user``, ``assistant``, ``system``, ``developer`` (stored as ``system``),
  ``tool`` or ``function`` (stored as ``tool``: a tool result);
* ``content``: a string, or a list of parts each ``{"type": "text", "text": str}``, joined with a
  newline; may be None or absent only for an assistant message with ``tool_calls``;
* ``name`` (optional string) and ``tool_call_id`` (optional string), kept in the record's metadata;
* ``tool_calls`` (assistant only): a list of ``{"function": {"name": str, "arguments": str}}`` (an
  ``id`` and ``type`` may be given), appended to the text as ``tool call <name>(<arguments>)``
  lines, so what the agent asked a tool for is remembered beside its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retain.errors import InvalidInput
from retain.ingest.draft import NewMemory
from retain.state.agent import AgentState

__all__ = ["MESSAGE_KEYS", "MESSAGE_ROLES", "messages_to_items"]

MESSAGE_ROLES = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
"""Message role -> the role stored on the record."""
MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_call_id", "tool_calls"})
"""The keys a message may have."""


def _text(content: Any, at: str, *, may_be_empty: bool) -> str:
    if content is None:
        if may_be_empty:
            return ""
        raise InvalidInput(f"{at}: required (a string or a list of text parts)")
    if isinstance(content, str):
        text = content
    elif isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        parts = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise InvalidInput(
                    f"{at}[{j}]: only text parts ({{'type': 'text', 'text': str}}) are stored, got {kind!r}"
                )
            parts.append(part["text"])
        text = "\n".join(parts)
    else:
        raise InvalidInput(f"{at}: a string or a list of text parts, got {type(content).__name__}")
    if not text.strip() and not may_be_empty:
        raise InvalidInput(f"{at}: empty")
    return text


def _calls(calls: Any, at: str) -> list[str]:
    if not isinstance(calls, Sequence) or isinstance(calls, str | bytes):
        raise InvalidInput(f"{at}: a list of tool calls, got {type(calls).__name__}")
    lines = []
    for j, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
            raise InvalidInput(f"{at}[{j}]: expected {{'function': {{'name': str, 'arguments': str}}}}")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            raise InvalidInput(f"{at}[{j}].function.arguments: a string, got {type(arguments).__name__}")
        lines.append(f"tool call {function['name']}({arguments})")
    return lines


def _item(message: Any, i: int, state: AgentState | Mapping[str, Any] | None) -> NewMemory:
    at = f"messages[{i}]"
    if not isinstance(message, Mapping):
        raise InvalidInput(f"{at}: a mapping with 'role' and 'content', got {type(message).__name__}")
    unknown = sorted(str(k) for k in message if k not in MESSAGE_KEYS)
    if unknown:
        raise InvalidInput(f"{at}: unknown key(s) {unknown}; known: {sorted(MESSAGE_KEYS)}")
    role = message.get("role")
    if not isinstance(role, str) or role not in MESSAGE_ROLES:
        raise InvalidInput(f"{at}.role: one of {sorted(MESSAGE_ROLES)}, got {role!r}")
    calls = message.get("tool_calls")
    if calls is not None and role != "assistant":
        raise InvalidInput(f"{at}.tool_calls: only an assistant message makes tool calls")
    lines = _calls(calls, f"{at}.tool_calls") if calls is not None else []
    text = _text(message.get("content"), f"{at}.content", may_be_empty=bool(lines))
    metadata: dict[str, str] = {}
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(f"{at}.{key}: a non-empty string, got {value!r}")
            metadata[key] = value
    content = "\n".join(p for p in (text.strip(), *lines) if p)
    return NewMemory(content=content, role=MESSAGE_ROLES[role], metadata=metadata, state=state)


def messages_to_items(messages: Any, *, state: AgentState | Mapping[str, Any] | None = None) -> list[NewMemory]:
    """One :class:`NewMemory` per message, in order, each with ``state`` (see the module docstring).

    Raises:
        InvalidInput: ``messages`` not a list of mappings, empty, or a message malformed (the
            message names its index and the key: ``messages[7].content: empty``).
    """
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes | bytearray | Mapping):
        raise InvalidInput(f"messages: a list of {{'role', 'content'}} mappings, got {type(messages).__name__}")
    if not messages:
        raise InvalidInput("messages: empty list")
    return [_item(m, i, state) for i, m in enumerate(messages)]
