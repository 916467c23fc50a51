"""Direct sparse learning (Wu, Schölkopf, Bakır 2006): SLMC, SKFD, MRS, RSVM, MRSVM."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC

import sparsekm
from sparsekm import sparse_learning as sl
from sparsekm.kernels import RBF, Polynomial
from sparsekm.models import (
    RSVM,
    SLMC,
    ModifiedRS,
    ModifiedRSVM,
    SparseKFD,
    SparseLargeMarginClassifier,
)

from .conftest import requires_ida


@pytest.fixture
def moons():
    X, y = make_moons(120, noise=0.25, random_state=1)
    return X, np.where(y == 1, 1.0, -1.0)


def _fd_gradient(fun, Z, eps=1e-5):
    G = np.zeros_like(Z)
    for u in range(Z.shape[0]):
        for v in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[u, v] += eps
            Zm[u, v] -= eps
            G[u, v] = (fun(Zp) - fun(Zm)) / (2 * eps)
    return G


# -- the fixed-Z solver ------------------------------------------------------------------
@pytest.mark.parametrize("C", [1.0, 100.0])
def test_fixed_z_matches_precomputed_kernel_svm(moons, C):
    """Eq. 37-40: the whitened linear SVM equals libsvm on the kernel K_hat_z."""
    X, y = moons
    k = RBF(1.0)
    Z = X[::15]
    sol = sl.fixed_z_svm(X, y, Z, k, C, tol=1e-10)
    Kzx = k(Z, X)
    Khat = Kzx.T @ np.linalg.solve(k(Z), Kzx)
    svc = SVC(kernel="precomputed", C=C, tol=1e-10).fit(Khat, y)
    alpha = np.zeros(len(y))
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    W_ref = alpha.sum() - 0.5 * (alpha * y) @ Khat @ (alpha * y)
    np.testing.assert_allclose(sol.W, W_ref, rtol=1e-7)
    # beta by eq. 45 and the bias reproduce libsvm's decision function
    f = Kzx.T @ sol.beta + sol.intercept
    np.testing.assert_allclose(f, svc.decision_function(Khat), atol=1e-5 * max(1, np.abs(f).max()))
    np.testing.assert_allclose(sol.beta, np.linalg.solve(k(Z), Kzx @ (sol.alpha * y)), rtol=1e-8,
                               atol=1e-8)
    assert -1e-12 <= sol.gap < 1e-6  # a duality gap, zero up to rounding
    assert np.all((sol.alpha >= 0) & (sol.alpha <= C))
    np.testing.assert_allclose(sol.alpha @ y, 0.0, atol=1e-8 * C * len(y))


def test_fixed_z_empirical_is_rsvm(moons):
    """features='empirical' is the RSVM problem: linear SVM on psi_z(x), beta^T beta."""
    X, y = moons
    k = RBF(1.0)
    Z = X[:10]
    sol = sl.fixed_z_svm(X, y, Z, k, 10.0, features="empirical", tol=1e-10)
    svc = SVC(kernel="linear", C=10.0, tol=1e-10).fit(k(X, Z), y)
    # ours is polished to an exact KKT point; libsvm stops at its tolerance
    np.testing.assert_allclose(sol.beta, svc.coef_[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(sol.intercept, svc.intercept_[0], rtol=1e-4, atol=1e-4)


def test_active_set_warm_start_matches_libsvm(moons):
    X, y = moons
    k = RBF(1.0)
    rng = np.random.default_rng(0)
    Z = X[:8]
    sol = sl.fixed_z_svm(X, y, Z, k, 10.0, tol=1e-10)
    Z2 = Z + 1e-4 * rng.standard_normal(Z.shape)
    warm = sl.fixed_z_svm(X, y, Z2, k, 10.0, warm_start=sol.alpha)
    cold = sl.fixed_z_svm(X, y, Z2, k, 10.0, tol=1e-10)
    assert warm.extra["method"] == "active-set"
    np.testing.assert_allclose(warm.W, cold.W, rtol=1e-8)
    np.testing.assert_allclose(warm.beta, cold.beta, rtol=1e-4, atol=1e-6)
    assert abs(warm.gap) < 1e-9


def test_singular_kz_raises(moons):
    X, y = moons
    Z = np.vstack([X[:3], X[:1]])
    with pytest.raises(ValueError, match="singular"):
        sl.fixed_z_svm(X, y, Z, RBF(1.0), 1.0)
    # pseudo-inverse mode gives the same answer as without the duplicate
    a = sl.fixed_z_svm(X, y, Z, RBF(1.0), 1.0, on_singular="pinv", tol=1e-10)
    b = sl.fixed_z_svm(X, y, X[:3], RBF(1.0), 1.0, tol=1e-10)
    np.testing.assert_allclose(a.W, b.W, rtol=1e-6)


def test_unique_rows():
    X = np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0], [3.0, 1.0]])
    np.testing.assert_array_equal(sl.unique_rows(X), [0, 1, 3])


# -- gradient (eq. 46) -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "kernel", [RBF(0.8), Polynomial(degree=3, coef0=1.0, gamma=0.5)], ids=["rbf", "poly"]
)
def test_slmc_gradient_matches_finite_differences(moons, kernel):
    X, y = moons
    rng = np.random.default_rng(3)
    Z = X[rng.choice(len(X), 5, replace=False)] + 0.05 * rng.standard_normal((5, 2))
    C = 5.0
    sol = sl.fixed_z_svm(X, y, Z, kernel, C, tol=1e-12)
    G = sl.slmc_gradient(X, y, Z, kernel, sol.alpha, sol.beta)
    Gfd = _fd_gradient(lambda Zp: sl.fixed_z_svm(X, y, Zp, kernel, C, tol=1e-12).W, Z)
    rel = np.linalg.norm(G - Gfd) / np.linalg.norm(Gfd)
    assert rel < 1e-4, rel


def test_skfd_gradient_matches_finite_differences(moons):
    X, y = moons
    Z = X[[0, 7, 20, 33, 61]] + 0.01
    k, mu = RBF(1.0), 1e-2
    W, beta, lam = sl.skfd_objective(X, y, Z, k, mu)
    np.testing.assert_allclose(W, -lam)
    G = sl.skfd_gradient(X, y, Z, k, mu, beta, lam)
    Gfd = _fd_gradient(lambda Zp: sl.skfd_objective(X, y, Zp, k, mu)[0], Z, eps=1e-6)
    rel = np.linalg.norm(G - Gfd) / np.linalg.norm(Gfd)
    assert rel < 1e-4, rel


def test_skfd_objective_is_generalised_eigenvalue(moons):
    """W(Z) = -largest eigenvalue of (A^z, B^z), beta^T B^z beta = 1 (eq. 60-62)."""
    from scipy.linalg import eigh

    X, y = moons
    Z = X[:6]
    k, mu = RBF(1.0), 1e-2
    _, _, d, Bz = sl.sparse_kfd._skfd_parts(X, y, Z, k, mu)
    W, beta, lam = sl.skfd_objective(X, y, Z, k, mu)
    lam_ref = eigh(np.outer(d, d), Bz, eigvals_only=True)[-1]
    np.testing.assert_allclose(lam, lam_ref, rtol=1e-8)
    np.testing.assert_allclose(beta @ Bz @ beta, 1.0, rtol=1e-10)
    np.testing.assert_allclose((beta @ d) ** 2, lam, rtol=1e-8)


# -- properties from the paper ---------------------------------------------------------------
def test_nz_equal_nsv_gives_full_svm_optimum(moons):
    """Section 5.7 example 1: with Z = the SVs, W(Z) is the full SVM's dual optimum."""
    X, y = moons
    k, C = RBF(1.0), 10.0
    svm = sl.full_svm_expansion(X, y, k, C, tol=1e-10)
    W_svm = sl.svm_dual_objective(X, y, svm, C)
    Z = np.asarray(svm.vectors)
    clf = SLMC(n_vectors=Z.shape[0], C=C, kernel=k, init=Z, max_iter=0).fit(X, y)
    np.testing.assert_allclose(clf.W_history_[0][0], W_svm, rtol=1e-6)
    # and the classifier is the SVM itself
    np.testing.assert_allclose(clf.decision_function(X), svm.decision_function(X), atol=1e-3)


