"""Bad input at :class:`~retain.memory.Memory`'s entry points: refused with
:class:`~retain.errors.InvalidInput`, nothing stored or logged on the way.

Lone surrogates in add and search, search arguments of the wrong kind, queries over
:data:`~retain.text.lexical.MAX_QUERY_CHARS` in search, context and forget, and a missing store for
:meth:`Memory.reembed`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from retain import HashingEncoder, InvalidInput, Memory
from retain.text.lexical import MAX_QUERY_CHARS

NS = "n"


@pytest.mark.parametrize("field", ["content", "role", "namespace", "query"])
def test_lone_surrogates_are_refused_at_the_boundary(mem64: Memory, field: str) -> None:
    bad = "budget \ud800"
    with pytest.raises(InvalidInput):
        if field == "query":
            mem64.search(bad, namespace=NS)
        elif field == "namespace":
            mem64.add("fine text", namespace=bad)
        else:
            mem64.add(
                bad if field == "content" else "fine text",
                namespace=NS,
                **({"role": bad} if field == "role" else {}),  # type: ignore[arg-type]
            )
    assert mem64.records(namespace=NS) == []


@pytest.mark.parametrize(
    "kwargs", [{"types": ["banana"]}, {"tiers": ["attic"]}, {"threshold": float("nan")}, {"config": 5}, {"k": True}]
)
def test_bad_search_arguments_are_invalid_input(mem64: Memory, kwargs: dict[str, object]) -> None:
    mem64.add("something to find", namespace=NS)
    with pytest.raises(InvalidInput):
        mem64.search("something", namespace=NS, **kwargs)  # type: ignore[arg-type]


def test_a_single_type_string_is_accepted(mem64: Memory) -> None:
    rid = mem64.add("a fact to find", namespace=NS, type="fact")
    assert [h.record.id for h in mem64.search("fact", namespace=NS, types="fact")] == [rid]


def test_reembed_refuses_a_missing_store(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no store"):
        Memory.reembed(tmp_path / "typo.db", HashingEncoder(64))
    assert not (tmp_path / "typo.db").exists()  # no empty store made on the way


@pytest.fixture
def museum() -> Iterator[Memory]:
    """A Memory (``HashingEncoder(64)``) holding one record: "The museum opens at nine."."""
    mem = Memory(encoder=HashingEncoder(64))
    mem.add("The museum opens at nine.", namespace=NS)
    yield mem
    mem.close()


def test_search_refuses_a_query_over_the_limit(museum: Memory) -> None:
    query = "museum " * (MAX_QUERY_CHARS // 7 + 1)
    with pytest.raises(InvalidInput, match=rf"query: {len(query):,} characters.*limit is {MAX_QUERY_CHARS:,}"):
        museum.search(query, namespace=NS)
    assert museum.search(query[:MAX_QUERY_CHARS], namespace=NS)  # at the limit: searched


def test_context_refuses_a_query_over_the_limit_and_stores_no_provenance(museum: Memory) -> None:
    query = " " * (MAX_QUERY_CHARS + 1)  # whitespace only: pack would skip the search, not the check
    before = len(museum.store.audit_log())
    with pytest.raises(InvalidInput, match=f"limit is {MAX_QUERY_CHARS:,}"):
        museum.context(query, namespace=NS, budget_tokens=100)
    assert len(museum.store.audit_log()) == before  # no "retrieve" entry, no provenance stored
    assert museum.context("museum", namespace=NS, budget_tokens=100).text


def test_forget_by_query_refuses_a_query_over_the_limit(museum: Memory) -> None:
    with pytest.raises(InvalidInput, match="limit is"):
        museum.forget("museum " * MAX_QUERY_CHARS, namespace=NS)
    assert len(museum.records(namespace=NS)) == 1
