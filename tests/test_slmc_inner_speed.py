"""The faster inner-SVM paths of SLMC (issue 25) reach the same exact KKT point as before.

Each speed-up of ``fixed_z`` -- the bordered Gram system of the active set, its damped
exchange, the active-set polish of interior-point iterates and the capped libsvm cold
start -- is checked against an independent computation (the full KKT system, the
interior point on all samples from a cold start, or libsvm at a tight tolerance followed
by the polish): same ``W`` (eq. 44) and ``beta`` (eq. 45) within stated tolerances, and
every KKT condition of the returned point.
"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification

from sparsekm.kernels import RBF
from sparsekm.models import SLMC
from sparsekm.sparse_learning import fixed_z
from sparsekm.sparse_learning import svm_marginal as slmc_mod

C = 10.0


def _features(X, Z, k):
    T = fixed_z.whitening_transform(k(Z), on_singular="pinv")
    return (T @ k(Z, X)).T, T


def _problem(n=600, n_vectors=30, seed=0, shift=0.0, class_sep=1.5):
    """A binary problem in 10 dimensions, ``Z`` from the data and ``Z`` moved by ``shift``."""
    X, y = make_classification(n, n_features=10, n_informative=6, flip_y=0.0,
                               class_sep=class_sep, random_state=seed)
    y = np.where(y == 1, 1.0, -1.0)
    rng = np.random.default_rng(seed)
    Z = X[rng.choice(n, n_vectors, replace=False)]
    return X, y, Z, Z + shift * rng.standard_normal(Z.shape)


def _reference(F, T, y):
    """libsvm at a tight tolerance, polished (the plain reference path)."""
    return fixed_z.solve_features(F, T, y, C, tol=1e-10, warm_start=None, sample_weight=None,
                                   solver="libsvm", features="whitened")


def _assert_kkt(F, y, alpha, w, b, tol=1e-7):
    """0 <= alpha <= C, y^T alpha = 0, w = F^T (alpha y) and the complementarity rules."""
    assert np.all(alpha >= 0) and np.all(alpha <= C)
    np.testing.assert_allclose(alpha @ y, 0.0, atol=1e-9 * C * len(y))
    np.testing.assert_allclose(w, F.T @ (alpha * y), rtol=1e-9, atol=1e-9)
    margin = y * (F @ w + b)
    assert np.all(margin[alpha < 1e-8 * C] >= 1 - tol)
    assert np.all(margin[alpha > (1 - 1e-8) * C] <= 1 + tol)
    free = (alpha > 1e-8 * C) & (alpha < (1 - 1e-8) * C)
    np.testing.assert_allclose(margin[free], 1.0, atol=tol)


def _same(sol, ref):
    np.testing.assert_allclose(sol.W, ref.W, rtol=1e-9)
    scale = np.abs(ref.beta).max()
    np.testing.assert_allclose(sol.beta, ref.beta, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(sol.intercept, ref.intercept, rtol=0, atol=1e-6)


def _margin_system_full(F, y, C, S, B, s_idx):
    """The margin system by the full KKT system in ``(w, b, alpha_S)`` of size
    ``n_features + 1 + |S|`` (the independent reference of the bordered Gram form)."""
    m = F.shape[1]
    k = s_idx.size
    Fs, ys = F[s_idx], y[s_idx]
    A = np.zeros((m + 1 + k, m + 1 + k))
    rhs = np.zeros(m + 1 + k)
    A[:m, :m] = np.eye(m)
    A[:m, m + 1:] = -(Fs * ys[:, None]).T
    rhs[:m] = F[B].T @ (C[B] * y[B])
    A[m, m + 1:] = ys
    rhs[m] = -(C[B] * y[B]).sum()
    A[m + 1:, :m] = Fs * ys[:, None]
    A[m + 1:, m] = ys
    rhs[m + 1:] = 1.0
    sol = np.linalg.solve(A, rhs)
    return sol[:m], sol[m], sol[m + 1:]


def test_gram_system_equals_full_kkt_system():
    # _margin_system (|S| + 1 unknowns) and the previous full system (n_features + 1 + |S|)
    # give the same (w, b, alpha_S) for any partition
    X, y, Z, _ = _problem()
    F, _ = _features(X, Z, RBF(0.05))
    rng = np.random.default_rng(3)
    Cv = np.full(len(y), C)
    for _ in range(5):
        u = rng.random(len(y))
        S = u < 0.02
        B = (u > 0.02) & (u < 0.06)
        s_idx = np.flatnonzero(S)
        w1, b1, a1 = fixed_z._margin_system(F, y, Cv, S, B, s_idx)
        w2, b2, a2 = _margin_system_full(F, y, Cv, S, B, s_idx)
        np.testing.assert_allclose(w1, w2, rtol=1e-8, atol=1e-8 * np.abs(w2).max())
        np.testing.assert_allclose(b1, b2, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(a1, a2, rtol=1e-7, atol=1e-7 * np.abs(a2).max())


@pytest.mark.parametrize("damp", [(0, 0.5, 10), (1, 0.5, 10), (100, 0.5, 10), (0, 0.2, 3)])
@pytest.mark.parametrize(("shift", "class_sep"), [(0.03, 1.5), (0.1, 2.5)])
def test_damped_active_set_reaches_the_reference_kkt_point(damp, shift, class_sep):
    # warm start from the solution at Z, solve at a moved Z (5 margin vectors change):
    # damped from the first step, from the second (the default), never (only on a
    # degenerate set or a cycle), or the cautious retry (a fifth of the violators)
    X, y, Z, Z2 = _problem(shift=shift, class_sep=class_sep)
    k = RBF(0.05)
    F, T = _features(X, Z, k)
    F2, T2 = _features(X, Z2, k)
    warm = _reference(F, T, y).alpha
    ref = _reference(F2, T2, y)
    solved = fixed_z._active_set_svm(F2, y, C, warm, max_iter=60, damp=damp)
    assert solved is not None
    alpha, w, b = solved
    _assert_kkt(F2, y, alpha, w, b)
    dual = alpha.sum() - 0.5 * w @ w
    np.testing.assert_allclose(dual, ref.W, rtol=1e-9)
    np.testing.assert_allclose(T2.T @ w, ref.beta, rtol=0, atol=1e-6 * np.abs(ref.beta).max())


def test_interior_point_early_polish_gives_the_converged_solution():
    X, y, Z, _ = _problem(n=800)
    F, T = _features(X, Z, RBF(0.05))
    hook = fixed_z._polisher(F, y, C)
    calls = []

    def counting(*a):
        calls.append(1)
        return hook(*a)

    early = fixed_z._ipm_svm(F, y, C, early=counting)
    assert calls  # the polish was tried on an interior iterate
    n_calls = len(calls)
    # no early hook: converge, then polish
    late = fixed_z._polish(F, y, C, "ipm", fixed_z._ipm_svm(F, y, C, early=None))[0]
    assert len(calls) == n_calls
    ref = _reference(F, T, y)
    for alpha, w, b in (early, late):
        _assert_kkt(F, y, alpha, w, b)
        np.testing.assert_allclose(alpha.sum() - 0.5 * w @ w, ref.W, rtol=1e-9)
        np.testing.assert_allclose(T.T @ w, ref.beta, rtol=0, atol=1e-6 * np.abs(ref.beta).max())


def test_cold_libsvm_start_equals_the_interior_point():
    X, y, Z, _ = _problem(n=800)
    F, T = _features(X, Z, RBF(0.05))
    kw = dict(tol=1e-4, warm_start=None, sample_weight=None, solver="auto",
              features="whitened")
    cold = fixed_z.solve_features(F, T, y, C, cold="libsvm", **kw)
    ipm = fixed_z.solve_features(F, T, y, C, cold="ipm", **kw)
    assert cold.extra["method"] == "libsvm+active-set"
    assert ipm.extra["method"].startswith("ipm")
    _same(cold, ipm)
    _same(cold, _reference(F, T, y))
    _assert_kkt(F, y, cold.alpha, F.T @ (cold.alpha * y), cold.intercept)


def test_shared_slmc_follows_the_cold_interior_point_path(monkeypatch):
    # the whole L-BFGS run over the shared Z: same W history, Z, W and beta as when every
    # inner SVM is solved from scratch by the interior point on all samples (no warm
    # active set, no libsvm cold start, no working set): both reach exact KKT points
    X, y = make_blobs(700, centers=4, cluster_std=2.5, random_state=4)
    kw = dict(n_vectors=25, C=C, kernel=RBF(0.1), init="kmeans", shared=True, max_iter=6,
              tol=1e-9, random_state=0)
    paths = {}
    original = slmc_mod.solve_features

    def counting(*a, **k):
        sol = original(*a, **k)
        paths[sol.extra["method"]] = paths.get(sol.extra["method"], 0) + 1
        return sol

    monkeypatch.setattr(slmc_mod, "solve_features", counting)
    with pytest.warns(Warning):  # stops at max_iter
        fast = SLMC(**kw).fit(X, y)
    assert paths.get("libsvm+active-set", 0) == 4  # the cold start of the 4 problems

    def cold_ipm(*a, **k):
        return original(*a, **{**k, "warm_start": None, "cold": "ipm"})

    monkeypatch.setattr(slmc_mod, "solve_features", cold_ipm)
    with pytest.warns(Warning):
        old = SLMC(**kw).fit(X, y)
    # equal to rounding, amplified by L-BFGS over the iterations (as in
    # test_working_set_inner_svm_gives_the_same_slmc)
    np.testing.assert_allclose(fast.W_history_[0], old.W_history_[0], rtol=1e-7)
    np.testing.assert_allclose(fast.expansion_.vectors, old.expansion_.vectors, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(fast.objective_, old.objective_, rtol=1e-7)
    coef = old.expansion_.coef
    np.testing.assert_allclose(fast.expansion_.coef, coef, rtol=0,
                               atol=1e-5 * np.abs(coef).max())
    np.testing.assert_array_equal(fast.predict(X), old.predict(X))
