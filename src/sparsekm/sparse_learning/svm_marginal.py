"""Sparse large margin classifier (SLMC; Wu, Schölkopf, Bakır, JMLR 2006, section 3).

* :func:`slmc_gradient` -- ``dW/dZ`` by eq. 46 / Corollary 2 (``alpha^z`` held
  constant), vectorised through :meth:`Kernel.gradient_sum`.
* :func:`slmc_optimize` -- L-BFGS over ``Z`` (section 3.3).
* :func:`slmc_shared_objective` / :func:`slmc_shared_optimize` -- one ``Z`` shared by
  several binary problems (multi-class SLMC; not in the paper).
"""

from __future__ import annotations

import numpy as np

from ..backend import DeviceKernel, resident, solver_kernel, take
from ..kernels import Kernel
from ..utils.threads import small_solve_threads
from ..utils.validation import check_array
from ._lbfgs import OptimizeResult, _lbfgs_over_Z, best_of_restarts
from .fixed_z import (
    aggregate_duplicates,
    check_C,
    check_Z,
    fixed_z_svm,
    solve_features,
    whitening_transform,
)

__all__ = [
    "slmc_objective",
    "slmc_gradient",
    "slmc_optimize",
    "slmc_shared_objective",
    "slmc_shared_optimize",
    "OptimizeResult",
]


def slmc_objective(X, y, Z, kernel, C, *, tol=1e-5, on_singular="raise"):
    """``W(Z)`` of the sparse large margin classifier (eq. 24-27, 44)."""
    return fixed_z_svm(X, y, Z, kernel, C, tol=tol, on_singular=on_singular).W


def slmc_gradient(X, y, Z, kernel, alpha, beta):
    """Gradient of ``W(Z)`` (eq. 46, Corollary 2) with ``alpha^z`` held constant.

    With ``u = K^{zx} Y alpha`` and ``beta = (K^z)^{-1} u``,
    ``W = sum(alpha) - u^T (K^z)^{-1} u / 2``, so

    ``dW/dz_u = -beta_u [ sum_i alpha_i y_i grad_{z_u} k(x_i, z_u)
                          - sum_b beta_b grad_{z_u} k(z_b, z_u) ]``

    (one-argument gradients; the ``b = u`` term is correct because ``K^z`` is
    symmetric). Cost ``O((n_SV + N_z) N_z d)``.

    Parameters
    ----------
    X, y : training data (only rows with ``alpha > 0`` are used)
    Z : ndarray of shape (n_vectors, n_features)
    kernel : Kernel or DeviceKernel
        A :class:`~sparsekm.backend.DeviceKernel` (:func:`~sparsekm.backend.solver_kernel`)
        with ``X`` :func:`~sparsekm.backend.resident` cuts the support vectors on
        its device.
    alpha : ndarray of shape (n_samples,)
    beta : ndarray of shape (n_vectors,)

    Returns
    -------
    ndarray of shape (n_vectors, n_features)
    """
    sv = alpha > 0
    ay = alpha[sv] * np.asarray(y, dtype=float)[sv]
    G = -kernel.gradient_sum(take(kernel, X, sv), Z, np.outer(ay, beta))
    G += kernel.gradient_sum(Z, Z, np.outer(beta, beta))
    return G


