"""Multi-class SLMC with expansion vectors shared by all one-vs-rest problems."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

import sparsekm
from sparsekm import sparse_learning as sl
from sparsekm.kernels import RBF
from sparsekm.models import SLMC


@pytest.fixture
def blobs():
    X, y = make_blobs(150, centers=3, cluster_std=1.6, random_state=2)
    return X, y


def _ovr(X, y):
    return [(X, np.where(y == k, 1.0, -1.0)) for k in np.unique(y)]


def test_shared_objective_is_sum_of_per_class_objectives(blobs):
    """W(Z) = sum_c W_c(Z); its gradient is the sum of the eq. 46 gradients."""
    X, y = blobs
    k, C = RBF(0.3), 5.0
    Z = X[::19] + 0.1
    W, G, sols = sl.slmc_shared_objective(_ovr(X, y), Z, k, C)
    Ws, Gs = 0.0, np.zeros_like(Z)
    for Xc, yc in _ovr(X, y):
        sol = sl.fixed_z_svm(Xc, yc, Z, k, C, tol=1e-10)
        Ws += sol.W
        Gs += sl.slmc_gradient(Xc, yc, Z, k, sol.alpha, sol.beta)
    np.testing.assert_allclose(W, Ws, rtol=1e-9)
    np.testing.assert_allclose(G, Gs, rtol=1e-6, atol=1e-9 * np.abs(Gs).max())
    assert len(sols) == 3


def test_shared_gradient_matches_finite_differences(blobs):
    """Corollary 2 per class: the summed gradient equals FD of the re-solved objective."""
    X, y = blobs
    k, C = RBF(0.3), 5.0
    rng = np.random.default_rng(0)
    Z = X[rng.choice(len(X), 6, replace=False)] + 0.05 * rng.standard_normal((6, 2))
    problems = _ovr(X, y)
    _, G, _ = sl.slmc_shared_objective(problems, Z, k, C)
    eps = 1e-5
    Gfd = np.zeros_like(Z)
    for u in range(Z.shape[0]):
        for v in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[u, v] += eps
            Zm[u, v] -= eps
            Gfd[u, v] = (sl.slmc_shared_objective(problems, Zp, k, C)[0]
                         - sl.slmc_shared_objective(problems, Zm, k, C)[0]) / (2 * eps)
    rel = np.linalg.norm(G - Gfd) / np.linalg.norm(Gfd)
    assert rel < 1e-4, rel


def _separated_problems():
    """Two binary problems 1000 apart: k(x, z) = exp(-1e6) = 0 between them exactly."""
    rng = np.random.default_rng(5)
    X1 = rng.normal(size=(100, 2))
    y1 = np.where(X1[:, 0] + 0.5 * X1[:, 1] ** 2 > 0.3, 1.0, -1.0)
    X2 = rng.normal(size=(90, 2)) + 1000.0
    y2 = np.where(np.sin(2 * X2[:, 1]) > 0, 1.0, -1.0)
    Z1 = X1[[3, 17, 29, 41]] + 0.1
    Z2 = X2[[2, 11, 23]] - 0.1
    return (X1, y1, Z1), (X2, y2, Z2)


def test_shared_equals_per_problem_when_each_owns_its_vectors():
    """If K(Z_1, X_2) = K(Z_2, X_1) = 0 the shared objective separates exactly."""
    (X1, y1, Z1), (X2, y2, Z2) = _separated_problems()
    k, C = RBF(1.0), 10.0
    Z = np.vstack([Z1, Z2])
    W, G, sols = sl.slmc_shared_objective([(X1, y1), (X2, y2)], Z, k, C)
    s1 = sl.fixed_z_svm(X1, y1, Z1, k, C, tol=1e-10)
    s2 = sl.fixed_z_svm(X2, y2, Z2, k, C, tol=1e-10)
    np.testing.assert_allclose(W, s1.W + s2.W, rtol=1e-9)
    np.testing.assert_allclose(G[:4], sl.slmc_gradient(X1, y1, Z1, k, s1.alpha, s1.beta),
                               rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(G[4:], sl.slmc_gradient(X2, y2, Z2, k, s2.alpha, s2.beta),
                               rtol=1e-6, atol=1e-10)
    # each problem's beta lives on its own vectors
    np.testing.assert_allclose(sols[0].beta[4:], 0.0, atol=1e-12)
    np.testing.assert_allclose(sols[1].beta[:4], 0.0, atol=1e-12)
    np.testing.assert_allclose(sols[0].beta[:4], s1.beta, rtol=1e-6, atol=1e-9)
    # a few joint L-BFGS steps keep the separation: at the returned Z each problem's
    # solution is the per-problem solution on its own block of vectors
    res = sl.slmc_shared_optimize([(X1, y1), (X2, y2)], Z, k, C, max_iter=5)
    assert res.W_history[-1] < W
    for c, (Xc, yc, blk) in enumerate(((X1, y1, slice(0, 4)), (X2, y2, slice(4, 7)))):
        own = sl.fixed_z_svm(Xc, yc, res.Z[blk], k, C, tol=1e-10)
        np.testing.assert_allclose(res.solution[c].W, own.W, rtol=1e-7)
        np.testing.assert_allclose(res.solution[c].beta[blk], own.beta, rtol=1e-5, atol=1e-8)


def test_shared_slmc_estimator(blobs):
    X, y = blobs
    clf = SLMC(n_vectors=6, C=10.0, kernel=RBF(0.3), init="kmeans", shared=True, max_iter=30,
               random_state=0).fit(X, y)
    assert clf.expansion_.n_terms == 6 and clf.n_vectors_ == 6
    assert clf.expansion_.coef.shape == (6, 3)
    hist = clf.W_history_[0]
    assert np.all(np.diff(hist) <= 1e-9 * np.abs(hist[0]))
    assert hist[-1] < hist[0]
    np.testing.assert_allclose(clf.objective_.sum(), hist[-1], rtol=1e-5)
    assert clf.score(X, y) > 0.85  # the full SVC has 0.913 on these overlapping blobs
    # reproducible with random_state
    clf2 = SLMC(n_vectors=6, C=10.0, kernel=RBF(0.3), init="kmeans", shared=True, max_iter=30,
                random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf2.expansion_.vectors, clf.expansion_.vectors)
    np.testing.assert_array_equal(clf2.expansion_.coef, clf.expansion_.coef)
    # at the same prediction cost (6 kernel evaluations) the shared machine beats two private
    # vectors per class in the summed W, by a wide margin (W = 989 against 1192 to 1754 for
    # per2 under the OpenBLAS kernels Prescott ... SkylakeX: the nonconvex per-class fits with
    # two vectors land in different local minima on different kernels, the shared fit does
    # not); six private vectors per class (18 in all) are at least as good in W. Training
    # accuracies of the two 6-vector machines can tie (0.873 both on SkylakeX), so accuracy
    # is asserted within a stated margin, not as a strict order: per2 reaches 0.767 to 0.880,
    # the shared machine 0.873 on every kernel; it may trail by at most 3 of 150 points.
    kw = dict(C=10.0, kernel=RBF(0.3), init="kmeans", max_iter=30, random_state=0)
    per2 = SLMC(n_vectors=2, **kw).fit(X, y)
    assert per2.n_vectors_ == 6
    assert clf.objective_.sum() < 0.95 * per2.objective_.sum()
    assert clf.score(X, y) >= per2.score(X, y) - 3 / len(X) - 1e-12
    per6 = SLMC(n_vectors=6, **{**kw, "max_iter": 60}).fit(X, y)  # converges (40 iterations)
    assert per6.objective_.sum() <= clf.objective_.sum() * (1 + 1e-9) + 1e-6


def test_shared_slmc_save_load_and_binary(tmp_path, blobs):
    X, y = blobs
    clf = SLMC(n_vectors=5, C=10.0, kernel=RBF(0.3), shared=True, max_iter=30, tol=1e-3,
               random_state=1).fit(X, y)  # converges (13 iterations)
    sparsekm.save(clf, tmp_path / "m.skm")
    clf2 = sparsekm.load(tmp_path / "m.skm")
    np.testing.assert_array_equal(clf2.decision_function(X), clf.decision_function(X))
    assert clf2.shared is True
    # two classes: shared is the ordinary binary SLMC
    yb = (y == 0).astype(int)
    # both converge (18 iterations): the same path to the same optimum
    a = SLMC(n_vectors=4, C=10.0, kernel=RBF(0.3), shared=True, max_iter=30, random_state=0)
    b = SLMC(n_vectors=4, C=10.0, kernel=RBF(0.3), max_iter=30, random_state=0)
    np.testing.assert_array_equal(a.fit(X, yb).decision_function(X),
                                  b.fit(X, yb).decision_function(X))


def test_shared_input_errors(blobs):
    X, y = blobs
    with pytest.raises(ValueError, match="shared"):
        SLMC(shared="yes").fit(X, y)
    k = RBF(0.3)
    with pytest.raises(ValueError, match="at least one"):
        sl.slmc_shared_objective([], X[:3], k, 1.0)
    with pytest.raises(ValueError, match="-1/\\+1"):
        sl.slmc_shared_objective([(X, y)], X[:3], k, 1.0)
    with pytest.raises(ValueError, match="only one class"):
        sl.slmc_shared_objective([(X, np.ones(len(X)))], X[:3], k, 1.0)
    with pytest.raises(ValueError, match="features"):
        sl.slmc_shared_objective(_ovr(X, y), np.zeros((3, 5)), k, 1.0)
    with pytest.raises(TypeError, match="Kernel"):
        sl.slmc_shared_optimize(_ovr(X, y), X[:3], "rbf", 1.0)


@pytest.mark.parametrize("n_classes, shared", [(2, True), (3, True), (3, False)])
def test_callback_stopiteration_stops_like_max_iter(n_classes, shared):
    """fit(callback=...) raising StopIteration after k iterations gives the model of
    max_iter=k (the hook compress uses to keep the SLMC within its time limit)."""
    from sklearn.datasets import make_blobs

    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC

    X, y = make_blobs(150, centers=n_classes, cluster_std=2.5, random_state=1)
    seen = []

    def stop_after_two(it, W):
        seen.append((it, W))
        if it >= 2:
            raise StopIteration

    kw = dict(n_vectors=4, C=10.0, kernel=RBF(0.2), shared=shared, random_state=0)
    stopped = SLMC(max_iter=50, **kw).fit(X, y, callback=stop_after_two)
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=2 "):
        capped = SLMC(max_iter=2, **kw).fit(X, y)
    n_problems = 1 if (shared or n_classes == 2) else n_classes
    assert [it for it, _ in seen] == [1, 2] * n_problems
    assert np.all(np.isfinite([W for _, W in seen]))
    np.testing.assert_array_equal(stopped.n_iter_, capped.n_iter_)
    np.testing.assert_allclose(stopped.decision_function(X), capped.decision_function(X),
                               rtol=1e-10, atol=1e-10)
    assert not hasattr(stopped, "_callback")  # nothing of the hook stays on the model
    # the stop is the caller's, not convergence (it was reported as convergence before)
    assert stopped.stop_reasons_ == ["STOP: CALLBACK"] * n_problems
    with pytest.raises(TypeError, match="callback must be callable"):
        SLMC(**kw).fit(X, y, callback=3)
    with pytest.raises(ValueError, match="n_jobs"):
        SLMC(n_jobs=2, **kw).fit(X, y, callback=stop_after_two)


class _JumpingClock:
    """A fake clock: every read advances it by ``step`` seconds; counts its reads."""

    def __init__(self, step):
        self.t, self.step, self.reads = 0.0, step, 0

    def __call__(self):
        self.reads += 1
        self.t += self.step
        return self.t


@pytest.mark.parametrize("n_classes, shared", [(2, True), (3, True), (3, False)])
def test_deadline_stops_with_its_own_reason(n_classes, shared, tmp_path):
    """fit(deadline=...) past its time stops every L-BFGS run after its first iteration,
    the model says why (DEADLINE_STOP, not convergence), and equals max_iter=1; without a
    deadline the fit never reads the clock."""
    from sklearn.datasets import make_blobs

    import sparsekm
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC
    from sparsekm.utils.optimize import DEADLINE_STOP, RELATIVE_STOP, Deadline

    X, y = make_blobs(150, centers=n_classes, cluster_std=2.5, random_state=1)
    kw = dict(n_vectors=4, C=10.0, kernel=RBF(0.2), shared=shared, random_state=0)
    clock = _JumpingClock(3600.0)
    deadline = Deadline(10.0, clock=clock)
    stopped = SLMC(max_iter=50, **kw).fit(X, y, deadline=deadline)
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=1 "):
        capped = SLMC(max_iter=1, **kw).fit(X, y)
    n_problems = 1 if (shared or n_classes == 2) else n_classes
    assert stopped.stop_reasons_ == [DEADLINE_STOP] * n_problems
    assert clock.reads == 1 + n_problems  # the start, then once after each first iteration
    np.testing.assert_array_equal(stopped.n_iter_, [1] * n_problems)
    np.testing.assert_allclose(stopped.decision_function(X), capped.decision_function(X),
                               rtol=1e-10, atol=1e-10)
    full = SLMC(max_iter=50, **kw).fit(X, y)
    assert all(m != DEADLINE_STOP for m in full.stop_reasons_)
    assert RELATIVE_STOP in full.stop_reasons_ or np.all(full.n_iter_ == 50)
    sparsekm.save(stopped, tmp_path / "s.skm")
    assert sparsekm.load(tmp_path / "s.skm").stop_reasons_ == stopped.stop_reasons_