def test_W_non_increasing_and_improves(moons):
    X, y = moons
    clf = SLMC(n_vectors=4, C=10.0, kernel=RBF(1.0), max_iter=40, random_state=0).fit(X, y)
    hist = clf.W_history_[0]
    assert hist.size > 5
    # non-increasing up to the inner SVM's accuracy (libsvm steps: relative gap ~1e-7)
    assert np.all(np.diff(hist) <= 1e-6 * np.abs(hist[:-1]))
    assert hist[-1] < 0.9 * hist[0]
    np.testing.assert_allclose(clf.objective_[0], hist[-1], rtol=1e-6)


def test_mrs_never_worse_than_rs_in_W(moons):
    """MRS solves (28)-(30) exactly, so its W is <= the objective of the RS coefficients (47)."""
    X, y = moons
    k, C = RBF(1.0), 10.0
    svm = sl.full_svm_expansion(X, y, k, C, tol=1e-10)
    rng = np.random.default_rng(0)
    for n_z in (3, 6, 12):
        Z = X[rng.choice(len(X), n_z, replace=False)] + 0.1 * rng.standard_normal((n_z, 2))
        beta_rs = np.linalg.solve(k(Z), k(Z, svm.vectors) @ svm.coef)  # eq. 47
        P_rs = sl.rs_objective(X, y, Z, k, C, beta_rs, svm.intercept)
        mrs = ModifiedRS(C=C, kernel=k, Z=Z).fit(X, y)
        assert mrs.objective_[0] <= P_rs + 1e-9 * abs(P_rs)