def slmc_optimize(X, y, Z0, kernel, C, *, max_iter=100, tol=1e-6, svm_tol=1e-4, warm_start=True,
                  callback=None, solver="auto", backend=None, device=None, deadline=None):
    """Minimise the SLMC marginal function ``W(Z)`` over ``Z`` with L-BFGS (section 3.3).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) in {-1, +1}
    Z0 : ndarray of shape (n_vectors, n_features), or a list of them
        Initial expansion vectors. A list (or an array of shape
        ``(n_starts, n_vectors, n_features)``) gives restarts: each start is optimised
        and the run with the lowest final ``W(Z)`` is returned (its ``restarts`` holds
        every run's value).
    kernel : Kernel
    C : float
    max_iter : int
        Maximum number of L-BFGS iterations.
    tol : float
        L-BFGS stops after the first iteration whose relative decrease of ``W``,
        ``(W_{k-1} - W_k) / max(|W_{k-1}|, |W_k|)``, is at most ``tol``
        (:func:`~sparsekm.utils.optimize.lbfgs_relative`).
    svm_tol : float
        Tolerance of libsvm in the inner SVM (when it is used, see ``solver``).
    warm_start : bool
        Seed each inner solve with the previous iterate's active set
        (:func:`_active_set_svm`); ``False`` solves every step from scratch.
    callback : callable ``callback(iteration, W)``, optional
    solver : {"auto", "libsvm"}
        Inner solver, see :func:`fixed_z_svm`.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel sums (``None``: :func:`sparsekm.config.get_config`).
        With ``"torch"`` the (de-duplicated) training data is converted to a tensor
        on ``device`` once for the whole optimisation; each L-BFGS step evaluates
        ``K^{zx}``, ``K^z`` and the gradient sums of eq. 46 there and brings back
        only those (``N_z x n``, ``N_z x N_z``, ``N_z x d``).
    device : str or None, default=None
        torch device (``None``: the configured one, else CUDA when available).
    deadline : :class:`~sparsekm.utils.optimize.Deadline`, optional
        A hard cap on the wall-clock time: once passed, the run stops after its
        current L-BFGS iteration with ``message`` ``DEADLINE_STOP`` (the best ``Z`` so
        far is kept) and restarts not yet begun are not run. ``None`` (default): no
        clock is read.

    Returns
    -------
    OptimizeResult
        ``Z``, ``solution`` (:class:`FixedZSolution` at ``Z``; its ``alpha`` refers to
        the distinct ``(x, y)`` pairs of :func:`aggregate_duplicates`), ``W_history``
        (``W`` at the start and after every L-BFGS iteration; non-increasing).
    """
    X, y, counts = aggregate_duplicates(X, y)
    starts = [check_Z(z, X.shape[1], "Z0") for z in _starts(Z0)]
    weights = None if np.all(counts == 1) else counts
    warm = {"alpha": None}
    kernel = solver_kernel(kernel, backend, device)
    resident(kernel, X)  # once for all L-BFGS steps

    def fun(Z):
        sol = fixed_z_svm(X, y, Z, kernel, C, tol=svm_tol, on_singular="pinv",
                          warm_start=warm["alpha"], sample_weight=weights, solver=solver)
        if warm_start:
            warm["alpha"] = sol.alpha
        return sol.W, slmc_gradient(X, y, Z, kernel, sol.alpha, sol.beta), sol

    # a loop of small solves: one BLAS thread unless a step's K^{zx} product is large
    with small_solve_threads(starts[0].shape[0] * X.shape[0] * X.shape[1]):
        return _restarts(fun, starts, max_iter, tol, callback, warm, deadline)


def _starts(Z0):
    """``Z0`` as a list of initial ``Z`` (several: restarts)."""
    if isinstance(Z0, np.ndarray):
        return list(Z0) if Z0.ndim == 3 else [Z0]
    if isinstance(Z0, list | tuple) and len(Z0) and np.ndim(Z0[0]) == 2:
        return list(Z0)
    return [Z0]


def _restarts(fun, starts, max_iter, tol, callback, warm, deadline=None):
    """L-BFGS from every start (the inner SVM's warm start reset), the best by ``W``;
    starts not begun when ``deadline`` has passed are not run."""
    runs = []
    for Z0 in starts:
        if runs and deadline is not None and deadline.expired():
            break
        warm["alpha"] = None
        runs.append(_lbfgs_over_Z(fun, np.array(Z0, dtype=float), max_iter, tol, callback,
                                  deadline))
    return runs[0] if len(runs) == 1 else best_of_restarts(runs)


