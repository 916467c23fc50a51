"""The RVM classifier by fast marginal likelihood maximisation (Tipping & Faul 2003).

:class:`~sparsekm.models.rvm.RVC` follows Tipping (2001): it starts from *all* ``n``
basis functions and re-estimates every ``alpha_i`` at once, so each iteration
factorises an ``(n + 1) x (n + 1)`` Hessian. On USPS (n = 7291) one such fit does
not finish its first re-estimation in minutes. Tipping & Faul ("Fast marginal
likelihood maximisation for sparse Bayesian models", AISTATS 2003) maximise the
same marginal likelihood one ``alpha_i`` at a time, starting from a single basis
function: the model only ever holds the ``M`` basis functions in use (``M << n``).

For one basis function ``phi_i`` the log marginal likelihood separates as
``L(alpha) = L(alpha_{-i}) + l(alpha_i)`` with (their eq. 16-17)

    l(alpha_i) = [log alpha_i - log(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)] / 2,

where the *sparsity* ``s_i`` and *quality* ``q_i`` factors measure ``phi_i``
against the model without it. ``l`` has its maximum at (eq. 20)

    alpha_i = s_i^2 / (q_i^2 - s_i)   if q_i^2 > s_i,    alpha_i = inf otherwise.

With the factors over the *current* model, ``S_i = phi_i^T C^{-1} phi_i`` and
``Q_i = phi_i^T C^{-1} t_hat`` (eq. 22), ``s_i = S_i`` and ``q_i = Q_i`` for a basis
function out of the model, and ``s_i = alpha_i S_i / (alpha_i - S_i)``, ``q_i =
alpha_i Q_i / (alpha_i - S_i)`` for one in it (eq. 23). Each iteration takes the one
action, over all ``i``, that increases ``L`` the most: add ``phi_i`` (``q_i^2 > s_i``,
not in the model), re-estimate its ``alpha_i`` (in the model, ``q_i^2 > s_i``) or
delete it (in the model, ``q_i^2 <= s_i``); the increases are in closed form
(:func:`delta_log_marginal`).

Classification (their section 4) uses the Laplace approximation of
:mod:`sparsekm.models.rvm` at the posterior mode ``mu``: with ``y = sigma(Phi_A mu)``,
``B = diag(y (1 - y))`` and the linearised target ``t_hat = Phi_A mu + B^{-1} (t - y)``,
``C = B^{-1} + Phi_A A^{-1} Phi_A^T``. Then (:func:`sparsity_quality`)

    S_i = phi_i^T B phi_i - phi_i^T B Phi_A Sigma Phi_A^T B phi_i,
    Q_i = phi_i^T B t_hat - phi_i^T B Phi_A Sigma Phi_A^T B t_hat = phi_i^T (t - y),

the last form because ``Sigma^{-1} mu = Phi_A^T B t_hat`` at the mode. After each
action the mode is found again by Newton's method (:func:`sparsekm.models.rvm._posterior_mode`).
One iteration costs ``O(n_basis n M)`` for ``Phi^T B Phi_A``, and memory ``O(n n_basis)``
for the design matrix.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.special import expit, logit
from sklearn.base import _fit_context

from .._constraints import BOOLEAN, KERNEL, NON_NEGATIVE, POSITIVE_INT
from ..persistence import register
from ..utils._deprecation import keyword_only_args
from .rvm import _posterior_mode, _RVMBase

__all__ = ["FastRVC", "fast_sparse_bayes_logistic", "sparsity_quality", "delta_log_marginal"]

# q_i^2 - s_i below this counts as zero (no action on basis function i); Tipping's
# SparseBayes uses the same constant ("ZeroFactor").
_ZERO_FACTOR = 1e-12
# Basis functions whose cosine with one in the model exceeds this are not added while
# it stays in the model: a duplicate adds nothing but an ill-conditioned Hessian.
_ALIGNED = 1.0 - 1e-3
# Stop when the Laplace log evidence itself rose by at most ``min_gain`` over this many
# actions (the predicted gains can stay positive while the moving mode undoes them).
_WINDOW = 25


def sparsity_quality(Phi, t, P, w, chol, diag_B_phi2=None):
    """The factors ``S_i`` and ``Q_i`` of every basis function at the mode (eq. 22).

    Parameters
    ----------
    Phi : ndarray of shape (n_samples, n_basis)
        All candidate basis functions.
    t : ndarray of shape (n_samples,)
        Targets 0/1.
    P : ndarray of shape (n_samples, n_active)
        The basis functions in the model.
    w : ndarray of shape (n_active,)
        The posterior mode of their weights.
    chol : tuple
        Lower Cholesky factor of ``Sigma^{-1} = P^T B P + A`` (as from
        :func:`~scipy.linalg.cho_factor` with ``lower=True``).
    diag_B_phi2 : ndarray of shape (n_basis,), optional
        ``phi_i^T B phi_i``; computed when not given.

    Returns
    -------
    S, Q : ndarrays of shape (n_basis,)
        ``S_i = phi_i^T C^{-1} phi_i`` and ``Q_i = phi_i^T C^{-1} t_hat`` with
        ``C = B^{-1} + P A^{-1} P^T`` (the Laplace approximation at the mode).
    """
    y = expit(P @ w)
    b = y * (1.0 - y)
    if diag_B_phi2 is None:
        diag_B_phi2 = np.einsum("ni,ni,n->i", Phi, Phi, b)
    G = Phi.T @ (P * b[:, None])                     # phi_i^T B Phi_A, (n_basis, n_active)
    V = solve_triangular(chol[0], G.T, lower=True, check_finite=False)
    S = diag_B_phi2 - np.einsum("ai,ai->i", V, V)
    Q = Phi.T @ (t - y)
    return S, Q


def delta_log_marginal(S, Q, alpha, in_model):
    """The best action per basis function and the increase of ``L`` it brings.

    Parameters
    ----------
    S, Q : ndarrays of shape (n_basis,)
        The factors over the current model (:func:`sparsity_quality`).
    alpha : ndarray of shape (n_basis,)
        ``alpha_i`` of the basis functions in the model (other entries are ignored).
    in_model : ndarray of bool of shape (n_basis,)

    Returns
    -------
    delta : ndarray of shape (n_basis,)
        The increase of the log marginal likelihood: re-estimating ``alpha_i`` to
        ``new_alpha_i`` (in the model, ``q_i^2 > s_i``), deleting ``phi_i`` (in the
        model, ``q_i^2 <= s_i``) or adding it with ``alpha_i = new_alpha_i`` (out of
        the model, ``q_i^2 > s_i``); ``-inf`` where no action applies.
    new_alpha : ndarray of shape (n_basis,)
        ``s_i^2 / (q_i^2 - s_i)`` (eq. 20; ``inf`` where ``q_i^2 <= s_i``).
    """
    S = np.asarray(S, dtype=np.float64)
    Q = np.asarray(Q, dtype=np.float64)
    alpha = np.where(in_model, alpha, np.inf)
    s, q = S.copy(), Q.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = alpha[in_model] - S[in_model]
        s[in_model] = alpha[in_model] * S[in_model] / denom       # eq. 23
        q[in_model] = alpha[in_model] * Q[in_model] / denom
        theta = q * q - s
        grow = theta > _ZERO_FACTOR * np.maximum(np.abs(s), 1.0)
        new_alpha = np.where(grow, s * s / theta, np.inf)
        delta = np.full(S.shape, -np.inf)
        # re-estimation: l(new) - l(old) in terms of S, Q (Tipping & Faul 2003, appendix)
        r = in_model & grow
        d = 1.0 / new_alpha[r] - 1.0 / alpha[r]
        delta[r] = 0.5 * (d * Q[r] ** 2 / (d * S[r] + 1.0) - np.log1p(S[r] * d))
        # deletion: l(inf) - l(alpha) = -l(alpha)
        r = in_model & ~grow
        delta[r] = -0.5 * (q[r] ** 2 / (s[r] + alpha[r]) - np.log1p(s[r] / alpha[r]))
        # addition at the optimum alpha: (q^2/s - 1 - log(q^2/s)) / 2
        r = ~in_model & grow & (S > 0)
        quot = Q[r] ** 2 / S[r]
        delta[r] = 0.5 * (quot - 1.0 - np.log(quot))
    delta[~np.isfinite(delta) & (delta > 0)] = -np.inf  # overflow: no reliable action
    return delta, new_alpha


def _initial_basis(Phi, t, start):
    """The first basis function and its ``alpha``: the largest increase of ``L`` at ``w = 0``."""
    b = np.full(Phi.shape[0], 0.25)  # y = 1/2 at w = 0
    S = np.einsum("ni,ni,n->i", Phi, Phi, b)
    Q = Phi.T @ (t - 0.5)
    if start is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            quot = np.where(S > 0, Q * Q / S, -np.inf)
        start = int(np.argmax(quot))
    theta = Q[start] ** 2 - S[start]
    if theta > _ZERO_FACTOR * max(S[start], 1.0):
        return start, float(S[start] ** 2 / theta)
    # no basis function is worth adding: keep the best one with a broad prior fitted to
    # the log-odds of the (shrunk) targets, as SparseBayes does
    z = logit(0.05 + 0.9 * t)
    phi = Phi[:, start]
    mu = float(phi @ z / max(float(phi @ phi), np.finfo(float).tiny))
    return start, 1.0 / max(mu * mu, 1e-6)


def fast_sparse_bayes_logistic(Phi, t, *, max_iter=10000, tol=1e-3, min_gain=1e-3,
                               start=None, callback=None):
    """Sparse Bayesian logistic regression by sequential updates (Tipping & Faul 2003).

    Maximises the same Laplace-approximated marginal likelihood as
    :func:`sparsekm.models.rvm.sparse_bayes_logistic`, one ``alpha_i`` per iteration,
    from one basis function upwards (see the module docstring).

    Parameters
    ----------
    Phi : ndarray of shape (n_samples, n_basis)
        Candidate basis functions (for the RVM the kernel matrix and, last, a column
        of ones for the bias).
    t : ndarray of shape (n_samples,)
        Targets 0/1.
    max_iter : int, default=10000
        Maximum number of actions (additions, re-estimations, deletions).
    tol : float, default=1e-3
        Stop when the best action is a re-estimation that changes ``log alpha_i`` by
        less than ``tol`` and no basis function is to be deleted (SparseBayes'
        criterion), or when no action increases the marginal likelihood.
    min_gain : float, default=1e-3
        Also stop when the best action's predicted gain ``Delta L`` (in nats) is at most
        ``min_gain``. The gains are those of the Gaussian (Laplace) surrogate at the
        current mode, which moves after every action: without this floor some problems
        never meet the ``tol`` rule, cycling between adding and deleting one basis
        function, or re-estimating ``alpha`` values back and forth (USPS one-vs-rest
        problems ran into ``max_iter`` so). For the same reason it stops when the
        Laplace log evidence itself has risen by at most ``min_gain`` over the last 25
        actions.
    start : int, optional
        The first basis function (default: the one whose addition at ``w = 0``
        increases the marginal likelihood the most).
    callback : callable, optional
        Called as ``callback(iteration, n_active)`` after each action.

    Returns
    -------
    dict with
        ``active`` (indices of the basis functions in the model, in the order added),
        ``mu``, ``alpha``, ``Sigma``, ``gamma`` (``1 - alpha_i Sigma_ii``),
        ``log_evidence`` (list: the Laplace log evidence after each mode finding),
        ``n_iter``, ``converged``, ``actions`` (counts of ``add``, ``reestimate``, ``delete``).
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    n, m = Phi.shape
    norms = np.sqrt(np.einsum("ni,ni->i", Phi, Phi))
    j0, a0 = _initial_basis(Phi, t, start)
    active, alpha, w = [j0], np.array([a0]), np.zeros(1)
    in_model = np.zeros(m, dtype=bool)
    in_model[j0] = True
    blocked_by = {}          # basis function -> the one in the model it is aligned with

    def block_aligned(j):
        with np.errstate(divide="ignore", invalid="ignore"):
            cos = (Phi.T @ Phi[:, j]) / (norms * norms[j])
        for i in np.flatnonzero(cos > _ALIGNED):
            if i != j and i not in blocked_by:
                blocked_by[int(i)] = j

    block_aligned(j0)
    alpha_all = np.zeros(m)
    history, actions = [], {"add": 0, "reestimate": 0, "delete": 0}
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (n_iter reported)
        P = Phi[:, active]
        w, chol, obj = _posterior_mode(P, t, alpha, w)
        history.append(obj + 0.5 * float(np.sum(np.log(alpha)))
                       - float(np.sum(np.log(np.diag(chol[0])))))
        S, Q = sparsity_quality(Phi, t, P, w, chol)
        alpha_all[:] = 0.0
        alpha_all[active] = alpha
        delta, new_alpha = delta_log_marginal(S, Q, alpha_all, in_model)
        if blocked_by:
            delta[list(blocked_by)] = -np.inf
        if len(active) == 1 and not np.isfinite(new_alpha[active[0]]):
            delta[active[0]] = -np.inf   # an RVM keeps at least one basis function
        j = int(np.argmax(delta))
        stalled = (len(history) > _WINDOW
                   and history[-1] - history[-1 - _WINDOW] <= min_gain)
        if not delta[j] > min_gain or stalled:
            converged = True
            break
        pos = active.index(j) if in_model[j] else -1
        deleting = in_model & ~np.isfinite(new_alpha)
        if len(active) == 1:
            deleting[:] = False
        if pos >= 0 and np.isfinite(new_alpha[j]):            # re-estimate
            change = abs(np.log(new_alpha[j]) - np.log(alpha[pos]))
            alpha[pos] = new_alpha[j]
            actions["reestimate"] += 1
            if change < tol and not deleting.any():
                converged = True
                if callback is not None:
                    callback(it, len(active))
                break
        elif pos >= 0:                                          # delete
            del active[pos]
            alpha = np.delete(alpha, pos)
            w = np.delete(w, pos)
            in_model[j] = False
            for i in [i for i, k in blocked_by.items() if k == j]:
                del blocked_by[i]
            actions["delete"] += 1
        else:                                                   # add
            active.append(j)
            alpha = np.append(alpha, new_alpha[j])
            w = np.append(w, 0.0)
            in_model[j] = True
            block_aligned(j)
            actions["add"] += 1
        if callback is not None:
            callback(it, len(active))
    active = np.asarray(active, dtype=np.intp)
    P = Phi[:, active]
    w, chol, obj = _posterior_mode(P, t, alpha, w)
    Sigma = cho_solve(chol, np.eye(active.size), check_finite=False)
    history.append(obj + 0.5 * float(np.sum(np.log(alpha)))
                   - float(np.sum(np.log(np.diag(chol[0])))))
    return {"active": active, "mu": w, "alpha": alpha, "Sigma": Sigma,
            "gamma": 1.0 - alpha * np.diag(Sigma), "log_evidence": history, "n_iter": it,
            "converged": converged, "actions": actions}


