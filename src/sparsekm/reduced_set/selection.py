"""Reduced-set selection: keep a subset of the original expansion vectors.

*Input space vs. feature space*, section V-C: elimination guided by kernel PCA
(eq. 60-65), L1-penalised selection (eq. 66-69) and its multi-output version with
an ``l1/l_inf`` penalty (eq. 70-73); and the *exact* reduction of *Fast
approximation*, section 7, which removes vectors at zero error while the Gram
matrix has a null space. Every method re-fits the kept coefficients by
Proposition 8 at the end.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import linalg
from scipy.linalg import blas, lapack
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from ..expansion import KernelExpansion
from ..utils.validation import check_scalar
from ._base import ReducedSetResult, ReducedSetWarning, _check_expansion, _coef2d, _solve_kz

__all__ = ["select_kpca", "select_backward", "select_l1", "select_l1_multi", "exact_reduction", "prepare_expansion", "l1_weights", "cholesky_factor"]


def _check_psd_kernel(kernel, owner):
    if not kernel.is_psd:
        raise ValueError(
            f"{owner} needs a positive semi-definite kernel (the Gram matrix defines the "
            f"squared distance being minimised); {kernel!r} is not."
        )


def _warn_more_than_terms(owner, n_vectors, n_terms, stacklevel=3):
    """The budget exceeds the expansion: it is kept whole (exact), with fewer vectors."""
    if n_vectors > n_terms:
        warnings.warn(
            f"{owner} was asked for n_vectors={n_vectors} but the expansion has only {n_terms} "
            f"terms: all {n_terms} are kept (zero error), not {n_vectors}.",
            ReducedSetWarning, stacklevel=stacklevel)


def prepare_expansion(expansion, owner):
    """``(expansion, X, A)`` of a non-empty expansion with a PSD kernel: the checked
    expansion, its vectors and its coefficients as a 2-D float array (n_terms, n_out)."""
    expansion = _check_expansion(expansion, owner)
    if expansion.n_terms == 0:
        raise ValueError(f"{owner} needs an expansion with at least one term; got an empty "
                         "expansion (Psi = 0 needs no reduction).")
    _check_psd_kernel(expansion.kernel, owner)
    X = np.asarray(expansion.vectors, dtype=np.float64)
    A = _coef2d(expansion)
    return expansion, X, A


def _finish(expansion, X, A, K, idx, path, norm2, n_iter=0, info=None):
    """Proposition 8 on the kept vectors; wrap as a ReducedSetResult."""
    idx = np.sort(np.asarray(idx, dtype=int))
    if idx.size == 0:
        # The penalty removed everything; keep the best single vector instead.
        KA = K @ A
        best = int(np.argmax(np.einsum("ij,ij->i", KA, KA) / np.maximum(np.diag(K), 1e-300)))
        warnings.warn(
            "The penalty is so large that no vector was selected; keeping the single best "
            f"vector (index {best}). Use a smaller lam.", ReducedSetWarning, stacklevel=3)
        idx = np.array([best])
    C = K[idx] @ A
    B = _solve_kz(K[np.ix_(idx, idx)], C)
    obj = np.maximum(norm2 - np.einsum("ij,ij->j", B, C), 0.0)
    multi = expansion.is_multioutput
    red = KernelExpansion(X[idx], B if multi else B[:, 0], expansion.kernel, expansion.intercept)
    path = np.asarray(path, dtype=np.float64).reshape(-1, A.shape[1]) if len(path) else \
        np.zeros((0, A.shape[1]))
    return ReducedSetResult(
        red, obj if multi else float(obj[0]), path if multi else path[:, 0], support=idx,
        norm2=norm2 if multi else float(norm2[0]), n_iter=n_iter, info=info or {})


def _sq_error(K, A, A_full_minus):
    D = A_full_minus
    return np.maximum(np.einsum("ij,ij->j", D, K @ D), 0.0)


def select_kpca(expansion, n_vectors, *, refit=True):
    """RS selection by eliminating one vector at a time with kernel PCA (eq. 63-65).

    At each step all eigenpairs ``(lambda_i, gamma^i)`` of the Gram matrix of the
    remaining vectors are computed; the pair ``(i, n)`` minimising

        rho(i, n) = |alpha_n / gamma_n^i|^2 lambda_i                    (eq. 64)

    names the vector ``x_n`` to remove, and the others absorb it:
    ``alpha_j <- alpha_j - alpha_n gamma_j^i / gamma_n^i`` (eq. 65). For a
    multi-output expansion ``|alpha_n|^2`` is summed over the outputs (one shared
    set of kept vectors). After the last removal all coefficients are re-fitted by
    Proposition 8.

    Parameters
    ----------
    expansion : KernelExpansion
    n_vectors : int >= 1
        Number of vectors to keep.
    refit : bool, default=True
        Re-fit the coefficients by Proposition 8 at the end (the paper re-computes
        them; ``False`` keeps the eq. 65 coefficients).

    Returns
    -------
    ReducedSetResult
        ``support`` indexes the kept vectors; ``objective_path[s]`` is
        ``||Psi - Psi'||^2`` with the eq. 65 coefficients after removal ``s + 1``.

    Notes
    -----
    Costs one symmetric eigendecomposition per removal, ``O(N^3)`` each, as in the
    paper ("we did compute all eigenvectors at each step").
    """
    expansion, X, A = prepare_expansion(expansion, "select_kpca")
    n_vectors = check_scalar(n_vectors, "n_vectors", "select_kpca", kind="int", lower=1)
    _warn_more_than_terms("select_kpca", n_vectors, X.shape[0])
    K = expansion.kernel(X)
    norm2 = np.einsum("ij,ij->j", A, K @ A)
    idx = np.arange(X.shape[0])
    cur = A.copy()
    path = []
    while idx.size > n_vectors:
        lam, V = linalg.eigh(K[np.ix_(idx, idx)], check_finite=False, driver="evd")
        # Floor at eps * lambda_max, not 0: among (numerically) null directions the
        # vector with the largest |gamma_n^i| is removed, not one whose entry is noise.
        lam = np.maximum(lam, np.finfo(float).eps * max(float(lam[-1]), 0.0))
        a2 = np.einsum("ij,ij->i", cur, cur)
        with np.errstate(divide="ignore", invalid="ignore"):
            R = a2[:, None] / (V * V) * lam[None, :]
        R[a2 == 0] = 0.0  # a zero coefficient is removed for free
        R[~np.isfinite(R)] = np.inf
        n, i = np.unravel_index(int(np.argmin(R)), R.shape)
        if a2[n] > 0:
            cur -= np.outer(V[:, i] / V[n, i], cur[n])
        keep = np.ones(idx.size, dtype=bool)
        keep[n] = False
        idx, cur = idx[keep], cur[keep]
        D = A.copy()
        D[idx] -= cur
        path.append(_sq_error(K, A, D))
    if not refit:
        multi = expansion.is_multioutput
        obj = path[-1] if path else np.zeros(A.shape[1])
        red = KernelExpansion(X[idx], cur if multi else cur[:, 0], expansion.kernel,
                              expansion.intercept)
        p = np.asarray(path).reshape(-1, A.shape[1])
        return ReducedSetResult(red, obj if multi else float(obj[0]), p if multi else p[:, 0],
                                support=idx, norm2=norm2 if multi else float(norm2[0]))
    return _finish(expansion, X, A, K, idx, path, norm2)


def select_backward(expansion, n_vectors, *, refresh=50):
    """Optimal greedy backward elimination: remove the vector whose removal, with all
    remaining coefficients re-fitted by Proposition 8, increases ``||Psi - Psi'||^2`` least.

    This is the exact version of the selection problem eq. 63 that *Input space vs.
    feature space* (section V-C) describes as "setting all computational
    considerations aside, the optimal greedy solution ... by using Proposition 8".
    It is cheap with the inverse Gram matrix: with ``beta`` optimal on the set ``S``
    (initially ``beta = alpha``, zero error), removing ``x_n`` costs exactly
    ``beta_n^2 / [K_S^{-1}]_nn`` (summed over outputs), after which
    ``beta <- beta - beta_n K_S^{-1} e_n / [K_S^{-1}]_nn`` and the inverse is
    down-dated in ``O(|S|^2)``.

    Parameters
    ----------
    expansion : KernelExpansion
    n_vectors : int >= 1
    refresh : int, default=50
        Re-compute the inverse from scratch every ``refresh`` removals (rounding).

    Returns
    -------
    ReducedSetResult
        ``objective_path[s]`` is the error after removal ``s + 1`` (with optimal
        coefficients, so it is non-decreasing).

    Raises
    ------
    ValueError
        If the Gram matrix of the expansion's vectors is singular (use
        :func:`exact_reduction` first to remove the null space).
    """
    expansion, X, A = prepare_expansion(expansion, "select_backward")
    n_vectors = check_scalar(n_vectors, "n_vectors", "select_backward", kind="int", lower=1)
    _warn_more_than_terms("select_backward", n_vectors, X.shape[0])
    refresh = check_scalar(refresh, "refresh", "select_backward", kind="int", lower=1)
    K = expansion.kernel(X)
    KA = K @ A  # K[idx] @ A is KA[idx]: the path costs O(|S| n_out) per removal, not O(N^2)
    norm2 = np.einsum("ij,ij->j", A, KA)

    def inverse(idx):
        # K_S^{-1} from its Cholesky factor (LAPACK potrf + potri: half the work of solving
        # against the identity), symmetrised
        c, info = lapack.dpotrf(K[np.ix_(idx, idx)], lower=1, clean=1)
        if info == 0:
            c, info = lapack.dpotri(c, lower=1)
        if info != 0:
            raise ValueError(
                "select_backward needs a non-singular Gram matrix; it is singular (duplicate "
                "vectors or a finite-dimensional feature space). Apply exact_reduction first.")
        return np.ascontiguousarray(np.tril(c) + np.tril(c, -1).T)

    idx = np.arange(X.shape[0])
    Kinv = inverse(idx)
    ger = blas.get_blas_funcs("ger", (Kinv,))
    alive = np.ones(idx.size, dtype=bool)  # rows of Kinv (and B) still in S
    B = A.copy()
    path = []
    step = 0
    while alive.sum() > n_vectors:
        d = np.diag(Kinv)
        cost = np.einsum("ij,ij->i", B, B) / np.maximum(d, 1e-300)
        cost[~alive] = np.inf
        n = int(np.argmin(cost))
        u = Kinv[:, n].copy()
        B -= np.outer(u / d[n], B[n])
        # K_S^{-1} down-dated in place (a rank-one update of the symmetric inverse, on its
        # Fortran-ordered transpose): row and column n become zero, up to rounding
        ger(-1.0 / d[n], u, u, a=Kinv.T, overwrite_a=1)
        Kinv[n, :] = 0.0
        Kinv[:, n] = 0.0
        B[n] = 0.0
        alive[n] = False
        step += 1
        if step % refresh == 0:
            idx = idx[alive]
            Kinv = inverse(idx)
            alive = np.ones(idx.size, dtype=bool)
            B = Kinv @ KA[idx]
        path.append(np.maximum(norm2 - np.einsum("ij,ij->j", B[alive], KA[idx[alive]]), 0.0))
    idx = idx[alive]
    return _finish(expansion, X, A, K, idx, path, norm2)


def l1_weights(c, A, owner):
    """The weights ``c_i`` of the L1 selection (eq. 66, Table III) for coefficients ``A``
    (n_terms, n_out): ``"uniform"``, ``"inverse"`` (mean |alpha| / |alpha_i|) or given."""
    N = A.shape[0]
    mag = np.abs(A).max(axis=1)
    if isinstance(c, str):
        if c == "uniform":
            return np.ones(N)
        if c == "inverse":
            # c_i = mean |alpha| / |alpha_i| (Table III); zero coefficients are never chosen.
            with np.errstate(divide="ignore"):
                return np.where(mag > 0, mag[mag > 0].mean() / mag, np.inf)
        raise ValueError(f"c must be 'uniform', 'inverse' or an array; got {c!r} in {owner}.")
    c = np.asarray(c, dtype=np.float64)
    if c.shape != (N,) or not np.all(c > 0) or np.any(np.isnan(c)):
        raise ValueError(
            f"c must hold {N} positive weights (one per expansion vector) in {owner}; got "
            f"shape {c.shape}.")
    return c


def cholesky_factor(K):
    """Upper ``R`` with ``K ~= R^T R`` (jitter added until the factorisation succeeds)."""
    jitter = 0.0
    scale = max(float(np.mean(np.diag(K))), 1e-300)
    for _ in range(12):
        try:
            return linalg.cholesky(K + jitter * np.eye(K.shape[0]), lower=False,
                                   check_finite=False)
        except linalg.LinAlgError:
            jitter = scale * 1e-12 if jitter == 0 else jitter * 10
    # Fall back to the symmetric square root (K is PSD up to rounding).
    lam, V = linalg.eigh(K)
    return (V * np.sqrt(np.maximum(lam, 0.0))).T


def select_l1(expansion, lam=None, *, n_vectors=None, c="uniform", refit=True, tol=1e-6,
              max_iter=10_000):
    """RS selection with an L1 penalty (eq. 66-69), solved as a weighted Lasso.

    Minimises ``||sum_i alpha_i Phi(x_i) - sum_i beta_i Phi(x_i)||^2 +
    lam sum_i c_i |beta_i|`` (eq. 66). With ``K = R^T R`` the first term is
    ``||R alpha - R beta||^2``, so eq. 66 is a Lasso with design ``R diag(1/c)`` and
    target ``R alpha`` (scikit-learn's coordinate descent with ``alpha = lam /
    (2 N)``); its solution equals the QP in ``beta^+, beta^-`` of eq. 68-69. The
    vectors with non-zero ``beta`` are kept and their coefficients re-fitted by
    Proposition 8.

    Parameters
    ----------
    expansion : KernelExpansion
        Single-output (use :func:`select_l1_multi` for several outputs).
    lam : float >= 0, optional
        ``lambda`` of eq. 66. Give exactly one of ``lam`` and ``n_vectors``.
    n_vectors : int >= 1, optional
        Instead of ``lam``: an exact budget. The ``lambda`` continuation path
        (coordinate descent warm-started from ``lambda_max``, where nothing is
        selected, down a log grid of 20 points per decade, as
        :func:`sklearn.linear_model.lasso_path`) is followed to the first point
        whose support has exactly ``n_vectors`` vectors; when the path skips that
        count, ``lambda`` is bisected between the neighbouring path points; when
        several vectors enter at the same ``lambda`` (to bisection precision), the
        support just before is completed with the entering vectors of largest
        ``|beta|`` (``info["completed"]``). Exactly ``n_vectors`` vectors are
        returned unless the expansion has fewer usable terms (a
        :class:`ReducedSetWarning` then gives both numbers).
    c : {"uniform", "inverse"} or array-like of shape (n_terms,), default="uniform"
        Weights ``c_i``: all 1, or ``mean|alpha| / |alpha_i|`` (Table III, RSS_2).
    refit : bool, default=True
        Re-fit the kept coefficients by Proposition 8 (otherwise keep the Lasso's).
    tol, max_iter
        Coordinate-descent tolerance and iteration bound.

    Returns
    -------
    ReducedSetResult
        ``support`` indexes the kept vectors; ``info["lam"]`` is the ``lambda`` used
        and ``info["beta_l1"]`` the penalised solution.
    """
    expansion, X, A = prepare_expansion(expansion, "select_l1")
    if expansion.is_multioutput:
        raise ValueError(
            "select_l1 approximates a single expansion; for several outputs use select_l1_multi "
            "(eq. 70-73) or select per output.")
    if (lam is None) == (n_vectors is None):
        raise ValueError("select_l1 needs exactly one of lam and n_vectors.")
    if lam is not None:
        lam = check_scalar(lam, "lam", "select_l1", lower=0)
    else:
        n_vectors = check_scalar(n_vectors, "n_vectors", "select_l1", kind="int", lower=1)
        _warn_more_than_terms("select_l1", n_vectors, X.shape[0])
    w = l1_weights(c, A, "select_l1")
    K = expansion.kernel(X)
    norm2 = np.einsum("ij,ij->j", A, K @ A)
    N = X.shape[0]
    usable = np.flatnonzero(np.isfinite(w))
    R = cholesky_factor(K)
    design = R[:, usable] / w[usable][None, :]
    target = R @ A[:, 0]
    info = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if lam is not None:
            if lam == 0:
                theta = np.linalg.lstsq(design, target, rcond=None)[0]
            else:
                model = Lasso(alpha=lam / (2.0 * N), fit_intercept=False, tol=tol,
                              max_iter=max_iter, selection="cyclic")
                theta = model.fit(design, target).coef_
        elif n_vectors >= usable.size:
            # The budget covers every usable vector: keep them all (lam = 0, the exact
            # least-squares fit after the Proposition 8 re-fit), with no path to follow.
            theta = np.linalg.lstsq(design, target, rcond=None)[0]
            lam = 0.0
            info["completed"] = False
        else:
            theta, alpha, completed = _lasso_with_support_size(design, target, n_vectors,
                                                               tol=tol, max_iter=max_iter)
            lam = alpha * 2.0 * N
            info["completed"] = completed
            found = int(np.count_nonzero(theta))
            if found != min(n_vectors, N):
                warnings.warn(
                    f"select_l1 was asked for n_vectors={n_vectors} but can select only "
                    f"{found}: the expansion has {N} terms, {usable.size} of them usable "
                    f"(non-zero weight), and the lambda path reaches no larger support.",
                    ReducedSetWarning, stacklevel=2)
    beta = np.zeros(N)
    beta[usable] = theta / w[usable]
    support = np.flatnonzero(beta != 0)
    if n_vectors is not None and n_vectors >= usable.size:
        support = usable  # every usable vector, even where the fit is exactly 0
    info.update({"lam": float(lam), "beta_l1": beta})
    if not refit and support.size:
        red = KernelExpansion(X[support], beta[support], expansion.kernel, expansion.intercept)
        D = A[:, 0] - beta
        obj = max(float(D @ K @ D), 0.0)
        return ReducedSetResult(red, obj, np.array([obj]), support=support,
                                norm2=float(norm2[0]), info=info)
    res = _finish(expansion, X, A, K, support, [], norm2, info=info)
    res.objective_path = np.array([res.objective])
    return res


def _lasso_with_support_size(design, target, n_vectors, *, tol, max_iter, n_alphas=201,
                             n_bisect=40):
    """Lasso solution with exactly ``n_vectors`` non-zeros, by continuation in ``alpha``.

    Returns ``(coef, alpha, completed)`` in scikit-learn's scaling (loss
    ``||y - X w||^2 / (2 n) + alpha ||w||_1``). ``completed`` says that the support
    was completed by magnitude because several coefficients entered at one
    ``alpha`` (to bisection precision). Fewer non-zeros are returned only when no
    ``alpha > 0`` reaches ``n_vectors`` (fewer usable columns or a rank limit).
    """
    n, p = design.shape
    if p == 0:
        return np.zeros(0), 0.0, False
    alpha_max = float(np.max(np.abs(design.T @ target))) / n
    if alpha_max <= 0:  # target 0: nothing to select
        return np.zeros(p), 0.0, False
    # The continuation path (as lasso_path, warm-started from alpha_max) on a log grid,
    # stopped as soon as the support reaches n_vectors.
    model = Lasso(alpha=alpha_max, fit_intercept=False, tol=tol, max_iter=max_iter,
                  warm_start=True, selection="cyclic")
    lo_coef, lo_alpha = np.zeros(p), alpha_max
    hi_coef = None
    for a in alpha_max * np.logspace(0, -10, n_alphas)[1:]:
        model.set_params(alpha=a)
        coef = model.fit(design, target).coef_.copy()
        size = np.count_nonzero(coef)
        if size == n_vectors:
            return coef, float(a), False
        if size > n_vectors:
            hi_coef, hi_alpha = coef, float(a)
            break
        lo_coef, lo_alpha = coef, float(a)
    if hi_coef is None:  # even alpha_max * 1e-10 keeps fewer: the rank/usable limit
        return lo_coef, lo_alpha, False
    model = Lasso(alpha=lo_alpha, fit_intercept=False, tol=tol, max_iter=max_iter,
                  warm_start=True, selection="cyclic")
    model.coef_ = lo_coef.copy()
    for _ in range(n_bisect):
        a = float(np.sqrt(lo_alpha * hi_alpha))
        if not lo_alpha > a > hi_alpha:
            break
        model.set_params(alpha=a)
        coef = model.fit(design, target).coef_.copy()
        size = np.count_nonzero(coef)
        if size == n_vectors:
            return coef, a, False
        if size < n_vectors:
            lo_coef, lo_alpha = coef, a
        else:
            hi_coef, hi_alpha = coef, a
        model.coef_ = lo_coef.copy()
    # Several vectors enter at the same alpha: keep the support just before and add
    # the entering ones with the largest |coef| just after (ties broken by index).
    keep = np.flatnonzero(lo_coef != 0)
    entering = np.setdiff1d(np.flatnonzero(hi_coef != 0), keep)
    need = n_vectors - keep.size
    order = entering[np.argsort(-np.abs(hi_coef[entering]), kind="stable")]
    if order.size < need:  # pragma: no cover - hi has more than n_vectors non-zeros
        extra = np.setdiff1d(np.arange(p), np.concatenate([keep, order]))
        order = np.concatenate([order, extra])
    coef = lo_coef.copy()
    coef[order[:need]] = hi_coef[order[:need]]
    return coef, hi_alpha, True


def _project_l1_rows(V, radius):
    """Euclidean projection of each row of ``V`` onto the l1 ball of its ``radius``."""
    U = np.abs(V)
    inside = U.sum(axis=1) <= radius
    out = V.copy()
    rows = np.flatnonzero(~inside)
    if rows.size == 0:
        return out
    Ur = U[rows]
    S = -np.sort(-Ur, axis=1)
    css = np.cumsum(S, axis=1) - radius[rows, None]
    ks = np.arange(1, V.shape[1] + 1)
    cond = S - css / ks > 0
    rho = V.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = np.maximum(css[np.arange(rows.size), rho] / (rho + 1), 0.0)
    out[rows] = np.sign(V[rows]) * np.maximum(Ur - theta[:, None], 0.0)
    return out


def _prox_linf_rows(V, thresh):
    """prox of ``sum_i thresh_i ||v_i||_inf``: ``v - P_{l1 ball(thresh_i)}(v)`` (Moreau)."""
    return V - _project_l1_rows(V, thresh)


def l1_multi_objective(K, A, B, lam, c):
    """Objective of eq. 70-71: ``sum_j ||Psi^j - Psi'^j||^2 + lam sum_i c_i max_j |B_ij|``."""
    D = A - B
    return float(np.einsum("ij,ij->", D, K @ D) + lam * np.sum(c * np.abs(B).max(axis=1)))


