"""Fixed-``Z`` kernel machines (Wu, Schölkopf, Bakır, JMLR 2006, section 3).

The weight vector of a kernel machine is constrained to ``w = sum_j beta_j Phi(z_j)``
with ``N_z`` expansion vectors ``Z`` (eq. 11). For fixed ``Z`` the learning problem
stays convex; its optimal value is the *marginal function* ``W(Z)`` (eq. 12-15).

* :func:`fixed_z_svm` -- the SVM restricted to ``span{Phi(z_j)}`` (eq. 28-30),
  solved exactly as a linear SVM with an *unregularised* bias on the whitened
  empirical kernel map ``phi_z(x) = Lambda^{-1/2} V^T psi_z(x)`` (eq. 41-43);
  it returns ``W(Z)`` (eq. 44), the dual variables ``alpha^z``, ``beta``
  (eq. 45) and the bias. With ``features="empirical"`` it trains the RSVM of Lee
  & Mangasarian instead (linear SVM on ``psi_z(x)``, regulariser ``beta^T beta``).
  The same function gives MRS (eq. 45 on reduced-set vectors) and MRSVM (eq. 45
  on random training points).
* :func:`rs_objective` -- the objective SLMC and RS are compared with (the unconstrained
  SVM, :func:`~sparsekm.sparse_learning.full_svm.full_svm_expansion`, and its
  :func:`~sparsekm.sparse_learning.full_svm.svm_dual_objective` live in
  :mod:`sparsekm.sparse_learning.full_svm` and are re-exported here).

Notation follows the paper: ``X`` (N, d) training inputs, ``y`` in {-1, +1},
``Z`` (N_z, d) expansion vectors (XVs), ``K^z = K(Z, Z)``, ``K^{zx} = K(Z, X)``,
``psi_z(x) = K(Z, x)`` (eq. 31).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg
from sklearn.svm import SVC

from ..backend import DeviceKernel, solver_kernel
from ..kernels import Kernel
from ..utils.validation import check_array, check_scalar
from .full_svm import full_svm_expansion, svm_dual_objective  # noqa: F401  (re-exported)

__all__ = [
    "FixedZSolution",
    "whitening_transform",
    "fixed_z_svm",
    "rs_objective",
    "unique_rows",
    "aggregate_duplicates",
    "SingularKzError",
    "check_C",
    "check_Z",
    "solve_features",
]

# K^z is treated as singular when lambda_min < _RCOND * lambda_max.
_RCOND = 1e-10
# Problems up to this many (distinct) samples are re-solved by SLSQP when libsvm leaves a gap.
_QP_MAX_SAMPLES = 300
# ... and problems up to this size are solved by SLSQP first.
_QP_FIRST_SAMPLES = 60
#: Warm-started interior point on a working set (the previous support vectors and the
#: points within this margin of them), grown by the KKT violators until none is left:
#: the same solution as on all samples, at the cost of the working set. Only problems
#: with more than _WS_MIN_FACTOR * (n_features + 1) samples use it.
_WS_MARGIN = 1.5
_WS_MIN_FACTOR = 4
_WS_MAX_ROUNDS = 8
#: Active-set iterations of the warm start (each moves the violators between the sets);
#: the previous iterate's partition is usually a few iterations away.
_WARM_ACTIVE_SET_ITER = 30
#: The interior point keeps its iterate when a Newton system breaks down once the duality
#: measure is below this fraction of the problem's scale (instead of giving up).
_IPM_NEAR = 1e-8
#: Damped exchange (:func:`_active_set_svm`): from step ``_DAMP_AFTER + 1`` on, or when all
#: violators entering at once would make the margin set degenerate, or the partitions
#: cycle, only the worst ``_DAMP_FRACTION`` of the entering violators (at least
#: ``_DAMP_MIN``) move: moving all of them at once oscillates when ``Z`` moved far.
_DAMP_AFTER = 1
_DAMP_FRACTION = 0.5
_DAMP_MIN = 10
#: ``(damp_after, fraction, minimum)`` of a second, more cautious warm active set when the
#: first fails: damped from the first step, a fifth of the violators.
_RETRY_DAMP = (0, 0.2, 3)
#: The interior point tries the active-set polish on its iterate when the duality measure
#: falls below each of these fractions of the problem's scale (an exact KKT point found
#: early ends the interior point; otherwise it converges and is polished then).
_IPM_EARLY = (1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10)
#: Iteration cap ``max(a, b * n_samples)`` of the libsvm cold start (``cold="libsvm"`` of
#: :func:`solve_features`; SLMC's first L-BFGS evaluation); past it the interior point runs.
_COLD_LIBSVM_ITER = (10_000, 5)


class SingularKzError(ValueError):
    """``K^z`` is (numerically) singular: duplicated or near-duplicated expansion vectors."""


def unique_rows(X):
    """Indices of the first occurrence of every distinct row of ``X`` (section 5.6).

    Duplicated training points make ``K^z`` singular when two copies are picked
    as initial expansion vectors; the paper removes them as preprocessing. Rows
    that are equal but carry different labels are kept once (first occurrence).
    """
    X = np.ascontiguousarray(X)
    _, idx = np.unique(X, axis=0, return_index=True)
    return np.sort(idx)


def aggregate_duplicates(X, y):
    """Merge identical ``(x_i, y_i)`` pairs into weighted samples.

    ``n`` identical pairs contribute ``n C hinge(.)`` to the SVM primal, i.e. one
    sample with ``C_i = n C``; ``W``, ``w``, ``beta`` and ``b`` are unchanged. Data
    sets such as Titanic (150 training points, about 12 distinct) shrink by 10x,
    which also removes the near-degenerate duplicate constraints that make libsvm slow.

    Returns
    -------
    X_unique, y_unique, counts
        Without duplicates ``X_unique`` is the (validated) ``X`` itself, so a solver
        that keeps ``X`` on a torch device (:func:`~sparsekm.backend.resident`) finds
        it again.
    """
    X = check_array(X, "X", dtype=float)
    y = np.asarray(y, dtype=float)
    Xy = np.ascontiguousarray(np.column_stack([X, y]))
    _, idx, counts = np.unique(Xy, axis=0, return_index=True, return_counts=True)
    order = np.argsort(idx)
    idx, counts = idx[order], counts[order]
    if idx.size == X.shape[0]:  # all distinct: idx is 0..n-1
        return X, y, counts.astype(float)
    return X[idx], y[idx], counts.astype(float)


def whitening_transform(Kz, *, rcond=_RCOND, on_singular="raise"):
    """``T = Lambda^{-1/2} V^T`` with ``T^T T = (K^z)^{-1}`` (eq. 42-43).

    Parameters
    ----------
    Kz : ndarray of shape (n_vectors, n_vectors)
        Kernel matrix of the expansion vectors.
    rcond : float
        Eigenvalues below ``rcond * max(eigenvalue)`` count as zero.
    on_singular : {"raise", "pinv"}
        ``"raise"`` raises :class:`SingularKzError`; ``"pinv"`` drops the null
        directions (pseudo-inverse), i.e. works in the span of the ``Phi(z_j)``.

    Returns
    -------
    T : ndarray of shape (rank, n_vectors)
    """
    lam, V = linalg.eigh(check_array(Kz, "Kz", allow_empty=True))
    lam_max = lam[-1] if lam.size else 0.0
    if not lam_max > 0:
        raise SingularKzError("K^z has no positive eigenvalue; the expansion vectors span nothing.")
    keep = lam > rcond * lam_max
    if not keep.all():
        if on_singular == "raise":
            raise SingularKzError(
                f"K^z is numerically singular ({int((~keep).sum())} of {lam.size} eigenvalues below "
                f"{rcond:g} * lambda_max): the expansion vectors contain duplicated or "
                "near-duplicated points. Remove duplicated training points (section 5.6 of "
                "Wu et al.), e.g. with sparsekm.sparse_learning.unique_rows."
            )
        lam, V = lam[keep], V[:, keep]
    return V.T / np.sqrt(lam)[:, None]


@dataclass
class FixedZSolution:
    """Solution of the SVM restricted to ``span{Phi(z_j)}`` for fixed ``Z``.

    Attributes
    ----------
    W : float
        Marginal function ``W(Z)`` (eq. 44): the dual optimum.
    primal : float
        Primal objective at the returned ``(beta, b)``; ``primal - W`` is the duality gap.
    alpha : ndarray of shape (n_samples,)
        Dual variables ``alpha^z`` (eq. 37-39), ``0 <= alpha <= C``.
    beta : ndarray of shape (n_vectors,)
        Expansion coefficients (eq. 45, or the RSVM weights).
    intercept : float
        Bias ``b``.
    features : str
        ``"whitened"`` (SLMC/MRS/MRSVM) or ``"empirical"`` (RSVM).
    """

    W: float
    primal: float
    alpha: np.ndarray
    beta: np.ndarray
    intercept: float
    features: str = "whitened"
    extra: dict = field(default_factory=dict)

    @property
    def gap(self):
        """Relative duality gap ``(primal - dual) / max(1, |primal|)``."""
        return (self.primal - self.W) / max(1.0, abs(self.primal))


def _linear_svm(F, y, C, tol, max_iter=-1, sample_weight=None):
    """Linear SVM with free (unregularised) bias on features ``F`` via libsvm.

    ``C_i = C * sample_weight_i``. Returns ``(alpha, w, b)`` with ``w = F^T (alpha * y)``.
    libsvm's iterations are capped (``max_iter=-1``: ``max(10**6, 100 n)``): with a huge
    ``C`` (Titanic: ``C = 1e5``) or badly scaled features (a cubic kernel on inputs of
    size 1e6) it can otherwise cycle for minutes at a tolerance it cannot reach; the
    result is then polished by the active-set step and an unconverged solution shows in
    the reported duality gap.
    """
    if max_iter == -1:
        max_iter = max(10**6, 100 * F.shape[0])
    svc = SVC(kernel="linear", C=C, tol=tol, cache_size=200, max_iter=max_iter, shrinking=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning is reported through the gap instead
        svc.fit(F, y, sample_weight=sample_weight)
    if sample_weight is not None:
        C = C * np.asarray(sample_weight, dtype=float)
    alpha = np.zeros(F.shape[0])
    # libsvm labels the first class seen in sorted order (-1) as the "negative" one:
    # dual_coef_ = alpha_i * y_i with y in classes_ order (-1, +1) -> sign matches y.
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    np.minimum(alpha, C, out=alpha)
    ay = alpha * y
    w = F.T @ ay
    # decision_function = w.x + b with libsvm's sign convention for classes_ = [-1, 1]
    b = float(svc.intercept_[0])
    return alpha, w, b


def _active_set_svm(F, y, C, alpha0, *, margin0=None, max_iter=6, kkt_tol=1e-9, damp=None):
    """Warm-started primal-dual active-set solver for the linear SVM with free bias.

    Starting from the partition of a nearby solution ``alpha0`` (margin set ``S``,
    bound set ``B`` with ``alpha = C``, the rest ``alpha = 0``), solve the KKT
    system restricted to that partition,

    ``w = F_S^T (y_S alpha_S) + C F_B^T y_B``, ``y^T alpha = 0``,
    ``y_i (w . F_i + b) = 1`` for ``i`` in ``S``,

    then move violators between the sets and repeat. Between two nearby L-BFGS
    iterates the partition barely changes, so this usually converges in one to
    three linear solves of the bordered Gram system of size ``|S| + 1``
    (:func:`_margin_system`). When moving all violators at once would make the margin
    set degenerate (``|S| > n_features + 1``), from the second step on, or when the
    partitions cycle, only the worst ``_DAMP_FRACTION`` of the entering violators move
    (damped exchange): the undamped exchange oscillates when ``Z`` moved far.
    ``damp = (damp_after, fraction, minimum)`` overrides ``_DAMP_AFTER``,
    ``_DAMP_FRACTION`` and ``_DAMP_MIN`` (the cautious retry, ``_RETRY_DAMP``).
    Returns ``None`` when it does not reach an exact KKT point within ``max_iter``
    solves or the margin set becomes degenerate; the caller then falls back to the
    interior point or libsvm. A returned solution satisfies every KKT condition to
    ``kkt_tol``, whatever path led to it.
    """
    n, m = F.shape
    damp_after, damp_fraction, damp_min = damp or (_DAMP_AFTER, _DAMP_FRACTION, _DAMP_MIN)
    C = np.broadcast_to(np.asarray(C, dtype=float), (n,))
    bound_tol = 1e-8 * C
    S = (alpha0 > bound_tol) & (alpha0 < C - bound_tol)
    B = alpha0 >= C - bound_tol
    if margin0 is not None and S.sum() > m + 1:
        # an inexact (libsvm) solution has spurious free alphas: keep the m + 1 points
        # closest to the margin, send the others to the side their margin says
        s_idx = np.flatnonzero(S)
        order = np.argsort(np.abs(margin0[s_idx] - 1.0))
        drop = s_idx[order[m + 1:]]
        S[drop] = False
        B[drop] = margin0[drop] < 1.0
    seen = set()
    damped = False
    for it in range(max_iter):
        key = (S.tobytes(), B.tobytes())
        if key in seen:
            if damped:
                return None
            damped = True  # a cycle: from here on only half of the violators enter
        seen.add(key)
        s_idx = np.flatnonzero(S)
        k = s_idx.size
        if k == 0 or k > m + 1:
            # more margin vectors than dimensions: degenerate, leave it to libsvm
            return None
        solved = _margin_system(F, y, C, S, B, s_idx)
        if solved is None:
            return None
        w, b, a_s = solved
        margin = y * (F @ w + b)
        tol = kkt_tol * max(1.0, C.max())
        low = a_s < -tol
        high = a_s > C[s_idx] + tol
        free = ~(S | B)
        enter0 = free & (margin < 1.0 - kkt_tol)
        enterB = B & (margin > 1.0 + kkt_tol)
        if not (low.any() or high.any() or enter0.any() or enterB.any()):
            alpha = np.where(B, C, 0.0)
            alpha[s_idx] = np.clip(a_s, 0.0, C[s_idx])
            return alpha, w, b
        S = S.copy()
        B = B.copy()
        S[s_idx[low]] = False
        S[s_idx[high]] = False
        B[s_idx[high]] = True
        enter = enter0 | enterB
        n_in = int(enter.sum())
        if not damped and (S.sum() + n_in > m + 1 or it + 1 >= damp_after):
            # all violators at once would make S degenerate, or oscillate
            damped = True
        if damped and n_in > damp_min:
            # damped step: only the worst damp_fraction of the violators enter the margin set
            idx = np.flatnonzero(enter)
            n_keep = max(damp_min, int(damp_fraction * n_in))
            worst = idx[np.argsort(-np.abs(margin[idx] - 1.0), kind="stable")[:n_keep]]
            enter = np.zeros(n, dtype=bool)
            enter[worst] = True
        S[enter] = True
        B[enter & enterB] = False
    return None


def _margin_system(F, y, C, S, B, s_idx):
    """``(w, b, alpha_S)`` of the active-set partition ``(S, B)``: the bordered Gram system.

    With ``w = c_B + F_S^T v``, ``v = y_S alpha_S``, ``c_B = F_B^T (C_B y_B)`` (the
    identity block of the KKT system eliminated), the margin equations and
    ``y^T alpha = 0`` read ``[[F_S F_S^T, 1], [1^T, 0]] [v; b] = [y_S - F_S c_B;
    -sum_B C_i y_i]``: size ``|S| + 1`` instead of ``n_features + 1 + |S|``.
    """
    k = s_idx.size
    ys = y[s_idx]
    cB = C[B] * y[B]
    cb = F[B].T @ cB
    Fs = F[s_idx]
    A = np.empty((k + 1, k + 1))
    np.matmul(Fs, Fs.T, out=A[:k, :k])
    A[:k, k] = 1.0
    A[k, :k] = 1.0
    A[k, k] = 0.0
    rhs = np.empty(k + 1)
    rhs[:k] = ys - Fs @ cb
    rhs[k] = -cB.sum()
    sol = _solve_or_none(A, rhs)
    if sol is None:
        return None
    v = sol[:k]
    return cb + Fs.T @ v, float(sol[k]), v * ys


def _solve_or_none(A, rhs):
    """``A^{-1} rhs`` by LU, or ``None`` when ``A`` is singular or the result not finite."""
    try:
        sol = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        return None
    return sol if np.all(np.isfinite(sol)) else None


def _qp_svm(F, y, C, alpha0=None, *, max_iter=1000):
    """Small dual SVM solved by SLSQP on ``a = alpha / C`` (for tiny, ill-conditioned problems).

    libsvm's stopping rule is an absolute tolerance on the dual gradient; with a huge
    ``C`` (Titanic: ``C = 1e5`` times the multiplicity of merged duplicates) that leaves
    a large relative duality gap. For problems with a few hundred samples at most, an
    SQP solve of the scaled dual followed by the exact active-set polish is cheap.
    """
    from scipy.optimize import minimize as _minimize

    n = F.shape[0]
    C = np.broadcast_to(np.asarray(C, dtype=float), (n,))
    yC = y * C

    scale = 1.0 / max(1.0, float(C.sum()))  # SLSQP needs an objective of order one

    def fun(a):
        w = F.T @ (yC * a)
        return scale * (0.5 * w @ w - C @ a), scale * (yC * (F @ w) - C)

    a0 = np.clip(np.zeros(n) if alpha0 is None else alpha0 / C, 0.0, 1.0)
    res = _minimize(fun, a0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * n,
                    constraints=[{"type": "eq", "fun": lambda a: scale * (yC @ a),
                                  "jac": lambda a: scale * yC}],
                    options={"maxiter": max_iter, "ftol": 1e-15})
    alpha = np.clip(res.x, 0.0, 1.0) * C
    w = F.T @ (y * alpha)
    g = y - F @ w  # b candidates: y_i - w . F_i on free SVs
    free = (alpha > 1e-6 * C) & (alpha < (1 - 1e-6) * C)
    if free.any():
        b = float(np.median(g[free]))
    else:
        lo = np.max(g[((y > 0) & (alpha < C)) | ((y < 0) & (alpha > 0))], initial=-np.inf)
        hi = np.min(g[((y > 0) & (alpha > 0)) | ((y < 0) & (alpha < C))], initial=np.inf)
        b = float(0.5 * (lo + hi)) if np.isfinite(lo) and np.isfinite(hi) else 0.0
    return alpha, w, b


def _ipm_svm(F, y, C, *, tol=1e-12, max_iter=80, early=None):
    """Dual linear SVM with free bias by a primal-dual interior-point method.

    Mehrotra predictor-corrector on the dual (37)-(39) in the scaled variables
    ``a = alpha / C_i`` in ``[0, 1]``. The Hessian ``Y F F^T Y`` has rank
    ``n_features``, so each Newton system ``(Q + D) dx = r`` is solved through the
    Sherman-Morrison-Woodbury identity with one ``n_features x n_features``
    Cholesky factorisation: ``O(n_samples n_features^2)`` per iteration, about 12
    to 20 iterations whatever ``C`` is (libsvm's iteration count grows with ``C``).
    Returns ``(alpha, w, b)`` or ``None`` when it does not converge.

    ``early``, a callable ``early(alpha, w, b)`` returning an exact solution or ``None``
    (the active-set polish), is tried on the iterate each time the duality measure falls
    below the next of ``_IPM_EARLY * scale``; its first solution is returned at once.
    The polish checks the KKT conditions on every sample, so stopping there gives the
    same solution as running the interior point to ``tol`` and polishing then, a few
    Newton steps earlier.
    """
    n, m = F.shape
    u = np.broadcast_to(np.asarray(C, dtype=float), (n,))
    cmax = float(u.max())
    H = (y * u / np.sqrt(cmax))[:, None] * F  # Q = H H^T (objective divided by cmax)
    c = -u / cmax
    av = y * u / cmax  # equality constraint av^T a = 0
    x = np.full(n, 0.5)
    xs = np.full(n, 0.5)  # 1 - x, kept separately: 1 - x loses all digits as x -> 1
    z = np.ones(n)
    s = np.ones(n)
    lam = 0.0
    eye = np.eye(m)
    n_early = 0
    for _ in range(max_iter):
        Qx = H @ (H.T @ x)
        rd = Qx + c - av * lam - z + s
        rp = float(av @ x)
        mu = (x @ z + xs @ s) / (2 * n)
        scale = 1.0 + np.abs(Qx).max() + np.abs(c).max()
        if mu < tol * scale and np.abs(rd).max() < 1e-9 * scale and abs(rp) < 1e-12 * n:
            break
        if early is not None and n_early < len(_IPM_EARLY) and mu < _IPM_EARLY[n_early] * scale:
            while n_early < len(_IPM_EARLY) and mu < _IPM_EARLY[n_early] * scale:
                n_early += 1
            alpha = np.clip(x, 0.0, 1.0) * u
            # the iterate's partition: a bound is active where its multiplier exceeds the
            # distance to it (x_i < z_i: alpha_i = 0; 1 - x_i < s_i: alpha_i = C_i)
            hint = np.where(x < z, 0.0, np.where(xs < s, u, 0.5 * u))
            done = early(hint, F.T @ (y * alpha), -float(lam))
            if done is not None:
                return done
        # Close to the optimum the barrier makes I + H^T D H ill-conditioned; a point this
        # near is kept (the caller's active-set polish then makes it an exact KKT point).
        near = mu < _IPM_NEAR * scale and np.abs(rd).max() < 1e-7 * scale
        dinv = 1.0 / (z / x + s / xs)
        Hd = H * dinv[:, None]
        try:
            cho = linalg.cho_factor(eye + H.T @ Hd, lower=True, check_finite=False)
        except linalg.LinAlgError:
            if near:
                break
            return None

        def solve(v, Hd=Hd, dinv=dinv, cho=cho):
            return dinv * v - Hd @ linalg.cho_solve(cho, Hd.T @ v, check_finite=False)

        Ma = solve(av)
        aMa = float(av @ Ma)
        if not np.isfinite(aMa) or aMa <= 0.0:
            if near:
                break
            # av in the range of H (e.g. all rows identical): the Woodbury solve cancels
            # to 0; give up and let the caller fall back to libsvm
            return None

        def newton(rxz, rws, x=x, xs=xs, z=z, s=s, rd=rd, rp=rp, Ma=Ma, aMa=aMa, solve=solve):
            Mr = solve(-rd + rxz / x - rws / xs)
            dlam = (-rp - av @ Mr) / aMa
            dx = Mr + Ma * dlam
            return dx, dlam, (rxz - z * dx) / x, (rws + s * dx) / xs

        v_all = np.concatenate((x, xs, z, s))

        def max_step(dx, dz, ds, v=v_all):
            dv = np.concatenate((dx, -dx, dz, ds))
            neg = dv < 0
            return min(1.0, float(np.min(v[neg] / -dv[neg], initial=np.inf)))

        dx, dlam, dz, ds = newton(-x * z, -xs * s)
        t = max_step(dx, dz, ds)
        mu_aff = ((x + t * dx) @ (z + t * dz) + (xs - t * dx) @ (s + t * ds)) / (2 * n)
        sigma = min(1.0, (mu_aff / mu) ** 3)
        dx, dlam, dz, ds = newton(sigma * mu - x * z - dx * dz, sigma * mu - xs * s + dx * ds)
        t = min(1.0, 0.995 * max_step(dx, dz, ds))
        x = x + t * dx
        xs = xs - t * dx
        lam += t * dlam
        z = z + t * dz
        s = s + t * ds
    else:
        return None
    if not (np.all(np.isfinite(x)) and np.isfinite(lam)):
        return None
    alpha = np.clip(x, 0.0, 1.0) * u
    w = F.T @ (y * alpha)
    return alpha, w, -float(lam)


def _warm_margins(F, y, C, alpha0):
    """``y_i (w . F_i + b)`` of the previous dual variables ``alpha0`` on new features ``F``."""
    C = np.broadcast_to(np.asarray(C, dtype=float), y.shape)
    w = F.T @ (y * alpha0)
    g = y - F @ w
    free = (alpha0 > 1e-8 * C) & (alpha0 < (1 - 1e-8) * C)
    b = float(np.median(g[free])) if free.any() else 0.0
    return y * (F @ w + b)


def _ipm_working_set(F, y, C, alpha0):
    """:func:`_ipm_svm` on a working set grown until no sample outside it violates the KKT.

    The working set starts as the samples with ``alpha0 > 0`` (the previous L-BFGS
    iterate's support vectors) and those with margin ``y_i f(x_i) < _WS_MARGIN`` under
    ``alpha0``. A sample left out has ``alpha_i = 0``; when every one of them has
    ``y_i f(x_i) >= 1`` the working-set solution satisfies the KKT conditions of the
    whole problem, so it *is* the whole problem's solution (to the interior point's
    tolerance). Otherwise the violators join and the interior point runs again. The
    cost of a Newton step drops from ``O(n m^2)`` to ``O(|working set| m^2)``.
    Returns ``(alpha, w, b)`` or ``None`` (then the caller solves on all samples).
    """
    n, m = F.shape
    Cb = np.broadcast_to(np.asarray(C, dtype=float), (n,))
    work = (alpha0 > 0) | (_warm_margins(F, y, Cb, alpha0) < _WS_MARGIN)
    for _ in range(_WS_MAX_ROUNDS):
        if work.sum() >= 0.85 * n or np.unique(y[work]).size < 2:
            return None
        solved = _ipm_svm(F[work], y[work], Cb[work],
                          early=_polisher(F[work], y[work], Cb[work]))
        if solved is None:
            return None
        a, w, b = solved
        margin = y * (F @ w + b)
        viol = ~work & (margin < 1.0 - 1e-9)
        if not viol.any():
            alpha = np.zeros(n)
            alpha[work] = a
            return alpha, w, b
        work = work | viol | (margin < 1.0)
    return None


def _svm_values(F, y, C, alpha, w, b):
    dual = float(alpha.sum() - 0.5 * w @ w)
    margins = 1.0 - y * (F @ w + b)
    primal = float(0.5 * w @ w + (C * np.maximum(margins, 0.0)).sum())
    return dual, primal


def fixed_z_svm(X, y, Z, kernel, C, *, features="whitened", tol=1e-5, on_singular="raise",
                Kzx=None, warm_start=None, sample_weight=None, solver="auto", backend=None,
                device=None):
    """SVM with weight vector in ``span{Phi(z_1), ..., Phi(z_Nz)}`` for fixed ``Z``.

    With ``features="whitened"`` this solves problem (28)-(30) exactly: a linear
    SVM with an unregularised bias on ``phi_z(x) = T psi_z(x)`` (eq. 41-43), which
    is the dual (37)-(39) with kernel ``K_hat_z`` (eq. 40). Then
    ``beta = T^T w = (K^z)^{-1} K^{zx} Y alpha^z`` (eq. 45) and ``W(Z)`` is the
    dual optimum (eq. 44). With ``features="empirical"`` the regulariser is
    ``beta^T beta`` instead of ``beta^T K^z beta`` (RSVM, section 4.2).

    The inner problem (``n_vectors`` features, free bias) is solved by a
    primal-dual interior-point method on the dual whose Newton steps cost
    ``O(n_samples n_vectors^2)`` (Woodbury identity on the rank-``n_vectors``
    Hessian), then polished to an exact KKT point by an active-set step; libsvm
    (``SVC(kernel="linear")`` at tolerance ``tol``) is the fallback. The duality
    gap is reported in ``FixedZSolution.primal``; ``extra["method"]`` names the path.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}, both present.
    Z : ndarray of shape (n_vectors, n_features)
    kernel : Kernel
    C : float
    features : {"whitened", "empirical"}
    tol : float
        Stopping tolerance of libsvm (used when ``solver="libsvm"`` or as fallback).
    on_singular : {"raise", "pinv"}
        See :func:`whitening_transform`.
    Kzx : ndarray of shape (n_vectors, n_samples), optional
        Precomputed ``K(Z, X)``.
    warm_start : ndarray of shape (n_samples,), optional
        Dual variables of a nearby problem (the previous L-BFGS iterate). Their
        active set seeds an exact active-set solver; when that does not converge,
        the interior point runs on a working set grown from them (problems with
        more than ``4 (n_vectors + 1)`` samples), then on all samples, and libsvm
        only when neither converges.
    sample_weight : ndarray of shape (n_samples,), optional
        Per-sample multiplicity: ``C_i = C * sample_weight_i``. Merging identical
        ``(x, y)`` pairs into one weighted sample (:func:`aggregate_duplicates`) gives
        exactly the same ``W`` and ``beta`` and a much smaller inner problem.
    solver : {"auto", "libsvm"}, default="auto"
        ``"auto"``: warm-started active set, else interior point (SQP for tiny
        problems), libsvm as the last resort. ``"libsvm"``: libsvm from scratch
        (then the active-set polish), the plain reference of the benchmarks.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel sums (``None``: :func:`sparsekm.config.get_config`).
        With ``"torch"`` the training data ``X`` goes to ``device`` once per call and
        every kernel block and gradient sum runs there; ``K^{zx}`` (``N_z x n``),
        ``K^z`` and the gradients (``N_z x d``) come back for the CPU-side solvers.
    device : str or None, default=None
        torch device (``None``: the configured one, else CUDA when available).

    Returns
    -------
    FixedZSolution
    """
    if solver not in ("auto", "libsvm"):
        raise ValueError(f"solver must be 'auto' or 'libsvm'; got {solver!r}.")
    if features not in ("whitened", "empirical"):
        raise ValueError(f"features must be 'whitened' or 'empirical'; got {features!r}.")
    if not isinstance(kernel, Kernel | DeviceKernel):
        raise TypeError(f"kernel must be a sparsekm.kernels.Kernel; got {type(kernel).__name__}.")
    kernel = solver_kernel(kernel, backend, device)
    C = check_C(C, "fixed_z_svm")
    X = check_array(X, "X")
    Z = check_Z(Z, X.shape[1])
    y = np.asarray(y, dtype=float)
    if y.shape != (X.shape[0],) or not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError(f"y must be a (n_samples,) = ({X.shape[0]},) array of -1/+1 labels.")
    if np.unique(y).size < 2:
        raise ValueError("y contains only one class; the SVM needs both -1 and +1 labels.")
    if Kzx is None:
        Kzx = kernel(Z, X)
    if features == "whitened":
        T = whitening_transform(kernel(Z), on_singular=on_singular)
        F = (T @ Kzx).T
    else:
        T = None
        F = Kzx.T
    return solve_features(F, T, y, C, tol=tol, warm_start=warm_start,
                           sample_weight=sample_weight, solver=solver, features=features)


def _polisher(F, y, C):
    """``early`` hook of :func:`_ipm_svm`: the active-set polish of an interior iterate."""
    def polish(alpha, w, b):
        return _active_set_svm(F, y, C, alpha, margin0=y * (F @ w + b))
    return polish


def _polish(F, y, C, method, solved):
    """An interior-point solution made an exact KKT point by the active-set step, if it can."""
    if solved is None:
        return None, method
    a, w, b = solved
    polished = _active_set_svm(F, y, C, a, margin0=y * (F @ w + b))
    return (solved, method) if polished is None else (polished, method + "+active-set")


def solve_features(F, T, y, C, *, tol, warm_start, sample_weight, solver, features,
                    cold="ipm"):
    """The inner SVM of :func:`fixed_z_svm` on given features ``F = (T K^{zx})^T``.

    Problems sharing ``X`` and ``Z`` (one-vs-rest) share ``F`` and ``T``: only this part
    is per problem. ``cold="libsvm"``: without a warm start, a large problem is first
    solved by libsvm with a capped iteration count (``_COLD_LIBSVM_ITER``) and polished
    by the active set (an exact KKT point, the same solution as the interior point's);
    when the polish fails the interior point runs as with ``cold="ipm"``.
    """
    if solver not in ("auto", "libsvm"):
        raise ValueError(f"solver must be 'auto' or 'libsvm'; got {solver!r}.")
    Cvec = C if sample_weight is None else C * np.asarray(sample_weight, dtype=float)
    solved = None
    if warm_start is not None and solver == "auto":
        solved = _active_set_svm(F, y, Cvec, np.asarray(warm_start, dtype=float),
                                 max_iter=_WARM_ACTIVE_SET_ITER)
        if solved is None:
            solved = _active_set_svm(F, y, Cvec, np.asarray(warm_start, dtype=float),
                                     max_iter=2 * _WARM_ACTIVE_SET_ITER, damp=_RETRY_DAMP)
    method = "active-set"
    if solved is None and solver == "auto" and F.shape[0] <= _QP_FIRST_SAMPLES:
        # tiny problems (e.g. Titanic: 22 distinct (x, y) pairs): SQP + polish beats libsvm,
        # which needs millions of iterations there when C is huge
        a, w, b = _qp_svm(F, y, Cvec, None if warm_start is None else np.asarray(warm_start))
        polished = _active_set_svm(F, y, Cvec, a, margin0=y * (F @ w + b))
        if polished is not None:
            solved, method = polished, "qp+active-set"
    large = F.shape[0] > _WS_MIN_FACTOR * (F.shape[1] + 1)
    if solved is None and solver == "auto" and cold == "libsvm" and warm_start is None and large:
        n_iter = max(_COLD_LIBSVM_ITER[0], _COLD_LIBSVM_ITER[1] * F.shape[0])
        a, w, b = _linear_svm(F, y, C, tol, max_iter=n_iter, sample_weight=sample_weight)
        polished = _active_set_svm(F, y, Cvec, a, margin0=y * (F @ w + b),
                                   max_iter=_WARM_ACTIVE_SET_ITER)
        if polished is not None:
            solved, method = polished, "libsvm+active-set"
    if solved is None and solver == "auto" and warm_start is not None and large:
        solved, method = _polish(F, y, Cvec, "ipm-ws",
                                 _ipm_working_set(F, y, Cvec, np.asarray(warm_start, dtype=float)))
    if solved is None and solver == "auto":
        solved, method = _polish(F, y, Cvec, "ipm",
                                 _ipm_svm(F, y, Cvec, early=_polisher(F, y, Cvec)))
    if solved is None:
        solved = _linear_svm(F, y, C, tol, sample_weight=sample_weight)
        method = "libsvm"
        # polish libsvm's approximate solution to an exact KKT point when possible
        a, w, b = solved
        polished = _active_set_svm(F, y, Cvec, a, margin0=y * (F @ w + b))
        if polished is not None:
            solved = polished
            method = "libsvm+active-set"
    alpha, w, b = solved
    dual, primal = _svm_values(F, y, Cvec, alpha, w, b)
    if (primal - dual) > 1e-4 * max(1.0, abs(primal)) and F.shape[0] <= _QP_MAX_SAMPLES:
        qp = _qp_svm(F, y, Cvec, alpha)
        a, w2, b2 = qp
        polished = _active_set_svm(F, y, Cvec, a, margin0=y * (F @ w2 + b2))
        cand = polished if polished is not None else qp
        d2, p2 = _svm_values(F, y, Cvec, *cand)
        if p2 - d2 < primal - dual:
            (alpha, w, b), dual, primal = cand, d2, p2
            method = "qp+active-set" if polished is not None else "qp"
    beta = T.T @ w if T is not None else w
    return FixedZSolution(W=dual, primal=primal, alpha=alpha, beta=beta, intercept=b,
                          features=features, extra={"method": method})


def check_C(C, owner):
    """The trade-off ``C > 0`` of the SVM for fixed ``Z`` (eq. 28), as a float; a
    ValueError naming ``owner`` otherwise."""
    return check_scalar(C, "C", owner, lower=0.0, lower_inclusive=False)


def check_Z(Z, n_features, name="Z"):
    """The expansion vectors ``Z`` as a finite 2-D float array with ``n_features`` columns
    (a ValueError naming ``name`` otherwise)."""
    Z = check_array(Z, name)
    if Z.shape[1] != n_features:
        raise ValueError(f"{name} has {Z.shape[1]} features, but X has {n_features}.")
    return Z


def rs_objective(X, y, Z, kernel, C, beta, intercept):
    """Primal SVM objective (eq. 28) of a given classifier ``(Z, beta, b)``.

    This is what the RS coefficients (eq. 47) achieve on problem (28)-(30), to be
    compared with ``W(Z)`` of the exact solution (eq. 44): ``W(Z) <= rs_objective``.
    """
    y = np.asarray(y, dtype=float)
    Kz = kernel(Z)
    f = kernel.mmv(X, Z, beta) + intercept
    return float(0.5 * beta @ Kz @ beta + C * np.maximum(1.0 - y * f, 0.0).sum())
