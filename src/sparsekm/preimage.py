"""Approximate pre-images of kernel expansions: the way back from feature space.

Given ``Psi = sum_i gamma_i Phi(x_i)`` (a :class:`~sparsekm.KernelExpansion`), find
an input ``z`` whose image ``Phi(z)`` approximates ``Psi``. Following Schölkopf et
al., *Input space vs. feature space in kernel-based methods* (IEEE TNN 1999,
section IV) and *Fast approximation of support vector kernel expansions* (DAGM
1998), the solvers maximise the projection objective (eq. 46 / eq. 8)

    (Psi . Phi(z))^2 / k(z, z),

i.e. they minimise the distance of ``Psi`` to the line spanned by ``Phi(z)``
(eq. 45 / eq. 7)::

    objective(z) = min_beta ||Psi - beta Phi(z)||^2 = ||Psi||^2 - (Psi . Phi(z))^2 / k(z, z)

with the optimal scale ``beta = (Psi . Phi(z)) / k(z, z)`` (the one-term reduced-set
coefficient). For radial kernels ``k(z, z)`` is constant, so a stationary point of
the objective is also a stationary point of the plain pre-image distance
``rho(z) = ||Psi - Phi(z)||^2`` (eq. 41) whenever ``Psi . Phi(z) > 0``.

Solvers
-------
:func:`fixed_point`
    The iteration of eq. 12/50, generalised through the profile derivative ``k'``
    (eq. 10/48) to every radial kernel (RBF, inverse multiquadric).
:func:`gradient`
    L-BFGS on eq. 46 for any kernel with gradients (polynomial, sigmoid, RBF, ...).
:func:`exact_dot_product`
    Proposition 6: the closed-form pre-image for kernels that are invertible
    functions of ``x . y`` (odd-degree polynomial with ``coef0 >= 0``, sigmoid,
    linear), exact whenever a pre-image exists.
:func:`preimage`
    Chooses one of the above from the kernel (``method="auto"``).

All solvers are vectorised over the outputs of a multi-output expansion: column
``u`` of ``coef`` is one expansion ``Psi_u`` and gets its own pre-image ``z_u``,
computed together with all the others (denoising thousands of points is one
multi-output expansion over the training points, not a Python loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from sklearn.utils import check_random_state

from .backend import resident, solver_kernel, take
from .expansion import KernelExpansion
from .kernels import Kernel, Linear, Polynomial, Sigmoid
from .utils.validation import check_array, check_scalar

__all__ = [
    "PreimageResult",
    "fixed_point",
    "gradient",
    "exact_dot_product",
    "preimage",
    "preimage_objective",
    "normalise_method",
]

# |denominator| below this fraction of sum_i |gamma_i k'(r2_i)| counts as vanishing.
_DENOMINATOR_RTOL = 1e-10
_TINY = np.finfo(np.float64).tiny


@dataclass
class PreimageResult:
    """Result of a pre-image computation.

    For a single-output expansion every field is a scalar (``z`` a 1-D array); for
    a multi-output expansion the fields hold one entry per output.

    Attributes
    ----------
    z : ndarray of shape (n_features,) or (n_outputs, n_features)
        The approximate pre-image(s).
    beta : float or ndarray of shape (n_outputs,)
        Optimal scale ``(Psi . Phi(z)) / k(z, z)``: ``beta Phi(z)`` is the best
        one-term approximation of ``Psi`` with vector ``z`` (eq. 45).
    objective : float or ndarray of shape (n_outputs,)
        ``min_beta ||Psi - beta Phi(z)||^2 = ||Psi||^2 - (Psi . Phi(z))^2 / k(z, z)``
        (eq. 45/46), clipped at 0.
    rho : float or ndarray of shape (n_outputs,)
        ``||Psi - Phi(z)||^2`` (eq. 41), clipped at 0.
    n_iter : int or ndarray of shape (n_outputs,)
        Iterations used by the start that produced ``z``.
    converged : bool or ndarray of shape (n_outputs,)
        Whether that start met the convergence criterion.
    method : str
        The solver that produced the result.
    """

    z: np.ndarray
    beta: object
    objective: object
    rho: object
    n_iter: object
    converged: object
    method: str = ""


# -- shared helpers -----------------------------------------------------------


def _check_expansion(expansion, owner):
    if not isinstance(expansion, KernelExpansion):
        raise TypeError(
            f"{owner} needs a sparsekm.KernelExpansion; got {type(expansion).__name__}."
        )
    if expansion.n_terms == 0:
        raise ValueError(f"{owner} needs an expansion with at least one term; got an empty "
                         "expansion (Psi = 0 has no pre-image).")
    X = np.asarray(expansion.vectors, dtype=np.float64)
    G = np.asarray(expansion.coef, dtype=np.float64)
    if G.ndim == 1:
        G = G[:, None]
    return X, G, not expansion.is_multioutput


def _check_z0(z0, n_outputs, n_features, owner, name="z0"):
    if z0 is None:
        return None
    z0 = check_array(z0, name, ndim=None, dtype=np.float64)
    if z0.ndim == 1:
        if z0.shape[0] != n_features:
            raise ValueError(
                f"{name} has {z0.shape[0]} features, but the expansion has {n_features} features."
            )
        z0 = np.broadcast_to(z0, (n_outputs, n_features))
    elif z0.ndim == 2:
        if z0.shape != (n_outputs, n_features):
            raise ValueError(
                f"{name} must have shape (n_features,) = ({n_features},) or (n_outputs, "
                f"n_features) = {(n_outputs, n_features)}; got {z0.shape}."
            )
    else:
        raise ValueError(f"{name} must be 1-D or 2-D; got shape {z0.shape} in {owner}.")
    return np.array(z0, dtype=np.float64)


def _check_common(expansion, z0, n_init, max_iter, tol, X_init, owner):
    X, G, single = _check_expansion(expansion, owner)
    n_init = check_scalar(n_init, "n_init", owner, kind="int", lower=1)
    max_iter = check_scalar(max_iter, "max_iter", owner, kind="int", lower=1)
    tol = check_scalar(tol, "tol", owner, lower=0, lower_inclusive=False)
    z0 = _check_z0(z0, G.shape[1], X.shape[1], owner)
    if X_init is not None:
        X_init = check_array(X_init, "X_init", dtype=np.float64)
        if X_init.shape[1] != X.shape[1]:
            raise ValueError(
                f"X_init has {X_init.shape[1]} features, but the expansion has {X.shape[1]} "
                "features."
            )
    return X, G, single, z0, n_init, max_iter, tol, X_init


def _inner_with_images(kernel, X, G, Z):
    """``s[u] = Psi_u . Phi(z_u) = sum_i G[i, u] k(x_i, z_u)`` (the engine's weighted sums)."""
    return np.asarray(kernel.weighted_sums(X, Z, G).total, dtype=np.float64)


def _norm2(kernel, X, G, known=None, owner=None):
    """``||Psi_u||^2`` per output: ``known`` (validated) when the caller has it, else one
    ``O(n^2 d)`` kernel product."""
    if known is None:
        KG = kernel.mmv(X, X, G)
        return np.maximum(np.einsum("iu,iu->u", G, KG), 0.0)
    known = np.asarray(known, dtype=np.float64)
    if known.ndim > 1 or known.size not in (1, G.shape[1]):
        raise ValueError(f"norm2 of {owner} must be a scalar or have one value per output "
                         f"({G.shape[1]}); got shape {known.shape}.")
    if not np.all(np.isfinite(known)) or np.any(known < 0):
        raise ValueError(f"norm2 of {owner} must be finite and >= 0; got {known!r}.")
    return np.broadcast_to(known, (G.shape[1],)).copy()


def _evaluate(kernel, X, G, Z, norm2):
    """beta, objective, rho for pre-images ``Z`` (one per output)."""
    s = _inner_with_images(kernel, X, G, Z)
    kzz = np.asarray(kernel.diag(Z), dtype=np.float64)
    safe = np.where(kzz > _TINY, kzz, np.inf)
    beta = s / safe
    objective = np.maximum(norm2 - s * beta, 0.0)
    rho = np.maximum(norm2 - 2.0 * s + kzz, 0.0)
    return beta, objective, rho


def preimage_objective(expansion, Z):
    """Evaluate a candidate pre-image: ``(beta, objective, rho)``.

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi`` (one column of ``coef`` per output).
    Z : array-like of shape (n_features,) or (n_outputs, n_features)
        One candidate pre-image per output.

    Returns
    -------
    beta, objective, rho : float or ndarray of shape (n_outputs,)
        The optimal scale ``(Psi . Phi(z)) / k(z, z)``, the projection distance
        ``||Psi||^2 - (Psi . Phi(z))^2 / k(z, z)`` (eq. 45) and ``||Psi - Phi(z)||^2``
        (eq. 41).
    """
    X, G, single = _check_expansion(expansion, "preimage_objective")
    Z = _check_z0(Z, G.shape[1], X.shape[1], "preimage_objective", name="Z")
    out = _evaluate(expansion.kernel, X, G, Z, _norm2(expansion.kernel, X, G))
    if single:
        return tuple(float(a[0]) for a in out)
    return out


def _draw_from_vectors(X, G, rng, columns=None):
    """One expansion vector per output, drawn with probability proportional to |coef|."""
    A = np.abs(G if columns is None else G[:, columns])
    total = A.sum(axis=0)
    cdf = np.cumsum(A, axis=0)
    r = rng.uniform(size=A.shape[1]) * total
    idx = np.minimum((cdf < r[None, :]).sum(axis=0), X.shape[0] - 1)
    # Outputs whose coefficients are all zero: any vector will do.
    zero = total <= 0
    if zero.any():
        idx[zero] = rng.randint(0, X.shape[0], size=int(zero.sum()))
    return X[idx].copy()


def _starts(X, G, z0, n_init, X_init, rng):
    """Generator of starting points, one (n_outputs, n_features) array per start.

    Start 0 is ``z0`` if given, else the vector with the largest |coef| of each
    output; later starts alternate between draws from the expansion's vectors
    (probability proportional to |coef|) and random rows of ``X_init``.
    """
    m = G.shape[1]
    for j in range(n_init):
        if j == 0:
            if z0 is not None:
                yield z0.copy()
            else:
                yield X[np.argmax(np.abs(G), axis=0)].copy()
        elif X_init is not None and j % 2 == 0:
            yield X_init[rng.randint(0, X_init.shape[0], size=m)].copy()
        else:
            yield _draw_from_vectors(X, G, rng)


def _finish(kernel, X, G, single, Z, n_iter, converged, norm2, method):
    beta, objective, rho = _evaluate(kernel, X, G, Z, norm2)
    if single:
        return PreimageResult(Z[0].copy(), float(beta[0]), float(objective[0]), float(rho[0]),
                              int(n_iter[0]), bool(converged[0]), method)
    return PreimageResult(Z, beta, objective, rho, n_iter.astype(int), converged.astype(bool),
                          method)


# -- fixed-point iteration ---------------------------------------------------------


def _fixed_point_run(kernel, X, G, Z, max_iter, tol, rng):
    """Iterate eq. 10/48 from ``Z`` for all outputs at once; returns Z, n_iter, converged."""
    m, d = Z.shape
    n_iter = np.zeros(m, dtype=int)
    converged = np.zeros(m, dtype=bool)
    active = np.arange(m)
    x_sq = np.einsum("ij,ij->i", X, X)
    resident(kernel, x_sq)
    for it in range(1, max_iter + 1):
        Za = Z[active]
        Ga = take(kernel, G, active, axis=1)
        # eq. 10/48: denominator sum_i gamma_i k'(.), numerator sum_i gamma_i k'(.) x_i
        den, num, mag = kernel.weighted_sums(X, Za, Ga, derivative=True, moment=True,
                                             absolute=True, X_sqnorms=x_sq, check_input=False)
        vanishing = np.abs(den) <= _DENOMINATOR_RTOL * mag + _TINY
        ok = ~vanishing
        Znew = Za.copy()
        Znew[ok] = num[ok] / den[ok, None]
        change = np.sqrt(np.einsum("ij,ij->i", Znew - Za, Znew - Za))
        scale = 1.0 + np.sqrt(np.einsum("ij,ij->i", Za, Za))
        done = ok & (change <= tol * scale)
        if vanishing.any():
            # Psi . Phi(z) ~ 0 (eq. 12 remark): restart those outputs elsewhere.
            Znew[vanishing] = _draw_from_vectors(X, G, rng, columns=active[vanishing])
        Z[active] = Znew
        n_iter[active] = it
        converged[active[done]] = True
        active = active[~done]
        if active.size == 0:
            break
    return Z, n_iter, converged


def fixed_point(expansion, z0=None, *, n_init=5, max_iter=200, tol=1e-8, X_init=None,
                random_state=None, norm2=None, backend=None, device=None):
    """Pre-image by the fixed-point iteration of eq. 10/48 (radial kernels).

    For a radial kernel ``k(x, z) = k(||x - z||^2)``, ``k(z, z)`` is constant and
    the stationary points of ``(Psi . Phi(z))^2`` satisfy (eq. 10/48)::

        z = sum_i gamma_i k'(||x_i - z||^2) x_i / sum_i gamma_i k'(||x_i - z||^2),

    which is iterated (eq. 12/50 for the Gaussian, where the denominator is
    proportional to ``Psi . Phi(z)``). The iteration runs for all outputs of a
    multi-output expansion at once.

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi = sum_i gamma_i Phi(x_i)`` with a radial kernel; a multi-output
        expansion gets one pre-image per output column.
    z0 : array-like of shape (n_features,) or (n_outputs, n_features), default=None
        Starting point of the first start (e.g. the noisy input when denoising).
        ``None``: the expansion vector with the largest ``|gamma_i|``.
    n_init : int, default=5
        Number of starts; later starts are drawn from the expansion's vectors with
        probability proportional to ``|gamma_i|`` and, alternately, from random rows
        of ``X_init``. The start with the lowest objective is kept per output.
    max_iter : int, default=200
        Iterations per start.
    tol : float, default=1e-8
        Stop when ``||z_{n+1} - z_n|| <= tol (1 + ||z_n||)``.
    X_init : array-like of shape (n_samples, n_features), default=None
        Extra candidate starting points (e.g. the training inputs).
    random_state : int, RandomState instance or None, default=None
        Seed of the random starts and of the restarts after a vanishing
        denominator.
    norm2 : float or array-like of shape (n_outputs,), default=None
        ``||Psi||^2`` per output when the caller already knows it (e.g. RS
        construction, whose residual norm is its objective); saves the one
        ``O(n_terms^2 d)`` kernel product of the reported objective.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel sums; ``None``: :func:`sparsekm.config.get_config`
        (RS construction passes its own :class:`~sparsekm.backend.DeviceKernel`).
        With ``"torch"`` the expansion's vectors are put on ``device`` once and
        every iteration's kernel sums run there (:func:`sparsekm.backend.solver_kernel`).
    device : str or None, default=None
        torch device (``None``: the configured one, else CUDA when available).

    Returns
    -------
    PreimageResult

    Raises
    ------
    ValueError
        If the kernel is not radial (use :func:`gradient` or
        :func:`exact_dot_product`), or on invalid parameters.
    TypeError
        If ``expansion`` is not a :class:`~sparsekm.KernelExpansion`.

    Notes
    -----
    When the denominator ``sum_i gamma_i k'(.)`` vanishes (``Psi . Phi(z) ~ 0`` for
    the Gaussian) the iteration is undefined; the affected outputs are restarted
    from a fresh draw, as the paper suggests after eq. 12/50.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion, RBF
    >>> psi = KernelExpansion([[0.0, 0.0], [0.2, 0.0]], [1.0, 1.0], RBF(1.0))
    >>> res = fixed_point(psi, random_state=0)
    >>> np.round(res.z, 6) + 0.0  # the midpoint of the two centres
    array([0.1, 0. ])
    """
    owner = "fixed_point"
    X, G, single, z0, n_init, max_iter, tol, X_init = _check_common(
        expansion, z0, n_init, max_iter, tol, X_init, owner)
    kernel = expansion.kernel
    if not kernel.is_radial:
        raise ValueError(
            f"fixed_point needs a radial kernel k(||x - z||^2) (RBF, InverseMultiquadric); got "
            f"{kernel!r}. Use gradient() or exact_dot_product() for this kernel."
        )
    if not getattr(kernel, "supports_fixed_point", True):
        raise ValueError(
            f"fixed_point does not apply to {kernel!r}: its profile derivative k' is unbounded "
            "at r = 0 (a cusp), and eq. 10 divides by sums of k'. Use gradient().")
    kernel = solver_kernel(kernel, backend, device)
    resident(kernel, X)  # the expansion's vectors go to the device once
    resident(kernel, G)  # and their (n_terms, n_outputs) coefficients
    rng = check_random_state(random_state)
    norm2 = _norm2(kernel, X, G, norm2, owner)
    best = None
    for Z in _starts(X, G, z0, n_init, X_init, rng):
        Z, n_iter, conv = _fixed_point_run(kernel, X, G, Z, max_iter, tol, rng)
        best = _keep_best(kernel, X, G, norm2, best, Z, n_iter, conv)
    Z, _, n_iter, conv = best
    return _finish(kernel, X, G, single, Z, n_iter, conv, norm2, "fixed-point")


def _keep_best(kernel, X, G, norm2, best, Z, n_iter, conv):
    _, objective, _ = _evaluate(kernel, X, G, Z, norm2)
    if best is None:
        return [Z.copy(), objective, n_iter.copy(), conv.copy()]
    # Ties (within rounding) keep the earlier start, so z0 wins when it is as good.
    better = objective < best[1] - 1e-12 * (1.0 + norm2)
    best[0][better] = Z[better]
    best[1][better] = objective[better]
    best[2][better] = n_iter[better]
    best[3][better] = conv[better]
    return best


# -- gradient-based solver ------------------------------------------------------------


def _gradient_run(kernel, X, G, Z0, norm2, max_iter, tol):
    m, d = Z0.shape
    # Each output's objective is scaled by 1/||Psi_u||^2, so every term lies in [0, 1].
    scale = 1.0 / np.maximum(norm2, _TINY)

    def fun(flat):
        Z = flat.reshape(m, d)
        if not np.isfinite(flat).all():
            return np.inf, np.zeros_like(flat)
        s = _inner_with_images(kernel, X, G, Z)
        kzz = np.asarray(kernel.diag(Z), dtype=np.float64)
        if not (kzz > _TINY).all() and not kernel.is_psd:
            # eq. 46 needs k(z, z) > 0; a non-PSD kernel (sigmoid with theta < 0) has
            # points where it is <= 0: outside the domain, so L-BFGS backtracks.
            return np.inf, np.zeros_like(flat)
        kzz = np.maximum(kzz, _TINY)
        grad_s = kernel.gradient_sum(X, Z, G)
        grad_k = kernel.diag_gradient(Z)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            f = 1.0 - scale * s * s / kzz
            # d/dz [-s^2 / kzz] = -2 s grad_s / kzz + s^2 grad_kzz / kzz^2
            g = (-2.0 * (scale * s / kzz))[:, None] * grad_s
            g += (scale * s * s / (kzz * kzz))[:, None] * grad_k
        if not (np.isfinite(f).all() and np.isfinite(g).all()):
            return np.inf, np.zeros_like(flat)
        return float(f.sum()), g.ravel()

    res = minimize(fun, Z0.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "gtol": tol, "ftol": tol * tol,
                            "maxcor": 20})
    if not np.isfinite(res.fun):
        return Z0.copy(), np.full(m, int(res.nit)), np.zeros(m, dtype=bool)
    Z = res.x.reshape(m, d)
    _, g = fun(res.x)
    gnorm = np.abs(g.reshape(m, d)).max(axis=1)
    # L-BFGS reports on the stacked problem; an output also counts as converged when
    # its own gradient is small.
    converged = np.full(m, bool(res.success)) | (gnorm <= tol)
    return Z, np.full(m, int(res.nit)), converged