def test_slmc_beats_random_xvs(moons):
    X, y = moons
    kw = dict(n_vectors=4, C=10.0, kernel=RBF(1.0), random_state=0)
    slmc = SLMC(**kw).fit(X, y)
    mrsvm = ModifiedRSVM(**{k: v for k, v in kw.items()}).fit(X, y)
    # same initial XVs (same random_state): SLMC only moves them to lower W
    assert slmc.objective_[0] <= mrsvm.objective_[0]
    np.testing.assert_allclose(slmc.W_history_[0][0], mrsvm.objective_[0], rtol=1e-6)


def test_rsvm_and_mrsvm_share_xvs(moons):
    X, y = moons
    a = RSVM(n_vectors=7, C=10.0, kernel=RBF(1.0), random_state=3).fit(X, y)
    b = ModifiedRSVM(n_vectors=7, C=10.0, kernel=RBF(1.0), random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.expansion_.vectors, b.expansion_.vectors)
    assert a.score(X, y) > 0.8 and b.score(X, y) > 0.8


def test_skfd_fits_and_W_decreases(moons):
    X, y = moons
    # max_iter=200: converges (in 137 iterations; the default 100 stopped at the cap)
    clf = SparseKFD(n_vectors=5, C=10.0, mu=1e-2, kernel=RBF(1.0), max_iter=200,
                    random_state=0).fit(X, y)
    hist = clf.W_history_[0]
    assert np.all(np.diff(hist) <= 1e-9 * np.abs(hist[:-1]))
    assert clf.score(X, y) > 0.85
    assert clf.expansion_.n_terms == 5


def test_multiclass_one_vs_rest():
    X, y = make_blobs(150, centers=3, cluster_std=1.0, random_state=0)
    labels = np.array(["a", "b", "c"])[y]
    clf = SLMC(n_vectors=3, C=10.0, kernel=RBF(0.2), max_iter=60, random_state=0).fit(X, labels)
    assert clf.expansion_.n_outputs == 3
    assert clf.expansion_.n_terms == 9
    assert clf.decision_function(X).shape == (150, 3)
    assert set(clf.predict(X)) <= set(labels)
    assert clf.score(X, labels) >= SVC(C=10.0, gamma=0.2).fit(X, labels).score(X, labels) - 0.05
    assert len(clf.W_history_) == 3
    # column k is the binary classifier of class k against the rest
    yk = np.where(labels == "b", 1, 0)
    col = clf.expansion_.output(1).decision_function(X)
    assert np.mean((col > 0) == yk) > 0.85


