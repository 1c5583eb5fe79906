"""Shared helpers of the state tests (tests/state): encoders, records, a zero scorer, and the state
features written out one record at a time as the reference the vectorised code is tested against."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from retain import HashingEncoder, Memory
from retain.record import MemoryRecord, MemoryType, new_id
from retain.state.candidates import TYPES
from retain.state.features import STATE_FEATURES
from retain.state.scorer import StateScorer

DIM = 64


class CountingEncoder(HashingEncoder):
    """HashingEncoder that counts the texts it was asked to embed."""

    def __init__(self, dim: int = DIM) -> None:
        super().__init__(dim=dim)
        self.calls = 0

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += len(texts)
        return super().encode(texts)


def zero_scorer(dim: int, **changes: object) -> StateScorer:
    f, t = len(STATE_FEATURES), len(TYPES)
    params: dict[str, object] = {
        "theta": np.zeros(f),
        "gamma": np.zeros(3),
        "type_bias": np.zeros(t),
        "B": np.zeros((t, 2)),
        "P": np.zeros((dim, 2)),
        "W1": np.zeros((2, 2 * dim)),
        "W2": np.zeros((dim, 2)),
        "alpha": np.array([0.0, 0.0, 0.0, 0.0, 0.0]),
        "mean": np.zeros(f),
        "scale": np.ones(f),
    }
    params.update(changes)
    return StateScorer(params)


def make_records(texts: Sequence[str], enc: HashingEncoder) -> list[MemoryRecord]:
    vectors = enc.encode(list(texts))
    return [
        MemoryRecord(id=new_id(), namespace="n", content=t, seq=i, embedding=v)
        for i, (t, v) in enumerate(zip(texts, vectors, strict=True))
    ]


def memory_with_scorer() -> tuple[Memory, StateScorer]:
    theta = np.zeros(len(STATE_FEATURES))
    theta[STATE_FEATURES.index("goal_cos")] = 8.0
    theta[STATE_FEATURES.index("core")] = 3.0
    scorer = zero_scorer(DIM, theta=theta, alpha=np.array([0.0, -2.0, 3.0, 0.0, 0.0]))
    return Memory(encoder=HashingEncoder(dim=DIM), state_scorer=scorer), scorer


def random_records(rng: np.random.Generator, n: int, enc: HashingEncoder) -> list[MemoryRecord]:
    from datetime import UTC, datetime, timedelta

    from retain.record import Tier

    words = [
        "budget",
        "hotel",
        "flight",
        "train",
        "museum",
        "allergy",
        "deadline",
        "invoice",
        "refund",
        "courier",
        "tag",
        "bag",
        "预算",
        "酒店",
        "Aug 8",
        "4,800",
        "7am",
        "2026-08-18",
        "19:30",
    ]
    roles = ["user", "Tool", "assistant", "agent-7", "system", "Bob"]
    texts = [" ".join(rng.choice(words, size=5)) for _ in range(n)]
    vectors = enc.encode(texts) if n else np.zeros((0, DIM), np.float32)
    return [
        MemoryRecord(
            id=new_id(),
            namespace="n",
            content=texts[i],
            type=TYPES[int(rng.integers(len(TYPES)))],
            role=roles[int(rng.integers(len(roles)))],
            seq=int(rng.integers(0, 8)) if rng.random() < 0.8 else None,  # ties and unknown positions
            event_time=datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=int(rng.integers(0, 300)))
            if rng.random() < 0.6
            else None,
            tier=Tier.CORE if rng.random() < 0.2 else Tier.DYNAMIC,
            importance=float(rng.random()),
            access_count=int(rng.integers(0, 5)),
            metadata={"phase": f"p{rng.integers(3)}"} if rng.random() < 0.7 else {},
            embedding=vectors[i],
        )
        for i in range(n)
    ]


def reference_features(
    state: object, phase: str | None, recs: Sequence[MemoryRecord], half_life_s: float
) -> np.ndarray:
    """STATE_FEATURES written out one record at a time in float64 (the definition, not the fast path)."""
    import math

    from retain.record import Tier
    from retain.state.candidates import content_terms
    from retain.text.values import canonical_values

    def cos(e: np.ndarray, v: np.ndarray) -> float:
        return float(np.dot(e.astype(np.float64), v.astype(np.float64)))

    def share(terms: frozenset[str], wanted: frozenset[str]) -> float:
        return len(terms & wanted) / len(wanted) if wanted else 0.0

    positions = [float(r.seq) if r.seq is not None else float(i) for i, r in enumerate(recs)]
    newest = max(positions, default=0.0)
    times = [r.event_time.timestamp() for r in recs if r.event_time is not None]
    newest_time = max(times) if times else math.nan
    texts = state.texts  # type: ignore[attr-defined]
    goal_terms = content_terms(" ".join(texts.get("goal", ())))
    result_terms = content_terms(" ".join(texts.get("result", ())))
    constraint_terms = [content_terms(c) for c in texts.get("constraints", ())]
    constraint_values = [v for v in (canonical_values(c) for c in texts.get("constraints", ())) if v]
    goal_values = canonical_values(" ".join(texts.get("goal", ())))
    result_values = canonical_values(" ".join(texts.get("result", ())))
    record_values = [canonical_values(r.content) for r in recs]

    def setter(i: int) -> float:
        """1 when record i is, for some constraint, the newest (first on ties) with the best share > 0."""
        for wanted in constraint_values:
            shares = [share(v, wanted) for v in record_values]
            best = max(shares)
            if best > 0 and shares[i] == best:
                newest = max(positions[j] for j in range(len(recs)) if shares[j] == best)
                first = min(j for j in range(len(recs)) if shares[j] == best and positions[j] == newest)
                if first == i:
                    return 1.0
        return 0.0

    def newest_of(keep: object) -> int | None:
        """The record of highest position (the first on ties) whose lower-cased role passes ``keep``."""
        rows = [j for j, o in enumerate(recs) if keep(o.role.lower())]  # type: ignore[operator]
        return max(rows, key=lambda j: (positions[j], -j)) if rows else None

    last = {
        "last": newest_of(lambda role: True),
        "last_user": newest_of(lambda role: role == "user"),
        "last_tool": newest_of(lambda role: role in {"tool", "system", "function", "observation"}),
        "last_agent": newest_of(lambda role: role.startswith(("agent", "assistant"))),
    }
    rows = []
    for i, r in enumerate(recs):
        e = r.embedding
        terms = content_terms(r.content)
        newest_cos = {
            f"{name}_cos": 0.0 if j is None else cos(e, recs[j].embedding)  # type: ignore[arg-type]
            for name, j in last.items()
        }
        newest_share = {
            f"{name}_overlap": 0.0 if last[name] is None else share(terms, content_terms(recs[last[name]].content))  # type: ignore[index]
            for name in last
        }
        same_type_newer = sum(
            1
            for j, o in enumerate(recs)
            if o.type is r.type and (positions[j] > positions[i] or (positions[j] == positions[i] and j < i))
        )
        age = max(newest - positions[i], 0.0)
        if r.event_time is None or math.isnan(newest_time):
            decay = 0.5
        else:
            decay = math.exp(-math.log(2) * max(newest_time - r.event_time.timestamp(), 0.0) / half_life_s)
        written = r.metadata.get("phase") or None
        same = 0.5 if not phase else 1.0 if written == phase else 0.0 if written else 0.5
        role = r.role.lower()
        goal_cos, result_cos = cos(e, state.goal), cos(e, state.result)  # type: ignore[attr-defined]
        goal_share = share(terms, goal_terms)
        hard = float(r.type is MemoryType.HARD_CONSTRAINT)
        pref = float(r.type is MemoryType.SOFT_PREFERENCE)
        obs = float(r.type is MemoryType.OBSERVATION)
        row = {
            "goal_cos": goal_cos,
            "result_cos": result_cos,
            "constraint_max": max((cos(e, c) for c in state.constraints), default=0.0),  # type: ignore[attr-defined]
            "open_max": max((cos(e, q) for q in state.open), default=0.0),  # type: ignore[attr-defined]
            "whole_cos": cos(e, state.whole),  # type: ignore[attr-defined]
            "latest": float(age == 0),
            "log_age_events": math.log1p(age),
            "time_decay": decay,
            "same_phase": same,
            "earlier_phase_observation": float(bool(phase) and obs == 1.0 and same == 0.0),
            "core": float(r.tier is Tier.CORE),
            "importance": r.importance,
            "log_access": math.log1p(r.access_count),
            "newest_of_type": float(same_type_newer == 0),
            "log_type_rank": math.log1p(same_type_newer),
            "role_user": float(role == "user"),
            "role_tool": float(role in {"tool", "system", "function", "observation"}),
            "role_agent": float(role.startswith(("agent", "assistant"))),
            "goal_overlap": goal_share,
            "result_overlap": share(terms, result_terms),
            "constraint_overlap": max((share(terms, w) for w in constraint_terms), default=0.0),
            "hard_x_goal": hard * goal_cos,
            "hard_x_goal_overlap": hard * goal_share,
            "pref_x_goal": pref * goal_cos,
            "pref_x_goal_overlap": pref * goal_share,
            "observation_x_result": obs * result_cos,
            "value_match": max((share(record_values[i], w) for w in constraint_values), default=0.0),
            "value_setter": setter(i),
            "goal_value_match": share(record_values[i], goal_values),
            "result_value_match": share(record_values[i], result_values),
            **newest_cos,
            **newest_share,
        }
        rows.append([row[name] for name in STATE_FEATURES])
    return np.array(rows, dtype=np.float64).reshape(len(recs), len(STATE_FEATURES))
