"""Memory.add_messages: chat messages in one transaction, a malformed one refuses the whole batch."""

from __future__ import annotations

from typing import Any

import pytest

from retain import AgentState, HashingEncoder, InvalidInput, Memory

NS = "chat"


def batch(n: int = 20) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        role = ("user", "assistant", "tool")[i % 3]
        out.append({"role": role, "content": f"Message {i} about the hotel in Porto, room {100 + i}."})
    return out


def test_messages_are_stored_in_order_with_roles_and_state() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    state = AgentState(phase="book_hotel")
    msgs = [
        {"role": "system", "content": "You plan trips."},
        {"role": "user", "content": [{"type": "text", "text": "Budget is 900 EUR."},
                                     {"type": "text", "text": "No stairs."}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search_hotels", "arguments": '{"city": "Porto"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "search_hotels", "content": "Hotel Ribeira: 95 EUR, lift."},
    ]  # fmt: skip
    ids = mem.add_messages(msgs, namespace=NS, state=state)
    records = [mem.get(i, namespace=NS) for i in ids]
    assert [r.role for r in records] == ["system", "user", "assistant", "tool"]
    assert records[1].content == "Budget is 900 EUR.\nNo stairs."
    assert records[2].content == 'tool call search_hotels({"city": "Porto"})'
    assert records[3].metadata["tool_call_id"] == "c1" and records[3].metadata["name"] == "search_hotels"
    assert all(r.metadata.get("phase") == "book_hotel" for r in records)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"role": "robot", "content": "hi"}, r"messages\[7\]\.role: one of"),
        ({"role": "user"}, r"messages\[7\]\.content: required"),
        ({"role": "user", "content": "   "}, r"messages\[7\]\.content: empty"),
        ({"role": "user", "content": "hi", "extra": 1}, r"messages\[7\]: unknown key"),
        ({"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}, r"messages\[7\]\.content\[0\]"),
        ({"role": "user", "content": "x" * 2_000_000}, r"messages\[7\]"),
        ("just text", r"messages\[7\]: a mapping"),
        ({"role": "tool", "content": "ok", "tool_calls": []}, r"messages\[7\]\.tool_calls: only an assistant"),
    ],
)
def test_one_malformed_message_in_twenty_names_its_index_and_stores_nothing(bad: Any, match: str) -> None:
    mem = Memory(encoder=HashingEncoder(64))
    msgs: list[Any] = batch(20)
    msgs[7] = bad
    entries = len(mem.store.audit_log())
    with pytest.raises(InvalidInput, match=match):
        mem.add_messages(msgs, namespace=NS)
    assert mem.records(namespace=NS) == [] and len(mem.store.audit_log()) == entries
    assert len(mem.add_messages(batch(20), namespace=NS)) == 20  # the same batch, well formed, is stored


@pytest.mark.parametrize("messages", [[], {"role": "user", "content": "hi"}, "hi", None])
def test_not_a_list_of_messages_is_refused(messages: Any) -> None:
    with pytest.raises(InvalidInput, match="messages"):
        Memory(encoder=HashingEncoder(64)).add_messages(messages, namespace=NS)