def gradient(expansion, z0=None, *, n_init=5, max_iter=200, tol=1e-8, X_init=None,
             random_state=None, norm2=None, backend=None, device=None):
    """Pre-image by L-BFGS on the projection objective (eq. 45/46), any kernel.

    Maximises ``(Psi . Phi(z))^2 / k(z, z)`` (eq. 46), i.e. minimises
    ``||Psi||^2 - (Psi . Phi(z))^2 / k(z, z)`` (eq. 45), with gradients from
    :meth:`Kernel.gradient_sum`. For a multi-output expansion the (separable)
    objectives of all outputs are summed, each scaled by ``1/||Psi_u||^2``, and
    minimised by one L-BFGS run on the stacked variables.

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi`` with a radial or dot-product kernel (RBF, inverse multiquadric,
        polynomial, sigmoid, linear).
    z0, n_init, max_iter, tol, X_init, random_state, norm2, backend, device
        As in :func:`fixed_point`; ``max_iter`` bounds the L-BFGS iterations per
        start and ``tol`` is its gradient tolerance (``gtol``).

    Returns
    -------
    PreimageResult

    Raises
    ------
    ValueError
        If the kernel has no gradient of ``k(z, z)`` (neither radial nor
        dot-product), or on invalid parameters.
    TypeError
        If ``expansion`` is not a :class:`~sparsekm.KernelExpansion`.

    Notes
    -----
    For homogeneous polynomial kernels eq. 46 is invariant to rescaling ``z``:
    any point of the optimal ray is returned (``beta`` carries the scale).
    """
    owner = "gradient"
    X, G, single, z0, n_init, max_iter, tol, X_init = _check_common(
        expansion, z0, n_init, max_iter, tol, X_init, owner)
    kernel = expansion.kernel
    if not isinstance(kernel, Kernel) or not (kernel.is_radial or kernel.is_dot_product
                                              or getattr(kernel, "input_gradient", False)):
        raise ValueError(
            f"gradient needs a radial or dot-product kernel, or one with an input gradient "
            f"(Laplacian); got {kernel!r}."
        )
    kernel = solver_kernel(kernel, backend, device)
    resident(kernel, X)  # the expansion's vectors go to the device once
    resident(kernel, G)  # and their (n_terms, n_outputs) coefficients
    rng = check_random_state(random_state)
    norm2 = _norm2(kernel, X, G, norm2, owner)
    best = None
    for Z in _starts(X, G, z0, n_init, X_init, rng):
        if not kernel.is_radial:
            # k(z, z) = 0 at z = 0 for homogeneous kernels: nudge exact zeros.
            zero = ~Z.any(axis=1)
            if zero.any():
                Z[zero] = rng.normal(scale=1e-3, size=(int(zero.sum()), Z.shape[1]))
        Z, n_iter, conv = _gradient_run(kernel, X, G, Z, norm2, max_iter, tol)
        best = _keep_best(kernel, X, G, norm2, best, Z, n_iter, conv)
    Z, _, n_iter, conv = best
    return _finish(kernel, X, G, single, Z, n_iter, conv, norm2, "gradient")


