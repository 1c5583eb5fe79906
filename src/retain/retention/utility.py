"""EMBER's utility predictor: for each new piece of evidence, the probability it will be needed later.

A utility model scores a record when it arrives, before anyone asks about it, so all it sees is
*causal*: the record, the record just before it in the same stream and what hot memory already holds
(:class:`UtilityContext`); never the questions, never later turns. Two models ship, both behind
:class:`UtilityModel` (``score`` + ``feedback``), both returning probabilities in [0, 1]
(higher = more likely needed later), always passed through :func:`check_scores`:

* :class:`RulePrior` — no training: a hand-weighted logistic combination (:data:`RULE_WEIGHTS`) of the
  interpretable cues of :func:`utility_features`.
* :class:`LearnedUtility` — L2-regularised logistic regression over the same features plus the record
  embedding, fitted by :func:`train_utility` on oracle traces (:func:`locomo_traces`,
  :func:`beam_traces`: a turn is positive when some question's evidence points at it); adapts online
  with one SGD step per :meth:`~LearnedUtility.feedback`. Shipped weights: ``retain/models/utility.json``
  (``retain train-utility``). :func:`loco_auc` measures it leave-one-conversation-out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from retain.errors import EncoderMismatch, InvalidInput, InvalidUtility
from retain.numeric.linear import fit_clipped_logistic
from retain.record import MemoryRecord, MemoryType, speaker_of

__all__ = [
    "EMBEDDING_WEIGHT",
    "RULE_WEIGHTS",
    "SGD_LEARNING_RATE",
    "TYPE_PRIOR",
    "UTILITY_FEATURES",
    "LearnedUtility",
    "RulePrior",
    "Trace",
    "UtilityContext",
    "UtilityModel",
    "check_scores",
    "train_utility",
    "utility_features",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class UtilityContext:
    """What a utility model may look at besides the record itself (all known when it arrives).

    Attributes:
        held: (m, d) float32, L2-normalised embeddings of the records already in hot memory (for
            novelty); (0, d) or (0, 0) when nothing is held.
        previous: the record just before in the same stream (e.g. the question a turn answers), or None.
        mean_length: running mean length in tokens of the stream so far, or None.
    """

    held: npt.NDArray[np.float32]
    previous: MemoryRecord | None = None
    mean_length: float | None = None

    def __post_init__(self) -> None:
        held = np.asarray(self.held, dtype=np.float32)
        if held.ndim != 2:
            raise InvalidInput(f"held: must be a 2-d (m, d) array, got shape {held.shape}")
        object.__setattr__(self, "held", held)
        if self.mean_length is not None and not (math.isfinite(self.mean_length) and self.mean_length >= 0):
            raise InvalidInput(f"mean_length: must be a finite number >= 0 or None, got {self.mean_length!r}")


Trace = tuple[list[MemoryRecord], list[UtilityContext], BoolArray]
"""One stream: records in arrival order, their contexts, (n,) bool labels (True = needed later)."""


@runtime_checkable
class UtilityModel(Protocol):
    """Predicts P(record needed later). ``name`` identifies the model in errors and audit logs."""

    name: str

    def score(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        """(n,) float64 in [0, 1], one per record, higher = more likely needed later.

        Raises: InvalidInput (lengths differ), InvalidUtility (NaN / inf / out-of-range output)."""
        ...

    def feedback(self, record: MemoryRecord, context: UtilityContext, used: bool) -> None:
        """Online adaptation: ``record`` (seen with ``context``) was retrieved and marked used or not."""
        ...


# --- features ----------------------------------------------------------------------------------------

# fmt: off
UTILITY_FEATURES: tuple[str, ...] = (
    "log_tokens", "rel_length", "novelty", "novelty_top5", "entities", "numbers", "dates", "first_person",
    "statement", "event_verbs", "second_person", "chatter_cues", "exclamations", "type_prior", "is_question",
    "answers_question", "asked_about_you", "prev_similarity", "prev_log_tokens", "addresses_other",
    "same_speaker", "segment_start", "agent_role", "agent_dialogue", "has_caption",
)
# fmt: on
"""Column names of :func:`utility_features`, in order (its docstring defines each)."""

# fmt: off
TYPE_PRIOR: Mapping[MemoryType, float] = {
    MemoryType.HARD_CONSTRAINT: 1.0, MemoryType.SOFT_PREFERENCE: 0.85, MemoryType.GOAL: 0.85,
    MemoryType.FACT: 0.75, MemoryType.PLAN_STEP: 0.6, MemoryType.ACTION_RESULT: 0.6, MemoryType.SENSITIVE: 0.5,
    MemoryType.OBSERVATION: 0.5, MemoryType.REASONING: 0.35, MemoryType.CHATTER: 0.0,
}
# fmt: on
"""Prior usefulness of each type in [0, 1], hand-set: constraints, preferences, goals, facts high;
chatter low. The ``type_prior`` feature."""

_AGENT_ROLES = frozenset(
    {"assistant", "agent", "ai", "bot", "model", "system", "developer", "tool", "function", "observation"}
    | {"tool_call", "agent_action", "agent_thought", "thought", "reasoning"}
)
_WORDS = re.compile(r"[\w'’]+")
_SENTENCES = re.compile(r"(?<=[.!?;:])\s+|\n+")
_NOT_NAMES = frozenset(["i", "i'm", "i've", "i'll", "i'd", "i’m", "i’ve", "i’ll", "i’d", "ok", "okay"])


def _cue(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE)


_NUMBERS = re.compile(
    r"\d+(?:[.,:]\d+)*|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"hundred|thousand|million|dozen|first|second|third|half)\b",
    re.IGNORECASE,
)
_DATES = _cue(
    r"jan(?:uary)?|feb(?:ruary)?|march|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|"
    r"nov(?:ember)?|dec(?:ember)?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|yesterday|today|tonight|tomorrow|"
    r"weekend|ago|since|deadline|(?:last|next|this|past|coming) (?:week|month|year|weekend|night|summer|winter|"
    r"spring|fall|autumn|time)|(?:19|20)\d\d"
)
_FIRST_PERSON = _cue(r"i|i['’](?:m|ve|ll|d)|me|my|mine|myself|we|we['’](?:re|ve|ll|d)|our|ours|us")
_SECOND_PERSON = _cue(r"you|you['’](?:re|ve|ll|d)|your|yours|yourself")
_STATEMENT = _cue(
    r"(?:i|we)(?:['’]m| am| are|['’]re|['’]ve| have| had|['’]ll| will| just| really| finally| also)?\s+"
    r"(?:going to|gonna|planning|plan|decided|started|starting|joined|signed up|bought|got|went|visited|adopted|"
    r"finished|made|prefer|love|like|enjoy|hate|want|need|can['’]t|cannot|must|always|never|working on|work|"
    r"learned|learning|tried|trying|booked|moved|took|take|use|using|built|building)"
    r"|my (?:favou?rite|goal|plan|dream|budget|deadline|new|first|own)|i['’]d (?:like|love|rather)"
)
_EVENT_VERBS = _cue(
    r"went|visited|joined|started|began|finished|completed|bought|got|adopted|moved|took|made|won|lost|ran|"
    r"attended|signed|travel(?:l)?ed|met|married|graduated|painted|wrote|read|saw|watched|played|volunteered|"
    r"launched|released|published|created|built|deployed|implemented|decided|switched|changed|updated|"
    r"upgraded|received|hired|left|quit"
)
_CHATTER = _cue(
    r"haha+|hah|lol|lmao|thanks|thank you|thx|wow|awesome|cool|congrats|congratulations|glad|sounds|yeah|yay|"
    r"bye|hey|hi|hello|take care|good luck|amazing|agree|totally|absolutely|sweet|proud|inspiring|appreciate"
)


def _names(text: str) -> int:
    """Capitalised words that do not start a sentence ("I" and its contractions excluded)."""
    return sum(
        1
        for sentence in _SENTENCES.split(text)
        for word in _WORDS.findall(sentence)[1:]
        if word[0].isupper() and word.lower() not in _NOT_NAMES
    )


def _novelty(embedding: npt.NDArray[np.float32] | None, held: npt.NDArray[np.float32]) -> tuple[float, float]:
    """(1 - max cosine, 1 - mean of the top-5 cosines) against ``held``; (1, 1) when nothing to compare."""
    if embedding is None or held.shape[0] == 0:
        return 1.0, 1.0
    if held.shape[1] != embedding.shape[0]:
        raise InvalidInput(f"held: dimension {held.shape[1]} differs from the record embedding's {embedding.shape[0]}")
    sims = held @ embedding
    top = np.partition(sims, len(sims) - 5)[-5:] if len(sims) > 5 else sims
    return 1.0 - float(sims.max()), 1.0 - float(top.mean())


def _is_agent(record: MemoryRecord) -> bool:
    return record.role.strip().lower() in _AGENT_ROLES


def _log_count(pattern: re.Pattern[str], text: str) -> float:
    return math.log1p(len(pattern.findall(text)))


def utility_features(records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
    """Causal per-record features, (n, len(UTILITY_FEATURES)) float64.

    Row i depends only on ``records[i]`` and ``contexts[i]`` (its previous record, held embeddings and
    running mean length): changing a later record never changes an earlier row. Counts enter as
    log1p(count); text cues read the content (entities, numbers, dates also the image caption).

    Columns: ``log_tokens`` log1p(token_count) (``\\w+`` words when token_count is 0); ``rel_length``
    log((tokens + 1) / (mean_length + 1)), 0 without a mean; ``novelty`` 1 - max cosine to held (1 when
    nothing is held or no embedding) and ``novelty_top5`` 1 - mean of the 5 highest; ``entities``
    capitalised words not starting a sentence; ``numbers`` digit runs and number words; ``dates`` month
    / day names, years, relative times; ``first_person`` / ``second_person`` pronouns; ``statement``
    first-person statements of fact, plan or preference ("I'm going to", "I prefer", "my goal");
    ``event_verbs`` past-tense events (went, joined, deployed); ``chatter_cues`` thanks / wow / haha /
    congrats; ``exclamations`` "!" count; ``type_prior`` :data:`TYPE_PRIOR`; ``is_question`` ends with
    "?"; ``answers_question`` the previous record, by someone else, ends with "?"; ``asked_about_you``
    and its last sentence says you / your; ``prev_similarity`` cosine to the previous record (0 when
    absent); ``prev_log_tokens`` log1p of its tokens; ``addresses_other`` names the previous speaker;
    ``same_speaker`` previous has the same speaker; ``segment_start`` no previous record in this
    segment; ``agent_role`` an agent / tool / system role rather than a person; ``agent_dialogue`` the
    record or the previous one has an agent role (a chat with an agent, not between people);
    ``has_caption`` an image caption is attached (``metadata["caption"]``).

    Raises:
        InvalidInput: lengths differ, or a held matrix's dimension differs from the record embedding's.
    """
    if len(records) != len(contexts):
        raise InvalidInput(f"contexts: {len(contexts)} given for {len(records)} records; need one per record")
    out = np.zeros((len(records), len(UTILITY_FEATURES)), dtype=np.float64)
    for i, (record, ctx) in enumerate(zip(records, contexts, strict=True)):
        text, caption = record.content, record.metadata.get("caption")
        rich = f"{text} {caption}" if caption else text
        tokens = record.token_count or len(_WORDS.findall(text))
        prev, emb = ctx.previous, record.embedding
        other = prev is not None and speaker_of(prev) != speaker_of(record)
        asks = other and prev is not None and prev.content.rstrip().endswith("?")
        prev_emb = None if prev is None else prev.embedding
        name = speaker_of(prev).split()[0].lower() if other and prev is not None and speaker_of(prev).strip() else ""
        out[i] = (
            math.log1p(tokens),
            0.0 if ctx.mean_length is None else math.log((tokens + 1.0) / (ctx.mean_length + 1.0)),
            *_novelty(emb, ctx.held),
            math.log1p(_names(rich)),
            _log_count(_NUMBERS, rich),
            _log_count(_DATES, rich),
            _log_count(_FIRST_PERSON, text),
            _log_count(_STATEMENT, text),
            _log_count(_EVENT_VERBS, text),
            _log_count(_SECOND_PERSON, text),
            _log_count(_CHATTER, text),
            math.log1p(text.count("!")),
            TYPE_PRIOR.get(record.type, 0.5),
            float(text.rstrip().endswith("?")),
            float(asks),
            float(
                asks and prev is not None and bool(_SECOND_PERSON.search(_SENTENCES.split(prev.content.strip())[-1]))
            ),
            float(prev_emb @ emb) if prev_emb is not None and emb is not None and prev_emb.shape == emb.shape else 0.0,
            0.0 if prev is None else math.log1p(prev.token_count or len(_WORDS.findall(prev.content))),
            float(bool(name) and name not in _AGENT_ROLES and name != "user" and name in text.lower()),
            float(prev is not None and not other),
            float(prev is None or prev.segment != record.segment),
            float(_is_agent(record)),
            float(_is_agent(record) or (prev is not None and _is_agent(prev))),
            float(bool(caption)),
        )
    return out


def check_scores(scores: Any, model_name: str, n: int) -> FloatArray:
    """``scores`` as a checked (n,) float64 array in [0, 1].

    Raises:
        InvalidUtility: naming ``model_name``: not numeric, shape other than (n,), NaN, inf, or outside [0, 1].
    """
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidUtility(f"utility model {model_name!r}: scores are not numeric ({exc})") from exc
    if arr.shape != (n,):
        raise InvalidUtility(f"utility model {model_name!r}: scores have shape {arr.shape}, expected ({n},)")
    bad = ~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidUtility(
            f"utility model {model_name!r}: {int(bad.sum())} score(s) NaN, infinite or outside [0, 1]; "
            f"[{i}] = {arr[i]!r}"
        )
    return arr


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
    return out


# --- rule prior --------------------------------------------------------------------------------------

# fmt: off
RULE_WEIGHTS: Mapping[str, float] = {
    "bias": -1.6, "rel_length": 0.8, "novelty": 1.0, "entities": 0.3, "numbers": 0.3, "dates": 0.3,
    "first_person": 0.3, "statement": 0.5, "event_verbs": 0.3, "second_person": -0.2, "chatter_cues": -0.4,
    "exclamations": -0.2, "type_prior": 1.0, "is_question": -1.0, "answers_question": 0.6, "agent_role": -2.5,
    "has_caption": 0.4,
}
# fmt: on
"""Hand-set weights of :class:`RulePrior` on :func:`utility_features` columns (log counts, cosines,
0/1 flags); ``bias`` is the intercept; unlisted columns weigh 0. Each cue pushes the way one expects and
none dominates, except the agent role: what a person states is what memory must hold, an agent's
(long, cue-dense) output can mostly be produced again; that weight and the caps of
:data:`_RULE_CAPS` keep long assistant essays from ranking above user messages (BEAM dev)."""

_COUNT_CUES = UTILITY_FEATURES[UTILITY_FEATURES.index("entities") : UTILITY_FEATURES.index("exclamations") + 1]
_RULE_CAPS: Mapping[str, tuple[float, float]] = {
    "rel_length": (-1.5, 1.0),
    **dict.fromkeys(_COUNT_CUES, (0.0, math.log1p(3))),
}
"""Saturation of the rule prior's cues: counts stop adding after 3 occurrences, relative length after
e (a 50-name markdown table is not 50 times as useful as one name)."""


class RulePrior:
    """Rule prior, no training: p = sigmoid(bias + sum_f w_f * x_f), weights :data:`RULE_WEIGHTS`.

    Count cues saturate at 3 occurrences and relative length at [-1.5, 1] before weighting. Higher
    when the record is novel against what is held, longer than the stream's running mean,
    names entities, numbers or dates, states a first-person fact / plan / preference, has a useful type
    (:data:`TYPE_PRIOR`), answers a question, or comes from a person; lower for questions, chatter cues,
    exclamations and agent / tool roles. ``feedback`` is a no-op: the prior is fixed by design.
    """

    name = "rule-prior"

    def __init__(self, weights: Mapping[str, float] | None = None) -> None:
        weights = dict(RULE_WEIGHTS if weights is None else weights)
        unknown = set(weights) - {"bias", *UTILITY_FEATURES}
        if unknown:
            raise InvalidInput(f"weights: unknown feature(s) {sorted(unknown)}; use names from UTILITY_FEATURES")
        self.bias = float(weights.get("bias", 0.0))
        self.weights = np.array([float(weights.get(f, 0.0)) for f in UTILITY_FEATURES])
        self.low = np.array([_RULE_CAPS.get(f, (-np.inf, np.inf))[0] for f in UTILITY_FEATURES])
        self.high = np.array([_RULE_CAPS.get(f, (-np.inf, np.inf))[1] for f in UTILITY_FEATURES])

    def score(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        """See :meth:`UtilityModel.score`: (n,) float64 in [0, 1], higher = more likely needed."""
        z = np.clip(utility_features(records, contexts), self.low, self.high) @ self.weights + self.bias
        return check_scores(_sigmoid(z), self.name, len(records))

    def feedback(self, record: MemoryRecord, context: UtilityContext, used: bool) -> None:
        """No-op: the rule prior does not learn."""


# --- learned model -----------------------------------------------------------------------------------

SGD_LEARNING_RATE = 0.5
"""Learning rate of :meth:`LearnedUtility.feedback`, in logit units: one mark moves the record's own
logit by ``lr * (y - p)`` (0.2 -> 0.27 for a record marked used), not to 0 or 1."""

EMBEDDING_WEIGHT = 0.1
"""Scale of the standardised embedding columns in :func:`train_utility` (features enter at 1). A
smaller scale is a stronger L2 penalty on the 384 embedding weights; chosen leave-one-conversation-out
on LoCoMo dev (``docs/benchmarks.md#the-utility-model``)."""


_DIALOGUE = UTILITY_FEATURES.index("agent_dialogue")
_BASE = 2 * len(UTILITY_FEATURES)


def _design(features: FloatArray) -> FloatArray:
    """[f, f * agent_dialogue]: separate weights for chats with an agent and between people."""
    out: FloatArray = np.hstack([features, features * features[:, [_DIALOGUE]]])
    return out


class LearnedUtility:
    """Logistic regression over :func:`utility_features` plus, when ``encoder`` is set, the embedding.

    p = sigmoid(w . (clip(x, low, high) - mean) / scale + b), x = [f, f * agent_dialogue, embedding] with
    f the features. The interaction block gives chats with an agent their own weights: there the user's
    messages matter whatever their length, between people longer turns carry more (pooling LoCoMo and
    BEAM without it cost LoCoMo 0.04 of hit rate at 25%). Clipping to the training range (1st / 99th
    percentile) keeps a record unlike anything in training from riding one feature far past what the
    weights were fitted on. A record without an embedding gets the training mean there (neutral).

    Attributes:
        weights, mean, scale, low, high: (2F + D,) float64; F = len(UTILITY_FEATURES), D = embedding
            width (0 when ``encoder`` is None).
        bias: intercept. encoder: name of the encoder the embedding part was fitted on, or None.
        learning_rate: step of :meth:`feedback`. updates: feedback steps applied since training.
        trained_on: provenance, including the command that rebuilds the model.
    """

    name = "learned-utility"

    def __init__(
        self,
        *,
        weights: npt.ArrayLike,
        bias: float,
        mean: npt.ArrayLike,
        scale: npt.ArrayLike,
        low: npt.ArrayLike,
        high: npt.ArrayLike,
        encoder: str | None = None,
        learning_rate: float = SGD_LEARNING_RATE,
        updates: int = 0,
        trained_on: str = "",
    ) -> None:
        self.weights, self.mean, self.scale, self.low, self.high = (
            np.array(a, dtype=np.float64) for a in (weights, mean, scale, low, high)
        )
        self.bias, self.encoder, self.learning_rate = float(bias), encoder, float(learning_rate)
        self.updates, self.trained_on = int(updates), trained_on
        width = self.weights.shape
        if self.weights.ndim != 1 or any(a.shape != width for a in (self.mean, self.scale, self.low, self.high)):
            raise InvalidInput("utility model: weights, mean, scale, low and high must be 1-d, of one length")
        if width[0] < _BASE or (width[0] > _BASE) != (encoder is not None):
            raise InvalidInput(
                f"utility model: {width[0]} weights for 2 x {len(UTILITY_FEATURES)} feature columns; "
                "extra (embedding) weights need an encoder name, and an encoder name needs them"
            )
        if not (np.all(np.isfinite(self.weights)) and np.all(self.scale > 0) and math.isfinite(self.bias)):
            raise InvalidInput("utility model: weights and bias must be finite and scales > 0")
        if not (math.isfinite(self.learning_rate) and self.learning_rate >= 0):
            raise InvalidInput(f"learning_rate: must be a finite number >= 0, got {learning_rate!r}")

    @property
    def embedding_dim(self) -> int:
        """D, the width of the embedding part (0 when the model uses the features only)."""
        return int(self.weights.shape[0]) - _BASE

    def features_only(self) -> LearnedUtility:
        """A copy without the embedding block (D = 0, ``encoder`` None): the model for records
        embedded by another encoder than the one it was fitted on. Its scores are exactly those
        this model gives a record without an embedding (the block at its training mean adds 0 to
        the logit), so nothing is guessed about a foreign embedding space."""
        cut = slice(0, _BASE)
        return LearnedUtility(
            weights=self.weights[cut],
            bias=self.bias,
            mean=self.mean[cut],
            scale=self.scale[cut],
            low=self.low[cut],
            high=self.high[cut],
            encoder=None,
            learning_rate=self.learning_rate,
            updates=self.updates,
            trained_on=f"{self.trained_on} (features only: embedding block of {self.encoder} dropped)",
        )

    def _inputs(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        x = _design(utility_features(records, contexts))
        if dim := self.embedding_dim:
            emb = np.tile(self.mean[_BASE:], (len(records), 1))
            for i, r in enumerate(records):
                if r.embedding is None:
                    continue
                if r.embedding.shape[0] != dim or (r.encoder is not None and r.encoder != self.encoder):
                    raise EncoderMismatch(
                        f"utility model was fitted on {self.encoder} ({dim} dims); record {r.id} was embedded "
                        f"by {r.encoder} ({r.embedding.shape[0]} dims)"
                    )
                emb[i] = r.embedding
            x = np.hstack([x, emb])
        out: FloatArray = (np.clip(x, self.low, self.high) - self.mean) / self.scale
        return out

    def score(self, records: Sequence[MemoryRecord], contexts: Sequence[UtilityContext]) -> FloatArray:
        """See :meth:`UtilityModel.score`: (n,) float64 in [0, 1], higher = more likely needed.

        Raises: InvalidInput (lengths differ), EncoderMismatch (embedding from another encoder or of
        another width), InvalidUtility (non-finite output)."""
        if not records:
            return check_scores(np.zeros(0), self.name, len(contexts))
        return check_scores(
            _sigmoid(self._inputs(records, contexts) @ self.weights + self.bias), self.name, len(records)
        )

    def feedback(self, record: MemoryRecord, context: UtilityContext, used: bool) -> None:
        """One online SGD step of the logistic loss on (record, used), normalised as in normalised LMS.

        With x the standardised input, p the current score, y = 1 if used else 0 and
        eta = lr / (|x|^2 + 1) (lr = ``learning_rate``): w -= eta * (p - y) * x, b -= eta * (p - y).
        The record's own logit moves by exactly lr * (y - p); "used" raises its score (and that of
        similar records), "not used" lowers it."""
        x = self._inputs([record], [context])[0]
        grad = float(_sigmoid(np.array([x @ self.weights + self.bias]))[0]) - (1.0 if used else 0.0)
        eta = self.learning_rate / (float(x @ x) + 1.0)
        self.weights -= eta * grad * x
        self.bias -= eta * grad
        self.updates += 1

    def to_json(self) -> str:
        """Serialise to JSON, numbers rounded to 5 significant digits (keeps the file small)."""
        arrays = {k: [float(f"{v:.5g}") for v in getattr(self, k)] for k in ("weights", "mean", "scale", "low", "high")}
        meta = {"feature_names": list(UTILITY_FEATURES), "encoder": self.encoder, "bias": float(f"{self.bias:.5g}")}
        tail = {"learning_rate": self.learning_rate, "updates": self.updates, "trained_on": self.trained_on}
        return json.dumps(meta | arrays | tail, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LearnedUtility:
        """Parse :meth:`to_json` output.

        Raises:
            InvalidInput: malformed JSON or feature names other than :data:`UTILITY_FEATURES`.
        """
        try:
            raw = json.loads(text)
            names = tuple(raw["feature_names"])
            fields = {k: raw[k] for k in ("weights", "bias", "mean", "scale", "low", "high")}
            extra = {k: raw[k] for k in ("encoder", "learning_rate", "updates", "trained_on") if k in raw}
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"utility model: malformed JSON ({exc})") from exc
        if names != UTILITY_FEATURES:
            raise InvalidInput(f"utility model: features {names} differ from this version's {UTILITY_FEATURES}")
        try:
            return cls(**fields, **extra)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"utility model: malformed JSON ({exc})") from exc

    @classmethod
    def load(cls, path: str | Path | None = None) -> LearnedUtility:
        """Load from ``path``, or the model shipped with the package (models/utility.json) when None."""
        if path is None:
            return cls.from_json(resources.files("retain").joinpath("models/utility.json").read_text(encoding="utf-8"))
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


def train_utility(
    traces: Sequence[Trace],
    *,
    c: float = 0.1,
    embedding: bool = True,
    embedding_weight: float = EMBEDDING_WEIGHT,
    trained_on: str = "",
) -> LearnedUtility:
    """Fit :class:`LearnedUtility`: L2-regularised logistic regression (scikit-learn, lbfgs) on inputs
    clipped to their 1st-99th percentile and standardised; all traces pooled.

    Args:
        traces: oracle traces (:func:`locomo_traces`, :func:`beam_traces`).
        c: inverse regularisation strength (scikit-learn's ``C``).
        embedding: also use the record embeddings (every record must carry one, from one encoder).
        embedding_weight: scale of the standardised embedding columns (:data:`EMBEDDING_WEIGHT`).
        trained_on: provenance stored in the model.

    Raises:
        InvalidInput: no positive or no negative label, labels not one per record, missing or mixed
            embeddings when ``embedding``.
    """

    records = [r for recs, _, _ in traces for r in recs]
    x = _design(
        np.concatenate([utility_features(recs, ctxs) for recs, ctxs, _ in traces] or [np.zeros((0, _BASE // 2))])
    )
    y = np.concatenate([np.asarray(labels, dtype=bool) for _, _, labels in traces] or [np.zeros(0, dtype=bool)])
    if len(y) != len(records) or y.all() or not y.any():
        raise InvalidInput("train_utility: need one label per record, and both positive and negative labels")
    encoder = None
    if embedding:
        names = {r.encoder for r in records}
        if any(r.embedding is None for r in records) or len(names) != 1:
            raise InvalidInput(f"train_utility: embedding=True needs every record embedded by one encoder ({names})")
        encoder = names.pop() or "unknown"
        x = np.hstack([x, np.stack([np.asarray(r.embedding, dtype=np.float64) for r in records])])
    column_weight = np.ones(x.shape[1])
    column_weight[_BASE:] = embedding_weight
    fit = fit_clipped_logistic(x, y, c=c, column_weight=column_weight)
    return LearnedUtility(
        weights=fit.weights,
        bias=fit.bias,
        mean=fit.mean,
        scale=fit.scale,
        low=fit.low,
        high=fit.high,
        encoder=encoder,
        trained_on=trained_on,
    )
