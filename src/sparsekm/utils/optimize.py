"""L-BFGS stopped on the relative change of the objective (shared by the nonconvex solvers)."""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import minimize

__all__ = ["lbfgs_relative", "Deadline", "RELATIVE_STOP", "DEADLINE_STOP", "CALLBACK_STOP"]

#: ``message`` of a run stopped by the relative-change rule.
RELATIVE_STOP = "CONVERGENCE: RELATIVE CHANGE OF THE OBJECTIVE <= tol"
#: ``message`` of a run stopped because its :class:`Deadline` passed (not convergence).
DEADLINE_STOP = "STOP: DEADLINE REACHED"
#: ``message`` of a run stopped by the caller's ``callback`` raising ``StopIteration``.
CALLBACK_STOP = "STOP: CALLBACK"


class Deadline:
    """A wall-clock instant after which the solvers given it stop (``time_limit``).

    The only clock the solvers read, and only when one is given: a run without a
    ``Deadline`` never reads a clock, so that its result cannot depend on the
    machine's load. ``clock`` is read once here (the start) and by :meth:`expired`.

    Parameters
    ----------
    seconds : float >= 0
        Time from now to the deadline.
    clock : callable, default=time.monotonic
    """

    def __init__(self, seconds, clock=time.monotonic):
        self.seconds = float(seconds)
        self._clock = clock
        self.start = clock()

    def elapsed(self):
        """Seconds since the start."""
        return self._clock() - self.start

    def expired(self):
        """Whether the deadline has passed."""
        return self.elapsed() >= self.seconds

    def __getstate__(self):  # joblib workers: the default clock is a module function
        return {"seconds": self.seconds, "start": self.start,
                "clock": None if self._clock is time.monotonic else self._clock}

    def __setstate__(self, state):
        self.seconds, self.start = state["seconds"], state["start"]
        self._clock = state["clock"] or time.monotonic


def lbfgs_relative(fun, x0, *, max_iter, tol, gtol=1e-12, maxcor=10, callback=None,
                   patience=1, callback_x=None, deadline=None):
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
        ``StopIteration`` raised by either stops the run with ``message``
        ``CALLBACK_STOP``.
    deadline : Deadline, optional
        Checked after every iteration; once expired the run stops with ``message``
        ``DEADLINE_STOP`` (never reported as convergence). ``None``: no clock is read.

    Returns
    -------
    x : ndarray
        The last iterate.
    value : float
    n_iter : int
    message : str
        scipy's message, or ``RELATIVE_STOP``, ``DEADLINE_STOP``, ``CALLBACK_STOP``.
    history : list of float
        The objective after every iteration (``x0``'s value not included).
    """
    history = []
    state = {"prev": None, "quiet": 0, "stop": None}

    def cb(intermediate_result):
        f = float(intermediate_result.fun)
        history.append(f)
        try:
            if callback is not None:
                callback(len(history), f)
            if callback_x is not None:
                callback_x(np.copy(intermediate_result.x))
        except StopIteration:
            state["stop"] = CALLBACK_STOP
            raise
        prev, state["prev"] = state["prev"], f
        if prev is not None and tol > 0 and prev - f <= tol * max(abs(prev), abs(f)):
            state["quiet"] += 1
            if state["quiet"] >= patience:
                state["stop"] = RELATIVE_STOP
                raise StopIteration
        else:
            state["quiet"] = 0
        if deadline is not None and deadline.expired():
            state["stop"] = DEADLINE_STOP
            raise StopIteration

    def f0(x):
        value, grad = fun(x)
        if state["prev"] is None:
            state["prev"] = float(value)  # f at x0: the first iteration is measured against it
        return value, grad

    res = minimize(f0, np.asarray(x0, dtype=np.float64), jac=True, method="L-BFGS-B",
                   callback=cb, options={"maxiter": max_iter, "ftol": 0.0, "gtol": gtol,
                                         "maxcor": maxcor})
    message = str(res.message)
    if state["stop"] is not None:
        message = state["stop"]
    return res.x, float(res.fun), int(res.nit), message, history
