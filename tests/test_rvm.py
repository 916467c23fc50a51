"""The relevance vector machine (Tipping 2001): known answers, the evidence, the expansion."""

import numpy as np
import pytest
from scipy.special import expit

import sparsekm
from sparsekm.datasets import load_ripley
from sparsekm.kernels import RBF
from sparsekm.models import RVC
from sparsekm.models.rvm import laplace_log_evidence, sparse_bayes_logistic

from .conftest import requires_ripley


def _blobs(n, rng, shift=3.0):
    X = np.r_[rng.normal(-shift, 0.7, (n, 2)), rng.normal(shift, 0.7, (n, 2))]
    y = np.r_[np.zeros(n, int), np.ones(n, int)]
    return X, y


def _two_moons(n, rng):
    t = rng.uniform(0, np.pi, n)
    X = np.r_[np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)]]
    X += rng.normal(0, 0.2, X.shape)
    return X, np.r_[np.zeros(n, int), np.ones(n, int)]


def test_separable_data_classified_perfectly_with_few_vectors():
    rng = np.random.default_rng(0)
    X, y = _blobs(50, rng)
    Xt, yt = _blobs(200, rng)
    clf = RVC(kernel=RBF(0.2)).fit(X, y)
    assert clf.converged_
    np.testing.assert_array_equal(clf.predict(Xt), yt)
    assert 1 <= clf.n_vectors_ <= 5  # sparse: a handful of the 100 training points
    np.testing.assert_array_equal(clf.relevance_vectors_, X[clf.relevance_indices_])


@requires_ripley
@pytest.mark.data
def test_ripley_known_answer():
    # Tipping (2001), section 4.2: Gaussian kernel of width r = 0.5 (gamma = 1 / r^2):
    # 4 relevance vectors and 9.3 % test error (SVM: 38 vectors, 10.6 %).
    X, y, Xt, yt = load_ripley()
    clf = RVC(kernel=RBF(gamma=4.0)).fit(X, y)
    err = 1.0 - clf.score(Xt, yt)
    assert clf.converged_
    assert 3 <= clf.n_vectors_ <= 8, clf.n_vectors_
    assert 0.085 <= err <= 0.105, err


def test_fixed_point_of_the_alpha_re_estimation():
    # at convergence alpha_i = gamma_i / mu_i^2 (eq. 16) for every kept weight
    rng = np.random.default_rng(1)
    X, y = _two_moons(60, rng)
    K = RBF(2.0)(X, X)
    Phi = np.hstack([K, np.ones((X.shape[0], 1))])
    res = sparse_bayes_logistic(Phi, y.astype(float), tol=1e-6, max_iter=5000)
    assert res["converged"]
    np.testing.assert_allclose(res["gamma"], res["alpha"] * res["mu"] ** 2, rtol=1e-4)
    assert np.all((res["gamma"] > 0) & (res["gamma"] < 1))


def test_log_evidence_increases():
    # the Laplace log evidence rises over the re-estimations (up to the small wobble
    # of re-taking the Laplace approximation at a new mode)
    rng = np.random.default_rng(2)
    X, y = _two_moons(60, rng)
    for rule in ("threshold", "marginal"):
        clf = RVC(kernel=RBF(2.0), max_iter=3000, prune_rule=rule).fit(X, y)
        ev = clf.log_evidence_
        assert ev[-1] > ev[0] + 10.0
        assert np.diff(ev).min() >= -1e-3 * abs(ev[-1]), (rule, np.diff(ev).min())


