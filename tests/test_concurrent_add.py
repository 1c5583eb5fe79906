"""Two writers adding the same text to one SQLite file store it once (``MemoryConfig.dedupe``).

The deterministic tests force the losing interleaving: the other writer commits the same text
after this one's duplicate lookup and before its write. The two-process test races for real.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from pathlib import Path
from typing import Any

import pytest

from racing import looks_up_duplicates, on_batch
from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.record import Tier, content_hash
from retain.retention.budget import Budget
from retain.safety.audit import verify_store
from retain.store import ALL_RECORDS

DIM = 64
NS = "shared"


def copies(mem: Memory, text: str) -> list[str]:
    """Ids of the current records of ``NS`` holding ``text`` (any tier)."""
    digest = content_hash(text)
    return [r.id for r in mem.store.list_records(NS, ALL_RECORDS) if r.content_hash == digest and r.is_current]


def audited(mem: Memory, op: str) -> list[str | None]:
    return [e["record_id"] for e in mem.store.audit_log(NS) if e["op"] == op]


def test_same_text_added_between_lookup_and_write_is_stored_once(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    text = "The staging database password rotates every Monday."
    other: list[str] = []
    on_batch(monkeypatch, a, lambda: other.append(b.add(text, namespace=NS)), looks_up_duplicates, after=True)

    mine = a.add(text, namespace=NS)

    assert copies(a, text) == other
    assert mine == other[0]
    assert audited(a, "add") == other  # the loser's add wrote nothing, so it logged nothing
    assert verify_store(a.store).ok


def test_add_many_keeps_its_other_items_when_one_races(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    raced, fresh = "Carol plays the cello.", "Dave collects stamps."
    other: list[str] = []
    on_batch(monkeypatch, a, lambda: other.append(b.add(raced, namespace=NS)), looks_up_duplicates, after=True)

    ids = a.add_many([NewMemory(raced), NewMemory(fresh), NewMemory(raced)], namespace=NS)

    assert copies(a, raced) == other
    assert copies(a, fresh) == [ids[1]]
    assert ids == [other[0], ids[1], other[0]]
    assert sorted(audited(a, "add")) == sorted([other[0], ids[1]])
    assert verify_store(a.store).ok


def _racer(path: str, texts: list[str], barrier: Any, results: Any) -> None:
    errors: list[str] = []
    ids: list[str] = []
    try:
        with Memory(path, encoder=HashingEncoder(DIM)) as mem:
            for text in texts:
                barrier.wait(60)  # both writers add the same text at the same moment
                ids.append(mem.add(text, namespace=NS))
    except BaseException:
        errors.append(traceback.format_exc())
        barrier.abort()
    finally:
        results.put((errors, ids))


def test_two_processes_adding_the_same_texts_store_each_once(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    Memory(path, encoder=HashingEncoder(DIM)).close()  # schema and encoder recorded up front
    texts = [f"Courier delivered parcel number {i} to dock {i % 7}" for i in range(60)]

    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(path, texts, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        reports = [results.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    assert [errors for errors, _ in reports] == [[], []]
    first, second = (ids for _, ids in reports)
    assert first == second  # both writers were given the one stored id of each text

    with Memory(path, encoder=HashingEncoder(DIM)) as mem:
        assert mem.store.count(NS, ALL_RECORDS) == len(texts)
        assert sorted(audited(mem, "add")) == sorted(first)
        assert verify_store(mem.store).ok


# --- the records an add read and writes back (or returns) must still be as it read them ----------


def archive(mem: Memory, rid: str) -> None:
    (record,) = mem.store.get(NS, [rid])
    mem.store.put([record.evolve(tier=Tier.ARCHIVE)])


def test_archived_copy_deleted_after_lookup_is_not_resurrected(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    text = "The staging database password rotates every Monday."
    old = a.add(text, namespace=NS)
    archive(a, old)
    on_batch(monkeypatch, a, lambda: b.delete(old, namespace=NS), looks_up_duplicates, after=True)

    mine = a.add(text, namespace=NS)

    assert a.store.get(NS, [old]) == []  # purged stays purged: the stale archived copy is not written back
    assert copies(a, text) == [mine]  # the text is stored again, as a new record
    assert audited(a, "restore") == []
    assert verify_store(a.store).ok


def test_archived_copy_updated_after_lookup_keeps_one_current_version(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    text = "The staging database password rotates every Monday."
    old = a.add(text, namespace=NS)
    archive(a, old)
    newer: list[str] = []
    on_batch(
        monkeypatch,
        a,
        lambda: newer.append(b.update(old, "The staging password rotates on Fridays.", namespace=NS)),
        looks_up_duplicates,
        after=True,
    )

    a.add(text, namespace=NS)

    (stored,) = a.store.get(NS, [old])
    assert stored.superseded_by == newer[0]  # the update's link is not undone by a stale restore
    assert audited(a, "restore") == []


def test_duplicate_deleted_after_lookup_is_stored_again(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    text, other = "Carol plays the cello.", "Dave collects stamps."
    old = a.add(text, namespace=NS)
    on_batch(monkeypatch, a, lambda: b.delete(old, namespace=NS), looks_up_duplicates, after=True)

    ids = a.add_many([NewMemory(text), NewMemory(other)], namespace=NS)

    assert ids[0] != old
    assert copies(a, text) == [ids[0]]  # every id returned names a stored record holding its text
    assert copies(a, other) == [ids[1]]
    assert verify_store(a.store).ok


def before_write(monkeypatch: pytest.MonkeyPatch, mem: Memory, then: Any) -> None:
    """Run ``then()`` once, right before ``mem``'s first write (after every look-up of that add)."""
    put = mem.store.put
    fired: list[bool] = []

    def hooked(*args: Any, **kwargs: Any) -> None:
        if not fired:
            fired.append(True)
            then()
        put(*args, **kwargs)

    monkeypatch.setattr(mem.store, "put", hooked)


