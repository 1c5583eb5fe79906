"""Fitting the state scorer (:class:`~retain.state.scorer.StateScorer`) on (state, needed memory) pairs.

The loss is listwise: over each probe's candidates, the softmax of the scorer's final scores divided
by a temperature, against the needed candidates (uniform over them); plus an L2 penalty. Adam (torch,
CPU), full batch. The torch graph in :func:`_loss` computes :meth:`StateScorer.score` term by term on
a padded batch of every probe. torch is imported on first use, not when this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.state.agent import EncodedState
from retain.state.candidates import TYPES, Candidates
from retain.state.features import DEFAULT_HALF_LIFE_S, STATE_FEATURES, state_features
from retain.state.scorer import ALPHA_INPUTS, REWEIGHTED, StateScorer

if TYPE_CHECKING:
    import torch

__all__ = [
    "SamExample",
    "train_state_scorer",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SamExample:
    """One probe for training: the state, its candidates with content scores, and which are needed.

    Attributes:
        state: encoded state; phase: its phase name. cands: candidates; content: (n,) in [0, 1].
        needed: (n,) bool. query_terms, terse: as :meth:`StateScorer.score`. group: the scenario id
            (folds never split a scenario).
    """

    state: EncodedState
    phase: str | None
    cands: Candidates
    content: FloatArray
    needed: npt.NDArray[np.bool_]
    query_terms: int
    terse: bool
    group: str


def train_state_scorer(
    examples: Sequence[SamExample],
    *,
    rank: int = 8,
    prior_rank: int = 4,
    epochs: int = 300,
    lr: float = 0.02,
    l2: float = 1e-3,
    temperature: float = 0.1,
    min_phase_groups: int = 2,
    half_life_s: float = DEFAULT_HALF_LIFE_S,
    seed: int = 0,
    meta: Mapping[str, Any] | None = None,
) -> StateScorer:
    """Fit a :class:`StateScorer` by a listwise softmax loss over each probe's candidates.

    loss = mean over probes, over needed candidates i of -log softmax(score / temperature)_i, plus
    ``l2`` * (sum of squared weights). Adam (torch, CPU), full batch, ``epochs`` steps. A learned phase
    vector is fitted only for phases present in at least ``min_phase_groups`` scenarios. ``rank`` is
    the width of the reweighting's hidden layer (W1, W2), ``prior_rank`` that of the type x phase prior
    (B, P). Deterministic for a given ``seed``.

    Raises:
        InvalidInput: no example with a needed candidate, or mixed embedding widths.
    """
    import torch

    usable, d = _usable(examples)
    torch.manual_seed(seed)
    feats = [state_features(e.state, e.phase, e.cands, half_life_s=half_life_s) for e in usable]
    allx = np.vstack(feats)
    mean, scale = allx.mean(axis=0), allx.std(axis=0)
    scale[scale < 1e-6] = 1.0
    phase_index = _phase_index(usable, min_phase_groups)
    params = _init_params(d, len(phase_index), rank=rank, prior_rank=prior_rank)
    batch = _batch(usable, feats, mean, scale, phase_index)
    opt = torch.optim.Adam(params.trained(), lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        loss = _loss(params, batch, temperature=temperature, l2=l2)
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
    return _scorer(params, mean, scale, phase_index, half_life_s=half_life_s, meta=meta)


def _usable(examples: Sequence[SamExample]) -> tuple[list[SamExample], int]:
    """The examples with a needed candidate, and their embedding width.

    Raises:
        InvalidInput: none has a needed candidate, or their embeddings have several widths.
    """
    usable = [e for e in examples if e.needed.any() and len(e.needed) > 0]
    if not usable:
        raise InvalidInput("examples: none has a needed candidate")
    dims = {e.cands.vectors.shape[1] for e in usable}
    if len(dims) != 1:
        raise InvalidInput(f"examples: embeddings of several widths {sorted(dims)}")
    return usable, dims.pop()


def _phase_index(usable: Sequence[SamExample], min_phase_groups: int) -> dict[str, int]:
    """Phase name -> row of its learned vector, for the phases present in at least
    ``min_phase_groups`` scenarios (``SamExample.group``), in sorted order."""
    groups_of: dict[str, set[str]] = {}
    for e in usable:
        if e.phase:
            groups_of.setdefault(e.phase, set()).add(e.group)
    learned_phases = sorted(p for p, g in groups_of.items() if len(g) >= min_phase_groups)
    return {p: i for i, p in enumerate(learned_phases)}


@dataclass(frozen=True, slots=True)
class _Params:
    """The trainable tensors (float64, requiring grad), named and shaped as in :class:`StateScorer`;
    ``phase_vecs`` ((max(1, phases), d)) holds one learned vector per learned phase."""

    theta: torch.Tensor
    gamma: torch.Tensor
    type_bias: torch.Tensor
    B: torch.Tensor
    P: torch.Tensor
    W1: torch.Tensor
    W2: torch.Tensor
    alpha: torch.Tensor
    bias: torch.Tensor
    phase_vecs: torch.Tensor

    def trained(self) -> list[torch.Tensor]:
        """Every tensor the optimiser updates."""
        return [
            self.theta, self.gamma, self.type_bias, self.B, self.P, self.W1, self.W2, self.alpha, self.bias,
            self.phase_vecs,
        ]  # fmt: skip

    def penalised(self) -> tuple[torch.Tensor, ...]:
        """The tensors under the L2 penalty (all but ``alpha`` and ``bias``)."""
        return (self.theta, self.gamma, self.type_bias, self.B, self.P, self.W1, self.W2, self.phase_vecs)


def _init_params(d: int, n_phases: int, *, rank: int, prior_rank: int) -> _Params:
    """Initial parameters: zeros, or small Gaussian values where a zero start would not learn; drawn
    from torch's global generator in a fixed order (the caller seeds it)."""
    import torch

    def param(*shape: int, std: float = 0.0) -> torch.Tensor:
        return (torch.randn(*shape, dtype=torch.float64) * std).requires_grad_()

    t, f = len(TYPES), len(STATE_FEATURES)
    theta, gamma, type_bias = param(f), param(len(REWEIGHTED)), param(t)
    B, P = param(t, prior_rank, std=0.01), param(d, prior_rank, std=0.05)
    W1, W2 = param(rank, 2 * d, std=0.02), param(d, rank)
    alpha = torch.tensor([0.0, -0.5, 1.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    bias = param(1)
    phase_vecs = param(max(1, n_phases), d)
    return _Params(theta, gamma, type_bias, B, P, W1, W2, alpha, bias, phase_vecs)


@dataclass(frozen=True, slots=True)
class _Batch:
    """Every probe's candidates padded to one (m, n_max) batch, as torch tensors (float64 unless said);
    padded slots are masked out of the softmax.

    Attributes:
        X: (m, n_max, F) standardised state features. E: (m, n_max, d) embeddings.
        T: (m, n_max) int64 type index. C: (m, n_max) content scores. valid: (m, n_max) bool, False on
        padding. pos: (m, n_max) the target distribution (1 / needed count on needed candidates).
        parts: (m, 3, d) the state's whole, goal and result vectors; pn: (m, 3) their norms (>= 1e-12).
        phase0: (m, d) the phase name's embedding. pidx: (m,) int64 row of the learned phase vector;
        known: (m,) 1.0 where there is one. ain: (m, 5) the alpha inputs (:data:`ALPHA_INPUTS`).
    """

    X: torch.Tensor
    E: torch.Tensor
    T: torch.Tensor
    C: torch.Tensor
    valid: torch.Tensor
    pos: torch.Tensor
    parts: torch.Tensor
    pn: torch.Tensor
    phase0: torch.Tensor
    pidx: torch.Tensor
    known: torch.Tensor
    ain: torch.Tensor


def _batch(
    usable: Sequence[SamExample],
    feats: Sequence[FloatArray],
    mean: FloatArray,
    scale: FloatArray,
    phase_index: Mapping[str, int],
) -> _Batch:
    """The :class:`_Batch` of ``usable`` (their features ``feats``, standardised by ``mean`` and ``scale``)."""
    import torch

    d = usable[0].cands.vectors.shape[1]
    f = len(STATE_FEATURES)
    m, n_max = len(usable), max(len(e.content) for e in usable)
    X = np.zeros((m, n_max, f))
    E = np.zeros((m, n_max, d))
    T = np.zeros((m, n_max), dtype=np.int64)
    C = np.zeros((m, n_max))
    valid = np.zeros((m, n_max), dtype=bool)
    pos = np.zeros((m, n_max))
    parts = np.zeros((m, 3, d))
    phase0 = np.zeros((m, d))
    pidx = np.zeros(m, dtype=np.int64)
    known = np.zeros(m)
    ain = np.zeros((m, len(ALPHA_INPUTS)))
    for i, (e, x) in enumerate(zip(usable, feats, strict=True)):
        n = len(e.content)
        X[i, :n], E[i, :n], T[i, :n] = (x - mean) / scale, e.cands.vectors, e.cands.types
        C[i, :n], valid[i, :n] = e.content, True
        pos[i, :n] = e.needed / e.needed.sum()
        parts[i] = np.stack([e.state.whole, e.state.goal, e.state.result])
        phase0[i] = e.state.phase
        j = phase_index.get(e.phase or "")
        pidx[i], known[i] = (j, 1.0) if j is not None else (0, 0.0)
        ain[i] = [1.0, math.log1p(e.query_terms), float(e.terse), float(e.content.max()), known[i]]
    partst = torch.tensor(parts)
    return _Batch(
        X=torch.tensor(X),
        E=torch.tensor(E),
        T=torch.tensor(T),
        C=torch.tensor(C),
        valid=torch.tensor(valid),
        pos=torch.tensor(pos),
        parts=partst,
        pn=torch.clamp(partst.norm(dim=2), min=1e-12),
        phase0=torch.tensor(phase0),
        pidx=torch.tensor(pidx),
        known=torch.tensor(known),
        ain=torch.tensor(ain),
    )


def _loss(p: _Params, b: _Batch, *, temperature: float, l2: float) -> torch.Tensor:
    """The training loss of parameters ``p`` on batch ``b``: mean negative log-likelihood of the
    needed candidates under the softmax of final score / ``temperature``, plus ``l2`` * squared weights."""
    import torch

    s_phase = b.phase0 + b.known[:, None] * p.phase_vecs[b.pidx]  # (m, d)
    w = 1.0 + torch.tanh(torch.cat([b.parts[:, 0], s_phase], dim=1) @ p.W1.T) @ p.W2.T  # (m, d)
    norms = torch.sqrt(torch.clamp((b.E * b.E) @ (w * w)[:, :, None], min=1e-12))[..., 0]  # (m, n)
    rw = torch.einsum("mnd,md,mkd->mnk", b.E, w, b.parts) / (norms[..., None] * b.pn[:, None, :])
    prior = torch.gather(p.type_bias[None, :] + torch.tanh(s_phase @ p.P) @ p.B.T, 1, b.T)  # (m, n)
    s = torch.sigmoid(b.X @ p.theta + rw @ p.gamma + prior + p.bias)
    a = torch.sigmoid(b.ain @ p.alpha)[:, None]
    final = (a * s + (1 - a) * b.C) / temperature
    logp = torch.log_softmax(final.masked_fill(~b.valid, -1e9), dim=1)
    nll = -(b.pos * logp.masked_fill(~b.valid, 0.0)).sum(dim=1).mean()
    reg = sum((q * q).sum() for q in p.penalised())
    return nll + l2 * reg


def _scorer(
    p: _Params,
    mean: FloatArray,
    scale: FloatArray,
    phase_index: Mapping[str, int],
    *,
    half_life_s: float,
    meta: Mapping[str, Any] | None,
) -> StateScorer:
    """The :class:`StateScorer` holding the fitted parameters ``p`` (detached, as numpy arrays)."""
    out = {
        "theta": p.theta.detach().numpy(),
        "gamma": p.gamma.detach().numpy(),
        "type_bias": p.type_bias.detach().numpy(),
        "B": p.B.detach().numpy(),
        "P": p.P.detach().numpy(),
        "W1": p.W1.detach().numpy(),
        "W2": p.W2.detach().numpy(),
        "alpha": p.alpha.detach().numpy(),
        "mean": mean,
        "scale": scale,
        "bias": float(p.bias.detach().numpy()[0]),
    }
    phases = {name: p.phase_vecs[i].detach().numpy() for name, i in phase_index.items()}
    return StateScorer(out, phases=phases, half_life_s=half_life_s, meta=meta)
