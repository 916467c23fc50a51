"""Relevance vector machine for classification (Tipping 2001), a baseline for Wu et al.

Sparse Bayesian learning (Tipping, "Sparse Bayesian Learning and the Relevance
Vector Machine", JMLR 1:211-244, 2001, section 4 and appendix A): the model is

    y(x; w) = sigma( sum_i w_i k(x, x_i) + w_0 ),     sigma(a) = 1 / (1 + e^{-a}),

with the Bernoulli likelihood ``P(t | w) = prod_n y_n^{t_n} (1 - y_n)^{1 - t_n}``
(eq. 23) and one zero-mean Gaussian prior per weight, ``p(w_i | alpha_i) =
N(0, 1 / alpha_i)`` (eq. 5). Each iteration

1. finds the posterior mode ``mu = w_MP`` of ``log P(t | w) - w^T A w / 2`` by
   Newton's method (iteratively re-weighted least squares, eq. 24-25);
2. takes the Laplace approximation ``Sigma = (Phi^T B Phi + A)^{-1}``,
   ``B = diag(y_n (1 - y_n))`` (eq. 26);
3. re-estimates ``alpha_i <- gamma_i / mu_i^2`` with ``gamma_i = 1 - alpha_i
   Sigma_ii`` (eq. 16);
4. prunes the basis functions whose ``alpha_i`` exceed ``threshold_alpha``
   (their weights are then zero with posterior certainty).

The basis functions left are the *relevance vectors*; the bias ``w_0`` is a
basis function of its own (a column of ones) with its own ``alpha_0``.

The plain functions are :func:`sparse_bayes_logistic` (the algorithm on a design
matrix ``Phi``) and :func:`laplace_log_evidence` (the approximate log marginal
likelihood it increases); :class:`RVC` is the scikit-learn shell whose
``expansion_`` is the fitted :class:`~sparsekm.expansion.KernelExpansion`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.special import expit
from sklearn.base import _fit_context
from sklearn.utils._param_validation import StrOptions

from .._constraints import BOOLEAN, KERNEL, NON_NEGATIVE, POSITIVE, POSITIVE_INT
from ..expansion import KernelExpansion
from ..kernels import resolve_kernel
from ..parallel import dask_rowwise
from ..persistence import register, spec
from ..utils._deprecation import keyword_only_args
from ..utils.progress import progress
from ..utils.validation import check_scalar, validate_X
from ._base import BinaryExpansionClassifier, binary_targets

__all__ = ["RVC", "sparse_bayes_logistic", "laplace_log_evidence"]


def _log_likelihood(a, t):
    """``log P(t | w) = sum_n t_n log y_n + (1 - t_n) log(1 - y_n)`` for ``a = Phi w`` (eq. 23)."""
    # log sigma(a) = -log(1 + e^{-a});  log(1 - sigma(a)) = -log(1 + e^{a})
    return float(-np.sum(t * np.logaddexp(0.0, -a) + (1.0 - t) * np.logaddexp(0.0, a)))


def _hessian_cholesky(H):
    """Cholesky factor of the Laplace Hessian ``Phi^T B Phi + A`` (eq. 26), with jitter.

    ``A > 0`` makes ``H`` positive definite in exact arithmetic, but with tiny
    ``alpha_i`` (the start, ``1 / n^2``) and saturated ``y_n (1 - y_n)`` on a
    numerically rank-deficient kernel matrix the factorisation can fail in floating
    point. Then a jitter of ``10^k eps mean(diag H)`` (k = 0, 1, ..., 8; ``eps`` the
    float64 machine epsilon) is added to the diagonal, the usual remedy for Gaussian
    posteriors; a matrix that fails even then gets a :class:`ValueError`. A
    factorisation that succeeds without jitter is returned unchanged.
    """
    try:
        return cho_factor(H, lower=True, check_finite=False)
    except LinAlgError:
        pass
    scale = float(np.mean(np.diag(H)))
    if not np.isfinite(scale) or scale <= 0:
        scale = 1.0
    eps = np.finfo(np.float64).eps
    for k in range(9):
        Hj = H.copy()
        Hj[np.diag_indices_from(Hj)] += (10.0**k) * eps * scale
        try:
            return cho_factor(Hj, lower=True, check_finite=False)
        except LinAlgError:
            continue
    raise ValueError("The RVM Hessian Phi^T B Phi + A is not positive definite even with "
                     "jitter; the kernel matrix is badly scaled (rescale X or the kernel).")


def _posterior_mode(Phi, t, alpha, w, max_newton=50, tol=1e-14):
    """Newton / IRLS for the mode of ``log P(t|w) - w^T A w / 2`` (eq. 24-25).

    Returns ``(w, chol, penalised log posterior)`` with ``chol`` the Cholesky
    factor of the Hessian ``Phi^T B Phi + A`` at the mode.
    """
    def objective(w):
        with np.errstate(over="ignore", invalid="ignore"):
            v = _log_likelihood(Phi @ w, t) - 0.5 * float(np.sum(alpha * w * w))
        if not np.isfinite(v):
            raise ValueError("The RVM posterior is not finite: the kernel values are badly "
                             "scaled for this data (rescale X or choose another kernel).")
        return v

    obj = objective(w)
    for _ in range(max_newton):
        y = expit(Phi @ w)
        g = Phi.T @ (t - y) - alpha * w
        H = (Phi.T * (y * (1.0 - y))) @ Phi
        H[np.diag_indices_from(H)] += alpha
        chol = _hessian_cholesky(H)
        step = cho_solve(chol, g, check_finite=False)
        # Newton decrement: g^T H^{-1} g / 2 bounds the possible gain near the mode
        if float(g @ step) < tol * max(1.0, abs(obj)):
            # converged: the last Newton step is below rounding in the objective, but
            # not in w (the evidence's derivatives need the mode to full precision)
            w = w + step
            obj = objective(w)
            break
        scale = 1.0
        while True:  # step halving keeps the (concave) objective increasing
            w_new = w + scale * step
            obj_new = objective(w_new)
            if obj_new >= obj or scale < 1e-10:
                break
            scale *= 0.5
        if obj_new < obj:
            break
        w, obj = w_new, obj_new
    y = expit(Phi @ w)
    H = (Phi.T * (y * (1.0 - y))) @ Phi
    H[np.diag_indices_from(H)] += alpha
    chol = _hessian_cholesky(H)
    return w, chol, obj


def _marginal_at_infinity(P, t, w, alpha, Sigma):
    """Basis functions whose marginal likelihood in ``alpha_i`` peaks at infinity.

    Tipping & Faul (2003), eq. 18-20, in the Gaussian (IRLS) approximation at the
    mode: with ``B = diag(y (1 - y))``, the linearised target ``t_hat = P w +
    B^{-1} (t - y)`` and ``C = P^T B P``, the factors of basis function ``i`` over
    the current model are ``S_i = C_ii - (C Sigma C)_ii``, ``Q_i = (P^T B t_hat)_i -
    (C Sigma P^T B t_hat)_i``; without ``i`` they are ``s_i = alpha_i S_i / (alpha_i
    - S_i)``, ``q_i = alpha_i Q_i / (alpha_i - S_i)``. The (approximate) log evidence
    as a function of ``alpha_i`` alone increases up to ``alpha_i = inf`` iff
    ``q_i^2 <= s_i`` (their section 2.3): such a basis function is pruned at once
    rather than after its ``alpha_i`` has crept to ``threshold_alpha``.
    """
    y = expit(P @ w)
    C = (P.T * (y * (1.0 - y))) @ P
    PBt = C @ w + P.T @ (t - y)
    CS = C @ Sigma
    S = np.diag(C) - np.einsum("ij,ji->i", CS, C)
    Q = PBt - CS @ PBt
    denom = alpha - S
    with np.errstate(divide="ignore", invalid="ignore"):
        s = alpha * S / denom
        q = alpha * Q / denom
    return (denom > 0) & (q * q <= s)


def laplace_log_evidence(Phi, t, alpha, w=None):
    """Laplace approximation of the log marginal likelihood ``log p(t | alpha)``.

    ``log P(t | mu) - mu^T A mu / 2 + sum_i log(alpha_i) / 2 - log|Phi^T B Phi + A| / 2``
    at the posterior mode ``mu`` (Tipping 2001, section 4; the ``2 pi`` factors cancel).

    Parameters
    ----------
    Phi : ndarray of shape (n_samples, n_basis)
    t : ndarray of shape (n_samples,) with values 0/1
    alpha : ndarray of shape (n_basis,), positive
    w : ndarray of shape (n_basis,), optional
        Starting point of the Newton iterations (zeros by default).

    Returns
    -------
    log_evidence : float
    mu : ndarray of shape (n_basis,)
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    w = np.zeros(Phi.shape[1]) if w is None else np.array(w, dtype=np.float64)
    mu, chol, obj = _posterior_mode(Phi, np.asarray(t, dtype=np.float64), alpha, w)
    logdet = 2.0 * float(np.sum(np.log(np.diag(chol[0]))))
    return obj + 0.5 * float(np.sum(np.log(alpha))) - 0.5 * logdet, mu


