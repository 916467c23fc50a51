"""Nystrom features ``K(x, Z) K_zz^{-1/2}`` on given landmarks, as scikit-learn forms them.

A linear model on these features is a kernel expansion on the landmarks ``Z`` with
coefficients ``beta = K_zz^{-1/2} w``: this is how :func:`sparsekm.compress` writes the
Nystrom + LinearSVC peers (uniform landmarks, k-means centres) as expansions.
"""

from __future__ import annotations

import numpy as np

__all__ = ["nystroem_features", "nystroem_normalization"]


def nystroem_normalization(kernel, Z):
    """``K_zz^{-1/2}`` exactly as scikit-learn's ``Nystroem`` computes it (SVD, singular
    values floored at 1e-12); features ``K(x, Z) @ M`` with ``M`` the transpose.

    Parameters
    ----------
    kernel : Kernel
    Z : ndarray of shape (n_landmarks, n_features)

    Returns
    -------
    ndarray of shape (n_landmarks, n_landmarks)
    """
    from scipy import linalg

    U, S, V = linalg.svd(np.asarray(kernel(Z, Z)))
    S = np.maximum(S, 1e-12)
    return ((U / np.sqrt(S)) @ V).T


def _sklearn_kernel(kernel):
    """``(name, params)`` of scikit-learn's pairwise kernel equal to ``kernel``, or None."""
    from ..kernels import RBF, Linear, Polynomial

    if type(kernel) is RBF:
        return "rbf", {"gamma": float(kernel.gamma)}
    if type(kernel) is Linear:
        return "linear", {}
    if type(kernel) is Polynomial:
        return "poly", {"gamma": float(kernel.gamma), "degree": kernel.degree,
                        "coef0": float(kernel.coef0)}
    return None


def nystroem_features(kernel, Z, seed):
    """The Nystrom feature map on the landmarks ``Z``: ``(Z', M, transform)`` with
    ``transform(X) = K(X, Z') M``, ``M = K_z'z'^{-1/2}`` and ``Z'`` the rows of ``Z``.

    For the kernels scikit-learn has (RBF, linear, polynomial) this *is*
    ``sklearn.kernel_approximation.Nystroem(kernel, n_components=len(Z),
    random_state=seed).fit(Z)`` (landmarks in its order; the same features to the last
    bit), otherwise the same formula with sparsekm's kernel.

    Parameters
    ----------
    kernel : Kernel
    Z : ndarray of shape (n_landmarks, n_features)
    seed : int
        scikit-learn's ``random_state`` (the order of the landmarks).

    Returns
    -------
    Z : ndarray
    M : ndarray
    transform : callable
    """
    spec = _sklearn_kernel(kernel)
    if spec is None:
        M = nystroem_normalization(kernel, Z)
        return Z, M, lambda X: np.asarray(kernel(X, Z)) @ M
    from sklearn.kernel_approximation import Nystroem

    ny = Nystroem(kernel=spec[0], n_components=Z.shape[0], random_state=seed,
                  **spec[1]).fit(Z)
    return np.asarray(ny.components_, dtype=np.float64), ny.normalization_.T, ny.transform
