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
* ``SVR`` / ``NuSVR``: the same sum gives ``predict``; ``OneClassSVM``: its
  ``decision_function``.
* ``KernelRidge``: ``predict(x) = K(x, X_fit_) @ dual_coef_`` (kernels ``rbf``,
  ``laplacian``, ``poly``, ``sigmoid``, ``linear`` or a scikit-learn GP kernel).
* ``GaussianProcessRegressor``: the predictive mean ``y_std (K(x, X_train_) @ alpha_) +
  y_mean`` (``normalize_y`` undone), with the kernel converted by
  :func:`kernel_from_sklearn_gp` (amplitude folded into the coefficients, an added
  constant kernel into the intercept, the white noise dropping out).
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

from typing import NamedTuple

import numpy as np

from .expansion import estimator_to_expansion
from .kernels import RBF, Kernel, Laplacian, Linear, Matern, Polynomial, RationalQuadratic, Sigmoid
from .multiclass import estimator_to_classifier

__all__ = ["expansion_from_estimator", "classifier_from_estimator", "kernel_from_sklearn",
           "GPKernelForm", "kernel_from_sklearn_gp"]


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
    if gamma is None and hasattr(estimator, "n_features_in_"):
        # KernelRidge passes gamma=None to sklearn.metrics.pairwise, whose default is
        # 1 / n_features for rbf, laplacian, poly and sigmoid
        gamma = 1.0 / estimator.n_features_in_
    if isinstance(gamma, str):
        raise ValueError(
            f"{type(estimator).__name__} has gamma={gamma!r} but no fitted gamma; is it fitted?"
        )
    coef0 = float(getattr(estimator, "coef0", 0.0) or 0.0)
    degree = int(getattr(estimator, "degree", 3))
    if kernel == "rbf":
        return RBF(gamma=float(gamma))
    if kernel == "laplacian":
        return Laplacian(gamma=float(gamma))
    if kernel == "polynomial":  # KernelRidge's alias
        kernel = "poly"
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
    if kernel in ("chi2", "additive_chi2", "cosine"):
        raise TypeError(
            f"{type(estimator).__name__} uses kernel={kernel!r}, which has no sparsekm kernel "
            "form (it is neither a function of ||x - y|| nor of x . y, and its gradient for the "
            "pre-image steps is not implemented); supported: 'rbf', 'laplacian', 'poly', "
            "'sigmoid', 'linear' and scikit-learn GP kernels (see kernel_from_sklearn_gp).")
    raise TypeError(f"Unsupported kernel {kernel!r} in {type(estimator).__name__}.")


class GPKernelForm(NamedTuple):
    """A scikit-learn Gaussian-process kernel as ``amplitude * kernel + constant (+ noise)``.

    The covariance is ``c(x, y) = amplitude * kernel(x, y) + constant``, plus ``noise``
    on the training diagonal only (``WhiteKernel``: scikit-learn's ``WhiteKernel(X, Y)``
    is zero for a second argument, so the noise takes part in the training solve
    ``alpha = (K + noise I)^-1 y`` but drops out of the predictive mean's expansion,
    and ``kernel_.diag(X)`` includes it in ``predict(return_std=True)``).

    Attributes
    ----------
    kernel : Kernel
        The sparsekm kernel of the one non-constant term.
    amplitude : float
        Product of the ``ConstantKernel`` factors of that term.
    constant : float
        Sum of the added ``ConstantKernel`` terms (a constant covariance: in the
        predictive mean it becomes the intercept ``constant * sum_i alpha_i``).
    noise : float
        Sum of the ``WhiteKernel`` noise levels.
    """

    kernel: Kernel
    amplitude: float = 1.0
    constant: float = 0.0
    noise: float = 0.0


def _scalar_length_scale(k):
    ls = np.asarray(k.length_scale, dtype=np.float64)
    if ls.size != 1:
        raise TypeError(
            f"{k!r} has an anisotropic length_scale (one per feature, ARD), which sparsekm's "
            "kernels do not have: fit with a scalar length_scale, or rescale X by the length "
            "scales (X / length_scale) and refit with length_scale=1.")
    return float(ls.reshape(-1)[0])


