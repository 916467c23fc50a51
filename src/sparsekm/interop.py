"""Conversion of fitted scikit-learn kernel machines into :class:`KernelExpansion`.

Each conversion reproduces the estimator's own output to rounding error:

* ``SVC`` / ``NuSVC`` (binary): ``decision_function(x) = sum_i dual_coef_i k(x, sv_i) + intercept``.
* ``SVC`` / ``NuSVC`` (multi-class, one-vs-one inside libsvm): one column per pair of
  classes ``(i, j)``, ``i < j``, in scikit-learn's order ``(0, 1), (0, 2), ...``; column
  ``(i, j)`` is ``sum_{sv in class i} dual_coef_[j-1, sv] k(x, sv) + sum_{sv in class j}
  dual_coef_[i, sv] k(x, sv) + intercept_[p]`` (libsvm's layout), positive for class
  ``i``. Every support vector is stored once, as in scikit-learn (coefficient 0 in the
  pairs that do not use it); these columns equal ``decision_function`` with
  ``decision_function_shape="ovo"``. :class:`sparsekm.multiclass.ExpansionClassifier`
  adds the ``"ovr"`` vote-plus-confidence aggregation and the vote of ``predict``.
* ``OneVsOneClassifier(SVC)``: the same pairwise layout (sign flipped so that positive
  means the first class of the pair); identical support vectors of different pairs are
  stored once.
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

__all__ = ["expansion_from_estimator", "classifier_from_estimator", "kernel_from_sklearn"]


def kernel_from_sklearn(estimator):
    """The sparsekm kernel equal to a fitted scikit-learn estimator's kernel.

    scikit-learn's ``poly`` kernel ``(gamma x.y + coef0)^degree`` maps to
    :class:`~sparsekm.kernels.Polynomial` with the same three numbers and its
    ``sigmoid`` kernel to ``Sigmoid(kappa=gamma, theta=coef0)``.
    """
    kernel = getattr(estimator, "kernel", None)
    if callable(kernel) or (isinstance(kernel, str) and kernel == "precomputed"):
        raise TypeError(
            f"Cannot convert {type(estimator).__name__} with kernel={kernel!r} (its 'kernel' "
            "parameter): only 'rbf', 'poly', 'sigmoid' and 'linear' kernels have a sparsekm "
            "equivalent."
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


def _check_dense_svm(est):
    _check_fitted(est, "support_vectors_")
    if getattr(est, "_sparse", False):
        raise TypeError(f"{type(est).__name__} was fitted on sparse data (its support_vectors_ "
                        "is a sparse matrix); refit it on dense data.")


def _from_svm(est):
    """Binary SVC/NuSVC, SVR/NuSVR: one output."""
    from .expansion import KernelExpansion

    _check_dense_svm(est)
    dual = np.asarray(est.dual_coef_)
    kernel = kernel_from_sklearn(est)
    return KernelExpansion(est.support_vectors_, dual[0], kernel, float(est.intercept_[0]))


def _from_ovo_svm(est):
    """Multi-class SVC/NuSVC: libsvm's k(k-1)/2 pairwise machines over shared vectors."""
    from .expansion import KernelExpansion
    from .multiclass import ovo_pairs

    _check_dense_svm(est)
    kernel = kernel_from_sklearn(est)
    dual = np.asarray(est.dual_coef_, dtype=np.float64)
    n_support = np.asarray(est.n_support_, dtype=int)
    k = n_support.size
    if dual.shape != (k - 1, est.support_vectors_.shape[0]):
        raise ValueError(f"{type(est).__name__}.dual_coef_ has shape {dual.shape}; expected "
                         f"({k - 1}, {est.support_vectors_.shape[0]}) for {k} classes.")
    bounds = np.concatenate([[0], np.cumsum(n_support)])
    I, J = ovo_pairs(k)
    coef = np.zeros((dual.shape[1], I.size))
    for p, (i, j) in enumerate(zip(I, J, strict=True)):
        si = slice(bounds[i], bounds[i + 1])
        sj = slice(bounds[j], bounds[j + 1])
        coef[si, p] = dual[j - 1, si]
        coef[sj, p] = dual[i, sj]
    intercept = np.asarray(est.intercept_, dtype=np.float64)
    return KernelExpansion(est.support_vectors_, coef, kernel, intercept)