def test_record_superseded_on_add_but_deleted_meanwhile_stays_deleted(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    old = a.add("My preferred name is Sam.", namespace=NS)
    before_write(monkeypatch, a, lambda: b.delete(old, namespace=NS))

    new = a.add("Correction: my preferred name is Alex.", namespace=NS)

    assert a.store.get(NS, [old]) == []  # not written back as the superseded version
    (stored,) = a.store.get(NS, [new])
    assert stored.supersedes is None and stored.is_current
    assert audited(a, "supersede") == []
    assert verify_store(a.store).ok


def test_record_superseded_on_add_but_updated_meanwhile_keeps_one_chain(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair
    old = a.add("My preferred name is Sam.", namespace=NS)
    newer: list[str] = []
    before_write(monkeypatch, a, lambda: newer.append(b.update(old, "My preferred name is Sammy.", namespace=NS)))

    a.add("Correction: my preferred name is Alex.", namespace=NS)

    (stored,) = a.store.get(NS, [old])
    assert stored.superseded_by == newer[0]  # the update's link stands
    current = [r for r in a.store.list_records(NS, ALL_RECORDS) if r.is_current]
    assert all(r.supersedes != old for r in current if r.id != newer[0])  # no second successor of old


def test_paraphrase_merged_into_a_record_deleted_meanwhile_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "shared.db"
    config = MemoryConfig(merge_paraphrases=True)
    with Memory(path, encoder=HashingEncoder(DIM), config=config) as a, Memory(path, encoder=HashingEncoder(DIM)) as b:
        old = a.add("The team standup is at 9:30 every weekday morning.", namespace=NS)
        before_write(monkeypatch, a, lambda: b.delete(old, namespace=NS))

        new = a.add("The team standup is at 9:30 every weekday morning!", namespace=NS)

        assert a.store.get(NS, [old]) == []  # not brought back to hold the merge
        assert new != old and [r.id for r in a.store.list_records(NS, ALL_RECORDS)] == [new]


def test_record_evicted_by_add_but_deleted_meanwhile_stays_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "shared.db"
    budget = Budget(2, unit="records", policy="fifo")
    with Memory(path, encoder=HashingEncoder(DIM), budget=budget) as a, Memory(path, encoder=HashingEncoder(DIM)) as b:
        oldest = a.add("Alice likes green tea.", namespace=NS)
        a.add("Bob rides a blue bicycle.", namespace=NS)
        before_write(monkeypatch, a, lambda: b.delete(oldest, namespace=NS))

        a.add("Carol paints with oils.", namespace=NS)

        assert a.store.get(NS, [oldest]) == []  # not written back as archived
        assert verify_store(a.store).ok
