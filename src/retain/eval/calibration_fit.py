"""Fit the relevance calibration (:mod:`retain.retrieval.calibration`) and measure it.

Data: LoCoMo dev conversations, split by conversation before looking (:data:`SPLIT`): "fit"
conversations fit the Platt models, the "choose" conversation picks the documented threshold, the
"held-out" conversations give the final figures. Every question of a conversation is asked of its
own memory in each preset (:data:`PRESETS_MEASURED`, top :data:`DEPTH` hits); a hit is relevant
when it is one of the question's evidence turns. "Nothing relevant" queries are asked too, labelled
all irrelevant: questions of another conversation (other people, other lives) and
:data:`OFF_TOPIC` (topics no LoCoMo conversation has, in several languages, and strings of
nonsense).

Run: ``python -m retain.eval.calibration_fit collect --encoder minilm --out rows-minilm.jsonl``
(once per encoder: ``minilm``, ``hashing-64``, ``hashing-256``, ...), then ``python -m
retain.eval.calibration_fit fit rows-*.jsonl --out src/retain/models/calibration.json`` (fits on
the fit split, prints Brier score, ECE, reliability bins, "nothing relevant -> []" rates and
recall@10 for thresholds, per split and preset).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from retain.encoders.basis import Encoder, HashingEncoder, MiniLMEncoder
from retain.eval.datasets import load_locomo
from retain.eval.locomo import HEADLINE_CATEGORIES, ingest
from retain.memory import Memory
from retain.retrieval.calibration import Platt, RelevanceCalibration, coverage
from retain.text.lexical import query_terms

__all__ = ["OFF_TOPIC", "PRESETS_MEASURED", "SPLIT", "collect", "fit", "main"]

SPLIT = {
    "fit": ("conv-26", "conv-30", "conv-41", "conv-42"),
    "choose": ("conv-43",),
    "held-out": ("conv-44", "conv-47"),
}
"""LoCoMo dev conversations by role (fixed before any figure was read)."""
PRESETS_MEASURED = ("default", "rrf", "lexical", "dense")
DEPTH = 30
"""Hits kept per search: the top 10 are the calibration rows, the rest let a threshold pull lower
hits up into recall@10."""
FOREIGN_PER_CONVERSATION = 40
OFF_TOPIC = (
    "What is the torque specification for the cylinder head bolts?",
    "How do I configure BGP route reflectors on a Juniper router?",
    "Which Kubernetes admission controller rejects privileged pods?",
    "What was the closing price of the Nikkei index on Friday?",
    "How many milligrams of ibuprofen can a child of 20 kg take?",
    "What is the VAT rate for e-books in Denmark?",
    "Wie hoch ist die Grunderwerbsteuer in Bayern?",
    "¿Cuál es el horario del consulado en Valencia?",
    "Quel est le délai de préavis pour un bail commercial?",
    "服务器的RAID控制器型号是什么？",
    "来月の経費精算の締め切りはいつですか？",
    "What is the melting point of tungsten carbide?",
    "Which SQL isolation level prevents phantom reads?",
    "What gauge of wire does a 40 amp circuit need?",
    "qwzx plorb fentic vashu trindle",
    "zzkq vrrb 77x lorem quux",
    "asdf jkl; qwer uiop",
    "xylophone quantum tariff mitochondria",
    "the invoice number for the forklift lease",
    "error code 0x80070005 during the firmware update",
)
"""Queries about nothing a LoCoMo conversation holds."""

Row = dict[str, Any]


def _encoder(name: str) -> Encoder:
    if name == "minilm":
        return MiniLMEncoder()
    if name.startswith("hashing-"):
        return HashingEncoder(int(name.removeprefix("hashing-")))
    raise SystemExit(f"unknown encoder {name!r}")


def _role(sample_id: str) -> str:
    return next((role for role, ids in SPLIT.items() if sample_id in ids), "unused")


def collect(data: str, encoder_name: str, out: Path) -> int:
    """Write one JSON line per (query, preset, hit) to ``out``; returns the number of rows."""
    conversations = [c for c in load_locomo(data) if _role(c.sample_id) != "unused"]
    encoder = _encoder(encoder_name)
    rows = 0
    with out.open("w", encoding="utf-8") as fh:
        for i, conv in enumerate(conversations):
            other = conversations[(i + 1) % len(conversations)]
            queries: list[tuple[str, str, tuple[str, ...]]] = [
                ("locomo", q.question, tuple(q.evidence))
                for q in conv.questions
                if q.category in HEADLINE_CATEGORIES and q.evidence
            ]
            foreign = [q.question for q in other.questions if q.category in HEADLINE_CATEGORIES]
            queries += [("foreign", q, ()) for q in foreign[:FOREIGN_PER_CONVERSATION]]
            queries += [("offtopic", q, ()) for q in OFF_TOPIC]
            for line in _ask(conv, encoder, encoder_name, queries):
                fh.write(json.dumps(line) + "\n")
                rows += 1
            print(f"{conv.sample_id}: {len(queries)} queries", file=sys.stderr, flush=True)
    return rows


def _ask(
    conv: Any, encoder: Encoder, encoder_name: str, queries: Sequence[tuple[str, str, tuple[str, ...]]]
) -> Iterable[Row]:
    namespace = f"locomo-{conv.sample_id}"
    asked = max((t.session_time for t in conv.turns if t.session_time is not None), default=None)
    mem = Memory(":memory:", encoder=encoder)
    try:
        id_to_dia = ingest(mem, conv, namespace)
        vectors = encoder.encode([q for _, q, _ in queries])
        for qi, ((kind, query, evidence), qvec) in enumerate(zip(queries, vectors, strict=True)):
            terms = query_terms(query)
            for preset in PRESETS_MEASURED:
                hits = mem.search(query, namespace=namespace, k=DEPTH, config=preset, allow_raw=True, now=asked)
                records = [h.record for h in hits]
                cover = coverage(terms, records)
                for rank, (rec, cov) in enumerate(zip(records, cover, strict=True), start=1):
                    cos = float(np.dot(rec.embedding, qvec)) if rec.embedding is not None else None
                    dia = id_to_dia.get(rec.id, "")
                    yield {
                        "encoder": encoder_name,
                        "conv": conv.sample_id,
                        "role": _role(conv.sample_id),
                        "kind": kind,
                        "q": qi,
                        "n_evidence": len(evidence),
                        "preset": preset,
                        "rank": rank,
                        "cosine": cos,
                        "coverage": float(cov),
                        "label": dia in evidence,
                    }
                if not hits:
                    yield {
                        "encoder": encoder_name,
                        "conv": conv.sample_id,
                        "role": _role(conv.sample_id),
                        "kind": kind,
                        "q": qi,
                        "n_evidence": len(evidence),
                        "preset": preset,
                        "rank": 0,
                    }
    finally:
        mem.close()


def _logistic(x: npt.NDArray[np.float64], y: npt.NDArray[np.bool_], names: tuple[str, ...]) -> Platt:
    """Platt fit with non-negative weights: a feature whose weight comes out negative is dropped."""
    from sklearn.linear_model import LogisticRegression

    keep = list(range(x.shape[1]))
    while True:
        model = LogisticRegression(C=100.0, max_iter=1000).fit(x[:, keep], y)
        w = model.coef_[0]
        if (w >= 0).all():
            weights = [0.0] * len(names)
            for j, wj in zip(keep, w, strict=True):
                weights[j] = float(wj)
            return Platt(names, tuple(weights), float(model.intercept_[0]))
        keep = [j for j, wj in zip(keep, w, strict=True) if wj >= 0]


def _load(paths: Sequence[str]) -> list[Row]:
    rows: list[Row] = []
    for p in paths:
        rows += [json.loads(line) for line in Path(p).read_text(encoding="utf-8").splitlines() if line]
    return rows


def _training(rows: Sequence[Row], encoder: str | None) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Fit rows: top-10 hits of every preset on the fit conversations, LoCoMo questions and nothing-relevant
    queries alike (one row per distinct (query, hit, preset))."""
    picked = [
        r
        for r in rows
        if r["role"] == "fit" and r["rank"] and r["rank"] <= 10 and (encoder is None or r["encoder"] == encoder)
    ]
    if encoder is None:
        x = np.array([[r["coverage"]] for r in picked], dtype=np.float64)
    else:
        x = np.array([[r["cosine"] or 0.0, r["coverage"]] for r in picked], dtype=np.float64)
    return x, np.array([r["label"] for r in picked], dtype=bool)


