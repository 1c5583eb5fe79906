"""The logistic regression both learned scorers use (retrieval fusion and EMBER utility).

Features are clipped to their 1st-99th percentile range in training, standardised, and fitted with
L2-regularised logistic regression (scikit-learn). The clip range and the standardisation travel with
the model, so scoring repeats exactly what training saw.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["ClippedLogistic", "fit_clipped_logistic"]

FloatArray = npt.NDArray[np.float64]


class ClippedLogistic(NamedTuple):
    """A fitted model: p = sigmoid(weights . (clip(x, low, high) - mean) / scale + bias); all (F,)."""

    weights: FloatArray
    bias: float
    mean: FloatArray
    scale: FloatArray
    low: FloatArray
    high: FloatArray


def fit_clipped_logistic(
    x: FloatArray, y: npt.NDArray[np.bool_], *, c: float, column_weight: FloatArray | None = None
) -> ClippedLogistic:
    """Fit on (n, F) float64 features ``x`` and (n,) bool labels ``y``.

    Args:
        c: inverse regularisation strength (scikit-learn's ``C``).
        column_weight: optional (F,) multipliers applied after standardisation (a column weighted
            0.1 is shrunk tenfold, so the L2 penalty holds it back more).
    """
    from sklearn.linear_model import LogisticRegression

    low, high = np.percentile(x, 1, axis=0), np.percentile(x, 99, axis=0)
    x = np.clip(x, low, high)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    if column_weight is not None:
        scale = scale / column_weight
    fit = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, y)
    return ClippedLogistic(fit.coef_[0].astype(np.float64), float(fit.intercept_[0]), mean, scale, low, high)
