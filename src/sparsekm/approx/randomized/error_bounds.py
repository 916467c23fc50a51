"""Error norms of randomized Gram matrices and the paper's bounds (Theorems 1-3).

The error ``E_K = K_hat - K`` is measured by :func:`gram_error_norm` and bounded by
the Füredi–Komlós bound ``4 sigma sqrt(m)`` (Theorem 1, :func:`furedi_komlos_bound`
with the realised ``sigma`` from :func:`error_sigma`); :func:`subspace_distance`,
:func:`theorem2_bound` and :func:`theorem3_c` check Theorems 2 and 3, and
:func:`theorem2_bound_inexact` / :func:`davis_kahan_residual_bound` extend Theorem 2
to inexact eigenvectors (Achlioptas, McSherry & Schölkopf 2001).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse
import scipy.sparse.linalg

from ...utils.validation import check_array, check_scalar
from ._common import (
    _check_finite_matrix,
    _check_s,
)
from .quantization import QuantizedGram

__all__ = [
    "gram_error_norm",
    "error_sigma",
    "FurediKomlos",
    "furedi_komlos_bound",
    "subspace_distance",
    "theorem2_bound",
    "theorem3_c",
    "estimate_error_norm",
    "theorem2_bound_inexact",
    "davis_kahan_residual_bound",
]


# -- error analysis (Theorems 1-3) -----------------------------------------------------
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
