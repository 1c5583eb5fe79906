"""The SQLite backend (:mod:`retain.store.sqlite`): the store path it accepts, and the in-memory
namespace index and the SQL answering every record filter alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retain import HashingEncoder, InvalidInput, Memory
from retain.record import MemoryRecord, MemoryType, Tier
from retain.store import RecordFilter, SQLiteStore

NS = "n"
ENC = HashingEncoder(16)
ENC384 = HashingEncoder(dim=384)


# --- the store path -----------------------------------------------------------------------------


def test_memory_refuses_a_path_whose_folder_does_not_exist(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "deeper" / "x.db"
    with pytest.raises(InvalidInput, match=r"missing.deeper.*does not exist.*create_dirs=True"):
        Memory(path, encoder=HashingEncoder(64))
    assert not (tmp_path / "missing").exists()  # nothing created on the way


def test_store_refuses_a_path_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("not a folder", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a folder"):
        SQLiteStore(tmp_path / "plain" / "x.db")
    with pytest.raises(InvalidInput, match="not a folder"):
        SQLiteStore(tmp_path / "plain" / "x.db", create_dirs=True)


def test_create_dirs_opts_in(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "x.db"
    with Memory(path, encoder=HashingEncoder(64), create_dirs=True) as mem:
        rid = mem.add("The museum opens at nine.", namespace=NS)
    with Memory(path, encoder=HashingEncoder(64)) as mem:  # the folder now exists: no option needed
        assert mem.get(rid, namespace=NS).content == "The museum opens at nine."


def test_create_dirs_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="create_dirs"):
        SQLiteStore(tmp_path / "x.db", create_dirs="yes")  # type: ignore[arg-type]


def test_in_memory_and_existing_folder_paths_open(tmp_path: Path) -> None:
    SQLiteStore(":memory:").close()
    SQLiteStore(tmp_path / "x.db").close()


def test_paths_are_strings_or_paths(tmp_path: Path) -> None:
    assert SQLiteStore(Path(tmp_path) / "y.db").location == str(tmp_path / "y.db")


@pytest.mark.parametrize("path", [b"x.db", "", "a\x00b.db"])
def test_store_paths_that_name_no_file_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: object
) -> None:
    """bytes would make a file named "b'x.db'", "" a temporary database, a NUL a ValueError."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="path"):
        Memory(path, encoder=ENC384)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_create_dirs_makes_no_folder_named_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match="expanduser"):
        Memory("~/retain-break-test/x.db", encoder=ENC384, create_dirs=True)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "~").mkdir()  # a folder really named "~" is used as given
    with Memory("~/x.db", encoder=ENC384) as m:
        m.add("The museum opens at nine.", namespace="n")
    assert (tmp_path / "~" / "x.db").is_file()


# --- record filters: the namespace index and the SQL agree ---------------------------------------


