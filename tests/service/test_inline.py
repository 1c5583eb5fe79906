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


@pytest.mark.parametrize("inline", [True, False])
def test_server_timing_tells_the_memory_calls_from_the_rest(inline: bool) -> None:
    """``Server-Timing: app;dur=A, call;dur=C``: C is the time of the request's Memory calls (a call
    made to last 30 ms here), A the whole app; a request that makes no call reports C = 0."""
    import time

    import httpx

    from retain.facade.aio import CALL_SECONDS
    from retain.service.limits import ServerTiming

    async def main() -> None:
        async with AsyncMemory(":memory:", inline=inline, encoder=HashingEncoder(64), state_scorer=False) as mem:

            async def app(scope: dict[str, object], receive: object, send: object) -> None:
                if scope["path"] == "/slow":
                    await mem.run(time.sleep, 0.03)
                await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
                await send({"type": "http.response.body", "body": b"{}"})  # type: ignore[operator]

            transport = httpx.ASGITransport(app=ServerTiming(app))
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                for path, least in (("/slow", 30.0), ("/fast", 0.0)):
                    header = (await client.get(path)).headers["server-timing"]
                    parts = (part.strip().partition(";dur=") for part in header.split(","))
                    timing = {k: float(v) for k, _, v in parts}
                    assert set(timing) == {"app", "call"}
                    assert least <= timing["call"] <= timing["app"]
                    assert timing["call"] < 25.0 or path == "/slow"
            assert CALL_SECONDS.get() is None  # the middleware leaves the context as it found it

    asyncio.run(main())
