"""One-term step of the simultaneous approximation (*Fast approximation*, section 5).

For expansions ``Psi^1, ..., Psi^n`` sharing their vectors ``Y`` (coefficient
matrix ``G`` of shape (N, n)), find ``z`` maximising

    S(z) = sum_k (Psi^k . Phi(z))^2 / k(z, z)                         (eq. 18)

(minimising the summed projection distances). For radial kernels the stationarity
condition gives the fixed-point iteration of eq. 19, generalised from the Gaussian
to any profile ``k(r2)``::

    z <- sum_j c_j k'(||y_j - z||^2) y_j / sum_j c_j k'(||y_j - z||^2),
    c_j = sum_k G_jk (Psi^k . Phi(z)),

run for a batch of starting points at once. Other kernels use L-BFGS on ``-S`` with
the gradient assembled by ``kernel.gradient_sum``. Every kernel sum goes through the
engine: the projections ``Psi^k . Phi(z)`` through ``kernel.mmv``, the sums of
eq. 19 through ``kernel.weighted_sums(..., derivative=True)`` with weights computed
from the kernel values (one distance computation per iteration). With a single output this is
the one-term pre-image problem; ``construct`` uses :mod:`sparsekm.preimage` for that
case and this module for the shared case.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ..backend import DeviceKernel, resident

__all__ = ["one_term_shared", "shared_score"]


def _projections(kernel, Y, G, Z):
    """``F[b, k] = Psi^k . Phi(z_b) = sum_j G[j, k] k(y_j, z_b)``, shape (B, n_out)."""
    return kernel.mmv(Z, Y, G)


def shared_score(kernel, Y, G, Z):
    """``S(z) = sum_k (Psi^k . Phi(z))^2 / k(z, z)`` for each row of ``Z`` (eq. 18)."""
    F = _projections(kernel, Y, G, Z)
    kzz = kernel.diag(Z)
    return np.einsum("bk,bk->b", F, F) / np.maximum(kzz, 1e-300)


def _fixed_point_radial(kernel, Y, G, Z, max_iter, tol, rng):
    y_sq = np.einsum("ij,ij->i", Y, Y)
    resident(kernel, y_sq)
    G_k = resident(kernel, G)  # the weights are formed where the kernel block lives

    def weights(K):
        # c_j of eq. 19, one column per start: sum_k G_jk (Psi^k . Phi(z)), with the
        # projections Psi^k . Phi(z) = (G^T K)_k
        return G_k @ (G_k.T @ K)

    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        # sum_j c_j k'(r2_j), sum_j c_j k'(r2_j) y_j and sum_j |c_j k'(r2_j)|
        den, num, scale = kernel.weighted_sums(Y, Z, weights, derivative=True, moment=True,
                                               absolute=True, X_sqnorms=y_sq, check_input=False)
        bad = np.abs(den) <= 1e-12 * np.maximum(scale, 1e-300)
        if bad.any():
            # Denominator ~ 0: the iteration is undefined; restart from a random vector.
            den[bad] = 1.0
        Z_new = num / den[:, None]
        if bad.any():
            Z_new[bad] = Y[rng.integers(Y.shape[0], size=int(bad.sum()))]
        step = np.max(np.abs(Z_new - Z), axis=1)
        Z = Z_new
        if np.all(step <= tol) and not bad.any():
            break
    return Z, n_iter


def _lbfgs_general(kernel, Y, G, Z0, max_iter, tol):
    B, d = Z0.shape

    def fun(theta):
        Z = theta.reshape(B, d)
        F = _projections(kernel, Y, G, Z)  # (B, n_out)
        num = np.einsum("bk,bk->b", F, F)
        kzz = np.maximum(kernel.diag(Z), 1e-300)
        # grad of num_b = 2 sum_k F_bk sum_j G_jk grad k(y_j, z_b)
        g_num = kernel.gradient_sum(Y, Z, 2.0 * (G @ F.T))
        g_kzz = kernel.diag_gradient(Z)
        S = num / kzz
        g = g_num / kzz[:, None] - (num / kzz**2)[:, None] * g_kzz
        return -S.sum(), -g.ravel()

    res = optimize.minimize(fun, Z0.ravel(), jac=True, method="L-BFGS-B",
                            options={"maxiter": max_iter, "gtol": tol, "ftol": 1e-15})
    return res.x.reshape(B, d), int(res.nit)


def one_term_shared(kernel, Y, G, Z0, *, max_iter=200, tol=1e-6, random_state=None):
    """Best single ``z`` for the simultaneous one-term approximation (eq. 18-19).

    Parameters
    ----------
    kernel : Kernel
    Y : ndarray of shape (N, n_features)
        Vectors of the expansions ``Psi^k`` (eq. 76-77: original vectors followed by
        the reduced-set vectors found so far).
    G : ndarray of shape (N, n_outputs)
        Their coefficients (eq. 76: ``alpha`` followed by ``-beta``).
    Z0 : ndarray of shape (n_init, n_features)
        Starting points; every one is iterated and the best result returned.
        With a :class:`~sparsekm.backend.DeviceKernel` as ``kernel`` every kernel sum
        runs on its device, ``Y`` converted once (:func:`~sparsekm.backend.resident`).
    max_iter : int
    tol : float
        Radial kernels: stop when no coordinate moves by more than ``tol``.
        Others: L-BFGS gradient tolerance.
    random_state : numpy Generator
        Used only to restart a start whose fixed-point denominator vanishes.

    Returns
    -------
    z : ndarray of shape (n_features,)
    score : float
        ``S(z)``; the summed objective (eq. 18) is ``sum_k ||Psi^k||^2 - score``.
    n_iter : int
    """
    Y = np.asarray(Y, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    Z0 = np.atleast_2d(np.asarray(Z0, dtype=np.float64))
    resident(kernel, Y)
    rng = random_state if random_state is not None else np.random.default_rng(0)
    if kernel.is_radial and getattr(kernel, "supports_fixed_point", True):
        Z, n_iter = _fixed_point_radial(kernel, Y, G, Z0.copy(), max_iter, tol, rng)
    else:
        Z, n_iter = _lbfgs_general(kernel, Y, G, Z0.copy(), max_iter, tol)
    cand = np.vstack([Z, Z0])
    scores = shared_score(kernel, Y, G, cand)
    best = int(np.argmax(scores))
    return cand[best], float(scores[best]), n_iter


#: :func:`row_blocks`: at most this many runs, and only where they cut the work of the
#: products with ``G`` at least this many times; a run's own cost (a Python-level product
#: call) counted as this many row-column elements.
_MAX_ROW_BLOCKS = 64
_MIN_BLOCK_GAIN = 2.0
_BLOCK_COST = 4096


def row_blocks(G):
    """Contiguous runs of rows of ``G``, each zero outside a few columns.

    A one-vs-one machine's shared expansion has one coefficient column per pair of
    classes, and a support vector of class ``c`` is non-zero only in pairs that contain
    ``c`` (at most 9 of 45 columns for 10 classes, 3.3 on average for USPS);
    scikit-learn stores the support vectors class by class. The products ``G^T K`` and
    ``G F`` of :func:`one_term_gaussian` then cost ``sum |run| |cols|`` instead of
    ``N n_out``. For each cap ``c`` on the number of columns a run may span, rows are
    taken into the current run while its column set stays within ``c``; the cap with
    the least work (each run's own cost counted as ``_BLOCK_COST`` elements) is kept.

    Parameters
    ----------
    G : ndarray of shape (N, n_outputs)

    Returns
    -------
    list of (start, stop, cols) or None
        ``G[start:stop]`` is zero outside the columns ``cols``; ``None`` where there would
        be more than ``_MAX_ROW_BLOCKS`` runs or they save less than ``_MIN_BLOCK_GAIN``
        times the work (then the dense products are used).
    """
    G = np.asarray(G)
    if G.ndim != 2 or G.shape[0] == 0 or G.shape[1] < 2:
        return None
    n_out = G.shape[1]
    # each row's pattern of non-zero columns as the bits of one Python int
    masks = [int.from_bytes(r.tobytes(), "little")
             for r in np.packbits(G != 0, axis=1, bitorder="little")]
    caps = (range(1, n_out) if n_out <= 128 else
            sorted({max(1, round(n_out ** (k / 64))) for k in range(64)}))
    best = None
    for cap in caps:
        runs, start, cur = [], 0, 0  # runs: (start, stop, column bits)
        for i, m in enumerate(masks):
            if (cur | m).bit_count() > cap and cur:
                runs.append((start, i, cur))
                if len(runs) >= _MAX_ROW_BLOCKS:
                    break
                start, cur = i, 0
            cur |= m
        else:
            runs.append((start, len(masks), cur))
            work = sum((b - a) * u.bit_count() + _BLOCK_COST for a, b, u in runs)
            if best is None or work < best[0]:
                best = (work, runs)
    if best is None or best[0] * _MIN_BLOCK_GAIN > G.size:
        return None
    return [(a, b, np.flatnonzero([(u >> k) & 1 for k in range(n_out)]))
            for a, b, u in best[1]]


class _Products:
    """``G^T K`` and ``G F`` for :func:`one_term_gaussian`, dense or by row blocks.

    Both forms give the same values up to rounding (the sums run in another order).
    """

    def __init__(self, G, blocks):
        self.G = G
        self.n_out = G.shape[1]
        self.parts = None
        if blocks is not None:
            self.parts = [(a, b, cols, np.ascontiguousarray(G[a:b, cols]))
                          for a, b, cols in blocks if cols.size]
            self.dense_rows = sum(b - a for a, b, _, _ in self.parts) == G.shape[0]

    def gt(self, K):
        if self.parts is None:
            return self.G.T @ K
        F = np.zeros((self.n_out, K.shape[1]))
        for a, b, cols, Gb in self.parts:
            if cols.size == self.n_out:
                F += Gb.T @ K[a:b]
            else:
                F[cols] += Gb.T @ K[a:b]
        return F

    def g(self, F):
        if self.parts is None:
            return self.G @ F
        M = (np.empty if self.dense_rows else np.zeros)((self.G.shape[0], F.shape[1]))
        for a, b, cols, Gb in self.parts:
            np.matmul(Gb, F if cols.size == self.n_out else F[cols], out=M[a:b])
        return M


def one_term_gaussian(gamma, Y, G, Z0, *, max_iter=200, tol=1e-7, prune=True,
                      random_state=None, Y_sqnorms=None, float32=False, kernel=None,
                      blocks=None):
    """Batched fixed-point iteration of eq. 19 for the Gaussian kernel, stopped on ``S``.

    The iteration of :func:`one_term_shared` specialised to ``k = exp(-gamma r2)``.
    There ``k' = -gamma k`` and ``k(z, z) = 1``, so the denominator of eq. 19,
    ``sum_j c_j k(y_j, z) = sum_k (Psi^k . Phi(z))^2 = S(z)``, *is* the objective
    of eq. 18: every iteration evaluates ``S`` at the current point for free. That
    allows

    * stopping each start on the objective's relative change
      ``|S_new - S_old| / S_new <= tol`` (``S`` is flat at its maximum: ``tol = 1e-7``
      is a relative step of about ``3e-4``), and
    * pruning (``prune=True``): once one start has converged with score ``S*``,
      every start whose current ``S`` is still below ``S*`` stops. The fixed point
      climbs slowly (linear convergence), so a start that is behind rarely overtakes;
      the batch's iteration count is then set by the leading starts instead of the
      slowest one;
    * halving a step that reverses the previous one without shrinking: with
      coefficients of both signs the iteration can otherwise cycle between two points
      until ``max_iter`` (see :func:`_gaussian_update`).

    All starting points (rows of ``Z0``) run together: one ``(N, n_starts)`` kernel
    block, one GEMM for the projections and one for the moments per iteration.

    Parameters
    ----------
    gamma : float
        RBF parameter, ``k(x, z) = exp(-gamma ||x - z||^2)``.
    Y : ndarray of shape (N, n_features)
    G : ndarray of shape (N, n_outputs)
    Z0 : ndarray of shape (n_starts, n_features)
    max_iter : int
        Iterations per start.
    tol : float
        Relative change of ``S`` at which a start stops.
    prune : bool
        Stop the starts that are behind a converged one.
    random_state : numpy Generator
        Restarts a start whose ``S`` vanishes (the iteration is undefined there).
    Y_sqnorms : ndarray of shape (N,), optional
    float32 : bool
        Run the two ``N x n_features x n_starts`` GEMMs of each iteration (the
        cross products ``Y Z^T`` and the moments ``M^T Y``) in single precision on
        data centred at the mean of ``Y``; norms, kernel values, ``S`` and the final
        scoring of the end points stay in double precision.
    kernel : DeviceKernel, optional
        The caller's bound kernel (:func:`~sparsekm.backend.solver_kernel`): the
        ``(N, n_starts)`` blocks, both GEMMs and the final scoring run on its device,
        with ``Y`` converted once (:func:`~sparsekm.backend.resident`); only ``S``,
        the moments ``T`` (``n_starts x n_features``) and the start points travel.
        The float32 GEMMs round differently in torch and in numpy's BLAS.
    blocks : list of (start, stop, cols), optional
        :func:`row_blocks` of ``G`` (numpy engine only): the products with ``G`` run
        block by block. The same iteration; its sums are added in another order.

    Returns
    -------
    z : ndarray of shape (n_features,)
        The best end point (or start) by ``S``.
    score : float
        ``S(z)``.
    n_iter : int
        Iterations of the slowest start.
    ends : ndarray of shape (n_starts, n_features)
        Every start's end point.
    """
    rng = random_state if random_state is not None else np.random.default_rng(0)
    Y = np.asarray(Y, dtype=np.float64)
    G = np.asarray(G, dtype=np.float64)
    Z0 = np.array(np.atleast_2d(Z0), dtype=np.float64)
    Zc = Z0.copy()
    if isinstance(kernel, DeviceKernel):
        return _one_term_gaussian_device(kernel, gamma, Y, G, Z0, Zc, max_iter, tol, prune,
                                         rng, float32)
    y_sq = np.einsum("ij,ij->i", Y, Y) if Y_sqnorms is None else Y_sqnorms
    if float32:
        centre = Y.mean(axis=0)
        Yc = Y - centre
        yc_sq = np.einsum("ij,ij->i", Yc, Yc)
        Y32 = Yc.astype(np.float32)
    prod = _Products(G, blocks)
    # S vanishes (the iteration is undefined) where S <= 1e-24 ||Fa||^2, Fa = |G|^T K.
    # Since 0 < K <= 1, ||Fa||^2 <= ||colsum |G|||^2 =: bound, so Fa is formed only for
    # the rare S that this bound does not clear (the same test, without a third product
    # with G in every iteration; the factor covers the rounding of Fa).
    bound = float(np.sum(np.abs(G).sum(axis=0) ** 2)) * (1.0 + 1e-6)
    n_starts = Zc.shape[0]
    S_old = np.full(n_starts, -np.inf)
    active = np.ones(n_starts, dtype=bool)
    state = _fixed_point_state(n_starts, Zc.shape[1])
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        idx = np.flatnonzero(active)
        Z = Zc[idx]
        if float32:
            Zs = Z - centre
            D = (Y32 @ Zs.astype(np.float32).T).astype(np.float64)
            D *= -2.0
            D += yc_sq[:, None]
            D += np.einsum("ij,ij->i", Zs, Zs)[None, :]
        else:
            D = Y @ Z.T
            D *= -2.0
            D += y_sq[:, None]
            D += np.einsum("ij,ij->i", Z, Z)[None, :]
        np.maximum(D, 0.0, out=D)
        D *= -gamma
        K = np.exp(D, out=D)            # (N, b)
        F = prod.gt(K)                  # Psi^k . Phi(z_b), (n_out, b)
        S = np.einsum("kb,kb->b", F, F)
        M = prod.g(F)                   # c_j of eq. 19
        M *= K
        if float32:                     # numerator; the denominator is S = sum_j M_j
            T = (M.T.astype(np.float32) @ Y32).astype(np.float64)
            T += np.outer(M.sum(axis=0), centre)
        else:
            T = M.T @ Y
        bad = ~(S > 1e-24 * bound)
        if bad.any():
            Fa = np.abs(G).T @ K[:, bad]
            bad[bad] = ~(S[bad] > 1e-24 * np.einsum("kb,kb->b", Fa, Fa))
        if _gaussian_update(Zc, Y, idx, S, T, bad, S_old, active, tol, prune, rng, state):
            break
    cand = np.vstack([Zc, Z0])
    scores = shared_score_gaussian(gamma, Y, G, cand, y_sq)
    best = int(np.argmax(scores))
    return cand[best], float(scores[best]), n_iter, Zc


#: A start whose step of eq. 19 turns back on its previous one (cosine below
#: ``_REVERSAL``) without shrinking (length at least ``_NO_SHRINK`` times the previous)
#: is cycling: it moves by half its step (see :func:`_gaussian_update`).
_REVERSAL = -0.8
_NO_SHRINK = 0.9


def _fixed_point_state(n_starts, n_features):
    """What :func:`_gaussian_update` keeps between iterations."""
    return {"best": -np.inf,                            # the best S of a converged start
            "step": np.zeros((n_starts, n_features))}   # each start's last step of eq. 19


def _gaussian_update(Zc, Y, idx, S, T, bad, S_old, active, tol, prune, rng, state):
    """The bookkeeping of one iteration of :func:`one_term_gaussian` (in place).

    Moves the active starts to ``T / S`` (eq. 19), restarts the undefined ones,
    retires the converged (and, with ``prune``, the overtaken) ones. Returns True
    when no start is active any more.

    For the Gaussian kernel the step of eq. 19 is a gradient step,
    ``T / S - z = grad S(z) / (4 gamma S(z))``. With coefficients of both signs it can
    overshoot a maximum so that the iteration settles into a cycle of two points
    (consecutive steps of equal length in opposite directions), which never meets the
    stopping rule and runs to ``max_iter``: on the embedded digits' one-vs-rest machine,
    77 of 250 greedy terms did. A step that reverses the previous one without shrinking
    (``_REVERSAL``, ``_NO_SHRINK``) is therefore halved: the midpoint of the cycle, on
    the way to the same fixed points. Starts that never reverse so move exactly as
    before.
    """
    done = ~bad & (np.abs(S - S_old[idx]) <= tol * S)
    S_old[idx] = S
    # a start that converged stays where it is (its S was measured there)
    move = ~done & ~bad
    i = idx[move]
    target = T[move] / S[move, None]
    step = target - Zc[i]
    prev = state["step"][i]
    step2 = np.einsum("ij,ij->i", step, step)
    prev2 = np.einsum("ij,ij->i", prev, prev)
    cycling = ((np.einsum("ij,ij->i", step, prev) < _REVERSAL * np.sqrt(step2 * prev2))
               & (step2 >= _NO_SHRINK ** 2 * prev2))
    Zc[i[~cycling]] = target[~cycling]
    Zc[i[cycling]] += 0.5 * step[cycling]
    state["step"][i] = step
    if bad.any():
        b = idx[bad]
        Zc[b] = Y[rng.integers(Y.shape[0], size=b.size)]
        S_old[b] = -np.inf
        state["step"][b] = 0.0
    active[idx[done]] = False
    if done.any():
        state["best"] = max(state["best"], float(S[done].max()))
    if prune and np.isfinite(state["best"]):
        active &= ~(S_old < state["best"])
    return not active.any()


def _one_term_gaussian_device(kernel, gamma, Y, G, Z0, Zc, max_iter, tol, prune, rng,
                              float32):
    """:func:`one_term_gaussian` with the ``(N, n_starts)`` work on ``kernel``'s device."""
    xp = kernel.xp
    torch = xp.torch
    Yd = resident(kernel, Y)
    Gd = resident(kernel, G)
    y_sq = xp.sqnorms(Yd)
    absG = torch.abs(Gd)
    if float32:
        centre = Yd.mean(dim=0)
        Yc = Yd - centre
        yc_sq = xp.sqnorms(Yc)
        Y32 = Yc.to(torch.float32)
    n_starts = Zc.shape[0]
    S_old = np.full(n_starts, -np.inf)
    active = np.ones(n_starts, dtype=bool)
    state = _fixed_point_state(n_starts, Zc.shape[1])
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        idx = np.flatnonzero(active)
        Z = xp.asarray(Zc[idx])
        if float32:
            Zs = Z - centre
            D = (Y32 @ Zs.to(torch.float32).T).to(torch.float64)
            D *= -2.0
            D += yc_sq[:, None]
            D += xp.sqnorms(Zs)[None, :]
        else:
            D = Yd @ Z.T
            D *= -2.0
            D += y_sq[:, None]
            D += xp.sqnorms(Z)[None, :]
        D.clamp_(min=0.0)
        D *= -gamma
        K = torch.exp_(D)
        F = Gd.T @ K
        S = torch.einsum("kb,kb->b", F, F)
        M = Gd @ F
        M *= K
        if float32:
            T = (M.T.to(torch.float32) @ Y32).to(torch.float64)
            T += torch.outer(M.sum(dim=0), centre)
        else:
            T = M.T @ Yd
        Fa = absG.T @ K
        S, T = xp.to_numpy(S), xp.to_numpy(T)
        bad = ~(S > 1e-24 * xp.to_numpy(torch.einsum("kb,kb->b", Fa, Fa)))
        if _gaussian_update(Zc, Y, idx, S, T, bad, S_old, active, tol, prune, rng, state):
            break
    cand = np.vstack([Zc, Z0])
    C = xp.asarray(cand)
    D = y_sq[:, None] - 2.0 * (Yd @ C.T) + xp.sqnorms(C)[None, :]
    F = Gd.T @ torch.exp(-gamma * D.clamp(min=0.0))
    scores = xp.to_numpy(torch.einsum("kb,kb->b", F, F))
    best = int(np.argmax(scores))
    return cand[best], float(scores[best]), n_iter, Zc


def shared_score_gaussian(gamma, Y, G, Z, Y_sqnorms=None):
    """``S(z)`` of eq. 18 for the Gaussian kernel (``k(z, z) = 1``), each row of ``Z``."""
    y_sq = np.einsum("ij,ij->i", Y, Y) if Y_sqnorms is None else Y_sqnorms
    D = y_sq[:, None] - 2.0 * (Y @ Z.T) + np.einsum("ij,ij->i", Z, Z)[None, :]
    F = G.T @ np.exp(-gamma * np.maximum(D, 0.0))
    return np.einsum("kb,kb->b", F, F)
