"""Redaction on the outward paths: search results, export, handoff, and the audit log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from retain import Forbidden, HashingEncoder, InvalidInput, Memory
from retain.cli.app import app
from retain.record import content_hash
from retain.safety.handoff import TYPED_SENSITIVE_REASON, build_handoff
from retain.safety.redaction import WITHHELD_REASON, redact_record, redact_value

NS = "case-7"
DIM = 64
BAD = "My API key is sk-test-ABC123, email dana@example.org"
RAW = ("sk-test-ABC123", "dana@example.org")


@pytest.fixture
def mem() -> Memory:
    return Memory(encoder=HashingEncoder(DIM))


def _filler(m: Memory) -> None:
    m.add("The total budget must stay under 5000 EUR.", namespace=NS)
    m.add("We fly out of Brennick on the third of May.", namespace=NS, role="assistant")


# --- the bad-input example: search, export, handoff ------------------------------------------------


def test_bad_input_is_redacted_in_search_export_and_handoff(mem: Memory) -> None:
    _filler(mem)
    rid = mem.add(BAD, namespace=NS)
    for preset in ("default", "lexical", "dense", "rrf"):
        hits = mem.search("what is my API key and email", namespace=NS, config=preset, k=5)
        hit = next(h for h in hits if h.record.id == rid)
        assert hit.record.content == "My API key is [API_KEY], email [EMAIL]", preset
        assert hit.record.metadata["redacted"] == ["api_key", "email"]
        dumped = json.dumps([h.to_dict() for h in hits], ensure_ascii=False)
        assert not any(secret in dumped for secret in RAW), preset

    exported = mem.export(namespace=NS)
    assert not any(secret in exported for secret in RAW)
    assert "[API_KEY]" in exported and "[EMAIL]" in exported
    doc = json.loads(exported)
    assert doc["redacted"] is True
    record = next(r for r in doc["records"] if r["id"] == rid)
    assert record["content_hash"] == content_hash(record["content"]) != content_hash(BAD)

    for fmt in ("markdown", "json"):
        handoff = mem.handoff(NS, fmt=fmt)
        assert not any(secret in handoff.text for secret in RAW), fmt
        assert [(w.record_id, w.kinds) for w in handoff.withheld] == [(rid, ("api_key", "email"))]
    assert "[API_KEY], [EMAIL]; sensitive: withheld" in mem.handoff(NS).text  # the Withheld section names them


def test_bad_input_typed_fact_is_shown_with_placeholders_in_handoff(mem: Memory) -> None:
    _filler(mem)
    rid = mem.add(BAD, namespace=NS, type="fact")
    handoff = mem.handoff(NS)
    assert f"My API key is [API_KEY], email [EMAIL] (id {rid})" in handoff.text
    (item,) = handoff.withheld
    assert (item.record_id, item.type, item.reason) == (rid, "fact", WITHHELD_REASON)
    assert not any(secret in handoff.text for secret in RAW)


def test_allow_raw_returns_what_is_stored(mem: Memory) -> None:
    _filler(mem)
    rid = mem.add(BAD, namespace=NS)
    hits = mem.search("API key email", namespace=NS, config="lexical", allow_raw=True)
    assert hits[0].record.id == rid and hits[0].record.content == BAD
    assert "redacted" not in hits[0].record.metadata
    exported = mem.export(namespace=NS, allow_raw=True)
    assert all(secret in exported for secret in RAW)
    assert json.loads(exported)["redacted"] is False
    with pytest.raises(InvalidInput, match="allow_raw"):
        mem.search("key", namespace=NS, allow_raw="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="allow_raw"):
        mem.export(namespace=NS, allow_raw=1)  # type: ignore[arg-type]


def test_redacted_reads_leave_the_store_unchanged(mem: Memory) -> None:
    rid = mem.add(BAD, namespace=NS, metadata={"caption": "badge of dana@example.org"})
    before = mem.get(rid, namespace=NS)
    mem.search("API key", namespace=NS)
    mem.export(namespace=NS)
    mem.handoff(NS)
    after = mem.get(rid, namespace=NS)
    assert after.content == BAD and after.metadata == {"caption": "badge of dana@example.org"}
    assert after.content_hash == before.content_hash == content_hash(BAD)
    assert after.embedding is not None
    # ranking uses the stored text: the raw address still finds the record, which comes back redacted
    (hit,) = mem.search("dana@example.org", namespace=NS, config="lexical", k=1)
    assert hit.record.id == rid and "dana@example.org" not in hit.record.content
    assert hit.record.metadata["caption"] == "badge of [EMAIL]"


# --- kinds: IBAN, cards (Luhn), phone, IP ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "raw", "expected"),
    [
        ("Refund to IBAN GB82 WEST 1234 5698 7654 32 please", "GB82 WEST 1234 5698 7654 32", "[IBAN]"),
        ("Charge 4111 1111 1111 1111 for the deposit", "4111 1111 1111 1111", "[CARD]"),
        ("My card is 4111 1111 1111 1112, charge it", "4111 1111 1111 1112", "[CARD]"),  # Luhn fails; card cue
        ("Call me on +44 20 7946 0958 after six", "+44 20 7946 0958", "[PHONE]"),
        ("The office gateway is 203.0.113.7:8443", "203.0.113.7", "[IP]"),
    ],
)
def test_identifiers_become_typed_placeholders(mem: Memory, text: str, raw: str, expected: str) -> None:
    rid = mem.add(text, namespace=NS, type="fact")
    exported = mem.export(namespace=NS)
    assert raw not in exported and expected in exported
    (hit,) = mem.search(text, namespace=NS, config="lexical", k=1)
    assert hit.record.id == rid and expected in hit.record.content and raw not in hit.record.content
    assert mem.get(rid, namespace=NS).content == text


@pytest.mark.parametrize(
    "text",
    [
        "Order reference 4111 1111 1111 1112 shipped on Monday",  # Luhn-invalid, no card word: not a card
        "The dev server listens on 127.0.0.1:8000",  # loopback is not personal data
        "Train 4512 leaves at 14:05 from platform 3",
    ],
)
def test_ordinary_numbers_are_kept(mem: Memory, text: str) -> None:
    rid = mem.add(text, namespace=NS, type="fact")
    (record,) = json.loads(mem.export(namespace=NS))["records"]
    assert record["content"] == text and "redacted" not in record["metadata"]
    assert mem.search(text, namespace=NS, config="lexical", k=1)[0].record.content == text
    assert mem.handoff(NS).withheld == ()
    assert mem.get(rid, namespace=NS).content == text


def test_metadata_strings_are_redacted_at_any_depth() -> None:
    value = {"merged": [{"content": "mail dana@example.org", "n": 2}], "parts": ("ok", "ip 203.0.113.7")}
    redacted, kinds = redact_value(value)
    assert redacted == {"merged": [{"content": "mail [EMAIL]", "n": 2}], "parts": ["ok", "ip [IP]"]}
    assert kinds == {"email", "ip"}


def test_redact_record_reports_fields_and_drops_raw_derivatives(mem: Memory) -> None:
    rid = mem.add("Ping me at dana@example.org", namespace=NS, source="mail:dana@example.org")
    result = redact_record(mem.get(rid, namespace=NS))
    assert result.redacted and result.kinds == ("email",) and result.fields == ("content", "source")
    assert result.record.source == "mail:[EMAIL]" and result.record.embedding is None
    assert result.record.content_hash == content_hash("Ping me at [EMAIL]")
    with pytest.raises(InvalidInput):
        redact_record("Ping me")  # type: ignore[arg-type]


# --- audit ------------------------------------------------------------------------------------


def test_audit_holds_no_raw_secret_after_add_update_delete(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    mem = Memory(path, encoder=HashingEncoder(DIM))
    rid = mem.add(BAD, namespace=NS, source="chat:1")
    new = mem.update(rid, "My API key is now sk-live-ZZ9911223344, email dana@example.org", namespace=NS,
                     reason="rotated sk-test-ABC123 for dana@example.org")  # fmt: skip
    raw = (*RAW, "sk-live-ZZ9911223344")
    assert raw[2] in json.dumps(mem.export(namespace=NS, allow_raw=True))  # the check below can fail
    assert mem.delete(new, namespace=NS, reason="dana@example.org asked to forget") == 2
    log = mem.store.audit_log(NS)
    text = json.dumps(log, ensure_ascii=False)
    assert not any(secret in text for secret in raw)
    assert [e["op"] for e in log] == ["add", "supersede", "update", "export", "delete", "delete"]
    deleted = {e["record_id"] for e in log if e["op"] == "delete"}
    assert deleted == {rid, new}
    assert next(e for e in log if e["op"] == "update")["reason"] == "rotated [API_KEY] for [EMAIL]"
    assert all(e["reason"] == "[EMAIL] asked to forget" for e in log if e["op"] == "delete")
    mem.close()
    disk = b"".join(f.read_bytes() for f in tmp_path.iterdir())
    assert not any(secret.encode() in disk for secret in raw)


# --- handoff ----------------------------------------------------------------------------------


def test_handoff_groups_by_type_in_event_order_without_superseded(mem: Memory) -> None:
    goal = mem.add("Goal: get the baggage refund.", namespace=NS, type="goal", event_time="2026-03-02T10:00:00Z")
    late = mem.add("Hotel is in Old Town.", namespace=NS, type="fact", event_time="2026-03-03T09:00:00Z")
    early = mem.add("Flight PX 220 landed late.", namespace=NS, type="fact", event_time="2026-03-01T09:00:00Z")
    old = mem.add("Budget under 500 EUR.", namespace=NS, type="hard_constraint", event_time="2026-03-01T08:00:00Z")
    new = mem.update(old, "Budget under 650 EUR.", namespace=NS)
    mem.add("Hmm, let me think about the order of steps.", namespace=NS, type="reasoning")
    for i in range(4):
        mem.add(f"Tracking check {i}: bag still in transit.", namespace=NS, type="observation",
                event_time=f"2026-03-0{i + 1}T12:00:00Z")  # fmt: skip

    text = mem.handoff(NS, recent=3).text
    assert "Budget under 500 EUR" not in text and f"(id {new})" in text
    order = [text.index(s) for s in ("## Hard constraints", "## Goals", "## Facts", "## Recent", "## Withheld")]
    assert order == sorted(order)
    assert text.index(f"(id {early})") < text.index(f"(id {late})") and f"(id {goal})" in text
    assert "(1 earlier items not shown; the latest 3 follow.)" in text
    assert "Tracking check 0" not in text and "Tracking check 3" in text
    assert "left out: 1 reasoning" in text and "think about" not in text

    doc = json.loads(mem.handoff(NS, fmt="json", recent=None).text)
    recent = next(s for s in doc["sections"] if s["title"] == "Recent observations and results")
    assert [i["content"][:16] for i in recent["items"]] == [f"Tracking check {i}" for i in range(4)]
    assert doc["withheld"] == []


def test_handoff_withholds_typed_sensitive_records_entirely(mem: Memory) -> None:
    rid = mem.add("My mother's maiden name is Ostrander", namespace=NS, type="sensitive")  # nothing detected
    key = mem.add("username cvale7, the usual login", namespace=NS, type="sensitive")
    handoff = mem.handoff(NS)
    assert "Ostrander" not in handoff.text and "cvale7" not in handoff.text
    assert [(w.record_id, w.kinds, w.reason) for w in handoff.withheld] == [
        (rid, (), TYPED_SENSITIVE_REASON),
        (key, ("username",), TYPED_SENSITIVE_REASON),
    ]
    assert "Ostrander" in mem.export(namespace=NS)  # export redacts spans, it does not drop records


def test_handoff_refuses_bad_input(mem: Memory) -> None:
    mem.add("Budget under 500 EUR.", namespace=NS)
    with pytest.raises(InvalidInput, match="fmt"):
        mem.handoff(NS, fmt="html")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="recent"):
        mem.handoff(NS, recent=0)
    with pytest.raises(InvalidInput, match="namespace"):
        build_handoff(mem.records(namespace=NS), namespace="other")


# --- CLI --------------------------------------------------------------------------------------


def test_cli_export_search_and_handoff_redact_unless_raw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RETAIN_ENCODER", f"hashing-{DIM}")
    monkeypatch.setenv("RETAIN_DB", str(tmp_path / "cli.db"))
    runner = CliRunner()
    assert runner.invoke(app, ["add", BAD, "-n", NS]).exit_code == 0
    exported = runner.invoke(app, ["export", "-n", NS])
    assert exported.exit_code == 0 and "[EMAIL]" in exported.output
    assert not any(secret in exported.output for secret in RAW)
    assert all(secret in runner.invoke(app, ["export", "-n", NS, "--raw"]).output for secret in RAW)
    found = runner.invoke(app, ["search", "API key", "-n", NS, "--json"])
    assert "[API_KEY]" in found.output and not any(secret in found.output for secret in RAW)

    out = tmp_path / "handoff.md"
    result = runner.invoke(app, ["handoff", NS, "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "## Withheld" in text and "[API_KEY], [EMAIL]" in text
    assert not any(secret in text for secret in RAW)
    as_json = json.loads(runner.invoke(app, ["handoff", NS, "--json"]).output)
    assert as_json["format"] == "retain-handoff/1" and len(as_json["withheld"]) == 1
    missing = runner.invoke(app, ["handoff", NS, "--recent", "0"])
    assert missing.exit_code != 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "proxy login: username cvale7, password Thesis!Owl2026",
            "proxy login: username [USERNAME], password [PASSWORD]",
        ),
        ("用户名：zhang_wei88", "用户名：[USERNAME]"),
        ("the username field is required", "the username field is required"),  # a word, not a login name
    ],
)
def test_login_names_next_to_a_cue_are_withheld(text: str, expected: str) -> None:
    from retain.text.privacy import redact

    assert redact(text)[0] == expected


def test_merged_paraphrase_sources_are_redacted_in_export_and_audit() -> None:
    from retain import MemoryConfig

    mem = Memory(encoder=HashingEncoder(DIM), config=MemoryConfig(merge_paraphrases=True))
    text = "Reach Dana by e-mail at dana@example.org about the refund"
    first = mem.add(text, namespace=NS, source="chat:1")
    assert mem.add(text + ".", namespace=NS, source="mail:dana@example.org") == first  # merged
    stored = mem.get(first, namespace=NS).metadata["merged"][0]
    assert stored["source"] == "mail:dana@example.org"  # the store keeps the raw source
    (record,) = json.loads(mem.export(namespace=NS))["records"]
    assert record["metadata"]["merged"][0] == {
        "content": "Reach Dana by e-mail at [EMAIL] about the refund.",
        "event_time": None,
        "role": "user",
        "source": "mail:[EMAIL]",
    }
    merge = next(e for e in mem.store.audit_log(NS) if e["op"] == "merge")
    assert merge["details"] == {"merged_source": "mail:[EMAIL]"}
    assert "dana@example.org" not in json.dumps(mem.store.audit_log(NS))


# --- egress is audited; raw export needs a trusted actor -------------------------------------------


def test_export_and_handoff_are_audited_without_content(mem: Memory) -> None:
    mem.add(BAD, namespace=NS)
    mem.export(namespace=NS)
    mem.export(namespace=NS, allow_raw=True, actor="admin")
    mem.handoff(NS, fmt="json", actor="agent")
    entries = [e for e in mem.store.audit_log(NS) if e["op"] in ("export", "handoff")]
    assert [(e["op"], e["actor"], e["details"]["raw"]) for e in entries] == [
        ("export", "user", False),
        ("export", "admin", True),
        ("handoff", "agent", False),
    ]
    assert entries[0]["details"]["records"] == 1 and entries[2]["details"]["withheld"] == 1
    assert not any(secret in json.dumps(mem.store.audit_log(NS)) for secret in RAW)


@pytest.mark.parametrize("actor", ["tool", "agent", "retrieved"])
def test_untrusted_actor_may_not_export_raw(mem: Memory, actor: str) -> None:
    mem.add(BAD, namespace=NS)
    with pytest.raises(Forbidden, match="may not export unredacted"):
        mem.export(namespace=NS, allow_raw=True, actor=actor)
    refused = [e for e in mem.store.audit_log(NS) if e["op"] == "export"]
    assert [(e["actor"], e["details"]["outcome"]) for e in refused] == [(actor, "refused")]
    assert "[API_KEY]" in mem.export(namespace=NS, actor=actor)  # the redacted copy is still allowed


def test_metadata_keys_are_redacted_too(mem: Memory) -> None:
    meta = {"dana@example.org": "reviewer", "bob@example.org": "owner", "note": "plain"}
    mem.add("Contacts for the review are in the metadata.", namespace=NS, metadata=meta)
    dumped = mem.export(namespace=NS)
    assert not any(raw in dumped for raw in ("dana@example.org", "bob@example.org"))
    (record,) = json.loads(dumped)["records"]
    assert record["metadata"]["[EMAIL]"] in {"reviewer", "owner"} and record["metadata"]["note"] == "plain"
    assert {record["metadata"]["[EMAIL]"], record["metadata"]["[EMAIL]#2"]} == {"reviewer", "owner"}
    assert json.loads(mem.export(namespace=NS, allow_raw=True))["records"][0]["metadata"] == meta
