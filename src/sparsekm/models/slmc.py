"""Direct sparse kernel classifiers (Wu, Schölkopf, Bakır, JMLR 2006).

Thin scikit-learn shells over :mod:`sparsekm.sparse_learning`:

* :class:`SparseLargeMarginClassifier` (alias :data:`SLMC`) -- the SVM with the
  extra constraint ``w = sum_j beta_j Phi(z_j)`` (eq. 20-23), ``Z`` learned by
  L-BFGS on the marginal function ``W(Z)`` (eq. 24-27, 44, 46);
* :class:`SparseKFD` -- sparse kernel Fisher discriminant (appendix A);
* :class:`RSVM` -- reduced SVM (Lee & Mangasarian): random training points as
  ``Z``, linear SVM on ``psi_z(x)`` with regulariser ``beta^T beta``;
* :class:`ModifiedRSVM` -- the same ``Z``, coefficients by eq. 45 (section 4.2);
* :class:`ModifiedRS` -- reduced-set vectors, coefficients by eq. 45 (section 4.1).

All of them compute their coefficients with the one fixed-``Z`` solver
:func:`sparsekm.sparse_learning.fixed_z_svm`. Multi-class problems are solved one-vs-rest;
``expansion_`` then has one column per class (the ``Z`` of all binary problems
stacked, each column non-zero on its own block). The binary problems run in
parallel through joblib with ``n_jobs`` (see :mod:`sparsekm.parallel`); every
random number is drawn before they are dispatched, in the order of the classes,
so the result does not depend on ``n_jobs``.
"""

from __future__ import annotations

import functools
import warnings
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d

from .. import sparse_learning
from .._constraints import (
    BACKEND,
    BOOLEAN,
    KERNEL,
    N_JOBS,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
)
from ..backend import resident, solver_kernel
from ..expansion import KernelExpansion
from ..kernels import estimator_kernel
from ..parallel import dask_rowwise, parallel_map
from ..persistence import register, spec
from ..sparse_learning.fixed_z import check_Z, solve_features
from ..utils._deprecation import keyword_only_args
from ..utils.progress import progress
from ..utils.validation import check_array, check_labels, check_scalar, validate_X

__all__ = [
    "SparseLargeMarginClassifier",
    "SLMC",
    "SparseKFD",
    "RSVM",
    "ModifiedRSVM",
    "ModifiedRS",
]


def _stopped_at_max_iter(res, max_iter):
    """Whether an L-BFGS run over ``Z`` ended on its iteration limit, not on ``tol``."""
    if max_iter <= 0:
        return False  # no optimisation asked for
    message = str(res.message).upper()
    return res.n_iter >= max_iter or "LIMIT" in message or "EXCEEDS" in message


def _warn_if_stopped(est, infos):
    """One ConvergenceWarning naming the binary problems that stopped at ``max_iter``."""
    stopped = [k for k, info in enumerate(infos) if info.get("stopped")]
    if not stopped:
        return
    shared = getattr(est, "shared", False) is True and len(est.classes_) > 2
    which = ("the shared multi-class problem" if shared else
             "the binary problem" if len(infos) == 1 else
             f"{len(stopped)} of {len(infos)} one-vs-rest problems (classes "
             f"{est.classes_[stopped].tolist()[:10]})")
    warnings.warn(
        f"{type(est).__name__} stopped at max_iter={est.max_iter} L-BFGS iterations over Z "
        f"before W(Z) converged to tol={est.tol} in {which}. Increase max_iter (or tol); "
        "verbose=True shows the progress.", ConvergenceWarning, stacklevel=4)


def _restart_values(res):
    """Final ``W`` of every restart of an L-BFGS result (one entry without restarts)."""
    return np.array([res.fun]) if res.restarts is None else np.asarray(res.restarts)


def _solve_fixed(X, y, Z, kernel, C, features="whitened"):
    """The shared fixed-Z solver on the distinct (x, y) pairs (exactly equivalent)."""
    Xu, yu, counts = sparse_learning.aggregate_duplicates(X, y)
    return sparse_learning.fixed_z_svm(Xu, yu, Z, kernel, C, features=features, tol=1e-6,
                              on_singular="pinv", sample_weight=counts)


