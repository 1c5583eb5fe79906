"""Segments: extractive summaries, summary records, compression, context windows, segment relevance."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.ingest.draft import NewMemory
from retain.memory import Memory
from retain.record import MemoryRecord, Tier, new_id
from retain.retention.budget import Budget
from retain.sequence.segments import (
    SUMMARY_KIND,
    CentroidSummariser,
    SegmentIndex,
    Summariser,
    Summary,
    is_index_summary,
    split_sentences,
    summarize_segment,
)
from retain.store import Store

NS = "chat"
StoreFactory = Callable[[Path], Store]

GARDEN = [
    "I planted tomatoes in the garden this spring.",
    "The tomatoes in the garden need water every morning.",
    "My garden tomatoes are finally turning red.",
    "By the way, I bought a new phone yesterday.",
]
TRAVEL = [
    "We booked a flight to Lisbon for the conference.",
    "The Lisbon hotel is close to the conference venue.",
    "Our flight to Lisbon leaves at nine in the morning.",
]


def _turns(segment: str, texts: list[str], start: int, when: datetime | None) -> list[NewMemory]:
    return [
        NewMemory(
            content=t,
            type="observation",
            role="Ana" if i % 2 == 0 else "Ben",
            seq=start + i,
            segment=segment,
            event_time=when,
            metadata={"speaker": "Ana" if i % 2 == 0 else "Ben"},
        )
        for i, t in enumerate(texts)
    ]


@pytest.fixture
def mem(make_store: StoreFactory, tmp_path: Path, encoder: HashingEncoder) -> Iterator[Memory]:
    m = Memory(store=make_store(tmp_path), encoder=encoder, state_scorer=False)
    m.add_many(_turns("s1", GARDEN, 0, datetime(2023, 5, 8, tzinfo=UTC)), namespace=NS)
    m.add_many(_turns("s2", TRAVEL, len(GARDEN), datetime(2023, 6, 1, tzinfo=UTC)), namespace=NS)
    yield m
    m.close()


def _records(encoder: HashingEncoder, texts: list[str]) -> list[MemoryRecord]:
    vectors = encoder.encode(texts)
    return [
        MemoryRecord(id=new_id(), namespace=NS, content=t, seq=i, segment="s", embedding=v)
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]


# --- summarize_segment -------------------------------------------------------------------------


def test_summary_picks_the_sentences_closest_to_the_centroid(encoder: HashingEncoder) -> None:
    records = _records(encoder, GARDEN)
    summary = summarize_segment(records, encoder, max_sentences=1)
    # reference: cosine of each record to the normalised mean embedding, computed by hand
    matrix = np.stack([r.embedding for r in records]).astype(np.float64)  # type: ignore[misc]
    centroid = matrix.mean(axis=0) / np.linalg.norm(matrix.mean(axis=0))
    best = int(np.argmax(matrix @ centroid))
    assert summary.sentences == (GARDEN[best],)
    assert summary.sentence_sources == (records[best].id,)
    assert "phone" not in summary.text  # the off-topic remark is the least central
    assert summary.record_ids == tuple(r.id for r in records)
    assert summary.scores[0] == pytest.approx(float(matrix[best] @ centroid), abs=1e-5)


def test_summary_keeps_stream_order_and_the_limit(encoder: HashingEncoder) -> None:
    records = _records(encoder, GARDEN)
    summary = summarize_segment(list(reversed(records)), encoder, max_sentences=3)
    assert len(summary.sentences) == 3
    positions = [GARDEN.index(s) for s in summary.sentences]
    assert positions == sorted(positions)
    assert summary.text.splitlines()[0].startswith("user: ")  # "<speaker>: <sentence>"


def test_summary_skips_near_duplicate_sentences(encoder: HashingEncoder) -> None:
    texts = ["The meeting moved to Friday.", "The meeting moved to Friday!", "Bring the slides."]
    summary = summarize_segment(_records(encoder, texts), encoder, max_sentences=2)
    assert len(summary.sentences) == 2
    assert "Bring the slides." in summary.sentences


def test_summary_splits_multi_sentence_records(encoder: HashingEncoder) -> None:
    text = "Tomatoes grow in the garden. Tomatoes in the garden need water. I also like chess."
    summary = summarize_segment(_records(encoder, [text]), encoder, max_sentences=1)
    assert summary.sentences[0] in split_sentences(text)
    assert summary.sentences[0] != "I also like chess."


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_summary_refuses_bad_limits(encoder: HashingEncoder, bad: object) -> None:
    with pytest.raises(InvalidInput, match="max_sentences"):
        summarize_segment(_records(encoder, GARDEN), encoder, max_sentences=bad)
    with pytest.raises(InvalidInput, match="at least one record"):
        summarize_segment([], encoder)


def test_split_sentences() -> None:
    assert split_sentences("One. Two? Three!\nFour") == ["One.", "Two?", "Three!", "Four"]
    assert split_sentences("no end") == ["no end"]
    assert split_sentences("你好。再见。") == ["你好。再见。"]  # no space after CJK stops: one piece


# --- summary records ---------------------------------------------------------------------------


def test_memory_summarize_stores_an_index_summary_hidden_from_search(mem: Memory) -> None:
    rec = mem.summarize(NS, "s1")
    assert rec.metadata["kind"] == SUMMARY_KIND and is_index_summary(rec)
    assert rec.segment == "s1" and rec.tier is Tier.ARCHIVE
    assert len(rec.metadata["summary_of"]) == len(GARDEN)
    assert rec.event_time == datetime(2023, 5, 8, tzinfo=UTC)
    stored = mem.get(rec.id, namespace=NS)
    assert stored.content == rec.content and stored.embedding is not None
    for tiers in (None, ["core", "dynamic", "archive"]):
        hits = mem.search("garden tomatoes", namespace=NS, k=20, tiers=tiers)
        assert rec.id not in {h.record.id for h in hits}
        assert hits  # the turns are still found
    ops = [e["op"] for e in mem.store.audit_log(NS)]
    assert "summarize" in ops
    again = mem.summarize(NS, "s1")
    assert again.supersedes == rec.id
    assert mem.get(rec.id, namespace=NS).superseded_by == again.id


class _Scripted:
    """A stand-in for an LLM summariser (off-network)."""

    name = "scripted"

    def summarize(self, records: object, encoder: object) -> Summary:
        recs = list(records)  # type: ignore[call-overload]
        return Summary(
            text="Ana grows tomatoes.",
            sentences=("Ana grows tomatoes.",),
            sentence_sources=(),
            record_ids=tuple(r.id for r in recs),
            scores=(),
            centroid=np.zeros(1, dtype=np.float32),
            method="llm",
        )


def test_summariser_protocol_plugs_in(mem: Memory) -> None:
    assert isinstance(CentroidSummariser(), Summariser) and isinstance(_Scripted(), Summariser)
    rec = mem.summarize(NS, "s1", summariser=_Scripted())
    assert rec.content == "Ana grows tomatoes." and rec.metadata["method"] == "llm"
    assert rec.metadata["summariser"] == "scripted"


def test_summarize_refuses_unknown_or_bad_segments(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="no records"):
        mem.summarize(NS, "nope")
    with pytest.raises(InvalidInput, match="segment"):
        mem.summarize(NS, "")


# --- compression -------------------------------------------------------------------------------


def test_compress_moves_turns_to_archive_and_keeps_the_summary_hot(mem: Memory) -> None:
    hot_before = len(mem.records(namespace=NS, include_archive=False))
    summary = mem.compress_segment(NS, "s1", actor="agent")
    assert summary.tier is Tier.DYNAMIC and summary.metadata["compressed"] is True
    hot = mem.records(namespace=NS, include_archive=False)
    assert len(hot) == hot_before - len(GARDEN) + 1
    archived = [r for r in mem.records(namespace=NS) if r.segment == "s1" and r.id != summary.id]
    assert len(archived) == len(GARDEN)
    assert all(r.tier is Tier.ARCHIVE and r.metadata["compressed_into"] == summary.id for r in archived)
    entries = [e for e in mem.store.audit_log(NS) if e["op"] == "archive"]
    assert {e["record_id"] for e in entries} == {r.id for r in archived}
    assert all(e["reason"] == f"compressed into summary {summary.id}" for e in entries)
    hits = mem.search("garden tomatoes", namespace=NS, k=5)
    assert hits[0].record.id == summary.id  # the summary now stands for the segment
    assert not any(h.record.segment == "s1" and h.record.id != summary.id for h in hits)
    old = mem.search("garden tomatoes", namespace=NS, k=5, tiers=["archive"])
    assert old and all(h.record.metadata.get("compressed_into") == summary.id for h in old)


def test_compress_counts_one_record_against_the_budget(make_store: StoreFactory, tmp_path: Path) -> None:
    enc = HashingEncoder(64)
    mem = Memory(store=make_store(tmp_path), encoder=enc, budget=Budget(5, policy="fifo"), state_scorer=False)
    mem.add_many(_turns("s1", GARDEN, 0, None), namespace=NS)
    mem.compress_segment(NS, "s1")
    mem.add_many(_turns("s2", TRAVEL, 4, None), namespace=NS)
    hot = mem.records(namespace=NS, include_archive=False)
    assert len(hot) == 4  # one summary + three travel turns: nothing evicted
    assert not [e for e in mem.store.audit_log(NS) if e["op"] == "evict"]
    mem.close()


def test_compress_keeps_mandatory_turns_hot(mem: Memory) -> None:
    rule = mem.add("The budget must stay under 500 EUR.", namespace=NS, type="hard_constraint", seq=9, segment="s1")
    summary = mem.compress_segment(NS, "s1")
    assert mem.get(rule, namespace=NS).tier is Tier.CORE
    assert summary.metadata["kept"] == [rule]
    with pytest.raises(InvalidInput, match="no hot turn"):
        mem.compress_segment(NS, "s1")  # only the hard constraint is left hot
    assert mem.get(rule, namespace=NS).tier is Tier.CORE


# --- windows ---------------------------------------------------------------------------------


def test_search_window_returns_neighbouring_turns_in_order(mem: Memory) -> None:
    plain = mem.search("Lisbon hotel venue", namespace=NS, k=3)
    assert all(h.window == () for h in plain)
    hits = mem.search("Lisbon hotel venue", namespace=NS, k=3, window=1)
    assert [h.record.id for h in hits] == [h.record.id for h in plain]  # ranking unchanged
    # the middle travel turn (the fusion may rank the session's opener above it: turn_position)
    (top,) = [h for h in hits if h.record.content == TRAVEL[1]]
    assert [r.content for r in top.window] == TRAVEL[0:3]
    assert [r.seq for r in top.window] == sorted(r.seq for r in top.window)  # type: ignore[type-var]
    assert all(r.segment == top.record.segment for h in hits for r in h.window if h.record.seq is not None)
    assert "window" in top.to_dict() and "window" not in plain[0].to_dict()


def test_window_stays_inside_the_segment(mem: Memory) -> None:
    hits = mem.search("phone", namespace=NS, k=1, window=2)  # GARDEN[3] is the last turn of s1
    assert hits[0].record.content == GARDEN[3]
    assert [r.content for r in hits[0].window] == GARDEN[1:4]


@pytest.mark.parametrize("bad", [-1, 51, True, 1.0])
def test_bad_window_is_refused(mem: Memory, bad: object) -> None:
    with pytest.raises(InvalidInput, match="window"):
        mem.search("garden", namespace=NS, window=bad)


# --- segment relevance and bad input -------------------------------------------------------------


def test_segment_index_similarity_matches_hand_computed_cosine(mem: Memory, encoder: HashingEncoder) -> None:
    index = SegmentIndex.build(mem.store, NS)
    assert index.segments == ["s1", "s2"]
    q = encoder.encode(["Lisbon flight"])[0]
    sims = index.similarity(q, ["s1", "s2", None, "unknown"])
    for seg, got in zip(("s1", "s2"), sims[:2], strict=True):
        vecs = np.stack([r.embedding for r in mem.records(namespace=NS) if r.segment == seg]).astype(np.float64)  # type: ignore[misc]
        mean = vecs.mean(axis=0)
        assert got == pytest.approx(float(mean @ q / np.linalg.norm(mean)), abs=1e-5)
    assert sims[1] > sims[0] and sims[2] == 0 and sims[3] == 0
    assert np.all(index.similarity(None, ["s1"]) == 0)


def test_undated_and_out_of_order_sessions_are_stored_and_summarised(
    make_store: StoreFactory, tmp_path: Path, encoder: HashingEncoder
) -> None:
    mem = Memory(store=make_store(tmp_path), encoder=encoder, state_scorer=False)
    mem.add_many(_turns("late", GARDEN, 0, datetime(2024, 1, 1, tzinfo=UTC)), namespace=NS)
    mem.add_many(_turns("early", TRAVEL, 4, datetime(2020, 1, 1, tzinfo=UTC)), namespace=NS)  # out of order
    mem.add_many(_turns("undated", ["No date was given for this session."], 7, None), namespace=NS)
    assert len(mem.records(namespace=NS)) == 8
    undated = mem.summarize(NS, "undated")
    assert undated.event_time is None and undated.metadata["first_time"] is None
    assert mem.summarize(NS, "early").event_time == datetime(2020, 1, 1, tzinfo=UTC)
    assert [r.seq for r in mem.records(namespace=NS) if r.seq is not None] == list(range(8))  # order kept
    with pytest.raises(InvalidInput, match="event_time"):  # an unparseable date is refused at the boundary
        mem.add("x", namespace=NS, event_time="8 May, 2023")
    assert len([r for r in mem.records(namespace=NS) if r.seq is not None]) == 8  # nothing lost
    mem.close()


# --- CLI ------------------------------------------------------------------------------------------


def test_cli_summarize_compress_and_search_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from retain.cli.app import app

    db = tmp_path / "cli.db"
    monkeypatch.setenv("RETAIN_DB", str(db))
    with Memory(db, encoder=HashingEncoder(64), state_scorer=False) as mem:
        mem.add_many(_turns("s1", GARDEN, 0, None), namespace=NS)
    runner = CliRunner()
    summarized = runner.invoke(app, ["summarize", "s1", "-n", NS, "--sentences", "1"])
    assert summarized.exit_code == 0, summarized.output
    assert "tomatoes" in summarized.output
    windowed = runner.invoke(app, ["search", "phone", "-n", NS, "-k", "1", "--window", "1", "--json"])
    assert windowed.exit_code == 0, windowed.output
    (hit,) = json.loads(windowed.output)
    assert [r["content"] for r in hit["window"]] == GARDEN[2:4]
    compressed = runner.invoke(app, ["compress", "s1", "-n", NS])
    assert compressed.exit_code == 0 and "4 turns archived" in compressed.output
    again = runner.invoke(app, ["compress", "s1", "-n", NS])
    assert again.exit_code == 2 and "no hot turn" in again.output
    missing = runner.invoke(app, ["summarize", "nope", "-n", NS])
    assert missing.exit_code == 2 and "no records" in missing.output


def test_index_summaries_stay_out_of_handoff(mem: Memory) -> None:
    rec = mem.summarize(NS, "s1")
    assert rec.id not in mem.handoff(NS, fmt="json").text
    compressed = mem.compress_segment(NS, "s2")
    assert compressed.id in mem.handoff(NS, fmt="json").text  # a compressed summary is a memory


def test_a_segment_summary_never_carries_sensitive_records() -> None:
    m = Memory(encoder=HashingEncoder(dim=384))
    m.add("We talked about the hotel booking in Lisbon.", namespace="h", segment="s1", seq=1)
    m.add(
        "The patient was diagnosed with diabetes type 2 last spring.",
        namespace="h",
        segment="s1",
        seq=2,
        type="sensitive",
    )
    m.add("The hotel is near the station in Lisbon, mail bob@example.com.", namespace="h", segment="s1", seq=3)
    m.summarize("h", "s1")
    m.compress_segment("h", "s1")
    text = m.handoff("h").text
    assert "diabetes" not in text and "bob@example.com" not in text
