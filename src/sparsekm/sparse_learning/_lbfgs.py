"""L-BFGS over the expansion vectors ``Z`` (Wu et al. 2006, section 3.3), for SLMC and SKFD."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..utils.optimize import lbfgs_relative


@dataclass
class OptimizeResult:
    """Outcome of an L-BFGS run over the expansion vectors.

    ``fun`` is the objective at ``Z`` (the best point evaluated), ``restarts`` the
    final objective of every restart when several starts were run (else ``None``).
    """

    Z: np.ndarray
    solution: object
    W_history: list
    n_iter: int
    n_evals: int
    message: str
    fun: float = float("nan")
    restarts: object = None


def _lbfgs_over_Z(fun, Z0, max_iter, tol, callback=None, deadline=None):
    """Minimise ``fun(Z) -> (value, grad, aux)`` over Z with L-BFGS.

    Stops when the objective's relative change in one iteration falls to ``tol``
    (:func:`~sparsekm.utils.optimize.lbfgs_relative`), after ``max_iter`` iterations or
    when ``deadline`` (a :class:`~sparsekm.utils.optimize.Deadline`) has passed
    (``message`` then says so); returns the best point evaluated.
    """
    shape = Z0.shape
    cache = {}
    state = {"n_evals": 0}

    def f(zflat):
        Z = zflat.reshape(shape)
        value, grad, aux = fun(Z)
        state["n_evals"] += 1
        if value <= cache["best"][1]:
            cache["best"] = (zflat.copy(), value, aux)
        return value, grad.ravel()

    v0, _, aux0 = fun(Z0)
    state["n_evals"] += 1
    cache["best"] = (Z0.ravel().copy(), v0, aux0)
    _, _, nit, message, history = lbfgs_relative(f, Z0.ravel(), max_iter=max_iter, tol=tol,
                                                 callback=callback, deadline=deadline)
    zbest, vbest, auxbest = cache["best"]
    return OptimizeResult(Z=zbest.reshape(shape), solution=auxbest, W_history=[v0] + history,
                          n_iter=nit, n_evals=state["n_evals"], message=message,
                          fun=float(vbest))


def best_of_restarts(results):
    """The run with the lowest objective (ties: the first), with every run's value in ``restarts``.

    The marginal functions of SLMC and sparse KFD are nonconvex in ``Z``: several starts
    and the best by the objective the paper minimises (``W(Z)``, eq. 44 / eq. 62) make
    the result depend less on one start's luck.
    """
    results = list(results)
    values = np.array([r.fun for r in results], dtype=float)
    best = results[int(np.argmin(values))]
    best.restarts = values
    return best
