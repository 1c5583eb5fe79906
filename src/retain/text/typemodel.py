"""The learned memory-type classifier: multinomial logistic regression over the rule classifier's
cues, the speaker's role, character n-grams and, with MiniLM, the record's embedding.

Method. Each text becomes a sparse feature vector (:func:`type_features`):

- the role family (:func:`retain.text.classify.role_family`) and the rule cascade's verdict (its
  type and its reason, :func:`retain.text.classify.classify_with_reason`), alone and crossed with the
  role family: the rules are features, not the answer;
- every cue rule that fires anywhere in the text (:func:`retain.text.classify.cue_families`);
- the text's shape: a question, an acknowledgement, a recap, length, digits, script (CJK or not);
- character 2- to 4-grams within word boundaries (scikit-learn's ``char_wb`` analyser: each
  whitespace-separated word padded with one space) of the lower-cased text, hashed (CRC-32) into
  :data:`BUCKETS` buckets, weighted TF-IDF (``1 + ln(count)`` times the bucket's inverse document
  frequency over the training events, stored in the model) and L2-normalised; language-independent,
  so Chinese, Japanese, Korean and German texts get cues the English rules lack.

A model (:class:`TypeModel`) holds two heads fitted on the same training files: ``embedding`` (the
features and the record's (d,) float32 embedding of the encoder named in the model, all-MiniLM-L6-v2)
and ``text`` (the features alone), used when the record has no embedding or another encoder made it
(the hashing encoder of tests, say). Scoring is one (10, F) sparse product plus one (10, d) x (d,)
product; p(type) = softmax(logits).

Two guards follow the model, whatever it says:

- **privacy first**: a text in which :mod:`retain.text.privacy` finds a secret or an identity or
  payment number (:data:`SECRET_KINDS`) is ``sensitive``; other findings (e-mail, phone) are features;
- **never a hard constraint**: a question, an acknowledgement, and anything the agent itself writes
  (thought, action, assistant roles) take the most probable type other than ``hard_constraint``.

The model is fitted by :mod:`retain.eval.type_train` on the training scenario files and shipped as
``retain/models/types.json`` (format ``retain-types/2``).
"""

from __future__ import annotations

import json
import math
import re
import zlib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput
from retain.record import MemoryType
from retain.text import privacy
from retain.text.classify import classify_with_reason, cue_families, role_family

__all__ = [
    "BUCKETS",
    "SECRET_KINDS",
    "TYPE_MODEL_FORMAT",
    "TypeModel",
    "char_ngrams",
    "load_type_model",
    "never_hard",
    "type_features",
    "weigh",
]

TYPE_MODEL_FORMAT = "retain-types/2"
BUCKETS = 16384
"""Hash buckets of the character n-gram block."""
NGRAMS = (2, 3, 4)
"""Character n-gram lengths of the hashed block."""
TYPES: tuple[MemoryType, ...] = tuple(MemoryType)
SECRET_KINDS = frozenset({"card", "iban", "api_key", "secret", "password", "passport", "national_id"})
"""Kinds of :mod:`retain.text.privacy` finding that make a text ``sensitive`` whatever the model says;
e-mail addresses, phone numbers and the like are left to the model (businesses' contact lines are
common in tool output)."""

