"""The secrets corpus (tests/fixtures/secrets_corpus.json): no raw secret leaves the library.

Every corpus text is stored, then read back through each outward path: export, search results (every
preset), handoff, audit reasons, context provenance (the query holds the secret) and retain's
structured log. None may contain a corpus secret as written.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from retain import HashingEncoder, Memory
from retain.safety.observe import configure_logging, disable_logging
from retain.text.privacy import detect, redact

CORPUS = json.loads((Path(__file__).parents[1] / "fixtures" / "secrets_corpus.json").read_text(encoding="utf-8"))
ITEMS = [i for i in CORPUS["items"] if i["kind"] != "benign"]
BENIGN = [i for i in CORPUS["items"] if i["kind"] == "benign"]
NS = "secrets"


def test_corpus_shape() -> None:
    assert len(ITEMS) >= 100
    assert len({i["lang"] for i in ITEMS}) >= 4
    assert {i["split"] for i in ITEMS} == {"design", "held-out", "held-out-2", "held-out-3"}
    assert all(i["secret"] in i["text"] for i in ITEMS)
    assert len(BENIGN) >= 20 and all("secret" not in i for i in BENIGN)
    assert len({i["id"] for i in CORPUS["items"]}) == len(CORPUS["items"])


@pytest.mark.parametrize("item", [i for i in ITEMS if i["split"] == "design"], ids=lambda i: i["id"])
def test_design_half_is_withheld(item: dict[str, str]) -> None:
    redacted, _ = redact(item["text"])
    assert item["secret"] not in redacted


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("the CVV on it is 737", "cvv"),
        ("携帯は090-1234-5678です", "phone"),
        ("the vault password is correcthorsebatterystaple", "password"),
        ("My National Insurance number is AB123456C.", "national_id"),
        ("440304198507162317", "national_id"),  # no cue word: a national id, not a card
        ("报名表上写的是310115199003074413，请核对。", "national_id"),
    ],
)
def test_issue_examples_are_found_with_their_kind(text: str, kind: str) -> None:
    assert [f.kind for f in detect(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "The password is required for login.",
        "my password is really long",
        "Your bus pass 4471 expires in May.",
        "The PIN for the card is wrong.",
        "Please pass the salt.",
        "We met at 10:30 and the security code talk was at noon.",
    ],
)
def test_ordinary_sentences_stay(text: str) -> None:
    assert redact(text)[0] == text


def _with_context(item: dict[str, str]) -> str:
    """The secret, with the text before it when it is 5 characters or fewer: a CVV "167" can be an
    audit sequence number, "lautet 167" cannot."""
    secret, text = item["secret"], item["text"]
    if len(secret) > 5:
        return secret
    start = text.index(secret)
    return text[max(0, start - 8) : start] + secret


def _raw(secret: str) -> re.Pattern[str]:
    """The secret as written, not inside a longer token (a CVV "737" inside an id, a hash or a
    timestamp is not a leak of it)."""
    return re.compile(rf"(?<![0-9A-Za-z.]){re.escape(secret)}(?![0-9A-Za-z])")


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging(json=True, level="DEBUG", stream=stream)
    yield stream
    disable_logging()


def test_no_raw_secret_on_any_outward_path(log: io.StringIO) -> None:
    found = [i for i in ITEMS if i["secret"] not in redact(i["text"])[0]]
    secrets = [_with_context(i) for i in found]
    leaks: list[str] = []
    with Memory(encoder=HashingEncoder(64)) as mem:
        ids = [mem.add(i["text"], namespace=NS, actor="user") for i in found]
        for rid, item in zip(ids[:20], found[:20], strict=True):
            mem.pin(rid, namespace=NS, reason=f"keep: {item['text']}")
        outputs = {"export": mem.export(namespace=NS)}
        for preset in ("default", "rrf", "lexical", "dense"):
            hits = [h.to_dict() for i in found[:40] for h in mem.search(i["text"], namespace=NS, config=preset, k=3)]
            outputs[f"search:{preset}"] = json.dumps(hits, ensure_ascii=False)
        outputs["handoff"] = mem.handoff(NS, recent=len(found)).text
        outputs["handoff:json"] = mem.handoff(NS, fmt="json", recent=len(found)).text
        provenance = [
            mem.explain(mem.context(i["text"], namespace=NS, budget_tokens=200).provenance_id) for i in found[:30]
        ]
        outputs["provenance"] = json.dumps([p.to_dict() for p in provenance], ensure_ascii=False, default=str)
        for rid, item in zip(ids[20:40], found[20:40], strict=True):
            mem.delete(rid, namespace=NS, reason=f"old: {item['text']}")
        outputs["audit"] = json.dumps(mem.audit_entries(namespace=NS), ensure_ascii=False, default=str)
    outputs["log"] = log.getvalue()
    assert outputs["log"]  # the log was on
    for path, text in outputs.items():
        leaks += [f"{path}: {s!r}" for s in secrets if _raw(s).search(text)]
    assert leaks == []
    assert len(found) >= 140  # the recall floor measured by benchmarks/privacy_recall.py --corpus
