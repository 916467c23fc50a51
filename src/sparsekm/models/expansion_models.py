"""Models whose output is one :class:`~sparsekm.KernelExpansion`: a regressor, a one-class
detector and a feature extractor.

:class:`ExpansionRegressor` is the shell of every small regressor sparsekm builds: the
Nyström + ridge model it fits by itself (:func:`sparsekm.approx.nystroem_ridge`), and a
compressed ``KernelRidge``, ``SVR`` or ``GaussianProcessRegressor`` (made with
:meth:`ExpansionRegressor.from_expansion` / :meth:`ExpansionRegressor.from_gaussian_process`).
A regressor made from a Gaussian process keeps a predictive variance, the
projected-process variance with the expansion's vectors as inducing points
(:mod:`sparsekm.approx.ridge`); any other refuses ``predict(return_std=True)`` and
says why. :class:`ExpansionOutlierDetector` (a compressed ``OneClassSVM``) and
:class:`ExpansionTransformer` (a compressed kernel PCA ``transform``) are built from an
expansion (:meth:`from_expansion`, or :func:`sparsekm.compress`), not fitted.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, OutlierMixin, RegressorMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .. import persistence
from .._constraints import KERNEL, NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE
from ..approx.ridge import nystroem_ridge, ridge_on_landmarks
from ..expansion import KernelExpansion
from ..kernels import resolve_kernel
from ..parallel import dask_rowwise
from ..utils._deprecation import keyword_only_args
from ..utils.validation import validate_X

__all__ = ["ExpansionRegressor", "ExpansionOutlierDetector", "ExpansionTransformer"]

_S = persistence.spec

#: ``compress_report_`` of a model made by :func:`sparsekm.compress` (a plain dict).
_REPORT_VALUE = _S.one_of(_S.int(min=-1), _S.float(), _S.str(), _S.bool(), nullable=True)
_REPORT = _S.dict(_S.one_of(_REPORT_VALUE, _S.list(_S.str()), _S.list(_S.dict(_REPORT_VALUE)),
                            _S.dict(_REPORT_VALUE)), optional=True)

_NO_VARIANCE = ("this regressor has no predictive variance: only one made from a "
                "GaussianProcessRegressor (ExpansionRegressor.from_gaussian_process, the "
                "projected-process form) has one; a ridge or SVR prediction is a point "
                "estimate.")


@persistence.register
class ExpansionRegressor(RegressorMixin, BaseEstimator):
    """Regression by ``f(x) = sum_j coef_j k(x, z_j) + intercept`` over few vectors ``z_j``.

    Fitted by itself it is the Nyström + ridge regressor: ``n_vectors`` landmarks
    (uniform rows of ``X`` or k-means centres) and ridge (``alpha``) on the features
    ``K(X, Z)`` with the RKHS penalty ``alpha beta^T K_ZZ beta``, the subset-of-regressors
    model (:func:`sparsekm.approx.ridge_on_landmarks`, eq. 1-2 there); it equals
    scikit-learn's ``make_pipeline(Nystroem(...), Ridge(alpha))`` on the same landmarks.

    Parameters
    ----------
    kernel : Kernel, str or None, default=None
        As in :func:`sparsekm.kernels.resolve_kernel` (``None``: RBF).
    gamma, degree, coef0
        For string kernels.
    n_vectors : int, default=100
        Landmarks (at most the number of training rows).
    landmarks : {"uniform", "kmeans"}, default="uniform"
    alpha : float >= 0, default=1.0
        Ridge parameter.
    random_state : int, RandomState, Generator or None

    Attributes
    ----------
    expansion_ : KernelExpansion
    n_vectors_ : int
        Kernel evaluations per prediction.
    alpha_ : float
        The ridge parameter of the fit (the noise-to-amplitude ratio for a Gaussian process).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import ExpansionRegressor
    >>> X = np.linspace(0, 6, 200)[:, None]
    >>> reg = ExpansionRegressor(n_vectors=20, gamma=1.0, alpha=1e-3, random_state=0)
    >>> float(np.abs(reg.fit(X, np.sin(X[:, 0])).predict(X) - np.sin(X[:, 0])).max()) < 0.01
    True
    """

    _persist_attrs = {
        "n_features_in_": _S.int(bind="n_features"),
        "expansion_": _S.expansion(n_terms="n_terms", n_features="n_features"),
        "n_vectors_": _S.int(),
        "alpha_": _S.float(),
        # the projected-process variance of a Gaussian process (absent otherwise)
        "variance_factors_": _S.tuple(_S.array("f", ("n_terms", None)), length=2,
                                      optional=True),
        "variance_scale_": _S.float(optional=True),
        "variance_noise_": _S.float(optional=True),
        "no_variance_reason_": _S.str(optional=True),
        "compress_report_": _REPORT,
    }

    _parameter_constraints = {
        **KERNEL, "n_vectors": POSITIVE_INT, "landmarks": [StrOptions({"uniform", "kmeans"})],
        "alpha": NON_NEGATIVE, "random_state": RANDOM_STATE}

    @keyword_only_args
    def __init__(self, *, kernel=None, gamma="scale", degree=3, coef0=0.0, n_vectors=100,
                 landmarks="uniform", alpha=1.0, random_state=None):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_vectors = n_vectors
        self.landmarks = landmarks
        self.alpha = alpha
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Nyström landmarks and ridge regression on their features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        # n_vectors, alpha, landmarks, kernel: checked by _parameter_constraints (_fit_context)
        X, y = validate_X(self, X, y, y_numeric=True)
        y = column_or_1d(y, warn=True).astype(np.float64)
        X = np.asarray(X, dtype=np.float64)
        kernel = resolve_kernel(self.kernel, X, type(self).__name__, gamma=self.gamma,
                                degree=self.degree, coef0=self.coef0)
        m = min(int(self.n_vectors), X.shape[0])
        res = nystroem_ridge(kernel, X, y, m, method=self.landmarks, lam=float(self.alpha),
                             random_state=self.random_state)
        self._set_fitted(res.expansion, float(self.alpha), reason=_NO_VARIANCE)
        return self

    def _set_fitted(self, expansion, alpha, *, reason=None):
        self.expansion_ = expansion
        self.n_vectors_ = int(expansion.n_terms)
        self.alpha_ = float(alpha)
        self.n_features_in_ = int(expansion.n_features)
        if reason is not None:
            self.no_variance_reason_ = reason
        return self

    # -- building from a model ---------------------------------------------------------
    @classmethod
    def from_expansion(cls, expansion, *, alpha=0.0, reason=_NO_VARIANCE):
        """A fitted regressor predicting ``expansion`` (a compressed KernelRidge or SVR)."""
        if not isinstance(expansion, KernelExpansion) or expansion.is_multioutput:
            raise TypeError("from_expansion needs a single-output KernelExpansion.")
        est = cls(kernel=expansion.kernel, gamma="scale", n_vectors=max(expansion.n_terms, 1))
        return est._set_fitted(expansion, alpha, reason=reason)

    @classmethod
    def from_gaussian_process(cls, gpr, vectors=None, *, expansion=None):
        """A regressor over ``vectors`` from a fitted ``GaussianProcessRegressor``.

        The predictive variance is the projected-process variance with ``vectors``
        as inducing points ``Z`` (Quiñonero-Candela & Rasmussen 2005, eq. 21):
        ``amplitude [k(x,x) - k_Z(x)^T K_ZZ^-1 k_Z(x) + sigma^2/amplitude k_Z(x)^T
        (sigma^2/amplitude K_ZZ + K_ZX K_XZ)^-1 k_Z(x)]``, with ``sigma^2`` the GP's
        ``alpha`` plus its ``WhiteKernel`` noise, in the units of ``y`` (``normalize_y``
        undone), plus the white noise as scikit-learn's ``predict(return_std=True)``
        adds it. The mean is ``expansion`` when given (e.g. a reduced set of the GP's
        mean), else the projected-process mean over ``Z`` (the ridge refit of
        :func:`sparsekm.approx.ridge_on_landmarks` on the GP's training data with
        ``lam = sigma^2 / amplitude``). With ``Z`` = the training inputs both equal
        the GP's own to rounding.

        Parameters
        ----------
        gpr : sklearn.gaussian_process.GaussianProcessRegressor, fitted
        vectors : array-like of shape (m, n_features), optional
            Inducing points; default: ``expansion.vectors``, or the training inputs.
        expansion : KernelExpansion, optional
            The mean, with the GP's kernel (its vectors are the default ``vectors``).

        Raises
        ------
        TypeError
            When the GP's kernel has no sparsekm form (see
            :func:`sparsekm.interop.kernel_from_sklearn_gp`).
        """
        from sklearn.gaussian_process import GaussianProcessRegressor

        from ..interop import expansion_from_estimator, kernel_from_sklearn_gp

        if not isinstance(gpr, GaussianProcessRegressor):
            raise TypeError(f"from_gaussian_process needs a GaussianProcessRegressor; got "
                            f"{type(gpr).__name__}.")
        full = expansion_from_estimator(gpr)  # checks fitted and convertible
        form = kernel_from_sklearn_gp(gpr.kernel_)
        X = np.asarray(gpr.X_train_, dtype=np.float64)
        if vectors is None:
            vectors = expansion.vectors if expansion is not None else X
        Z = np.asarray(vectors, dtype=np.float64)
        y_std = np.asarray(gpr._y_train_std, dtype=np.float64).reshape(-1)
        y_mean = np.asarray(gpr._y_train_mean, dtype=np.float64).reshape(-1)
        if y_std.size != 1 or full.is_multioutput:
            raise TypeError("from_gaussian_process takes single-target Gaussian processes.")
        noise = np.asarray(gpr.alpha, dtype=np.float64)
        reason = None
        if noise.size != 1:
            reason = ("the GaussianProcessRegressor has a noise level per training sample "
                      "(alpha is an array); the projected-process form here has one noise "
                      "level, so no variance is given.")
        elif form.constant != 0.0:
            reason = ("the GP kernel adds a ConstantKernel term (a constant covariance), "
                      "which the projected-process form here does not carry, so no "
                      "variance is given.")
        sigma2 = float(noise.reshape(-1)[0]) + form.noise
        if expansion is None and reason is not None:
            raise ValueError(f"Cannot build the projected-process mean: {reason} Pass the mean "
                             "as expansion=.")
        lam = sigma2 / form.amplitude
        est = cls(kernel=form.kernel, n_vectors=max(Z.shape[0], 1), alpha=lam)
        if reason is None:
            y = np.asarray(gpr.y_train_, dtype=np.float64).reshape(X.shape[0])
            res = ridge_on_landmarks(form.kernel, Z, X, y, lam=lam, fit_intercept=False)
            if expansion is None:
                expansion = KernelExpansion(Z, res.expansion.coef * y_std[0], form.kernel,
                                            float(y_mean[0]))
            A, B, _ = res.variance_factors()
            est.variance_factors_ = (A, B)
            est.variance_scale_ = float(form.amplitude * y_std[0] ** 2)
            est.variance_noise_ = float(form.noise * y_std[0] ** 2)
        else:
            est.no_variance_reason_ = reason
        if expansion.kernel != form.kernel:
            raise ValueError(f"expansion's kernel {expansion.kernel!r} is not the GP's "
                             f"{form.kernel!r}.")
        if reason is None and not np.array_equal(expansion.vectors, Z):
            raise ValueError("The mean expansion's vectors must be the inducing points "
                             "(vectors).")
        return est._set_fitted(expansion, lam)

    # -- prediction --------------------------------------------------------------------
    @dask_rowwise
    def predict(self, X, return_std=False):
        """``f(x)``; with ``return_std=True`` also the predictive standard deviation.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            A dask array gives a dask array (row chunks; no ``return_std`` then).
        return_std : bool, default=False
            Only for a regressor made from a Gaussian process; refused otherwise,
            with the reason.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,), with ``return_std=True``
        """
        check_is_fitted(self, "expansion_")
        if return_std and not hasattr(self, "variance_factors_"):
            raise ValueError("predict(return_std=True) is refused: " + getattr(
                self, "no_variance_reason_", _NO_VARIANCE))
        X = np.asarray(validate_X(self, X, reset=False), dtype=np.float64)
        mean = self.expansion_.decision_function(X)
        if not return_std:
            return mean
        A, B = self.variance_factors_
        kernel, Z = self.expansion_.kernel, self.expansion_.vectors
        var = np.empty(X.shape[0])
        step = max(16, 2**20 // max(Z.shape[0], 1))
        for a in range(0, X.shape[0], step):
            Kb = np.asarray(kernel(X[a:a + step], Z), dtype=np.float64)
            var[a:a + step] = (np.asarray(kernel.diag(X[a:a + step]), dtype=np.float64)
                               - ((Kb @ A) ** 2).sum(axis=1)
                               + self.alpha_ * ((Kb @ B) ** 2).sum(axis=1))
        var = np.maximum(var, 0.0) * self.variance_scale_ + self.variance_noise_
        return mean, np.sqrt(var)

    @property
    def has_variance(self):
        """Whether ``predict(return_std=True)`` is available."""
        return hasattr(self, "variance_factors_")


class _BuiltFromExpansion(BaseEstimator):
    """A model built around an expansion (:meth:`from_expansion`), not fitted."""

    _persist_attrs = {
        "n_features_in_": _S.int(bind="n_features"),
        "expansion_": _S.expansion(n_terms="n_terms", n_features="n_features"),
        "n_vectors_": _S.int(),
        "compress_report_": _REPORT,
    }
    #: no constructor parameters (checked by sparsekm.load)
    _parameter_constraints: dict = {}

    def fit(self, X, y=None):
        raise TypeError(f"{type(self).__name__} is built from a kernel expansion "
                        f"({type(self).__name__}.from_expansion or sparsekm.compress), "
                        "not fitted.")

    @classmethod
    def from_expansion(cls, expansion):
        """The model whose output is ``expansion``."""
        if not isinstance(expansion, KernelExpansion):
            raise TypeError(f"from_expansion needs a KernelExpansion; got "
                            f"{type(expansion).__name__}.")
        cls._check_outputs(expansion)
        est = cls()
        est.expansion_ = expansion
        est.n_vectors_ = int(expansion.n_terms)
        est.n_features_in_ = int(expansion.n_features)
        return est

    @staticmethod
    def _check_outputs(expansion):
        pass

    def _evaluate(self, X):
        check_is_fitted(self, "expansion_")
        X = validate_X(self, X, reset=False)
        return self.expansion_.decision_function(np.asarray(X, dtype=np.float64))


@persistence.register
class ExpansionOutlierDetector(OutlierMixin, _BuiltFromExpansion):
    """One-class detector ``f(x) = sum_j coef_j k(x, z_j) + intercept``: inlier where ``f > 0``.

    The shape of ``sklearn.svm.OneClassSVM``'s decision (libsvm calls ``f(x) > 0`` an
    inlier, +1, and the rest outliers, -1); a compressed ``OneClassSVM`` is one.
    """

    @staticmethod
    def _check_outputs(expansion):
        if expansion.is_multioutput:
            raise TypeError("An ExpansionOutlierDetector needs a single-output expansion.")

    @dask_rowwise
    def decision_function(self, X):
        """``f(x)``: positive for inliers."""
        return self._evaluate(X)

    @dask_rowwise
    def predict(self, X):
        """+1 (inlier, ``f(x) > 0``) or -1 (outlier)."""
        return np.where(self.decision_function(X) > 0, 1, -1)


@persistence.register
class ExpansionTransformer(TransformerMixin, _BuiltFromExpansion):
    """Feature extractor ``x -> (f_1(x), ..., f_k(x))``, one expansion output per feature.

    A compressed kernel PCA: its ``transform`` approximates the original's projections
    (the centring constants kept as intercepts, :func:`sparsekm.interop.expansion_from_estimator`).
    """

    @dask_rowwise
    def transform(self, X):
        """The features, shape (n_samples, n_outputs)."""
        out = self._evaluate(X)
        return out if out.ndim == 2 else out[:, None]
