"""Bad input at the public boundary: refused with a clear error, nothing stored lost.

Store paths whose folder does not exist, queries over the length limit, unknown state parts, and
record filters whose ``seqs`` / ``segments`` the in-memory namespace index and the SQL of the SQLite
backend used to read differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from retain import HashingEncoder, InvalidInput, Memory
from retain.cli.app import app
from retain.record import MemoryRecord, MemoryType, Tier
from retain.state.agent import AgentState
from retain.store import RecordFilter, SQLiteStore

NS = "n"
runner = CliRunner()


# --- 1. a store path whose folder does not exist ------------------------------------------------


def test_memory_refuses_a_path_whose_folder_does_not_exist(tmp_path):
    path = tmp_path / "missing" / "deeper" / "x.db"
    with pytest.raises(InvalidInput, match=r"missing.deeper.*does not exist.*create_dirs=True"):
        Memory(path, encoder=HashingEncoder(64))
    assert not (tmp_path / "missing").exists()  # nothing created on the way


def test_store_refuses_a_path_under_a_file(tmp_path):
    (tmp_path / "plain").write_text("not a folder", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not a folder"):
        SQLiteStore(tmp_path / "plain" / "x.db")
    with pytest.raises(InvalidInput, match="not a folder"):
        SQLiteStore(tmp_path / "plain" / "x.db", create_dirs=True)


def test_create_dirs_opts_in(tmp_path):
    path = tmp_path / "a" / "b" / "x.db"
    with Memory(path, encoder=HashingEncoder(64), create_dirs=True) as mem:
        rid = mem.add("The museum opens at nine.", namespace=NS)
    with Memory(path, encoder=HashingEncoder(64)) as mem:  # the folder now exists: no option needed
        assert mem.get(rid, namespace=NS).content == "The museum opens at nine."


def test_create_dirs_must_be_a_bool(tmp_path):
    with pytest.raises(InvalidInput, match="create_dirs"):
        SQLiteStore(tmp_path / "x.db", create_dirs="yes")  # type: ignore[arg-type]


def test_in_memory_and_existing_folder_paths_still_open(tmp_path):
    SQLiteStore(":memory:").close()
    SQLiteStore(tmp_path / "x.db").close()


@pytest.mark.parametrize("command", [["add", "The museum opens at nine."], ["add-canary", "Canary 7f3: heron."]])
def test_cli_refuses_a_db_whose_folder_does_not_exist(tmp_path, monkeypatch, command):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    db = tmp_path / "missing" / "x.db"
    result = runner.invoke(app, [*command, "-n", NS, "--db", str(db)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert f"{tmp_path / 'missing'}" in result.output and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_cli_import_refuses_a_db_whose_folder_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"content": "The museum opens at nine."}\n', encoding="utf-8")
    result = runner.invoke(app, ["import", str(lines), "-n", NS, "--db", str(tmp_path / "missing" / "x.db")])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not (tmp_path / "missing").exists()


def test_cli_read_command_on_a_missing_folder_names_the_folder_not_add_a_memory_first(tmp_path, monkeypatch):
    monkeypatch.setenv("RETAIN_ENCODER", "hashing-64")
    result = runner.invoke(app, ["info", "--db", str(tmp_path / "missing" / "x.db")])
    assert result.exit_code == 2
    assert "does not exist" in result.output and "add a memory first" not in result.output


def test_cli_trace_of_a_scenario_without_probes_says_so(tmp_path):
    path = tmp_path / "s.json"
    doc = {
        "format": "retain-scenario/1",
        "id": "no-probes-001",
        "events": [{"id": "e1", "t": "2026-03-01T09:00:00Z", "role": "user", "text": "Budget under 5000 EUR."}],
        "probes": [],
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["trace", str(path), "--encoder", "hashing-384"])
    assert result.exit_code == 0, result.output
    assert "has no probes" in result.output


# --- 2. query length ----------------------------------------------------------------------------


# --- 3. STATE_PARTS -----------------------------------------------------------------------------


STATE = {"phase": "book_flights", "subgoals": ["pick a flight"], "last_result": "found 3 flights"}


# --- 4. RecordFilter seqs / segments: the namespace index and SQL agree --------------------------

ENC = HashingEncoder(16)
LAYOUT = [("a", 0), ("a", 1), (None, 2), ("3", 3), (None, None), ("b", 1), ("b", 7)]


@pytest.fixture
def filled(tmp_path):
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


def _by_sql(store, flt):
    store._cache.clear()  # no namespace index: list_ids and count run SQL
    ids = set(store.list_ids(NS, flt, order="seq"))
    assert store.count(NS, flt) == len(ids)
    assert {h.id for h in store.search_lexical(NS, ["museum"], flt, limit=100)} == ids
    return ids


def _by_index(store, flt):
    store._cache.clear()
    store.search_vector(NS, ENC.encode(["q"])[0], RecordFilter(), 1)  # builds the namespace index
    assert NS in store._cache
    ids = set(store.list_ids(NS, flt, order="created"))  # answered from the index
    assert {h.id for h in store.search_vector(NS, ENC.encode(["q"])[0], flt, limit=100)} == ids
    return ids


VALID = {
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
def test_index_and_sql_agree_on_seqs_and_segments(filled, kwargs):
    flt = RecordFilter(**({"tiers": None} | kwargs))
    assert _by_sql(filled, flt) == _by_index(filled, flt)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seqs=st.none() | st.lists(st.integers(0, 9), max_size=6),
    segments=st.none() | st.lists(st.sampled_from(["a", "b", "3", "", "zz", "ä"]), max_size=4),
    tiers=st.none() | st.lists(st.sampled_from(list(Tier)), max_size=3),
    include_superseded=st.booleans(),
)
def test_index_and_sql_agree_on_any_valid_filter(filled, seqs, segments, tiers, include_superseded):
    flt = RecordFilter(seqs=seqs, segments=segments, tiers=tiers, include_superseded=include_superseded)
    assert _by_sql(filled, flt) == _by_index(filled, flt)


def test_filters_mean_what_they_say(filled):
    def ids(**kw):
        return sorted(_by_index(filled, RecordFilter(tiers=None, **kw)))

    assert ids(seqs=()) == [] and ids(segments=()) == []
    assert ids(seqs=(1, 1)) == ["R001", "R005"]
    assert ids(segments=("3",)) == ["R003"]
    assert RecordFilter(seqs=[7, 1, 7]).seqs == (1, 7)  # a sorted tuple without duplicates
    assert RecordFilter(segments=["b", "a", "b"]).segments == ("a", "b")
    assert RecordFilter(tiers=["core"]).tiers == (Tier.CORE,)
    assert hash(RecordFilter(types=[MemoryType.FACT])) == hash(RecordFilter(types=(MemoryType.FACT,)))


INVALID = {
    "seqs negative": ({"seqs": (-1,)}, "seqs"),
    "seqs float": ({"seqs": (1.5,)}, "seqs"),
    "seqs whole float": ({"seqs": (1.0,)}, "seqs"),
    "seqs string": ({"seqs": ("1",)}, "seqs"),
    "seqs None item": ({"seqs": (None,)}, "seqs"),
    "seqs bool": ({"seqs": (True,)}, "seqs"),
    "seqs nan": ({"seqs": (float("nan"),)}, "seqs"),
    "seqs too large": ({"seqs": (2**63,)}, "seqs"),
    "seqs an int": ({"seqs": 1}, "seqs"),
    "seqs nested": ({"seqs": ([1],)}, "seqs"),
    "seqs mixed": ({"seqs": (1, -2)}, "seqs"),
    "seqs a string": ({"seqs": "12"}, "seqs"),
    "segments None item": ({"segments": (None,)}, "segments"),
    "segments int": ({"segments": (3,)}, "segments"),
    "segments a string": ({"segments": "ab"}, "segments"),
    "segments nested": ({"segments": (["a"],)}, "segments"),
    "types unknown": ({"types": ("nonsense",)}, "type"),
    "tiers unknown": ({"tiers": ("attic",)}, "tier"),
    "include_superseded": ({"include_superseded": "no"}, "include_superseded"),
}


@pytest.mark.parametrize(("kwargs", "match"), INVALID.values(), ids=INVALID.keys())
def test_invalid_filter_values_are_refused(kwargs, match):
    with pytest.raises(InvalidInput, match=match):
        RecordFilter(**kwargs)


def test_paths_are_strings_or_paths(tmp_path):
    assert SQLiteStore(Path(tmp_path) / "y.db").location == str(tmp_path / "y.db")


class _Unprintable:
    """A caller's object whose ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("boom")

    __repr__ = __str__


