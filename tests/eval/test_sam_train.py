"""retain.eval.sam_train: probes replayed from scenario files, gold-typed examples, rank and score metrics."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from retain import HashingEncoder
from retain.errors import InvalidInput
from retain.state.candidates import TYPES


def test_probe_examples_replay_a_scenario_and_label_its_needed_events() -> None:
    import json
    from pathlib import Path

    from retain.eval.sam_train import probe_examples

    path = Path(__file__).resolve().parents[2] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    examples = probe_examples([path], HashingEncoder(dim=384))
    assert [p.query for p in examples] == [p["query"] for p in doc["probes"]]
    for p, probe in zip(examples, doc["probes"], strict=True):
        assert p.needed == frozenset(probe["needed"])
        labelled = {eid for eid, flag in zip(p.event_ids, p.example.needed, strict=True) if flag}
        assert labelled == p.needed & set(p.event_ids)


def test_gold_typed_examples_carry_each_pool_event_gold_type_and_scoring_keeps_the_classifier_types() -> None:
    import json
    from pathlib import Path

    from retain.eval.sam_train import gold_typed, probe_examples, training_examples

    path = Path(__file__).resolve().parents[2] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    gold = {e["id"]: e["gold"]["type"] for e in doc["events"] if e.get("gold")}
    probes = probe_examples([path], HashingEncoder(dim=384))
    typed = gold_typed(probes)
    differs = 0
    for p, g in zip(probes, typed, strict=True):
        assert [TYPES[t].value for t in g.cands.types] == [gold[i] for i in p.event_ids]
        differs += int((g.cands.types != p.example.cands.types).sum())
        assert g.needed is p.example.needed and g.content is p.example.content
    assert differs > 0  # the classifier is not the answer key: the test would pass vacuously otherwise
    assert [e.cands.types.tolist() for e in training_examples(probes, "predicted")] == [
        p.example.cands.types.tolist() for p in probes
    ]
    with pytest.raises(InvalidInput, match="train_types"):
        training_examples(probes, "oracle")  # type: ignore[arg-type]
    bare = [replace(probes[0], gold_types=None)]
    with pytest.raises(InvalidInput, match="no gold types"):
        gold_typed(bare)


def test_score_metrics_ranks_any_scores_as_rank_metrics_and_refuses_misfits() -> None:
    from pathlib import Path

    from retain.eval.sam_train import probe_examples, rank_metrics, score_metrics

    path = Path(__file__).resolve().parents[2] / "scenarios" / "train" / "cs-telecom-fibre-outage-001.json"
    probes = probe_examples([path], HashingEncoder(dim=384))
    assert score_metrics(probes, [p.example.content for p in probes]) == rank_metrics(probes, None)
    # every needed event first: recall@5 = min(5, |needed in pool|) / |needed|, MRR 1
    oracle = [p.example.needed.astype(np.float64) for p in probes]
    usable = [p for p in probes if p.needed]
    expected = np.mean([min(5, int(p.example.needed.sum())) / len(p.needed) for p in usable])
    figures = score_metrics(probes, oracle)["all"]
    assert figures["probes"] == len(usable) and figures["mrr"] == 1.0
    assert figures["recall@5"] == round(float(expected), 4)
    # every needed event last: no needed event in the top 5 of a pool of more than 5 + |needed|
    worst = score_metrics(probes, [-s for s in oracle])["all"]
    assert worst["recall@5"] == 0.0 and worst["mrr"] < 0.2
    with pytest.raises(InvalidInput, match="arrays for"):
        score_metrics(probes, oracle[:-1])
    with pytest.raises(InvalidInput, match=r"scores\[0\]"):
        score_metrics(probes, [oracle[0][:-1], *oracle[1:]])