def test_gradient_of_the_laplace_evidence_against_finite_differences():
    # d log p(t|alpha) / d log alpha_i = (gamma_i - alpha_i mu_i^2) / 2 - (1/2) tr(Sigma dB)
    # where dB comes from the mode moving, d mu = -Sigma e_i alpha_i mu_i d log alpha_i.
    rng = np.random.default_rng(3)
    X, y = _two_moons(25, rng)
    Phi = np.hstack([RBF(1.0)(X, X[:6]), np.ones((X.shape[0], 1))])
    t = y.astype(float)
    alpha = rng.uniform(0.05, 2.0, Phi.shape[1])
    ev, mu = laplace_log_evidence(Phi, t, alpha)
    yv = expit(Phi @ mu)
    beta = yv * (1 - yv)
    H = (Phi.T * beta) @ Phi + np.diag(alpha)
    Sigma = np.linalg.inv(H)
    gamma = 1 - alpha * np.diag(Sigma)
    diag_PSP = np.einsum("ij,jk,ik->i", Phi, Sigma, Phi)
    h = 1e-5
    for i in range(Phi.shape[1]):
        dmu = -Sigma[:, i] * alpha[i] * mu[i]
        dbeta = beta * (1 - 2 * yv) * (Phi @ dmu)
        analytic = 0.5 * (gamma[i] - alpha[i] * mu[i] ** 2) - 0.5 * float(diag_PSP @ dbeta)
        up, down = alpha.copy(), alpha.copy()
        up[i] *= np.exp(h)
        down[i] *= np.exp(-h)
        numeric = (laplace_log_evidence(Phi, t, up, mu)[0]
                   - laplace_log_evidence(Phi, t, down, mu)[0]) / (2 * h)
        np.testing.assert_allclose(numeric, analytic, rtol=1e-5, atol=1e-7)


def test_expansion_is_the_posterior_mode_model():
    rng = np.random.default_rng(4)
    X, y = _two_moons(50, rng)
    clf = RVC(kernel=RBF(2.0)).fit(X, y)
    psi = clf.expansion_
    Xt = rng.uniform(-1.5, 2.5, (30, 2))
    # independent evaluation: sum_j mu_j k(x, r_j) + b by hand
    f = RBF(2.0)(Xt, clf.relevance_vectors_) @ psi.coef + psi.intercept
    np.testing.assert_allclose(clf.decision_function(Xt), f, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clf.predict_proba(Xt)[:, 1], expit(f), rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[(f > 0).astype(int)])
    assert psi.n_terms == clf.n_vectors_ == clf.alpha_.size


def test_save_load_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    X, y = _two_moons(30, rng)
    clf = RVC(kernel=RBF(2.0)).fit(X, y)
    sparsekm.save(clf, tmp_path / "rvc.skm")
    back = sparsekm.load(tmp_path / "rvc.skm")
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(back.relevance_indices_, clf.relevance_indices_)


def test_bad_input():
    X = np.random.default_rng(6).normal(size=(20, 2))
    y = np.r_[np.zeros(10), np.ones(10)]
    with pytest.raises(ValueError, match="Only binary classification"):
        RVC().fit(X, np.arange(20) % 3)
    with pytest.raises(ValueError, match="max_iter"):
        RVC(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="threshold_alpha"):
        RVC(threshold_alpha=-1.0).fit(X, y)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        RVC().fit(Xn, y)
    with pytest.raises(ValueError, match="prune_rule"):
        sparse_bayes_logistic(np.ones((3, 2)), np.array([0.0, 1.0, 1.0]), prune_rule="x")
    with pytest.raises(TypeError, match="kernel"):
        RVC(kernel=3).fit(X, y)


def test_hessian_cholesky_adds_jitter_only_when_the_plain_factorisation_fails():
    from scipy.linalg import LinAlgError, cho_factor

    from sparsekm.models.rvm import _hessian_cholesky

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    H = A @ A.T + 6 * np.eye(6)  # well conditioned: the plain factor, bit for bit
    np.testing.assert_array_equal(_hessian_cholesky(H)[0], cho_factor(H, lower=True)[0])
    # rank one + 1e-300 I: positive definite in exact arithmetic, not in float64
    v = np.ones(5)
    H = 3.0 * np.outer(v, v) + 1e-300 * np.eye(5)
    with pytest.raises(LinAlgError):
        cho_factor(H, lower=True)
    L = np.tril(_hessian_cholesky(H)[0])
    assert np.all(np.isfinite(L))
    np.testing.assert_allclose(L @ L.T, H, rtol=0, atol=1e-6 * 3.0)
    with pytest.raises(ValueError, match="not positive definite"):
        _hessian_cholesky(-np.eye(3))


def test_rvm_on_duplicated_basis_functions_does_not_fail():
    from sparsekm.models.rvm import sparse_bayes_logistic

    rng = np.random.default_rng(1)
    x = rng.normal(size=60)
    Phi = np.repeat(np.exp(-(x[:, None] - x[None, :8]) ** 2), 3, axis=1)  # each column 3 times
    t = (x > 0).astype(float)
    out = sparse_bayes_logistic(Phi, t, alpha_init=1e-300, max_iter=50)
    assert np.all(np.isfinite(out["mu"]))
    assert 1 <= out["active"].size < Phi.shape[1]
