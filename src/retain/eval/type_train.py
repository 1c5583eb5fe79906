"""Fitting the learned type classifier (:mod:`retain.text.typemodel`) on scenario files.

Every event of every ``retain-scenario/1`` file under ``--data`` is one example: its ``text`` and
``role`` are the input, ``gold.type`` the label. Named features seen fewer than
:data:`MIN_COUNT` times are dropped. Both heads are multinomial logistic regressions with an L2
penalty (scikit-learn's ``LogisticRegression``, lbfgs); the embedding head sees the record's
embedding as the write path computes it (``"<role>: <text>"``,
:func:`retain.record.search_text`), scaled by ``embedding_scale`` in training (the scale is folded
into the shipped weights).

The shipped model was fitted with::

    python -m retain.eval.type_train --data scenarios/train --out src/retain/models/types.json

``--eval DIR`` prints the type accuracy of the fitted model (both heads, with the guards) on other
files; choose ``--c`` on ``scenarios/dev``, never on ``scenarios/test``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import sparse

from retain.encoders.basis import Encoder
from retain.eval.scenarios import load_scenarios
from retain.record import MemoryType
from retain.text.typemodel import BUCKETS, TYPES, TypeModel, _Head, type_features, weigh

__all__ = ["MIN_COUNT", "Example", "accuracy", "fit_type_model", "load_examples", "main"]

MIN_COUNT = 2
"""A named feature must occur in at least this many training events to get a column."""


@dataclass(frozen=True)
class Example:
    """One event: ``scenario`` id, ``text``, ``role`` and its gold ``label``."""

    scenario: str
    text: str
    role: str
    label: MemoryType


def load_examples(paths: Sequence[str | Path]) -> list[Example]:
    """Every event of the scenario files or folders ``paths``, in file and event order.

    Raises:
        InvalidInput: a path holds no scenario, or a file is not a valid scenario.
    """
    out: list[Example] = []
    for path in paths:
        for scenario in load_scenarios(path):
            out += [
                Example(scenario.id, e.text, e.role, MemoryType(e.gold.type))
                for e in scenario.events
                if e.gold is not None
            ]
    return out


def embed_examples(examples: Sequence[Example], encoder: Encoder, cache: Path | None = None) -> npt.NDArray[np.float32]:
    """(n, d) float32 record embeddings of ``examples``, as the write path makes them. With ``cache``
    (a folder), the vectors are read from / written to ``<cache>/<sha1 of encoder and texts>.npy``
    (embedding thousands of events with MiniLM takes minutes)."""
    texts = [f"{e.role}: {e.text}" for e in examples]
    if cache is None:
        return encoder.encode(texts)
    key = hashlib.sha1("\x00".join([encoder.name, *texts]).encode("utf-8")).hexdigest()
    path = cache / f"types-{key}.npy"
    if path.exists():
        return np.asarray(np.load(path, allow_pickle=False), dtype=np.float32)
    vectors = encoder.encode(texts)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors, allow_pickle=False)
    return vectors


def inverse_document_frequency(examples: Sequence[Example]) -> npt.NDArray[np.float32]:
    """(BUCKETS,) float32 smoothed IDF of each n-gram bucket over ``examples``:
    ``ln((1 + n) / (1 + df)) + 1`` (scikit-learn's ``smooth_idf``)."""
    df = np.zeros(BUCKETS, dtype=np.float64)
    for e in examples:
        df[list(type_features(e.text, e.role)[1])] += 1.0
    return np.asarray(np.log((1.0 + len(examples)) / (1.0 + df)) + 1.0, dtype=np.float32)


def _matrix(examples: Sequence[Example], vocab: dict[str, int], idf: npt.NDArray[np.float32]) -> sparse.csr_matrix:
    """(n, V + BUCKETS) sparse float32 features: the named columns, then the weighted n-gram block."""
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for i, e in enumerate(examples):
        named, counts = type_features(e.text, e.role)
        hit = [(vocab[n], 1.0) for n in set(named) if n in vocab]
        hit += [(len(vocab) + b, v) for b, v in weigh(counts, idf).items()]
        rows += [i] * len(hit)
        cols += [c for c, _ in hit]
        vals += [v for _, v in hit]
    shape = (len(examples), len(vocab) + BUCKETS)
    return sparse.csr_matrix((np.asarray(vals, dtype=np.float32), (rows, cols)), shape=shape)


def _fit_head(x: sparse.csr_matrix, y: npt.NDArray[np.int64], c: float) -> _Head:
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=c, max_iter=3000).fit(x, y)
    weights = np.zeros((len(TYPES), x.shape[1]), dtype=np.float32)
    bias = np.full(len(TYPES), -30.0, dtype=np.float32)  # a type absent from training is never chosen
    if len(fit.classes_) == 2:  # one row: the logit of the second class against the first
        first, second = fit.classes_
        weights[second], bias[second], bias[first] = fit.coef_[0], fit.intercept_[0], 0.0
        return _Head(weights, bias)
    for row, cls in enumerate(fit.classes_):
        weights[cls] = fit.coef_[row]
        bias[cls] = fit.intercept_[row]
    return _Head(weights, bias)