def _gp_terms(k):
    """``[("base", kernel, amp) | ("const", c) | ("white", n)]`` of a GP kernel (a sum)."""
    from sklearn.gaussian_process import kernels as gpk

    if isinstance(k, gpk.Sum):
        return _gp_terms(k.k1) + _gp_terms(k.k2)
    if isinstance(k, gpk.Product):
        for const, other in ((k.k1, k.k2), (k.k2, k.k1)):
            if isinstance(const, gpk.ConstantKernel):
                c = float(const.constant_value)
                scaled = []
                for t in _gp_terms(other):
                    scaled.append((t[0], t[1], t[2] * c) if t[0] == "base" else (t[0], t[1] * c))
                return scaled
        raise TypeError(
            f"The product {k!r} of two non-constant kernels has no sparsekm kernel form "
            "(only ConstantKernel * kernel products are converted).")
    if isinstance(k, gpk.ConstantKernel):
        return [("const", float(k.constant_value))]
    if isinstance(k, gpk.WhiteKernel):
        return [("white", float(k.noise_level))]
    if isinstance(k, gpk.Matern):  # (a subclass of RBF: tested first)
        ell = _scalar_length_scale(k)
        if np.isinf(k.nu):
            return [("base", RBF(gamma=1.0 / (2.0 * ell**2)), 1.0)]
        if float(k.nu) not in Matern._NUS:
            raise TypeError(
                f"{k!r}: Matérn kernels with nu = {k.nu} (Bessel-function forms) have no "
                "sparsekm kernel; nu = 0.5, 1.5, 2.5 and inf are converted.")
        return [("base", Matern(length_scale=ell, nu=float(k.nu)), 1.0)]
    if isinstance(k, gpk.RBF):
        return [("base", RBF(gamma=1.0 / (2.0 * _scalar_length_scale(k) ** 2)), 1.0)]
    if isinstance(k, gpk.RationalQuadratic):
        return [("base", RationalQuadratic(length_scale=float(k.length_scale),
                                           alpha=float(k.alpha)), 1.0)]
    if isinstance(k, gpk.DotProduct):  # sigma_0^2 + x . y
        return [("base", Polynomial(degree=1, coef0=float(k.sigma_0) ** 2), 1.0)]
    if isinstance(k, gpk.Exponentiation) and isinstance(k.kernel, gpk.DotProduct) \
            and float(k.exponent) == int(k.exponent) and int(k.exponent) >= 1:
        return [("base", Polynomial(degree=int(k.exponent),
                                    coef0=float(k.kernel.sigma_0) ** 2), 1.0)]
    raise TypeError(
        f"{type(k).__name__} ({k!r}) has no sparsekm kernel form; convertible: RBF, Matern "
        "(nu 0.5, 1.5, 2.5, inf), RationalQuadratic, DotProduct (and its integer powers), "
        "their products with ConstantKernel, and sums with ConstantKernel and WhiteKernel.")


def kernel_from_sklearn_gp(kernel):
    """The :class:`GPKernelForm` of a scikit-learn ``gaussian_process.kernels`` kernel.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Usually a fitted ``GaussianProcessRegressor``'s ``kernel_``.

    Returns
    -------
    GPKernelForm

    Raises
    ------
    TypeError
        For kernels without a sparsekm form (periodic, anisotropic length scales,
        Matérn with other ``nu``, products of two non-constant kernels, sums of two
        different non-constant kernels), naming the reason.

    Examples
    --------
    >>> from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel
    >>> kernel_from_sklearn_gp(ConstantKernel(2.0) * Matern(0.5, nu=1.5) + WhiteKernel(0.1))
    GPKernelForm(kernel=Matern(length_scale=0.5, nu=1.5), amplitude=2.0, constant=0.0, noise=0.1)
    """
    from sklearn.gaussian_process.kernels import Kernel as GPKernel

    if not isinstance(kernel, GPKernel):
        raise TypeError(f"kernel_from_sklearn_gp expects a sklearn.gaussian_process kernel; got "
                        f"{type(kernel).__name__}.")
    base, amplitude, constant, noise = None, 0.0, 0.0, 0.0
    for term in _gp_terms(kernel):
        if term[0] == "const":
            constant += term[1]
        elif term[0] == "white":
            noise += term[1]
        else:
            if base is not None and term[1] != base:
                raise TypeError(
                    f"{kernel!r} sums two different kernels ({base!r} and {term[1]!r}); a sum "
                    "of kernels is not one sparsekm kernel.")
            base = term[1]
            amplitude += term[2]
    if base is None:
        raise TypeError(f"{kernel!r} has only constant and white-noise terms: no kernel "
                        "expansion (its predictive mean is a constant).")
    return GPKernelForm(base, float(amplitude), float(constant), float(noise))


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


