"""AsyncMemory: the Memory API with async def, safe under many concurrent tasks."""

from __future__ import annotations

import asyncio

import pytest

from retain import AsyncMemory, Forbidden, Grant, HashingEncoder, Principal, RecordNotFound


def test_concurrent_adds_and_searches_all_land(tmp_path):
    async def scenario() -> tuple[list[str], int, list[str]]:
        async with AsyncMemory(tmp_path / "a.db", encoder=HashingEncoder(64), state_scorer=False) as mem:
            texts = [f"Note number {i}: the meeting moved to room {i}." for i in range(60)]
            results = await asyncio.gather(
                *(mem.add(t, namespace="n") for t in texts),
                *(mem.search(f"room {i}", namespace="n", k=3) for i in range(30)),
            )
            ids = [r for r in results if isinstance(r, str)]
            stored = await mem.records(namespace="n")
            return ids, len(stored), await mem.namespaces()

    ids, stored, namespaces = asyncio.run(scenario())
    assert len(set(ids)) == 60 and stored == 60 and namespaces == ["n"]


def test_errors_and_rights_come_through_the_async_view(tmp_path):
    async def scenario() -> None:
        async with AsyncMemory(":memory:", encoder=HashingEncoder(64), state_scorer=False) as mem:
            reader = mem.as_actor(Principal("reader", grants=(Grant("", "read"),)))
            with pytest.raises(RecordNotFound):
                await reader.get("01HZX3K8Q2M7V4T9C6B1N5R0WE", namespace="n")
            with pytest.raises(Forbidden):
                await reader.add("I may not write this.", namespace="n")
            assert reader.principal is not None and mem.principal is None

    asyncio.run(scenario())
