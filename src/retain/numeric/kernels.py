"""Matrix products for the search path that stay on the calling thread.

OpenBLAS (numpy's BLAS) splits a matrix product over its worker threads once it exceeds about 2**18
multiply-adds (``GEMM_MULTITHREAD_THRESHOLD`` x 65,536). For the small products of one search that
buys nothing on an idle machine, and on a busy one the calling thread waits for a worker to be
scheduled: a few-microsecond product can take 10-20 ms. :func:`blocked_product` computes the same
product in row blocks each under that size, so BLAS runs every block on the calling thread, and each
block of the left matrix is multiplied while it is in cache (a single column never reaches BLAS).
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["SINGLE_THREAD_MADDS", "blocked_product"]

F = TypeVar("F", np.float32, np.float64)

SINGLE_THREAD_MADDS = 1 << 18
"""Most multiply-adds per block (BLAS keeps products of at most this size on the calling thread)."""


def blocked_product(a: npt.NDArray[F], b: npt.NDArray[F]) -> npt.NDArray[F]:
    """``a @ b`` for a (n, d) and b (d, p), both of one float dtype; returns (n, p) of that dtype.

    Rows of ``a`` are taken in blocks of ``SINGLE_THREAD_MADDS // (d * p)`` (at least 1). A single
    column (p = 1) goes to numpy's own einsum loop instead: BLAS threads a matrix-vector product from
    about 9,216 entries on. Each output entry is the same dot product as in ``a @ b``; its last bits
    may differ, as between any two BLAS kernels.

    Raises:
        ValueError: the shapes do not chain, or the dtypes differ.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"blocked_product: shapes {a.shape} and {b.shape} do not chain")
    if a.dtype != b.dtype:
        raise ValueError(f"blocked_product: dtypes {a.dtype} and {b.dtype} differ")
    n, d = a.shape
    p = b.shape[1]
    out: npt.NDArray[F] = np.empty((n, p), dtype=a.dtype)
    if p == 1:
        np.einsum("nd,d->n", a, b[:, 0], out=out[:, 0])
        return out
    step = max(1, SINGLE_THREAD_MADDS // max(1, d * p))
    for start in range(0, n, step):
        np.matmul(a[start : start + step], b, out=out[start : start + step])
    return out