def sparse_bayes_logistic(Phi, t, *, max_iter=1000, tol=1e-3, threshold_alpha=1e9,
                          alpha_init=None, keep=None, prune_rule="marginal", marginal_from=100.0,
                          callback=None):
    """Tipping's sparse Bayesian classifier on a design matrix (Tipping 2001, section 4).

    Parameters
    ----------
    Phi : ndarray of shape (n_samples, n_basis)
        Basis functions evaluated at the training points (for the RVM: the kernel
        matrix with a column of ones for the bias).
    t : ndarray of shape (n_samples,)
        Targets 0/1.
    max_iter : int, default=1000
        Maximum number of ``alpha`` re-estimations.
    tol : float, default=1e-3
        Stop when no ``log alpha_i`` of a kept basis function changes by more than ``tol``.
    threshold_alpha : float, default=1e9
        Basis functions with ``alpha_i`` above it are pruned (``w_i = 0``).
    alpha_init : float, optional
        Initial ``alpha_i`` of every basis function (default ``1 / n_samples^2``,
        a broad prior: Tipping's suggestion of an almost flat start).
    keep : ndarray of bool of shape (n_basis,), optional
        Basis functions that are never pruned.
    prune_rule : {"marginal", "threshold"}, default="marginal"
        ``"threshold"``: prune when ``alpha_i > threshold_alpha`` only (Tipping 2001).
        ``"marginal"``: also prune at once every basis function whose marginal
        likelihood in ``alpha_i`` has its maximum at infinity, ``q_i^2 <= s_i``
        (Tipping & Faul 2003; see :func:`_marginal_at_infinity`). Same fixed
        points, far fewer iterations: the ``alpha_i`` heading to infinity grow
        only geometrically under eq. 16. Only basis functions whose ``alpha_i``
        already exceeds ``marginal_from`` and grows are tested: at the start every
        basis function is redundant given the others, and pruning all of those at
        once ends in a poor local optimum.
    marginal_from : float, default=100.0
        See ``prune_rule``.
    callback : callable, optional
        Called as ``callback(iteration, n_active)`` after each re-estimation.

    Returns
    -------
    dict with
        ``active`` (indices of the kept basis functions), ``mu`` (their posterior
        mode weights), ``alpha`` (their ``alpha_i``), ``Sigma`` (the Laplace posterior
        covariance over them), ``gamma`` (``1 - alpha_i Sigma_ii``),
        ``log_evidence`` (list: the Laplace log evidence before each re-estimation),
        ``n_iter``, ``converged``.
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    n, m = Phi.shape
    if prune_rule not in ("marginal", "threshold"):
        raise ValueError(f"prune_rule must be 'marginal' or 'threshold'; got {prune_rule!r}.")
    a0 = 1.0 / n**2 if alpha_init is None else float(alpha_init)
    active = np.arange(m)
    alpha = np.full(m, a0)
    w = np.zeros(m)
    keep = np.zeros(m, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    history = []
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (n_iter reported)
        P = Phi[:, active]
        w, chol, obj = _posterior_mode(P, t, alpha, w)
        L = chol[0]
        logdet = 2.0 * float(np.sum(np.log(np.diag(L))))
        history.append(obj + 0.5 * float(np.sum(np.log(alpha))) - 0.5 * logdet)
        Sigma = cho_solve(chol, np.eye(active.size), check_finite=False)
        gamma = 1.0 - alpha * np.diag(Sigma)
        # eq. 16: alpha_i = gamma_i / mu_i^2 (gamma_i in [0, 1] up to rounding)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            new_alpha = np.where(w * w > 0, np.clip(gamma, 0.0, 1.0) / (w * w), np.inf)
        new_alpha = np.where(np.isnan(new_alpha), np.inf, new_alpha)
        new_alpha = np.where(new_alpha > 0, new_alpha, np.finfo(float).tiny)
        prune = new_alpha > threshold_alpha
        if prune_rule == "marginal":
            # only weights already shrunk hard (alpha_i > marginal_from, growing): at the start every
            # basis function is redundant given the others, and pruning all of those at
            # once would end in a poor local optimum
            candidate = (new_alpha > alpha) & (alpha > marginal_from)
            if candidate.any():
                prune |= candidate & _marginal_at_infinity(P, t, w, alpha, Sigma)
        prune &= ~keep[active]
        if prune.all():  # keep the strongest basis function: an RVM without terms is no model
            prune[np.argmin(new_alpha)] = False
        new_alpha = np.minimum(new_alpha, threshold_alpha)
        change = np.abs(np.log(new_alpha[~prune]) - np.log(alpha[~prune]))
        if callback is not None:
            callback(it, int((~prune).sum()))
        if not prune.any() and change.size and float(change.max()) < tol:
            alpha = new_alpha
            converged = True
            break
        alpha, w, active = new_alpha[~prune], w[~prune], active[~prune]
    P = Phi[:, active]
    w, chol, obj = _posterior_mode(P, t, alpha, w)
    Sigma = cho_solve(chol, np.eye(active.size), check_finite=False)
    logdet = 2.0 * float(np.sum(np.log(np.diag(chol[0]))))
    history.append(obj + 0.5 * float(np.sum(np.log(alpha))) - 0.5 * logdet)
    return {"active": active, "mu": w, "alpha": alpha, "Sigma": Sigma,
            "gamma": 1.0 - alpha * np.diag(Sigma), "log_evidence": history, "n_iter": it,
            "converged": converged}


class _RVMBase(BinaryExpansionClassifier):
    """What :class:`RVC` and :class:`~sparsekm.models.FastRVC` share: one model, two solvers.

    Both maximise the Laplace-approximated marginal likelihood of the same sparse
    Bayesian logistic model over the design matrix ``Phi = [K(X, X), 1]``; they differ
    only in the algorithm (:meth:`_solve`). This base checks the common parameters,
    builds ``Phi``, runs the solver behind a progress bar and turns its result (the
    kept columns, their weights ``mu``, precisions ``alpha``, the Laplace covariance,
    the evidence history) into the fitted attributes and ``expansion_``.
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "classes_": spec.array("biufU", (2,)),
        "kernel_": spec.kernel(),
        "relevance_indices_": spec.array("iu", ("n_terms",)),
        "relevance_vectors_": spec.array("f", ("n_terms", "n_features")),
        "alpha_": spec.array("f", ("n_terms",)),
        "alpha_intercept_": spec.float(),
        "sigma_": spec.array("f", (None, None)),
        "log_evidence_": spec.array("f", (None,)),
        "n_iter_": spec.int(),
        "converged_": spec.bool(),
        "expansion_": spec.expansion(n_terms="n_terms", n_features="n_features", n_outputs=1),
        "n_features_in_": spec.int(bind="n_features"),
    }

    def _solver_options(self, owner):
        """Checked solver-specific parameters, passed to :meth:`_solve` as keywords."""
        return {}

    def _solve(self, Phi, t, max_iter, tol, callback, **options):
        """Run the solver on the design matrix; return its result dictionary."""
        raise NotImplementedError

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the RVM; see the class docstring for the algorithm.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), two classes

        Returns
        -------
        self
        """
        owner = type(self).__name__
        max_iter = check_scalar(self.max_iter, "max_iter", owner, kind="int", lower=1)
        tol = check_scalar(self.tol, "tol", owner, lower=0.0)
        options = self._solver_options(owner)
        X = validate_X(self, X)
        self.classes_, ys = binary_targets(y, owner, X.shape[0])
        self.kernel_ = resolve_kernel(self.kernel, X, owner, gamma=self.gamma,
                                      degree=self.degree, coef0=self.coef0)
        n = X.shape[0]
        # Phi = [K, 1] filled in place: no second n x n copy of the kernel matrix
        Phi = np.empty((n, n + 1 if self.fit_intercept else n))
        Phi[:, :n] = self.kernel_(X, X)
        if not np.isfinite(Phi[:, :n]).all():
            raise ValueError(f"The kernel {self.kernel_!r} gives non-finite values on X.")
        if self.fit_intercept:
            Phi[:, n] = 1.0
        t = (ys > 0).astype(np.float64)
        bar = progress(total=max_iter, desc=owner, disable=None if self.verbose else True)
        try:
            res = self._solve(
                Phi, t, max_iter, tol,
                lambda it, n_act: (bar.update(1), bar.set_postfix(n_active=n_act)), **options)
        finally:
            bar.close()
        del Phi
        active, mu, alpha = res["active"], res["mu"], res["alpha"]
        is_kernel = active < n
        idx = active[is_kernel]
        b = float(mu[~is_kernel][0]) if (~is_kernel).any() else 0.0
        self.relevance_indices_ = idx
        self.relevance_vectors_ = X[idx].copy()
        self.alpha_ = alpha[is_kernel].copy()
        self.alpha_intercept_ = float(alpha[~is_kernel][0]) if (~is_kernel).any() else np.inf
        self.sigma_ = res["Sigma"]
        self.log_evidence_ = np.asarray(res["log_evidence"])
        self.n_iter_ = int(res["n_iter"])
        self.converged_ = bool(res["converged"])
        with np.errstate(over="ignore", invalid="ignore"):
            coef = mu[is_kernel].astype(X.dtype)
        if not (np.isfinite(coef).all() and np.isfinite(b)):
            raise ValueError(f"The RVM weights overflow {X.dtype}: the kernel values are badly "
                             "scaled for this data (rescale X or choose another kernel).")
        self.expansion_ = KernelExpansion(X[idx], coef, self.kernel_, b)
        self.n_features_in_ = X.shape[1]
        return self

    @dask_rowwise
    def predict_proba(self, X):
        """``P(t | x) = [1 - sigma(f(x)), sigma(f(x))]`` at the posterior mode (eq. 1, 23).

        Returns
        -------
        ndarray of shape (n_samples, 2), columns in the order of ``classes_``.
        """
        p = expit(np.asarray(self.decision_function(X), dtype=np.float64))
        return np.column_stack([1.0 - p, p])


@register
class RVC(_RVMBase):
    """Relevance vector machine classifier (Tipping 2001), binary.

    The sparse Bayesian model ``P(t = 1 | x) = sigma(sum_i w_i k(x, x_i) + w_0)`` with
    an individual Gaussian prior precision ``alpha_i`` per weight, learned by
    maximising the Laplace-approximated marginal likelihood (see
    :func:`sparse_bayes_logistic`). Most ``alpha_i`` grow without bound and their
    basis functions are pruned; the training points left are the relevance
    vectors. The number of relevance vectors is not chosen: it comes out of
    training (Wu et al. 2006, Table 1, the RVM rows).

    Parameters
    ----------
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object, or a name as in scikit-learn
        (``"rbf"``, ``"poly"``, ``"sigmoid"``, ``"linear"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels, as in scikit-learn.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    max_iter : int, default=1000
        Maximum number of ``alpha`` re-estimations.
    tol : float, default=1e-3
        Convergence: the largest change of ``log alpha_i`` over the kept basis functions.
    threshold_alpha : float, default=1e9
        Pruning threshold on ``alpha_i``.
    prune_rule : {"marginal", "threshold"}, default="marginal"
        ``"threshold"``: Tipping's (2001) rule, prune when ``alpha_i > threshold_alpha``.
        ``"marginal"``: also prune a weight, once its ``alpha_i`` exceeds 100 and grows,
        as soon as its marginal likelihood peaks at ``alpha_i = inf`` (Tipping & Faul
        2003); far fewer iterations to the same kind of solution (see
        :func:`sparse_bayes_logistic`).
    fit_intercept : bool, default=True
        Include the bias ``w_0`` as a basis function (with its own ``alpha_0``, prunable).
    verbose : bool, default=False
        Show a progress bar over the re-estimations.

    Attributes
    ----------
    expansion_ : KernelExpansion
        ``f(x) = sum_j mu_j k(x, r_j) + b`` over the relevance vectors ``r_j``;
        ``predict_proba`` is ``sigma(f)``.
    relevance_vectors_ : ndarray of shape (n_relevance, n_features)
    relevance_indices_ : ndarray of int
        Rows of the training ``X`` that are relevance vectors.
    alpha_ : ndarray of shape (n_relevance,)
        Prior precisions of the kept kernel weights.
    alpha_intercept_ : float
        ``alpha_0`` (``inf`` when the bias was pruned or not fitted).
    sigma_ : ndarray
        Laplace posterior covariance of the kept weights (bias last, if kept).
    log_evidence_ : ndarray
        The Laplace log marginal likelihood at every iteration.
    n_iter_ : int
    converged_ : bool
    classes_, kernel_, n_features_in_

    References
    ----------
    M. E. Tipping. Sparse Bayesian learning and the relevance vector machine.
    Journal of Machine Learning Research, 1:211-244, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import RVC
    >>> from sparsekm.kernels import RBF
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(-2, 1, (40, 2)), rng.normal(2, 1, (40, 2))]
    >>> y = np.r_[np.zeros(40), np.ones(40)]
    >>> clf = RVC(kernel=RBF(0.5)).fit(X, y)
    >>> bool(clf.score(X, y) > 0.95), bool(clf.n_vectors_ < 10)
    (True, True)
    """

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "max_iter": POSITIVE_INT, "tol": NON_NEGATIVE, "threshold_alpha": POSITIVE,
        "prune_rule": [StrOptions({"marginal", "threshold"})], "fit_intercept": BOOLEAN,
        "verbose": ["verbose"]}

    @keyword_only_args
    def __init__(self, *, kernel=None, max_iter=1000, tol=1e-3, threshold_alpha=1e9,
                 prune_rule="marginal", fit_intercept=True, verbose=False,
                 gamma="scale", degree=3, coef0=0.0):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.prune_rule = prune_rule
        self.max_iter = max_iter
        self.tol = tol
        self.threshold_alpha = threshold_alpha
        self.fit_intercept = fit_intercept
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the RVM: posterior mode, Laplace covariance, ``alpha`` re-estimation, pruning.

        ``X`` of shape (n_samples, n_features), ``y`` with two classes; returns ``self``
        (the fitting code is shared with FastRVC, only the solver differs).
        """
        return super().fit(X, y)

    # defined on the base; named here so that the API reference lists it under RVC
    predict_proba = _RVMBase.predict_proba

    def _solver_options(self, owner):
        threshold = check_scalar(self.threshold_alpha, "threshold_alpha", owner, lower=0.0,
                                 lower_inclusive=False)
        if self.prune_rule not in ("marginal", "threshold"):
            raise ValueError(f"The 'prune_rule' parameter of {owner} must be 'marginal' or "
                             f"'threshold'. Got {self.prune_rule!r} instead.")
        return {"threshold_alpha": threshold, "prune_rule": self.prune_rule}

    def _solve(self, Phi, t, max_iter, tol, callback, **options):
        """Tipping (2001): every alpha_i re-estimated at once (:func:`sparse_bayes_logistic`)."""
        return sparse_bayes_logistic(Phi, t, max_iter=max_iter, tol=tol, callback=callback,
                                     **options)
