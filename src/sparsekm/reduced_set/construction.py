"""Reduced-set construction: new vectors ``z_j`` not restricted to the original ones.

Phase 1 (*Fast approximation*, section 4, eq. 15-17; *Input space vs. feature
space*, section V-D, eq. 74-77) iterates one-term approximations: ``z_m``
approximates the residual ``Psi_m = Psi - sum_{j<m} beta_j Phi(z_j)`` (a pre-image
problem), then *all* ``beta`` are re-computed by Proposition 8. Phase 2
(:func:`refine`, Burges' method) runs L-BFGS over all ``(z_j, beta_j)`` jointly.
Several expansions can share one set of ``z`` (section 5, eq. 18-19).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, optimize
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ..backend import DeviceKernel, checkpoint, release, resident, solver_kernel, take
from ..expansion import KernelExpansion
from ..kernels import RBF
from ..preimage import fixed_point, gradient
from ..utils.optimize import lbfgs_relative
from ..utils.progress import progress
from ..utils.validation import check_scalar
from ._base import ReducedSetResult, _check_expansion, _coef2d, _solve_kz
from ._one_term import one_term_gaussian, one_term_shared, row_blocks
from .selection import _warn_more_than_terms

__all__ = ["construct", "refine", "phase2_objective", "construct_block", "STEP_TOL"]

#: Above this many expansion vectors, start candidates are scored on a random subset.
_MAX_CANDIDATES = 4000
#: Terms up to which phase 1 forms their Gram matrix (4096^2 doubles = 128 MiB); past it,
#: ||Psi||^2 and the candidate starts' (Psi . Phi(x_i)) are blocked kernel sums instead.
_GRAM_ROWS = 4096
#: Relative step tolerance of each one-term solve. The one-term objective is flat at its
#: maximum (quadratic in the step), so 1e-4 changes it by ~1e-8 relative while needing
#: far fewer fixed-point iterations than 1e-8.
STEP_TOL = 1e-4
#: Gaussian kernels use the batched fixed point of
#: :func:`~sparsekm.reduced_set._one_term.one_term_gaussian`: single-precision GEMMs, stopped
#: on the relative change of the one-term objective (eq. 18) instead of the step size, with
#: the starts that are behind a converged one pruned.
_OBJ_TOL = 1e-6
_PRUNE = True
_FLOAT32 = True
#: L-BFGS iterations of the orthogonal step's polish (``step="orthogonal"``).
_POLISH_MAX_ITER = 50
#: The orthogonal step's denominator ``k(z, z) - k_z^T (K^z)^-1 k_z`` is floored at this
#: fraction of ``k(z, z)``: a ``z`` (almost) in the span of the others adds nothing, and
#: ``s^2 / q`` would only amplify rounding there.
_Q_FLOOR = 1e-6
_STEPS = ("one-term", "orthogonal")
#: Phase 2 stops when _REFINE_PATIENCE consecutive L-BFGS iterations each change
#: ``sum_k ||Psi_k - Psi'_k||^2`` by at most _REFINE_TOL relative: the test error stops
#: moving long before scipy's ``ftol`` would stop L-BFGS (in practice at ``max_iter``),
#: and the remaining iterations cost more than phase 1 (measurements: CHANGELOG, issue 25).
_REFINE_TOL = 1e-3
_REFINE_PATIENCE = 3


def _check_psd(kernel, owner):
    if not kernel.is_psd:
        raise ValueError(
            f"{owner} needs a positive semi-definite kernel (||Psi - Psi'||^2 must be a squared "
            f"distance); {kernel!r} is not."
        )


def _one_term_single(kernel, Y, g, starts, max_iter, tol, rng, norm2=None):
    """One-term approximation of ``Psi_m = sum_j g_j Phi(y_j)`` by the pre-image solvers.

    All starting points run in one vectorised call: the expansion is repeated once
    per start (one output column each) and ``z0`` holds one start per column; the
    column with the lowest objective ``||Psi_m||^2 - (Psi_m . Phi(z))^2 / k(z, z)``
    wins. Radial kernels use the fixed-point iteration (eq. 12/50), others L-BFGS.
    Also returns every start's end point (candidates for the orthogonal step).
    """
    n_starts = starts.shape[0]
    psi = KernelExpansion(Y, np.repeat(g[:, None], n_starts, axis=1), _base(kernel))
    mark = checkpoint(kernel)
    resident(kernel, psi.vectors, parts=(Y,))  # a copy of Y: the same device copy
    fixed = kernel.is_radial and getattr(kernel, "supports_fixed_point", True)
    solver = fixed_point if fixed else gradient
    seed = int(rng.integers(2**31 - 1))
    res = solver(psi, z0=starts, n_init=1, max_iter=max_iter, tol=tol, random_state=seed,
                 norm2=norm2, backend=_engine(kernel))
    release(kernel, mark)
    best = int(np.argmin(res.objective))
    return res.z[best], float(res.objective[best]), int(np.max(res.n_iter)), np.asarray(res.z)


def _base(kernel):
    """The :class:`~sparsekm.kernels.Kernel` behind a (possibly device-bound) kernel."""
    return kernel.kernel if isinstance(kernel, DeviceKernel) else kernel


def _engine(kernel):
    """The ``backend`` argument that hands the solver's engine on to an inner solver."""
    return kernel if isinstance(kernel, DeviceKernel) else "numpy"


