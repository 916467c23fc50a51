"""Gram-matrix quantization (section 3): one bit per entry.

:func:`quantize_gram` rounds every entry of ``K`` to ``+-b`` (``b = max|K_ij|``) with
``P(+b) = 1/2 + K_ij / (2b)``, so ``E[K_hat] = K``, and stores one bit per entry in
a :class:`QuantizedGram` (a ``scipy.sparse.linalg.LinearOperator``) (Achlioptas,
McSherry & Schölkopf 2001, section 3).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from ...kernels import ProjectedKernel
from ...utils.validation import check_scalar
from ._common import (
    _as_generator,
    _check_gram_input,
    _resolve_b,
    _rows_per_block,
)

__all__ = [
    "QuantizedGram",
    "quantize_gram",
]


# _BYTE_BITS[y, k] = bit k of byte y in np.packbits order (most significant first).
_BYTE_BITS = ((np.arange(256)[:, None] >> (7 - np.arange(8))[None, :]) & 1).astype(np.float64)


class QuantizedGram(scipy.sparse.linalg.LinearOperator):
    """A symmetric ``m x m`` matrix with entries ``+-b`` stored as one bit per entry.

    Row ``i`` is ``np.packbits`` of the indicator ``K_hat_i. == +b`` (8 entries per
    byte), so storage is ``m * ceil(m / 8)`` bytes instead of ``8 m^2`` (held in
    column-major order). It is a
    :class:`scipy.sparse.linalg.LinearOperator`: ``Q @ V = b (2 B V - 1 1^T V)`` with
    ``B`` the 0/1 matrix of bits. For one to four vectors ``B v`` is computed from
    the packed bytes by table look-up (256 partial sums per byte column); for more
    vectors one row block is unpacked at a time and multiplied with BLAS.

    Parameters
    ----------
    bits : ndarray of uint8, shape (m, ceil(m / 8))
    b : float > 0
    block_size : int, optional
        Rows unpacked at once in products.

    Attributes
    ----------
    b : float
    bits : ndarray (read-only)
    nbytes : int
        Bytes held by ``bits``.
    """

    def __init__(self, bits, b, block_size=None):
        bits = np.asarray(bits)
        if bits.dtype != np.uint8 or bits.ndim != 2:
            raise TypeError(f"bits must be a 2-D uint8 array; got {bits.dtype} {bits.shape}.")
        m = bits.shape[0]
        if bits.shape[1] != (m + 7) // 8:
            raise ValueError(f"bits must have shape (m, ceil(m/8)) = ({m}, {(m + 7) // 8}); "
                             f"got {bits.shape}.")
        self.b = check_scalar(b, "b", "QuantizedGram", lower=0, lower_inclusive=False)
        # Column-major: each byte column bits[:, c] is contiguous for the look-up product.
        self.bits = np.asfortranarray(bits)
        self.bits.setflags(write=False)
        self.block_size = block_size
        super().__init__(dtype=np.dtype(np.float64), shape=(m, m))

    @property
    def nbytes(self):
        return int(self.bits.nbytes)

    def _row_block(self, start, stop):
        return np.unpackbits(self.bits[start:stop], axis=1, count=self.shape[0])

    def toarray(self):
        """The dense ``+-b`` matrix (float64; ``8 m^2`` bytes)."""
        B = np.unpackbits(self.bits, axis=1, count=self.shape[0]).astype(np.float64)
        B *= 2.0 * self.b
        B -= self.b
        return B

    def _matmat(self, V):
        V = np.asarray(V, dtype=np.float64)
        m = self.shape[0]
        if V.shape[1] <= 4:
            BV = np.column_stack([self._bits_times_vector(V[:, j]) for j in range(V.shape[1])])
        else:
            BV = np.empty((m, V.shape[1]), dtype=np.float64)
            step = _rows_per_block(m, self.block_size)
            for a in range(0, m, step):
                BV[a:a + step] = self._row_block(a, a + step).astype(np.float64) @ V
        BV *= 2.0
        BV -= V.sum(axis=0)[None, :]
        BV *= self.b
        return BV

    def _bits_times_vector(self, v):
        """``B v`` for the 0/1 matrix ``B`` by table look-up, without unpacking ``B``.

        For each byte column ``c`` the 256 possible partial sums
        ``T[c, y] = sum_k bit_k(y) v[8c + k]`` are tabulated, so
        ``B v = sum_c T[c, bits[:, c]]``: ``m / 8`` vectorised look-ups of ``m`` bytes
        each (the bytes are stored column-major, so each ``bits[:, c]`` is contiguous)
        instead of ``m^2`` multiply-adds on unpacked bits.
        """
        m = self.shape[0]
        n_bytes = self.bits.shape[1]
        v_pad = np.zeros(n_bytes * 8, dtype=np.float64)
        v_pad[:m] = v
        table = v_pad.reshape(n_bytes, 8) @ _BYTE_BITS.T  # (n_bytes, 256)
        out = np.zeros(m, dtype=np.float64)
        for c in range(n_bytes):
            out += table[c].take(self.bits[:, c])
        return out

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def __repr__(self):
        m = self.shape[0]
        return f"QuantizedGram(m={m}, b={self.b!r}, nbytes={self.nbytes})"


def quantize_gram(X, kernel="precomputed", random_state=None, *, b=None, block_size=None):
    """1-bit quantized Gram matrix (section 3).

    ``K_hat_ij = K_hat_ji = +b`` with probability ``1/2 + K_ij / (2b)`` and ``-b``
    otherwise, independently for ``i <= j``, with ``b = max_ij |K_ij|``; hence
    ``E[K_hat] = K`` and ``Var[K_hat_ij] = b^2 - K_ij^2``.

    Parameters
    ----------
    X : array-like of shape (m, m) (the Gram matrix ``K``) or (m, n_features)
    kernel : "precomputed" or Kernel, default="precomputed"
        With a kernel, ``K`` is computed in row blocks of the upper triangle and
        quantized on the fly (every entry is needed, so this costs about half a
        dense Gram matrix in time but never stores it).
    random_state : None, int, numpy Generator or RandomState
    b : float, optional
        Rounding level (at least ``max|K_ij|``; default exactly that, which for a
        positive semi-definite kernel is ``max_i k(x_i, x_i)`` by Cauchy–Schwarz).
    block_size : int, optional
        Rows processed at once (rounded to a multiple of 8).

    Returns
    -------
    QuantizedGram
        Packed bits (``np.packbits``) and ``b``; a ``LinearOperator``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.approx.randomized import quantize_gram
    >>> K = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> Q = quantize_gram(K, random_state=0)
    >>> Q.b, Q.nbytes, bool(np.isin(Q.toarray(), [-1.0, 1.0]).all())
    (1.0, 2, True)
    """
    X, kernel = _check_gram_input(X, kernel, "quantize_gram")
    b = _resolve_b(X, kernel, b, "quantize_gram", block_size)
    rng = _as_generator(random_state)
    if isinstance(kernel, ProjectedKernel):  # project once, not once per block
        X, kernel = kernel.projection.transform(X), kernel.kernel
    m = X.shape[0]
    bits = np.zeros((m, (m + 7) // 8), dtype=np.uint8, order="F")
    step = _rows_per_block(m, block_size, multiple=8)
    for a in range(0, m, step):
        z = min(a + step, m)
        if kernel == "precomputed":
            Kb = np.asarray(X[a:z, a:], dtype=np.float64)
        else:
            Kb = kernel(X[a:z], X[a:])
        B = rng.random(Kb.shape) < 0.5 + Kb / (2.0 * b)
        # Within the diagonal square only the upper triangle was drawn: mirror it.
        square = B[:, : z - a]
        il = np.tril_indices(z - a, -1)
        square[il] = square.T[il].copy()
        bits[a:z, a // 8:] = np.packbits(B, axis=1)
        if a > 0:  # rows [a, z) left of the diagonal block: transpose of rows [0, a)
            upper = np.unpackbits(bits[:a, a // 8:(z + 7) // 8], axis=1, count=z - a)
            bits[a:z, : a // 8] = np.packbits(np.ascontiguousarray(upper.T), axis=1)
    return QuantizedGram(bits, b, block_size=block_size)