_QUESTION = re.compile(r"[?？]\W*$|[?？]\s*(?:[^\w\s]|\s)*$")
_ACK = re.compile(
    r"^\W*(?:ok(?:ay)?|sure|got it|noted|understood|will do|sounds good|perfect|great|fine|alright|"
    r"thanks?(?: you)?|cheers|好的|好|收到|明白|了解|行|嗯|ok了)\b\W*(?:\w+\W*){0,3}$",
    re.IGNORECASE,
)
_RECAP = re.compile(
    r"\b(?:summary|recap|so far|to summari[sz]e|in short|status)\b|小结|汇总|总结|目前|到目前为止|まとめ",
    re.IGNORECASE,
)
# Limit, rule and change words of languages the rule cascade does not read (and a few English ones it
# leaves to weak rules). Each group is one feature: a clean column generalises where hashed n-grams
# collide.
_LEXICON: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        (
            "limit",
            r"必ず|絶対|禁止|厳守|以内|以下|以上|上限|下限|最低|最大|最多|最少|至少|不少于|不超过|不低于|"
            r"\bmax(?:imal|imum|imo|imale)?\b|\bm[ií]nim[oa]\b|\bmaximal\b|\bh[oö]chstens\b|\bmindestens\b|"
            r"\bau plus\b|\bau moins\b|\bno m[aá]ximo\b|\bal m[aá]ximo\b|\bcomo m[aá]ximo\b|\bat most\b|\bat least\b|"
            r"\bup to\b|\bcap(?:ped)?\b|\blimit\b|까지|이하|이상|최대|최소",
        ),
        (
            "never",
            r"ないで|しないこと|ダメ|不要|不准|一概|绝不|\bnie(?:mals)?\b|\bkein(?:e[nrms]?)?\b|\bohne\b|"
            r"\bjamais\b|\bpas de\b|\binterdit\b|\bnunca\b|\bsin\b|\bmai\b|\bvietat[oa]\b|\bproibid[oa]\b|"
            r"\bforbids?\b|\bnot until\b|\bwithout (?:a|an|the|her|his|their)\b|안 ?돼|금지|하지 ?마",
        ),
        (
            "must",
            r"必须|必要|要求|需要|müssen|\bmuss\b|\bpflicht\w*|\bdoit\b|\bdoivent\b|\bobligatoire\b|\bexige\b|"
            r"\bdeve\b|\bdevono\b|\bobbligatori[oa]\b|\bhay que\b|\btiene que\b|\brequired?\b|\bneeds? to\b|해야",
        ),
        (
            "change",
            r"提前|推迟|延期|顺延|改到|改成|放到|可以到|前倒し|延期|変更|繰り上げ|verschoben|\bvorgezogen\b|\bavance\b|"
            r"\bd[ée]cal\w+|\brepouss\w+|\badelant\w+|\bretras\w+|\banticip\w+|\bposticip\w+|\bis now\b|"
            r"\bmoved? (?:to|up|back)\b|\bslides?\b|\bpushed\b|\bbrought forward\b|\braised\b|\bcut to\b|"
            r"당겨|미뤄|변경",
        ),
        ("deadline", r"截止|期限|締切|納期|\bfrist\b|\bdate limite\b|\bplazo\b|\bscadenza\b|\bprazo\b|마감"),
        ("budget", r"预算|補助|补贴|予算|\bbudget\w*|\bpresupuesto\b|\bor[çc]amento\b|\bbudget\b|예산"),
        ("only", r"只能|只有|のみ|だけ|\bnur\b|\bseulement\b|\buniquement\b|\bsolo\b|\bs[oó]lo\b|\bapenas\b|만 "),
    )
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_AGENT_FAMILIES = frozenset({"thought", "action", "assistant"})


def _bucket(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) % BUCKETS


def _shape(text: str) -> list[str]:
    stripped = text.strip()
    out = [f"len:{min(int(math.log2(1 + len(stripped))), 10)}"]
    if _QUESTION.search(stripped):
        out.append("question")
    if "?" in stripped or "？" in stripped:
        out.append("question_mark")
    if _ACK.search(stripped):
        out.append("ack")
    if _RECAP.search(stripped):
        out.append("recap")
    cjk = len(_CJK.findall(stripped))
    if cjk > 0.2 * len(stripped):
        out.append("cjk")
    digits = sum(ch.isdigit() for ch in stripped)
    out.append(f"digits:{min(int(10 * digits / max(len(stripped), 1)), 3)}")
    if "\n" in stripped:
        out.append("multiline")
    out += [f"lex:{name}" for name, pattern in _LEXICON if pattern.search(stripped)]
    return out


def char_ngrams(text: str) -> list[str]:
    """Character n-grams (:data:`NGRAMS`) of ``text`` lower-cased, word by word: each
    whitespace-separated word padded with one space each side, a word shorter than n giving itself
    once (as scikit-learn's ``char_wb`` analyser)."""
    out: list[str] = []
    for word in text.lower().split():
        padded = f" {word} "
        for n in NGRAMS:
            out += [padded[i : i + n] for i in range(max(len(padded) - n + 1, 1))]
            if len(padded) <= n:
                break
    return out


