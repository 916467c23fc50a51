"""Randomized kernels: Gram sparsification and quantization, randomized rounding, projections.

Implements Achlioptas, McSherry & Schölkopf, *Sampling techniques for kernel
methods* (NIPS 2001). Every technique replaces exact kernel evaluations by
unbiased random ones, ``E[k_hat] = k``:

* **Gram sampling** (section 3): :func:`sparsify_gram` keeps each entry of ``K``
  (symmetrically) with probability ``1/s`` and scales it by ``s``, evaluating the
  kernel *only* at the kept entries and returning a ``scipy.sparse`` matrix;
  :func:`quantize_gram` rounds every entry to ``+-b`` (``b = max|K_ij|``) with
  ``P(+b) = 1/2 + K_ij / (2b)`` and stores one bit per entry
  (:class:`QuantizedGram`); :func:`sparsify_quantize_gram` does both. The error
  ``E_K = K_hat - K`` is measured by :func:`gram_error_norm` and bounded by the
  Füredi–Komlós bound ``4 sigma sqrt(m)`` (Theorem 1, :func:`furedi_komlos_bound`
  with the realised ``sigma`` from :func:`error_sigma`); :func:`subspace_distance`
  and :func:`theorem2_bound` check Theorem 2.
* **Orthogonal iteration** (section 2): :func:`orthogonal_iteration`, used by
  :class:`sparsekm.models.RandomizedKernelPCA`.
* **Randomized rounding of expansions** (section 4): :func:`randomized_rounding`
  and the choice of ``s`` from Theorem 5, :func:`theorem5_s`.
* **Random projections** (section 5): :class:`RandomProjection` with
  ``P_ij = +-1/sqrt(s)`` and ``s`` from Theorem 6 (:func:`theorem6_s`), and
  :class:`ProjectedKernel`, which evaluates any radial or dot-product kernel on the
  projected points and works wherever a :class:`~sparsekm.kernels.Kernel` does.
"""

from __future__ import annotations

import base64
import hashlib
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from sklearn.exceptions import ConvergenceWarning

from ..config import _single_threaded_blas
from ..expansion import KernelExpansion
from ..kernels import Kernel, kernel_from_dict, register_kernel
from ..utils.validation import check_array, check_scalar

__all__ = [
    "sparsify_gram",
    "quantize_gram",
    "sparsify_quantize_gram",
    "QuantizedGram",
    "gram_error_norm",
    "error_sigma",
    "furedi_komlos_bound",
    "FurediKomlos",
    "subspace_distance",
    "theorem2_bound",
    "theorem3_c",
    "estimate_error_norm",
    "theorem2_bound_inexact",
    "davis_kahan_residual_bound",
    "orthogonal_iteration",
    "ThreadedCSROperator",
    "randomized_rounding",
    "theorem5_s",
    "theorem5_bounds",
    "theorem6_s",
    "RandomProjection",
    "ProjectedKernel",
]

# Bound on the entries of one temporary block (float64: 32 MiB), as in kernels.py.
_BLOCK_ELEMENTS = 2**22
# _BYTE_BITS[y, k] = bit k of byte y in np.packbits order (most significant first).
_BYTE_BITS = ((np.arange(256)[:, None] >> (7 - np.arange(8))[None, :]) & 1).astype(np.float64)