def _from_kernel_ridge(est):
    """KernelRidge: ``predict(x) = K(x, X_fit_) @ dual_coef_`` (no intercept)."""
    from sklearn.gaussian_process.kernels import Kernel as GPKernel

    from .expansion import KernelExpansion

    _check_fitted(est, "dual_coef_")
    X = est.X_fit_
    if not isinstance(X, np.ndarray):
        raise TypeError("KernelRidge was fitted on sparse data (X_fit_ is a sparse matrix); "
                        "refit it on dense data.")
    dual = np.asarray(est.dual_coef_, dtype=np.float64)
    if isinstance(est.kernel, GPKernel):
        form = kernel_from_sklearn_gp(est.kernel)
        return KernelExpansion(X, form.amplitude * dual, form.kernel,
                               form.constant * dual.sum(axis=0))
    return KernelExpansion(X, dual, kernel_from_sklearn(est), np.zeros(dual.shape[1:]))


def _from_gaussian_process(est):
    """GaussianProcessRegressor: the predictive mean ``y_std (K(x, X) @ alpha_) + y_mean``."""
    from .expansion import KernelExpansion

    if not hasattr(est, "X_train_"):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(
            "This GaussianProcessRegressor is not fitted: its prior mean is 0 and has no "
            "kernel expansion. Fit it before converting it.")
    X = np.asarray(est.X_train_)
    if X.ndim != 2 or X.dtype.kind not in "fiu":
        raise TypeError("The GaussianProcessRegressor was fitted on non-vector inputs; only "
                        "numeric (n_samples, n_features) data convert.")
    form = kernel_from_sklearn_gp(est.kernel_)
    alpha = np.asarray(est.alpha_, dtype=np.float64)
    y_std = np.asarray(est._y_train_std, dtype=np.float64).reshape(-1)
    y_mean = np.asarray(est._y_train_mean, dtype=np.float64).reshape(-1)
    if alpha.ndim == 2 and alpha.shape[1] == 1:  # predict squeezes one target to 1-D
        alpha = alpha[:, 0]
    coef = form.amplitude * alpha * (y_std if alpha.ndim == 2 else y_std[0])
    intercept = y_mean + y_std * form.constant * alpha.sum(axis=0)
    return KernelExpansion(X.astype(np.float64), coef, form.kernel,
                           intercept if alpha.ndim == 2 else float(intercept[0]))


@estimator_to_expansion.register
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
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
    from sklearn.svm import SVC, SVR, NuSVC, NuSVR, OneClassSVM

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
    if isinstance(estimator, (SVR, NuSVR, OneClassSVM)):
        return _from_svm(estimator)
    if isinstance(estimator, KernelRidge):
        return _from_kernel_ridge(estimator)
    if isinstance(estimator, GaussianProcessRegressor):
        return _from_gaussian_process(estimator)
    if isinstance(estimator, OneVsRestClassifier):
        return _from_ovr(estimator)
    if isinstance(estimator, OneVsOneClassifier):
        return _from_ovo_classifier(estimator)
    if isinstance(estimator, KernelPCA):
        return _from_kernel_pca(estimator)
    raise TypeError(
        f"Cannot build a KernelExpansion from {type(estimator).__name__}; supported: SVC and "
        "NuSVC (binary and multi-class), SVR, NuSVR, OneClassSVM, KernelRidge, "
        "GaussianProcessRegressor, OneVsRestClassifier(SVC), OneVsOneClassifier(SVC), "
        "sklearn.decomposition.KernelPCA, and sparsekm models with expansion_."
    )


@estimator_to_classifier.register
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
