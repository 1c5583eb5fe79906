"""Products that stay on the calling thread (retain.numeric.kernels) against numpy's plain product."""

from __future__ import annotations

import numpy as np
import pytest

from retain.numeric.kernels import blocked_product


# (3000, 384, 3) is over SINGLE_THREAD_MADDS, so it is cut into blocks
@pytest.mark.parametrize("shape", [(0, 8, 3), (1, 8, 1), (7, 5, 2), (3000, 384, 3), (500, 384, 1), (257, 1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_product_is_the_matrix_product(shape: tuple[int, int, int], dtype: type) -> None:
    n, d, p = shape
    rng = np.random.default_rng(n + d + p)
    a, b = rng.standard_normal((n, d)).astype(dtype), rng.standard_normal((d, p)).astype(dtype)
    got = blocked_product(a, b)
    assert got.shape == (n, p) and got.dtype == dtype
    tol = 1e-4 if dtype is np.float32 else 1e-10
    np.testing.assert_allclose(got, (a.astype(np.float64) @ b.astype(np.float64)), rtol=tol, atol=tol)


def test_blocked_product_refuses_mismatched_operands() -> None:
    with pytest.raises(ValueError, match="chain"):
        blocked_product(np.zeros((2, 3)), np.zeros((4, 1)))
    with pytest.raises(ValueError, match="dtypes"):
        blocked_product(np.zeros((2, 3)), np.zeros((3, 1), np.float32))