def _orthogonal_gain(kernel, Y, G, Zo, chol, Zc):
    """Decrease of the Proposition-8 objective when ``z`` joins ``Zo`` (one per row of ``Zc``).

    With ``beta`` re-fitted by Proposition 8 the residual ``Psi_m`` (coefficients ``G`` on
    ``Y``) is orthogonal to every ``Phi(z_j)``, so adding ``z`` lowers
    ``sum_k ||Psi^k - Psi'^k||^2`` by exactly
    ``sum_k (Psi_m^k . Phi(z))^2 / q(z)``, ``q(z) = k(z, z) - k_z^T (K^z)^-1 k_z`` (the
    squared distance of ``Phi(z)`` to the span of the others). The papers' one-term step
    maximises the same numerator over ``k(z, z)`` instead.

    Returns gain, the inner products ``S`` (n_outputs, n_candidates), ``q``, the mask of
    floored ``q`` and ``W = (K^z)^-1 k_z`` (None without other vectors).
    """
    S = G.T @ kernel(Y, Zc)
    kzz = np.asarray(kernel.diag(Zc), dtype=np.float64)
    W = None
    q = kzz.copy()
    if Zo.shape[0]:
        Kzc = kernel(Zo, Zc)
        W = linalg.cho_solve(chol, Kzc, check_finite=False)
        q -= np.einsum("ij,ij->j", Kzc, W)
    floor = _Q_FLOOR * np.maximum(kzz, 1e-300)
    low = q < floor
    q = np.where(low, floor, q)
    return np.einsum("kc,kc->c", S, S) / q, S, q, low, W


def _orthogonal_gain_grad(kernel, Y, G, Zo, chol, Zc):
    """:func:`_orthogonal_gain` and its gradient with respect to each row of ``Zc``.

    ``grad (num / q) = grad num / q - num grad q / q^2`` with
    ``grad num = 2 sum_k S_k sum_j G_jk grad k(y_j, z)`` and
    ``grad q = grad k(z, z) - 2 sum_j W_j grad k(z_j, z)`` (``W = (K^z)^-1 k_z``).
    """
    gain, S, q, low, W = _orthogonal_gain(kernel, Y, G, Zo, chol, Zc)
    g_num = kernel.gradient_sum(Y, Zc, 2.0 * (G @ S))
    g_q = np.array(kernel.diag_gradient(Zc), dtype=np.float64)
    if W is not None:
        g_q = g_q - 2.0 * kernel.gradient_sum(Zo, Zc, W)
    g_q[low] *= _Q_FLOOR  # q = _Q_FLOOR k(z, z) there
    return gain, g_num / q[:, None] - (gain / q)[:, None] * g_q


def _orthogonal_step(kernel, Y, G, Zo, Kzo, candidates):
    """The next ``z`` maximising the exact Proposition-8 decrease (:func:`_orthogonal_gain`).

    The candidates (the one-term fixed points) are scored by the exact gain and the
    best one is polished by L-BFGS with the analytic gradient; the polished point is
    kept only if its gain is higher. Without a usable Cholesky factor of ``K^z`` (ill
    conditioned) the first candidate (the one-term winner) is returned unpolished.
    """
    chol = None
    if Zo.shape[0]:
        try:
            chol = linalg.cho_factor(Kzo, lower=True, check_finite=False)
        except linalg.LinAlgError:
            chol = None
        if chol is None or np.min(np.abs(np.diag(chol[0]))) ** 2 < _Q_FLOOR * np.max(
                np.diag(Kzo)):
            return candidates[0], 0
    gain0 = _orthogonal_gain(kernel, Y, G, Zo, chol, candidates)[0]
    best = int(np.argmax(gain0))
    scale = 1.0 / max(float(gain0[best]), 1e-300)

    def fun(theta):
        gain, grad = _orthogonal_gain_grad(kernel, Y, G, Zo, chol, theta[None, :])
        return -scale * float(gain[0]), -scale * grad.ravel()

    res = optimize.minimize(fun, candidates[best], jac=True, method="L-BFGS-B",
                            options={"maxiter": _POLISH_MAX_ITER, "ftol": 1e-12, "gtol": 1e-9})
    if np.all(np.isfinite(res.x)) and -res.fun > 1.0:
        return res.x, int(res.nit)
    return candidates[best], int(res.nit)