def select_l1_multi(expansion, lam=None, *, n_vectors=None, c="uniform", refit=True, tol=1e-7,
                    max_iter=20_000, B0=None):
    """Shared RS selection for several expansions (eq. 70-73).

    Minimises ``sum_j ||Psi^j - sum_i beta_i^j Phi(x_i)||^2 + lam sum_i c_i xi_i``
    subject to ``|beta_i^j| <= xi_i`` (eq. 70-71), i.e. an ``l1/l_inf`` group
    penalty ``lam sum_i c_i max_j |beta_i^j|``: once a vector is used by one
    output, the others may use it for free. Solved by accelerated proximal
    gradient (FISTA) with the exact ``l_inf`` proximal operator (row-wise
    projection onto ``l1`` balls); the vectors with any non-zero coefficient are
    kept and the coefficients re-fitted by Proposition 8.

    Parameters
    ----------
    expansion : KernelExpansion
        Multi-output (single-output expansions are treated as one column).
    lam : float > 0, optional
        ``lambda`` of eq. 70. Give exactly one of ``lam`` and ``n_vectors``.
    n_vectors : int >= 1, optional
        Instead of ``lam``: an exact budget of shared vectors. ``lambda`` follows a
        continuation path down from ``lambda_max = max_i ||2 (K A)_i||_1 / c_i``
        (where ``B = 0`` is optimal; 10 points per decade, warm starts) to the
        first support of exactly ``n_vectors`` rows, bisecting between path points
        that skip it and, if several rows enter at one ``lambda``, completing the
        support by the largest ``max_j |beta_i^j|`` (``info["completed"]``). A
        :class:`ReducedSetWarning` gives both numbers if the budget cannot be met.
    c : {"uniform", "inverse"} or array-like of shape (n_terms,)
        ``"inverse"`` uses ``mean_i max_j|alpha_i^j| / max_j|alpha_i^j|``.
    refit : bool, default=True
    tol : float, default=1e-7
        Stop when the relative change of ``B`` per iteration is below ``tol``.
    max_iter : int, default=20000
    B0 : array-like of shape (n_terms, n_outputs), optional
        Warm start (e.g. the solution for a nearby ``lam``).

    Returns
    -------
    ReducedSetResult
        ``info["B_l1"]`` is the penalised solution, ``info["objective_l1"]`` its
        eq. 70 objective and ``info["converged"]`` whether ``tol`` was met.
    """
    expansion, X, A = prepare_expansion(expansion, "select_l1_multi")
    if (lam is None) == (n_vectors is None):
        raise ValueError("select_l1_multi needs exactly one of lam and n_vectors.")
    if lam is not None:
        lam = check_scalar(lam, "lam", "select_l1_multi", lower=0, lower_inclusive=False)
    else:
        n_vectors = check_scalar(n_vectors, "n_vectors", "select_l1_multi", kind="int",
                                 lower=1)
        _warn_more_than_terms("select_l1_multi", n_vectors, X.shape[0])
    max_iter = check_scalar(max_iter, "max_iter", "select_l1_multi", kind="int", lower=1)
    w = l1_weights(c, A, "select_l1_multi")
    K = expansion.kernel(X)
    norm2 = np.einsum("ij,ij->j", A, K @ A)
    L = 2.0 * float(linalg.eigh(K, eigvals_only=True, subset_by_index=[K.shape[0] - 1,
                                                                     K.shape[0] - 1])[0])
    KA = K @ A
    if B0 is not None:
        B0 = np.array(B0, dtype=np.float64)
        if B0.shape != A.shape:
            raise ValueError(f"B0 must have shape {A.shape}; got {B0.shape}.")
    extra = {}
    n_usable = int(np.isfinite(w).sum())
    if lam is not None:
        B, converged, n_iter = _fista_l1_linf(K, KA, w, lam, B0, L, tol, max_iter)
    elif n_vectors >= n_usable:
        # every usable vector fits the budget: no path, the exact Proposition 8 fit
        B, lam, converged, n_iter = np.where(np.isfinite(w)[:, None], A, 0.0), 0.0, True, 0
    else:
        B, lam, converged, n_iter, completed = _l1_linf_with_support_size(
            K, KA, w, n_vectors, B0, L, tol, max_iter)
        extra["completed"] = completed
        found = int(np.count_nonzero(np.any(B != 0, axis=1)))
        if found != min(n_vectors, A.shape[0]):
            warnings.warn(
                f"select_l1_multi was asked for n_vectors={n_vectors} but can select only "
                f"{found}: the expansion has {A.shape[0]} terms, "
                f"{int(np.isfinite(w).sum())} of them usable (non-zero weight).",
                ReducedSetWarning, stacklevel=2)
    support = np.flatnonzero(np.any(B != 0, axis=1))
    info = {"lam": float(lam), "B_l1": B, "converged": converged, **extra,
            "objective_l1": l1_multi_objective(K, A, B, lam, np.where(np.isfinite(w), w, 0))}
    if not refit and support.size:
        multi = expansion.is_multioutput
        D = A - B
        obj = np.maximum(np.einsum("ij,ij->j", D, K @ D), 0.0)
        red = KernelExpansion(X[support], B[support] if multi else B[support, 0],
                              expansion.kernel, expansion.intercept)
        return ReducedSetResult(red, obj if multi else float(obj[0]),
                                obj[None] if multi else obj, support=support,
                                norm2=norm2 if multi else float(norm2[0]), n_iter=n_iter,
                                info=info)
    res = _finish(expansion, X, A, K, support, [], norm2, n_iter=n_iter, info=info)
    res.objective_path = np.atleast_1d(res.objective)[None] if expansion.is_multioutput \
        else np.array([res.objective])
    return res