# Parameters every classifier of this module has, as sparsekm.load checks them.
_CONSTRAINTS = {**KERNEL, "n_vectors": POSITIVE_INT, "C": POSITIVE, "random_state": RANDOM_STATE,
                "n_jobs": N_JOBS}


class _DirectSparseBase(ClassifierMixin, BaseEstimator):
    """Shared validation, one-vs-rest and prediction for the direct sparse classifiers."""

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "n_features_in_": spec.int(bind="n_features"),
        "expansion_": spec.expansion(n_features="n_features", n_outputs="n_outputs"),
        "classes_": spec.array("biufU", ("n_classes",)),
        "objective_": spec.array("f", ("n_outputs",)),
        "duality_gap_": spec.array("f", ("n_outputs",)),
    }

    # -- validation ----------------------------------------------------------------
    def _validate_common(self, X, y):
        owner = type(self).__name__
        if y is not None:
            check_labels(y)  # named before scikit-learn's own check ("Input y ...")
        X, y = validate_X(self, X, y, y_numeric=False,
                             multi_output=False)
        X = check_array(X, "X")
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(
                f"{owner} needs samples of at least 2 classes in the data; got 1 class "
                f"({classes[0]!r})."
            )
        check_scalar(self.C, "C", owner, lower=0.0, lower_inclusive=False)
        kernel = estimator_kernel(self, X, owner)
        return X, y_idx.reshape(-1), classes, kernel

    def _check_n_vectors(self, n_unique):
        owner = type(self).__name__
        n_vectors = check_scalar(self.n_vectors, "n_vectors", owner, kind="int", lower=1)
        if n_vectors > n_unique:
            raise ValueError(
                f"n_vectors={n_vectors} is larger than the number of distinct training points "
                f"({n_unique}); choose n_vectors <= {n_unique}."
            )
        return n_vectors

    # -- fitting ---------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (two or more classes; more than two are fitted one-vs-rest).

        Returns
        -------
        self
        """
        return self._fit_problems(X, y)

    def _fit_problems(self, X, y, **solver_options):
        """One binary problem (two classes) or one per class (one-vs-rest), each by
        :meth:`_fit_binary` with ``solver_options`` passed as keywords (explicit
        arguments, never state stored on the estimator)."""
        X, y_idx, classes, kernel = self._validate_common(X, y)
        rng = check_random_state(self.random_state)
        self._prepare(X, kernel)
        problems = [0] if classes.size == 2 else list(range(classes.size))
        tasks = []
        for k in problems:
            yk = np.where(y_idx == (1 if classes.size == 2 else k), 1.0, -1.0)
            # all random numbers in class order, here: the same for every n_jobs
            tasks.append((X, yk, kernel, self._draw(X, yk, kernel, rng, k), k))
        fit_binary = self._fit_binary
        if solver_options:
            fit_binary = functools.partial(fit_binary, **solver_options)
        fitted = parallel_map(fit_binary, tasks, n_jobs=self.n_jobs)
        Zs, betas, bs, infos = (list(v) for v in zip(*fitted, strict=True))
        if classes.size == 2:
            self.expansion_ = KernelExpansion(Zs[0], betas[0], kernel, bs[0])
        else:
            sizes = [z.shape[0] for z in Zs]
            coef = np.zeros((sum(sizes), classes.size))
            start = 0
            for k, (size, beta) in enumerate(zip(sizes, betas, strict=True)):
                coef[start:start + size, k] = beta
                start += size
            self.expansion_ = KernelExpansion(np.vstack(Zs), coef, kernel, np.array(bs))
        self.classes_ = classes
        self._store_info(infos)
        return self

    def _prepare(self, X, kernel):
        """Hook: per-fit preprocessing shared by all binary problems."""

    def _iteration_params(self):
        """Validated ``(max_iter, tol)`` of the estimators that optimise ``Z``."""
        owner = type(self).__name__
        return (check_scalar(self.max_iter, "max_iter", owner, kind="int", lower=0),
                check_scalar(self.tol, "tol", owner, lower=0.0))

    def _draw(self, X, y, kernel, rng, k):
        """Hook: validate and draw everything random for binary problem ``k``.

        Runs in the calling process, problem after problem; its result is the
        ``start`` of :meth:`_fit_binary`, which may run elsewhere (joblib).
        """
        return self._initial_Z(X, self.n_vectors, rng, self.init)

    def _store_info(self, infos):
        self.objective_ = np.array([info.get("W", np.nan) for info in infos])
        self.duality_gap_ = np.array([info.get("gap", np.nan) for info in infos])

    def _initial_Z(self, X, n_vectors, rng, init="random"):
        uniq = sparse_learning.unique_rows(X)
        n_vectors = self._check_n_vectors(uniq.size)
        if not isinstance(init, str):
            Z0 = check_Z(init, X.shape[1])
            if Z0.shape[0] != n_vectors:
                raise ValueError(
                    f"init has {Z0.shape[0]} rows but n_vectors={n_vectors}; an initial Z must "
                    "have shape (n_vectors, n_features)."
                )
            return np.array(Z0, dtype=float)
        if init == "random":
            return X[np.sort(rng.choice(uniq, n_vectors, replace=False))]
        if init == "kmeans":
            from sklearn.cluster import KMeans

            km = KMeans(n_clusters=n_vectors, n_init=1, random_state=rng.randint(2**31 - 1))
            return km.fit(X[uniq]).cluster_centers_
        raise ValueError(
            f"The 'init' parameter of {type(self).__name__} must be 'random' or 'kmeans'. "
            f"Got {init!r} instead."
        )

    # -- prediction --------------------------------------------------------------------
    @dask_rowwise
    def decision_function(self, X):
        """Decision values ``f(x) = sum_j beta_j k(x, z_j) + b`` (eq. 1).

        A ``dask.array`` gives a dask array (see :mod:`sparsekm.parallel`).

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive means ``classes_[1]``),
        (n_samples, n_classes) otherwise.
        """
        check_is_fitted(self, "expansion_")
        X = validate_X(self, X, reset=False)
        return self.expansion_.decision_function(X)

    @dask_rowwise
    def predict(self, X):
        """Predicted class labels, shape (n_samples,); a dask array for a dask ``X``."""
        f = self.decision_function(X)
        if f.ndim == 1:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]

    @property
    def n_vectors_(self):
        """Total number of expansion vectors of the fitted classifier."""
        check_is_fitted(self, "expansion_")
        return self.expansion_.n_terms


@register
class SparseLargeMarginClassifier(_DirectSparseBase):
    """Sparse large margin classifier (SLMC; Wu, Schölkopf & Bakır 2006).

    An SVM whose weight vector is constrained to ``N_z`` free expansion vectors
    (XVs), ``w = sum_j beta_j Phi(z_j)`` (eq. 20-23). For fixed ``Z`` the SVM is
    solved exactly as a linear SVM on the whitened empirical kernel map
    ``phi_z(x) = Lambda^{-1/2} V^T psi_z(x)`` (eq. 41-43), giving the marginal
    function ``W(Z)`` (eq. 44) and ``beta`` (eq. 45); ``Z`` is then optimised by
    L-BFGS with the gradient of eq. 46 (Corollary 2).

    Parameters
    ----------
    n_vectors : int, default=10
        Number of expansion vectors ``N_z`` (per binary problem).
    C : float, default=1.0
        SVM regularisation constant.
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    init : {"random", "kmeans"} or array of shape (n_vectors, n_features), default="random"
        Initial XVs: distinct training points drawn at random (Table 1), k-means
        centres (Table 2), or given vectors (e.g. the support vectors of an SVM,
        section 5.7 example 1).
    max_iter : int, default=100
        Maximum number of L-BFGS iterations (per binary problem).
    tol : float, default=1e-6
        L-BFGS stops after the first iteration whose relative decrease of ``W``,
        ``(W_{k-1} - W_k) / max(|W_{k-1}|, |W_k|)``, is at most ``tol``.
    n_init : int >= 1, default=1
        Restarts (not in the paper): L-BFGS runs from ``n_init`` initial ``Z`` (drawn by
        ``init``: other random points or other k-means seeds) and keeps, per binary
        problem (or for the shared problem), the run with the lowest final ``W(Z)``,
        the objective the paper minimises. ``W(Z)`` is nonconvex in ``Z``, so this makes
        the result depend less on one start. Needs ``init="random"`` or ``"kmeans"``
        when above 1; costs about ``n_init`` times the time.
    random_state : int, RandomState or None, default=None
    verbose : bool, default=False
        Show a progress bar over L-BFGS iterations.
    n_jobs : int or None, default=None
        Multi-class: the one-vs-rest problems are trained in parallel through
        joblib (``None``: one job unless inside a ``joblib.parallel_backend``
        context; ``-1``: all cores; ``joblib.parallel_backend("dask")``: on a
        ``dask.distributed`` cluster). The result does not depend on ``n_jobs``.
        Not used with ``shared=True``.
    shared : bool, default=False
        Multi-class only (not in the paper): one set of ``n_vectors`` XVs shared by
        all one-vs-rest problems, each keeping its own ``beta_c`` and ``b_c``. ``Z``
        minimises the sum of the per-class marginal functions, ``sum_c W_c(Z)``, with
        the summed gradient of eq. 46 (:func:`sparsekm.sparse_learning.slmc_shared_optimize`).
        ``n_vectors`` is then the *total* number of XVs: a prediction costs
        ``n_vectors`` kernel evaluations for all classes together. ``init="kmeans"``
        (the paper's choice) clusters all training points; a shared reduced set
        (``construct(..., shared=True).expansion.vectors``) can be passed as ``init``.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel sums during ``fit`` (:func:`sparsekm.sparse_learning.slmc_optimize`);
        ``None``: :func:`sparsekm.config.get_config` ``["backend"]``. With ``"torch"``
        the training data goes to the configured device (``config["device"]``;
        ``None``: CUDA when available, else CPU) once per binary problem, and
        only ``K^{zx}``, ``K^z`` and the ``N_z x d`` gradients come back to the
        CPU-side SVM and L-BFGS. The fitted expansion holds numpy arrays.

    Attributes
    ----------
    expansion_ : KernelExpansion
        ``f(x) = sum_j beta_j k(x, z_j) + b``; for more than two classes one column
        per class (one-vs-rest), the XVs of all binary problems stacked (or the
        ``n_vectors`` shared XVs with ``shared=True``).
    classes_ : ndarray of shape (n_classes,)
    objective_ : ndarray of shape (n_problems,)
        Final ``W(Z)`` of each binary problem.
    W_history_ : list of ndarray
        ``W(Z)`` at the start and after every L-BFGS iteration, per binary problem
        (``shared=True``: one array, the summed ``W``).
    n_iter_ : ndarray of shape (n_problems,)
        L-BFGS iterations (``shared=True``: one entry) of the kept run.
    restart_objectives_ : list of ndarray
        Final ``W(Z)`` of every restart, per binary problem (``shared=True``: one
        array); the kept run is the lowest.
    duality_gap_ : ndarray of shape (n_problems,)
        Relative duality gap of the final inner SVM.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_moons
    >>> from sparsekm.kernels import RBF
    >>> from sparsekm.models import SLMC
    >>> X, y = make_moons(200, noise=0.1, random_state=0)
    >>> clf = SLMC(n_vectors=6, C=10.0, kernel=RBF(2.0), random_state=0).fit(X, y)
    >>> clf.expansion_.n_terms
    6
    >>> bool(clf.score(X, y) > 0.95)
    True

    References
    ----------
    M. Wu, B. Schölkopf, G. Bakır. A direct method for building sparse kernel
    learning algorithms. JMLR 7:603-624, 2006.
    """

    # (shared=True: one L-BFGS run, so one history and one iteration count)
    _persist_attrs = {**_DirectSparseBase._persist_attrs,
                      "W_history_": spec.list(spec.array("f", (None,)), length="n_runs"),
                      "n_iter_": spec.array("iu", ("n_runs",)),
                      "restart_objectives_": spec.list(spec.array("f", (None,)),
                                                       length="n_runs", optional=True),
                      "stop_reasons_": spec.list(spec.str(), length="n_runs",
                                                 optional=True)}

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **_CONSTRAINTS, "init": [StrOptions({"random", "kmeans"}), "array-like"],
        "max_iter": [Interval(Integral, 0, None, closed="left")], "tol": NON_NEGATIVE,
        "verbose": ["verbose"], "shared": BOOLEAN, "backend": BACKEND,
        "n_init": [Interval(Integral, 1, None, closed="left")]}

    @keyword_only_args
    def __init__(self, n_vectors=10, *, C=1.0, kernel=None, init="random", max_iter=100, tol=1e-6,
                 random_state=None, verbose=False, n_jobs=None,
                 gamma="scale", degree=3, coef0=0.0, shared=False, backend=None, n_init=1):
        self.n_init = n_init
        self.n_vectors = n_vectors
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.shared = shared
        self.backend = backend

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, callback=None, deadline=None):
        """Fit the classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels (two or more classes; more than two are fitted one-vs-rest,
            with one shared set of ``n_vectors`` XVs when ``shared=True``).
        callback : callable ``callback(iteration, W)``, optional
            Called after every L-BFGS iteration over ``Z`` with the iteration number and
            the marginal function ``W(Z)`` (eq. 44). Raising ``StopIteration`` in it stops
            that optimisation there: the best ``Z`` evaluated so far is kept and its
            coefficients are solved as after any other stop (this is how
            :func:`sparsekm.compress` keeps the SLMC within its time limit). Separate
            one-vs-rest problems (``shared=False``) call it for each problem in turn; it
            needs ``n_jobs`` None or 1 then.
        deadline : :class:`~sparsekm.utils.optimize.Deadline`, optional
            A hard cap on the wall-clock time (how :func:`sparsekm.compress` honours its
            ``time_limit``): once passed, each L-BFGS run over ``Z`` stops after its
            current iteration, keeping the best ``Z`` so far, and ``stop_reasons_``
            says ``DEADLINE_STOP`` for it. ``None`` (default): no clock is read.

        Returns
        -------
        self
        """
        if self.shared not in (True, False):
            raise ValueError(f"The 'shared' parameter of {type(self).__name__} must be a bool. "
                             f"Got {self.shared!r} instead.")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable(iteration, W); got "
                            f"{type(callback).__name__}.")
        if callback is not None and self.n_jobs not in (None, 1):
            raise ValueError("A callback runs in this process: fit with n_jobs=None or 1 "
                             f"(got n_jobs={self.n_jobs!r}).")
        if not self.shared:
            return self._fit_problems(X, y, callback=callback, deadline=deadline)
        X, y_idx, classes, kernel = self._validate_common(X, y)
        if classes.size == 2:
            return self._fit_problems(X, y, callback=callback, deadline=deadline)
        rng = check_random_state(self.random_state)
        Z0 = self._starts(X, rng)
        max_iter, tol = self._iteration_params()
        # identical (x, class) pairs merged once; every one-vs-rest problem holds the same
        # X array, so K^{zx} is computed once per L-BFGS evaluation
        Xu, cu, counts = sparse_learning.aggregate_duplicates(X, y_idx.astype(float))
        weights = None if np.all(counts == 1) else counts
        problems = [(Xu, np.where(cu == k, 1.0, -1.0), weights) for k in range(classes.size)]
        bar = progress(total=max_iter, desc="SLMC shared", disable=None if self.verbose else True)
        user_callback = callback

        def callback(it, W):
            bar.update(1)
            bar.set_postfix(W=f"{W:.6g}")
            if user_callback is not None:
                user_callback(it, W)

        engine = solver_kernel(kernel, self.backend)
        resident(engine, Xu)
        try:
            res = sparse_learning.slmc_shared_optimize(problems, Z0, engine, float(self.C),
                                                       max_iter=max_iter, tol=tol,
                                                       callback=callback, deadline=deadline)
        finally:
            bar.close()
        # final coefficients at the optimised Z, each problem solved to a tight tolerance
        # (what fixed_z_svm does per problem; the features and K^z's whitening are shared)
        infos, betas, bs = [], [], []
        T = sparse_learning.whitening_transform(engine(res.Z), on_singular="pinv")
        F = (T @ engine(res.Z, Xu)).T
        for (_, yc, wc), warm in zip(problems, res.solution, strict=True):
            sol = solve_features(F, T, yc, float(self.C), tol=1e-6, warm_start=warm.alpha,
                                  sample_weight=wc, solver="auto", features="whitened")
            betas.append(sol.beta)
            bs.append(sol.intercept)
            infos.append({"W": sol.W, "gap": sol.gap})
        self.expansion_ = KernelExpansion(res.Z, np.column_stack(betas), kernel, np.array(bs))
        self.classes_ = classes
        super()._store_info(infos)
        # one L-BFGS run over the shared Z: one history, one iteration count
        self.W_history_ = [np.array(res.W_history)]
        self.n_iter_ = np.array([res.n_iter])
        self.restart_objectives_ = [_restart_values(res)]
        self.stop_reasons_ = [str(res.message)]
        _warn_if_stopped(self, [{"stopped": _stopped_at_max_iter(res, max_iter)}])
        return self

    def _starts(self, X, rng):
        """The initial ``Z``: one array, or a list of ``n_init`` (restarts)."""
        n_init = check_scalar(self.n_init, "n_init", type(self).__name__, kind="int", lower=1)
        if n_init > 1 and not isinstance(self.init, str):
            raise ValueError(f"n_init={n_init} restarts need init='random' or 'kmeans' (a given "
                             "initial Z is one start); use n_init=1 with an array init.")
        starts = [self._initial_Z(X, self.n_vectors, rng, self.init) for _ in range(n_init)]
        return starts[0] if n_init == 1 else starts

    def _draw(self, X, y, kernel, rng, k):
        return (self._starts(X, rng),) + self._iteration_params()

    def _fit_binary(self, X, y, kernel, start, k, *, callback=None, deadline=None):
        Z0, max_iter, tol = start
        bar = progress(total=max_iter, desc=f"SLMC {k}", disable=None if self.verbose else True)
        user_callback = callback

        def callback(it, W):
            bar.update(1)
            bar.set_postfix(W=f"{W:.6g}")
            if user_callback is not None:
                user_callback(it, W)

        # one engine for the optimisation and the final solve: X goes to a torch device
        # once (aggregate_duplicates returns X itself when it has no duplicates)
        engine = solver_kernel(kernel, self.backend)
        res = sparse_learning.slmc_optimize(X, y, Z0, engine, float(self.C), max_iter=max_iter,
                                            tol=tol, callback=callback, deadline=deadline)
        bar.close()
        # final coefficients at the optimised Z, solved to a tight tolerance
        Xu, yu, counts = sparse_learning.aggregate_duplicates(X, y)
        sol = sparse_learning.fixed_z_svm(Xu, yu, res.Z, engine, float(self.C), tol=1e-6,
                                          on_singular="pinv", warm_start=res.solution.alpha,
                                          sample_weight=counts)
        info = {"W": sol.W, "gap": sol.gap, "history": np.array(res.W_history),
                "n_iter": res.n_iter, "stopped": _stopped_at_max_iter(res, max_iter),
                "restarts": _restart_values(res), "message": str(res.message)}
        return res.Z, sol.beta, sol.intercept, info

    def _store_info(self, infos):
        super()._store_info(infos)
        self.W_history_ = [info["history"] for info in infos]
        self.n_iter_ = np.array([info["n_iter"] for info in infos])
        self.restart_objectives_ = [info["restarts"] for info in infos]
        self.stop_reasons_ = [info["message"] for info in infos]
        _warn_if_stopped(self, infos)


SLMC = SparseLargeMarginClassifier


@register
class SparseKFD(_DirectSparseBase):
    """Sparse kernel Fisher discriminant (Wu et al. 2006, appendix A).

    Maximises the Rayleigh quotient ``w^T A w / (w^T B w + mu ||w||^2)`` (eq. 49)
    over ``w = sum_j beta_j Phi(z_j)``: for fixed ``Z`` the marginal function is
    ``W(Z) = -lambda_max(A^z, B^z)`` (eq. 57-62), minimised over ``Z`` with L-BFGS
    and the gradient of eq. 63. As in the paper, the final ``beta`` and bias come
    from the SVM problem (37)-(39) on the optimised ``Z``.

    Parameters
    ----------
    n_vectors : int, default=10
    C : float, default=1.0
        SVM constant of the final coefficient step.
    mu : float, default=1.0
        Regulariser ``mu`` of eq. 49 (``B^z`` = within-class scatter of
        ``psi_z(x)`` + ``mu K^z``; the scatter is not divided by the sample size).
        The paper gives none; 1.0 had the lowest mean test error against the full KFD
        over IDA splits 1-5 of five sets and scikit-learn's breast cancer among
        {1e-3, 1e-2, 0.1, 1} (``benchmarks/bench_kfd_mu.py``: 1.63 points below KFD on
        average; 1e-3, the former default, 1.14, and 1.7 points worse on waveform).
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    init : {"kmeans", "random"} or array of shape (n_vectors, n_features), default="kmeans"
        Table 3 uses k-means initialisation.
    max_iter : int, default=100
    tol : float, default=1e-6
    random_state : int, RandomState or None
    verbose : bool, default=False
    n_jobs : int or None, default=None
        One-vs-rest problems in parallel, as in :class:`SparseLargeMarginClassifier`.

    Attributes
    ----------
    expansion_, classes_, objective_ (final ``W(Z)`` of the KFD problem),
    W_history_, n_iter_, fisher_coef_ (the KFD ``beta`` of eq. 60-61, per problem),
    n_features_in_
    """

    _persist_attrs = {**SparseLargeMarginClassifier._persist_attrs,
                      "fisher_coef_": spec.list(spec.array("f", (None,)), length="n_outputs")}

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **_CONSTRAINTS, "mu": POSITIVE,
        "init": [StrOptions({"kmeans", "random"}), "array-like"],
        "max_iter": [Interval(Integral, 0, None, closed="left")], "tol": NON_NEGATIVE,
        "verbose": ["verbose"]}

    @keyword_only_args
    def __init__(self, n_vectors=10, *, C=1.0, mu=1.0, kernel=None, init="kmeans", max_iter=100,
                 tol=1e-6, random_state=None, verbose=False, n_jobs=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_vectors = n_vectors
        self.C = C
        self.mu = mu
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    def _draw(self, X, y, kernel, rng, k):
        mu = check_scalar(self.mu, "mu", type(self).__name__, lower=0.0, lower_inclusive=False)
        return (self._initial_Z(X, self.n_vectors, rng, self.init),) + self._iteration_params() \
            + (mu,)

    def _fit_binary(self, X, y, kernel, start, k):
        Z0, max_iter, tol, mu = start
        bar = progress(total=max_iter, desc=f"SKFD {k}", disable=None if self.verbose else True)
        res = sparse_learning.skfd_optimize(X, y, Z0, kernel, mu, max_iter=max_iter, tol=tol,
                                   callback=lambda it, W: bar.update(1))
        bar.close()
        sol = _solve_fixed(X, y, res.Z, kernel, float(self.C))
        info = {"W": res.W_history[-1] if res.W_history else np.nan, "gap": sol.gap,
                "history": np.array(res.W_history), "n_iter": res.n_iter,
                "fisher_coef": res.solution[0], "stopped": _stopped_at_max_iter(res, max_iter)}
        return res.Z, sol.beta, sol.intercept, info

    def _store_info(self, infos):
        super()._store_info(infos)
        self.W_history_ = [info["history"] for info in infos]
        self.n_iter_ = np.array([info["n_iter"] for info in infos])
        self.fisher_coef_ = [info["fisher_coef"] for info in infos]
        _warn_if_stopped(self, infos)


class _FixedZClassifier(_DirectSparseBase):
    """Fixed ``Z`` (random training points or given), coefficients by the fixed-Z solver."""

    _features = "whitened"

    def _draw(self, X, y, kernel, rng, k):
        return self._initial_Z(X, self.n_vectors, rng, "random")

    def _fit_binary(self, X, y, kernel, Z, k):
        sol = _solve_fixed(X, y, Z, kernel, float(self.C), features=self._features)
        return Z, sol.beta, sol.intercept, {"W": sol.W, "gap": sol.gap}


@register
class RSVM(_FixedZClassifier):
    """Reduced SVM (Lee & Mangasarian 2001; Lin & Lin 2003), as compared in Wu et al. §4.2.

    ``N_z`` distinct training points drawn at random are the expansion vectors; the
    coefficients are the weights of a linear SVM (free bias) on the empirical
    kernel map ``psi_z(x) = K(Z, x)`` (eq. 31), i.e. problem (28)-(30) with the
    regulariser ``beta^T K^z beta`` replaced by ``beta^T beta``.

    Parameters
    ----------
    n_vectors : int, default=10
    C : float, default=1.0
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    random_state : int, RandomState or None
    n_jobs : int or None, default=None
        One-vs-rest problems in parallel, as in :class:`SparseLargeMarginClassifier`.

    Attributes
    ----------
    expansion_, classes_, objective_, duality_gap_, n_features_in_
    """

    _features = "empirical"

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = _CONSTRAINTS

    @keyword_only_args
    def __init__(self, n_vectors=10, *, C=1.0, kernel=None, random_state=None, n_jobs=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_vectors = n_vectors
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.random_state = random_state
        self.n_jobs = n_jobs


@register
class ModifiedRSVM(_FixedZClassifier):
    """Modified RSVM (MRSVM, Wu et al. §4.2): RSVM's random XVs, coefficients by eq. 45.

    For the randomly chosen ``Z`` the SVM restricted to ``span{Phi(z_j)}`` is solved
    exactly (problem 28-30), which is the SLMC inner problem without optimising ``Z``.

    Parameters
    ----------
    n_vectors : int, default=10
    C : float, default=1.0
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    random_state : int, RandomState or None
        With the same ``random_state`` and data, :class:`RSVM` picks the same XVs.
    n_jobs : int or None, default=None
        One-vs-rest problems in parallel, as in :class:`SparseLargeMarginClassifier`.
    """

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = _CONSTRAINTS

    @keyword_only_args
    def __init__(self, n_vectors=10, *, C=1.0, kernel=None, random_state=None, n_jobs=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_vectors = n_vectors
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.random_state = random_state
        self.n_jobs = n_jobs


@register
class ModifiedRS(_DirectSparseBase):
    """Modified reduced-set method (MRS, Wu et al. §4.1).

    The reduced-set (RS) method approximates an SVM ``Psi = sum_i alpha_i y_i Phi(x_i)``
    by ``N_z`` vectors ``Z`` and coefficients ``beta = (K^z)^{-1} K^{zx} Y alpha``
    (eq. 47). MRS keeps the RS vectors but computes the coefficients and bias by
    eq. 45, i.e. trains the SVM restricted to ``span{Phi(z_j)}`` exactly, which can
    only lower the SVM objective: ``W_MRS(Z) <= W_RS(Z)`` for the same ``Z``.

    Parameters
    ----------
    n_vectors : int, default=10
        Number of RS vectors to construct (ignored when ``Z`` is given).
    C : float, default=1.0
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    Z : array-like of shape (n_vectors, n_features), list of such arrays, or None
        Reduced-set vectors. An array is used for every binary problem; a list
        gives one array per one-vs-rest problem (in ``classes_`` order). ``None``
        trains an SVM and builds the RS vectors with
        ``sparsekm.reduced_set.construct`` (needs the reduced-set module).
    random_state : int, RandomState or None
    n_jobs : int or None, default=None
        One-vs-rest problems in parallel, as in :class:`SparseLargeMarginClassifier`.

    Attributes
    ----------
    expansion_, classes_, objective_ (``W`` of eq. 44 at ``Z``), duality_gap_,
    n_features_in_
    """

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **_CONSTRAINTS, "Z": ["array-like", list, None]}

    @keyword_only_args
    def __init__(self, n_vectors=10, *, C=1.0, kernel=None, Z=None, random_state=None,
                 n_jobs=None,
                 gamma="scale", degree=3, coef0=0.0):
        self.n_vectors = n_vectors
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.Z = Z
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _draw(self, X, y, kernel, rng, k):
        """The given ``Z``, or ``(n_vectors, seed)`` of the RS construction."""
        if self.Z is not None:
            Z = self.Z[k] if isinstance(self.Z, (list, tuple)) else self.Z
            return check_Z(Z, X.shape[1])
        n_vectors = self._check_n_vectors(sparse_learning.unique_rows(X).size)
        return n_vectors, rng.randint(2**31 - 1)

    def _rs_vectors(self, X, y, kernel, start):
        if not isinstance(start, tuple):
            return start
        try:
            from ..reduced_set import construct
        except ImportError:
            raise ValueError(
                "ModifiedRS needs reduced-set vectors: pass Z=... (e.g. from your own RS "
                "construction); sparsekm.reduced_set.construct is not available in this build."
            ) from None
        n_vectors, seed = start
        svm = sparse_learning.full_svm_expansion(X, y, kernel, float(self.C))
        reduced = construct(svm, n_vectors, random_state=seed)
        reduced = getattr(reduced, "expansion", reduced)
        return np.asarray(reduced.vectors)

    def _fit_binary(self, X, y, kernel, start, k):
        Z = self._rs_vectors(X, y, kernel, start)
        sol = _solve_fixed(X, y, Z, kernel, float(self.C))
        return Z, sol.beta, sol.intercept, {"W": sol.W, "gap": sol.gap}