def type_features(text: str, role: str | None) -> tuple[list[str], dict[int, float]]:
    """The sparse features of ``text`` said by ``role``: named features (role family, the rule
    verdict, cue families, shape; each worth 1.0) and the hashed n-gram block (bucket -> sublinear
    term frequency ``1 + ln(count)``, before the model's IDF weights and normalisation).
    Deterministic: no model, no state."""
    family = role_family(role)
    rule_type, reason = classify_with_reason(text, role)
    named = [
        f"role:{family}",
        f"rule:{reason}",
        f"ruletype:{rule_type.value}",
        f"role_x_ruletype:{family}:{rule_type.value}",
    ]
    named += [f"cue:{c}" for c in cue_families(text)]
    shape = _shape(text)
    named += shape + [f"role_x_shape:{family}:{s}" for s in shape if not s.startswith(("len:", "digits:"))]
    named += [f"lex_x_rule:{s}:{rule_type.value}" for s in shape if s.startswith("lex:")]
    counts: dict[int, float] = {}
    for gram in char_ngrams(text):
        b = _bucket(gram)
        counts[b] = counts.get(b, 0.0) + 1.0
    return named, {b: 1.0 + math.log(v) for b, v in counts.items()}


def weigh(hashed: dict[int, float], idf: npt.NDArray[np.float32]) -> dict[int, float]:
    """The hashed block of :func:`type_features` times ``idf`` ((BUCKETS,) float32), L2-normalised
    (empty stays empty)."""
    out = {b: v * float(idf[b]) for b, v in hashed.items()}
    norm = math.sqrt(sum(v * v for v in out.values()))
    return {b: v / norm for b, v in out.items()} if norm else {}


def never_hard(text: str, role: str | None) -> bool:
    """True when ``text`` may not be a hard constraint: a question, an acknowledgement, or anything
    the agent itself writes (thought, action and assistant roles: its recaps restate constraints,
    they do not set them)."""
    stripped = text.strip()
    return role_family(role) in _AGENT_FAMILIES or bool(_QUESTION.search(stripped) or _ACK.search(stripped))


@dataclass(frozen=True)
class _Head:
    weights: npt.NDArray[np.float32]  # (T, V + BUCKETS [+ d])
    bias: npt.NDArray[np.float32]  # (T,)


