"""Gram-matrix sampling (section 3): sparsified Gram matrices.

Achlioptas, McSherry & Schölkopf, *Sampling techniques for kernel methods* (NIPS
2001), section 3: :func:`sparsify_gram` keeps each entry of ``K`` (symmetrically)
with probability ``1/s`` and scales it by ``s``, so ``E[K_hat] = K``; the kernel is
evaluated *only* at the kept entries and a ``scipy.sparse`` matrix is returned.
:func:`sparsify_quantize_gram` also rounds every kept entry to ``+-b s``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse

from ...kernels import ProjectedKernel
from ._common import (
    _as_generator,
    _check_gram_input,
    _check_s,
    _resolve_b,
    _rows_per_block,
)

__all__ = [
    "sparsify_gram",
    "sparsify_quantize_gram",
]


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