def _fista_l1_linf(K, KA, w, lam, B0, L, tol, max_iter):
    """FISTA for eq. 70-71 at one ``lam``: ``(B, converged, n_iter)``."""
    step = 1.0 / max(L, 1e-300)
    thresh = np.where(np.isfinite(w), lam * w * step, np.inf)
    inf_rows = ~np.isfinite(thresh)
    B = np.zeros_like(KA) if B0 is None else np.array(B0, dtype=np.float64)
    Yk, t = B.copy(), 1.0
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        G = 2.0 * (K @ Yk - KA)
        V = Yk - step * G
        B_new = _prox_linf_rows(np.where(inf_rows[:, None], 0.0, V),
                                np.where(inf_rows, 0.0, thresh))
        B_new[inf_rows] = 0.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        Yk = B_new + ((t - 1.0) / t_new) * (B_new - B)
        change = np.abs(B_new - B).max() / max(np.abs(B_new).max(), 1e-300)
        B, t = B_new, t_new
        if change < tol:
            converged = True
            break
    return B, converged, n_iter


def _l1_linf_with_support_size(K, KA, w, n_vectors, B0, L, tol, max_iter, per_decade=10,
                               n_bisect=30):
    """Eq. 70-71 along a ``lam`` continuation path to exactly ``n_vectors`` rows.

    Returns ``(B, lam, converged, n_iter, completed)``.
    """
    usable = np.isfinite(w)
    rows = lambda B: int(np.count_nonzero(np.any(B != 0, axis=1)))  # noqa: E731
    lam_max = float(np.max(np.where(usable, 2.0 * np.abs(KA).sum(axis=1) /
                                    np.where(usable, w, 1.0), 0.0)))
    zero = np.zeros_like(KA)
    if lam_max <= 0:
        return zero, 0.0, True, 0, False
    total_iter = 0
    lo_B, lo_lam, hi_B, hi_lam = zero, lam_max, None, None
    B = zero if B0 is None else B0
    conv = True
    for lam in lam_max * np.logspace(0, -10, 10 * per_decade + 1)[1:]:
        B, conv, it = _fista_l1_linf(K, KA, w, lam, B, L, tol, max_iter)
        total_iter += it
        size = rows(B)
        if size == n_vectors:
            return B, float(lam), conv, total_iter, False
        if size > n_vectors:
            hi_B, hi_lam = B, float(lam)
            break
        lo_B, lo_lam = B, float(lam)
    if hi_B is None:
        return lo_B, lo_lam, conv, total_iter, False
    for _ in range(n_bisect):
        lam = float(np.sqrt(lo_lam * hi_lam))
        if not lo_lam > lam > hi_lam:
            break
        B, conv, it = _fista_l1_linf(K, KA, w, lam, lo_B, L, tol, max_iter)
        total_iter += it
        size = rows(B)
        if size == n_vectors:
            return B, lam, conv, total_iter, False
        if size < n_vectors:
            lo_B, lo_lam = B, lam
        else:
            hi_B, hi_lam = B, lam
    keep = np.flatnonzero(np.any(lo_B != 0, axis=1))
    mag = np.abs(hi_B).max(axis=1)
    entering = np.setdiff1d(np.flatnonzero(mag > 0), keep)
    order = entering[np.argsort(-mag[entering], kind="stable")]
    chosen = order[:n_vectors - keep.size]
    B = lo_B.copy()
    B[chosen] = hi_B[chosen]
    return B, hi_lam, conv, total_iter, True


