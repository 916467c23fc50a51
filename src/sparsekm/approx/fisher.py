"""Kernel Fisher discriminant solvers (Mika et al.; Franc & Hlaváč 2003, eq. 5 and 7).

The linear algebra below the estimators :class:`~sparsekm.models.KernelFisherDiscriminant`
and :class:`~sparsekm.models.ApproxKFD` and the distributed fit
(:mod:`sparsekm.approx.gamma_distributed`): scatter, the regularised Rayleigh-quotient
solution and the threshold.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh

__all__ = ["fisher_scatter", "kfd_solve", "kfd_path", "fisher_threshold", "approx_kfd_fit"]


def fisher_scatter(A, y):
    """Within-class scatter ``N = A^T Z A`` and mean difference ``d = A^T (e_+ - e_-)``.

    Parameters
    ----------
    A : ndarray of shape (n_samples, n_terms)
        ``A[i, j] = <Phi(x_i), Phi(z_j)>``.
    y : ndarray of shape (n_samples,) with values ±1

    Returns
    -------
    N : ndarray of shape (n_terms, n_terms)
    d : ndarray of shape (n_terms,)
    means : tuple of two ndarrays of shape (n_terms,)
        Mean rows of ``A`` over the positive and the negative class.
    """
    N = np.zeros((A.shape[1], A.shape[1]), dtype=np.float64)
    means = []
    for label in (1.0, -1.0):
        Ak = A[y == label]
        mu = Ak.mean(axis=0)
        Ac = Ak - mu
        N += (Ac.T @ Ac) / Ak.shape[0]
        means.append(mu)
    return N, means[0] - means[1], tuple(means)


def kfd_solve(N, d, C):
    """Minimiser of ``a^T N a + C a^T a`` subject to ``a^T d = 2`` (eq. 5 / eq. 7).

    Raises
    ------
    ValueError
        If ``N + C I`` is singular (``C = 0`` with rank-deficient scatter) or the
        class means coincide (``d = 0``).
    """
    M = N + C * np.eye(N.shape[0])
    try:
        v = cho_solve(cho_factor(M, lower=True, check_finite=False), d, check_finite=False)
    except np.linalg.LinAlgError:
        raise ValueError("N + C I is singular: increase the regulariser C (it must be > 0 "
                         "when the within-class scatter is rank deficient).") from None
    denom = float(d @ v)
    if not np.isfinite(denom) or denom <= 0:
        raise ValueError("The projected class means coincide (d = 0); the Fisher discriminant "
                         "is undefined for these data.")
    return 2.0 * v / denom


def kfd_path(N, d, Cs):
    """:func:`kfd_solve` for several ``C`` from one eigendecomposition of ``N``."""
    lam, U = eigh(N, check_finite=False)
    Ud = U.T @ d
    out = []
    for C in Cs:
        v = U @ (Ud / (lam + C))
        out.append(2.0 * v / float(d @ v))
    return out


def fisher_threshold(coef, means):
    """Bias ``b = -coef^T (mu_+ + mu_-) / 2``: the midpoint of the projected class means."""
    return -0.5 * float(coef @ (means[0] + means[1]))


def approx_kfd_fit(Gamma, cholesky, y, C):
    """Eq. 7 from ``Gamma`` (n, m) and ``L_r`` (m, m); returns ``(alpha', b)``.

    The rows of ``A = Gamma L_r^T`` are ``K_r beta_i = F_r^T Phi'(x_i)``, so
    ``N' = A^T Z A`` and ``m' = A^T e``.
    """
    A = np.asarray(Gamma, dtype=np.float64) @ np.asarray(cholesky, dtype=np.float64).T
    N, d, means = fisher_scatter(A, y)
    coef = kfd_solve(N, d, C)
    return coef, fisher_threshold(coef, means)
