"""Canaries: planted, hidden from search and context, and every way of losing one is reported."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from retain import HashingEncoder, InvalidInput, Memory, TextTooLong, Tier
from retain.retention.budget import Budget
from retain.safety.canary import CANARY_KEY, check, digest
from retain.store.sqlite import SQLiteStore

NS = "agent-7"
CANARY = "Canary 3f9a: the heron flies north at 04:12."


def planted(db: Path | str = ":memory:", **kwargs: object) -> tuple[Memory, str]:
    mem = Memory(db, encoder=HashingEncoder(64), **kwargs)  # type: ignore[arg-type]
    mem.add_many([{"content": f"Note {i}: the heron was seen near the lake."} for i in range(5)], namespace=NS)
    return mem, mem.add_canary(CANARY, namespace=NS)


def statuses(mem: Memory) -> dict[str, str]:
    return {c.record_id: c.status for c in mem.check_canaries().canaries}


def test_a_planted_canary_is_pinned_marked_registered_and_held() -> None:
    mem, cid = planted()
    rec = mem.get(cid, namespace=NS)
    assert rec.pinned and rec.tier is Tier.CORE and rec.metadata[CANARY_KEY] == {"sha256": digest(CANARY)}
    (entry,) = [e for e in mem.store.audit_log(NS) if e["op"] == "canary"]
    assert entry["record_id"] == cid and entry["details"] == {"sha256": digest(CANARY)}
    assert "heron" not in str(entry)
    report = mem.check_canaries(NS)
    assert report.ok and statuses(mem) == {cid: "held"}
    assert report.counts() == {"held": 1, "missing": 0, "changed": 0, "archived": 0}


def test_canaries_never_surface_in_search_or_context() -> None:
    mem, cid = planted()
    hits = mem.search("heron flies north 04:12", namespace=NS, k=10)
    assert len(hits) == 5 and cid not in {h.record.id for h in hits}
    ctx = mem.context("heron flies north", namespace=NS, budget_tokens=500)
    assert cid not in {i.record_id for i in ctx.items} | {x.record_id for x in ctx.left_out}
    assert "04:12" not in ctx.text


def test_deleted_canary_is_missing() -> None:
    mem, cid = planted()
    mem.delete(cid, namespace=NS)
    report = mem.check_canaries()
    assert not report.ok and statuses(mem) == {cid: "missing"}


def test_updated_canary_is_changed_in_both_versions() -> None:
    mem, cid = planted()
    new = mem.update(cid, "Canary 3f9a: the heron flies south.", namespace=NS)
    found = {c.record_id: (c.status, c.detail) for c in mem.check_canaries().canaries}
    assert found[cid] == ("changed", f"superseded by {new}")
    assert found[new][0] == "changed"  # the copied mark does not match the new content


def test_content_changed_behind_retains_back_and_archive_are_reported(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    mem, cid = planted(db)
    other = mem.add_canary("Canary 77b1: the kettle is blue.", namespace=NS)
    mem.close()
    raw = sqlite3.connect(db)
    raw.execute("UPDATE records SET content = 'Canary 3f9a: the heron flies west.' WHERE id = ?", (cid,))
    raw.execute("UPDATE records SET tier = 'archive' WHERE id = ?", (other,))
    raw.commit()
    raw.close()
    store = SQLiteStore(db)  # check needs no encoder
    store.setup()
    report = check(store)
    store.close()
    assert {c.record_id: c.status for c in report.canaries} == {cid: "changed", other: "archived"}
    assert report.counts() == {"held": 0, "missing": 0, "changed": 1, "archived": 1}


def test_marked_record_without_registration_is_still_checked() -> None:
    with Memory(encoder=HashingEncoder(64)) as mem:  # as if the process died between add and registration
        rid = mem.add("Canary 9c0d: orange lanterns.", namespace=NS, metadata={CANARY_KEY: {"sha256": "0" * 64}})
        assert statuses(mem) == {rid: "changed"}


def test_canary_survives_a_budget() -> None:
    mem, cid = planted(budget=Budget(3, policy="fifo"))
    mem.add_many([{"content": f"Later note {i} about lunch."} for i in range(6)], namespace=NS)
    assert statuses(mem) == {cid: "held"}


@pytest.mark.parametrize(
    ("content", "error", "match"),
    [
        ("   ", InvalidInput, "content"),
        ("Note 1: the heron was seen near the lake.", InvalidInput, "already held"),
        ("x" * 2_001, TextTooLong, "canary"),
    ],
)
def test_bad_canaries_are_refused_and_nothing_is_written(content: str, error: type[Exception], match: str) -> None:
    mem, _ = planted()
    before = len(mem.store.audit_log())
    with pytest.raises(error, match=match):
        mem.add_canary(content, namespace=NS)
    assert len(mem.store.audit_log()) == before


def test_canary_is_never_merged_as_a_paraphrase() -> None:
    from retain import MemoryConfig

    with Memory(encoder=HashingEncoder(64), config=MemoryConfig(merge_paraphrases=True)) as mem:
        cid = mem.add_canary(CANARY, namespace=NS)
        near = mem.add("Canary 3f9a: the heron flies north at 04:12!", namespace=NS, role="system")
        assert near != cid and statuses(mem) == {cid: "held"}
        assert "merged" not in mem.get(cid, namespace=NS).metadata
        plain = mem.add("Canary 5e2b: the kettle is blue.", namespace=NS, role="system")
        second = mem.add_canary("Canary 5e2b: the kettle is blue!", namespace=NS)  # not merged into plain
        assert second != plain and statuses(mem) == {cid: "held", second: "held"}


def test_namespace_filter() -> None:
    mem, cid = planted()
    other = mem.add_canary(CANARY, namespace="elsewhere")
    assert [c.record_id for c in mem.check_canaries(NS).canaries] == [cid]
    assert {c.record_id for c in mem.check_canaries().canaries} == {cid, other}
