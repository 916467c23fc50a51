"""ApproxSVC, KernelFisherDiscriminant and ApproxKFD (Franc & Hlaváč, section 4)."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import sparsekm
from sparsekm.approx import GreedyBasis
from sparsekm.kernels import RBF, Polynomial, Sigmoid
from sparsekm.models import ApproxKFD, ApproxSVC, KernelFisherDiscriminant
from sparsekm.models.approx_svm import svc_precomputed


def _rings(n, rng, noise=0.3):
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 + noise * rng.normal(size=n) > 1.4, 1, -1)
    return X, y


@pytest.fixture
def data(rng):
    X, y = _rings(150, rng)
    Xt, yt = _rings(300, rng)
    return X, y, Xt, yt


# -- ApproxSVC -----------------------------------------------------------------------
def test_sv_basis_reproduces_full_svc(data):
    # Paper's (i)-(iii): with X_r = all SVs, the SVM on the approximated set has the
    # same solution (w* lies in span Phi(SV)); differences are the SMO tolerance.
    X, y, Xt, _ = data
    k = RBF(1.0)
    sv, dual, b = svc_precomputed(k(X), y, 10.0)
    f_full = k(Xt, X[sv]) @ dual + b
    clf = ApproxSVC(C=10.0, n_basis=len(sv), tol=0.0, kernel=k, basis="support",
                    random_state=0).fit(X, y)
    assert clf.n_vectors_ == len(sv)
    assert set(clf.basis_.basis_indices_) == set(sv)
    np.testing.assert_allclose(clf.decision_function(Xt), f_full, atol=5e-3)


def test_full_greedy_basis_reproduces_full_svc(data):
    X, y, Xt, _ = data
    k = RBF(1.0)
    sv, dual, b = svc_precomputed(k(X), y, 10.0)
    clf = ApproxSVC(C=10.0, n_basis=1.0, tol=0.0, kernel=k, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(Xt), k(Xt, X[sv]) @ dual + b, atol=5e-3)


def test_expansion_equals_linear_svm_on_gamma(data):
    # alpha' = L_r^{-T} w  <=>  f(x) = w^T gamma(x) + b: two independent evaluations.
    X, y, Xt, _ = data
    clf = ApproxSVC(C=5.0, n_basis=12, kernel=RBF(1.0), random_state=1).fit(X, y)
    G = clf.basis_.transform(Xt)
    w = clf.basis_.cholesky_.T @ clf.coef_
    np.testing.assert_allclose(clf.decision_function(Xt), G @ w + clf.intercept_, atol=1e-10)
    # alpha'_j = sum_i alpha_i y_i beta_ij over the SVM's support vectors
    from sklearn.svm import SVC

    Gtr = clf.basis_.transform(X)
    svc = SVC(C=5.0, kernel="linear").fit(Gtr, y)
    beta = clf.basis_.coefficients(X[svc.support_])
    np.testing.assert_allclose(clf.coef_, beta.T @ svc.dual_coef_[0], atol=1e-3 * np.abs(clf.coef_).max())
    assert clf.expansion_.n_terms == 12
    np.testing.assert_array_equal(clf.expansion_.vectors, X[clf.basis_.basis_indices_])


def test_kernel_evaluation_counts(data):
    X, y, _, _ = data
    clf = ApproxSVC(C=10.0, n_basis=15, tol=0.0, kernel=RBF(1.0), random_state=0).fit(X, y)
    assert clf.n_kernel_evaluations_ == {"approximation": 150 * 16, "training": 150**2}
    lin = ApproxSVC(C=10.0, n_basis=15, tol=0.0, kernel=RBF(1.0), solver="liblinear",
                    random_state=0).fit(X, y)
    assert lin.n_kernel_evaluations_["training"] is None
    assert lin.score(X, y) >= clf.score(X, y) - 0.05


def test_approx_svc_accuracy_and_labels(data):
    X, y, Xt, yt = data
    labels = np.where(y > 0, "out", "in")
    clf = ApproxSVC(C=10.0, n_basis=20, kernel=RBF(1.0), random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["in", "out"]
    assert clf.score(Xt, np.where(yt > 0, "out", "in")) >= 0.85


def test_approx_svc_save_load(data, tmp_path):
    X, y, Xt, _ = data
    clf = ApproxSVC(C=10.0, n_basis=10, kernel=RBF(1.0), random_state=0).fit(X, y)
    sparsekm.save(clf, tmp_path / "svc.skm")
    clf2 = sparsekm.load(tmp_path / "svc.skm")
    np.testing.assert_array_equal(clf2.decision_function(Xt), clf.decision_function(Xt))
    np.testing.assert_array_equal(clf2.predict(Xt), clf.predict(Xt))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"C": 0.0}, r"'C' parameter of ApproxSVC must be a float in the range \(0.0, inf\)"),
        ({"n_basis": 0}, "'n_basis' parameter of ApproxSVC"),
        ({"n_basis": 1.5}, "'n_basis' parameter of ApproxSVC"),
        ({"basis": "kmeans"}, "'basis' parameter of ApproxSVC must be a str among"),
        ({"solver": "sgd"}, "'solver' parameter of ApproxSVC must be a str among"),
        ({"kernel": Sigmoid()}, "positive semi-definite"),
    ],
)
def test_approx_svc_bad_params(data, params, match):
    X, y, _, _ = data
    with pytest.raises(ValueError, match=match):
        ApproxSVC(**params).fit(X, y)


def test_binary_only_and_unfitted(data):
    X, y, _, _ = data
    for est in (ApproxSVC(), ApproxKFD(), KernelFisherDiscriminant()):
        with pytest.raises(ValueError, match="Only binary classification is supported"):
            est.fit(X, np.arange(150) % 3)
        with pytest.raises(NotFittedError):
            est.decision_function(X)
        with pytest.raises(ValueError, match="y must be 1-D with one label per row"):
            est.fit(X, y[:10])


# -- Kernel Fisher discriminant ------------------------------------------------------
def _Z_and_e(y):
    """Z = Z_+ + Z_- and e = e_+ - e_- exactly as defined below eq. 6."""
    n = y.size
    Z = np.zeros((n, n))
    e = np.zeros(n)
    for label, sign in ((1, 1.0), (-1, -1.0)):
        idx = np.flatnonzero(y == label)
        nk = idx.size
        Z[np.ix_(idx, idx)] = -1.0 / nk**2
        Z[idx, idx] = 1.0 / nk - 1.0 / nk**2
        e[idx] = sign / nk
    return Z, e


def _kkt_solution(N, d, C):
    """Minimise a^T N a + C a^T a s.t. a^T d = 2 via the dense KKT system."""
    p = N.shape[0]
    kkt = np.zeros((p + 1, p + 1))
    kkt[:p, :p] = 2 * (N + C * np.eye(p))
    kkt[:p, p] = -d
    kkt[p, :p] = d
    rhs = np.zeros(p + 1)
    rhs[p] = 2.0
    return np.linalg.solve(kkt, rhs)[:p]


@pytest.mark.parametrize("kernel", [RBF(1.0), Polynomial(2, 1.0)])
def test_kfd_matches_dense_eq5(data, kernel):
    X, y, _, _ = data
    C = 1e-2
    kfd = KernelFisherDiscriminant(C=C, kernel=kernel).fit(X, y)
    K = kernel(X)
    Z, e = _Z_and_e(y)
    alpha = _kkt_solution(K @ Z @ K, K @ e, C)
    np.testing.assert_allclose(kfd.coef_, alpha, rtol=1e-6, atol=1e-8 * np.abs(alpha).max())
    assert kfd.n_vectors_ == 150
    assert kfd.n_kernel_evaluations_ == {"approximation": 0, "training": 150**2}


def test_kfd_threshold_centres_class_means(data):
    # a^T d = 2 and b half-way between the projected means => means at +1 and -1.
    X, y, Xt, yt = data
    for est in (KernelFisherDiscriminant(C=1e-2, kernel=RBF(1.0)),
                ApproxKFD(n_basis=30, C=1e-2, kernel=RBF(1.0), random_state=0)):
        est.fit(X, y)
        f = est.decision_function(X)
        if isinstance(est, KernelFisherDiscriminant):
            np.testing.assert_allclose([f[y == 1].mean(), f[y == -1].mean()], [1.0, -1.0],
                                       atol=1e-8)
        assert est.score(Xt, yt) >= 0.8


def test_approx_kfd_matches_dense_eq7(data):
    X, y, _, _ = data
    k = RBF(1.0)
    C = 1e-3
    est = ApproxKFD(n_basis=20, C=C, tol=0.0, kernel=k, random_state=0).fit(X, y)
    Xr = X[est.basis_.basis_indices_]
    Kr = k(Xr)
    B = np.linalg.solve(Kr, k(Xr, X))  # beta_i as columns (eq. 2)
    Z, e = _Z_and_e(y)
    N = Kr @ B @ Z @ B.T @ Kr
    m = Kr @ B @ e
    alpha = _kkt_solution(N, m, C)
    np.testing.assert_allclose(est.coef_, alpha, rtol=1e-5, atol=1e-7 * np.abs(alpha).max())
    assert est.n_vectors_ == 20


def test_approx_kfd_full_basis_equals_kfd(data):
    X, y, Xt, _ = data
    X, y = X[:60], y[:60]
    k = RBF(1.0)
    full = KernelFisherDiscriminant(C=1e-2, kernel=k).fit(X, y)
    approx = ApproxKFD(n_basis=1.0, C=1e-2, tol=0.0, kernel=k, random_state=0).fit(X, y)
    assert approx.basis_.n_basis_ == 60
    np.testing.assert_allclose(approx.decision_function(Xt), full.decision_function(Xt),
                               atol=1e-6)
    assert approx.n_kernel_evaluations_["training"] == 0


def test_kfd_errors(data):
    X, y, _, _ = data
    with pytest.raises(ValueError, match="'C' parameter of KernelFisherDiscriminant"):
        KernelFisherDiscriminant(C=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="N \\+ C I is singular"):
        KernelFisherDiscriminant(C=0.0, kernel=Polynomial(1, 0.0)).fit(X, y)
    with pytest.raises(ValueError, match="'n_basis' parameter of ApproxKFD"):
        ApproxKFD(n_basis=-2).fit(X, y)


def test_kfd_save_load(data, tmp_path):
    X, y, Xt, _ = data
    for i, est in enumerate((KernelFisherDiscriminant(C=1e-2, kernel=RBF(1.0)),
                             ApproxKFD(n_basis=15, C=1e-2, kernel=RBF(1.0), random_state=0))):
        est.fit(X, y)
        sparsekm.save(est, tmp_path / f"kfd{i}.skm")
        est2 = sparsekm.load(tmp_path / f"kfd{i}.skm")
        np.testing.assert_array_equal(est2.decision_function(Xt), est.decision_function(Xt))
        assert isinstance(getattr(est2, "basis_", GreedyBasis()), GreedyBasis)


@pytest.mark.parametrize("solver", ["smo", "liblinear", "lbfgs"])
def test_every_solver_records_n_iter_and_round_trips(solver, tmp_path):
    """n_iter_ (the solver's iterations) is set and the model saves and loads bit-exactly."""
    from sklearn.datasets import make_moons

    X, y = make_moons(150, noise=0.2, random_state=0)
    m = ApproxSVC(n_basis=15, solver=solver, kernel=RBF(1.0)).fit(X, y)
    assert m.n_iter_ >= 1
    sparsekm.save(m, tmp_path / "m.skm")
    np.testing.assert_array_equal(sparsekm.load(tmp_path / "m.skm").decision_function(X),
                                  m.decision_function(X))