@register
class FastRVC(_RVMBase):
    """Relevance vector machine classifier fitted by Tipping & Faul's (2003) fast algorithm.

    The same model and marginal likelihood as :class:`~sparsekm.models.RVC`
    (Tipping 2001), maximised one ``alpha_i`` at a time from a single basis function
    upwards (:func:`fast_sparse_bayes_logistic`): memory and time grow with the
    number of relevance vectors ``M``, not with ``n`` squared per step, so it fits
    training sets of thousands of points (USPS: 7291) where :class:`RVC` cannot.
    The two algorithms are different routes to (local) maxima of the same
    objective; they need not end at the same relevance vectors.

    Parameters
    ----------
    kernel : Kernel, str or None, default=None
        The kernel, as for :class:`~sparsekm.models.RVC` (``None``: ``"rbf"``).
    max_iter : int, default=10000
        Maximum number of actions (each adds, re-estimates or deletes one basis function).
    tol : float, default=1e-3
        Stop when the best action changes one ``log alpha_i`` by less than ``tol``
        and nothing is to be deleted.
    fit_intercept : bool, default=True
        Include the bias ``w_0`` as a candidate basis function (a column of ones).
    verbose : bool, default=False
        Show a progress bar over the actions.
    gamma, degree, coef0 : default="scale", 3, 0.0
        Parameters of a kernel given by name, as for :class:`~sparsekm.models.RVC`.

    Attributes
    ----------
    expansion_ : KernelExpansion
        ``f(x) = sum_j mu_j k(x, r_j) + b`` over the relevance vectors ``r_j``.
    relevance_vectors_, relevance_indices_, alpha_, alpha_intercept_, sigma_
        As in :class:`~sparsekm.models.RVC` (``relevance_indices_`` in the order added).
    log_evidence_ : ndarray
        The Laplace log marginal likelihood after each action's mode finding.
    n_iter_ : int
    converged_ : bool
    classes_, kernel_, n_features_in_

    References
    ----------
    M. E. Tipping and A. C. Faul. Fast marginal likelihood maximisation for sparse
    Bayesian models. AISTATS 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.models import FastRVC
    >>> from sparsekm.kernels import RBF
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(-2, 1, (40, 2)), rng.normal(2, 1, (40, 2))]
    >>> y = np.r_[np.zeros(40), np.ones(40)]
    >>> clf = FastRVC(kernel=RBF(0.5)).fit(X, y)
    >>> bool(clf.score(X, y) > 0.95), bool(clf.n_vectors_ < 10)
    (True, True)
    """

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "max_iter": POSITIVE_INT, "tol": NON_NEGATIVE, "fit_intercept": BOOLEAN,
        "verbose": ["verbose"]}

    @keyword_only_args
    def __init__(self, *, kernel=None, max_iter=10000, tol=1e-3, fit_intercept=True,
                 verbose=False, gamma="scale", degree=3, coef0=0.0):
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.max_iter = max_iter
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the RVM by sequential additions, re-estimations and deletions.

        ``X`` of shape (n_samples, n_features), ``y`` with two classes; returns ``self``
        (the fitting code is shared with RVC, only the solver differs).
        """
        return super().fit(X, y)

    def _solve(self, Phi, t, max_iter, tol, callback, **options):
        """Tipping & Faul (2003): one action at a time (:func:`fast_sparse_bayes_logistic`)."""
        return fast_sparse_bayes_logistic(Phi, t, max_iter=max_iter, tol=tol, callback=callback)
