"""The records page's text search (``Store.page_ids`` with ``terms``, driven by the full-text index)
against a brute-force answer: the same ids newest first, the same total, keyset pages that tile the
matches, filters and the pinned choice applied, other namespaces never mixed in."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.memory import Memory
from retain.record import MemoryRecord
from retain.store import ALL_RECORDS, RecordFilter

WORDS = ["hotel", "budget", "flight", "museum", "kayak", "lake", "train", "ticket"]


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Memory:
    rng = random.Random(3)
    memory = Memory(tmp_path_factory.mktemp("browse") / "b.db", encoder=HashingEncoder(64), state_scorer=False)
    for ns in ("a", "b"):
        items = [
            {
                "content": f"note {i} in {ns}: " + " ".join(rng.choice(WORDS) for _ in range(3)),
                "type": rng.choice(["fact", "plan_step"]),
                "pinned": rng.random() < 0.2,
                "segment": f"s{i % 3}",
                **({"event_time": datetime(2024, 1, 1 + i % 28, tzinfo=UTC).isoformat()} if i % 2 else {}),
            }
            for i in range(150)
        ]
        memory.add_many(items, namespace=ns)
    current = memory.records(namespace="a")
    memory.update(current[0].id, "note replaced: kayak on the lake", namespace="a")
    return memory


def expected(mem: Memory, terms: tuple[str, ...], flt: RecordFilter, pinned: bool | None) -> list[str]:
    records: list[MemoryRecord] = mem.store.list_records("a", flt)
    keep = [
        r
        for r in records
        if all(t in r.content.lower().split() or t + ":" in r.content.lower() for t in terms)
        and (pinned is None or r.pinned is pinned)
    ]
    order = {rid: i for i, rid in enumerate(mem.store.page_ids("a", flt, limit=10_000).ids)}
    return sorted((r.id for r in keep), key=lambda rid: order[rid])


@pytest.mark.parametrize(
    ("terms", "flt", "pinned"),
    [
        (("kayak",), ALL_RECORDS, None),
        (("kayak", "lake"), RecordFilter(tiers=None), None),
        (("hotel",), RecordFilter(tiers=None, types=("fact",)), True),
        (("museum",), RecordFilter(tiers=None, include_superseded=True), False),
        (("nowhere",), RecordFilter(tiers=None), None),
        (("kayak",), RecordFilter(tiers=None, start=datetime(2020, 1, 1, tzinfo=UTC)), None),
        (("lake",), RecordFilter(tiers=("dynamic",), include_superseded=True), None),
        (("lake",), RecordFilter(segments=("s1",)), None),
    ],
)
def test_text_pages_match_a_brute_force_answer(mem: Memory, terms, flt, pinned) -> None:
    want = expected(mem, terms, flt, pinned)
    got: list[str] = []
    after = None
    while True:
        page = mem.store.page_ids("a", flt, pinned=pinned, terms=terms, after=after, limit=7)
        assert page.total == len(want)
        got += page.ids
        if len(page.ids) < 7:
            break
        after = page.ids[-1]
    assert got == want
    assert not set(got) & {r.id for r in mem.store.list_records("b", RecordFilter(tiers=None))}


def test_a_cursor_from_another_namespace_is_refused(mem: Memory, tmp_path: Path) -> None:
    other = mem.store.page_ids("b", ALL_RECORDS, limit=1).ids[0]
    with pytest.raises(InvalidInput, match="after"):
        mem.store.page_ids("a", ALL_RECORDS, terms=("kayak",), after=other)
