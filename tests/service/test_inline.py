"""``AsyncMemory(inline=True)`` (``retain serve``'s default): calls run on the event loop's thread,
one at a time, and concurrent tasks lose nothing; views made by ``as_actor`` run inline too and keep
their rights checks."""

from __future__ import annotations

import asyncio
import threading

import pytest

from retain.encoders.basis import HashingEncoder
from retain.errors import Forbidden
from retain.facade.aio import AsyncMemory
from retain.safety.access import Grant, Principal, Role


def test_inline_calls_run_on_the_loop_thread_and_concurrent_adds_all_land() -> None:
    async def main() -> None:
        async with AsyncMemory(":memory:", inline=True, encoder=HashingEncoder(64), state_scorer=False) as mem:
            assert await mem.run(threading.get_ident) == threading.get_ident()
            ids = await asyncio.gather(
                *(mem.add(f"Note {i}: crate {i} left dock {i % 5}.", namespace="t") for i in range(40))
            )
            assert len(set(ids)) == 40
            assert {r.id for r in await mem.records(namespace="t")} == set(ids)
            reader = mem.as_actor(Principal("rita", grants=(Grant("t", Role.READ),)))
            assert await reader.run(threading.get_ident) == threading.get_ident()
            assert await reader.search("crate 7", namespace="t", k=3)
            with pytest.raises(Forbidden):
                await reader.add("a reader may not write", namespace="t")

    asyncio.run(main())


def test_threaded_calls_run_on_the_worker_thread() -> None:
    async def main() -> None:
        async with AsyncMemory(":memory:", encoder=HashingEncoder(64), state_scorer=False) as mem:
            assert await mem.run(threading.get_ident) != threading.get_ident()

    asyncio.run(main())
