"""Context packing: budget respected exactly, constraints first, provenance stored and explained."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from retain import BudgetInfeasible, HashingEncoder, InvalidInput, Memory, RecordNotFound
from retain.safety.context import LEFT_OUT_REASONS, render_line
from retain.store.sqlite import SCHEMA_VERSION, SQLiteStore

NS = "trip-42"
CONSTRAINTS = ["The total budget must stay under 5000 EUR.", "Never book flights before 9am."]


def filled(mem: Memory, n: int = 30) -> list[str]:
    for text in CONSTRAINTS:
        mem.add(text, namespace=NS, type="hard_constraint", source="chat:1")
    words = ["harbour", "museum", "train", "hotel", "dinner"]
    return mem.add_many(
        [
            {
                "content": f"Day {i}: we took the {words[i % 5]} tour" + " and it was long" * (i % 4) + ".",
                "source": f"chat:{i}",
            }
            for i in range(n)
        ],
        namespace=NS,
    )


@pytest.fixture
def mem() -> Memory:
    m = Memory(encoder=HashingEncoder(64))
    filled(m)
    return m


@pytest.mark.parametrize("budget", [24, 31, 40, 57, 90, 400])
def test_budget_is_respected_exactly_and_greedily(mem: Memory, budget: int) -> None:
    ctx = mem.context("harbour tour", namespace=NS, working=0, budget_tokens=budget, k=12)
    lines = ctx.text.split("\n")
    counted = mem.encoder.count_tokens(lines)
    assert [i.tokens for i in ctx.items] == counted  # one rendered line per item, counted as stated
    assert ctx.used_tokens == sum(counted) <= budget
    assert [i.why for i in ctx.items[:2]] == ["hard_constraint"] * 2
    assert lines[:2] == [f"[constraint] {c}" for c in CONSTRAINTS]
    retrieved = [i for i in ctx.items if i.why == "retrieved"]
    assert [i.rank for i in retrieved] == sorted(i.rank for i in retrieved if i.rank is not None)
    assert len(retrieved) + len(ctx.left_out) == 12  # every candidate is accounted for
    for left in ctx.left_out:
        assert left.reason == "budget"
        assert left.tokens is not None and left.tokens > budget - ctx.used_tokens  # it really did not fit
    if budget == 400:
        assert not ctx.left_out


def test_mandatory_constraints_over_budget_degrade_and_raise_only_when_nothing_fits(mem: Memory) -> None:
    need = sum(mem.encoder.count_tokens([f"[constraint] {c}" for c in CONSTRAINTS]))
    ctx = mem.context("harbour", namespace=NS, working=0, budget_tokens=need - 1)  # one constraint short
    assert ctx.used_tokens <= need - 1 and [i.why for i in ctx.items] == ["hard_constraint"]
    assert {x.reason for x in ctx.left_out} == {"budget"}  # the other constraint and every hit, reported
    entries = len(mem.store.audit_log())
    with pytest.raises(BudgetInfeasible, match=r"not even one of the \d+ candidates .* fits budget_tokens=1"):
        mem.context("harbour", namespace=NS, working=0, budget_tokens=1)
    assert len(mem.store.audit_log()) == entries  # nothing stored
    ctx = mem.context("harbour", namespace=NS, working=0, budget_tokens=need)  # exactly enough: constraints only
    assert ctx.used_tokens == need and {x.reason for x in ctx.left_out} == {"budget"}


def test_explain_round_trips_through_a_reopened_file_store(tmp_path: Path) -> None:
    db = tmp_path / "ctx.db"
    with Memory(db, encoder=HashingEncoder(64), state_scorer=False) as mem:
        filled(mem)
        state = {"task": "plan day 3", "步": 2}
        ctx = mem.context("museum tour", namespace=NS, working=0, budget_tokens=45, state=state, k=8)
    with Memory(db, encoder=HashingEncoder(64)) as again:
        prov = again.explain(ctx.provenance_id)
        assert prov == ctx.provenance
        assert prov.state == {"task": "plan day 3", "步": 2} and prov.query == "museum tour"
        assert again.explain(ctx.provenance_id, namespace=NS) == prov
        with pytest.raises(RecordNotFound, match="no context provenance"):
            again.explain(ctx.provenance_id, namespace="other")
        with pytest.raises(RecordNotFound):
            again.explain("01NOPE")
        retrieved = [i for i in prov.items if i.why == "retrieved"]
        assert retrieved and all(i.source and i.source.startswith("chat:") for i in retrieved)
        assert all(set(i.scores) >= {"bm25", "dense", "rrf", "fused"} for i in retrieved)
        (entry,) = [e for e in again.store.audit_log(NS) if e["op"] == "retrieve"]
    details = entry["details"]
    assert details["provenance_id"] == ctx.provenance_id
    assert [i for i, _ in details["included"]] == [i.record_id for i in prov.items]
    assert details["left_out"] == {r: sum(x.reason == r for x in prov.left_out) for r in LEFT_OUT_REASONS}
    stored = json.dumps(entry, ensure_ascii=False, default=str)
    assert "museum" not in stored and "Day " not in stored  # ids and scores, no content
    raw = sqlite3.connect(db).execute("SELECT body FROM provenance").fetchone()[0]
    assert "Day " not in raw and "[memory]" not in raw  # neither content nor the rendered text


def test_left_out_reasons_superseded_duplicate_below_threshold() -> None:
    with Memory(encoder=HashingEncoder(64)) as mem:
        old = mem.add("The meeting room is R12 on floor two.", namespace=NS, type="fact")
        new = mem.update(old, "The meeting room is R99 on floor two.", namespace=NS)
        twin = mem.add("The meeting room is R99 on floor two.", namespace=NS, role="assistant")  # same words
        assert twin != new
        mem.add("Lunch is at noon in the meeting room.", namespace=NS, type="fact")
        ctx = mem.context("meeting room floor two", namespace=NS, working=0, budget_tokens=200, k=5)
        reasons = {x.record_id: (x.reason, x.detail) for x in ctx.left_out}
        assert reasons[old] == ("superseded", f"superseded by {new}")
        first = next(i.record_id for i in ctx.items if i.record_id in (new, twin))
        other = twin if first == new else new
        assert reasons[other] == ("duplicate", f"same content as {first}")
        scores = sorted(i.score for i in ctx.items if i.score is not None)
        cut = (scores[0] + scores[-1]) / 2
        strict = mem.context("meeting room floor two", namespace=NS, working=0, budget_tokens=200, k=5, threshold=cut)
        below = [x for x in strict.left_out if x.reason == "below_threshold"]
        assert below and all(x.score is not None and x.score < cut for x in below)
        assert all(i.score is not None and i.score >= cut for i in strict.items)


def test_constraint_found_by_search_keeps_its_score_and_is_not_listed_twice(mem: Memory) -> None:
    ctx = mem.context("total budget EUR", namespace=NS, working=0, budget_tokens=100, k=5)
    first = ctx.items[0]
    assert first.why == "hard_constraint" and first.rank is not None and first.score is not None
    assert first.record_id not in {x.record_id for x in ctx.left_out}
    assert [i.record_id for i in ctx.items].count(first.record_id) == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"budget_tokens": 0}, "budget_tokens"),
        ({"budget_tokens": True}, "budget_tokens"),
        ({"budget_tokens": 50, "k": 0}, "k: must"),
        ({"budget_tokens": 50, "threshold": float("nan")}, "threshold"),
        ({"budget_tokens": 50, "state": {"x": {1, 2}}}, "state: must be JSON"),
        ({"budget_tokens": 50, "state": ["not", "a", "mapping"]}, "state: must be an AgentState, a mapping"),
        ({"budget_tokens": 50, "namespace": ""}, "namespace"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_stored(mem: Memory, kwargs: dict[str, object], match: str) -> None:
    entries = len(mem.store.audit_log())
    args = {"namespace": NS, **kwargs}
    with pytest.raises(InvalidInput, match=match):
        mem.context("harbour", **args)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="query"):
        mem.context(42, namespace=NS, working=0, budget_tokens=50)  # type: ignore[arg-type]
    assert len(mem.store.audit_log()) == entries


def test_empty_query_packs_the_constraints_only(mem: Memory) -> None:
    ctx = mem.context("  ", namespace=NS, working=0, budget_tokens=100)
    assert [i.why for i in ctx.items] == ["hard_constraint", "hard_constraint"] and not ctx.left_out


def test_delete_all_purges_the_namespace_provenance(mem: Memory) -> None:
    ctx = mem.context("harbour", namespace=NS, working=0, budget_tokens=60)
    mem.delete_all(namespace=NS)
    with pytest.raises(RecordNotFound):
        mem.explain(ctx.provenance_id)


def test_render_line_tags_constraints() -> None:
    with Memory(encoder=HashingEncoder(64)) as mem:
        rid = mem.add("Must not exceed 3 bags.", namespace=NS, type="hard_constraint")
        assert render_line(mem.get(rid, namespace=NS)) == "[constraint] Must not exceed 3 bags."


def test_a_version_1_store_is_migrated_and_keeps_its_records(tmp_path: Path) -> None:
    db = tmp_path / "v1.db"
    with Memory(db, encoder=HashingEncoder(64)) as mem:
        ids = filled(mem, n=5)
    raw = sqlite3.connect(db)
    raw.execute("DROP TABLE provenance")
    raw.execute("DROP TABLE edges")  # and every later migration's objects
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    with Memory(db, encoder=HashingEncoder(64)) as mem:
        assert [r.id for r in mem.records(namespace=NS)][2:] == ids
        ctx = mem.context("train", namespace=NS, working=0, budget_tokens=80)
        assert mem.explain(ctx.provenance_id) == ctx.provenance
    store = SQLiteStore(db)
    store.setup()
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    store.close()


def test_readme_context_example_runs() -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "mem.context(" in b)
    with Memory(encoder=HashingEncoder(64), state_scorer=False) as mem:
        mem.add("The total budget must stay under 5000 EUR.", namespace="trip-42", type="hard_constraint")
        mem.add("We fly out of Brennick (BRK).", namespace="trip-42")
        scope: dict[str, object] = {"mem": mem}
        exec(compile(block, "README.md", "exec"), scope)
        ctx = scope["ctx"]
        assert ctx.text.startswith("[constraint] The total budget")  # type: ignore[attr-defined]
        assert mem.check_canaries().ok and mem.explain(ctx.provenance_id) == ctx.provenance  # type: ignore[attr-defined]


def test_working_tier_holds_the_newest_and_the_current_phase() -> None:
    mem = Memory(encoder=HashingEncoder(64), state_scorer=False)
    words = ["apple", "brick", "cedar", "dune", "ember", "fjord", "grove", "heron"]
    words += ["iris", "jade", "kelp", "lotus", "moss", "nectar", "opal"]
    ids = []
    for i, w in enumerate(words):
        phase = "a" if i < 10 else "b" if i < 13 else "c"
        ids.append(mem.add(f"The {w} note is filed here.", namespace="w", state={"phase": phase}))
    ctx = mem.context("ok, continue", namespace="w", budget_tokens=500, state={"phase": "b"}, working=2)
    working = [i.record_id for i in ctx.items if i.why == "working"]
    assert working == [ids[12], ids[11], ids[14], ids[13]]  # phase b's two newest, then the two newest
    tight = mem.context("ok, continue", namespace="w", budget_tokens=18, state={"phase": "b"}, working=2)
    kept = [i.record_id for i in tight.items if i.why == "working"]
    assert kept and kept == [ids[12], ids[11], ids[14], ids[13]][: len(kept)]  # a tight budget keeps the phase first
    left_ids = [x.record_id for x in tight.left_out]
    assert len(left_ids) == len(set(left_ids))  # a working record that did not fit is listed once
    assert not set(left_ids) & {i.record_id for i in tight.items}
    small = mem.context("ok, continue", namespace="w", budget_tokens=500, working=0)
    assert not [i for i in small.items if i.why == "working"]
    with pytest.raises(InvalidInput, match="working"):
        mem.context("ok", namespace="w", budget_tokens=500, working=-1)


def test_a_large_state_is_redacted_in_the_provenance_phone_email_and_secret() -> None:
    """The state stored with the provenance holds no raw phone number, e-mail or key, in any text
    of a large state whose texts repeat the same numbers (matched once per phone window, memoised),
    in keys as in values, in a decimal's neighbourhood the number still counts as a decimal."""
    phone, email, key = "+44 20 7946 0958", "dana@example.org", "sk-test-ABC123"
    facts = f"Call {phone} or mail {email} with key {key}; booking ref 88412207, price 0.268435456 EUR. "
    state = {
        "phase": f"phase: {facts}",
        "subgoals": [f"goal {i}: {facts * 3}" for i in range(50)],
        "constraints": {f"call {phone} #{i}": f"c{i}: {facts * 5}" for i in range(300)},
        "uncertain": [f"q {i}: ring (415) 555-2671?" for i in range(50)],
        "last_result": f"done; phone {phone}",
    }
    with Memory(encoder=HashingEncoder(64), state_scorer=False) as mem:
        filled(mem)
        for _ in range(2):  # the second call is served from the memo: it must redact the same
            ctx = mem.context("museum tour", namespace=NS, working=0, budget_tokens=45, state=state, k=8)
            stored = json.dumps(mem.explain(ctx.provenance_id).state, ensure_ascii=False)
            for raw in (phone, email, key, "7946 0958", "555-2671"):
                assert raw not in stored
            assert stored.count("[PHONE]") >= 1 + 50 * 3 + 300 * 6 + 50 + 1
            assert "[EMAIL]" in stored and "[API_KEY]" in stored
            assert "0.268435456" in stored  # a decimal is not a phone number: nothing widened either
            assert len(mem.explain(ctx.provenance_id).state["constraints"]) == 300  # keys stay distinct


def test_provenance_holds_no_raw_secret() -> None:
    m = Memory(encoder=HashingEncoder(dim=384))
    m.add("Hotel near the station", namespace="p")
    ctx = m.context(
        "email john.doe@example.com card 4111 1111 1111 1111",
        namespace="p",
        budget_tokens=100,
        state={"constraints": {"card": "4111 1111 1111 1111"}},
    )
    prov = m.explain(ctx.provenance_id)
    assert "john.doe@example.com" not in prov.query and "4111" not in str(prov.state)
