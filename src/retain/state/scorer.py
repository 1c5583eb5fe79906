"""The state-conditioned scorer of SAM (state-adaptive memory): the agent's task state, not only the
query words, ranks memory.

For a candidate memory m with embedding e (L2-normalised, (d,) float32) and an encoded state S
(:class:`~retain.state.agent.EncodedState`)::

    w(S)        = 1 + W2 tanh(W1 [s_whole ; s_phase])                 state-generated reweighting, (d,)
    reweighted  = cos(w(S) * e, s_part) for s_part in (whole, goal, result)
    prior       = onehot(type(m)) . (b + B tanh(P^T s_phase))          learned type x phase prior
    state_score = sigmoid(theta . x(S, m) + gamma . reweighted + prior)
    alpha       = sigmoid(a . [1, log(1 + query terms), terse, top content, phase known])   (0 without a state)
    score       = alpha * state_score + (1 - alpha) * content_score(query, m)

``x(S, m)`` are the state features of :mod:`retain.state.features`; ``content_score`` is the learned
fusion of :mod:`retain.retrieval.fusion`. ``s_phase`` is the phase name's embedding plus a learned
vector for phases seen in training (none for unseen ones: the hit breakdown then says
``phase_known = 0``). All parameters are fitted by :func:`retain.state.training.train_state_scorer`
on (state, needed memory) pairs from scenario files; :meth:`StateScorer.load` reads the shipped
model, ``retain/models/sam.json``.

Scoring is numpy only: for n candidates it costs a few (n, d) x (d,) products.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.numeric.kernels import blocked_product
from retain.state.agent import EncodedState
from retain.state.candidates import TYPES, Candidates
from retain.state.features import DEFAULT_HALF_LIFE_S, STATE_FEATURES, feature_matrix

__all__ = [
    "ALPHA_INPUTS",
    "REWEIGHTED",
    "StateScorer",
]

FloatArray = npt.NDArray[np.float64]

REWEIGHTED: tuple[str, ...] = ("whole_rw", "goal_rw", "result_rw")
"""The state parts e is compared with after reweighting by w(S); one ``gamma`` weight each."""
ALPHA_INPUTS: tuple[str, ...] = ("bias", "log_query_terms", "terse", "top_content", "phase_known")
"""Inputs of the state-vs-content mix ``alpha``, in the order of its weights ``a``."""


def _rows(value: Any, shape: tuple[int, ...], name: str) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise InvalidInput(f"state scorer: {name} must be finite with shape {shape}, got {arr.shape}")
    return arr


class StateScorer:
    """The learned SAM scorer (see the module docstring for the model).

    Args:
        params: arrays by name (``theta`` (F,), ``gamma`` (3,), ``type_bias`` (T,), ``B`` (T, r2),
            ``P`` (d, r2), ``W1`` (r, 2d), ``W2`` (d, r), ``alpha`` (5,), ``mean``/``scale`` (F,)).
        phases: learned vector per phase seen in training, name -> (d,).
        half_life_s: half-life of the event-time decay feature (seconds).
        meta: free-form training record (data, command, figures).

    Raises:
        InvalidInput: missing, non-finite or mis-shaped parameters.
    """

    def __init__(
        self,
        params: Mapping[str, Any],
        *,
        phases: Mapping[str, Any] | None = None,
        half_life_s: float = DEFAULT_HALF_LIFE_S,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        if not (isinstance(half_life_s, int | float) and half_life_s > 0 and math.isfinite(half_life_s)):
            raise InvalidInput(f"half_life_s: must be a positive number of seconds, got {half_life_s!r}")
        f, t = len(STATE_FEATURES), len(TYPES)
        try:
            d = int(np.asarray(params["P"]).shape[0])
            r2 = int(np.asarray(params["P"]).shape[1])
            r = int(np.asarray(params["W1"]).shape[0])
            self.theta = _rows(params["theta"], (f,), "theta")
            self.gamma = _rows(params["gamma"], (len(REWEIGHTED),), "gamma")
            self.type_bias = _rows(params["type_bias"], (t,), "type_bias")
            self.B = _rows(params["B"], (t, r2), "B")
            self.P = _rows(params["P"], (d, r2), "P")
            self.W1 = _rows(params["W1"], (r, 2 * d), "W1")
            self.W2 = _rows(params["W2"], (d, r), "W2")
            self.alpha = _rows(params["alpha"], (len(ALPHA_INPUTS),), "alpha")
            self.mean = _rows(params["mean"], (f,), "mean")
            self.scale = _rows(params["scale"], (f,), "scale")
            self.bias = float(params.get("bias", 0.0))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise InvalidInput(f"state scorer: bad parameters ({exc})") from exc
        if np.any(self.scale <= 0):
            raise InvalidInput("state scorer: scale must be > 0")
        self.dim = d
        self.phases = {str(k): _rows(v, (d,), f"phases[{k!r}]") for k, v in (phases or {}).items()}
        self.half_life_s = float(half_life_s)
        self.meta = dict(meta or {})

    # --- scoring ----------------------------------------------------------------------------------

    def phase_vector(self, state: EncodedState, phase: str | None) -> tuple[FloatArray, bool]:
        """s_phase and whether the phase was seen in training."""
        base = state.phase.astype(np.float64)
        learned = self.phases.get(phase) if phase else None
        return (base + learned, True) if learned is not None else (base, False)

    def score(
        self,
        state: EncodedState,
        phase: str | None,
        cands: Candidates,
        content: FloatArray,
        *,
        query_terms: int,
        terse: bool,
        empty_state: bool = False,
    ) -> tuple[FloatArray, dict[str, FloatArray], float]:
        """Score n candidates.

        Args:
            state: the encoded state; phase: its phase name (None when unknown).
            cands: the candidates; content: (n,) content scores in [0, 1] (higher = more relevant).
            query_terms: distinct content terms of the query; terse: :func:`retain.text.lexical.is_terse` of the query.
            empty_state: the state carries nothing: alpha = 0 (content scoring only).

        Returns:
            (final (n,) float64 in [0, 1], higher = more relevant; breakdown name -> (n,) arrays
            ``content``, ``state``, ``prior``, ``importance``, ``alpha``, ``phase_known``; alpha).

        Raises:
            InvalidInput: the candidates' width differs from the model's, or content has another length.
        """
        n = cands.vectors.shape[0]
        content = np.asarray(content, dtype=np.float64)
        if content.shape != (n,):
            raise InvalidInput(f"content: expected ({n},) scores, got {content.shape}")
        if n and cands.vectors.shape[1] != self.dim:
            raise InvalidInput(f"candidates: {cands.vectors.shape[1]} dims, the state scorer expects {self.dim}")
        s_phase, known = self.phase_vector(state, phase)
        w, parts = self._reweighting(state, s_phase)
        features, dots = feature_matrix(state, phase, cands, self.half_life_s, w * parts)
        x = (features - self.mean) / self.scale
        reweighted = self._reweighted(cands, w, parts, dots)
        h = np.tanh(s_phase @ self.P)
        prior = (self.type_bias + self.B @ h)[cands.types] if n else np.zeros(0)
        linear = blocked_product(x, self.theta[:, None])[:, 0] if n else np.zeros(0)
        logit = linear + reweighted @ self.gamma + prior + self.bias
        state_score = 1.0 / (1.0 + np.exp(-np.clip(logit, -30, 30)))
        top = float(content.max()) if n else 0.0
        if empty_state:
            alpha = 0.0
        else:
            z = self.alpha @ np.array([1.0, math.log1p(query_terms), float(terse), top, float(known)])
            alpha = float(1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))))
        final = alpha * state_score + (1.0 - alpha) * content
        breakdown = {
            "content": content,
            "state": state_score,
            "prior": prior,
            "importance": cands.importance,
            "alpha": np.full(n, alpha),
            "phase_known": np.full(n, float(known)),
        }
        return final, breakdown, alpha

    def _reweighting(self, state: EncodedState, s_phase: FloatArray) -> tuple[FloatArray, FloatArray]:
        """w(S) ((d,) float64) and the parts it is compared with, rows whole, goal, result ((3, d))."""
        w = 1.0 + self.W2 @ np.tanh(self.W1 @ np.concatenate([state.whole, s_phase]))
        return w, np.stack([state.whole, state.goal, state.result]).astype(np.float64)

    def _reweighted(self, cands: Candidates, w: FloatArray, parts: FloatArray, dots: FloatArray) -> FloatArray:
        """(n, 3) cos(w * e, s_part) for s_part in whole, goal, result (0 for absent parts), given
        ``dots`` = e . (w * s_part) ((n, 3))."""
        E = cands.vectors
        n = E.shape[0]
        out = np.zeros((n, len(REWEIGHTED)))
        if n == 0:
            return out
        squares = np.square(E)  # (n, d) float32: |w * e|^2 = e^2 . w^2
        norms = np.sqrt(np.maximum(blocked_product(squares, np.square(w).astype(np.float32)[:, None])[:, 0], 1e-12))
        pn = np.linalg.norm(parts, axis=1)
        present = pn > 0
        out[:, present] = dots[:, present] / (norms[:, None] * pn[present])
        return out

    # --- persistence ------------------------------------------------------------------------------

    def to_json(self) -> str:
        """Serialise to JSON (parameters rounded to 6 decimals)."""
        names = ("theta", "gamma", "type_bias", "B", "P", "W1", "W2", "alpha", "mean", "scale")
        doc = {
            "format": "retain-sam/1",
            "features": list(STATE_FEATURES),
            "types": [t.value for t in TYPES],
            "half_life_s": self.half_life_s,
            "bias": round(self.bias, 6),
            "params": {k: np.round(getattr(self, k), 6).tolist() for k in names},
            "phases": {k: np.round(v, 6).tolist() for k, v in self.phases.items()},
            "meta": self.meta,
        }
        return json.dumps(doc)

    @classmethod
    def from_json(cls, text: str) -> StateScorer:
        """Inverse of :meth:`to_json`. Raises InvalidInput on another format or feature set."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"state scorer: not JSON ({exc})") from exc
        if not isinstance(doc, dict) or doc.get("format") != "retain-sam/1":
            raise InvalidInput("state scorer: not a retain-sam/1 document")
        if doc.get("features") != list(STATE_FEATURES) or doc.get("types") != [t.value for t in TYPES]:
            raise InvalidInput("state scorer: fitted on another feature or type set; retrain it (retain train-sam)")
        params = dict(doc["params"]) | {"bias": doc.get("bias", 0.0)}
        return cls(
            params,
            phases=doc.get("phases"),
            half_life_s=doc.get("half_life_s", DEFAULT_HALF_LIFE_S),
            meta=doc.get("meta"),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> StateScorer:
        """Load from ``path``, or the model shipped in ``retain/models/sam.json``."""
        if path is None:
            text = resources.files("retain").joinpath("models/sam.json").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        return cls.from_json(text)

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path``."""
        Path(path).write_text(self.to_json(), encoding="utf-8")
