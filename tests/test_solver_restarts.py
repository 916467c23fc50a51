"""Nonconvex solvers: best of the restarts by the paper's objective, stopping on its relative change."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning

from sparsekm import sparse_learning as sl
from sparsekm.kernels import RBF
from sparsekm.models import SLMC
from sparsekm.utils.optimize import RELATIVE_STOP, lbfgs_relative


@pytest.fixture
def moons():
    X, y = make_moons(120, noise=0.25, random_state=3)
    return X, np.where(y == 1, 1.0, -1.0)


def _starts(X, n, k, seed):
    rng = np.random.default_rng(seed)
    return [X[rng.choice(len(X), k, replace=False)] for _ in range(n)]


def test_slmc_optimize_keeps_the_best_restart(moons):
    X, y = moons
    k = RBF(1.0)
    starts = _starts(X, 3, 4, 0)
    single = [sl.slmc_optimize(X, y, Z0, k, 10.0, max_iter=15) for Z0 in starts]
    best = sl.slmc_optimize(X, y, starts, k, 10.0, max_iter=15)
    values = np.array([r.fun for r in single])
    np.testing.assert_allclose(best.restarts, values, rtol=1e-10)
    assert best.fun == pytest.approx(values.min(), rel=1e-10)
    np.testing.assert_allclose(best.Z, single[int(np.argmin(values))].Z, rtol=1e-10)
    # the returned objective is W at the returned Z (eq. 44), solved afresh
    assert sl.slmc_objective(X, y, best.Z, k, 10.0, tol=1e-8) == pytest.approx(best.fun,
                                                                               rel=1e-6)
    # a 3-D array of starts is the same as the list
    again = sl.slmc_optimize(X, y, np.stack(starts), k, 10.0, max_iter=15)
    np.testing.assert_allclose(again.restarts, best.restarts, rtol=1e-12)


def test_slmc_shared_optimize_keeps_the_best_restart():
    X, y = make_blobs(90, centers=3, cluster_std=1.5, random_state=1)
    problems = [(X, np.where(y == c, 1.0, -1.0)) for c in range(3)]
    k = RBF(0.3)
    starts = _starts(X, 3, 5, 1)
    single = [sl.slmc_shared_optimize(problems, Z0, k, 5.0, max_iter=10).fun for Z0 in starts]
    best = sl.slmc_shared_optimize(problems, starts, k, 5.0, max_iter=10)
    assert best.fun == pytest.approx(min(single), rel=1e-10)
    np.testing.assert_allclose(best.restarts, single, rtol=1e-10)
    assert best.fun == pytest.approx(sum(s.W for s in best.solution), rel=1e-10)


@pytest.mark.parametrize("shared", [False, True])
def test_slmc_estimator_restarts(shared):
    X, y = make_blobs(90, centers=3, cluster_std=1.5, random_state=1)
    # a loose tol: every run converges well within max_iter (with tol=1e-6 they stopped at
    # the cap, which is not what this test is about), in no more time
    kw = dict(n_vectors=4, C=5.0, kernel=RBF(0.3), init="random", max_iter=40, tol=1e-3,
              shared=shared, random_state=0)
    clf = SLMC(n_init=3, **kw).fit(X, y)
    assert len(clf.restart_objectives_) == (1 if shared else 3)
    for vals in clf.restart_objectives_:
        assert vals.shape == (3,)
    # the kept run is the lowest: the final W (re-solved tightly at the kept Z) is its value
    kept = [v.min() for v in clf.restart_objectives_]
    np.testing.assert_allclose(clf.objective_.sum(), np.sum(kept), rtol=1e-4)
    # the first start is the one n_init=1 draws (problem 0's, or the shared one)
    one = SLMC(n_init=1, **kw).fit(X, y)
    assert clf.restart_objectives_[0][0] == pytest.approx(one.restart_objectives_[0][0],
                                                          rel=1e-9)
    with pytest.raises(ValueError, match="n_init"):
        SLMC(n_init=2, n_vectors=4, init=X[:4], kernel=RBF(0.3)).fit(X, y)
    with pytest.raises(ValueError, match="n_init"):
        SLMC(n_init=0, n_vectors=4, kernel=RBF(0.3)).fit(X, y)


def test_slmc_stops_on_relative_change(moons):
    X, y = moons
    tol = 1e-3
    res = sl.slmc_optimize(X, y, _starts(X, 1, 5, 2)[0], RBF(1.0), 10.0, max_iter=200, tol=tol)
    h = np.asarray(res.W_history)
    rel = (h[:-1] - h[1:]) / np.maximum(np.abs(h[:-1]), np.abs(h[1:]))
    assert res.n_iter < 200 and res.message == RELATIVE_STOP
    assert rel[-1] <= tol  # stopped on the rule ...
    assert np.all(rel[:-1] > tol)  # ... at its first occurrence
    assert np.all(rel >= -1e-12)  # W never increases


def test_relative_rule_is_scale_free():
    # scipy's ftol measures the change against max(|f|, 1): an absolute test for small
    # objectives. The relative rule gives the same iterates whatever the scale.
    rng = np.random.default_rng(0)
    M = rng.normal(size=(8, 8))
    H = M @ M.T + 0.1 * np.eye(8)
    x0 = rng.normal(size=8)

    def quad(scale):
        return lambda x: (scale * (0.5 * x @ H @ x + 1.0), scale * (H @ x))

    runs = [lbfgs_relative(quad(s), x0, max_iter=100, tol=1e-6, gtol=0.0) for s in (1.0, 1e-6)]
    assert runs[0][2] == runs[1][2]  # same iteration count
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-6, atol=1e-9)
    assert runs[0][3] == RELATIVE_STOP


def test_phase2_stops_on_relative_change():
    from sparsekm import KernelExpansion
    from sparsekm.reduced_set import construct, refine

    rng = np.random.default_rng(4)
    psi = KernelExpansion(rng.normal(size=(60, 3)), rng.normal(size=60), RBF(0.5))
    start = construct(psi, 6, random_state=0).expansion
    loose = refine(psi, start, max_iter=500, tol=1e-3)
    tight = refine(psi, start, max_iter=500, tol=1e-12)
    assert loose.n_iter < tight.n_iter
    # both never worse than the start, the tight run at least as good as the loose one
    assert tight.objective <= loose.objective * (1 + 1e-12) <= loose.objective_path[0]
    with pytest.raises(ValueError, match="tol"):
        refine(psi, start, tol=-1.0)


@pytest.mark.parametrize("shared", [False, True])
def test_working_set_inner_svm_gives_the_same_slmc(monkeypatch, shared):
    # the working-set interior point is exact (KKT checked on every sample): the L-BFGS
    # path over Z is the one of the interior point on all samples, to rounding
    from sparsekm.sparse_learning import fixed_z

    X, y = make_blobs(400, centers=3, cluster_std=2.0, random_state=5)
    kw = dict(n_vectors=6, C=10.0, kernel=RBF(0.2), init="kmeans", max_iter=8, shared=shared,
              random_state=0)
    counts = {"ws": 0}
    original = fixed_z._ipm_working_set

    def counting(*a, **k):
        counts["ws"] += 1
        return original(*a, **k)

    # the two paths are compared over their first 8 iterations: both stop at the cap, and say so
    capped = r"stopped at max_iter=8 L-BFGS iterations over Z before W\(Z\) converged"
    monkeypatch.setattr(fixed_z, "_ipm_working_set", counting)
    with pytest.warns(ConvergenceWarning, match=capped):
        fast = SLMC(**kw).fit(X, y)
    # no working set: the interior point on all samples
    monkeypatch.setattr(fixed_z, "_ipm_working_set", lambda *a, **k: None)
    with pytest.warns(ConvergenceWarning, match=capped):
        full = SLMC(**kw).fit(X, y)
    assert counts["ws"] > 0  # the working-set path did run
    for a, b in zip(fast.W_history_, full.W_history_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7)
    np.testing.assert_allclose(fast.expansion_.vectors, full.expansion_.vectors, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(fast.objective_, full.objective_, rtol=1e-7)


def test_patience_needs_consecutive_quiet_iterations():
    rng = np.random.default_rng(1)
    M = rng.normal(size=(30, 30))
    H = M @ M.T / 30 + 1e-3 * np.eye(30)  # ill-conditioned: slow, uneven progress
    x0 = rng.normal(size=30)
    hist = []

    def fun(x):
        return 0.5 * x @ H @ x + 1.0, H @ x

    tol = 1e-4
    _, _, nit, msg, hist = lbfgs_relative(fun, x0, max_iter=500, tol=tol, gtol=0.0, patience=3)
    h = np.concatenate([[fun(x0)[0]], hist])
    quiet = (h[:-1] - h[1:]) <= tol * np.maximum(np.abs(h[:-1]), np.abs(h[1:]))
    assert msg == RELATIVE_STOP and nit == len(hist)
    assert quiet[-3:].all()  # stopped after three quiet iterations in a row ...
    runs = np.convolve(quiet[:-1].astype(int), np.ones(3, dtype=int), mode="valid")
    assert np.all(runs < 3)  # ... and not before