# -- Proposition 6 ---------------------------------------------------------------------


def _inverse_profile(kernel):
    """``f^{-1}`` and the open interval where it is defined, or None if not invertible."""
    if isinstance(kernel, Linear):
        return (lambda v: v), (-np.inf, np.inf)
    if isinstance(kernel, Polynomial):
        d, c, g = kernel.degree, kernel.coef0, kernel.gamma
        if d % 2 == 0:
            return None
        return (lambda v: (np.sign(v) * np.abs(v) ** (1.0 / d) - c) / g), (-np.inf, np.inf)
    if isinstance(kernel, Sigmoid):
        if kernel.kappa == 0:
            return None
        kappa, theta = kernel.kappa, kernel.theta
        return (lambda v: (np.arctanh(v) - theta) / kappa), (-1.0, 1.0)
    return None


def _is_invertible_dot_product(kernel):
    return _inverse_profile(kernel) is not None


def exact_dot_product(expansion):
    """Closed-form pre-image for kernels invertible in ``x . y`` (Proposition 6).

    If ``k(x, y) = f(x . y)`` with ``f`` invertible and ``Psi = Phi(z)`` for some
    ``z``, then with the standard basis ``e_1, ..., e_N`` (eq. 37)::

        z = sum_i f^{-1}( sum_j gamma_j k(x_j, e_i) ) e_i.

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi`` with a linear kernel, an odd-degree polynomial kernel
        ``(gamma x.y + coef0)^d`` with ``coef0 >= 0`` (eq. 38) or a sigmoid kernel
        with ``kappa != 0`` (eq. 39).

    Returns
    -------
    PreimageResult
        ``rho`` tells whether the pre-image is exact (``rho ~ 0``); when ``Psi`` has
        no pre-image the formula still returns a point, which is then only a
        heuristic. ``converged`` is False for outputs where ``f^{-1}`` was
        undefined (sigmoid values outside (-1, 1), clipped).

    Raises
    ------
    ValueError
        If the kernel is not an invertible function of ``x . y`` (radial kernels,
        even-degree polynomials, a sigmoid with ``kappa = 0``).
    TypeError
        If ``expansion`` is not a :class:`~sparsekm.KernelExpansion`.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion, Polynomial
    >>> psi = KernelExpansion([[0.5, -1.0]], [1.0], Polynomial(degree=3, coef0=1.0))
    >>> np.round(exact_dot_product(psi).z, 8)
    array([ 0.5, -1. ])
    """
    X, G, single = _check_expansion(expansion, "exact_dot_product")
    kernel = expansion.kernel
    inv = _inverse_profile(kernel)
    if inv is None:
        raise ValueError(
            "exact_dot_product (Proposition 6) needs a kernel that is an invertible function of "
            "x . y: Linear, Polynomial with odd degree (coef0 >= 0) or Sigmoid with kappa != 0; "
            f"got {kernel!r}."
        )
    finv, (lo, hi) = inv
    # sum_j gamma_j k(x_j, e_i) for the whole basis e_1..e_N at once: K(E, X) @ G, E = I.
    V = kernel.mmv(np.eye(X.shape[1]), X, G).T  # (n_outputs, n_features)
    inside = (V > lo) & (V < hi)
    eps = 1e-15
    Vc = np.clip(V, lo + eps, hi - eps) if np.isfinite(lo) else V
    Z = np.asarray(finv(Vc), dtype=np.float64)
    converged = inside.all(axis=1)
    norm2 = _norm2(kernel, X, G)
    return _finish(kernel, X, G, single, Z, np.zeros(Z.shape[0], int), converged, norm2,
                   "exact")


