"""Ridge regression on the features of a few expansion vectors (subset of regressors).

Given vectors ``Z`` (the reduced set of a compressed model, or Nyström landmarks) the
regressor ``f(x) = sum_j beta_j k(x, z_j) + b`` whose weights minimise

    sum_i (y_i - b - k_Z(x_i)^T beta)^2 + lam beta^T K_ZZ beta                      (1)

is the *subset of regressors* (SoR) / projected-process mean of Quiñonero-Candela &
Rasmussen (2005, eq. 16 and 20; Rasmussen & Williams 2006, §8.3.1-8.3.4, eq. 8.14)
with noise variance ``lam``:

    beta = (K_ZX K_XZ + lam K_ZZ)^-1 K_ZX y.                                          (2)

With the Nyström feature map ``phi(x) = M^T k_Z(x)``, ``M = U S^{-1/2}`` from
``K_ZZ = U S U^T`` (Williams & Seeger 2001; scikit-learn's ``Nystroem`` uses the
rotation ``U S^{-1/2} U^T`` of the same map), (1) is ordinary ridge regression on
``phi`` and ``beta = M w``. :func:`ridge_on_landmarks` solves it that way: one pass
over ``X`` in row blocks accumulates ``Phi^T Phi`` (``r x r``, ``r <= m`` the rank
kept), one eigendecomposition serves every ``lam`` of a grid, and the grid is scored
on validation rows, block by block. Memory is ``O(m^2 + block m)``, never ``n x m``.

The same solve gives the projected-process predictive variance (Seeger et al. 2003;
Quiñonero-Candela & Rasmussen 2005, eq. 21; Rasmussen & Williams eq. 8.27 for the
SoR part), for a kernel ``amplitude * k`` with noise ``sigma^2 = amplitude * lam``:

    V(x) = amplitude [k(x, x) - ||phi(x)||^2 + lam phi(x)^T (lam I + Phi^T Phi)^-1 phi(x)]

(:meth:`RidgeOnLandmarks.variance_factors`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ..expansion import KernelExpansion
from ..kernels import Kernel
from ..utils.validation import check_array, check_scalar

__all__ = ["RidgeOnLandmarks", "ridge_on_landmarks", "nystroem_landmarks", "nystroem_ridge",
           "nystroem_map"]

#: kernel-block entries per row block (float64: 8 MiB)
_BLOCK_ELEMENTS = 2**20


def _row_step(m, block_size):
    if block_size is not None:
        return check_scalar(block_size, "block_size", "ridge_on_landmarks", kind="int", lower=1)
    return max(16, _BLOCK_ELEMENTS // max(int(m), 1))


def nystroem_map(kernel, Z, *, rcond=None):
    """``M = U_r S_r^{-1/2}`` with ``K_ZZ = U S U^T``, eigenvalues below ``rcond * max`` dropped.

    ``rcond=None`` is ``m * eps`` (numpy's ``pinv`` default): only directions that
    are zero to rounding go; the ridge penalty keeps the small ones harmless, and at
    full budget (``Z = X``) the solve reproduces kernel ridge regression to rounding.

    ``phi(x) = M^T k_Z(x)`` is the Nyström feature map: ``phi(x)^T phi(y) = k_Z(x)^T
    K_ZZ^+ k_Z(y)``. Returns an array of shape (m, r).
    """
    K = np.asarray(kernel(Z), dtype=np.float64)
    S, U = np.linalg.eigh((K + K.T) / 2.0)
    if not np.isfinite(S).all() or S[-1] <= 0:
        raise ValueError("K_ZZ, the kernel matrix of the landmarks, has no positive eigenvalue; "
                         "the landmarks cannot carry a ridge regression (a kernel that is not "
                         "positive semi-definite, or all landmarks equal?).")
    if rcond is None:
        rcond = Z.shape[0] * np.finfo(np.float64).eps
    keep = S > rcond * S[-1]
    return U[:, keep] / np.sqrt(S[keep])


@dataclass
class RidgeOnLandmarks:
    """Result of :func:`ridge_on_landmarks`.

    Attributes
    ----------
    expansion : KernelExpansion
        ``f(x) = K(x, Z) beta + b`` with the chosen ``lam``.
    lam : float
        The chosen ridge parameter.
    lams : ndarray of shape (n_lams,)
        The grid tried.
    validation_rmse : ndarray of shape (n_lams,) or None
        Validation RMSE of each (mean over outputs of the squared errors), when a
        grid was scored.
    map : ndarray of shape (m, r)
        The Nyström map ``M`` (:func:`nystroem_map`).
    eigvals, eigvecs : ndarray
        ``Phi^T Phi = V D V^T`` (centred when an intercept is fitted).
    fit_intercept : bool
    """

    expansion: KernelExpansion
    lam: float
    lams: np.ndarray
    validation_rmse: np.ndarray | None
    map: np.ndarray
    eigvals: np.ndarray
    eigvecs: np.ndarray
    fit_intercept: bool

    def variance_factors(self):
        """``(A, B, lam)`` with ``V(x) / amplitude = k(x,x) - ||k_Z(x) A||^2 + lam ||k_Z(x) B||^2``.

        The projected-process variance (module docstring) of a fit without
        intercept (``fit_intercept=False``: a Gaussian process has no free mean):
        ``A = M`` and ``B = M V (D + lam)^{-1/2}``, both (m, r).
        """
        if self.fit_intercept:
            raise ValueError("The projected-process variance needs a fit without intercept "
                             "(fit_intercept=False): a Gaussian process has no free mean.")
        B = (self.map @ self.eigvecs) / np.sqrt(self.eigvals + self.lam)
        return self.map, B, self.lam


def _check_y(y, n, name):
    y = np.asarray(y, dtype=np.float64)
    if y.ndim not in (1, 2) or y.shape[0] != n:
        raise ValueError(f"{name} must have shape (n_samples,) or (n_samples, n_outputs) with "
                         f"{n} rows; got {y.shape}.")
    if not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinity.")
    return y


def ridge_on_landmarks(kernel, Z, X, y, *, lam=1.0, X_val=None, y_val=None, fit_intercept=True,
                       rcond=None, block_size=None):
    """Ridge (1) on the features ``K(X, Z)``, ``lam`` chosen on validation rows.

    Parameters
    ----------
    kernel : Kernel
    Z : array-like of shape (m, n_features)
        Expansion vectors: a reduced set, or Nyström landmarks.
    X : array-like of shape (n_samples, n_features)
        Training rows.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets (for an unsupervised model: the original model's outputs on ``X``).
    lam : float >= 0 or array-like of floats
        Ridge parameter (the noise variance of the SoR view), or a grid; a grid of
        more than one value needs ``X_val, y_val`` and the one with the lowest
        validation RMSE is kept (the first of equal ones).
    X_val, y_val : array-like, optional
    fit_intercept : bool, default=True
        Fit an unpenalised constant ``b`` (the features and ``y`` are centred).
    rcond : float, optional
        Eigenvalues of ``K_ZZ`` below ``rcond`` times the largest are dropped
        (:func:`nystroem_map`; default ``m * eps``).
    block_size : int, optional
        Rows of ``X`` per kernel block.

    Returns
    -------
    RidgeOnLandmarks
    """
    owner = "ridge_on_landmarks"
    if not isinstance(kernel, Kernel):
        raise TypeError(f"{owner}: kernel must be a sparsekm.kernels.Kernel; got "
                        f"{type(kernel).__name__}.")
    Z = check_array(Z, "Z")
    X = check_array(X, "X")
    if X.shape[1] != Z.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Z has {Z.shape[1]}.")
    y = _check_y(y, X.shape[0], "y")
    lams = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    if lams.ndim != 1 or lams.size == 0 or not (np.isfinite(lams).all() and (lams >= 0).all()):
        raise ValueError(f"lam must be a float >= 0 or a 1-D grid of them; got {lam!r}.")
    if lams.size > 1 and (X_val is None or y_val is None):
        raise ValueError(f"{owner}: choosing lam from a grid of {lams.size} values needs "
                         "validation rows X_val, y_val.")
    M = nystroem_map(kernel, Z, rcond=rcond)
    step = _row_step(Z.shape[0], block_size)
    Y2 = y if y.ndim == 2 else y[:, None]
    r = M.shape[1]
    G = np.zeros((r, r))
    h = np.zeros((r, Y2.shape[1]))
    s = np.zeros(r)
    for a in range(0, X.shape[0], step):
        P = np.asarray(kernel(X[a:a + step], Z), dtype=np.float64) @ M
        G += P.T @ P
        h += P.T @ Y2[a:a + step]
        s += P.sum(axis=0)
    n = X.shape[0]
    y_mean = Y2.mean(axis=0) if fit_intercept else np.zeros(Y2.shape[1])
    if fit_intercept:
        mu = s / n
        G -= n * np.outer(mu, mu)
        h -= n * np.outer(mu, y_mean)
    else:
        mu = np.zeros(r)
    D, V = np.linalg.eigh((G + G.T) / 2.0)
    D = np.maximum(D, 0.0)
    q = V.T @ h  # (r, n_outputs)

    rmse = None
    best = 0
    if lams.size > 1:
        X_val = check_array(X_val, "X_val")
        Yv = _check_y(y_val, X_val.shape[0], "y_val")
        Yv = Yv if Yv.ndim == 2 else Yv[:, None]
        if Yv.shape[1] != Y2.shape[1]:
            raise ValueError(f"y_val has {Yv.shape[1]} outputs but y has {Y2.shape[1]}.")
        sse = np.zeros(lams.size)
        for a in range(0, X_val.shape[0], step):
            PV = (np.asarray(kernel(X_val[a:a + step], Z), dtype=np.float64) @ M - mu) @ V
            for i, lam_i in enumerate(lams):
                pred = PV @ (q / (D + lam_i)[:, None]) + y_mean
                sse[i] += float(((pred - Yv[a:a + step]) ** 2).sum())
        rmse = np.sqrt(sse / Yv.size)
        best = int(np.argmin(rmse))
    lam_best = float(lams[best])
    w = V @ (q / (D + lam_best)[:, None])  # (r, n_outputs)
    beta = M @ w
    b = y_mean - mu @ w
    if y.ndim == 1:
        beta, b = beta[:, 0], float(b[0])
    expansion = KernelExpansion(Z, beta, kernel, b)
    return RidgeOnLandmarks(expansion, lam_best, lams, rmse, M, D, V, bool(fit_intercept))


def nystroem_landmarks(X, n_landmarks, *, method="uniform", random_state=None):
    """Landmarks for the Nyström peer: a uniform subset of ``X`` or k-means centres.

    ``"uniform"`` takes ``check_random_state(random_state).permutation(n)[:n_landmarks]``,
    the rows scikit-learn's ``Nystroem`` picks for the same seed; ``"kmeans"`` the
    centres of ``sklearn.cluster.KMeans`` (one initialisation, k-means++), the
    landmarks of Zhang, Tsang & Kwok (2008).

    Returns
    -------
    Z : ndarray of shape (n_landmarks, n_features)
    """
    X = check_array(X, "X")
    m = check_scalar(n_landmarks, "n_landmarks", "nystroem_landmarks", kind="int", lower=1,
                     upper=X.shape[0])
    if method == "uniform":
        rng = check_random_state(random_state)
        return X[np.sort(rng.permutation(X.shape[0])[:m])].copy()
    if method == "kmeans":
        from sklearn.cluster import KMeans

        seed = check_random_state(random_state).randint(2**31 - 1)
        km = KMeans(n_clusters=m, n_init=1, max_iter=100, random_state=seed).fit(X)
        return np.asarray(km.cluster_centers_, dtype=np.float64)
    raise ValueError(f"The 'method' parameter of nystroem_landmarks must be 'uniform' or "
                     f"'kmeans'; got {method!r}.")


def nystroem_ridge(kernel, X, y, n_landmarks, *, method="uniform", lam=1.0, X_val=None,
                   y_val=None, fit_intercept=True, random_state=None, block_size=None):
    """The Nyström + ridge peer, written as a :class:`KernelExpansion` over its landmarks.

    :func:`nystroem_landmarks` then :func:`ridge_on_landmarks`; equals scikit-learn's
    ``make_pipeline(Nystroem(kernel, n_components=m), Ridge(alpha=lam))`` on the same
    landmarks (the two feature maps differ by a rotation ``U^T``, which ridge ignores).

    Returns
    -------
    RidgeOnLandmarks
    """
    Z = nystroem_landmarks(X, n_landmarks, method=method, random_state=random_state)
    return ridge_on_landmarks(kernel, Z, X, y, lam=lam, X_val=X_val, y_val=y_val,
                              fit_intercept=fit_intercept, block_size=block_size)
