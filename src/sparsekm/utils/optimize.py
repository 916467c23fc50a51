"""L-BFGS stopped on the relative change of the objective (shared by the nonconvex solvers)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

__all__ = ["lbfgs_relative"]

#: ``message`` of a run stopped by the relative-change rule.
RELATIVE_STOP = "CONVERGENCE: RELATIVE CHANGE OF THE OBJECTIVE <= tol"


def lbfgs_relative(fun, x0, *, max_iter, tol, gtol=1e-12, maxcor=10, callback=None,
                   patience=1, callback_x=None):
    """Minimise ``fun(x) -> (value, grad)`` by scipy's L-BFGS-B, stopping on the objective.

    The run stops after the first ``patience`` consecutive iterations ``k`` with
    ``f_{k-1} - f_k <= tol * max(|f_{k-1}|, |f_k|)`` (relative change of the objective,
    whatever its scale), after ``max_iter`` iterations, or on scipy's own gradient and
    line-search criteria. For ``|f| >= 1`` this is exactly scipy's ``ftol`` rule, which
    measures the change against ``max(|f|, 1)`` and so becomes an *absolute* test for
    objectives below one (a phase-2 residual ``||Psi - Psi'||^2``, a sparse-KFD
    ``-lambda``).

    Parameters
    ----------
    fun : callable ``fun(x) -> (float, ndarray)``
    x0 : ndarray of shape (n,)
    max_iter : int
        Iteration limit (``0`` evaluates ``x0`` only).
    tol : float >= 0
        Relative-change tolerance (``0``: never stop on it).
    gtol : float
        scipy's projected-gradient tolerance.
    maxcor : int
        L-BFGS memory.
    callback : callable ``callback(iteration, value)``, optional
    patience : int >= 1, default=1
        Consecutive iterations below ``tol`` needed to stop (``1``: scipy's rule; more
        guards against one short step after a poor curvature estimate).
    callback_x : callable ``callback_x(x)``, optional
        Called after every iteration with a copy of the iterate (after ``callback``).

    Returns
    -------
    x : ndarray
        The last iterate.
    value : float
    n_iter : int
    message : str
    history : list of float
        The objective after every iteration (``x0``'s value not included).
    """
    history = []
    state = {"prev": None, "quiet": 0}

    def cb(intermediate_result):
        f = float(intermediate_result.fun)
        history.append(f)
        if callback is not None:
            callback(len(history), f)
        if callback_x is not None:
            callback_x(np.copy(intermediate_result.x))
        prev, state["prev"] = state["prev"], f
        if prev is not None and tol > 0 and prev - f <= tol * max(abs(prev), abs(f)):
            state["quiet"] += 1
            if state["quiet"] >= patience:
                raise StopIteration
        else:
            state["quiet"] = 0

    def f0(x):
        value, grad = fun(x)
        if state["prev"] is None:
            state["prev"] = float(value)  # f at x0: the first iteration is measured against it
        return value, grad

    res = minimize(f0, np.asarray(x0, dtype=np.float64), jac=True, method="L-BFGS-B",
                   callback=cb, options={"maxiter": max_iter, "ftol": 0.0, "gtol": gtol,
                                         "maxcor": maxcor})
    message = str(res.message)
    if "StopIteration" in message or "callback" in message:
        message = RELATIVE_STOP
    return res.x, float(res.fun), int(res.nit), message, history