LAYOUT = [("a", 0), ("a", 1), (None, 2), ("3", 3), (None, None), ("b", 1), ("b", 7)]


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A file store holding one record per (segment, seq) of :data:`LAYOUT`, ids R000..R006."""
    store = SQLiteStore(tmp_path / "f.db")
    store.setup()
    records = [
        MemoryRecord(
            id=f"R{i:03d}",
            namespace=NS,
            content=f"museum text {i}",
            seq=seq,
            segment=segment,
            embedding=ENC.encode([f"text {i}"])[0],
            encoder=ENC.name,
        )
        for i, (segment, seq) in enumerate(LAYOUT)
    ]
    store.put(records)
    yield store
    store.close()


def _by_sql(store: SQLiteStore, flt: RecordFilter) -> set[str]:
    store._cache.clear()  # no namespace index: list_ids and count run SQL
    ids = set(store.list_ids(NS, flt, order="seq"))
    assert store.count(NS, flt) == len(ids)
    assert {h.id for h in store.search_lexical(NS, ["museum"], flt, limit=100)} == ids
    return ids


def _by_index(store: SQLiteStore, flt: RecordFilter) -> set[str]:
    store._cache.clear()
    store.search_vector(NS, ENC.encode(["q"])[0], RecordFilter(), 1)  # builds the namespace index
    assert NS in store._cache
    ids = set(store.list_ids(NS, flt, order="created"))  # answered from the index
    assert {h.id for h in store.search_vector(NS, ENC.encode(["q"])[0], flt, limit=100)} == ids
    return ids


VALID: dict[str, dict[str, Any]] = {
    "no filter": {},
    "seqs empty": {"seqs": ()},
    "segments empty": {"segments": ()},
    "seqs duplicated": {"seqs": (1, 1, 1)},
    "seqs unordered": {"seqs": (7, 0, 1)},
    "seqs list": {"seqs": [1, 2]},
    "seqs generator": {"seqs": (s for s in (1, 2))},
    "seqs numpy ints": {"seqs": (np.int64(1), np.int32(7))},
    "seqs none matching": {"seqs": (99,)},
    "segments duplicated": {"segments": ("a", "a")},
    "segments digits": {"segments": ("3",)},
    "segments list": {"segments": ["a", "b"]},
    "both": {"segments": ("b",), "seqs": (1,)},
    "many seqs": {"seqs": tuple(range(300_000))},  # over SQLite's bound-parameter limit
    "many segments": {"segments": [*(f"s{i}" for i in range(300_000)), "a"]},
    "types list": {"types": [MemoryType.FACT, MemoryType.OBSERVATION], "seqs": (1,)},
    "tiers names": {"tiers": ["core", "dynamic"], "seqs": (1,)},
}


@pytest.mark.parametrize("kwargs", VALID.values(), ids=VALID.keys())
def test_index_and_sql_agree_on_seqs_and_segments(filled: SQLiteStore, kwargs: dict[str, Any]) -> None:
    flt = RecordFilter(**({"tiers": None} | kwargs))
    assert _by_sql(filled, flt) == _by_index(filled, flt)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seqs=st.none() | st.lists(st.integers(0, 9), max_size=6),
    segments=st.none() | st.lists(st.sampled_from(["a", "b", "3", "", "zz", "ä"]), max_size=4),
    tiers=st.none() | st.lists(st.sampled_from(list(Tier)), max_size=3),
    include_superseded=st.booleans(),
)
def test_index_and_sql_agree_on_any_valid_filter(
    filled: SQLiteStore,
    seqs: list[int] | None,
    segments: list[str] | None,
    tiers: list[Tier] | None,
    include_superseded: bool,
) -> None:
    flt = RecordFilter(seqs=seqs, segments=segments, tiers=tiers, include_superseded=include_superseded)
    assert _by_sql(filled, flt) == _by_index(filled, flt)


def test_filters_mean_what_they_say(filled: SQLiteStore) -> None:
    def ids(**kw: Any) -> list[str]:
        return sorted(_by_index(filled, RecordFilter(tiers=None, **kw)))

    assert ids(seqs=()) == [] and ids(segments=()) == []
    assert ids(seqs=(1, 1)) == ["R001", "R005"]
    assert ids(segments=("3",)) == ["R003"]
    assert RecordFilter(seqs=[7, 1, 7]).seqs == (1, 7)  # a sorted tuple without duplicates
    assert RecordFilter(segments=["b", "a", "b"]).segments == ("a", "b")
    assert RecordFilter(tiers=["core"]).tiers == (Tier.CORE,)
    assert hash(RecordFilter(types=[MemoryType.FACT])) == hash(RecordFilter(types=(MemoryType.FACT,)))


def _ids_by_sql_and_by_index(store: SQLiteStore, flt: RecordFilter) -> tuple[set[str], set[str]]:
    store._cache.clear()
    by_sql = set(store.list_ids("n", flt, order="seq"))
    store._cache.clear()
    store.search_vector("n", ENC384.encode(["q"])[0], RecordFilter(), 1)  # builds the namespace index
    return by_sql, set(store.list_ids("n", flt, order="created"))


def test_index_and_sql_agree_on_positions_above_2_to_the_53() -> None:
    """Positions are int64 in the index too: as float64, 2**53 and 2**53 + 1 would be one value."""
    store = SQLiteStore()
    store.setup()
    big = 2**53
    store.put(
        [
            MemoryRecord(id=f"R{i}", namespace="n", content="museum", seq=seq, embedding=ENC384.encode(["t"])[0])
            for i, seq in enumerate((big, big + 1, 2**63 - 1, 2**63 - 2))
        ]
    )
    for seqs in [(big + 1,), (2**63 - 1,), (2**63 - 1, *range(600))]:
        by_sql, by_index = _ids_by_sql_and_by_index(store, RecordFilter(seqs=seqs, tiers=None))
        assert by_sql == by_index and len(by_sql) == 1, seqs


def test_index_and_sql_agree_on_a_segment_holding_a_nul_in_a_long_list() -> None:
    """A segment id holding a NUL ("a\\x00b") is matched whole, also in a list of over 500 segments
    (where SQLite's json_each would cut it at the NUL and match segment "a")."""
    store = SQLiteStore()
    store.setup()
    store.put(
        [
            MemoryRecord(id=f"R{i}", namespace="n", content="museum", segment=seg, embedding=ENC384.encode(["t"])[0])
            for i, seg in enumerate(("a", "a\x00b"))
        ]
    )
    flt = RecordFilter(segments=(*(f"x{i}" for i in range(600)), "a\x00b"), tiers=None)
    assert _ids_by_sql_and_by_index(store, flt) == ({"R1"}, {"R1"})
