"""Conversion of fitted scikit-learn kernel machines into :class:`KernelExpansion`.

Each conversion reproduces the estimator's own output to rounding error:

* ``SVC`` (binary): ``decision_function(x) = sum_i dual_coef_i k(x, sv_i) + intercept``.
* ``SVR`` / ``NuSVR``: the same sum gives ``predict``.
* ``OneVsRestClassifier(SVC)``: one column per class; support vectors shared
  between the binary machines are stored once (coefficient 0 where a machine does
  not use a vector), so evaluating all classes costs one kernel evaluation per
  *distinct* vector.
* ``KernelPCA``: one column per component; scikit-learn's transform is
  ``K_c(x, X) @ A`` with ``A = eigenvectors / sqrt(eigenvalues)`` and the centred
  kernel ``K_c(x, x_i) = k(x, x_i) - mean_j k(x, x_j) - m_i + m`` (``m_i`` the row
  means and ``m`` the grand mean of the training Gram matrix). Expanding the
  centring gives coefficients ``A_ik - (sum_j A_jk) / n`` on the training points
  and a constant ``-(sum_i A_ik m_i) + (sum_i A_ik) m`` that becomes the
  intercept. This is exact, not an approximation.
"""

from __future__ import annotations

import numpy as np

from .kernels import RBF, Linear, Polynomial, Sigmoid

__all__ = ["expansion_from_estimator", "kernel_from_sklearn"]


def kernel_from_sklearn(estimator):
    """The sparsekm kernel equal to a fitted scikit-learn estimator's kernel.

    scikit-learn's ``poly`` kernel ``(gamma x.y + coef0)^degree`` maps to
    :class:`~sparsekm.kernels.Polynomial` with the same three numbers and its
    ``sigmoid`` kernel to ``Sigmoid(kappa=gamma, theta=coef0)``.
    """
    kernel = getattr(estimator, "kernel", None)
    if callable(kernel) or kernel == "precomputed":
        raise TypeError(
            f"Cannot convert {type(estimator).__name__} with kernel={kernel!r}: only "
            "'rbf', 'poly', 'sigmoid' and 'linear' kernels have a sparsekm equivalent."
        )
    gamma = getattr(estimator, "_gamma", None)
    if gamma is None:
        gamma = getattr(estimator, "gamma_", None)
    if gamma is None:
        gamma = estimator.gamma
    if isinstance(gamma, str):
        raise ValueError(
            f"{type(estimator).__name__} has gamma={gamma!r} but no fitted gamma; is it fitted?"
        )
    coef0 = float(getattr(estimator, "coef0", 0.0) or 0.0)
    degree = int(getattr(estimator, "degree", 3))
    if kernel == "rbf":
        return RBF(gamma=float(gamma))
    if kernel == "linear":
        return Linear()
    if kernel == "poly":
        if coef0 < 0:
            raise ValueError(
                f"Polynomial kernels with negative coef0 are not supported (coef0={coef0})."
            )
        return Polynomial(degree=degree, coef0=coef0, gamma=float(gamma))
    if kernel == "sigmoid":
        return Sigmoid(kappa=float(gamma), theta=coef0)
    raise TypeError(f"Unsupported kernel {kernel!r} in {type(estimator).__name__}.")


def _check_fitted(est, attr):
    if not hasattr(est, attr):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            f"This {type(est).__name__} instance is not fitted yet; fit it before converting it "
            "to a KernelExpansion."
        )


def _from_svm(est, *, binary_only):
    from .expansion import KernelExpansion

    _check_fitted(est, "support_vectors_")
    if hasattr(est, "support_vectors_") and getattr(est, "_sparse", False):
        raise TypeError(f"{type(est).__name__} was fitted on sparse data; refit it on dense data.")
    dual = np.asarray(est.dual_coef_)
    if binary_only and dual.shape[0] != 1:
        raise ValueError(
            f"{type(est).__name__} has {len(est.classes_)} classes; only binary SVC converts "
            "directly. Wrap it in sklearn.multiclass.OneVsRestClassifier for multi-class problems."
        )
    kernel = kernel_from_sklearn(est)
    return KernelExpansion(est.support_vectors_, dual[0], kernel, float(est.intercept_[0]))


def _from_ovr(est):
    from .expansion import KernelExpansion

    _check_fitted(est, "estimators_")
    machines = est.estimators_
    kernels = []
    for m in machines:
        if not hasattr(m, "support_vectors_"):
            raise TypeError(
                "OneVsRestClassifier must wrap binary SVC estimators; found "
                f"{type(m).__name__} (a class present in every or no training sample?)."
            )
        kernels.append(kernel_from_sklearn(m))
    if any(k != kernels[0] for k in kernels):
        raise ValueError("The binary machines of the OneVsRestClassifier use different kernels.")
    all_sv = np.concatenate([m.support_vectors_ for m in machines])
    distinct, inverse = np.unique(all_sv, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    coef = np.zeros((distinct.shape[0], len(machines)))
    start = 0
    for j, m in enumerate(machines):
        n = m.support_vectors_.shape[0]
        np.add.at(coef[:, j], inverse[start:start + n], m.dual_coef_[0])
        start += n
    intercept = np.array([float(m.intercept_[0]) for m in machines])
    if len(machines) == 1:  # binary problem: OvR returns a 1-D decision function
        return KernelExpansion(distinct, coef[:, 0], kernels[0], intercept[0])
    return KernelExpansion(distinct, coef, kernels[0], intercept)


def _from_kernel_pca(est):
    from .expansion import KernelExpansion

    _check_fitted(est, "eigenvectors_")
    kernel = kernel_from_sklearn(est)
    X = np.asarray(est.X_fit_, dtype=np.float64)
    vals = np.asarray(est.eigenvalues_, dtype=np.float64)
    vecs = np.asarray(est.eigenvectors_, dtype=np.float64)
    A = np.zeros_like(vecs)
    nz = np.flatnonzero(vals)
    A[:, nz] = vecs[:, nz] / np.sqrt(vals[nz])
    n = X.shape[0]
    row_means = np.asarray(est._centerer.K_fit_rows_, dtype=np.float64)
    grand_mean = float(est._centerer.K_fit_all_)
    col_sums = A.sum(axis=0)
    coef = A - col_sums[None, :] / n
    intercept = -(row_means @ A) + col_sums * grand_mean
    return KernelExpansion(X, coef, kernel, intercept)


def expansion_from_estimator(estimator):
    """Return the :class:`KernelExpansion` of a fitted scikit-learn estimator.

    Raises
    ------
    TypeError
        For unsupported estimator types or kernels (callable, precomputed).
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    """
    from sklearn.decomposition import KernelPCA
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR

    from .expansion import KernelExpansion

    if isinstance(estimator, KernelExpansion):
        return estimator
    own = getattr(estimator, "expansion_", None)
    if isinstance(own, KernelExpansion):
        return own
    if isinstance(estimator, (SVC, NuSVC)):
        return _from_svm(estimator, binary_only=True)
    if isinstance(estimator, (SVR, NuSVR)):
        return _from_svm(estimator, binary_only=False)
    if isinstance(estimator, OneVsRestClassifier):
        return _from_ovr(estimator)
    if isinstance(estimator, KernelPCA):
        return _from_kernel_pca(estimator)
    raise TypeError(
        f"Cannot build a KernelExpansion from {type(estimator).__name__}; supported: SVC (binary), "
        "SVR, NuSVR, OneVsRestClassifier(SVC), KernelPCA, and sparsekm models with expansion_."
    )