def _from_ovo_classifier(est):
    """OneVsOneClassifier of binary SVC/NuSVC: pairwise columns, positive = first class."""
    from sklearn.svm import SVC, NuSVC

    from .expansion import KernelExpansion

    _check_fitted(est, "estimators_")
    machines = est.estimators_
    if getattr(est, "pairwise_indices_", None) is not None:
        raise TypeError("OneVsOneClassifier with a precomputed kernel (pairwise_indices_ is "
                        "set) cannot be converted: the kernel 'precomputed' has no sparsekm "
                        "equivalent.")
    kernels = []
    for m in machines:
        if not isinstance(m, (SVC, NuSVC)):
            raise TypeError("OneVsOneClassifier must wrap SVC or NuSVC estimators to be "
                            f"converted; its estimators_ hold a {type(m).__name__}.")
        _check_dense_svm(m)
        kernels.append(kernel_from_sklearn(m))
    if any(kk != kernels[0] for kk in kernels):
        other = next(kk for kk in kernels if kk != kernels[0])
        raise ValueError(
            "The pairwise machines of the OneVsOneClassifier use different kernels "
            f"({kernels[0]!r} and {other!r}), so they cannot share one expansion; with "
            "gamma='scale' or 'auto' each pair computes its own gamma_ from its own samples: "
            "give the SVC a numeric gamma.")
    all_sv = np.concatenate([m.support_vectors_ for m in machines])
    distinct, inverse = np.unique(all_sv, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    coef = np.zeros((distinct.shape[0], len(machines)))
    start = 0
    for p, m in enumerate(machines):
        n = m.support_vectors_.shape[0]
        # the binary SVC was fitted with class i as 0 and j as 1: its decision function is
        # positive for j, so the pairwise column (positive for i) is its negative
        np.add.at(coef[:, p], inverse[start:start + n], -np.asarray(m.dual_coef_[0]))
        start += n
    intercept = np.array([-float(m.intercept_[0]) for m in machines])
    return KernelExpansion(distinct, coef, kernels[0], intercept)


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
    from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR

    from .expansion import KernelExpansion

    if isinstance(estimator, KernelExpansion):
        return estimator
    own = getattr(estimator, "expansion_", None)
    if isinstance(own, KernelExpansion):
        return own
    if isinstance(estimator, (SVC, NuSVC)):
        _check_fitted(estimator, "support_vectors_")
        if len(estimator.classes_) > 2:
            return _from_ovo_svm(estimator)
        return _from_svm(estimator)
    if isinstance(estimator, (SVR, NuSVR)):
        return _from_svm(estimator)
    if isinstance(estimator, OneVsRestClassifier):
        return _from_ovr(estimator)
    if isinstance(estimator, OneVsOneClassifier):
        return _from_ovo_classifier(estimator)
    if isinstance(estimator, KernelPCA):
        return _from_kernel_pca(estimator)
    raise TypeError(
        f"Cannot build a KernelExpansion from {type(estimator).__name__}; supported: SVC and "
        "NuSVC (binary and multi-class), SVR, NuSVR, OneVsRestClassifier(SVC), "
        "OneVsOneClassifier(SVC), sklearn.decomposition.KernelPCA, and sparsekm models with "
        "expansion_."
    )


def classifier_from_estimator(estimator):
    """The exact :class:`~sparsekm.multiclass.ExpansionClassifier` of a fitted classifier.

    Supported: ``SVC``/``NuSVC`` (binary; multi-class one-vs-one with either
    ``decision_function_shape`` and ``break_ties``), ``OneVsRestClassifier`` and
    ``OneVsOneClassifier`` of ``SVC``/``NuSVC``. Its ``decision_function`` equals the
    estimator's to rounding and its ``predict`` is identical.

    Raises
    ------
    TypeError
        For unsupported estimator types or kernels (callable, precomputed).
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    """
    from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
    from sklearn.svm import SVC, NuSVC

    from .multiclass import ExpansionClassifier

    if isinstance(estimator, ExpansionClassifier):
        return estimator
    if not isinstance(estimator, (SVC, NuSVC, OneVsRestClassifier, OneVsOneClassifier)):
        raise TypeError(
            f"Cannot build a kernel classifier from {type(estimator).__name__}; supported: SVC, "
            "NuSVC, OneVsRestClassifier(SVC) and OneVsOneClassifier(SVC).")
    expansion = expansion_from_estimator(estimator)
    classes = np.asarray(estimator.classes_)
    k = classes.shape[0]
    if isinstance(estimator, OneVsOneClassifier):
        return ExpansionClassifier(expansion, classes, scheme="ovo", vote="ovo-classifier")
    if isinstance(estimator, OneVsRestClassifier):
        return ExpansionClassifier(expansion, classes, scheme="binary" if k == 2 else "ovr")
    if k == 2:
        return ExpansionClassifier(expansion, classes, scheme="binary")
    return ExpansionClassifier(expansion, classes, scheme="ovo",
                               decision_function_shape=estimator.decision_function_shape,
                               break_ties=bool(estimator.break_ties))