def test_kmeans_init(moons):
    X, y = moons
    clf = SLMC(n_vectors=4, C=10.0, kernel=RBF(1.0), init="kmeans", max_iter=100,
               random_state=0).fit(X, y)  # converges (37 iterations), no cap warning
    assert clf.score(X, y) > 0.8


@pytest.mark.parametrize("cls", [SLMC, SparseKFD, RSVM, ModifiedRSVM])
def test_save_load_round_trip(tmp_path, moons, cls):
    X, y = moons
    kw = dict(n_vectors=3, C=10.0, kernel=RBF(1.0), random_state=0)
    if cls in (SLMC, SparseKFD):
        kw["max_iter"] = 100  # converges (51 and 41 iterations), no cap warning
    clf = cls(**kw).fit(X, y)
    path = tmp_path / "m.skm"
    sparsekm.save(clf, path)
    clf2 = sparsekm.load(path)
    assert type(clf2) is cls
    np.testing.assert_array_equal(clf2.decision_function(X), clf.decision_function(X))


def test_modified_rs_save_load(tmp_path, moons):
    X, y = moons
    clf = ModifiedRS(C=10.0, kernel=RBF(1.0), Z=X[:4]).fit(X, y)
    sparsekm.save(clf, tmp_path / "m.skm")
    np.testing.assert_array_equal(sparsekm.load(tmp_path / "m.skm").predict(X), clf.predict(X))


# -- error paths -------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [SLMC, SparseKFD, RSVM, ModifiedRSVM])
def test_error_paths(moons, cls):
    X, y = moons
    with pytest.raises(ValueError, match=r"'n_vectors' parameter .* must be an int in the range \[1, inf\)"):
        cls(n_vectors=0).fit(X, y)
    with pytest.raises(ValueError, match="larger than the number of distinct training points"):
        cls(n_vectors=len(X) + 1).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        cls(n_vectors=2).fit(X, np.ones(len(X)))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        cls(n_vectors=2).fit(Xn, y)
    with pytest.raises(ValueError, match="'C' parameter"):
        cls(n_vectors=2, C=-1.0).fit(X, y)
    with pytest.raises(TypeError, match="'kernel' parameter"):
        cls(n_vectors=2, kernel=3).fit(X, y)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        cls().predict(X)


