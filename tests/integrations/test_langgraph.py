"""``RetainStore`` against LangGraph's own ``InMemoryStore``: one script of operations run on both,
what each returns compared (semantic ranking aside), and a small LangGraph graph whose node reads and
writes the store."""

from __future__ import annotations

import asyncio
import json
import operator
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, Item, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore
from typing_extensions import TypedDict

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.integrations.langgraph import RetainStore, from_namespace, to_namespace
from retain.memory import Memory


@pytest.fixture
def memory() -> Iterator[Memory]:
    mem = Memory(encoder=HashingEncoder(64), config=MemoryConfig(supersede=False), state_scorer=False)
    yield mem
    mem.close()


@pytest.fixture
def store(memory: Memory) -> RetainStore:
    return RetainStore(memory)


ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("users", "alice"), "prefs", {"food": "pizza", "n": 3, "tags": ["a", "b"]}),
    (("users", "bob"), "prefs", {"food": "sushi", "n": 5}),
    (("users", "alice"), "profile", {"name": "Alice", "n": 0, "home": {"city": "Paris", "zip": 75001}}),
    (("users", "alice", "trips"), "t1", {"to": "Lisbon", "n": 2.5, "done": True}),
    (("docs",), "d1", {"text": "retain keeps memories", "n": 1, "done": False}),
    (("docs",), "d2", {"text": "the same text", "n": 7}),
    (("docs",), "d3", {"text": "the same text", "n": 7}),
]

FILTERS: list[dict[str, Any]] = [
    {"food": "pizza"},
    {"n": {"$eq": 7}},
    {"n": {"$ne": 7}},
    {"n": {"$gt": 2.5}},
    {"n": {"$gte": 2.5}},
    {"n": {"$lt": 3}},
    {"n": {"$lte": 3, "$gt": 1}},
    {"done": True},
    {"home": {"city": "Paris"}},
    {"text": "the same text", "n": 7},
    {"missing": "x"},
]


def view(item: Item | None) -> Any:
    return None if item is None else (item.namespace, item.key, item.value)


def canon(items: list[Any]) -> list[str]:
    """Items as sorted JSON texts: the same items in any order compare equal."""
    return sorted(json.dumps(view(i), sort_keys=True) for i in items)


def script(store: BaseStore) -> list[Any]:
    """The operations, and what the store returned for each (as comparable values)."""
    out: list[Any] = []
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)
    out.append([view(store.get(ns, key)) for ns, key, _ in ITEMS])
    out.append(view(store.get(("users", "alice"), "nope")))
    # every item has an "n": InMemoryStore raises on a range over a missing key
    store.put(("users", "alice"), "prefs", {"food": "pasta", "n": 4})  # overwrite
    out.append(view(store.get(("users", "alice"), "prefs")))
    for prefix in [(), ("users",), ("users", "alice"), ("docs",), ("nowhere",)]:
        for flt in FILTERS:
            found = store.search(prefix, filter=flt, limit=50)
            out.append((prefix, flt, canon(found)))
    one = store.search(("docs",), limit=2, offset=1)  # listing order within a namespace: insertion
    out.append([view(i) for i in one])
    queried = store.search(("users",), query="what food does alice like", limit=50)
    out.append(canon(queried))  # ranking aside: the same items
    out.append(store.list_namespaces())
    out.append(store.list_namespaces(prefix=("users",)))
    out.append(store.list_namespaces(suffix=("alice",)))
    out.append(store.list_namespaces(prefix=("users", "*")))
    out.append(store.list_namespaces(max_depth=1))
    out.append(store.list_namespaces(limit=2, offset=1))
    store.delete(("docs",), "d2")
    out.append(view(store.get(("docs",), "d2")))
    out.append(canon(store.search(("docs",), limit=50)))
    results = store.batch(
        [
            GetOp(("docs",), "d1"),
            PutOp(("docs",), "d9", {"n": 9, "text": "nine"}),
            SearchOp(("docs",), {"n": 9}),
            ListNamespacesOp(),
        ]
    )
    out.append([view(results[0]), results[1], results[2], results[3]])
    out.append(view(store.get(("docs",), "d9")))
    out.append([view(i) for i in asyncio.run(store.asearch(("docs",), filter={"n": {"$gte": 7}}))])
    return out


def test_parity_with_langgraph_in_memory_store(store: RetainStore) -> None:
    expected = script(InMemoryStore())
    got = script(store)
    for step, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
        assert mine == theirs, f"step {step}"


def test_items_keep_times_and_history(store: RetainStore, memory: Memory) -> None:
    store.put(("u",), "k", {"v": 1})
    first = store.get(("u",), "k")
    store.put(("u",), "k", {"v": 2})
    second = store.get(("u",), "k")
    assert first is not None and second is not None
    assert second.value == {"v": 2} and second.created_at == first.created_at and second.updated_at >= first.updated_at
    records = memory.records(namespace="lg/u", include_superseded=True)
    assert [r.metadata["lg_value"] for r in records] == [{"v": 1}, {"v": 2}]  # the old version kept as history


