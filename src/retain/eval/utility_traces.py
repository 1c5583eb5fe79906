"""Oracle traces and offline evaluation of EMBER's utility models.

A trace is one stream replayed with nothing evicted: its records in arrival order, their
:class:`~retain.retention.utility.UtilityContext`, and a label per record (True = some later question uses it as
evidence). Built from LoCoMo dev conversations and BEAM chats; evaluated by ROC-AUC and by the share of
evidence a "keep the top share" policy would hold, leave-one-conversation-out.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from retain.encoders.basis import Encoder
from retain.errors import DatasetUnavailable, InvalidInput
from retain.record import MemoryRecord, search_text
from retain.retention.utility import (
    FloatArray,
    Trace,
    UtilityContext,
    UtilityModel,
    train_utility,
)
from retain.text.classify import classify

if TYPE_CHECKING:
    from retain.eval.datasets import LocomoConversation
    from retain.eval.scenarios import Scenario

__all__ = [
    "DEFAULT_SHARES",
    "beam_traces",
    "evaluate",
    "evaluate_scores",
    "loco_auc",
    "locomo_traces",
    "scenario_traces",
    "stream_contexts",
]


# --- oracle traces -----------------------------------------------------------------------------------


def stream_contexts(records: Sequence[MemoryRecord]) -> list[UtilityContext]:
    """Contexts of a stream replayed with nothing evicted: held = every earlier record's embedding
    (views of one (n, d) float32 array), previous = the record before, mean_length = mean tokens so far.

    Raises:
        InvalidInput: a record without an embedding, or embeddings of different widths.
    """
    dims = {r.dim for r in records}
    if None in dims or len(dims) > 1:
        raise InvalidInput(f"records: every record needs an embedding, all of one width, to build contexts ({dims})")
    matrix = np.zeros((len(records), next(iter(dims), None) or 0), dtype=np.float32)
    for i, r in enumerate(records):
        matrix[i] = r.embedding
    total = np.concatenate([[0.0], np.cumsum([r.token_count for r in records], dtype=np.float64)])
    return [
        UtilityContext(matrix[:i], records[i - 1] if i else None, float(total[i] / i) if i else None)
        for i in range(len(records))
    ]


def _trace(records: list[MemoryRecord], labels: list[bool], encoder: Encoder) -> Trace:
    """Embed ``search_text`` of each record, count content tokens, build the stream contexts."""
    vectors = encoder.encode([search_text(r) for r in records])
    counts = encoder.count_tokens([r.content for r in records])
    embedded = [
        r.evolve(embedding=v, token_count=int(t), encoder=encoder.name)
        for r, v, t in zip(records, vectors, counts, strict=True)
    ]
    return embedded, stream_contexts(embedded), np.array(labels, dtype=bool)


def locomo_traces(conversations: Iterable[LocomoConversation], encoder: Encoder) -> list[Trace]:
    """Oracle traces from LoCoMo, one per conversation, turns streamed in order.

    Records as :func:`retain.eval.locomo.ingest` makes them (namespace = sample id, role and
    ``metadata["speaker"]`` = the speaker, ``metadata["caption"]`` = the image caption, seq, segment
    ``session_<n>``, session date as event time), typed by :func:`retain.text.classify.classify` (what
    :class:`retain.Memory` does when no type is given), embedded from :func:`retain.record.search_text`
    and token-counted with ``encoder``. Label: the turn is evidence of some question (any category).
    Only turns are read, never the ``observation`` / ``session_summary`` / ``event_summary`` annotations.
    """
    traces = []
    for conv in conversations:
        evidence = {e for q in conv.questions for e in q.evidence}
        records = [
            MemoryRecord(
                id=f"{conv.sample_id}:{seq}",
                namespace=conv.sample_id,
                content=turn.text,
                type=classify(turn.text, turn.speaker),
                role=turn.speaker,
                source=f"locomo:{conv.sample_id}:{turn.dia_id}",
                event_time=turn.session_time,
                seq=seq,
                segment=f"session_{turn.session}",
                metadata={"speaker": turn.speaker, "dia_id": turn.dia_id}
                | ({"caption": turn.caption} if turn.caption else {}),
            )
            for seq, turn in enumerate(conv.turns)
        ]
        traces.append(_trace(records, [t.dia_id in evidence for t in conv.turns], encoder))
    return traces


_BEAM_MARKER = re.compile(r"\s*->->\s*[\d,\s]*$")


def _ids_in(value: Any) -> set[int]:
    """Every message id in a ``source_chat_ids`` value: int, digit string, (nested) list, dict of lists."""
    if isinstance(value, bool):
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, str):
        return {int(value)} if value.strip().isdigit() else set()
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list | tuple) else ()
    return set().union(*map(_ids_in, items))


def beam_traces(chat_dirs: Iterable[str | Path], encoder: Encoder) -> list[Trace]:
    """Oracle traces from BEAM chat folders, messages streamed in order.

    Each folder holds ``chat.json`` (or ``chat_trunecated.json``, preferred when both exist) and
    ``probing_questions/probing_questions.json``. Records: namespace ``beam-<folder>``, role user /
    assistant, segment ``batch_<n>``, seq, ``metadata["message_id"]``. The generator's plan markers
    ("->-> 1,2" at the end of some user messages) are stripped; ``question_type`` / ``index`` fields are
    never read (they are generation annotations). Label: the message id appears in some probing
    question's ``source_chat_ids`` (flat list, nested lists or dict of lists, any category).

    Raises:
        DatasetUnavailable: a folder without a chat file or probing questions, or unreadable JSON.
    """
    traces = []
    for folder in map(Path, chat_dirs):
        chats = sorted(folder.glob("chat*.json"), key=lambda p: ("trun" not in p.name, p.name))
        questions_path = folder / "probing_questions" / "probing_questions.json"
        if not chats or not questions_path.is_file():
            raise DatasetUnavailable(f"{folder}: expected chat.json and probing_questions/probing_questions.json")
        try:
            chat = json.loads(chats[0].read_text(encoding="utf-8"))
            questions = json.loads(questions_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DatasetUnavailable(f"{folder}: not readable as JSON ({exc})") from exc
        wanted = set().union(*(_ids_in(q.get("source_chat_ids")) for qs in questions.values() for q in qs))
        records: list[MemoryRecord] = []
        labels: list[bool] = []
        for batch in chat:
            for message in (m for turn in batch.get("turns", []) for m in turn):
                content = _BEAM_MARKER.sub("", str(message.get("content") or "")).strip()
                if content:
                    role = str(message.get("role") or "user")
                    records.append(
                        MemoryRecord(
                            id=f"beam-{folder.name}:{message['id']}",
                            namespace=f"beam-{folder.name}",
                            content=content,
                            type=classify(content, role),
                            role=role,
                            source=f"beam:{folder.name}:{message['id']}",
                            seq=len(records),
                            segment=f"batch_{batch.get('batch_number', 0)}",
                            metadata={"message_id": message["id"]},
                        )
                    )
                    labels.append(message["id"] in wanted)
        traces.append(_trace(records, labels, encoder))
    return traces


def scenario_traces(scenarios: Iterable[Scenario]) -> list[Trace]:
    """Agent traces from scenario files (``retain-scenario/1``), one per scenario, events in order.

    Records as a replay stores them, without embeddings (the agent features need none): content,
    role, type by :func:`retain.text.classify.classify` (gold types are never read), the event's phase
    in ``metadata["phase"]``, ``seq`` = position. Context: the record before (no held embeddings, no
    mean length). Label: some probe after the event names it in ``needed`` (what a later decision
    needed); ``forbidden`` and ``gold`` are not read.
    """
    from retain.state.candidates import PHASE_KEY

    traces: list[Trace] = []
    for s in scenarios:
        position = {e.id: e.index for e in s.events}
        needed = {n for p in s.probes for n in p.needed if position.get(n, 1 << 30) <= position[p.after]}
        records = [
            MemoryRecord(
                id=f"{s.id}:{e.id}",
                namespace=s.id,
                content=e.text,
                type=classify(e.text, e.role),
                role=e.role,
                source=f"scenario:{s.id}:{e.id}",
                seq=e.index,
                metadata={PHASE_KEY: str(e.state["phase"])} if e.state.get("phase") else {},
            )
            for e in s.events
        ]
        empty = np.zeros((0, 0), dtype=np.float32)
        contexts = [UtilityContext(empty, records[i - 1] if i else None) for i in range(len(records))]
        traces.append((records, contexts, np.array([e.id in needed for e in s.events], dtype=bool)))
    return traces


# --- evaluation --------------------------------------------------------------------------------------

DEFAULT_SHARES = (0.10, 0.25, 0.50)


def _metrics(trace: Trace, scores: FloatArray, shares: Sequence[float]) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score

    records, _, labels = trace
    y = np.asarray(labels, dtype=bool)
    row: dict[str, Any] = {"name": records[0].namespace if records else "", "n": len(y), "positives": int(y.sum())}
    row["auc"] = float(roc_auc_score(y, scores)) if 0 < y.sum() < len(y) else float("nan")
    order = np.argsort(-scores, kind="stable")
    for share in shares:
        row[f"hit@{share:.0%}"] = float(y[order[: math.ceil(share * len(y))]].sum() / max(1, y.sum()))
    return row


def _summary(rows: list[dict[str, Any]], shares: Sequence[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"per_trace": rows, "mean_auc": float(np.nanmean([r["auc"] for r in rows]))}
    return out | {f"hit@{s:.0%}": float(np.mean([r[f"hit@{s:.0%}"] for r in rows])) for s in shares}


def evaluate_scores(
    traces: Sequence[Trace], scores: Sequence[FloatArray], *, shares: Sequence[float] = DEFAULT_SHARES
) -> dict[str, Any]:
    """What :func:`evaluate` returns, for scores computed elsewhere: ``scores[i]`` is an (n_i,) float
    array over ``traces[i]``'s records (higher = more likely needed), e.g. a model of another library
    or a non-causal reference such as a dataset's annotations.

    Raises:
        InvalidInput: a different number of score arrays than traces, or an array of the wrong length.
    """
    if len(scores) != len(traces):
        raise InvalidInput(f"scores: {len(scores)} arrays for {len(traces)} traces; need one per trace")
    for i, (trace, values) in enumerate(zip(traces, scores, strict=True)):
        if len(values) != len(trace[2]):
            raise InvalidInput(f"scores[{i}]: {len(values)} values for {len(trace[2])} records")
    return _summary(
        [_metrics(t, np.asarray(v, dtype=np.float64), shares) for t, v in zip(traces, scores, strict=True)], shares
    )


def evaluate(
    model: UtilityModel, traces: Sequence[Trace], *, shares: Sequence[float] = DEFAULT_SHARES
) -> dict[str, Any]:
    """ROC-AUC and top-share hit rates of ``model`` on each trace, as is (in-sample if it saw them).

    Hit rate at share s: keep the ceil(s * n) highest-scored records of a trace (ties in stream
    order); the fraction of the trace's positives that are kept (recall of "keep the top s").
    Returns ``{"per_trace": [{"name", "n", "positives", "auc", "hit@10%", ...}], "mean_auc": ...,
    "hit@10%": mean over traces, ...}``.
    """
    return _summary([_metrics(t, model.score(t[0], t[1]), shares) for t in traces], shares)


def loco_auc(
    traces: Sequence[Trace],
    *,
    held_out: Sequence[int] | None = None,
    shares: Sequence[float] = DEFAULT_SHARES,
    **train: Any,
) -> dict[str, Any]:
    """Leave-one-conversation-out evaluation of :func:`train_utility` (``train`` = its keyword arguments).

    Each trace (or each index in ``held_out``) is scored by a model fitted on all the *other* traces.
    Returns what :func:`evaluate` returns: per-trace ROC-AUC and hit rates, their means.
    """
    rows = []
    for i in range(len(traces)) if held_out is None else held_out:
        model = train_utility([t for j, t in enumerate(traces) if j != i], **train)
        rows.append(_metrics(traces[i], model.score(traces[i][0], traces[i][1]), shares))
    return _summary(rows, shares)
