"""Sparse kernel Fisher discriminant (Wu, Schölkopf, Bakır, JMLR 2006, appendix A, eq. 57-63)."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ..utils.validation import check_array
from ._lbfgs import _lbfgs_over_Z
from .fixed_z import check_Z

__all__ = ["skfd_objective", "skfd_gradient", "skfd_optimize"]


def _skfd_parts(X, y, Z, kernel, mu):
    Kzx = kernel(Z, X)  # psi_z(x_i) as columns
    Kz = kernel(Z)
    pos = y > 0
    m1 = Kzx[:, pos].mean(axis=1)
    m2 = Kzx[:, ~pos].mean(axis=1)
    d = m1 - m2
    Cen = Kzx.copy()
    Cen[:, pos] -= m1[:, None]
    Cen[:, ~pos] -= m2[:, None]
    Bz = Cen @ Cen.T + mu * Kz  # within-class scatter + mu ||w||^2 (eq. 51, 56)
    return Kzx, Kz, d, Bz


def skfd_objective(X, y, Z, kernel, mu):
    """``W(Z) = -lambda_max(A^z, B^z)`` of sparse KFD (eq. 57-62) and its ``beta``.

    ``A^z = d d^T`` with ``d`` the difference of the class means of ``psi_z(x)``
    (between-class scatter), ``B^z`` the within-class scatter of ``psi_z(x)`` plus
    ``mu K^z`` (``mu ||w||^2``, eq. 49). ``A^z`` has rank one, so the largest
    generalised eigenvalue is ``lambda = d^T (B^z)^{-1} d`` with eigenvector
    ``beta`` proportional to ``(B^z)^{-1} d``, scaled so ``beta^T B^z beta = 1`` (eq. 61).

    Returns
    -------
    W : float
    beta : ndarray of shape (n_vectors,)
    lam : float
    """
    X = check_array(X, "X")
    _, _, d, Bz = _skfd_parts(X, y, check_Z(Z, X.shape[1]), kernel, mu)
    return _skfd_solve(d, Bz)


def _skfd_solve(d, Bz):
    try:
        cho = linalg.cho_factor(Bz, lower=True)
        v = linalg.cho_solve(cho, d)
    except linalg.LinAlgError:
        v = linalg.lstsq(Bz, d)[0]
    lam = float(d @ v)
    beta = v / np.sqrt(max(lam, np.finfo(float).tiny))  # beta^T B beta = v^T d / lam = 1
    return -lam, beta, lam


def skfd_gradient(X, y, Z, kernel, mu, beta, lam):
    """Gradient of the SKFD marginal function, eq. 63, vectorised.

    With ``s_i = beta^T psi_z(x_i)`` and class means ``s_bar_c``:
    ``beta^T A^z beta = (s_bar_1 - s_bar_2)^2``,
    ``beta^T B^z beta = sum_c sum_{i in c} (s_i - s_bar_c)^2 + mu beta^T K^z beta``,
    and ``d s_i / d z_u = beta_u grad_{z_u} k(x_i, z_u)``.
    """
    pos = y > 0
    s = kernel.mmv(X, Z, beta)
    n1, n2 = pos.sum(), (~pos).sum()
    sb1, sb2 = s[pos].mean(), s[~pos].mean()
    c = np.where(pos, 1.0 / n1, -1.0 / n2)
    resid = s - np.where(pos, sb1, sb2)
    weights = -2.0 * (sb1 - sb2) * c + 2.0 * lam * resid
    G = kernel.gradient_sum(X, Z, np.outer(weights, beta))
    G += 2.0 * lam * mu * kernel.gradient_sum(Z, Z, np.outer(beta, beta))
    return G


def skfd_optimize(X, y, Z0, kernel, mu, *, max_iter=100, tol=1e-6, callback=None):
    """Minimise the SKFD marginal function over ``Z`` with L-BFGS (appendix A)."""
    if not kernel.is_psd:
        raise ValueError(
            "Sparse KFD needs a positive semi-definite kernel (B^z = within-class scatter + "
            f"mu K^z must be positive definite, eq. 49); {kernel!r} is not.")
    X = check_array(X, "X")
    Z0 = check_Z(Z0, X.shape[1], "Z0")
    y = np.asarray(y, dtype=float)

    def fun(Z):
        W, beta, lam = skfd_objective(X, y, Z, kernel, mu)
        return W, skfd_gradient(X, y, Z, kernel, mu, beta, lam), (beta, lam)

    return _lbfgs_over_Z(fun, np.array(Z0, dtype=float), max_iter, tol, callback)
