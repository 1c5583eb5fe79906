"""Calibrated relevance: [0, 1], the same scale in every preset, a threshold that empties a nonsense query."""

from __future__ import annotations

import json

import numpy as np
import pytest

from retain import Memory
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.retrieval.calibration import NOTHING_RELEVANT, Platt, RelevanceCalibration, coverage, relevance
from retain.retrieval.fusion import PRESETS

PRESET_NAMES = sorted(PRESETS)


@pytest.fixture
def two_records() -> Memory:
    mem = Memory(encoder=HashingEncoder(64))
    mem.add("I am allergic to penicillin and must never be given it.", namespace="n", actor="t")
    mem.add("The team offsite is in Lisbon in May.", namespace="n", actor="t")
    yield mem
    mem.close()


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_exact_topic_match_scores_high_in_two_record_store(two_records: Memory, preset: str) -> None:
    hits = two_records.search("allergic to penicillin", namespace="n", config=preset)
    assert hits[0].record.content.startswith("I am allergic")
    assert hits[0].relevance >= 0.5  # the report: 0.008 before calibration
    assert hits[0].scores["relevance"] == hits[0].relevance
    assert all(h.relevance < NOTHING_RELEVANT for h in hits[1:])


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_nonsense_query_returns_nothing_at_documented_threshold(two_records: Memory, preset: str) -> None:
    assert two_records.search("qwzx plorb fentic vashu", namespace="n", config=preset, threshold=NOTHING_RELEVANT) == []
    kept = two_records.search("penicillin", namespace="n", config=preset, threshold=NOTHING_RELEVANT)
    assert [h.record.content[:4] for h in kept] == ["I am"]


def test_same_relevance_in_every_preset(two_records: Memory) -> None:
    seen: dict[str, set[float]] = {}
    for preset in PRESET_NAMES:
        for hit in two_records.search("team offsite Lisbon", namespace="n", config=preset):
            seen.setdefault(hit.record.id, set()).add(round(hit.relevance, 9))
    assert seen and all(len(values) == 1 for values in seen.values())


def test_scores_in_unit_interval_and_monotone_in_evidence() -> None:
    model = RelevanceCalibration.load()
    grid = np.linspace(-1, 1, 41)
    for encoder in [*model.by_encoder, "unknown-encoder"]:
        for cover in np.linspace(0, 1, 11):
            p = model.relevance(encoder, grid, np.full(len(grid), cover))
            assert ((p >= 0) & (p <= 1)).all()
            assert (np.diff(p) >= 0).all()  # more cosine, never less relevance
        for cos in grid:
            p = model.relevance(encoder, np.full(11, cos), np.linspace(0, 1, 11))
            assert (np.diff(p) >= 0).all() and p[-1] > p[0]  # coverage always counts


def test_coverage_counts_distinct_query_terms(two_records: Memory) -> None:
    records = [h.record for h in two_records.search("penicillin Lisbon", namespace="n", config="dense", allow_raw=True)]
    by_content = {r.content[:4]: r for r in records}
    cov = coverage(["penicillin", "lisbon", "zebra"], [by_content["I am"], by_content["The "]])
    assert cov.tolist() == pytest.approx([1 / 3, 1 / 3])
    assert coverage([], [by_content["I am"]]).tolist() == [0.0]
    assert relevance([], ["x"], None, "hashing-64").shape == (0,)


def test_negative_weight_refused() -> None:
    with pytest.raises(InvalidInput, match=">= 0"):
        Platt(("cosine",), (-1.0,), 0.0)
    body = json.loads(RelevanceCalibration.load().to_json())
    body["fallback"] = {"features": ["cosine"], "weights": [1.0], "bias": 0.0}
    with pytest.raises(InvalidInput, match="coverage only"):
        RelevanceCalibration.from_json(json.dumps(body))
    with pytest.raises(InvalidInput, match="malformed"):
        RelevanceCalibration.from_json("{}")
