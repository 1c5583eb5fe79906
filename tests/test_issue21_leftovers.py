"""Issue 21, point 8: the smaller defects, each as its smallest reproduction with the right outcome."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from postgres_server import postgres_url
from retain import Budget, HashingEncoder, Memory, MemoryType
from retain.cli.app import app
from retain.store import DeleteRecords, PutProvenance
from retain.store.postgres import PostgresStore
from retain.store.sqlite_audit import WITHHELD_QUERY

SECRET = "My card is 4111 1111 1111 1111 and my email is bob@example.com"


def test_delete_withholds_the_query_of_a_provenance_that_cited_the_record() -> None:
    with Memory(encoder=HashingEncoder(dim=64), state_scorer=False) as mem:
        rid = mem.add("The spare key is under the blue flowerpot.", namespace="a")
        other = mem.add("The ferry leaves at nine.", namespace="a")
        cited = mem.context("where is the spare key flowerpot", namespace="a", budget_tokens=200)
        unrelated = mem.context("ferry", namespace="b", budget_tokens=200)  # another namespace: untouched
        assert rid in [i.record_id for i in cited.items]
        mem.delete(rid, namespace="a")
        body = mem.store.provenance(cited.provenance_id)["body"]
        assert body["query"] == WITHHELD_QUERY and "flowerpot" not in json.dumps(body)
        assert body["forgotten"] == [rid] and body["state"] is None
        assert mem.store.provenance(unrelated.provenance_id)["body"]["query"] == "ferry"
        assert mem.get(other, namespace="a").content == "The ferry leaves at nine."


def test_delete_withholds_provenance_on_postgres() -> None:
    store = PostgresStore(postgres_url(), schema=f"t_{uuid.uuid4().hex}")
    store.setup()
    try:
        body = {"query": "spare key", "state": {"goal": "find the key"}, "items": [{"record_id": "R1"}], "left_out": []}
        kept = {"query": "ferry", "state": None, "items": [{"record_id": "R2"}], "left_out": []}
        now = datetime.now(UTC)
        store.batch([PutProvenance("P1", "a", now, body), PutProvenance("P2", "a", now, kept)])
        store.batch([DeleteRecords("a", ("R1",))])
        assert store.provenance("P1")["body"]["query"] == WITHHELD_QUERY
        assert store.provenance("P1")["body"]["state"] is None
        assert store.provenance("P2")["body"]["query"] == "ferry"
    finally:
        store.close()


def test_no_longer_likes_is_not_a_hard_constraint() -> None:
    with Memory(encoder=HashingEncoder(dim=64), state_scorer=False) as mem:
        rid = mem.add("User no longer likes spicy food", namespace="a")  # untyped: classified
        assert mem.get(rid, namespace="a").type is not MemoryType.HARD_CONSTRAINT


def test_default_utility_budget_works_with_a_hashing_encoder_of_384_dims() -> None:
    for dim in (384, 64):
        with Memory(encoder=HashingEncoder(dim=dim), budget=Budget(3), state_scorer=False) as mem:
            assert mem.budget is not None and mem.budget.policy == "utility"
            ids = [
                mem.add(f"Note {i}: the parcel for trip {i} goes to locker {i * 7}.", namespace="a") for i in range(5)
            ]
            stored = mem.records(namespace="a")  # archive included
            assert sorted(r.id for r in stored) == sorted(ids)  # nothing lost: overflow is archived
            assert sum(r.tier.value != "archive" for r in stored) == 3
            assert all(0.0 <= r.importance <= 1.0 for r in stored)


def test_timeline_without_a_query_is_redacted_like_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with Memory(db, encoder=HashingEncoder(dim=64), state_scorer=False) as mem:
        mem.add(SECRET, namespace="a")
        shown = [r.content for r in mem.timeline("a")]
        assert shown == [r.content for r in mem.timeline("a", query="card email")]
        assert "4111" not in shown[0] and "bob@example.com" not in shown[0] and "[EMAIL]" in shown[0]
        assert [r.content for r in mem.timeline("a", allow_raw=True)] == [SECRET]
    out = CliRunner().invoke(app, ["timeline", "--namespace", "a", "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)[0]["content"] == shown[0]
    raw = CliRunner().invoke(app, ["timeline", "--namespace", "a", "--db", str(db), "--json", "--raw"])
    assert json.loads(raw.stdout)[0]["content"] == SECRET