def fit_type_model(
    examples: Sequence[Example],
    *,
    encoder: Encoder | None = None,
    c: float = 1.0,
    embedding_scale: float = 3.0,
    meta: dict[str, object] | None = None,
    cache: Path | None = None,
) -> TypeModel:
    """Fit both heads on ``examples`` (the embedding head only when ``encoder`` is given).

    Raises:
        InvalidInput: fewer than two types among the labels (from scikit-learn, as ValueError).
    """
    counts = Counter(name for e in examples for name in set(type_features(e.text, e.role)[0]))
    vocab = {name: i for i, name in enumerate(sorted(n for n, k in counts.items() if k >= MIN_COUNT))}
    idf = inverse_document_frequency(examples)
    x = _matrix(examples, vocab, idf)
    y = np.array([TYPES.index(e.label) for e in examples], dtype=np.int64)
    text_head = _fit_head(x, y, c)
    embedding_head = None
    if encoder is not None:
        vectors = embed_examples(examples, encoder, cache)
        head = _fit_head(sparse.hstack([x, embedding_scale * sparse.csr_matrix(vectors)]).tocsr(), y, c)
        head.weights[:, x.shape[1] :] *= embedding_scale
        embedding_head = head
    return TypeModel(
        vocab=vocab,
        text_head=text_head,
        embedding_head=embedding_head,
        encoder=encoder.name if encoder is not None else None,
        idf=idf,
        meta={"c": c, "embedding_scale": embedding_scale, "min_count": MIN_COUNT, **(meta or {})},
    )


def accuracy(model: TypeModel, examples: Sequence[Example], vectors: npt.NDArray[np.float32] | None = None) -> float:
    """Share of ``examples`` whose predicted type is the gold one (with the embedding head when
    ``vectors``, (n, d) float32, are given)."""
    if not examples:
        return float("nan")
    hits = sum(
        model.predict(e.text, e.role, None if vectors is None else vectors[i]) is e.label
        for i, e in enumerate(examples)
    )
    return hits / len(examples)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line of the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", action="append", required=True, help="training scenario file or folder")
    parser.add_argument("--out", type=Path, help="write the model here (JSON)")
    parser.add_argument("--c", type=float, default=1.0, help="inverse L2 strength")
    parser.add_argument("--encoder", default="minilm", help="'minilm' or 'none' (text head only)")
    parser.add_argument("--eval", action="append", default=[], help="scenario folder to score after fitting")
    parser.add_argument("--embedding-scale", type=float, default=3.0, help="embedding multiplier in training")
    parser.add_argument("--cache", type=Path, help="folder caching the events' embeddings between runs")
    args = parser.parse_args(argv)
    encoder: Encoder | None = None
    if args.encoder == "minilm":
        from retain.encoders.basis import MiniLMEncoder

        encoder = MiniLMEncoder()
    examples = load_examples(args.data)
    command = "python -m retain.eval.type_train " + " ".join(f"--data {d}" for d in args.data)
    model = fit_type_model(
        examples,
        encoder=encoder,
        c=args.c,
        embedding_scale=args.embedding_scale,
        cache=args.cache,
        meta={"trained_on": sorted({e.scenario for e in examples}), "command": command},
    )
    for name, data in [("train", args.data), *((d, [d]) for d in args.eval)]:
        rows = load_examples(data)
        vectors = embed_examples(rows, encoder, args.cache) if encoder is not None else None
        text_acc = accuracy(model, rows)
        full = accuracy(model, rows, vectors) if vectors is not None else float("nan")
        print(f"{name}: events {len(rows)}  type_accuracy text head {text_acc:.3f}  embedding head {full:.3f}")
    if args.out is not None:
        import json

        args.out.write_text(json.dumps(model.to_dict(), separators=(",", ":")) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