# -- shared expansion vectors for several binary problems (multi-class SLMC) -----------
def _check_problems(problems, owner):
    """Validate ``[(X_c, y_c[, sample_weight_c]), ...]``; returns a list of 3-tuples."""
    problems = list(problems)
    if not problems:
        raise ValueError(f"{owner} needs at least one binary problem (X, y).")
    out = []
    for c, prob in enumerate(problems):
        if not isinstance(prob, tuple | list) or len(prob) not in (2, 3):
            raise ValueError(f"{owner}: problem {c} must be a tuple (X, y) or (X, y, "
                             "sample_weight).")
        Xc = check_array(prob[0], "X")
        yc = np.asarray(prob[1], dtype=float)
        if yc.shape != (Xc.shape[0],) or not np.isin(yc, (-1.0, 1.0)).all():
            raise ValueError(f"{owner}: y of problem {c} must be a ({Xc.shape[0]},) array of "
                             "-1/+1 labels.")
        if np.unique(yc).size < 2:
            raise ValueError(f"{owner}: problem {c} has only one class; each binary problem "
                             "needs both -1 and +1 labels.")
        w = None if len(prob) == 2 or prob[2] is None else np.asarray(prob[2], dtype=float)
        if w is not None and (w.shape != yc.shape or not np.all(np.isfinite(w)) or np.any(w <= 0)):
            raise ValueError(f"{owner}: sample_weight of problem {c} must be positive, finite "
                             f"and of shape ({Xc.shape[0]},).")
        if out and Xc.shape[1] != out[0][0].shape[1]:
            raise ValueError(f"{owner}: problem {c} has {Xc.shape[1]} features, problem 0 has "
                             f"{out[0][0].shape[1]}.")
        out.append((Xc, yc, w))
    return out


def _shared_value_grad(problems, Z, kernel, C, warm, *, solver="auto", svm_tol=1e-4,
                       cold="ipm"):
    """``sum_c W_c(Z)``, its gradient (sum of eq. 46 over the problems) and the solutions.

    Problems that hold the *same* ``X`` array (one-vs-rest) share ``K^{zx}`` and one
    :meth:`Kernel.gradient_sum` call: ``sum_c outer(alpha_c y_c, beta_c)`` is the
    weight matrix ``(alpha o y) B^T`` of one weighted kernel-gradient sum.
    """
    sols = []
    total = 0.0
    groups = {}
    T = whitening_transform(kernel(Z), on_singular="pinv")  # once for all problems
    for c, (Xc, yc, wc) in enumerate(problems):
        key = id(Xc)
        if key not in groups:
            groups[key] = [Xc, (T @ kernel(Z, Xc)).T, []]  # whitened features, eq. 41-43
        sol = solve_features(groups[key][1], T, yc, C, tol=svm_tol,
                              warm_start=None if warm is None else warm[c], sample_weight=wc,
                              solver=solver, features="whitened", cold=cold)
        groups[key][2].append(c)
        sols.append(sol)
        total += sol.W
    B = np.column_stack([s.beta for s in sols])
    G = kernel.gradient_sum(Z, Z, B @ B.T)  # sum_c beta_c beta_c^T (Z-Z term of eq. 46)
    for Xc, _, members in groups.values():
        AY = np.column_stack([sols[c].alpha * problems[c][1] for c in members])
        sv = np.any(AY != 0, axis=1)
        if sv.any():
            G -= kernel.gradient_sum(take(kernel, Xc, sv), Z, AY[sv] @ B[:, members].T)
    return float(total), G, sols


