"""Reduced-set estimators: small, fast versions of trained kernel machines.

Thin scikit-learn shells over :mod:`sparsekm.reduced_set`: fit (or take) an SVM,
convert it to a :class:`~sparsekm.KernelExpansion`, approximate the expansion with
``n_vectors`` terms (construction, phase 2, selection) and re-fit the threshold.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, clone
from sklearn.exceptions import NotFittedError
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC, SVR
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .. import persistence
from .._constraints import BACKEND, BOOLEAN, N_JOBS, NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE
from ..expansion import KernelExpansion
from ..parallel import dask_rowwise
from ..reduced_set import refit_intercept
from ..reduced_set.reduction import check_applicable, check_method, reduce_expansion
from ..utils._deprecation import keyword_only_args
from ..utils.validation import check_scalar, validate_X

__all__ = ["ReducedSetClassifier", "ReducedSetRegressor", "reduce_kernel_pca", "reduce_expansion"]


def _is_fitted(est):
    try:
        check_is_fitted(est)
    except NotFittedError:
        return False
    except TypeError:
        return False
    return True


# Parameters shared by ReducedSetClassifier and ReducedSetRegressor, as sparsekm.load checks them.
_COMMON_CONSTRAINTS = {
    "n_vectors": POSITIVE_INT,
    "method": [StrOptions({"construct", "construct+refine", "select-kpca", "select-backward",
                           "select-l1"})],
    # lam = 0 is select_l1's unpenalised fit (fit accepts it, so load must too)
    "c": [StrOptions({"uniform", "inverse"})], "lam": [*NON_NEGATIVE, None],
    "n_init": POSITIVE_INT, "max_iter": POSITIVE_INT,
    "refine_max_iter": [Interval(Integral, 0, None, closed="left")],
    "n_sweeps": [Interval(Integral, 0, None, closed="left")],
    "step": [StrOptions({"one-term", "orthogonal"})], "random_state": RANDOM_STATE,
    "backend": BACKEND,
}


class _ReducedSetBase(BaseEstimator):
    def _validate_common(self, owner):
        check_scalar(self.n_vectors, "n_vectors", owner, kind="int", lower=1)
        check_method(self.method, owner)
        check_applicable(self.method, self.c, self.lam, self.refine_max_iter, self.n_sweeps,
                          self.step, owner)
        if self.shared not in (True, False, "auto"):
            raise ValueError(
                f"The 'shared' parameter of {owner} must be a bool or 'auto'. Got "
                f"{self.shared!r} instead.")

    def _reduce(self, expansion, n_jobs=None):
        return reduce_expansion(
            expansion, self.n_vectors, method=self.method, shared=self.shared, c=self.c,
            lam=self.lam, n_init=self.n_init, max_iter=self.max_iter,
            refine_max_iter=self.refine_max_iter, n_sweeps=self.n_sweeps, step=self.step,
            random_state=self.random_state, n_jobs=n_jobs, backend=self.backend)

    def _fitted_model(self, X, y, est):
        """``est`` itself when fitted (never re-fitted or modified), else a fitted clone."""
        if _is_fitted(est):
            n_in = getattr(est, "n_features_in_", X.shape[1])
            if n_in != X.shape[1]:
                raise ValueError(
                    f"X has {X.shape[1]} features, but the fitted {type(est).__name__} given as "
                    f"'estimator' is expecting {n_in} features as input.")
            return est
        return clone(est).fit(X, y)

    def _persist_params(self):
        # The wrapped scikit-learn estimator is not stored (sparsekm files hold no
        # pickles); the fitted reduced machine needs only expansion_. A loaded model
        # predicts exactly as before but has estimator=None.
        params = self.get_params(deep=False)
        params["estimator"] = None
        return params

    def _evaluate(self, X):
        if type(X) is np.ndarray and X.ndim == 2 and X.flags.c_contiguous and \
                getattr(self, "expansion_", None) is not None and \
                not hasattr(self, "feature_names_in_") and \
                X.shape[1] == getattr(self, "n_features_in_", -1):
            # a few float64 rows: what validate_X would check, checked by the fused path
            fast = self.expansion_._decision_few_rows(X)
            if fast is not None:
                return fast
        check_is_fitted(self)
        X = validate_X(self, X, reset=False)
        return self.expansion_.decision_function(np.asarray(X, dtype=np.float64))


@persistence.register
class ReducedSetClassifier(ClassifierMixin, _ReducedSetBase):
    """An SVM classifier approximated by a reduced set of ``n_vectors`` vectors.

    Reduces a binary ``SVC``/``NuSVC``, a multi-class ``SVC``/``NuSVC`` (one-vs-one,
    as scikit-learn trains it), a ``OneVsOneClassifier(SVC)`` or a
    ``OneVsRestClassifier(SVC)``: the machine's kernel expansion (one output per
    binary machine, see :func:`sparsekm.interop.classifier_from_estimator`)
    ``Psi = sum_i alpha_i Phi(x_i)`` is approximated by
    ``Psi' = sum_j beta_j Phi(z_j)``, and the reduced machine predicts by the
    original model's own multi-class rule (sign, argmax, or the one-vs-one vote with
    scikit-learn's ``decision_function_shape`` and ``break_ties``). The cost of a
    prediction drops from the number of distinct support vectors to ``n_vectors``
    (per binary machine, or in total with ``shared``).

    Parameters
    ----------
    estimator : SVC, NuSVC, OneVsOneClassifier or OneVsRestClassifier, default=None
        The machine to reduce; ``None`` means ``SVC()``. A **fitted** estimator is
        reduced as it is: it is never re-fitted or changed (``fit`` only reads it and
        re-computes the reduced machine's thresholds on ``X, y``). An unfitted one is
        cloned and fitted on ``X, y`` as given (a multi-class ``SVC`` stays
        one-vs-one, a ``OneVsRestClassifier`` one-vs-rest).
    n_vectors : int, default=25
        Reduced-set size ``N_z``: per binary machine unless ``shared``, in total
        (kernel evaluations per prediction) when shared.
    method : {"construct", "construct+refine", "select-kpca", "select-backward", "select-l1"}, \
            default="construct"
        Iterated one-term construction (eq. 15-17/74-77), the same followed by
        phase 2 (L-BFGS over all ``(z_j, beta_j)``), selection by kernel PCA
        (eq. 63-65), exact greedy backward selection with Proposition 8 re-fits
        (:func:`~sparsekm.reduced_set.select_backward`) or by an L1 penalty (eq.
        66-69; ``eq. 70-73`` when shared).
    shared : bool or "auto", default="auto"
        Multi-class: one set of vectors shared by all binary machines (section 5,
        eq. 18-19), each keeping its own coefficients. ``"auto"``: shared for
        one-vs-one (the ``k(k-1)/2`` pairwise machines share one reduced set of
        ``n_vectors`` vectors, as they share their support vectors in libsvm),
        separate for one-vs-rest.
    refit_intercept : bool or "joint", default=True
        Re-compute the thresholds on the training set: ``True`` per binary
        machine (training-error optimal, the papers' rule; for one-vs-one, the
        machine of the pair ``(i, j)`` on the training samples of classes ``i`` and
        ``j`` only, as it was trained), ``"joint"`` (one-vs-rest only) for the
        multi-class argmax, ``False`` keeps the SVM's thresholds.
    c : {"uniform", "inverse"}, default="inverse"
        Weights of the L1 selection.
    lam : float, default=None
        L1 selection: fixed ``lambda`` instead of aiming at ``n_vectors``.
    n_init : int, default=5
        Starting points per one-term step (construction).
    max_iter : int, default=200
        Iterations per one-term step.
    refine_max_iter : int, default=300
        L-BFGS iterations of phase 2.
    n_sweeps : int, default=0
        Backfitting sweeps after phase 1 (construction; not in the papers, see
        :func:`~sparsekm.reduced_set.construct`). On USPS, 3 sweeps lowered the
        RS-25 error from 5.53 % to 5.13 %.
    step : {"one-term", "orthogonal"}, default="one-term"
        Choice of each new vector in construction: the papers' one-term
        approximation of the residual, or the exact Proposition-8 decrease (not in
        the papers; see :func:`~sparsekm.reduced_set.construct`).
    random_state : int, RandomState instance or None, default=None
    n_jobs : int or None, default=None
        Multi-class with separate sets: the binary machines are reduced in
        parallel by :func:`~sparsekm.reduced_set.reduce_many` with this many joblib
        jobs (``None``: one, unless inside a ``joblib.parallel_backend`` context;
        ``-1``: all cores; ``joblib.parallel_backend("dask")`` runs them on a
        ``dask.distributed`` cluster). The result does not depend on ``n_jobs``.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the construction's kernel sums (``method="construct"`` and
        ``"construct+refine"``); ``None``: :func:`sparsekm.config.get_config`
        ``["backend"]``. With ``"torch"`` the SVM's support vectors go to the
        configured device (``config["device"]``; ``None``: CUDA when available, else
        CPU) once per reduction (see :func:`~sparsekm.reduced_set.construct`). The
        reduced machine holds numpy arrays.

    Attributes
    ----------
    expansion_ : KernelExpansion
        The reduced machine: one output (binary), one per class (one-vs-rest) or
        one per pair of classes in scikit-learn's order (one-vs-one).
    scheme_ : {"binary", "ovr", "ovo"}
        The original model's multi-class scheme, kept by the reduced machine.
    decision_function_shape_ : {"ovr", "ovo"}
        One-vs-one: the shape of ``decision_function`` (the original model's).
    n_vectors_ : int
        Distinct vectors in ``expansion_``: kernel evaluations per prediction.
    n_support_vectors_ : int
        Distinct support vectors of the original machine.
    objective_ : float or ndarray of shape (n_outputs,)
        ``||Psi - Psi'||^2`` per binary machine.
    n_iter_ : int
        Iterations of the inner solvers (at least 1).
    relative_objective_ : float or ndarray
        ``||Psi - Psi'||^2 / ||Psi||^2``.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    Notes
    -----
    ``sparsekm.save`` stores the reduced machine and all parameters except the
    wrapped ``estimator`` (stored as ``None``: sparsekm files hold no pickled
    scikit-learn objects); the loaded model predicts identically.

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sklearn.svm import SVC
    >>> from sparsekm.models import ReducedSetClassifier
    >>> X, y = make_moons(200, noise=0.2, random_state=0)
    >>> clf = ReducedSetClassifier(SVC(C=10), n_vectors=10, random_state=0).fit(X, y)
    >>> clf.n_vectors_
    10
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "n_features_in_": persistence.spec.int(bind="n_features"),
        "classes_": persistence.spec.array("biufU", ("n_classes",)),
        "n_support_vectors_": persistence.spec.int(),
        "expansion_": persistence.spec.expansion(n_features="n_features", n_outputs="n_outputs"),
        "n_vectors_": persistence.spec.int(),
        "objective_": persistence.spec.one_of(
            persistence.spec.float(), persistence.spec.array("f", ("n_outputs",))),
        "n_iter_": persistence.spec.int(min=1),
        "relative_objective_": persistence.spec.one_of(
            persistence.spec.float(), persistence.spec.array("f", ("n_outputs",))),
        # the original model's multi-class scheme (absent in files written before it)
        "scheme_": persistence.spec.str(optional=True),
        "decision_function_shape_": persistence.spec.str(optional=True),
        "break_ties_": persistence.spec.bool(optional=True),
        "vote_": persistence.spec.str(optional=True),
        # the error-budget curve walked by sparsekm.compress (models it returned)
        "compress_curve_": persistence.spec.dict(
            persistence.spec.one_of(
                persistence.spec.int(), persistence.spec.float(), persistence.spec.bool(),
                persistence.spec.str(), persistence.spec.list(persistence.spec.one_of(
                    persistence.spec.int(), persistence.spec.float()))),
            keys=("n_vectors", "budget", "error", "full_error", "full_budget", "target_error",
                  "chosen", "met", "search"), optional=True),
    }

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **_COMMON_CONSTRAINTS, "estimator": [HasMethods(["fit", "decision_function"]), None],
        "shared": ["boolean", StrOptions({"auto"})],
        "refit_intercept": ["boolean", StrOptions({"joint"})],
        "n_jobs": N_JOBS}

    @keyword_only_args
    def __init__(self, estimator=None, *, n_vectors=25, method="construct", shared="auto",
                 refit_intercept=True, c="inverse", lam=None, n_init=5, max_iter=200,
                 refine_max_iter=300, n_sweeps=0, step="one-term", random_state=None, n_jobs=None,
                 backend=None):
        self.estimator = estimator
        self.n_vectors = n_vectors
        self.method = method
        self.shared = shared
        self.refit_intercept = refit_intercept
        self.c = c
        self.lam = lam
        self.n_init = n_init
        self.max_iter = max_iter
        self.refine_max_iter = refine_max_iter
        self.n_sweeps = n_sweeps
        self.step = step
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit (only if unfitted) the SVM, reduce its expansion and re-fit the thresholds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data: the thresholds are re-computed on it (and an unfitted
            estimator is fitted on it).
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        from sklearn.multiclass import OneVsOneClassifier
        from sklearn.svm import NuSVC

        from ..interop import classifier_from_estimator

        owner = type(self).__name__
        self._validate_common(owner)
        if self.refit_intercept not in (True, False, "joint"):
            raise ValueError(
                f"The 'refit_intercept' parameter of {owner} must be True, False or 'joint'. "
                f"Got {self.refit_intercept!r} instead.")
        X, y = validate_X(self, X, y)
        X = np.asarray(X, dtype=np.float64)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(
                f"{owner} needs samples of at least 2 classes in the data; got 1 class "
                f"({classes[0]!r}).")
        base = SVC() if self.estimator is None else self.estimator
        if not isinstance(base, (SVC, NuSVC, OneVsRestClassifier, OneVsOneClassifier)):
            raise TypeError(
                f"The 'estimator' parameter of {owner} must be an SVC, NuSVC, "
                f"OneVsOneClassifier(SVC) or a OneVsRestClassifier(SVC); got "
                f"{type(base).__name__}.")
        model = self._fitted_model(X, y, base)
        exact = classifier_from_estimator(model)
        self.classes_ = np.asarray(exact.classes)
        self.scheme_ = exact.scheme
        self.decision_function_shape_ = exact.decision_function_shape
        self.break_ties_ = bool(exact.break_ties)
        self.vote_ = exact.vote
        if self.refit_intercept == "joint" and self.scheme_ == "ovo":
            raise ValueError(
                f"refit_intercept='joint' of {owner} applies to one-vs-rest (the argmax of one "
                "output per class); a one-vs-one model's thresholds are re-fitted per pair "
                "(refit_intercept=True) or kept (False).")
        expansion = exact.expansion
        self.n_support_vectors_ = int(expansion.merge_duplicates().n_terms)
        shared = (self.scheme_ == "ovo") if self.shared == "auto" else self.shared
        res = reduce_expansion(
            expansion, self.n_vectors, method=self.method, shared=shared, c=self.c,
            lam=self.lam, n_init=self.n_init, max_iter=self.max_iter,
            refine_max_iter=self.refine_max_iter, n_sweeps=self.n_sweeps, step=self.step,
            random_state=self.random_state, n_jobs=self.n_jobs, backend=self.backend)
        reduced = res.expansion
        if self.refit_intercept:
            reduced = self._refit_thresholds(reduced, X, y)
        self.expansion_ = reduced
        self.n_vectors_ = int(reduced.merge_duplicates().n_terms)
        self.objective_ = res.objective
        self.n_iter_ = max(int(res.n_iter), 1)
        self.relative_objective_ = res.relative_objective if np.ndim(res.objective) else \
            float(res.relative_objective)
        return self

    def _refit_thresholds(self, reduced, X, y):
        """The papers' training-error optimal threshold, per binary machine."""
        if self.scheme_ == "binary":
            return refit_intercept(reduced, X, y == self.classes_[1])
        if self.scheme_ == "ovr":
            method = "joint" if self.refit_intercept == "joint" else "per-output"
            return refit_intercept(reduced, X, y, method=method, classes=self.classes_)
        # one-vs-one: machine (i, j) separates class i (positive) from class j and was
        # trained on their samples only; its threshold is re-fitted on those samples.
        from ..multiclass import ovo_pairs

        I, J = ovo_pairs(self.classes_.size)
        b = np.array(reduced.intercept, dtype=np.float64)
        for p, (i, j) in enumerate(zip(I, J, strict=True)):
            mask = (y == self.classes_[i]) | (y == self.classes_[j])
            single = reduced.output(p)
            b[p] = refit_intercept(single, X[mask], y[mask] == self.classes_[i]).intercept
        return KernelExpansion(reduced.vectors, reduced.coef, reduced.kernel, b)

    def _classifier(self):
        from ..multiclass import ExpansionClassifier

        check_is_fitted(self)
        return ExpansionClassifier(self.expansion_, self.classes_, scheme=self.scheme_,
                                   decision_function_shape=self.decision_function_shape_,
                                   break_ties=self.break_ties_, vote=self.vote_)

    def _restore_defaults(self):
        # files written before scheme_ existed hold binary or one-vs-rest machines
        if not hasattr(self, "scheme_") and hasattr(self, "expansion_"):
            self.scheme_ = "ovr" if self.expansion_.is_multioutput else "binary"
            self.decision_function_shape_, self.break_ties_, self.vote_ = "ovr", False, "svc"

    @dask_rowwise
    def decision_function(self, X):
        """Decision function of the reduced machine, shaped as the original model's.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)
            A dask array gives a dask array (see :mod:`sparsekm.parallel`).

        Returns
        -------
        ndarray of shape (n_samples,) (binary), (n_samples, n_classes) (one-vs-rest;
        one-vs-one with ``decision_function_shape="ovr"``: votes plus squashed
        confidences) or (n_samples, n_classes * (n_classes - 1) / 2) (one-vs-one,
        ``"ovo"``: the pairwise machines)
        """
        self._restore_defaults()
        F = self._evaluate(X)
        if self.scheme_ != "ovo":
            return F
        return self._classifier().decision_function_from_pairwise(F)

    @dask_rowwise
    def predict(self, X):
        """Class labels by the original model's rule: sign, argmax or one-vs-one vote.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        self._restore_defaults()
        return self._classifier().predict_from_pairwise(self._evaluate(X))


@persistence.register
class ReducedSetRegressor(RegressorMixin, _ReducedSetBase):
    """An SVR approximated by a reduced set of ``n_vectors`` vectors.

    Parameters
    ----------
    estimator : SVR, default=None
        ``None`` means ``SVR()``; fitted estimators are used as they are.
    n_vectors : int, default=25
    method : {"construct", "construct+refine", "select-kpca", "select-backward", "select-l1"}, \
            default="construct"
    refit_intercept : bool, default=True
        Re-compute the intercept as the mean training residual (least squares).
    c, lam, n_init, max_iter, refine_max_iter, n_sweeps, step, random_state, backend
        As in :class:`ReducedSetClassifier`.

    Attributes
    ----------
    expansion_ : KernelExpansion
    n_vectors_, n_support_vectors_ : int
    objective_, relative_objective_ : float
    n_iter_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import ReducedSetRegressor
    >>> X = np.linspace(0, 6, 200)[:, None]
    >>> reg = ReducedSetRegressor(n_vectors=8, random_state=0).fit(X, np.sin(X[:, 0]))
    >>> reg.n_vectors_
    8
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "n_features_in_": persistence.spec.int(bind="n_features"),
        "n_support_vectors_": persistence.spec.int(),
        "expansion_": persistence.spec.expansion(n_features="n_features", n_outputs=1),
        "n_vectors_": persistence.spec.int(),
        "objective_": persistence.spec.float(),
        "n_iter_": persistence.spec.int(min=1),
        "relative_objective_": persistence.spec.float(),
    }

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **_COMMON_CONSTRAINTS, "estimator": [HasMethods(["fit", "predict"]), None],
        "refit_intercept": BOOLEAN}

    @keyword_only_args
    def __init__(self, estimator=None, *, n_vectors=25, method="construct", refit_intercept=True,
                 c="inverse", lam=None, n_init=5, max_iter=200, refine_max_iter=300,
                 n_sweeps=0, step="one-term", random_state=None, backend=None):
        self.estimator = estimator
        self.n_vectors = n_vectors
        self.method = method
        self.refit_intercept = refit_intercept
        self.c = c
        self.lam = lam
        self.n_init = n_init
        self.max_iter = max_iter
        self.refine_max_iter = refine_max_iter
        self.n_sweeps = n_sweeps
        self.step = step
        self.random_state = random_state
        self.backend = backend

    shared = False

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit (if needed) the SVR, reduce its expansion and re-fit the intercept.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        owner = type(self).__name__
        self._validate_common(owner)
        if self.refit_intercept not in (True, False):
            raise ValueError(
                f"The 'refit_intercept' parameter of {owner} must be a bool. Got "
                f"{self.refit_intercept!r} instead.")
        X, y = validate_X(self, X, y, y_numeric=True)
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        base = SVR() if self.estimator is None else self.estimator
        if not isinstance(base, SVR):
            raise TypeError(
                f"The 'estimator' parameter of {owner} must be an SVR; got {type(base).__name__}.")
        model = self._fitted_model(X, y, base)
        expansion = KernelExpansion.from_estimator(model)
        self.n_support_vectors_ = int(expansion.n_terms)
        res = self._reduce(expansion)
        reduced = res.expansion
        if self.refit_intercept:
            resid = y - (reduced.decision_function(X) - reduced.intercept)
            reduced = KernelExpansion(reduced.vectors, reduced.coef, reduced.kernel,
                                      float(np.mean(resid)))
        self.expansion_ = reduced
        self.n_vectors_ = int(reduced.n_terms)
        self.objective_ = float(res.objective)
        self.n_iter_ = max(int(res.n_iter), 1)
        self.relative_objective_ = float(res.relative_objective)
        return self

    @dask_rowwise
    def predict(self, X):
        """Predictions of the reduced machine.

        Parameters
        ----------
        X : array-like or dask.array.Array of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._evaluate(X)


def reduce_kernel_pca(kpca, n_vectors, *, method="construct", shared=True, n_init=5,
                      max_iter=200, refine_max_iter=300, n_sweeps=0, step="one-term", random_state=None):
    """Approximate a fitted kernel PCA feature extractor with a reduced set.

    Each kernel PCA feature is an expansion over all training points; with
    ``shared=True`` (section 5 of *Fast approximation*) all components are
    approximated by one set of ``n_vectors`` vectors, so extracting all features
    costs ``n_vectors`` kernel evaluations instead of one per training point.

    Parameters
    ----------
    kpca : sklearn.decomposition.KernelPCA or sparsekm.models.KernelPCA
        Fitted; its features are ``transform(X)``.
    n_vectors : int
    method : {"construct", "construct+refine", "select-kpca", "select-backward", "select-l1"}
    shared : bool, default=True
    n_init, max_iter, refine_max_iter, n_sweeps, step, random_state
        As in :func:`~sparsekm.reduced_set.construct`.

    Returns
    -------
    ReducedSetResult
        ``result.expansion.decision_function(X)`` approximates ``kpca.transform(X)``
        (the centring constant is kept as the intercept).
    """
    expansion = getattr(kpca, "expansions_", None)
    if not isinstance(expansion, KernelExpansion):
        expansion = KernelExpansion.from_estimator(kpca)
    return reduce_expansion(expansion, n_vectors, method=method, shared=shared, n_init=n_init,
                            max_iter=max_iter, refine_max_iter=refine_max_iter,
                            n_sweeps=n_sweeps, step=step, random_state=random_state)