# -- dispatcher ------------------------------------------------------------------------

_METHODS = ("auto", "fixed-point", "gradient", "exact")


def normalise_method(method, owner="preimage"):
    """A pre-image method's canonical name (any case, ``_`` or ``-``); a ValueError
    naming ``owner`` for an unknown one."""
    if not isinstance(method, str) or method.replace("_", "-").lower() not in _METHODS:
        raise ValueError(
            f"The 'method' parameter of {owner} must be one of {list(_METHODS)}. "
            f"Got {method!r} instead."
        )
    return method.replace("_", "-").lower()


def preimage(expansion, method="auto", **kwargs):
    """Approximate pre-image(s) of ``expansion`` with the solver suited to its kernel.

    Parameters
    ----------
    expansion : KernelExpansion
    method : {"auto", "fixed-point", "gradient", "exact"}, default="auto"
        ``"auto"``: :func:`fixed_point` for radial kernels; for kernels invertible
        in ``x . y`` the exact formula of Proposition 6, refined by
        :func:`gradient` (started from the exact answer) for outputs where it is not
        an exact pre-image (``rho > 1e-10 ||Psi||^2``); :func:`gradient` otherwise.
    **kwargs
        Passed to the solver (``z0``, ``n_init``, ``max_iter``, ``tol``, ``X_init``,
        ``random_state``); ignored by ``"exact"``.

    Returns
    -------
    PreimageResult
    """
    method = normalise_method(method)
    if method == "fixed-point":
        return fixed_point(expansion, **kwargs)
    if method == "gradient":
        return gradient(expansion, **kwargs)
    if method == "exact":
        return exact_dot_product(expansion)
    if not isinstance(expansion, KernelExpansion):
        raise TypeError(f"preimage needs a sparsekm.KernelExpansion; got {type(expansion).__name__}.")
    kernel = expansion.kernel
    if kernel.is_radial and getattr(kernel, "supports_fixed_point", True):
        return fixed_point(expansion, **kwargs)
    if not _is_invertible_dot_product(kernel):
        return gradient(expansion, **kwargs)
    exact = exact_dot_product(expansion)
    norm2 = np.atleast_1d(expansion.norm2())
    rho = np.atleast_1d(exact.rho)
    bad = ~(rho <= 1e-10 * np.maximum(norm2, 1.0)) | ~np.atleast_1d(exact.converged)
    if not bad.any():
        return exact
    kw = dict(kwargs)
    kw["z0"] = exact.z
    refined = gradient(expansion, **kw)
    if not expansion.is_multioutput:
        return refined if refined.objective < exact.objective else exact
    take = bad & (refined.objective < exact.objective)
    Z = np.where(take[:, None], refined.z, exact.z)
    X, G, _ = _check_expansion(expansion, "preimage")
    n_iter = np.where(take, refined.n_iter, exact.n_iter)
    conv = np.where(take, refined.converged, exact.converged)
    # the solvers' ||Psi||^2 (clipped at 0), so rho/objective match preimage_objective
    return _finish(kernel, X, G, False, Z, n_iter, conv, _norm2(kernel, X, G), "exact+gradient")