class _Printable:
    def __str__(self) -> str:
        return "window seat"


@pytest.mark.parametrize(
    "state",
    [
        {"phase": _Unprintable()},
        {"subgoals": [_Unprintable()]},
        {"constraints": {"seat": _Unprintable()}},
        {"constraints": {_Unprintable(): "x"}},
        {"features": {"k": _Unprintable()}},
        {"features": {_Unprintable(): 1}},
        {_Unprintable(): "an unknown key"},
    ],
)
def test_a_state_value_or_key_whose_str_raises_is_refused_by_search_add_and_context(state: dict) -> None:
    m = Memory(":memory:", encoder=HashingEncoder(64))
    m.add("The hotel is near the river.", namespace=NS)
    with pytest.raises(InvalidInput, match="state"):
        m.search("hotel", namespace=NS, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.add("Dinner is booked for eight.", namespace=NS, state=state)
    with pytest.raises(InvalidInput, match="state"):
        m.context("hotel", namespace=NS, state=state, budget_tokens=100)
    with pytest.raises(InvalidInput, match="str\\(\\) raised RuntimeError"):
        AgentState.from_dict(state)
    assert len(m.records(namespace=NS)) == 1  # the refused add wrote nothing


def test_a_state_object_with_a_working_str_is_still_rendered_as_text() -> None:
    assert AgentState.from_dict({"phase": _Printable(), "features": {"seat": _Printable()}}).phase == '"window seat"'
