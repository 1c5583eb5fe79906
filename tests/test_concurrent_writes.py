"""Read-then-write paths other than add / delete / feedback / pin (graph importance propagation,
segment summaries and compression, the budget evictions of ``update``) never write a stale copy
back over another connection's delete or update.

Each test forces the losing interleaving: a second Memory on the same file deletes or updates a
record between this one's read and its write (a hook on the first store's ``put`` / ``batch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from racing import deletes_records, on_batch, writes_records
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.memory import Memory
from retain.retention.budget import Budget
from retain.safety.audit import verify_store
from retain.sequence.segments import is_summary
from retain.store import ALL_RECORDS, PutRecords, RequireCurrent

DIM = 64
NS = "shared"


def current(mem: Memory) -> dict[str, Any]:
    return {r.id: r for r in mem.store.list_records(NS, ALL_RECORDS) if r.is_current}


def audited(mem: Memory, op: str) -> list[str | None]:
    return [e["record_id"] for e in mem.store.audit_log(NS) if e["op"] == op]


# --- graph importance propagation ---------------------------------------------------------------


def test_propagate_importance_racing_a_delete_does_not_bring_the_record_back(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    used = a.add("Caroline Smith booked the tickets.", namespace=NS, importance=0.2)
    other = a.add("Caroline Smith prefers the aisle seat.", namespace=NS, importance=0.9)
    a.feedback(used, namespace=NS, used=True)
    on_batch(monkeypatch, a, lambda: b.delete(other, namespace=NS), writes_records)

    changed = a.propagate_importance(NS)

    assert a.store.get(NS, [other]) == []  # purged, and stays purged
    assert other not in changed and used in changed
    assert other not in audited(a, "importance")  # the audit names only what was written
    assert a.get(used, namespace=NS).importance == pytest.approx(changed[used])
    assert verify_store(a.store).ok


def test_propagate_importance_racing_an_update_keeps_one_current_version(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    used = a.add("Caroline Smith booked the tickets.", namespace=NS, importance=0.2)
    other = a.add("Caroline Smith prefers the aisle seat.", namespace=NS, importance=0.9)
    a.feedback(used, namespace=NS, used=True)
    newer: list[str] = []
    on_batch(
        monkeypatch,
        a,
        lambda: newer.append(b.update(other, "Caroline Smith prefers the window.", namespace=NS)),
        writes_records,
    )

    changed = a.propagate_importance(NS)

    assert a.get(other, namespace=NS).superseded_by == newer[0]  # the update is not undone
    assert other not in changed
    assert other not in current(a) and newer[0] in current(a)


# --- segment summaries and compression ----------------------------------------------------------


def add_segment(mem: Memory, segment: str = "s1") -> list[str]:
    texts = ["We fly to Lisbon on Friday.", "The hotel is near the river.", "Dinner is booked for eight."]
    return [mem.add(t, namespace=NS, segment=segment, seq=i) for i, t in enumerate(texts)]


def test_summarize_racing_a_delete_of_the_old_summary_does_not_bring_it_back(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    add_segment(a)
    old = a.summarize(NS, "s1").id
    on_batch(monkeypatch, a, lambda: b.delete(old, namespace=NS), writes_records)

    new = a.summarize(NS, "s1")

    assert a.store.get(NS, [old]) == []
    assert new.supersedes is None  # the retry found no summary to supersede
    assert audited(a, "summarize") == [old, new.id]
    assert verify_store(a.store).ok


def test_summarize_racing_another_summary_keeps_one_current_summary(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    add_segment(a)
    old = a.summarize(NS, "s1").id
    theirs: list[str] = []
    on_batch(monkeypatch, a, lambda: theirs.append(b.summarize(NS, "s1").id), writes_records)

    mine = a.summarize(NS, "s1")

    assert a.get(old, namespace=NS).superseded_by == theirs[0]  # their link is not overwritten
    assert mine.supersedes == theirs[0]
    summaries = [r for r in current(a).values() if is_summary(r)]
    assert [r.id for r in summaries] == [mine.id]


def test_compress_racing_a_delete_of_a_turn_does_not_bring_it_back(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    turns = add_segment(a)
    on_batch(monkeypatch, a, lambda: b.delete(turns[1], namespace=NS), writes_records)

    summary = a.compress_segment(NS, "s1")

    assert a.store.get(NS, [turns[1]]) == []
    assert turns[1] not in summary.metadata["compressed_ids"]
    assert "hotel" not in summary.content  # the purged turn's text is not kept in the summary
    assert turns[1] not in audited(a, "archive")
    assert sorted(audited(a, "archive")) == sorted([turns[0], turns[2]])
    assert verify_store(a.store).ok


# --- budget evictions of update -----------------------------------------------------------------


def test_record_evicted_by_update_but_deleted_meanwhile_stays_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "shared.db"
    budget = Budget(11, unit="tokens", policy="fifo")
    with Memory(path, encoder=HashingEncoder(DIM), budget=budget) as a, Memory(path, encoder=HashingEncoder(DIM)) as b:
        oldest = a.add("Alice likes green tea.", namespace=NS)
        target = a.add("Bob rides a blue bicycle.", namespace=NS)
        on_batch(monkeypatch, a, lambda: b.delete(oldest, namespace=NS), writes_records)

        new = a.update(target, "Bob rides a red bicycle, and it is heavier than the blue one was.", namespace=NS)

        assert a.store.get(NS, [oldest]) == []  # not written back as archived
        assert set(current(a)) == {new}
        assert oldest not in audited(a, "evict")
        assert verify_store(a.store).ok


# --- forget -------------------------------------------------------------------------------------


def test_forget_purges_a_version_another_writer_added_meanwhile(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    old = a.add("The vault code is 4411.", namespace=NS)
    newer: list[str] = []
    on_batch(
        monkeypatch, a, lambda: newer.append(b.update(old, "The vault code is 9922.", namespace=NS)), deletes_records
    )

    report = a.forget(old, namespace=NS)

    assert sorted(report.deleted) == sorted([old, newer[0]])
    assert a.store.list_records(NS, ALL_RECORDS) == []
    assert sorted(audited(a, "forget")) == sorted([old, newer[0]])


def test_untrusted_forget_racing_a_pin_does_not_purge_the_pinned_record(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    rid = a.add("The vault code is 4411.", namespace=NS)
    on_batch(monkeypatch, a, lambda: b.pin(rid, namespace=NS), deletes_records)

    report = a.forget(rid, namespace=NS, actor="tool")

    assert report.deleted == () and report.refused == (rid,)
    assert a.get(rid, namespace=NS).pinned
    assert [e["details"]["outcome"] for e in a.store.audit_log(NS) if e["op"] == "forget"] == ["refused"]


# --- the retry every read-then-write path shares -------------------------------------------------


def test_retry_on_conflict_runs_again_on_write_conflict_only_and_at_most_write_attempts_times() -> None:
    from retain.errors import InvalidInput, WriteConflict
    from retain.store import WRITE_ATTEMPTS, retry_on_conflict

    calls: list[int] = []

    def conflicts_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise WriteConflict("changed meanwhile")
        return "written"

    assert retry_on_conflict(conflicts_twice) == "written" and len(calls) == 3

    calls.clear()

    def always() -> str:
        calls.append(1)
        raise WriteConflict(f"attempt {len(calls)}")

    with pytest.raises(WriteConflict, match=f"attempt {WRITE_ATTEMPTS}$"):
        retry_on_conflict(always)
    assert len(calls) == WRITE_ATTEMPTS

    calls.clear()

    def bad_input() -> str:
        calls.append(1)
        raise InvalidInput("not a conflict")

    with pytest.raises(InvalidInput, match="not a conflict"):
        retry_on_conflict(bad_input)
    assert len(calls) == 1  # only a conflict is retried


def test_update_loses_cleanly_to_a_concurrent_update(mem64: Memory) -> None:
    rid = mem64.add("my card PIN is 1234", namespace=NS)
    old = mem64.get(rid, namespace=NS)
    mem64.update(rid, "my card PIN is 9999", namespace=NS)
    fork = old.evolve(id="01FORK00000000000000000000", content="PIN 5555", supersedes=rid)
    with pytest.raises(InvalidInput, match="superseded"):
        mem64.store.batch([RequireCurrent(NS, rid), PutRecords((fork,))])
    assert len(mem64.records(namespace=NS, include_superseded=True)) == 2  # nothing of the loser written
