"""Forcing a race's losing interleaving in a test: another writer acts at one chosen point of a
``Memory``'s store traffic (between its read and its guarded write, say)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from retain.memory import Memory
from retain.store import DeleteRecords, FindByHash, Op, PutRecords


def on_batch(
    monkeypatch: pytest.MonkeyPatch,
    mem: Memory,
    then: Callable[[], object],
    when: Callable[[Sequence[Op]], bool],
    *,
    after: bool = False,
) -> None:
    """Run ``then()`` once, at ``mem``'s first store batch whose ops ``when`` accepts: before that
    batch runs, or right after it returned with ``after=True``."""
    batch = mem.store.batch
    fired: list[bool] = []

    def hooked(ops: Sequence[Op]) -> list[Any]:
        hit = not fired and when(ops)
        if hit and not after:
            fired.append(True)
            then()
        result = batch(ops)
        if hit and after:
            fired.append(True)
            then()
        return result

    monkeypatch.setattr(mem.store, "batch", hooked)


def writes_records(ops: Sequence[Op]) -> bool:
    """A batch that writes records."""
    return any(isinstance(op, PutRecords) and op.records for op in ops)


def deletes_records(ops: Sequence[Op]) -> bool:
    """A batch that purges records."""
    return any(isinstance(op, DeleteRecords) for op in ops)


def looks_up_duplicates(ops: Sequence[Op]) -> bool:
    """A batch holding a duplicate look-up."""
    return any(isinstance(op, FindByHash) for op in ops)
