"""The squared-hinge primal on the coordinates ``Gamma``, solved to its exact optimum.

The linear SVM of :class:`~sparsekm.models.ApproxSVC` with ``solver="lbfgs"`` minimises

.. math::

    f(w, b) = \\tfrac12 \\|w\\|^2 + C \\sum_i \\max(0,\\, 1 - y_i (w^T \\gamma_i + b))^2

(LinearSVC's squared hinge, free bias ``b``), in memory or over the row partitions of a
dask array (:mod:`sparsekm.approx.gamma_distributed`). Every function here sees the rows only
through ``reduce(block_fn, *args)``: the sum over row blocks ``(G_k, y_k)`` of
``block_fn(G_k, y_k, *args)`` -- one block in memory, one per partition on a cluster.

**Why two phases.** ``f`` is strongly convex in ``w`` and has one optimum, but an
iterative method stopped by a tolerance stops at a point that depends on the rounding
of its sums: partial sums added in another order (other partitions, other caching)
move the L-BFGS path, a stopping rule on the objective then fires one iteration
earlier or later, and the two fits differ by what the tolerance leaves (1.2e-2
relative in the decision values at 20,000 rows for a relative change of 1e-6;
issue 38). So the default rule (``tol`` given) ends on a property of the data:

1. L-BFGS-B from ``w = 0, b = 0`` until three consecutive iterations each change ``f``
   by at most ``tol`` relative (:func:`~sparsekm.utils.optimize.lbfgs_relative`);
2. finite Newton steps (Keerthi & DeCoste, JMLR 6, 2005; ``f`` is piecewise
   quadratic): with the active set ``A = {i : h_i > 0}``, ``h_i = 1 - y_i (w^T
   \\gamma_i + b)``, of the current point, the quadratic that equals ``f`` where the
   active set is ``A`` has its minimiser at the solution of

   .. math:: (D + 2C \\hat G_A^T \\hat G_A)\\, \\theta = 2C \\hat G_A^T y_A,
             \\quad \\hat G = [G, 1],\\; D = \\mathrm{diag}(1, \\dots, 1, 0);

   step there (halving the step while ``f`` does not decrease). A full step that
   leaves the active set unchanged has reached the optimum: ``grad f = 0`` there.
   Rows with ``|h_i| <= margin_tol`` at the new point are not counted as changes
   (they add ``O(margin_tol)`` to the gradient, and are what rounding can flip).

The end point is the optimum of ``f`` up to the rounding of one ``(m+1) x (m+1)``
solve, whatever the order of the sums: fits over any partitioning agree to about
``1e-12`` relative instead of the tolerance's ``1e-2``. ``tol=None`` keeps plain
L-BFGS to ``max_iter`` iterations (or scipy's ``gtol``/``ftol``), no Newton phase.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg, optimize
from sklearn.exceptions import ConvergenceWarning

__all__ = [
    "squared_hinge_objective",
    "squared_hinge_newton_system",
    "squared_hinge_active_changes",
    "lbfgs_squared_hinge",
    "solve_squared_hinge",
]

#: Rows with ``|h_i|`` at most this at a Newton point do not count as active-set changes.
MARGIN_TOL = 1e-9


def _margins(theta, G, y):
    """``h = 1 - y (G w + b)`` of a block."""
    return 1.0 - y * (G @ theta[:-1] + theta[-1])


def squared_hinge_objective(theta, G, y, C):
    """``1/2 ||w||^2 + C sum_i max(0, 1 - y_i (w^T gamma_i + b))^2`` and its gradient.

    ``theta = (w, b)``; the intercept ``b`` is not regularised (the paper's free bias).
    Returns the loss part ``C sum h^2`` and its gradient only when ``G`` is a block
    (the regulariser is added once by the caller): ``(loss, grad)`` with ``grad`` of
    length ``m + 1``.
    """
    h = _margins(theta, G, y)
    np.maximum(h, 0.0, out=h)
    yh = y * h
    loss = C * float(h @ h)
    grad = np.empty_like(theta)
    grad[:-1] = -2.0 * C * (G.T @ yh)
    grad[-1] = -2.0 * C * float(yh.sum())
    return loss, grad


def squared_hinge_newton_system(theta, G, y, C):
    """A block's part of the Newton system at ``theta``: ``(loss, H, r)``.

    ``H = 2C Ĝ_A^T Ĝ_A`` and ``r = 2C Ĝ_A^T y_A`` over the block's active rows
    ``A = {i : h_i > 0}`` (``Ĝ = [G, 1]``), and the loss ``C sum_A h_i^2`` at ``theta``.
    """
    h = _margins(theta, G, y)
    active = h > 0.0
    Ga = G[active]
    ya = y[active]
    m = G.shape[1]
    H = np.empty((m + 1, m + 1))
    H[:m, :m] = Ga.T @ Ga
    s = Ga.sum(axis=0)
    H[:m, m] = s
    H[m, :m] = s
    H[m, m] = float(Ga.shape[0])
    r = np.empty(m + 1)
    r[:m] = Ga.T @ ya
    r[m] = float(ya.sum())
    ha = h[active]
    return C * float(ha @ ha), 2.0 * C * H, 2.0 * C * r


def squared_hinge_active_changes(theta_a, theta_b, G, y, C, margin_tol=MARGIN_TOL):
    """``(loss at theta_b, rows whose activity differs between theta_a and theta_b)``.

    A row counts when ``h > 0`` at one point and not at the other, unless
    ``|h| <= margin_tol`` at ``theta_b``.
    """
    ha = _margins(theta_a, G, y)
    hb = _margins(theta_b, G, y)
    changed = ((ha > 0.0) != (hb > 0.0)) & (np.abs(hb) > margin_tol)
    hp = np.maximum(hb, 0.0)
    return C * float(hp @ hp), int(changed.sum())


# The block functions of ``reduce``: rows first.
def _objective_block(G, y, theta, C):
    return squared_hinge_objective(theta, G, y, C)


def _newton_block(G, y, theta, C):
    return squared_hinge_newton_system(theta, G, y, C)


def _changes_block(G, y, theta_a, theta_b, C, margin_tol):
    return squared_hinge_active_changes(theta_a, theta_b, G, y, C, margin_tol)


def lbfgs_squared_hinge(loss_grad, m, *, max_iter=1000, tol=None, callback=None):
    """Minimise ``1/2 ||w||^2 + loss(w, b)`` by scipy's L-BFGS-B from ``w = 0, b = 0``.

    ``loss_grad(theta)`` returns the data term and its gradient. ``tol=None`` runs to
    scipy's ``ftol = 1e-15`` / ``gtol = 1e-10`` (in practice ``max_iter``); a float stops
    once three consecutive iterations each change the objective by at most ``tol``
    relative (:func:`~sparsekm.utils.optimize.lbfgs_relative`). This is phase 1 of
    :func:`solve_squared_hinge` only: its end point depends on the rounding of the sums.
    Returns ``(w, b, n_iter, n_evaluations)``.
    """
    from ..utils.optimize import lbfgs_relative

    n_evals = [0]

    def fun(theta):
        n_evals[0] += 1
        loss, grad = loss_grad(theta)
        w = theta[:-1]
        grad = grad.copy()
        grad[:-1] += w
        return 0.5 * float(w @ w) + loss, grad

    theta0 = np.zeros(m + 1)
    if tol is not None:
        x, _, nit, _, _ = lbfgs_relative(fun, theta0, max_iter=int(max_iter), tol=tol,
                                         gtol=1e-10, maxcor=20, patience=3,
                                         callback_x=callback)
        return x[:-1].copy(), float(x[-1]), nit, n_evals[0]
    res = optimize.minimize(fun, theta0, jac=True, method="L-BFGS-B", callback=callback,
                            options={"maxiter": int(max_iter), "maxcor": 20,
                                     "ftol": 1e-15, "gtol": 1e-10})
    return res.x[:-1].copy(), float(res.x[-1]), int(res.nit), int(res.nfev)


def _newton_direction(H, r, theta):
    """``(D + H)^{-1} r - theta``, ``D = diag(1, ..., 1, 0)`` (least squares if singular)."""
    A = H.copy()
    A[np.arange(A.shape[0] - 1), np.arange(A.shape[0] - 1)] += 1.0
    try:
        target = linalg.solve(A, r, assume_a="pos", check_finite=False)
    except (linalg.LinAlgError, ValueError):
        target = linalg.lstsq(A, r, check_finite=False)[0]
    return target - theta


def solve_squared_hinge(reduce, m, C, *, max_iter=1000, tol=1e-6, max_newton=50,
                        margin_tol=MARGIN_TOL, callback=None):
    """Minimise the squared-hinge primal on ``Gamma``: L-BFGS, then finite Newton steps.

    Parameters
    ----------
    reduce : callable ``reduce(block_fn, *args)``
        The sum over the row blocks ``(G_k, y_k)`` of ``block_fn(G_k, y_k, *args)``
        (tuples added element by element).
    m : int
        Columns of ``Gamma``.
    C : float
    max_iter : int
        L-BFGS iteration limit.
    tol : float or None, default=1e-6
        Relative change of the objective that ends L-BFGS (three in a row), after which
        Newton steps go to the optimum (see the module docstring). ``None``: plain
        L-BFGS to ``max_iter`` or scipy's tolerances, no Newton phase.
    max_newton : int, default=50
        Newton step limit (a ``ConvergenceWarning`` if reached).
    margin_tol : float
        Rows this close to the margin do not count as active-set changes.
    callback : callable ``callback(theta)``, optional
        After every L-BFGS iteration and every Newton step.

    Returns
    -------
    w : ndarray of shape (m,)
    b : float
    info : dict
        ``n_iter`` (L-BFGS iterations), ``n_newton`` (Newton steps taken),
        ``n_evaluations`` (passes over the rows), ``converged`` (the Newton phase
        ended on an unchanged active set; ``None`` without a Newton phase).
    """
    passes = [0]

    def loss_grad(theta):
        passes[0] += 1
        return reduce(_objective_block, theta, C)

    w, b, nit, _ = lbfgs_squared_hinge(loss_grad, m, max_iter=max_iter, tol=tol,
                                       callback=callback)
    info = {"n_iter": int(nit), "n_newton": 0, "converged": None}
    theta = np.append(w, b)
    if tol is None:
        info["n_evaluations"] = passes[0]
        return w, b, info

    def objective(th, loss):
        return 0.5 * float(th[:-1] @ th[:-1]) + loss

    info["converged"] = False
    for _ in range(max_newton):
        passes[0] += 1
        loss, H, r = reduce(_newton_block, theta, C)
        f = objective(theta, loss)
        d = _newton_direction(H, r, theta)
        step = 1.0
        for _ in range(40):
            trial = theta + step * d
            passes[0] += 1
            loss_t, changed = reduce(_changes_block, theta, trial, C, margin_tol)
            if step == 1.0 and changed == 0:
                # The minimiser of the quadratic on A keeps A: grad f = 0 there.
                theta = trial
                info["converged"] = True
                break
            if objective(trial, loss_t) < f:
                break
            step *= 0.5
        else:  # no decrease along d: theta is the optimum up to rounding
            info["converged"] = True
            break
        if not info["converged"]:
            theta = trial
        info["n_newton"] += 1
        if callback is not None:
            callback(np.copy(theta))
        if info["converged"]:
            break
    if not info["converged"]:
        warnings.warn(f"The squared-hinge Newton phase did not settle its active set in "
                      f"{max_newton} steps; the result is the last iterate.",
                      ConvergenceWarning, stacklevel=2)
    info["n_evaluations"] = passes[0]
    return theta[:-1].copy(), float(theta[-1]), info
