"""L-BFGS over the expansion vectors ``Z`` (Wu et al. 2006, section 3.3), shared by SLMC and SKFD."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize


@dataclass
class OptimizeResult:
    """Outcome of an L-BFGS run over the expansion vectors."""

    Z: np.ndarray
    solution: object
    W_history: list
    n_iter: int
    n_evals: int
    message: str


def _lbfgs_over_Z(fun, Z0, max_iter, tol, callback=None):
    """Minimise ``fun(Z) -> (value, grad, aux)`` over Z with scipy's L-BFGS-B."""
    shape = Z0.shape
    cache = {}
    state = {"n_evals": 0}

    def f(zflat):
        Z = zflat.reshape(shape)
        value, grad, aux = fun(Z)
        state["n_evals"] += 1
        cache["last"] = (zflat.copy(), value, aux)
        cache.setdefault("best", (zflat.copy(), value, aux))
        if value <= cache["best"][1]:
            cache["best"] = (zflat.copy(), value, aux)
        return value, grad.ravel()

    history = []
    v0, _, aux0 = fun(Z0)
    state["n_evals"] += 1
    cache["best"] = (Z0.ravel().copy(), v0, aux0)
    history.append(v0)

    def cb(intermediate_result):
        history.append(float(intermediate_result.fun))
        if callback is not None:
            callback(len(history) - 1, float(intermediate_result.fun))

    res = minimize(f, Z0.ravel(), jac=True, method="L-BFGS-B", callback=cb,
                   options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-12, "maxcor": 10})
    zbest, vbest, auxbest = cache["best"]
    return OptimizeResult(Z=zbest.reshape(shape), solution=auxbest, W_history=history,
                          n_iter=int(res.nit), n_evals=state["n_evals"], message=str(res.message))
