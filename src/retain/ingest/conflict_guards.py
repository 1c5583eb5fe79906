"""Guards of the learned conflict decision (:func:`retain.ingest.conflict.decide_all`): pairs that are
never an update whatever the model's probability, read from their feature row
(:data:`retain.ingest.conflict_features.FEATURES`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from retain.ingest.conflict_features import FEATURES

__all__ = ["evidence_of_change"]

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
