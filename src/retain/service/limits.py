"""ASGI middleware of the service: the request size limit (:class:`BodyLimit`: a body over
``max_bytes`` is answered 413 before it is parsed) and :class:`ServerTiming` (how long the app took,
and how much of it the Memory calls took).

A request that declares its length (``Content-Length``) over the limit is refused before any of
its body is read; a chunked body is counted as it arrives and refused as soon as it passes the
limit (:class:`~retain.errors.PayloadTooLarge`, mapped to 413 by :mod:`retain.service.errors`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from retain.errors import PayloadTooLarge
from retain.facade.aio import CALL_SECONDS
from retain.service.errors import error_body

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BodyLimit", "ServerTiming"]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Default limit of a request body, bytes (4 MiB)."""

Scope = dict[str, Any]


class BodyLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` bytes with 413."""

    def __init__(self, app: Any, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send, self._message(int(declared), "declared"))
            return
        seen = 0
        refused = False

        async def counted() -> Any:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    refused = True
                    raise PayloadTooLarge(self._message(seen, "read"))
            return message

        async def guarded(message: Any) -> None:
            # once the body passed the limit, whatever the app answers (its body parser may turn the
            # error into its own 400) is replaced by the 413
            nonlocal refused
            if not refused:
                await send(message)
            elif message["type"] == "http.response.start":
                await self._refuse(send, self._message(seen, "read"))

        await self.app(scope, counted, guarded)

    def _message(self, size: int, how: str) -> str:
        return f"request body: {size} bytes {how}, limit is {self.max_bytes} bytes; nothing was read or written"

    async def _refuse(self, send: Any, message: str) -> None:
        body = json.dumps(error_body("PayloadTooLarge", message)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": [*headers, (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


class ServerTiming:
    """ASGI middleware adding ``Server-Timing: app;dur=<ms>, call;dur=<ms>`` to every response:
    ``app`` is the time from the request reaching the app to the response starting (what the
    service spent, without the network and the client); ``call`` is the part of it spent in Memory
    calls (:data:`~retain.facade.aio.CALL_SECONDS`; 0 for a request that makes none). Milliseconds;
    ``app`` minus ``call`` is the service's own work: routing, the key check, body validation and
    JSON encoding."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        calls: list[float] = []
        token = CALL_SECONDS.set(calls)

        async def timed(message: Any) -> None:
            if message["type"] == "http.response.start":
                spent = (time.perf_counter() - start) * 1000
                timing = f"app;dur={spent:.3f}, call;dur={sum(calls) * 1000:.3f}"
                message = {**message, "headers": [*message.get("headers", []), (b"server-timing", timing.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, timed)
        finally:
            CALL_SECONDS.reset(token)
