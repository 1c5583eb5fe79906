"""The dashboard app in-process (no browser): roles per namespace, the write checks, and bad form
values answered with an error page, not a stack trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from retain.encoders.basis import HashingEncoder
from retain.memory import Memory
from retain.ui.app import create_app
from retain.ui.auth import Principal, Role, csrf_token
from ui.fill import Filled, fill


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return fill(tmp_path_factory.mktemp("app") / "store.db")


def client(path: Path, principal: Principal) -> TestClient:
    mem = Memory(path, encoder=HashingEncoder(64), state_scorer=False)
    return TestClient(create_app(mem, lambda request: principal, secret=b"k"))


def test_a_namespace_without_a_role_is_neither_listed_nor_readable(store: Filled) -> None:
    c = client(store.path, Principal("ann", {"other": Role.ADMIN}))
    assert "trip" not in c.get("/").text
    assert c.get("/records?ns=trip").status_code == 403


def test_a_writer_with_the_form_token_pins_and_a_reader_cannot(store: Filled) -> None:
    writer = Principal("wes", {"trip": Role.WRITE})
    c = client(store.path, writer)
    form = {"ns": "trip", "id": store.new_id, "csrf": csrf_token(b"k", writer)}
    assert c.post("/record/pin", data=form, follow_redirects=False).status_code == 303
    assert ">yes<" in c.get(f"/record?ns=trip&id={store.new_id}").text
    reader = Principal("rita", {"trip": Role.READ})
    form["csrf"] = csrf_token(b"k", reader)
    assert client(store.path, reader).post("/record/unpin", data=form).status_code == 403
    assert c.post("/record/delete_all", data=form | {"csrf": csrf_token(b"k", writer)}).status_code == 403


@pytest.mark.parametrize(
    "url",
    [
        "/records?ns=trip&start=yesterday",
        "/records?ns=trip&type=nonsense",
        "/records?ns=trip&after=NOSUCHID",
        "/audit?ns=trip&before=-3",
        "/diff?ns=trip&a=9&b=2",
        "/records?ns=",
    ],
)
def test_bad_form_values_get_an_error_page(store: Filled, url: str) -> None:
    response = client(store.path, Principal("ann", {"*": Role.ADMIN})).get(url)
    assert response.status_code == 400 and "Traceback" not in response.text
    assert '<p id="message">' in response.text


def test_a_search_past_the_count_limit_says_more_than(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("retain.ui.views.SEARCH_COUNT_LIMIT", 2)
    with Memory(tmp_path / "s.db", encoder=HashingEncoder(64), state_scorer=False) as mem:
        for i in range(3):
            mem.add(f"kayak rental number {i}", namespace="trip")
        mem.add("a museum visit", namespace="trip")
    c = client(tmp_path / "s.db", Principal("ann", {"*": Role.ADMIN}))
    page = c.get("/records?ns=trip&q=kayak").text
    assert "more than 2 matching records" in page and page.count("kayak rental number") == 3
    assert "1 matching record;" in c.get("/records?ns=trip&q=museum").text
    assert "4 matching records" in c.get("/records?ns=trip").text