def exact_reduction(expansion, *, tol=1e-10):
    """Remove vectors at zero error while the Gram matrix has a null space.

    If ``K eta = 0`` then ``sum_i eta_i Phi(x_i) = 0`` (eq. 60-61), so the vector with
    the largest ``|eta_i|`` is a combination of the others:
    ``Phi(x_imax) = -sum_{i != imax} eta_i Phi(x_i) / eta_imax`` (*Fast
    approximation*, section 7) and can be removed exactly. Repeated until the
    smallest eigenvalue of the remaining Gram matrix exceeds ``tol`` times the
    largest; the coefficients are then re-fitted by Proposition 8.

    Parameters
    ----------
    expansion : KernelExpansion
    tol : float, default=1e-10
        Relative eigenvalue threshold for "zero".

    Returns
    -------
    ReducedSetResult
        Zero error (to rounding) when the removed directions are exact null vectors;
        for Gaussian kernels (full-rank Gram matrices) nothing is removed unless
        vectors are duplicated.
    """
    expansion, X, A = prepare_expansion(expansion, "exact_reduction")
    tol = check_scalar(tol, "tol", "exact_reduction", lower=0)
    K = expansion.kernel(X)
    norm2 = np.einsum("ij,ij->j", A, K @ A)
    idx = np.arange(X.shape[0])
    cur = A.copy()
    path = []
    while idx.size > 1:
        lam, V = linalg.eigh(K[np.ix_(idx, idx)], check_finite=False)
        if lam[0] > tol * max(lam[-1], 1e-300):
            break
        eta = V[:, 0]
        n = int(np.argmax(np.abs(eta)))
        cur -= np.outer(eta / eta[n], cur[n])
        keep = np.ones(idx.size, dtype=bool)
        keep[n] = False
        idx, cur = idx[keep], cur[keep]
        D = A.copy()
        D[idx] -= cur
        path.append(_sq_error(K, A, D))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _finish(expansion, X, A, K, idx, path, norm2)
