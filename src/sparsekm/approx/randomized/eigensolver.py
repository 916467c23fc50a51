"""Orthogonal iteration (section 2) and the threaded CSR operator it runs on.

:func:`orthogonal_iteration` finds the top eigenpairs of a (sampled) Gram matrix
from matrix-vector products only; :class:`ThreadedCSROperator` multiplies a
``scipy.sparse`` CSR matrix on several threads. Used by
:class:`sparsekm.models.RandomizedKernelPCA` (Achlioptas, McSherry & Schölkopf 2001).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from sklearn.exceptions import ConvergenceWarning

from ...config import single_threaded_blas
from ...utils.validation import check_scalar
from ._common import (
    _as_generator,
    _check_finite_matrix,
)

__all__ = [
    "ThreadedCSROperator",
    "orthogonal_iteration",
    "fix_signs",
]


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
        from ...config import effective_n_threads

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
def fix_signs(V):
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
        with single_threaded_blas():
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
    return theta, fix_signs(V), n_iter, converged