# -- helpers ---------------------------------------------------------------------------
def _as_generator(random_state):
    """A ``numpy.random.Generator`` from None, an int, a Generator or a RandomState."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        if isinstance(random_state, bool):
            raise TypeError("random_state must be None, an int, a Generator or a RandomState.")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise TypeError(
        f"random_state must be None, an int, a numpy Generator or RandomState; got "
        f"{type(random_state).__name__}."
    )


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


def _bernoulli_positions(rng, n_trials, p):
    """Sorted indices of the successes among ``n_trials`` independent Bernoulli(p) trials.

    Draws geometric gaps, so the cost is proportional to the number of successes
    (about ``p * n_trials``), not to ``n_trials``.
    """
    if n_trials <= 0:
        return np.empty(0, dtype=np.int64)
    if p >= 1.0:
        return np.arange(n_trials, dtype=np.int64)
    out = []
    last = -1
    while True:
        expected = (n_trials - 1 - last) * p
        k = int(expected + 6.0 * math.sqrt(expected) + 16)
        pos = last + np.cumsum(rng.geometric(p, size=k), dtype=np.int64)
        if pos[-1] >= n_trials:
            out.append(pos[pos < n_trials])
            break
        out.append(pos)
        last = int(pos[-1])
    return np.concatenate(out)


def _sample_upper_block(rng, start, stop, m, p):
    """Cells ``(i, j)`` with ``start <= i < stop``, ``i <= j < m``, each kept with prob. ``p``.

    Returns absolute row and column indices in row-major order (columns increasing
    within a row).
    """
    lengths = m - np.arange(start, stop, dtype=np.int64)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    pos = _bernoulli_positions(rng, int(offsets[-1]), p)
    local = np.searchsorted(offsets, pos, side="right") - 1
    rows = start + local
    cols = rows + (pos - offsets[local])
    return rows, cols


def _pair_evaluator(X, kernel):
    """Return ``f(I, J) -> k(x_I, x_J)``, the kernel at index pairs only.

    Pairs come in row-major runs (one row ``i``, increasing ``j``); each run is one
    ``1 x n_run`` Gram block from the kernel engine's own block hook
    (:meth:`~sparsekm.kernels.Kernel._block`, the code that computes every Gram
    entry), on the gathered ``x_j`` with cached squared norms, so the values equal
    those of ``kernel(X)`` and every kernel class is supported. A
    :class:`ProjectedKernel` projects ``X`` once and evaluates its inner kernel.
    """
    if kernel == "precomputed":
        K = X
        return lambda I, J: K[I, J]
    if isinstance(kernel, ProjectedKernel):
        X = kernel.projection.transform(X)
        kernel = kernel.kernel
    chunk = max(64, 2**17 // X.shape[1])  # gathered rows per block: 1 MiB (float64)
    sq = kernel._sqnorms(X)  # None unless radial

    def evaluate(I, J):
        out = np.empty(I.size, dtype=X.dtype)
        bounds = np.flatnonzero(np.diff(I)) + 1
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, I.size], strict=True):
            i = I[lo]
            xi, sq_i = X[i:i + 1], None if sq is None else sq[i:i + 1]
            for a in range(lo, hi, chunk):
                b = min(a + chunk, hi)
                cols = J[a:b]
                out[a:b] = kernel._block(xi, X[cols], sq_i,
                                         None if sq is None else sq[cols])[0]
        return out

    return evaluate


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


# -- Gram sampling (section 3) ---------------------------------------------------------
def _sampled_gram(X, kernel, s, *, quantize, b, random_state, block_size, owner,
                  evaluate="pairs"):
    X, kernel = _check_gram_input(X, kernel, owner)
    s = _check_s(s, owner)
    if evaluate not in ("pairs", "blocks"):
        raise ValueError(f"The 'evaluate' parameter of {owner} must be 'pairs' or 'blocks'. "
                         f"Got {evaluate!r} instead.")
    evaluate_mode = evaluate
    m = X.shape[0]
    p = 1.0 / s
    if quantize:
        b = _resolve_b(X, kernel, b, owner, block_size)
    rng = _as_generator(random_state)
    entropy = int(rng.integers(0, 2**63 - 1))
    step = _rows_per_block(m, block_size)
    starts = list(range(0, m, step))

    def pattern():
        # The same seeds replay the same pattern: pass 1 counts, pass 2 fills.
        children = np.random.SeedSequence(entropy).spawn(len(starts))
        for start, child in zip(starts, children, strict=True):
            block_rng = np.random.default_rng(child)
            rows, cols = _sample_upper_block(block_rng, start, min(start + step, m), m, p)
            yield rows, cols, block_rng

    # Pass 1: row counts of the symmetric pattern (upper part and mirrored part).
    upper = np.zeros(m, dtype=np.int64)
    lower = np.zeros(m, dtype=np.int64)
    for rows, cols, _ in pattern():
        upper += np.bincount(rows, minlength=m)
        off = cols != rows
        lower += np.bincount(cols[off], minlength=m)
    nnz = int(upper.sum() + lower.sum())
    index_dtype = np.int32 if max(nnz, m) < 2**31 - 1 else np.int64
    indptr = np.zeros(m + 1, dtype=index_dtype)
    np.cumsum(upper + lower, out=indptr[1:])
    indices = np.empty(nnz, dtype=index_dtype)
    dtype = X.dtype if kernel != "precomputed" else np.float64
    data = np.empty(nnz, dtype=dtype)
    evaluate = _pair_evaluator(X, kernel)
    fill = np.zeros(m, dtype=np.int64)  # mirrored entries written so far, per row

    # Pass 2: evaluate the kernel at the kept pairs only and write them in CSR order.
    for rows, cols, block_rng in pattern():
        if rows.size == 0:
            continue
        if kernel != "precomputed" and evaluate_mode == "blocks":
            # One GEMM-friendly Gram block (rows a..z, columns a..m), then the sample.
            a = int(rows[0])
            z = int(rows[-1]) + 1
            values = kernel(X[a:z], X[a:])[rows - a, cols - a]
        else:
            values = evaluate(rows, cols)
        values = values.astype(dtype, copy=False)
        if quantize:
            plus = block_rng.random(values.size) < 0.5 + values / (2.0 * b)
            values = np.where(plus, s * b, -s * b).astype(dtype)
        else:
            values = values * s
        # Upper part of row i (columns >= i) follows its lower[i] mirrored entries.
        run_start = np.searchsorted(rows, rows, side="left")
        pos = indptr[rows] + lower[rows] + (np.arange(rows.size) - run_start)
        indices[pos] = cols
        data[pos] = values
        off = cols != rows
        r_off, c_off, v_off = rows[off], cols[off], values[off]
        order = np.argsort(c_off, kind="stable")  # keeps rows increasing within a column
        c_sorted = c_off[order]
        run_start = np.searchsorted(c_sorted, c_sorted, side="left")
        pos = indptr[c_sorted] + fill[c_sorted] + (np.arange(c_sorted.size) - run_start)
        indices[pos] = r_off[order]
        data[pos] = v_off[order]
        fill += np.bincount(c_off, minlength=m)
    K_hat = scipy.sparse.csr_array((data, indices, indptr), shape=(m, m), copy=False)
    K_hat.has_sorted_indices = True
    return K_hat


def sparsify_gram(X, kernel, s, random_state=None, *, block_size=None, evaluate="pairs"):
    """Sparsified Gram matrix (section 3): keep each entry with probability ``1/s``.

    ``K_hat_ij = K_hat_ji = s K_ij`` with probability ``1/s`` and ``0`` otherwise,
    independently for every ``i <= j`` (diagonal included), so ``E[K_hat] = K``.
    The index pairs are sampled first and the kernel is evaluated **only** at the
    kept pairs, row block by row block (the paper's point i: sampling also speeds
    up building the matrix); the dense ``K`` never exists in memory.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or (m, m) if ``kernel="precomputed"``
        Training points (or the Gram matrix itself).
    kernel : Kernel or "precomputed"
        Radial and dot-product kernels (and :class:`ProjectedKernel`) are evaluated
        per pair in ``O(n_features)`` each; other kernels one row at a time.
    s : float >= 1
        Sampling parameter; about ``m^2 / s`` entries are kept.
    random_state : None, int, numpy Generator or RandomState
    block_size : int, optional
        Rows sampled and evaluated at once (default: about ``2**22 / m``).
    evaluate : {"pairs", "blocks"}, default="pairs"
        ``"pairs"`` evaluates the kernel only at the sampled pairs (``O(m^2 d / s)``
        work, memory-bound gathers); ``"blocks"`` computes each row block of the
        upper triangle with one GEMM and keeps the sampled entries (``O(m^2 d / 2)``
        work, but BLAS speed; the block is discarded at once). Both give the same
        matrix for the same seed; which is faster depends on ``s``, ``d`` and the
        BLAS (``benchmarks/bench_randomized.py`` measures both).

    Returns
    -------
    K_hat : scipy.sparse.csr_array of shape (m, m)
        Symmetric, canonical CSR (sorted indices), dtype of ``X``. Peak memory is
        the CSR arrays plus one block: two passes replay the same random pattern,
        the first counting entries per row, the second filling them.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.kernels import RBF
    >>> from sparsekm.approx.randomized import sparsify_gram
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> K_hat = sparsify_gram(X, RBF(0.5), s=4, random_state=0)
    >>> K_hat.shape, bool(abs(K_hat - K_hat.T).max() == 0)
    ((200, 200), True)
    """
    return _sampled_gram(X, kernel, s, quantize=False, b=None, random_state=random_state,
                         block_size=block_size, owner="sparsify_gram", evaluate=evaluate)


def sparsify_quantize_gram(X, kernel, s, random_state=None, *, b=None, block_size=None,
                           evaluate="pairs"):
    """Sparsification and quantization combined (section 3, "readily combined").

    Each entry is kept with probability ``1/s``; a kept entry is rounded to
    ``+-s b`` with ``P(+s b) = 1/2 + K_ij / (2b)``. Hence
    ``E[K_hat_ij] = (1/s) s b (2 P(+) - 1) = K_ij`` and
    ``Var[K_hat_ij] = s b^2 - K_ij^2``.

    Parameters
    ----------
    X, kernel, s, random_state, block_size, evaluate
        As in :func:`sparsify_gram`.
    b : float, optional
        Rounding level, at least ``max|K_ij|`` (default: exactly that maximum).

    Returns
    -------
    K_hat : scipy.sparse.csr_array of shape (m, m), entries ``+-s b``
    """
    return _sampled_gram(X, kernel, s, quantize=True, b=b, random_state=random_state,
                         block_size=block_size, owner="sparsify_quantize_gram",
                         evaluate=evaluate)


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


# -- error analysis (Theorems 1-3) -----------------------------------------------------
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


def _as_operator(A):
    if isinstance(A, scipy.sparse.linalg.LinearOperator):
        return A
    if scipy.sparse.issparse(A):
        return scipy.sparse.linalg.aslinearoperator(A)
    return scipy.sparse.linalg.aslinearoperator(np.asarray(A, dtype=np.float64))


def gram_error_norm(K_hat, K=None, *, X=None, kernel=None, tol=1e-6, random_state=0,
                    exact_max_size=2000):
    """Spectral norm ``||E_K|| = ||K_hat - K||_2`` (the quantity Theorems 1-4 bound).

    Parameters
    ----------
    K_hat : ndarray, scipy.sparse matrix or LinearOperator (e.g. :class:`QuantizedGram`)
    K : ndarray of shape (m, m), optional
        The exact Gram matrix. Alternatively give ``X`` and ``kernel``; then ``K v``
        is computed by ``kernel.mmv`` and ``K`` is never stored.
    X : array-like of shape (m, n_features), optional
    kernel : Kernel, optional
    tol : float
        Relative tolerance of the Lanczos estimate (``scipy.sparse.linalg.eigsh``,
        largest-magnitude eigenvalue of the symmetric ``E_K``).
    random_state : int
        Seed of the Lanczos start vector.
    exact_max_size : int
        Up to this ``m`` (with a dense ``K``) the norm is computed exactly with
        ``numpy.linalg.eigvalsh``.

    Returns
    -------
    float
    """
    if (K is None) == (X is None or kernel is None):
        raise ValueError("gram_error_norm needs either K, or both X and kernel (not both).")
    K_hat = _check_finite_matrix(K_hat, "K_hat")
    m = K_hat.shape[0]
    if K_hat.shape != (m, m):
        raise ValueError(f"K_hat must be square; got shape {K_hat.shape}.")
    if K is not None:
        K = check_array(K, "K")
        if K.shape != K_hat.shape:
            raise ValueError(f"K has shape {K.shape} but K_hat has shape {K_hat.shape}.")
        if m <= exact_max_size:
            if isinstance(K_hat, scipy.sparse.linalg.LinearOperator):
                dense = K_hat.toarray() if hasattr(K_hat, "toarray") else K_hat @ np.eye(m)
            elif scipy.sparse.issparse(K_hat):
                dense = K_hat.toarray()
            else:
                dense = np.asarray(K_hat, dtype=np.float64)
            return float(np.max(np.abs(np.linalg.eigvalsh(dense - K))))

        def k_mv(V):
            return K @ V
    else:
        X = check_array(X, "X")
        if X.shape[0] != m:
            raise ValueError(f"X has {X.shape[0]} rows but K_hat has {m}.")

        def k_mv(V):
            return kernel.mmv(X, X, V)

    A = _as_operator(K_hat)

    def mv(v):
        v = np.asarray(v, dtype=np.float64)
        return A @ v - k_mv(v)

    E = scipy.sparse.linalg.LinearOperator((m, m), matvec=mv, matmat=mv, dtype=np.float64)
    v0 = np.random.default_rng(random_state).standard_normal(m)
    vals = scipy.sparse.linalg.eigsh(E, k=1, which="LM", tol=tol, v0=v0,
                                     ncv=min(m - 1, 40), return_eigenvectors=False)
    return float(np.max(np.abs(vals)))


def error_sigma(scheme, K=None, *, s=None, b=None, k_absmax=None, k_absmin=None):
    """Largest standard deviation ``sigma`` of the entries of ``E_K`` (Theorem 1).

    ``Var[K_hat_ij]`` is ``(s - 1) K_ij^2`` for sparsification, ``b^2 - K_ij^2`` for
    quantization and ``s b^2 - K_ij^2`` for both, so the realised ``sigma`` needs
    only ``max|K_ij|`` and ``min|K_ij|``.

    Parameters
    ----------
    scheme : {"sparsify", "quantize", "both"}
    K : array-like of shape (m, m), optional
        The exact Gram matrix (or give ``k_absmax`` / ``k_absmin``).
    s : float >= 1
        Required for "sparsify" and "both".
    b : float, optional
        Rounding level (default ``max|K_ij|``).
    k_absmax, k_absmin : float, optional

    Returns
    -------
    float
    """
    if scheme not in ("sparsify", "quantize", "both"):
        raise ValueError(f"scheme must be 'sparsify', 'quantize' or 'both'; got {scheme!r}.")
    if K is not None:
        A = np.abs(check_array(K, "K"))
        k_absmax, k_absmin = float(A.max()), float(A.min())
    if k_absmax is None:
        raise ValueError("error_sigma needs K or k_absmax.")
    k_absmin = 0.0 if k_absmin is None else float(k_absmin)
    if scheme != "quantize":
        if s is None:
            raise ValueError(f"error_sigma: scheme {scheme!r} needs s.")
        s = _check_s(s, "error_sigma")
    if scheme == "sparsify":
        return math.sqrt((s - 1.0) * k_absmax**2)
    b = k_absmax if b is None else float(b)
    factor = 1.0 if scheme == "quantize" else s
    return math.sqrt(max(factor * b * b - k_absmin**2, 0.0))


@dataclass(frozen=True)
class FurediKomlos:
    """Theorem 1 for a given ``sigma`` and ``m``.

    Attributes
    ----------
    bound : float
        ``4 sigma sqrt(m)``.
    probability : float
        ``1 - 2 exp(-sigma^2 m / 8)``, the probability the theorem attaches to it.
    max_entry : float
        ``sigma sqrt(m) / log^3 m``, the theorem's bound on ``|E_ij|``.
    lower : float
        ``sigma_rms sqrt(m)`` is a lower bound on ``||E||`` for root-mean-square
        entry ``sigma_rms``; this field is ``sigma sqrt(m)`` (for reference).
    """

    sigma: float
    m: int
    bound: float
    probability: float
    max_entry: float
    lower: float


def furedi_komlos_bound(sigma, m):
    """Füredi–Komlós bound (Theorem 1): ``||E_K|| <= 4 sigma sqrt(m)``.

    Parameters
    ----------
    sigma : float >= 0
        Bound on the standard deviation of the entries (see :func:`error_sigma`).
    m : int >= 2
        Matrix size.

    Returns
    -------
    FurediKomlos
        ``.bound`` is ``4 sigma sqrt(m)``; ``.max_entry`` the magnitude condition
        ``sigma sqrt(m) / log^3 m`` under which the theorem is proved (for moderate
        ``m`` it is far below the entries' real range; the bound is then an
        empirical claim, which the reproduction checks).
    """
    sigma = check_scalar(sigma, "sigma", "furedi_komlos_bound", lower=0)
    m = check_scalar(m, "m", "furedi_komlos_bound", kind="int", lower=2)
    root = math.sqrt(m)
    return FurediKomlos(sigma=sigma, m=m, bound=4.0 * sigma * root,
                        probability=1.0 - 2.0 * math.exp(-sigma * sigma * m / 8.0),
                        max_entry=sigma * root / math.log(m) ** 3, lower=sigma * root)


def subspace_distance(F_hat, F):
    """``||F_hat^T F_perp||``: the sine of the largest principal angle (Theorem 2).

    ``F_hat`` (m, k) and ``F`` (m, p) have orthonormal columns; ``F_perp`` spans the
    orthogonal complement of ``F``. Computed as ``sqrt(1 - sigma_min(F^T F_hat)^2)``
    (``1`` when ``p < k``).
    """
    F_hat = check_array(F_hat, "F_hat")
    F = check_array(F, "F")
    if F_hat.shape[0] != F.shape[0]:
        raise ValueError(f"F_hat and F must have the same number of rows; got {F_hat.shape} "
                         f"and {F.shape}.")
    if F.shape[1] < F_hat.shape[1]:
        return 1.0
    sv = np.linalg.svd(F.T @ F_hat, compute_uv=False)
    return float(math.sqrt(max(0.0, 1.0 - min(1.0, sv[-1]) ** 2)))


def theorem2_bound(error_norm, eigvals, eigvals_hat, n_components):
    """Theorem 2's bound on the distance between the top-``l`` subspaces of ``K`` and ``K_hat``.

    With threshold ``t = lambda_hat_l`` and ``b = lambda_hat_l - lambda_{l+1}`` the
    first inequality gives ``||F_hat_l^T F_perp,l|| <= ||E_K|| / b``; the second, with
    ``t + b = lambda_l`` and ``t = lambda_hat_{l+1}``, gives ``||E_K|| / (lambda_l -
    lambda_hat_{l+1})``. Both left sides are the same sine for equal dimensions, so
    the bound is ``||E_K|| / max(lambda_hat_l - lambda_{l+1}, lambda_l - lambda_hat_{l+1})``
    (``inf`` when neither gap is positive; values >= 1 are vacuous).

    Parameters
    ----------
    error_norm : float
        ``||E_K||``.
    eigvals, eigvals_hat : array-like
        At least ``n_components + 1`` largest eigenvalues of ``K`` and ``K_hat``,
        in decreasing order.
    n_components : int
    """
    lam = np.sort(np.asarray(eigvals, dtype=float))[::-1]
    lam_hat = np.sort(np.asarray(eigvals_hat, dtype=float))[::-1]
    ell = int(n_components)
    if lam.size <= ell or lam_hat.size <= ell:
        raise ValueError(f"theorem2_bound needs n_components + 1 = {ell + 1} eigenvalues.")
    gap = max(lam_hat[ell - 1] - lam[ell], lam[ell - 1] - lam_hat[ell])
    return float(error_norm / gap) if gap > 0 else math.inf


def theorem3_c(error_norm, eigvals, n_components):
    """The constant ``c = (lambda_l - lambda_{l+1}) / (2 ||E_K||)`` of Theorems 3 and 4.

    Theorem 3 applies when ``c >= 1`` and then bounds the feature error
    ``||f_hat(x) - R f(x)|| <= ||v|| / c``.
    """
    lam = np.sort(np.asarray(eigvals, dtype=float))[::-1]
    ell = int(n_components)
    if lam.size <= ell:
        raise ValueError(f"theorem3_c needs n_components + 1 = {ell + 1} eigenvalues.")
    if error_norm <= 0:
        return math.inf
    return float((lam[ell - 1] - lam[ell]) / (2.0 * error_norm))


def estimate_error_norm(K_hat, scheme, *, s=None):
    """Estimate ``||E_K||`` from ``K_hat`` alone, without the exact ``K``.

    The spectral norm of a symmetric matrix of independent zero-mean entries is, to
    leading order, ``2 max_i sqrt(sum_j Var(E_ij))`` (the ``2 sigma`` term of the
    Bandeira–van Handel bound; for equal variances this is the semicircle edge
    ``2 sigma sqrt(m)``). The row variances are estimated from ``K_hat``:

    * ``"sparsify"``: ``Var(E_ij) = (s - 1) K_ij^2`` and
      ``E[(s - 1)/s K_hat_ij^2] = (s - 1) K_ij^2``, an unbiased estimate;
    * ``"quantize"``: ``Var(E_ij) = b^2 - K_ij^2 <= b^2`` (gives ``2 b sqrt(m)``);
    * ``"both"``: ``Var(E_ij) = s b^2 - K_ij^2 <= s b^2`` (gives ``2 b sqrt(s m)``).

    This is an *estimate* (neither a bound nor unbiased for the norm); it sets the
    noise-matched stopping threshold of :func:`orthogonal_iteration` (``atol``)
    and its shift. At m = 20,000 (USPS x3, RBF, s = 10) it gave 333 for a measured
    ``||E_K|| = 283``.

    Parameters
    ----------
    K_hat : scipy.sparse matrix (``"sparsify"``, ``"both"``) or :class:`QuantizedGram`
    scheme : {"sparsify", "quantize", "both"}
    s : float >= 1
        The sampling parameter (``"sparsify"`` and ``"both"``).

    Returns
    -------
    float
    """
    if scheme not in ("sparsify", "quantize", "both"):
        raise ValueError(f"scheme must be 'sparsify', 'quantize' or 'both'; got {scheme!r}.")
    m = K_hat.shape[0]
    if scheme == "quantize":
        if not isinstance(K_hat, QuantizedGram):
            raise TypeError("estimate_error_norm(scheme='quantize') needs a QuantizedGram.")
        return 2.0 * K_hat.b * math.sqrt(m)
    if not scipy.sparse.issparse(K_hat):
        raise TypeError(f"estimate_error_norm(scheme={scheme!r}) needs a scipy.sparse matrix.")
    if s is None:
        raise ValueError(f"estimate_error_norm: scheme {scheme!r} needs s.")
    s = _check_s(s, "estimate_error_norm")
    data = np.asarray(K_hat.data, dtype=np.float64)
    if scheme == "both":
        b = float(np.max(np.abs(data))) / s if data.size else 0.0
        return 2.0 * b * math.sqrt(s * m)
    K_hat = scipy.sparse.csr_array(K_hat)
    row_sq = np.add.reduceat(np.asarray(K_hat.data, dtype=np.float64) ** 2,
                             K_hat.indptr[:-1]) if K_hat.nnz else np.zeros(m)
    row_sq[np.diff(K_hat.indptr) == 0] = 0.0  # reduceat repeats a value for empty rows
    return 2.0 * math.sqrt((s - 1.0) / s * float(np.max(row_sq)))


def theorem2_bound_inexact(error_norm, residual_norm, ritz_min, eigval_next):
    """Theorem 2 for *computed* eigenvectors: ``(||E_K|| + ||R||) / (theta_l - lambda_{l+1})``.

    ``F_hat`` (m x l, orthonormal) with Rayleigh–Ritz values ``theta`` and residual
    ``R = K_hat F_hat - F_hat diag(theta)`` need not be exact eigenvectors of
    ``K_hat``: Theorem 2's proof, with ``F_hat^T K_hat = diag(theta) F_hat^T + R^T``,
    gives ``diag(theta) X - X D = F_hat^T E_K F_perp - R^T F_perp`` for
    ``X = F_hat^T F_perp`` and ``D <= lambda_{l+1}``, hence
    ``||F_hat^T F_perp|| <= (||E_K|| + ||R||) / (theta_l - lambda_{l+1})``. A solver
    stopped at ``||R|| <= tau ||E_K||`` loses at most a factor ``1 + tau``: the
    rigorous form of "solve only to the accuracy the sampling allows".

    Parameters
    ----------
    error_norm : float
        ``||E_K||``.
    residual_norm : float
        Spectral norm of the block residual ``R``.
    ritz_min : float
        ``theta_l``, the smallest of the ``l`` Ritz values.
    eigval_next : float
        ``lambda_{l+1}`` of the exact ``K``.

    Returns
    -------
    float
        ``inf`` when the gap is not positive; values >= 1 are vacuous.
    """
    gap = float(ritz_min) - float(eigval_next)
    return float((error_norm + residual_norm) / gap) if gap > 0 else math.inf


def davis_kahan_residual_bound(K, F_hat, eigval_next):
    """A posteriori Davis–Kahan sin-theta bound from the residual of ``F_hat`` in the exact ``K``.

    With ``H = F_hat^T K F_hat`` and ``R = K F_hat - F_hat H``, the sin-theta theorem
    (Davis & Kahan 1970; ``X = F_perp^T F_hat`` solves ``X H - D X = F_perp^T R``
    with ``D <= lambda_{l+1} < lambda_min(H)``) gives

        ||F_hat^T F_perp|| <= ||R|| / (lambda_min(H) - lambda_{l+1}).

    It uses the measured ``||R|| <= ||E_K F_hat|| + ...`` instead of ``||E_K||``,
    so it can be much tighter than Theorem 2, and it holds for any orthonormal
    ``F_hat`` (computed to any accuracy). No bound can be below the measured
    distance: where that is ~1 (e.g. l = 20 at s = 10 in the benchmark), every
    valid bound is vacuous.

    Parameters
    ----------
    K : ndarray, sparse matrix or LinearOperator of shape (m, m)
        The exact Gram matrix (anything with ``K @ F_hat``).
    F_hat : ndarray of shape (m, l)
        Orthonormal columns.
    eigval_next : float
        ``lambda_{l+1}`` of ``K``.

    Returns
    -------
    float
        ``inf`` when ``lambda_min(H) <= lambda_{l+1}``.
    """
    F_hat = check_array(F_hat, "F_hat")
    KF = np.asarray(K @ F_hat, dtype=np.float64)
    H = F_hat.T @ KF
    H = (H + H.T) / 2.0
    R = KF - F_hat @ H
    gap = float(np.linalg.eigvalsh(H)[0]) - float(eigval_next)
    if gap <= 0:
        return math.inf
    return float(np.linalg.norm(R, 2) / gap)


class ThreadedCSROperator(scipy.sparse.linalg.LinearOperator):
    """A symmetric CSR matrix whose products run on several threads.

    scipy's CSR products are single-threaded but release the GIL, so the rows are
    split into ``n_threads`` parts of equal non-zero count (views, no copy) and
    the parts are multiplied concurrently. ``dtype="float32"`` stores the values
    in single precision (half the memory traffic of float64 values; the products
    are formed in float32 and returned as float64) — harmless for a sampled
    ``K_hat``, whose entries carry relative noise ``sqrt(s - 1)``, but it limits
    attainable residuals to about ``1e-6 ||K_hat||``: use it with a noise-matched
    tolerance, not with tol = 1e-6.

    Parameters
    ----------
    A : scipy.sparse matrix of shape (m, m)
    n_threads : int, optional
        Default: :func:`sparsekm.config.effective_n_threads`.
    dtype : {"float64", "float32"}, default="float64"
    """

    def __init__(self, A, n_threads=None, dtype="float64"):
        from ..config import effective_n_threads

        if dtype not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32'; got {dtype!r}.")
        A = scipy.sparse.csr_array(A)
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"A must be square; got shape {A.shape}.")
        A.sum_duplicates()
        self._store = np.dtype(dtype)
        data = A.data.astype(self._store, copy=False)
        n_threads = effective_n_threads() if n_threads is None else check_scalar(
            n_threads, "n_threads", "ThreadedCSROperator", kind="int", lower=1)
        m, ip = A.shape[0], A.indptr
        cuts = np.searchsorted(ip, np.linspace(0, A.nnz, n_threads + 1), side="left")
        cuts = np.unique(np.clip(np.r_[0, cuts[1:-1], m], 0, m))
        self._parts = [
            (int(a), int(z), scipy.sparse.csr_array(
                (data[ip[a]:ip[z]], A.indices[ip[a]:ip[z]], ip[a:z + 1] - ip[a]),
                shape=(int(z - a), m), copy=False))
            for a, z in zip(cuts[:-1], cuts[1:], strict=True) if z > a]
        self.nnz = int(A.nnz)
        self.nbytes = int(data.nbytes + A.indices.nbytes + A.indptr.nbytes)
        self.n_threads = len(self._parts)
        self._pool = None
        super().__init__(dtype=np.dtype(np.float64), shape=A.shape)

    def _matmat(self, V):
        V = np.asarray(V).astype(self._store, copy=False)
        out = np.empty((self.shape[0],) + V.shape[1:], dtype=np.float64)

        def work(part):
            a, z, B = part
            out[a:z] = B @ V

        if self.n_threads == 1:
            work(self._parts[0])
        else:
            from concurrent.futures import ThreadPoolExecutor

            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.n_threads)
            list(self._pool.map(work, self._parts))
        return out

    def _matvec(self, v):
        return self._matmat(np.asarray(v).reshape(-1))

    def _adjoint(self):
        return self

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False)


# -- orthogonal iteration (section 2) ---------------------------------------------------
def _fix_signs(V):
    """Make the largest-magnitude entry of each column positive (deterministic output)."""
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


def orthogonal_iteration(A, n_components, *, max_iter=1000, tol=1e-7, n_oversamples=0,
                         random_state=None, shift=0.0, atol=None):
    """Orthogonal Iteration(A, l) exactly as in section 2 of the paper.

    1. ``Q`` = a random ``m x l`` matrix with orthonormal columns;
    2. while not converged: (a) ``Q <- A Q``, (b) ``Q <- Orthonormalize(Q)`` (QR);
    3. return ``Q``.

    Convergence is checked with the Rayleigh–Ritz pairs of the current ``Q``
    (eigenpairs ``(theta, W)`` of ``Q^T A Q``, which reuse the product of step 2a):
    stop when ``||A q - theta q|| <= tol * |theta_1|`` for each of the ``l`` Ritz
    vectors ``q = Q w``. Each iteration costs one product ``A Q``: ``O(m^2 l)`` for a
    dense ``A``, ``O(m^2 l / s)`` for a sparsified one.

    Parameters
    ----------
    A : ndarray, scipy.sparse matrix or LinearOperator of shape (m, m), symmetric
    n_components : int
        ``l``, the number of eigenpairs returned.
    max_iter : int
    tol : float
    n_oversamples : int, default=0
        Extra columns in ``Q`` (``0`` is the paper's algorithm); they speed up
        convergence from ``(lambda_{l+1}/lambda_l)^k`` to ``(lambda_{l+p+1}/lambda_l)^k``.
    random_state : None, int, numpy Generator or RandomState
    shift : float, default=0.0
        Iterate on ``A + shift I`` (same eigenvectors; Ritz values are reported for
        ``A``). A sampled ``K_hat`` is indefinite: its noise spectrum reaches about
        ``-||E_K||``, and when ``||E_K|| > lambda_l`` the plain iteration converges
        to those negative eigenvalues (they dominate in magnitude). A shift of
        about ``||E_K||`` (:func:`estimate_error_norm`) makes the wanted
        largest eigenvalues dominant again. ``0`` is the paper's algorithm.
    atol : float, optional
        Noise-matched stopping rule: also stop when the spectral norm of the block
        residual ``||A F - F diag(theta)||`` is at most ``atol``. With
        ``atol = tau ||E_K||`` the computed vectors are within
        :func:`theorem2_bound_inexact` ``(||E_K|| + atol) / gap`` of the exact
        ones: iterating further cannot improve the guarantee by more than a factor
        ``1 + tau``.

    Returns
    -------
    eigenvalues : ndarray of shape (n_components,)
        Ritz values in decreasing order. Orthogonal iteration finds the dominant
        (largest-magnitude) eigenvalues; for a PSD ``A`` these are the largest.
    eigenvectors : ndarray of shape (m, n_components)
        Orthonormal; the sign of each column makes its largest entry positive.
    n_iter : int
    converged : bool
        ``False`` (with a ``ConvergenceWarning``) when ``max_iter`` was reached.
    """
    A = _check_finite_matrix(A, "A")
    m = A.shape[0]
    if A.shape != (m, m):
        raise ValueError(f"A must be square; got shape {A.shape}.")
    ell = check_scalar(n_components, "n_components", "orthogonal_iteration", kind="int",
                       lower=1, upper=m)
    p = check_scalar(n_oversamples, "n_oversamples", "orthogonal_iteration", kind="int", lower=0)
    max_iter = check_scalar(max_iter, "max_iter", "orthogonal_iteration", kind="int", lower=1)
    tol = check_scalar(tol, "tol", "orthogonal_iteration", lower=0, lower_inclusive=False)
    shift = check_scalar(shift, "shift", "orthogonal_iteration")
    if atol is not None:
        atol = check_scalar(atol, "atol", "orthogonal_iteration", lower=0,
                            lower_inclusive=False)
    k = min(m, ell + p)
    rng = _as_generator(random_state)
    Q, _ = np.linalg.qr(rng.standard_normal((m, k)))  # step 1
    converged = False
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        Z = np.asarray(A @ Q, dtype=np.float64)  # step 2a
        # The O(m k^2) work runs on one BLAS thread: multi-threaded QR/eigh of these
        # thin matrices gain nothing and, on a loaded machine, spin-waiting BLAS
        # threads made them cost more than the product A Q itself.
        with _single_threaded_blas():
            H = Q.T @ Z
            theta, W = np.linalg.eigh((H + H.T) / 2.0)
            order = np.argsort(-np.abs(theta + shift))[:ell]
            order = order[np.argsort(-theta[order])]
            theta, W = theta[order], W[:, order]
            R = Z @ W - (Q @ W) * theta
            scale = max(float(np.max(np.abs(theta))), np.finfo(float).tiny)
            RtR = R.T @ R
            if np.sqrt(np.max(np.diag(RtR))) <= tol * scale or (
                    atol is not None
                    and np.sqrt(max(float(np.linalg.eigvalsh(RtR)[-1]), 0.0)) <= atol):
                converged = True
                V = Q @ W
                break
            if shift:
                Z += shift * Q
            Q, _ = np.linalg.qr(Z)  # step 2b
    if not converged:
        warnings.warn(
            f"orthogonal_iteration did not converge in {max_iter} iterations (tol={tol}); "
            "increase max_iter or n_oversamples.", ConvergenceWarning, stacklevel=2)
        H = Q.T @ np.asarray(A @ Q, dtype=np.float64)
        theta, W = np.linalg.eigh((H + H.T) / 2.0)
        order = np.argsort(-np.abs(theta + shift))[:ell]
        order = order[np.argsort(-theta[order])]
        theta, V = theta[order], Q @ W[:, order]
    return theta, _fix_signs(V), n_iter, converged


# -- randomized rounding (section 4) ----------------------------------------------------
def randomized_rounding(expansion, s, random_state=None):
    """Randomized rounding of a kernel expansion's coefficients (section 4).

    For each coefficient: if ``|alpha_i| >= 1/s`` keep ``alpha_hat_i = s alpha_i``;
    otherwise ``alpha_hat_i = sgn(alpha_i)`` with probability ``s |alpha_i|`` and
    ``0`` otherwise. The returned expansion has coefficients ``alpha_hat_i / s``
    (``f_hat(x) = s^{-1} sum_i alpha_hat_i k(x, x_i)``) and only the non-zero terms,
    so ``E[f_hat(x)] = f(x)`` for every ``x`` and any ``s > 0``. When
    ``s >= 1 / min_i |alpha_i|`` nothing is random and ``f_hat = f`` exactly.

    Parameters
    ----------
    expansion : KernelExpansion
        Single- or multi-output; each output column is rounded independently and a
        term is kept when any of its coefficients is non-zero. The intercept is
        kept as is.
    s : float > 0
        Larger ``s`` keeps more terms (about ``s * sum_i |alpha_i|`` of the small
        ones). Theorem 5's choice for a unit vector ``alpha`` is :func:`theorem5_s`.
    random_state : None, int, numpy Generator or RandomState

    Returns
    -------
    KernelExpansion
        If every coefficient rounds to zero, one term with coefficient ``0`` is
        kept so that ``f_hat(x) = intercept``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion
    >>> from sparsekm.kernels import RBF
    >>> from sparsekm.approx.randomized import randomized_rounding
    >>> rng = np.random.default_rng(0)
    >>> psi = KernelExpansion(rng.normal(size=(1000, 2)), rng.normal(size=1000) / 30, RBF())
    >>> randomized_rounding(psi, s=5, random_state=0).n_terms < 400
    True
    """
    if not isinstance(expansion, KernelExpansion):
        raise TypeError(f"randomized_rounding needs a KernelExpansion; got "
                        f"{type(expansion).__name__}.")
    s = check_scalar(s, "s", "randomized_rounding", lower=0, lower_inclusive=False)
    rng = _as_generator(random_state)
    if expansion.n_terms == 0:  # f = intercept: nothing to round
        return expansion.copy()
    alpha = np.asarray(expansion.coef, dtype=np.float64)
    mag = np.abs(alpha)
    keep_exact = (mag >= 1.0 / s) | (s * mag >= 1.0)
    u = rng.random(alpha.shape)
    rounded = np.sign(alpha) * (u < s * mag)  # alpha_hat_i for the small coefficients
    coef = np.where(keep_exact, alpha, rounded / s)
    nonzero = (coef != 0).reshape(coef.shape[0], -1).any(axis=1)
    if not nonzero.any():
        nonzero[int(np.argmax(mag.reshape(mag.shape[0], -1).max(axis=1)))] = True
    return KernelExpansion(expansion.vectors[nonzero], coef[nonzero], expansion.kernel,
                           expansion.intercept)


def theorem5_s(eps, T, c, m):
    """Theorem 5's sampling parameter ``s = 2 c sqrt(m) / (eps T)``.

    Parameters
    ----------
    eps : float in (0, 2/3)
        Relative error.
    T : float > 0, at most ``(c / eps) sqrt(m / log m)``
        Triviality threshold: ``f(x)`` is trivial if ``f(x) < T sqrt(log m)``.
    c : float > 0
        Width of the interval holding the values ``k(x, .)`` (1 for an RBF kernel).
    m : int >= 2
        Number of expansion terms.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``eps`` is outside ``(0, 2/3)``, ``T`` exceeds ``(c/eps) sqrt(m / log m)``,
        or any argument is out of range.
    """
    return theorem5_bounds(eps, T, c, m)["s"]


def theorem5_bounds(eps, T, c, m):
    """Everything Theorem 5 states for ``(eps, T, c, m)``.

    Returns
    -------
    dict
        ``s`` (``2 c sqrt(m) / (eps T)``), ``max_nonzero`` (``4 c m / (eps T)``, the
        bound on non-zero ``alpha_hat_i``), ``trivial_threshold`` (``T sqrt(log m)``),
        ``error_threshold`` (``(2 eps / 3) T sqrt(log m)``, the absolute error below
        which the relative guarantee follows) and ``probability`` (``1 - m^-3``).
    """
    owner = "theorem5_s"
    if isinstance(eps, numbers.Real) and not isinstance(eps, bool) and not 0 < eps < 2 / 3:
        raise ValueError(f"The 'eps' parameter of {owner} must be a float in the range "
                         f"(0, 2/3). Got {eps!r} instead.")
    eps = check_scalar(eps, "eps", owner, lower=0, upper=2 / 3, lower_inclusive=False,
                       upper_inclusive=False)
    T = check_scalar(T, "T", owner, lower=0, lower_inclusive=False)
    c = check_scalar(c, "c", owner, lower=0, lower_inclusive=False)
    m = check_scalar(m, "m", owner, kind="int", lower=2)
    log_m = math.log(m)
    t_max = (c / eps) * math.sqrt(m / log_m)
    if T > t_max:
        raise ValueError(f"{owner}: T = {T!r} exceeds (c/eps) sqrt(m / log m) = {t_max:.6g}, "
                         "the largest threshold Theorem 5 allows.")
    return {
        "s": 2.0 * c * math.sqrt(m) / (eps * T),
        "max_nonzero": 4.0 * c * m / (eps * T),
        "trivial_threshold": T * math.sqrt(log_m),
        "error_threshold": (2.0 * eps / 3.0) * T * math.sqrt(log_m),
        "probability": 1.0 - float(m) ** -3,
        "T_max": t_max,
    }


# -- random projections (section 5) -----------------------------------------------------
def theorem6_s(eps, beta, n):
    """Theorem 6's projection dimension ``s = (4 + 2 beta) / (eps^2/2 - eps^3/3) ln n``.

    Parameters
    ----------
    eps : float in (0, 1)
    beta : float > 0
        Failure probability ``1 / n^beta``.
    n : int >= 2
        Number of points ``m + t``.

    Returns
    -------
    int
        The formula rounded up.
    """
    owner = "theorem6_s"
    if isinstance(eps, numbers.Real) and not isinstance(eps, bool) and not 0 < eps < 1:
        raise ValueError(f"The 'eps' parameter of {owner} must be a float in the range (0, 1). "
                         f"Got {eps!r} instead.")
    eps = check_scalar(eps, "eps", owner, lower=0, upper=1, lower_inclusive=False,
                       upper_inclusive=False)
    beta = check_scalar(beta, "beta", owner, lower=0, lower_inclusive=False)
    n = check_scalar(n, "n", owner, kind="int", lower=2)
    return int(math.ceil((4.0 + 2.0 * beta) / (eps**2 / 2.0 - eps**3 / 3.0) * math.log(n)))


class RandomProjection:
    """Database-friendly random projection ``z -> z P`` (section 5, Theorem 6).

    ``P`` is ``d x s`` with i.i.d. entries ``+-1/sqrt(s)`` (each sign with probability
    1/2), so ``E ||z P||^2 = ||z||^2``.

    .. note:: The paper prints ``P_ij = p_ij / sqrt(d)``. With ``s < d`` columns
       that scaling shrinks squared lengths by ``s/d`` on average and inequality
       (2) could not hold; the lemma it cites (Achlioptas 2001, "Database-friendly
       random projections") scales by the square root of the *target* dimension,
       which is what is used here. ``tests/test_randomized.py`` checks
       ``E ||z P||^2 = ||z||^2``.

    Parameters
    ----------
    d : int >= 1
        Input dimension.
    s : int >= 1, optional
        Target dimension. Give either ``s`` or ``eps`` (with ``n_points``).
    eps : float in (0, 1), optional
        Distortion; ``s`` is then :func:`theorem6_s` ``(eps, beta, n_points)``.
    beta : float > 0, default=1.0
    n_points : int >= 2, optional
        ``n = m + t`` of Theorem 6 (training plus test points).
    random_state : None, int, numpy Generator or RandomState

    Attributes
    ----------
    matrix : ndarray of shape (d, s), read-only
    d, s : int

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.approx.randomized import RandomProjection
    >>> P = RandomProjection(256, 64, random_state=0)
    >>> P.transform(np.ones((2, 256))).shape
    (2, 64)
    """

    def __init__(self, d, s=None, *, eps=None, beta=1.0, n_points=None, random_state=None):
        self.d = check_scalar(d, "d", "RandomProjection", kind="int", lower=1)
        if s is not None and eps is not None:
            raise ValueError("RandomProjection: give either s or eps (with n_points), not both.")
        if s is None and eps is None:
            raise ValueError("RandomProjection: give the target dimension s, or eps and "
                             "n_points to use Theorem 6's s.")
        self.eps = None if eps is None else float(eps)
        self.beta = check_scalar(beta, "beta", "RandomProjection", lower=0,
                                 lower_inclusive=False)
        self.n_points = None if n_points is None else check_scalar(
            n_points, "n_points", "RandomProjection", kind="int", lower=2)
        if eps is not None:
            if n_points is None:
                raise ValueError("RandomProjection: eps needs n_points (the n of Theorem 6).")
            s = theorem6_s(eps, self.beta, self.n_points)
        self.s = check_scalar(s, "s", "RandomProjection", kind="int", lower=1)
        rng = _as_generator(random_state)
        signs = rng.integers(0, 2, size=(self.d, self.s), dtype=np.uint8)
        self._set_signs(signs)

    def _set_signs(self, signs):
        self._packed = np.packbits(signs.reshape(-1))
        P = (2.0 * signs - 1.0) / math.sqrt(self.s)
        P.setflags(write=False)
        self.matrix = P

    @classmethod
    def from_signs(cls, signs):
        """Projection with ``P = (2 signs - 1) / sqrt(s)`` for a (d, s) array of 0/1."""
        signs = np.asarray(signs)
        if signs.ndim != 2 or not np.isin(signs, (0, 1)).all():
            raise ValueError("signs must be a 2-D array of zeros and ones.")
        obj = cls.__new__(cls)
        obj.d, obj.s = int(signs.shape[0]), int(signs.shape[1])
        obj.eps, obj.beta, obj.n_points = None, 1.0, None
        obj._set_signs(signs.astype(np.uint8))
        return obj

    def transform(self, X):
        """Project the rows of ``X``: ``X P`` of shape (n_samples, s)."""
        X = check_array(X, "X")
        if X.shape[1] != self.d:
            raise ValueError(f"X has {X.shape[1]} features, but the RandomProjection expects "
                             f"d = {self.d}.")
        return X @ self.matrix.astype(X.dtype, copy=False)

    __call__ = transform

    def to_dict(self):
        """JSON-serialisable description (the signs packed 8 per byte, base64)."""
        return {"d": self.d, "s": self.s, "eps": self.eps, "beta": self.beta,
                "n_points": self.n_points,
                "signs": base64.b64encode(self._packed.tobytes()).decode("ascii")}

    @classmethod
    def from_dict(cls, spec):
        """Inverse of :meth:`to_dict`."""
        try:
            d, s = int(spec["d"]), int(spec["s"])
            packed = np.frombuffer(base64.b64decode(spec["signs"], validate=True), dtype=np.uint8)
        except Exception as exc:
            raise ValueError(f"Invalid RandomProjection description: {exc}") from None
        if d < 1 or s < 1 or packed.size != (d * s + 7) // 8:
            raise ValueError("Invalid RandomProjection description: sizes do not match.")
        obj = cls.from_signs(np.unpackbits(packed, count=d * s).reshape(d, s))
        obj.eps = None if spec.get("eps") is None else float(spec["eps"])
        obj.beta = float(spec.get("beta", 1.0))
        obj.n_points = None if spec.get("n_points") is None else int(spec["n_points"])
        return obj

    def __eq__(self, other):
        return (isinstance(other, RandomProjection) and self.d == other.d
                and self.s == other.s and np.array_equal(self._packed, other._packed))

    def __hash__(self):
        return hash((self.d, self.s, hashlib.sha1(self._packed.tobytes()).hexdigest()))

    def __repr__(self):
        return f"RandomProjection(d={self.d}, s={self.s})"


@register_kernel
class ProjectedKernel(Kernel):
    """``k_hat(x, y) = k(x P, y P)``: a radial or dot-product kernel on projected points.

    Section 5: distances and inner products, hence radial and dot-product kernel
    values, are evaluated on ``s``-dimensional random projections (cost
    ``O(m s)`` instead of ``O(m d)`` per test point once the training points are
    projected). ``ProjectedKernel`` is a :class:`~sparsekm.kernels.Kernel`, so it
    works inside :class:`~sparsekm.KernelExpansion` (vectors stay in input space)
    and every model; gradients are ``P grad k`` by the chain rule. It is saved by
    ``sparsekm.save`` like any kernel (the projection's signs are stored).

    Parameters
    ----------
    kernel : Kernel
        A radial or dot-product kernel.
    projection : RandomProjection

    Notes
    -----
    The wrapper is neither radial nor dot-product in input space
    (``is_radial = is_dot_product = False``), so methods that need a profile
    (e.g. the fixed-point pre-image iteration) refuse it rather than silently
    mis-compute.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.kernels import RBF
    >>> from sparsekm.approx.randomized import ProjectedKernel, RandomProjection
    >>> k = ProjectedKernel(RBF(0.1), RandomProjection(50, 20, random_state=0))
    >>> k(np.zeros((1, 50)), np.zeros((1, 50)))
    array([[1.]])
    """

    _param_names = ("kernel", "projection")

    def __init__(self, kernel, projection):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"ProjectedKernel: kernel must be a sparsekm.kernels.Kernel; got "
                            f"{type(kernel).__name__}.")
        if not (kernel.is_radial or kernel.is_dot_product):
            raise TypeError(f"ProjectedKernel wraps radial or dot-product kernels only; got "
                            f"{kernel!r}.")
        if not isinstance(projection, RandomProjection):
            raise TypeError(f"ProjectedKernel: projection must be a RandomProjection; got "
                            f"{type(projection).__name__}.")
        self.kernel = kernel
        self.projection = projection
        self.is_psd = kernel.is_psd

    def to_dict(self):
        return {"name": "ProjectedKernel",
                "params": {"kernel": self.kernel.to_dict(),
                           "projection": self.projection.to_dict()}}

    @classmethod
    def _from_dict_params(cls, params):
        if set(params) != {"kernel", "projection"}:
            raise ValueError(f"Invalid parameters for ProjectedKernel: {sorted(params)}.")
        return cls(kernel_from_dict(params["kernel"]),
                   RandomProjection.from_dict(params["projection"]))

    def _project(self, X, name):
        X = check_array(X, name)
        if X.shape[1] != self.projection.d:
            raise ValueError(f"{name} has {X.shape[1]} features, but the ProjectedKernel's "
                             f"projection expects d = {self.projection.d}.")
        return X @ self.projection.matrix.astype(X.dtype, copy=False)

    def _P(self, dtype):
        return self.projection.matrix.astype(dtype, copy=False)

    def __call__(self, X, Y=None, *, block_size=None):
        Xp = self._project(X, "X")
        Yp = None if Y is None else self._project(Y, "Y")
        return self.kernel(Xp, Yp, block_size=block_size)

    def mmv(self, X, Y, C, *, block_size=None, Y_sqnorms=None):
        return self.kernel.mmv(self._project(X, "X"), self._project(Y, "Y"), C,
                               block_size=block_size)

    def diag(self, X):
        return self.kernel.diag(self._project(X, "X"))

    def gradient_y(self, X, y):
        y = check_array(y, "y", ndim=1)
        Xp = self._project(X, "X")
        yp = self._project(y[None, :], "y")[0]
        G = self.kernel.gradient_y(Xp, yp)
        return G @ self._P(G.dtype).T

    def gradient_sum(self, X, Z, W, *, block_size=None):
        G = self.kernel.gradient_sum(self._project(X, "X"), self._project(Z, "Z"), W,
                                     block_size=block_size)
        return G @ self._P(G.dtype).T

    # Hooks, so that code calling the base-class machinery directly also works.
    def _sqnorms(self, X):
        return None

    def _block(self, X, Y, x_sq, y_sq):
        Xp, Yp = X @ self._P(X.dtype), Y @ self._P(Y.dtype)
        return self.kernel._block(Xp, Yp, self.kernel._sqnorms(Xp), self.kernel._sqnorms(Yp))

    def _gradient_rows(self, X, y):
        P = self._P(X.dtype)
        return self.kernel._gradient_rows(X @ P, y @ P) @ P.T

    def _gradient_sum_block(self, X, Z, W, x_sq, z_sq):
        P = self._P(X.dtype)
        Xp, Zp = X @ P, Z @ P
        G = self.kernel._gradient_sum_block(Xp, Zp, W, self.kernel._sqnorms(Xp),
                                            self.kernel._sqnorms(Zp))
        return G @ P.T
