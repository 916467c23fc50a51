"""Private helpers shared by the randomized-kernel modules (not public API)."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from ...kernels import Kernel
from ...utils._random import as_generator as _as_generator  # noqa: F401 (shared)
from ...utils.validation import check_array, check_scalar

# Bound on the entries of one temporary block (float64: 32 MiB), as in kernels.py.
_BLOCK_ELEMENTS = 2**22


def _check_s(s, owner, lower=1.0):
    """Validate the sampling parameter ``s >= 1`` (keep probability ``1/s``)."""
    if isinstance(s, numbers.Real) and not isinstance(s, bool) and np.isfinite(s) and s < lower:
        raise ValueError(
            f"The 's' parameter of {owner} must be a float >= {lower:g} (entries are kept with "
            f"probability 1/s). Got {s!r} instead."
        )
    return check_scalar(s, "s", owner, lower=lower)


def _check_gram_input(X, kernel, owner):
    """Return ``(X, kernel)``; ``kernel == "precomputed"`` means ``X`` is the Gram matrix."""
    if isinstance(kernel, str) and kernel == "precomputed":
        K = check_array(X, "K")
        if K.shape[0] != K.shape[1]:
            raise ValueError(f"{owner}: a precomputed Gram matrix K must be square; got shape "
                             f"{K.shape}.")
        scale = max(float(np.max(np.abs(K))), np.finfo(float).tiny)
        if not np.allclose(K, K.T, rtol=0.0, atol=1e-10 * scale):
            raise ValueError(f"{owner}: the precomputed Gram matrix K must be symmetric.")
        return K, "precomputed"
    if not isinstance(kernel, Kernel):
        raise TypeError(
            f"{owner}: kernel must be a sparsekm.kernels.Kernel or 'precomputed'; got "
            f"{type(kernel).__name__}."
        )
    return check_array(X, "X"), kernel


def _rows_per_block(n_cols, block_size, multiple=1):
    if block_size is None:
        rows = max(1, _BLOCK_ELEMENTS // max(int(n_cols), 1))
    else:
        rows = check_scalar(block_size, "block_size", "randomized", kind="int", lower=1)
    return max(multiple, (rows // multiple) * multiple)


def _kernel_absmax(X, kernel, block_size=None):
    """``max_ij |K_ij|`` (the paper's ``b``) without storing ``K``.

    For a positive semi-definite kernel this is ``max_i k(x_i, x_i)`` by
    Cauchy–Schwarz, ``|k(x, y)| <= sqrt(k(x, x) k(y, y))``; otherwise one blocked
    pass over ``K``.
    """
    if kernel == "precomputed":
        return float(np.max(np.abs(X)))
    if kernel.is_psd:
        return float(np.max(np.abs(kernel.diag(X))))
    step = _rows_per_block(X.shape[0], block_size)
    return max(float(np.max(np.abs(kernel(X[a:a + step], X))))
               for a in range(0, X.shape[0], step))


def _resolve_b(X, kernel, b, owner, block_size=None):
    kmax = _kernel_absmax(X, kernel, block_size)
    if b is None:
        if kmax == 0.0:
            raise ValueError(f"{owner}: the Gram matrix is identically zero; nothing to quantize.")
        return kmax
    b = check_scalar(b, "b", owner, lower=0, lower_inclusive=False)
    if b < kmax * (1 - 1e-12):
        raise ValueError(
            f"{owner}: b = {b!r} is smaller than max|K_ij| = {kmax!r}; the rounding "
            "probabilities 1/2 +- K_ij/(2b) would leave [0, 1]."
        )
    return b


def _check_finite_matrix(A, name):
    """Dense arrays and sparse matrices must be finite (operators are taken on trust)."""
    if isinstance(A, scipy.sparse.linalg.LinearOperator):
        return A
    if scipy.sparse.issparse(A):
        if not np.isfinite(A.data).all():
            raise ValueError(f"{name} contains NaN or infinity; sparsekm needs finite values "
                             f"in {name}.")
        return A
    return check_array(A, name)