def fit(paths: Sequence[str], out: Path | None) -> RelevanceCalibration:
    """Fit every encoder's model and the coverage-only fallback on the fit split; print the figures."""
    from retain.eval.calibration_report import report

    rows = _load(paths)
    encoders = sorted({r["encoder"] for r in rows})
    by_encoder = {}
    for enc in encoders:
        x, y = _training(rows, enc)
        by_encoder[_encoder_key(enc)] = _logistic(x, y, ("cosine", "coverage"))
    x, y = _training([r for r in rows if r["encoder"] == encoders[0]], None)
    fallback = _logistic(x, y, ("coverage",))
    model = RelevanceCalibration(
        by_encoder,
        fallback,
        trained_on="LoCoMo dev, fit conversations "
        + ", ".join(SPLIT["fit"])
        + "; top-10 hits of presets "
        + ", ".join(PRESETS_MEASURED)
        + "; labels: evidence turns",
    )
    report(rows, model, _encoder_key)
    if out is not None:
        out.write_text(model.to_json() + "\n", encoding="utf-8")
    return model


def _encoder_key(name: str) -> str:
    """The ``Encoder.name`` of a collect run's encoder argument."""
    return MiniLMEncoder.name if name == "minilm" else name


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m retain.eval.calibration_fit")
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--data", default="../shared/data/locomo/locomo_dev.json")
    c.add_argument("--encoder", default="minilm")
    c.add_argument("--out", type=Path, required=True)
    f = sub.add_parser("fit")
    f.add_argument("rows", nargs="+")
    f.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "collect":
        print(collect(args.data, args.encoder, args.out), "rows")
    else:
        fit(args.rows, args.out)


if __name__ == "__main__":
    main()