def construct_block(kernel, X, A, n_vectors, *, n_init, max_iter, tol_step, tol, rng,
                     Kxx, show_progress, desc, n_sweeps=0, step="one-term"):
    """Phase 1 for coefficient matrix ``A`` (n_terms, n_out) sharing one set of ``z``.

    ``Kxx``: the Gram matrix of the terms ``X``, or ``None``: ``||Psi||^2`` and the
    candidate starts' ``(Psi . Phi(x_i))`` are then blocked kernel sums, and memory stays
    bounded by the row blocks, not ``n_terms^2`` (equal to rounding).
    """
    N, d = X.shape
    n_out = A.shape[1]
    cand_idx = (np.arange(N) if N <= _MAX_CANDIDATES
                else np.sort(rng.choice(N, _MAX_CANDIDATES, replace=False)))
    if Kxx is None:  # no Gram matrix: both products in row blocks (memory O(block x N))
        norm2 = np.einsum("ij,ij->j", A, kernel.mmv(X, X, A))
        P_x = kernel.mmv(take(kernel, X, cand_idx), X, A)
    else:
        norm2 = np.einsum("ij,ij->j", A, Kxx @ A)
        P_x = Kxx[cand_idx] @ A  # (Psi . Phi(x_i)) for candidate starts, updated below
    kdiag = np.maximum(kernel.diag(take(kernel, X, cand_idx)), 1e-300)
    Z = np.empty((0, d))
    B = np.empty((0, n_out))
    Kz = np.empty((0, 0))
    C = np.empty((0, n_out))  # K^{zx} A
    Kcz = np.empty((cand_idx.size, 0))  # K(X[cand_idx], Z), grown one column per vector
    path = []
    n_iter_total = 0
    fast = type(_base(kernel)) is RBF
    # one-vs-one coefficients are zero outside each class's pairs: products by row blocks
    a_blocks = row_blocks(A) if fast and not isinstance(kernel, DeviceKernel) else None

    def one_term(Zo, Bo, Kzo, Kco, extra=None):
        """Best z for the residual Psi - sum_j Bo_j Phi(Zo_j) (eq. 76-77), n_iter."""
        mark = checkpoint(kernel)
        Y = np.vstack([X, Zo])
        resident(kernel, Y, parts=(X, Zo))  # on a device: [X; Zo] from X's device copy
        Gm = np.vstack([A, -Bo])
        resid_x = P_x - Kco @ Bo if Zo.shape[0] else P_x
        score_x = np.einsum("ij,ij->i", resid_x, resid_x) / kdiag
        order = np.argsort(-score_x)
        n_top = max(1, (n_init + 1) // 2)
        top = cand_idx[order[:n_top]]
        not_top = np.ones(cand_idx.size, dtype=bool)
        not_top[order[:n_top]] = False
        rest = cand_idx[not_top]  # sorted, as np.setdiff1d(cand_idx, top)
        n_rand = min(n_init - n_top, rest.size)
        rand = rng.choice(rest, n_rand, replace=False) if n_rand > 0 else np.empty(0, int)
        starts = X[np.concatenate([top, rand])]
        if extra is not None:
            starts = np.vstack([extra[None, :], starts])
        if fast:
            blocks = a_blocks
            if a_blocks is not None and Zo.shape[0]:  # the rows -Bo of the vectors so far
                blocks = a_blocks + [(N, N + Zo.shape[0], np.arange(n_out))]
            z, _, n_it, ends = one_term_gaussian(kernel.gamma, Y, Gm, starts, max_iter=max_iter,
                                                 tol=_OBJ_TOL, prune=_PRUNE, float32=_FLOAT32,
                                                 random_state=rng, kernel=kernel, blocks=blocks)
        elif n_out == 1:
            # ||Psi_m||^2 = A'KA - 2 Bo'K(Zo, X)A + Bo'K^z Bo: O(|Zo| N d), not O(N^2 d).
            r2 = norm2[0]
            if Zo.shape[0]:
                bo = Bo[:, 0]
                r2 = r2 - 2.0 * bo @ kernel.mmv(Zo, X, A[:, 0]) + bo @ Kzo @ bo
            z, _, n_it, ends = _one_term_single(kernel, Y, Gm[:, 0], starts, max_iter,
                                                tol_step, rng, norm2=max(float(r2), 0.0))
        else:
            z, _, n_it = one_term_shared(kernel, Y, Gm, starts, max_iter=max_iter,
                                         tol=tol_step, random_state=rng)
            ends = np.empty((0, d))
        if step == "orthogonal":
            # The one-term winner first: it is kept if the polish cannot run.
            pool = [z[None, :], ends] + ([extra[None, :]] if extra is not None else [])
            z, n_pol = _orthogonal_step(kernel, Y, Gm, Zo, Kzo, np.vstack(pool))
            n_it += n_pol
        release(kernel, mark)  # this step's [X; Zo] and the inner solver's operands
        return z, n_it

    def objective(Kz_, C_, B_):
        return np.maximum(norm2 + np.einsum("ij,ij->j", B_, Kz_ @ B_)
                          - 2.0 * np.einsum("ij,ij->j", B_, C_), 0.0)

    it = progress(range(n_vectors), disable=None if show_progress else True, desc=desc)
    for _ in it:
        z, n_it = one_term(Z, B, Kz, Kcz)
        n_iter_total += n_it
        # Grow K^z and K^{zx} A by one row/column, then Proposition 8 for all beta.
        kz_new = kernel(Z, z[None, :])[:, 0] if Z.shape[0] else np.empty(0)
        kzz = kernel.diag(z[None, :])[0]
        m = Z.shape[0]
        Kz_next = np.empty((m + 1, m + 1))
        Kz_next[:m, :m] = Kz
        Kz_next[:m, m] = kz_new
        Kz_next[m, :m] = kz_new
        Kz_next[m, m] = kzz
        k_zx = kernel(z[None, :], X)  # one kernel row: K^{zx} A and the candidates' column
        c_new = k_zx @ A
        C_next = np.vstack([C, c_new])
        B_next = _solve_kz(Kz_next, C_next)
        obj = objective(Kz_next, C_next, B_next)
        if path and obj.sum() > path[-1].sum():
            # A numerically failed step (K^z singular to working precision): with exact
            # arithmetic adding a vector never increases the error, so stop here.
            break
        Kz, C, B = Kz_next, C_next, B_next
        Kcz = np.column_stack([Kcz, k_zx[0, cand_idx]])
        Z = np.vstack([Z, z])
        path.append(obj)
        # Stop at tol, or when Psi is reproduced to rounding (finite-dimensional feature
        # spaces): further vectors would only make K^z singular.
        if np.sqrt(obj.sum()) <= tol or obj.sum() <= 1e-10 * norm2.sum():
            break
    sweep_path = []
    for _ in range(n_sweeps):
        # Backfitting: re-solve each z_j as a one-term approximation of the residual of
        # all the other vectors (started from z_j itself and the usual candidates) and
        # keep it if the Proposition 8 objective decreases.
        for j in range(Z.shape[0]):
            keep = np.arange(Z.shape[0]) != j
            B_wo = _solve_kz(Kz[np.ix_(keep, keep)], C[keep], warn=False)
            z, n_it = one_term(Z[keep], B_wo, Kz[np.ix_(keep, keep)], Kcz[:, keep], extra=Z[j])
            n_iter_total += n_it
            k_row = kernel(Z, z[None, :])[:, 0]
            Kz_try = Kz.copy()
            Kz_try[j, :] = k_row
            Kz_try[:, j] = k_row
            Kz_try[j, j] = kernel.diag(z[None, :])[0]
            C_try = C.copy()
            k_zx = kernel(z[None, :], X)
            C_try[j] = k_zx @ A
            B_try = _solve_kz(Kz_try, C_try, warn=False)
            obj_try = objective(Kz_try, C_try, B_try)
            if obj_try.sum() < obj.sum():
                Z = Z.copy()
                Z[j] = z
                Kz, C, B, obj = Kz_try, C_try, B_try, obj_try
                Kcz = Kcz.copy()
                Kcz[:, j] = k_zx[0, cand_idx]
        sweep_path.append(obj)
    return Z, B, np.asarray(path), norm2, n_iter_total, np.asarray(sweep_path)


def phase2_objective(kernel, X, A, Z, B, norm2):
    """Phase-2 objective ``sum_k ||Psi_k - Psi'_k||^2`` and its gradients.

    ``df/dB = 2 (K^z B - K^{zx} A)`` and
    ``df/dz_u = 2 sum_k beta_uk [sum_b beta_bk grad k(z_b, z_u) - sum_i alpha_ik grad k(x_i, z_u)]``,
    assembled with two ``kernel.gradient_sum`` calls (``O((N_x + N_z) N_z d)``).

    Returns
    -------
    f : float
    grad_Z : ndarray of shape (n_vectors, n_features)
    grad_B : ndarray of shape (n_vectors, n_outputs)
    """
    Kz = kernel(Z)
    if type(_base(kernel)) is RBF:
        # One kernel block K(X, Z) serves both K^{zx} A and the gradient: with
        # grad_z k(x, z) = -2 gamma k(x, z) (z - x), sum_i W_iu grad k(x_i, z_u) =
        # -2 gamma [(sum_i M_iu) z_u - (M^T X)_u], M = W o K (two GEMMs instead of three).
        Kxz = kernel(X, Z)
        C = Kxz.T @ A
        Mx = (A @ B.T) * Kxz
        Mz = (B @ B.T) * Kz
        g = -2.0 * kernel.gamma
        gZ = 2.0 * g * ((Mz.sum(axis=0) - Mx.sum(axis=0))[:, None] * Z - Mz.T @ Z + Mx.T @ X)
    else:
        C = kernel.mmv(Z, X, A)
        gZ = 2.0 * (kernel.gradient_sum(Z, Z, B @ B.T) - kernel.gradient_sum(X, Z, A @ B.T))
    KB = Kz @ B
    f = float(np.sum(norm2) + np.einsum("ij,ij->", B, KB) - 2.0 * np.einsum("ij,ij->", B, C))
    gB = 2.0 * (KB - C)
    return f, gZ, gB


def _refine_block(kernel, X, A, Z, B, max_iter, norm2, tol=_REFINE_TOL):
    """Phase 2: L-BFGS over (Z, B) minimising sum_k ||Psi^k - Psi'^k||^2.

    Stops when ``_REFINE_PATIENCE`` (three) consecutive iterations each change the
    objective by at most ``tol`` relative (:func:`~sparsekm.utils.optimize.lbfgs_relative`)
    or after ``max_iter`` iterations.
    """
    m, d = Z.shape
    n_out = A.shape[1]

    def fun(theta):
        f, gZ, gB = phase2_objective(kernel, X, A, theta[: m * d].reshape(m, d),
                                     theta[m * d:].reshape(m, n_out), norm2)
        return f, np.concatenate([gZ.ravel(), gB.ravel()])

    theta0 = np.concatenate([Z.ravel(), B.ravel()])
    f0 = fun(theta0)[0]
    x, fx, nit, _, _ = lbfgs_relative(fun, theta0, max_iter=max_iter, tol=tol, gtol=1e-10,
                                      maxcor=20, patience=_REFINE_PATIENCE)
    if not np.isfinite(fx) or fx > f0:
        return Z, B, 0
    Z_new = x[: m * d].reshape(m, d)
    B_new = _solve_kz(kernel(Z_new), kernel.mmv(Z_new, X, A))
    return Z_new, B_new, nit


def _objective(kernel, X, A, Z, B, norm2):
    if Z.shape[0] == 0 or X.shape[0] == 0:  # Psi' = 0 or Psi = 0
        return np.maximum(np.asarray(norm2, dtype=np.float64), 0.0).copy()
    Kz = kernel(Z)
    C = kernel.mmv(Z, X, A)
    return np.maximum(
        norm2 + np.einsum("ij,ij->j", B, Kz @ B) - 2.0 * np.einsum("ij,ij->j", B, C), 0.0)


def _assemble(expansion, blocks):
    """Multi-output expansion from per-output (Z, beta) blocks (block-diagonal coef)."""
    Zs = [Z for Z, _ in blocks]
    n_total = sum(Z.shape[0] for Z in Zs)
    coef = np.zeros((n_total, len(blocks)))
    start = 0
    for k, (Z, b) in enumerate(blocks):
        coef[start:start + Z.shape[0], k] = b
        start += Z.shape[0]
    return KernelExpansion(np.vstack(Zs), coef, expansion.kernel, expansion.intercept)


def construct(expansion, n_vectors, *, shared=None, refine=False, tol=0.0, n_init=5,
              max_iter=200, refine_max_iter=300, refine_tol=_REFINE_TOL, n_sweeps=0,
              step="one-term", random_state=None, progress=False, backend=None, device=None):
    """Reduced-set construction by iterated one-term approximations (phase 1 + 2).

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi = sum_i alpha_i Phi(x_i)``; single- or multi-output.
    n_vectors : int >= 1
        ``N_z``, the number of reduced-set vectors (per output when ``shared`` is
        False).
    shared : bool, default=None
        Multi-output expansions only: True approximates all outputs with one set
        of ``N_z`` vectors (section 5, eq. 18-19; each output keeps its own
        ``beta``); False approximates each output separately with its own
        ``N_z`` vectors (the result is a multi-output expansion with
        ``n_outputs * N_z`` vectors and block-diagonal coefficients). ``None``
        means False.
    refine : bool, default=False
        Run phase 2 (:func:`refine`): L-BFGS over all ``(z_j, beta_j)``.
    tol : float >= 0, default=0.0
        Stop early when ``||Psi_{m+1}|| = ||Psi - Psi'||`` falls to ``tol`` or below
        (summed over outputs). Construction also stops once ``||Psi - Psi'||^2`` is below
        ``1e-10 ||Psi||^2`` (exact reproduction to rounding, possible for finite-dimensional feature
        spaces such as polynomial kernels).
    n_init : int >= 1, default=5
        Starting points per one-term step: half are the original vectors with the
        largest one-term score ``(Psi_m . Phi(x))^2 / k(x, x)``, the rest random
        original vectors.
    max_iter : int, default=200
        Iterations of each one-term solve.
    refine_max_iter : int, default=300
        L-BFGS iterations of phase 2.
    refine_tol : float >= 0, default=1e-3
        Phase 2 stops once three consecutive L-BFGS iterations each change the objective
        by at most ``refine_tol`` relative (see :func:`refine`); ``1e-14`` in practice
        runs ``refine_max_iter`` iterations.
    n_sweeps : int >= 0, default=0
        Backfitting sweeps after phase 1 (not in the papers): each ``z_j`` in turn is
        re-solved as the one-term approximation of the residual of all other vectors
        (started from ``z_j``) and replaced when the Proposition 8 objective decreases.
        ``0`` is the papers' algorithm. ``info["objective_sweeps"]`` holds the
        objective after each sweep.
    step : {"one-term", "orthogonal"}, default="one-term"
        How each new ``z`` is chosen. ``"one-term"`` is the papers' step (eq. 76-77): the
        best one-term approximation of the residual, maximising
        ``(Psi_m . Phi(z))^2 / k(z, z)``. ``"orthogonal"`` (not in the papers) accounts
        for the Proposition-8 re-fit that follows: it maximises the exact decrease
        ``(Psi_m . Phi(z))^2 / (k(z, z) - k_z^T (K^z)^-1 k_z)`` of the objective: the
        one-term fixed points (the papers' candidates, their winner included) are scored
        by this gain and the best is polished by L-BFGS, so from a given residual the
        step is never worse than the papers'. With ``n_sweeps`` each sweep step then is a
        block-coordinate descent step in ``z_j``. About 1.3-2x the time of ``"one-term"``.
    random_state : int, Generator or None
    progress : bool, default=False
        Show a progress bar.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel sums; ``None``: :func:`sparsekm.config.get_config`.
        With ``"torch"`` the expansion's vectors ``X`` are converted to a tensor on
        ``device`` once; every kernel sum of phase 1 and 2 (the one-term iterations
        of eq. 19 included) runs there, and only the small results (``K^z``,
        ``K^{zx} A``, the one-term moments, L-BFGS gradients) come back.
    device : str or None, default=None
        torch device (``None``: the configured one, else CUDA when available).

    Returns
    -------
    ReducedSetResult
        ``objective_path[m]`` is ``||Psi - Psi'||^2`` with ``m + 1`` vectors (phase 1,
        optimal ``beta`` by Proposition 8, so it never increases); ``info`` holds
        ``objective_phase1`` when ``refine`` is True.

    Notes
    -----
    For radial kernels each one-term step is the fixed-point iteration (eq. 12/19);
    for other kernels L-BFGS on the same objective. When ``n_vectors`` is at least
    the number of terms, the expansion itself is returned (an exact copy: zero
    error).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion, RBF
    >>> from sparsekm.reduced_set import construct
    >>> rng = np.random.default_rng(0)
    >>> psi = KernelExpansion(rng.normal(size=(40, 2)), rng.normal(size=40), RBF(0.5))
    >>> res = construct(psi, 5, random_state=0)
    >>> res.expansion.n_terms, bool(res.objective < psi.norm2())
    (5, True)
    """
    expansion = _check_expansion(expansion, "construct")
    n_vectors = check_scalar(n_vectors, "n_vectors", "construct", kind="int", lower=1)
    tol = check_scalar(tol, "tol", "construct", lower=0)
    n_init = check_scalar(n_init, "n_init", "construct", kind="int", lower=1)
    max_iter = check_scalar(max_iter, "max_iter", "construct", kind="int", lower=1)
    refine_max_iter = check_scalar(refine_max_iter, "refine_max_iter", "construct", kind="int",
                                   lower=1)
    refine_tol = check_scalar(refine_tol, "refine_tol", "construct", lower=0)
    n_sweeps = check_scalar(n_sweeps, "n_sweeps", "construct", kind="int", lower=0)
    if step not in _STEPS:
        raise ValueError(f"step must be one of {_STEPS}; got {step!r}.")
    if shared not in (None, True, False):
        raise ValueError(f"shared must be True, False or None; got {shared!r}.")
    kernel = expansion.kernel
    _check_psd(kernel, "construct")
    kernel = solver_kernel(kernel, backend, device)
    rng = check_random_state(random_state)
    rng = np.random.default_rng(rng.randint(2**31 - 1))
    X = np.asarray(expansion.vectors, dtype=np.float64)
    A_all = _coef2d(expansion)
    n_out = A_all.shape[1]
    multi = expansion.is_multioutput

    if n_vectors >= expansion.n_terms and (shared or not multi or n_out == 1):
        _warn_more_than_terms("construct", n_vectors, expansion.n_terms)
        zeros = np.zeros(n_out) if multi else 0.0
        return ReducedSetResult(expansion.copy(), zeros, np.zeros((0, n_out) if multi else 0),
                                support=np.arange(expansion.n_terms), norm2=expansion.norm2())

    # The inner loops are many small GEMMs: threaded BLAS only adds contention.
    with threadpool_limits(limits=1, user_api="blas"):
        return _construct(expansion, kernel, X, A_all, n_vectors, shared, refine, tol,
                          n_init, max_iter, (refine_max_iter, refine_tol), rng, progress,
                          n_sweeps, step)


def _construct(expansion, kernel, X, A_all, n_vectors, shared, refine, tol, n_init,
               max_iter, refine_stop, rng, progress, n_sweeps, step):
    n_out = A_all.shape[1]
    multi = expansion.is_multioutput
    groups = [np.arange(n_out)] if (shared or n_out == 1) else [[k] for k in range(n_out)]
    blocks, paths, phase1, norms, n_iter, sweep_paths = [], [], [], [], 0, []
    terms = []  # each group's own terms (X_g, A_g), for the final objective
    # One independent stream per output: output k's vectors do not depend on how many
    # steps the other outputs took, so the first m vectors of an N_z-vector run are
    # exactly the m-vector run (prefixes are valid smaller reduced sets).
    seeds = rng.integers(2**31 - 1, size=len(groups))
    for grp, seed in zip(groups, seeds, strict=True):
        rng = np.random.default_rng(seed)
        A = A_all[:, grp]
        rows = np.flatnonzero(np.any(A != 0, axis=1))
        Xg, Ag = X[rows], A[rows]
        resident(kernel, Xg)  # once per output group: every kernel sum below reuses it
        resident(kernel, Ag)
        terms.append((Xg, Ag))
        if rows.size == 0 or (n_vectors >= rows.size and len(grp) == 1):
            # Exact copy of this output's own terms (none when Psi = 0).
            blocks.append((Xg, Ag))
            paths.append(np.zeros((1, 1)))
            phase1.append(np.zeros(1))
            norms.append(np.einsum("ij,ij->j", Ag, kernel.mmv(Xg, Xg, Ag)) if rows.size
                         else np.zeros(len(grp)))
            continue
        # the Gram matrix of the terms only while it is small: past _GRAM_ROWS terms its
        # two uses are kernel sums in row blocks, so memory stays bounded by blocks
        Kg = kernel(Xg) if rows.size <= _GRAM_ROWS else None
        desc = f"RS construct (output {grp[0]})" if len(groups) > 1 else "RS construct"
        Z, B, path, norm2, nit, sweeps = construct_block(
            kernel, Xg, Ag, min(n_vectors, rows.size if len(grp) == 1 else n_vectors),
            n_init=n_init, max_iter=max_iter, tol_step=STEP_TOL, tol=tol, rng=rng, Kxx=Kg,
            show_progress=progress, desc=desc, n_sweeps=n_sweeps, step=step)
        phase1.append(path[-1])
        sweep_paths.append(sweeps)
        if refine:
            Z, B, nit2 = _refine_block(kernel, Xg, Ag, Z, B, refine_stop[0], norm2,
                                       refine_stop[1])
            n_iter += nit2
        blocks.append((Z, B))
        paths.append(path)
        norms.append(norm2)
        n_iter += nit

    if len(groups) == 1:
        Z, B = blocks[0]
        out = KernelExpansion(Z, B if multi else B[:, 0], _base(kernel), expansion.intercept)
        obj = _objective(kernel, *terms[0], Z, B, norms[0])
        path = paths[0] if multi else paths[0][:, 0]
        ph1 = phase1[0] if multi else float(phase1[0][0])
        norm2 = norms[0] if multi else float(norms[0][0])
        obj = obj if multi else float(obj[0])
    else:
        out = _assemble(expansion, [(Z, B[:, 0]) for Z, B in blocks])
        obj = np.concatenate([_objective(kernel, *terms[k], Z, B, norms[k])
                              for k, (Z, B) in enumerate(blocks)])
        L = max(p.shape[0] for p in paths)
        path = np.column_stack([
            np.concatenate([p[:, 0], np.full(L - p.shape[0], p[-1, 0])]) for p in paths])
        ph1 = np.array([p[0] for p in phase1])
        norm2 = np.concatenate(norms)
    info = {"objective_phase1": ph1} if refine else {}
    if n_sweeps and sweep_paths:
        info["objective_sweeps"] = (np.column_stack([p.sum(axis=1) for p in sweep_paths])
                                    if len(groups) > 1 else sweep_paths[0].sum(axis=1))
    return ReducedSetResult(out, obj, path, support=None, norm2=norm2, n_iter=n_iter, info=info)


def refine(expansion, reduced, *, max_iter=300, tol=_REFINE_TOL):
    """Phase 2: L-BFGS over all reduced-set vectors and coefficients jointly.

    Minimises ``sum_k ||Psi^k - sum_j beta_jk Phi(z_j)||^2`` over ``Z`` and ``B``
    with the analytic gradient (``d/dB = 2 (K^z B - K^{zx} A)``;
    ``d/dz_u = 2 sum_k beta_uk [sum_b beta_bk grad k(z_u, z_b) - sum_i alpha_ik
    grad k(z_u, x_i)]``), as in Burges' reduced-set method; the coefficients are
    re-fitted by Proposition 8 at the end. The objective never increases: if
    L-BFGS fails to improve, ``reduced`` is returned unchanged.

    Parameters
    ----------
    expansion : KernelExpansion
        ``Psi``.
    reduced : KernelExpansion
        Starting ``Psi'`` (same kernel and outputs), e.g. ``construct(...).expansion``.
    max_iter : int, default=300
        Iteration limit of L-BFGS.
    tol : float >= 0, default=1e-3
        L-BFGS stops once three consecutive iterations each have a relative change of
        the objective, ``(f_{k-1} - f_k) / max(|f_{k-1}|, |f_k|)``, of at most ``tol``
        (:func:`~sparsekm.utils.optimize.lbfgs_relative`; scale-free, unlike scipy's
        ``ftol``, which is an absolute test for objectives below one). ``1e-14`` in
        practice runs ``max_iter`` iterations.

    Returns
    -------
    ReducedSetResult
        ``objective_path`` holds the objective before and after.
    """
    expansion = _check_expansion(expansion, "refine")
    reduced = _check_expansion(reduced, "refine")
    max_iter = check_scalar(max_iter, "max_iter", "refine", kind="int", lower=1)
    tol = check_scalar(tol, "tol", "refine", lower=0)
    _check_psd(expansion.kernel, "refine")
    if reduced.kernel != expansion.kernel:
        raise ValueError(
            f"reduced uses kernel {reduced.kernel!r} but the expansion uses {expansion.kernel!r}.")
    if reduced.n_features != expansion.n_features or reduced.n_outputs != expansion.n_outputs \
            or reduced.is_multioutput != expansion.is_multioutput:
        raise ValueError(
            "reduced must have the expansion's number of features and outputs; got "
            f"{reduced.n_features} features / {reduced.n_outputs} outputs against "
            f"{expansion.n_features} / {expansion.n_outputs}.")
    kernel = expansion.kernel
    X = np.asarray(expansion.vectors, dtype=np.float64)
    A = _coef2d(expansion)
    Z = np.asarray(reduced.vectors, dtype=np.float64)
    B = _coef2d(reduced)
    norm2 = np.einsum("ij,ij->j", A, kernel.mmv(X, X, A))
    before = _objective(kernel, X, A, Z, B, norm2)
    with threadpool_limits(limits=1, user_api="blas"):
        Z2, B2, nit = _refine_block(kernel, X, A, Z, B, max_iter, norm2, tol)
    after = _objective(kernel, X, A, Z2, B2, norm2)
    if after.sum() > before.sum():
        Z2, B2, after = Z, B, before
    multi = expansion.is_multioutput
    out = KernelExpansion(Z2, B2 if multi else B2[:, 0], kernel, reduced.intercept)
    path = np.vstack([before, after])
    return ReducedSetResult(out, after if multi else float(after[0]),
                            path if multi else path[:, 0], norm2=norm2 if multi else float(norm2[0]),
                            n_iter=nit)