@dataclass(frozen=True)
class TypeModel:
    """A fitted type classifier (format ``retain-types/1``).

    Attributes:
        vocab: named feature -> column (columns ``len(vocab)`` .. ``len(vocab) + BUCKETS - 1`` are
            the hashed block, the embedding follows in the ``embedding`` head).
        text_head: weights over the features alone.
        embedding_head: weights over the features and an embedding of ``encoder`` (None if absent).
        encoder: the encoder name whose embeddings ``embedding_head`` expects.
        idf: (BUCKETS,) float32 inverse document frequency of each n-gram bucket over the training
            events (``ln((1 + n) / (1 + df)) + 1``).
        meta: provenance (training files, command, settings).
    """

    vocab: dict[str, int]
    text_head: _Head
    embedding_head: _Head | None
    encoder: str | None
    idf: npt.NDArray[np.float32]
    meta: dict[str, object]

    def logits(
        self, text: str, role: str | None, embedding: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float64]:
        """(10,) float64 logits in :class:`MemoryType` order (higher = more likely). ``embedding``
        ((d,) float32, L2-normalised) is used only when it has the embedding head's width."""
        named, counts = type_features(text, role)
        hashed = weigh(counts, self.idf)
        head = self.text_head
        use_embedding = False
        if embedding is not None and self.embedding_head is not None:
            width = self.embedding_head.weights.shape[1] - len(self.vocab) - BUCKETS
            if embedding.shape == (width,):
                head, use_embedding = self.embedding_head, True
        cols = [self.vocab[n] for n in named if n in self.vocab]
        offset = len(self.vocab)
        out = head.bias.astype(np.float64) + head.weights[:, cols].sum(axis=1)
        if hashed:
            idx = np.fromiter((offset + b for b in hashed), dtype=np.int64, count=len(hashed))
            out += head.weights[:, idx] @ np.fromiter(hashed.values(), dtype=np.float32, count=len(hashed))
        if use_embedding and embedding is not None:
            out += head.weights[:, offset + BUCKETS :] @ embedding
        return np.asarray(out, dtype=np.float64)

    def predict(self, text: str, role: str | None, embedding: npt.NDArray[np.float32] | None = None) -> MemoryType:
        """The type of ``text`` said by ``role``: the most probable one after the two guards of the
        module docstring. ``embedding``: the record's (d,) float32 vector, or None (features only).
        Raises ``TypeError`` for a non-string text (as :func:`~retain.text.classify.classify`)."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected str, got {type(text).__name__}")
        if not text.strip():
            return MemoryType.CHATTER
        if privacy.contains_sensitive(text) and any(f.kind in SECRET_KINDS for f in privacy.detect(text)):
            return MemoryType.SENSITIVE
        logits = self.logits(text, role, embedding)
        if never_hard(text, role):
            logits[TYPES.index(MemoryType.HARD_CONSTRAINT)] = -np.inf
        return TYPES[int(np.argmax(logits))]

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> TypeModel:
        """Build from the JSON form (:meth:`to_dict`). Raises InvalidInput on another format or a
        type list not in :class:`MemoryType` order."""
        if data.get("format") != TYPE_MODEL_FORMAT:
            raise InvalidInput(f"type model: format {data.get('format')!r}, expected {TYPE_MODEL_FORMAT!r}")
        if data.get("types") != [t.value for t in TYPES] or data.get("buckets") != BUCKETS:
            raise InvalidInput("type model: types or buckets differ from this version of retain")
        names = data.get("vocab")
        if not isinstance(names, list):
            raise InvalidInput("type model: vocab must be a list of feature names")
        vocab = {str(name): i for i, name in enumerate(names)}
        heads = data.get("heads")
        if not isinstance(heads, dict) or "text" not in heads:
            raise InvalidInput("type model: heads must hold a 'text' head")

        def head(raw: dict[str, list[list[float]]]) -> _Head:
            return _Head(np.asarray(raw["weights"], dtype=np.float32), np.asarray(raw["bias"], dtype=np.float32))

        try:
            idf = np.asarray(data.get("idf"), dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("type model: idf must be a list of numbers") from exc
        if idf.shape != (BUCKETS,):
            raise InvalidInput(f"type model: idf must hold {BUCKETS} numbers")
        emb = heads.get("embedding")
        return cls(
            vocab=vocab,
            text_head=head(heads["text"]),
            embedding_head=head(emb) if emb else None,
            encoder=str(data["encoder"]) if data.get("encoder") else None,
            idf=idf,
            meta=dict(data.get("meta", {})),  # type: ignore[call-overload]
        )

    def to_dict(self) -> dict[str, object]:
        """The JSON form (weights rounded to 5 significant digits)."""

        def head(h: _Head) -> dict[str, object]:
            return {
                "weights": [[float(f"{w:.5g}") for w in row] for row in h.weights.tolist()],
                "bias": [float(f"{b:.5g}") for b in h.bias.tolist()],
            }

        heads = {"text": head(self.text_head)}
        if self.embedding_head is not None:
            heads["embedding"] = head(self.embedding_head)
        return {
            "format": TYPE_MODEL_FORMAT,
            "types": [t.value for t in TYPES],
            "buckets": BUCKETS,
            "encoder": self.encoder,
            "vocab": sorted(self.vocab, key=self.vocab.__getitem__),
            "idf": [float(f"{v:.5g}") for v in self.idf.tolist()],
            "heads": heads,
            "meta": self.meta,
        }


def load_type_model(path: str | Path | None = None) -> TypeModel:
    """The model at ``path``, or the one shipped in ``retain/models/types.json`` (read once, cached).

    Raises:
        InvalidInput: not a ``retain-types/1`` model.
    """
    if path is not None:
        return TypeModel.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    return _shipped()


@cache
def _shipped() -> TypeModel:
    text = resources.files("retain").joinpath("models/types.json").read_text(encoding="utf-8")
    return TypeModel.from_dict(json.loads(text))