def slmc_shared_objective(problems, Z, kernel, C, *, solver="auto"):
    """Shared-XV marginal function ``W(Z) = sum_c W_c(Z)`` and its gradient.

    Every binary problem ``c`` (e.g. class ``c`` against the rest) keeps its own
    ``beta_c`` and ``b_c`` but all share the expansion vectors ``Z``. For fixed
    ``Z`` the problems decouple, so ``W(Z)`` is the sum of the marginal functions of
    eq. 44, each solved exactly by :func:`fixed_z_svm`; by Corollary 2 applied to
    each problem at its own inner optimum ``alpha_c^z``,
    ``dW/dz_u = sum_c dW_c/dz_u`` with every term given by eq. 46.

    Parameters
    ----------
    problems : sequence of (X, y) or (X, y, sample_weight)
        The binary problems, labels in {-1, +1}; problems holding the same ``X``
        array share the kernel computations.
    Z : ndarray of shape (n_vectors, n_features)
    kernel : Kernel
    C : float
    solver : {"auto", "libsvm"}
        Inner solver, see :func:`fixed_z_svm`.

    Returns
    -------
    W : float
        ``sum_c W_c(Z)``.
    grad : ndarray of shape (n_vectors, n_features)
    solutions : list of FixedZSolution
        One per problem.
    """
    problems = _check_problems(problems, "slmc_shared_objective")
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a sparsekm.kernels.Kernel; got {type(kernel).__name__}.")
    C = check_C(C, "slmc_shared_objective")
    Z = check_Z(Z, problems[0][0].shape[1])
    return _shared_value_grad(problems, Z, kernel, C, None, solver=solver, svm_tol=1e-6)


def slmc_shared_optimize(problems, Z0, kernel, C, *, max_iter=100, tol=1e-6, svm_tol=1e-4,
                         warm_start=True, callback=None, solver="auto", backend=None,
                         device=None, deadline=None):
    """Minimise the shared-XV marginal function ``sum_c W_c(Z)`` over ``Z`` with L-BFGS.

    The multi-class SLMC with expansion vectors shared by all one-vs-rest problems:
    the sum of the per-class SLMC objectives (eq. 24-27, 44), each with its own
    ``beta_c`` (eq. 45) and bias, optimised over the common ``Z`` with the summed
    gradient of eq. 46 (see :func:`slmc_shared_objective`). A prediction then costs
    ``N_z`` kernel evaluations for all classes together.

    Parameters
    ----------
    problems : sequence of (X, y) or (X, y, sample_weight)
        Binary problems, labels in {-1, +1}. Pass the same ``X`` array for every
        one-vs-rest problem so that ``K^{zx}`` is computed once per evaluation.
    Z0 : ndarray of shape (n_vectors, n_features)
        Initial shared expansion vectors (k-means centres, the paper's choice, or a
        shared reduced set); a list of them gives restarts, as in :func:`slmc_optimize`.
    kernel : Kernel
    C : float
    max_iter, tol, svm_tol, warm_start, callback, solver, backend, device, deadline
        As in :func:`slmc_optimize`; ``tol`` applies to the summed ``W``. Each distinct
        ``X`` array goes to the device once.

    Returns
    -------
    OptimizeResult
        ``solution`` is the list of per-problem :class:`FixedZSolution` at ``Z``;
        ``W_history`` holds the summed ``W`` (non-increasing).
    """
    problems = _check_problems(problems, "slmc_shared_optimize")
    if not isinstance(kernel, Kernel | DeviceKernel):
        raise TypeError(f"kernel must be a sparsekm.kernels.Kernel; got {type(kernel).__name__}.")
    C = check_C(C, "slmc_shared_optimize")
    starts = [check_Z(z, problems[0][0].shape[1], "Z0") for z in _starts(Z0)]
    warm = {"alpha": None}
    kernel = solver_kernel(kernel, backend, device)
    for Xc, _, _ in problems:
        resident(kernel, Xc)  # once per distinct array (one-vs-rest problems share it)

    def fun(Z):
        value, grad, sols = _shared_value_grad(problems, Z, kernel, C, warm["alpha"],
                                               solver=solver, svm_tol=svm_tol, cold="libsvm")
        if warm_start:
            warm["alpha"] = [s.alpha for s in sols]
        return value, grad, sols

    n_rows = sum({id(Xc): Xc.shape[0] for Xc, _, _ in problems}.values())
    with small_solve_threads(starts[0].shape[0] * n_rows * starts[0].shape[1]):
        return _restarts(fun, starts, max_iter, tol, callback, warm, deadline)