def test_n_vectors_counts_distinct_points():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]]), 5, axis=0)
    y = np.array([1, 1, 1, 1, 1, -1, -1, -1, -1, -1, 1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="distinct training points \\(3\\)"):
        SLMC(n_vectors=4).fit(X, y)
    # duplicated points are never drawn twice (section 5.6): K^z stays invertible
    clf = ModifiedRSVM(n_vectors=3, C=10.0, kernel=RBF(1.0), random_state=0).fit(X, y)
    assert np.unique(clf.expansion_.vectors, axis=0).shape[0] == 3


def test_slmc_invalid_init(moons):
    X, y = moons
    with pytest.raises(ValueError, match="'init' parameter"):
        SLMC(n_vectors=2, init="pca").fit(X, y)
    with pytest.raises(ValueError, match="init has 3 rows but n_vectors=2"):
        SLMC(n_vectors=2, init=X[:3]).fit(X, y)
    with pytest.raises(ValueError, match="'max_iter' parameter"):
        SLMC(n_vectors=2, max_iter=-1).fit(X, y)


def test_modified_rs_bad_z(moons):
    X, y = moons
    with pytest.raises(ValueError, match="Z has 3 features"):
        ModifiedRS(Z=np.zeros((2, 3))).fit(X, y)


def test_modified_rs_with_rs_construction(moons):
    """Z=None: RS vectors from sparsekm.reduced_set.construct; MRS <= RS in W (eq. 45 vs 47)."""
    from sparsekm.reduced_set import construct

    X, y = moons
    k, C = RBF(1.0), 10.0
    mrs = ModifiedRS(n_vectors=5, C=C, kernel=k, random_state=0).fit(X, y)
    assert mrs.expansion_.n_terms == 5
    Z = np.asarray(mrs.expansion_.vectors)
    svm = sl.full_svm_expansion(X, y, k, C)
    rs = construct(svm, 5, random_state=np.random.RandomState(0).randint(2**31 - 1)).expansion
    np.testing.assert_allclose(np.asarray(rs.vectors), Z)
    P_rs = sl.rs_objective(X, y, Z, k, C, np.asarray(rs.coef), svm.intercept)
    assert mrs.objective_[0] <= P_rs
    assert mrs.score(X, y) >= 0.85


def test_verbose_progress_runs(moons, capsys):
    X, y = moons
    # three iterations shown, then the cap: the fit says it stopped there
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=3 .*binary problem"):
        SLMC(n_vectors=3, C=10.0, kernel=RBF(1.0), max_iter=3, verbose=True,
             random_state=0).fit(X, y)
    err = capsys.readouterr().err
    # the progress bar names the problem and shows the marginal function W(Z) (eq. 44)
    assert "SLMC 0" in err and "W=" in err and "3/3" in err
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=3 "):
        SLMC(n_vectors=3, C=10.0, kernel=RBF(1.0), max_iter=3, random_state=0).fit(X, y)
    assert "W=" not in capsys.readouterr().err  # silent by default


def test_alias():
    assert SLMC is SparseLargeMarginClassifier


@pytest.mark.slow
@requires_ida
def test_banana_split1_slmc_close_to_paper():
    from sparsekm.datasets import IDA_SVM_PARAMS, load_ida

    X, y, Xt, yt = load_ida("banana", 1)
    C, sigma = IDA_SVM_PARAMS["banana"]
    clf = SLMC(n_vectors=8, C=C, kernel=RBF(1.0 / sigma), random_state=1).fit(X, y)
    # paper: 11.0 % mean over 10 splits at N_z / N_SV = 10 % (SVM 11.8 %)
    assert 1 - clf.score(Xt, yt) < 0.125


def test_aggregating_duplicates_is_exact(moons):
    """Identical (x, y) pairs merged into one sample with C_i = n C: same W, beta, b."""
    X, y = moons
    X2, y2 = np.vstack([X, X[:30], X[:10]]), np.concatenate([y, y[:30], y[:10]])
    Z = X[::12]
    full = sl.fixed_z_svm(X2, y2, Z, RBF(1.0), 10.0, tol=1e-10)
    Xu, yu, counts = sl.aggregate_duplicates(X2, y2)
    assert Xu.shape[0] == X.shape[0] and counts.sum() == X2.shape[0]
    agg = sl.fixed_z_svm(Xu, yu, Z, RBF(1.0), 10.0, tol=1e-10, sample_weight=counts)
    np.testing.assert_allclose(agg.W, full.W, rtol=1e-8)
    np.testing.assert_allclose(agg.beta, full.beta, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(agg.intercept, full.intercept, rtol=1e-4, atol=1e-6)


def test_tiny_problem_with_huge_C_is_exact(moons):
    """Titanic-like: few distinct points, C = 1e5; the SQP + active-set path closes the gap."""
    X, y = moons
    Xs, ys = X[:30], y[:30]
    Z = Xs[:6] + 0.05
    sol = sl.fixed_z_svm(Xs, ys, Z, RBF(2.0), 1e5)
    assert sol.extra["method"] in ("qp+active-set", "libsvm+active-set", "qp")
    assert abs(sol.gap) < 1e-6
    ref = sl.fixed_z_svm(Xs, ys, Z, RBF(2.0), 1e5, tol=1e-10)
    np.testing.assert_allclose(sol.W, ref.W, rtol=1e-6)


def test_fixed_z_svm_input_errors(moons):
    X, y = moons
    k = RBF(1.0)
    with pytest.raises(ValueError, match="'C' parameter of fixed_z_svm"):
        sl.fixed_z_svm(X, y, X[:3], k, 0.0)
    with pytest.raises(ValueError, match="Z has 3 features"):
        sl.fixed_z_svm(X, y, np.zeros((2, 3)), k, 1.0)
    with pytest.raises(ValueError, match="-1/\\+1 labels"):
        sl.fixed_z_svm(X, (y > 0).astype(float), X[:3], k, 1.0)
    with pytest.raises(ValueError, match="only one class"):
        sl.fixed_z_svm(X, np.ones(len(y)), X[:3], k, 1.0)
    with pytest.raises(TypeError, match="kernel must be"):
        sl.fixed_z_svm(X, y, X[:3], "rbf", 1.0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        sl.fixed_z_svm(Xn, y, X[:3], k, 1.0)
    with pytest.raises(ValueError, match="features must be"):
        sl.fixed_z_svm(X, y, X[:3], k, 1.0, features="raw")


@pytest.mark.parametrize("C", [1.0, 316.2, 1e4])
def test_interior_point_matches_libsvm(moons, C):
    """The interior-point inner solver and libsvm (tight tolerance) reach the same optimum."""
    X, y = moons
    k = RBF(1.0)
    Z = X[::13]
    ipm = sl.fixed_z_svm(X, y, Z, k, C)
    ref = sl.fixed_z_svm(X, y, Z, k, C, tol=1e-10, solver="libsvm")
    assert ipm.extra["method"] in ("ipm", "ipm+active-set")
    assert ref.extra["method"].startswith("libsvm")
    np.testing.assert_allclose(ipm.W, ref.W, rtol=1e-7)
    np.testing.assert_allclose(ipm.beta, ref.beta, rtol=1e-4, atol=1e-6 * np.abs(ref.beta).max())
    assert abs(ipm.gap) < 1e-9
    assert np.all((ipm.alpha >= 0) & (ipm.alpha <= C))
    np.testing.assert_allclose(ipm.alpha @ y, 0.0, atol=1e-9 * C * len(y))


def test_interior_point_solver_direct(moons):
    """_ipm_svm alone (before the polish): KKT to high accuracy, with per-sample C_i."""
    X, y = moons
    k = RBF(1.0)
    Z = X[:9]
    F = (sl.whitening_transform(k(Z)) @ k(Z, X)).T
    Cvec = 10.0 * (1.0 + np.arange(len(y)) % 3)
    alpha, w, b = sl.fixed_z._ipm_svm(F, y, Cvec)
    dual, primal = sl.fixed_z._svm_values(F, y, Cvec, alpha, w, b)
    assert (primal - dual) / abs(primal) < 1e-8
    np.testing.assert_allclose(w, F.T @ (alpha * y))
    ref = sl.fixed_z._linear_svm(F, y, 10.0, 1e-10, sample_weight=Cvec / 10.0)
    np.testing.assert_allclose(dual, sl.fixed_z._svm_values(F, y, Cvec, *ref)[0], rtol=1e-7)


def test_solver_option_errors(moons):
    X, y = moons
    with pytest.raises(ValueError, match="solver must be 'auto' or 'libsvm'"):
        sl.fixed_z_svm(X, y, X[:3], RBF(1.0), 1.0, solver="smo")


def test_fixed_z_svm_identical_points_falls_back_cleanly():
    """All rows identical: the interior-point step degenerates; the solver falls back."""
    import warnings

    X = np.full((3, 1), 12.57302211)
    y = np.array([-1.0, 1.0, -1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        sol = sl.fixed_z_svm(X, y, X[:1], Polynomial(2, 1.0), 1e-3, features="empirical",
                                 on_singular="pinv")
    assert np.isfinite(sol.W) and sol.W <= sol.primal + 1e-9