def test_index_fields_drive_search(memory: Memory) -> None:
    store = RetainStore(memory, index={"fields": ["text"]})
    store.put(("docs",), "a", {"text": "the hotel in Lisbon is booked", "other": "zzz"})
    store.put(("docs",), "b", {"text": "flights leave at nine", "other": "hotel hotel hotel"})
    hits = store.search(("docs",), query="hotel Lisbon", limit=1)
    assert [h.key for h in hits] == ["a"] and hits[0].score is not None


@pytest.mark.parametrize(
    "labels", [("users", "a/b"), ("x%y", "z"), ("tab\there",), ("ünï", "日本")], ids=["slash", "percent", "ctl", "uni"]
)
def test_namespace_mapping_round_trips(labels: tuple[str, ...]) -> None:
    name = to_namespace(labels)
    assert name.startswith("lg/") and from_namespace(name) == labels
    assert "\t" not in name


def test_bad_input_raises_retain_errors(store: RetainStore, memory: Memory) -> None:
    with pytest.raises(InvalidInput):
        store.search(("docs",), filter={"n": {"$regex": "x"}})
    with pytest.raises(InvalidInput):
        to_namespace(())
    with pytest.raises(InvalidInput, match="supersede"):
        RetainStore(Memory(encoder=HashingEncoder(64)))
    with pytest.raises(InvalidInput, match="ttl"):
        store.put(("docs",), "k", {"v": 1}, ttl=-5)
    with pytest.raises(InvalidInput, match="ttl"):
        store.put(("docs",), "k", {"v": 1}, ttl="soon")  # type: ignore[arg-type]
    assert store.get(("docs",), "k") is None  # nothing stored


def expiry(memory: Memory, namespace: str) -> list[str]:
    return [r.metadata.get("expires_at") for r in memory.records(namespace=namespace) if r.tier.value != "archive"]


def test_ttl_hides_an_expired_item_and_archives_it_audited(store: RetainStore, memory: Memory) -> None:
    # LangGraph's InMemoryStore has no TTL (supports_ttl False), so TTL is tested here, not in the parity script
    assert store.supports_ttl and not InMemoryStore().supports_ttl
    store.put(("t",), "short", {"n": 1}, ttl=0.002)  # minutes: 0.12 s
    store.put(("t",), "long", {"n": 2}, ttl=60)
    store.put(("t",), "forever", {"n": 3})
    time.sleep(0.5)
    assert store.get(("t",), "short") is None
    assert {i.key for i in store.search(("t",), limit=10)} == {"long", "forever"}
    assert {i.key for i in store.search(("t",), query="n", limit=10)} == {"long", "forever"}
    archived = memory.expire("lg/t")
    assert len(archived) == 1
    gone = memory.get(archived[0], namespace="lg/t")
    assert gone.tier.value == "archive" and gone.metadata["lg_key"] == "short"  # archived, not purged
    entries = [e for e in memory.store.audit_log("lg/t") if e["op"] == "archive"]
    assert [(e["record_id"], e["reason"]) for e in entries] == [(archived[0], "expired")]
    store.put(("t",), "long", {"n": 2})  # a put without a TTL clears it
    assert [m for m in expiry(memory, "lg/t") if m is not None] == []


def test_reads_refresh_the_ttl_unless_told_not_to(memory: Memory) -> None:
    store = RetainStore(memory, ttl={"default_ttl": 30, "refresh_on_read": True})
    store.put(("r",), "k", {"n": 1})  # the default TTL: 30 minutes
    (first,) = expiry(memory, "lg/r")
    assert first is not None
    time.sleep(0.01)
    store.get(("r",), "k", refresh_ttl=False)
    assert expiry(memory, "lg/r") == [first]
    store.get(("r",), "k")
    (second,) = expiry(memory, "lg/r")
    assert second > first
    time.sleep(0.01)
    store.search(("r",), limit=5)
    (third,) = expiry(memory, "lg/r")
    assert third > second
    assert len(memory.records(namespace="lg/r", include_superseded=True)) == 1  # refreshed in place
    refreshed = [e for e in memory.store.audit_log("lg/r") if e["op"] == "refresh_ttl"]
    assert len(refreshed) == 2 and refreshed[-1]["details"]["expires_at"] == third


class State(TypedDict):
    user: str
    said: str
    remembered: Annotated[list[str], operator.add]


def remember_and_recall(state: State, *, store: BaseStore) -> dict[str, Any]:
    namespace = ("memories", state["user"])
    n = len(store.search(namespace, limit=100))
    store.put(namespace, f"m{n}", {"said": state["said"]})
    return {"remembered": [item.value["said"] for item in store.search(namespace, limit=100)]}


def test_a_langgraph_graph_reads_and_writes_the_store(store: RetainStore, memory: Memory) -> None:
    graph = StateGraph(State).add_node(remember_and_recall).add_edge(START, "remember_and_recall")
    app = graph.add_edge("remember_and_recall", END).compile(store=store)
    app.invoke({"user": "alice", "said": "I like tea", "remembered": []})
    result = app.invoke({"user": "alice", "said": "I live in Porto", "remembered": []})
    assert result["remembered"] == ["I like tea", "I live in Porto"]
    other = app.invoke({"user": "bob", "said": "hello", "remembered": []})
    assert other["remembered"] == ["hello"]
    assert {r.metadata["lg_key"] for r in memory.records(namespace="lg/memories.alice")} == {"m0", "m1"}
