"""The identifier boundary (issue 21, points 1 and 8): every actor and namespace a caller gives is
normalised once, before hashing, logging or storing; anything else is refused with InvalidInput, and
the audit chain still verifies afterwards."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from retain import HashingEncoder, Memory
from retain.errors import Forbidden, InvalidInput
from retain.facade.base import FacadeBase, normalised_call
from retain.safety.audit import verify_store

BAD_ACTORS: list[Any] = [5, 1.5, True, None, b"user", {"name": "user"}, "", " user", "us\u200ber", "\ud800"]


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(tmp_path / "m.db", encoder=HashingEncoder(dim=64), state_scorer=False)
    yield m
    m.close()


def _protected(mem: Memory) -> str:
    return mem.add("Never book flights before 9am.", namespace="ns", type="hard_constraint")


@pytest.mark.parametrize("actor", BAD_ACTORS, ids=repr)
@pytest.mark.parametrize("call", ["update", "feedback", "pin", "unpin", "delete", "forget", "delete_all", "add"])
def test_a_bad_actor_is_refused_before_anything_is_audited(mem: Memory, call: str, actor: Any) -> None:
    rid = _protected(mem)
    before = len(mem.store.audit_log())
    calls = {
        "update": lambda: mem.update(rid, "Never book flights before 10am.", namespace="ns", actor=actor),
        "feedback": lambda: mem.feedback(rid, namespace="ns", used=True, actor=actor),
        "pin": lambda: mem.pin(rid, namespace="ns", actor=actor),
        "unpin": lambda: mem.unpin(rid, namespace="ns", actor=actor),
        "delete": lambda: mem.delete(rid, namespace="ns", actor=actor),
        "forget": lambda: mem.forget(rid, namespace="ns", actor=actor),
        "delete_all": lambda: mem.delete_all(namespace="ns", actor=actor),
        "add": lambda: mem.add("another text", namespace="ns", actor=actor),
    }
    with pytest.raises(InvalidInput, match="actor"):
        calls[call]()
    assert len(mem.store.audit_log()) == before
    assert verify_store(mem.store).ok


def test_refusals_by_an_untrusted_string_actor_still_verify(mem: Memory) -> None:
    rid = _protected(mem)
    for call in (mem.delete, mem.unpin, mem.update):
        with pytest.raises(Forbidden):
            call(rid, *(["new text"] if call == mem.update else []), namespace="ns", actor="tool")
    assert mem.forget(rid, namespace="ns", actor="tool").refused
    report = verify_store(mem.store)
    assert report.ok, report.problems


def test_nfc_and_nfd_spellings_name_the_same_namespace(mem: Memory) -> None:
    nfd, nfc = "cafe\u0301", "caf\u00e9"
    rid = mem.add("The espresso machine is broken.", namespace=nfd)
    assert [r.id for r in mem.records(namespace=nfc)] == [rid]
    assert mem.get(rid, namespace=nfc).namespace == nfc
    assert mem.store.audit_log()[-1]["namespace"] == nfc
    assert verify_store(mem.store).ok


@pytest.mark.parametrize(
    "namespace",
    ["tenant ", " tenant", "ten\u200bant", "tenant\u200d", "\ufefftenant", "ten\u202eant", "ten\u2028ant", "a\tb"],
    ids=repr,
)
def test_look_alike_namespaces_are_refused(mem: Memory, namespace: str) -> None:
    with pytest.raises(InvalidInput, match="namespace"):
        mem.add("text", namespace=namespace)
    with pytest.raises(InvalidInput, match="namespace"):
        mem.search("text", namespace=namespace)
    assert mem.info()["namespaces"] == {} or "tenant" not in str(mem.info())


@pytest.mark.parametrize("namespace", [datetime(2026, 1, 1, tzinfo=UTC), object(), 7, None, b"ns"], ids=repr)
def test_a_non_string_namespace_is_refused_by_search_and_add(mem: Memory, namespace: Any) -> None:
    with pytest.raises(InvalidInput, match="namespace"):
        mem.search("text", namespace=namespace)
    with pytest.raises(InvalidInput, match="namespace"):
        mem.add("text", namespace=namespace)


def test_every_public_method_with_an_identifier_is_wrapped() -> None:
    for name, member in inspect.getmembers(Memory, inspect.isfunction):
        params = inspect.signature(member).parameters
        if name.startswith("_") or not ({"namespace", "actor"} & set(params)):
            continue
        assert hasattr(member, "__wrapped__"), name


def test_an_optional_namespace_may_stay_none() -> None:
    class Probe(FacadeBase):
        def look(self, *, namespace: str | None = None, actor: str = "user") -> tuple[str | None, str]:
            return namespace, actor

    assert Probe().look() == (None, "user")
    assert Probe().look(namespace="cafe\u0301") == ("caf\u00e9", "user")
    with pytest.raises(InvalidInput):
        Probe().look(actor=3)  # type: ignore[arg-type]
    assert normalised_call(len) is len
