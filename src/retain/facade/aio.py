"""``AsyncMemory``: the ``Memory`` API with ``async def``, for asyncio applications and the REST service.

Every call runs the synchronous ``Memory`` (or ``ActorMemory``) method on one worker thread owned
by the ``AsyncMemory``: calls from any number of concurrent tasks are queued and run one at a time,
in the order they were awaited, so the memory's caches and its SQLite connection are never used by
two threads at once, and the event loop never blocks on the store or the encoder. Several processes
may still share one store file (the store's own guards apply). Views made by :meth:`AsyncMemory.as_actor`
share the worker thread of the memory they come from.

:data:`CALL_SECONDS`: a caller that sets it to a list (the REST service's ``Server-Timing``
middleware, per request) gets the wall time of every Memory call awaited in that context appended to
it, in seconds, so what a request spent in the memory can be told apart from what it spent around it.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from retain.facade.actor import ActorMemory
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.record import MemoryRecord
from retain.retrieval.fusion import Hit
from retain.safety.access import Principal
from retain.safety.audit import VerifyReport
from retain.safety.conflicts import Conflict
from retain.safety.context import Context, Provenance
from retain.safety.handoff import Handoff
from retain.safety.integrity import ForgetReport, RetentionReport

__all__ = ["CALL_SECONDS", "AsyncMemory"]

CALL_SECONDS: ContextVar[list[float] | None] = ContextVar("retain_call_seconds", default=None)
"""When set to a list: each Memory call awaited in this context appends its wall time (seconds, as
the event loop waited for it: the worker-thread hop included unless ``inline``). None: nothing timed."""

_T = TypeVar("_T")


class AsyncMemory:
    """A :class:`~retain.memory.Memory` (or a principal's view of one) behind ``async def`` methods.

    Args:
        memory: an open ``Memory`` to wrap, or the store path to open one with ``options``
            (the keyword arguments of ``Memory``).
        options: ``Memory``'s keyword arguments (``encoder``, ``config``, ``budget``, ...), only
            with a path.
        inline: run each call on the calling thread (the event loop's) instead of the worker thread:
            no thread hand-off per call (two thread wake-ups less), but the loop is blocked while a call
            runs. For a server whose calls are serialised anyway (``retain serve``); calls still run
            one at a time, since the loop runs one of them at a time.

    Each method takes the arguments of the ``Memory`` method of the same name, returns what it
    returns and raises what it raises. ``await mem.aclose()`` (or ``async with``) closes the store
    and stops the worker thread.

    Example::

        async with AsyncMemory("agent.db") as mem:
            rid = await mem.add("The budget is 5000 EUR.", namespace="trip")
            hits = await mem.search("budget", namespace="trip", k=5)
    """

    def __init__(self, memory: Memory | str | Path = ":memory:", *, inline: bool = False, **options: Any) -> None:
        if isinstance(memory, Memory):
            if options:
                raise TypeError("AsyncMemory(memory): options are for a path, not an open Memory")
            self._memory = memory
        else:
            self._memory = Memory(memory, **options)
        self._target: Memory | ActorMemory = self._memory
        self._inline = inline is True
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="retain-async")

    @property
    def memory(self) -> Memory:
        """The synchronous ``Memory`` behind this object (call it only from the worker thread's
        point of view: not concurrently with pending calls)."""
        return self._memory

    @property
    def principal(self) -> Principal | None:
        """The principal this view acts for, or None for the memory itself."""
        return self._target.principal if isinstance(self._target, ActorMemory) else None

    def as_actor(self, principal: Principal) -> AsyncMemory:
        """The asynchronous view of ``Memory.as_actor(principal)``, sharing this worker thread."""
        view = object.__new__(AsyncMemory)
        view._memory = self._memory
        view._target = self._memory.as_actor(principal)
        view._executor = self._executor
        view._inline = self._inline
        return view

    async def _run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        spent = CALL_SECONDS.get()
        start = time.perf_counter()
        try:
            if self._inline:
                return fn(*args, **kwargs)
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        finally:
            if spent is not None:
                spent.append(time.perf_counter() - start)

    async def run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run ``fn(*args, **kwargs)`` on the worker thread (for a synchronous call not wrapped here)."""
        return await self._run(fn, *args, **kwargs)

    async def aclose(self) -> None:
        """Close the store once pending calls are done and stop the worker thread."""
        await self._run(self._memory.close)
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def namespaces(self) -> list[str]:
        """Namespaces holding records (for a principal's view, those it may read), sorted."""
        target = self._target
        if isinstance(target, ActorMemory):
            return await self._run(target.namespaces)
        return sorted(await self._run(target.store.namespaces))

    async def add(self, content: str, *, namespace: str, **options: Any) -> str:
        """``Memory.add``."""
        return await self._run(self._target.add, content, namespace=namespace, **options)

    async def add_many(
        self, items: Iterable[NewMemory | Mapping[str, Any]], *, namespace: str, **options: Any
    ) -> list[str]:
        """``Memory.add_many``."""
        return await self._run(self._target.add_many, list(items), namespace=namespace, **options)

    async def update(self, id: str, content: str, *, namespace: str, **fields: Any) -> str:
        """``Memory.update``."""
        return await self._run(self._target.update, id, content, namespace=namespace, **fields)

    async def delete(self, id: str, *, namespace: str, **options: Any) -> int:
        """``Memory.delete``."""
        return await self._run(self._target.delete, id, namespace=namespace, **options)

    async def delete_all(self, *, namespace: str, **options: Any) -> int:
        """``Memory.delete_all``."""
        return await self._run(self._target.delete_all, namespace=namespace, **options)

    async def forget(self, query_or_id: str, *, namespace: str, **options: Any) -> ForgetReport:
        """``Memory.forget``."""
        return await self._run(self._target.forget, query_or_id, namespace=namespace, **options)

    async def feedback(self, id: str, *, namespace: str, used: bool, **options: Any) -> MemoryRecord:
        """``Memory.feedback``."""
        return await self._run(self._target.feedback, id, namespace=namespace, used=used, **options)

    async def pin(self, id: str, *, namespace: str, **options: Any) -> MemoryRecord:
        """``Memory.pin``."""
        return await self._run(self._target.pin, id, namespace=namespace, **options)

    async def unpin(self, id: str, *, namespace: str, **options: Any) -> MemoryRecord:
        """``Memory.unpin``."""
        return await self._run(self._target.unpin, id, namespace=namespace, **options)

    async def get(self, id: str, *, namespace: str) -> MemoryRecord:
        """``Memory.get``."""
        return await self._run(self._target.get, id, namespace=namespace)

    async def history(self, id: str, *, namespace: str) -> list[MemoryRecord]:
        """``Memory.history``."""
        return await self._run(self._target.history, id, namespace=namespace)

    async def conflicts(self, namespace: str, **options: Any) -> list[Conflict]:
        """``Memory.conflicts``."""
        return await self._run(self._target.conflicts, namespace, **options)

    async def resolve_conflict(self, conflict_id: str, *, namespace: str, keep: str, **options: Any) -> Conflict:
        """``Memory.resolve_conflict``."""
        return await self._run(self._target.resolve_conflict, conflict_id, namespace=namespace, keep=keep, **options)

    async def records(self, *, namespace: str, **options: Any) -> list[MemoryRecord]:
        """``Memory.records``."""
        return await self._run(self._target.records, namespace=namespace, **options)

    async def timeline(self, namespace: str, query: str | None = None, **options: Any) -> list[MemoryRecord]:
        """``Memory.timeline``."""
        return await self._run(self._target.timeline, namespace, query, **options)

    async def search(self, query: str, *, namespace: str, **options: Any) -> list[Hit]:
        """``Memory.search``, every option included."""
        return await self._run(self._target.search, query, namespace=namespace, **options)

    async def context(self, query: str, *, namespace: str, budget_tokens: int, **options: Any) -> Context:
        """``Memory.context``."""
        return await self._run(self._target.context, query, namespace=namespace, budget_tokens=budget_tokens, **options)

    async def explain(self, provenance_id: str, *, namespace: str) -> Provenance:
        """``Memory.explain``."""
        return await self._run(self._target.explain, provenance_id, namespace=namespace)

    async def export(self, *, namespace: str, **options: Any) -> str:
        """``Memory.export``."""
        return await self._run(self._target.export, namespace=namespace, **options)

    async def handoff(self, namespace: str, **options: Any) -> Handoff:
        """``Memory.handoff``."""
        return await self._run(self._target.handoff, namespace, **options)

    async def retention_report(self, namespace: str, **constraints: Any) -> RetentionReport:
        """``Memory.retention_report``."""
        return await self._run(self._target.retention_report, namespace, **constraints)

    async def audit_entries(self, **options: Any) -> list[dict[str, Any]]:
        """``Memory.audit_entries``."""
        return await self._run(self._target.audit_entries, **options)

    async def verify_audit(self, **options: Any) -> VerifyReport:
        """``Memory.verify_audit``."""
        return await self._run(self._target.verify_audit, **options)

    async def info(self) -> dict[str, Any]:
        """``Memory.info``."""
        return await self._run(self._memory.info)
