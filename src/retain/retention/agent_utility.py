"""EMBER's utility for agent streams: P(needed later) of tool results, actions, plans and chatter.

:class:`~retain.retention.utility.LearnedUtility` was fitted on which conversation turns LoCoMo and
BEAM questions cite; it knows nothing of an agent's tool results. :class:`AgentUtility` scores the
records of an *agent stream* (:func:`is_agent_record`: written with a task state, or by a tool /
action / thought role) with its own logistic model over :data:`AGENT_FEATURES`, fitted on scenario
traces (:func:`scenario_traces`: an event is positive when some later probe's ``needed`` names it), and
hands every other record to the base model unchanged, so LoCoMo and BEAM scores stay exactly what
the base model gives.

One ordering is guaranteed, not learned: in an agent stream a tool or action result (role ``tool`` or
``agent_action``) scores at least :data:`RESULT_FLOOR` and a record typed ``chatter`` at most
:data:`CHATTER_CEILING` (below the floor), so an eviction-order policy (``utility``) never archives a
tool result while chatter is hot. Shipped weights: ``retain/models/agent_utility.json``
(``retain train-agent-utility``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.numeric.linear import fit_clipped_logistic
from retain.record import MemoryRecord, MemoryType
from retain.retention.utility import SGD_LEARNING_RATE, Trace, UtilityContext, UtilityModel, check_scores
from retain.state.candidates import PHASE_KEY

__all__ = [
    "AGENT_FEATURES",
    "AGENT_ROLES",
    "CHATTER_CEILING",
    "RESULT_FLOOR",
    "RESULT_ROLES",
    "AgentUtility",
    "agent_features",
    "is_agent_record",
    "train_agent_utility",
]

FloatArray = npt.NDArray[np.float64]

AGENT_ROLES = frozenset({"tool", "agent_action", "agent_thought", "function", "tool_call", "observation"})
"""Roles that only an agent loop writes; a record with one of them is from an agent stream."""
RESULT_ROLES = frozenset({"tool", "agent_action", "function", "tool_call", "observation"})
"""Roles whose records are tool or action results (floored at :data:`RESULT_FLOOR`)."""
RESULT_FLOOR = 0.2
"""Lowest score of a tool or action result in an agent stream (probability, higher = kept longer)."""
CHATTER_CEILING = 0.1
"""Highest score of a record typed ``chatter`` in an agent stream; below :data:`RESULT_FLOOR`."""

_ROLES = ("user", "tool", "agent_action", "agent_thought", "system")
_TYPES = tuple(t.value for t in MemoryType)
# fmt: off
AGENT_FEATURES: tuple[str, ...] = (
    *(f"role_{r}" for r in _ROLES), *(f"type_{t}" for t in _TYPES),
    "log_chars", "numbers", "amounts", "codes", "dates", "confirmation", "result_cue", "failure_cue",
    "plan_cue", "chatter_cue", "question", "after_action", "after_user", "phase_changed", "has_phase",
)
# fmt: on
"""Column names of :func:`agent_features`, in order (its docstring defines each)."""


def _cue(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_NUMBER = _cue(r"\d+(?:[.,:]\d+)*")
_AMOUNT = _cue(
    r"(?:[$€£¥]|\b(?:eur|usd|gbp|cny|rmb|jpy|chf)\b|元|円|유로)\s*\d|\d[\d,.]*\s*(?:[$€£¥]|eur|usd|gbp|元|円)"
)
_CODE = re.compile(r"\b(?=[A-Z0-9-]*\d)(?=[A-Z0-9-]*[A-Z])[A-Z0-9][A-Z0-9-]{3,}\b")
_DATE = _cue(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\d{4}-\d\d-\d\d|\d{1,2}[/.]\d{1,2}|"
    r"\d+月\d+日|\b(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\b|\d{1,2}:\d\d"
)
_CONFIRM = _cue(
    r"\b(?:confirm(?:ed|ation)?|booked|reserved|reservation|receipt|approved|accepted|issued|paid|"
    r"scheduled|ticket(?:ed)?|order (?:number|placed)|ref(?:erence)?)\b"
    r"|确认|已预订|已预约|订单|予約|確認|bestätigt|confirmé|confirmado"
)
_RESULT = _cue(
    r"\b(?:found|results?|available|availability|options?|quotes?|price[sd]?|total|balance|ledger|status|"
    r"returned|response|fare|rate|in stock|sold out|matches)\b|结果|可用|报价|价格|余额|結果|料金|Preis|prix|precio"
)
_FAILURE = _cue(r"\b(?:error|failed|failure|denied|rejected|cancel+ed|unavailable|timeout|declined)\b|失败|取消|拒绝")
_PLAN = _cue(
    r"\b(?:step|next|then|will|plan|going to|let me|i'll|first|search(?:ing)?|check(?:ing)?)\b|下一步|计划|接下来"
)
_CHATTER = _cue(
    r"\b(?:thanks?|thank you|great|awesome|cool|ok(?:ay)?|sure|sounds good|perfect|lol|haha)\b|谢谢|好的|太好了"
)


def is_agent_record(record: MemoryRecord) -> bool:
    """True when ``record`` comes from an agent loop: written with a task state (its phase is kept in
    ``metadata["phase"]``) or by a role only an agent loop has (:data:`AGENT_ROLES`)."""
    return bool(record.metadata.get(PHASE_KEY)) or record.role.strip().lower() in AGENT_ROLES


def _in_agent_stream(record: MemoryRecord, context: UtilityContext) -> bool:
    """The record, or the one before it in its stream, is an agent record."""
    return is_agent_record(record) or (context.previous is not None and is_agent_record(context.previous))


def _log(pattern: re.Pattern[str], text: str) -> float:
    return math.log1p(len(pattern.findall(text)))


def agent_features(records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
    """Causal per-record features of agent streams, (n, len(AGENT_FEATURES)) float64.

    Row i depends only on ``records[i]`` and its context's ``previous`` record. Columns: ``role_*``
    one-hot of the role (scenario roles; others all 0); ``type_*`` one-hot of the record type (the
    classifier's when the caller gave none); ``log_chars`` log1p(characters); log1p counts of
    ``numbers``, ``amounts`` (a currency next to a number), ``codes`` (booking references, order ids:
    upper-case tokens with a digit), ``dates`` (month / weekday names, ISO dates, clock times),
    ``confirmation`` cues (confirmed, booked, receipt, 确认), ``result_cue`` (found, results, price,
    total, ledger), ``failure_cue`` (error, failed, cancelled), ``plan_cue`` (next, will, let me),
    ``chatter_cue`` (thanks, ok, great); ``question`` ends with "?" (or "？"); ``after_action`` the
    previous record is an agent action (this one is likely its result); ``after_user`` the previous
    record is the user's; ``phase_changed`` the previous record was written in another phase;
    ``has_phase`` the record carries a phase.

    Raises:
        InvalidInput: lengths differ.
    """
    if len(records) != len(contexts):
        raise InvalidInput(f"contexts: {len(contexts)} given for {len(records)} records; need one per record")
    out = np.zeros((len(records), len(AGENT_FEATURES)), dtype=np.float64)
    for i, (record, ctx) in enumerate(zip(records, contexts, strict=True)):
        text, role, prev = record.content, record.role.strip().lower(), ctx.previous
        phase = record.metadata.get(PHASE_KEY)
        prev_role = prev.role.strip().lower() if prev is not None else ""
        prev_phase = prev.metadata.get(PHASE_KEY) if prev is not None else None
        out[i] = (
            *(float(role == r) for r in _ROLES),
            *(float(record.type.value == t) for t in _TYPES),
            math.log1p(len(text)),
            _log(_NUMBER, text),
            _log(_AMOUNT, text),
            _log(_CODE, text),
            _log(_DATE, text),
            _log(_CONFIRM, text),
            _log(_RESULT, text),
            _log(_FAILURE, text),
            _log(_PLAN, text),
            _log(_CHATTER, text),
            float(text.rstrip().endswith(("?", "？"))),
            float(prev_role == "agent_action"),
            float(prev_role == "user"),
            float(prev is not None and bool(phase) and bool(prev_phase) and phase != prev_phase),
            float(bool(phase)),
        )
    return out


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
    return out


class AgentUtility:
    """A utility model for agent streams in front of a base model for everything else.

    Agent records (:func:`is_agent_record`, or right after one) get
    p = sigmoid(w . (clip(x, low, high) - mean) / scale + b)
    over :func:`agent_features`, then the guaranteed order: tool / action results (:data:`RESULT_ROLES`)
    at least :data:`RESULT_FLOOR`, chatter at most :data:`CHATTER_CEILING`. Other records get
    ``base.score`` unchanged (the shipped :class:`~retain.retention.utility.LearnedUtility` by default).

    Attributes:
        base: the model of non-agent records. weights, mean, scale, low, high: (len(AGENT_FEATURES),)
            float64. bias: intercept. trained_on: provenance, including the rebuilding command.
    """

    name = "agent-utility"

    def __init__(
        self,
        base: UtilityModel,
        *,
        weights: npt.ArrayLike,
        bias: float,
        mean: npt.ArrayLike,
        scale: npt.ArrayLike,
        low: npt.ArrayLike,
        high: npt.ArrayLike,
        learning_rate: float = SGD_LEARNING_RATE,
        trained_on: str = "",
    ) -> None:
        self.base = base
        self.weights, self.mean, self.scale, self.low, self.high = (
            np.array(a, dtype=np.float64) for a in (weights, mean, scale, low, high)
        )
        self.bias, self.learning_rate, self.trained_on = float(bias), float(learning_rate), trained_on
        width = (len(AGENT_FEATURES),)
        if any(a.shape != width for a in (self.weights, self.mean, self.scale, self.low, self.high)):
            raise InvalidInput(f"agent utility: weights, mean, scale, low and high must each have shape {width}")
        if not (np.all(np.isfinite(self.weights)) and np.all(self.scale > 0) and math.isfinite(self.bias)):
            raise InvalidInput("agent utility: weights and bias must be finite and scales > 0")

    def _inputs(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        out: FloatArray = (np.clip(agent_features(records, contexts), self.low, self.high) - self.mean) / self.scale
        return out

    def _agent_scores(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        p = _sigmoid(self._inputs(records, contexts) @ self.weights + self.bias)
        for i, r in enumerate(records):
            if r.role.strip().lower() in RESULT_ROLES:
                p[i] = max(p[i], RESULT_FLOOR)
            elif r.type is MemoryType.CHATTER:
                p[i] = min(p[i], CHATTER_CEILING)
        return p

    def score(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        """(n,) float64 in [0, 1], higher = more likely needed later; agent records by the agent
        model, the rest by ``base``.

        Raises: InvalidInput (lengths differ), what ``base.score`` raises, InvalidUtility (bad output)."""
        if len(records) != len(contexts):
            raise InvalidInput(f"contexts: {len(contexts)} given for {len(records)} records; need one per record")
        agent = [i for i, (r, c) in enumerate(zip(records, contexts, strict=True)) if _in_agent_stream(r, c)]
        other = [i for i in range(len(records)) if i not in set(agent)]
        out = np.zeros(len(records), dtype=np.float64)
        if agent:
            out[agent] = self._agent_scores([records[i] for i in agent], [contexts[i] for i in agent])
        if other:
            out[other] = self.base.score([records[i] for i in other], [contexts[i] for i in other])
        return check_scores(out, self.name, len(records))

    def feedback(self, record: MemoryRecord, context: UtilityContext, used: bool) -> None:
        """One normalised SGD step of the logistic loss (as :meth:`LearnedUtility.feedback
        <retain.retention.utility.LearnedUtility.feedback>`) on the agent model for an agent record;
        ``base.feedback`` for any other."""
        if not _in_agent_stream(record, context):
            self.base.feedback(record, context, used)
            return
        x = self._inputs([record], [context])[0]
        grad = float(_sigmoid(np.array([x @ self.weights + self.bias]))[0]) - (1.0 if used else 0.0)
        eta = self.learning_rate / (float(x @ x) + 1.0)
        self.weights -= eta * grad * x
        self.bias -= eta * grad

    def to_json(self) -> str:
        """The agent part as JSON (the base model is saved on its own), numbers to 5 significant digits."""
        arrays = {k: [float(f"{v:.5g}") for v in getattr(self, k)] for k in ("weights", "mean", "scale", "low", "high")}
        meta = {"feature_names": list(AGENT_FEATURES), "bias": float(f"{self.bias:.5g}")}
        return json.dumps(meta | arrays | {"trained_on": self.trained_on}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, base: UtilityModel | None = None) -> AgentUtility:
        """Parse :meth:`to_json` output; ``base`` defaults to the shipped LearnedUtility.

        Raises:
            InvalidInput: malformed JSON or feature names other than :data:`AGENT_FEATURES`.
        """
        try:
            raw = json.loads(text)
            names = tuple(raw["feature_names"])
            fields = {k: raw[k] for k in ("weights", "bias", "mean", "scale", "low", "high")}
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"agent utility: malformed JSON ({exc})") from exc
        if names != AGENT_FEATURES:
            raise InvalidInput(f"agent utility: features {names} differ from this version's {AGENT_FEATURES}")
        if base is None:
            from retain.retention.utility import LearnedUtility

            base = LearnedUtility.load()
        return cls(base, **fields, trained_on=str(raw.get("trained_on", "")))

    @classmethod
    def load(cls, path: str | Path | None = None, base: UtilityModel | None = None) -> AgentUtility:
        """Load from ``path``, or the shipped models/agent_utility.json when None."""
        if path is None:
            text = resources.files("retain").joinpath("models/agent_utility.json").read_text(encoding="utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        return cls.from_json(text, base)


def train_agent_utility(
    traces: Sequence[Trace], base: UtilityModel | None = None, *, c: float = 0.1, trained_on: str = ""
) -> AgentUtility:
    """Fit the agent part of :class:`AgentUtility`: L2-regularised logistic regression on
    :func:`agent_features` clipped to their 1st-99th percentile and standardised; traces pooled.

    Args:
        traces: agent traces (:func:`retain.eval.utility_traces.scenario_traces`).
        base: the model of non-agent records (default: the shipped LearnedUtility).
        c: inverse regularisation strength.

    Raises:
        InvalidInput: no positive or no negative label, or labels not one per record.
    """
    x = np.concatenate([agent_features(r, ctx) for r, ctx, _ in traces] or [np.zeros((0, len(AGENT_FEATURES)))])
    y = np.concatenate([np.asarray(lab, dtype=bool) for _, _, lab in traces] or [np.zeros(0, dtype=bool)])
    if len(y) != len(x) or y.all() or not y.any():
        raise InvalidInput("train_agent_utility: need one label per record, and both positive and negative labels")
    fit = fit_clipped_logistic(x, y, c=c)
    if base is None:
        from retain.retention.utility import LearnedUtility

        base = LearnedUtility.load()
    return AgentUtility(
        base,
        weights=fit.weights,
        bias=fit.bias,
        mean=fit.mean,
        scale=fit.scale,
        low=fit.low,
        high=fit.high,
        trained_on=trained_on,
    )
