"""Guards of the learned conflict decision (:func:`retain.ingest.conflict.decide_all`): pairs that are
never an update whatever the model's probability, read from their feature row
(:data:`retain.ingest.conflict_features.FEATURES`) and the new record's :class:`TextReading`, and the
same-slot test a hard constraint's update must pass."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from retain.ingest.conflict_features import FEATURES, TextReading

__all__ = ["SLOT_COS", "TRUSTED_ROLES", "another_quantity", "asks_without_value", "evidence_of_change", "same_slot"]

_COL = {name: i for i, name in enumerate(FEATURES)}
_CHANGE_SIGNS = tuple(
    _COL[name]
    for name in (
        "cue",
        "explicit",
        "update_words",
        "flip",
        "retraction",
        "authority",
        "aligned",
        "slot_match",
        "date_change",
        "time_change",
        "amount_change",
        "new_self_correct",
        "new_news",
        "new_relative",
        "new_drop",
        "new_handover",
        "new_switch",
    )
)
_SUBJECT_COS = 0.5


def evidence_of_change(row: npt.NDArray[np.float64]) -> bool:
    """False for a pair that cannot be an update whatever the model says: no shared subject (no term
    other than words labelling numbers, no entity, no value kind, a cosine below ``_SUBJECT_COS``), or
    the same words again with only a label number changed and no sign of change (no cue of any
    family, no value of its slot replaced, no negation, retraction or authority): "distractor turn
    number 16" -> "distractor turn number 28" is a new item, not a correction."""
    subject = bool(
        row[_COL["unlabelled_overlap"]] > 0
        or row[_COL["entities"]] > 0
        or row[_COL["same_kind"]] > 0
        or row[_COL["cos"]] >= _SUBJECT_COS
    )
    signed = any(row[i] > 0 for i in _CHANGE_SIGNS)
    return subject and (signed or row[_COL["jaccard"]] < _TEMPLATE_JACCARD)


_TEMPLATE_JACCARD = 0.8


SLOT_COS = 0.6
"""Cosine (MiniLM, -1..1) above which a changed value of one kind (date, time or amount) counts as the
same slot when nothing ties the two numbers together by their context words (:func:`same_slot`)."""

TRUSTED_ROLES = frozenset({"user", "system"})
"""Roles whose records may retire a hard constraint (the trust rules of
:mod:`retain.safety.integrity`: the user's and the operator's statements; a tool's output, a retrieved
document or the agent's own reasoning never do, they open a conflict instead)."""

_KIND_CHANGES = tuple(_COL[name] for name in ("date_change", "time_change", "amount_change"))


def same_slot(row: npt.NDArray[np.float64]) -> bool:
    """True when a pair's values are two values of one slot: an aligned value change (the same words
    around another number), a number whose context words the old record's different number shares
    (``slot_match``), or a canonical value of one kind (date, time, amount) replaced in texts whose
    cosine is at least :data:`SLOT_COS`. A limit of another quantity ("up to 40 minutes offline"
    against "the window is Tuesday 17.03., 22:00-02:00") is not the same slot."""
    if row[_COL["aligned"]] > 0 or row[_COL["slot_match"]] > 0:
        return True
    return row[_COL["cos"]] >= SLOT_COS and any(row[i] > 0 for i in _KIND_CHANGES)


def asks_without_value(reading: TextReading) -> bool:
    """True when the new text is hedged or a question (:func:`retain.ingest.conflict_cues.is_question`)
    and states no canonical value: "Actually, maybe we could drop the budget rule?" proposes, it does not
    correct, so it neither supersedes nor opens a conflict."""
    return (reading.hedged or reading.question) and not reading.canon


def another_quantity(new: TextReading, old: TextReading, row: npt.NDArray[np.float64]) -> bool:
    """True when both texts state canonical values, none of one kind (date, time, amount), and nothing
    ties a number of one to a number of the other (not :func:`same_slot`): a limit of another quantity
    ("bis zu 40 Minuten offline" against "Wartungsfenster ist Dienstag, 17.03., 22:00-02:00"), never an
    update of it."""
    if not new.canon or not old.canon:
        return False
    kinds = {c[:2] for c in new.canon} & {c[:2] for c in old.canon}
    return not kinds and not same_slot(row)
