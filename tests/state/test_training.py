"""retain.state.training: fitting the state scorer."""

from __future__ import annotations

import numpy as np

from retain import HashingEncoder
from retain.state.agent import StateEncoder
from retain.state.candidates import candidates_from_records
from retain.state.scorer import StateScorer
from retain.state.training import SamExample, train_state_scorer
from sam_support import (
    DIM,
    make_records,
)


def test_training_learns_to_find_what_the_state_needs() -> None:
    """Synthetic probes: the needed record is the one matching the subgoal, the query is terse and the
    content score points elsewhere; after training the needed record ranks first far more often."""
    enc = HashingEncoder(dim=DIM)
    se = StateEncoder(enc)
    rng = np.random.default_rng(0)
    words = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
    topics = [f"topic {w} item" for w in words]
    examples = []
    for i in range(40):
        pick = rng.choice(len(topics), size=6, replace=False)
        recs = make_records([topics[j] + f" note {i}" for j in pick], enc)
        target = int(rng.integers(6))
        content = rng.random(6) * 0.5
        content[(target + 1) % 6] = 0.9
        examples.append(
            SamExample(
                state=se.encode({"phase": "work", "subgoals": [topics[pick[target]]]}),
                phase="work",
                cands=candidates_from_records(recs),
                content=content,
                needed=np.arange(6) == target,
                query_terms=0,
                terse=True,
                group=f"s{i % 4}",
            )
        )
    train, test = examples[:30], examples[30:]
    model = train_state_scorer(train, epochs=150, rank=2, prior_rank=2)

    def top1(scorer: StateScorer | None) -> float:
        hits = 0
        for e in test:
            scores = (
                e.content
                if scorer is None
                else scorer.score(e.state, e.phase, e.cands, e.content, query_terms=0, terse=True)[0]
            )
            hits += int(np.argmax(scores) == int(np.flatnonzero(e.needed)[0]))
        return hits / len(test)

    assert top1(model) >= top1(None) + 0.5
