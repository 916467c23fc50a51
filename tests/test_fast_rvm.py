"""FastRVC: Tipping & Faul's (2003) sequential marginal likelihood maximisation.

The closed forms are checked against explicit computations in the Gaussian (Laplace)
surrogate at the mode: ``S_i`` and ``Q_i`` against ``C^{-1}`` built by hand (eq. 22),
and every action's ``Delta L`` against ``log N(t_hat | 0, C)`` recomputed with the
changed ``alpha``.
"""

import numpy as np
import pytest
from scipy.special import expit

import sparsekm
from sparsekm.kernels import RBF
from sparsekm.models import RVC, FastRVC
from sparsekm.models.fast_rvm import (
    delta_log_marginal,
    fast_sparse_bayes_logistic,
    sparsity_quality,
)
from sparsekm.models.rvm import _posterior_mode


def _problem(seed=0, n=30, m=12, k=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    t = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(float)
    Phi = np.hstack([RBF(0.7)(X, X[:m - 1]), np.ones((n, 1))])
    active = np.array([0, 3, 7, m - 1][:k])
    alpha = rng.uniform(0.2, 3.0, size=active.size)
    P = Phi[:, active]
    w, chol, _ = _posterior_mode(P, t, alpha, np.zeros(active.size))
    return Phi, t, active, alpha, w, chol


def _surrogate(Phi, t, active, alpha, w):
    """``B``, ``t_hat`` of the Laplace approximation at the mode ``w``."""
    y = expit(Phi[:, active] @ w)
    b = y * (1.0 - y)
    return b, Phi[:, active] @ w + (t - y) / b


def _log_gauss(b, t_hat, Phi_cols, alphas):
    """``log N(t_hat | 0, C)`` up to a constant, ``C = B^{-1} + sum phi phi^T / alpha``."""
    C = np.diag(1.0 / b) + (Phi_cols / alphas) @ Phi_cols.T
    sign, logdet = np.linalg.slogdet(C)
    assert sign > 0
    return -0.5 * (logdet + t_hat @ np.linalg.solve(C, t_hat))


def test_sparsity_and_quality_equal_their_definitions_with_C_built_by_hand():
    Phi, t, active, alpha, w, chol = _problem()
    b, t_hat = _surrogate(Phi, t, active, alpha, w)
    P = Phi[:, active]
    C = np.diag(1.0 / b) + (P / alpha) @ P.T
    S_ref = np.einsum("ni,ni->i", Phi, np.linalg.solve(C, Phi))
    Q_ref = Phi.T @ np.linalg.solve(C, t_hat)
    S, Q = sparsity_quality(Phi, t, P, w, chol)
    np.testing.assert_allclose(S, S_ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Q, Q_ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_delta_L_of_every_action_equals_the_change_of_the_gaussian_evidence(seed):
    Phi, t, active, alpha, w, chol = _problem(seed)
    b, t_hat = _surrogate(Phi, t, active, alpha, w)
    S, Q = sparsity_quality(Phi, t, Phi[:, active], w, chol)
    m = Phi.shape[1]
    in_model = np.zeros(m, dtype=bool)
    in_model[active] = True
    alpha_all = np.zeros(m)
    alpha_all[active] = alpha
    delta, new_alpha = delta_log_marginal(S, Q, alpha_all, in_model)
    base = _log_gauss(b, t_hat, Phi[:, active], alpha)
    checked = {"add": 0, "reestimate": 0, "delete": 0}
    for i in range(m):
        if not np.isfinite(delta[i]):
            assert not in_model[i] and not np.isfinite(new_alpha[i])
            continue
        cols, alphas = list(active), list(alpha)
        if in_model[i] and np.isfinite(new_alpha[i]):
            alphas[cols.index(i)] = new_alpha[i]
            kind = "reestimate"
        elif in_model[i]:
            k = cols.index(i)
            del cols[k], alphas[k]
            kind = "delete"
        else:
            cols.append(i)
            alphas.append(new_alpha[i])
            kind = "add"
        after = _log_gauss(b, t_hat, Phi[:, cols], np.array(alphas))
        np.testing.assert_allclose(delta[i], after - base, rtol=1e-6, atol=1e-9)
        checked[kind] += 1
        if np.isfinite(new_alpha[i]):  # eq. 20: new_alpha maximises l(alpha_i)
            for f in (0.9, 1.1):
                alphas2 = list(alphas)
                alphas2[cols.index(i)] = f * new_alpha[i]
                assert _log_gauss(b, t_hat, Phi[:, cols], np.array(alphas2)) <= after + 1e-10
    assert checked["add"] > 0 and checked["reestimate"] + checked["delete"] > 0


def _two_blobs(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-1.0, 1.0, (n // 2, 2)), rng.normal(1.0, 1.0, (n // 2, 2))]
    y = np.r_[np.zeros(n // 2), np.ones(n // 2)]
    return X, y


def test_fit_ends_where_no_action_raises_the_evidence():
    X, y = _two_blobs()
    Phi = np.hstack([RBF(0.5)(X, X), np.ones((len(X), 1))])
    res = fast_sparse_bayes_logistic(Phi, y, tol=1e-6)
    assert res["converged"]
    active, alpha, w = res["active"], res["alpha"], res["mu"]
    _, chol, _ = _posterior_mode(Phi[:, active], y, alpha, w)
    S, Q = sparsity_quality(Phi, y, Phi[:, active], res["mu"], chol)
    in_model = np.zeros(Phi.shape[1], dtype=bool)
    in_model[active] = True
    alpha_all = np.zeros(Phi.shape[1])
    alpha_all[active] = alpha
    delta, _ = delta_log_marginal(S, Q, alpha_all, in_model)
    assert np.nanmax(delta) < 1e-3
    assert res["actions"]["add"] >= len(active)
    assert 1 <= len(active) < 15


def test_fast_rvc_matches_the_tipping_2001_rvc_in_accuracy_and_sparsity():
    X, y = _two_blobs(1, 120)
    Xt, yt = _two_blobs(2, 400)
    fast = FastRVC(kernel=RBF(0.5)).fit(X, y)
    slow = RVC(kernel=RBF(0.5)).fit(X, y)
    err_f = np.mean(fast.predict(Xt) != yt)
    err_s = np.mean(slow.predict(Xt) != yt)
    assert err_f <= err_s + 0.02
    assert fast.n_vectors_ <= slow.n_vectors_ + 3
    # the sequential route climbs the evidence from its one-function start (the two
    # algorithms may stop at different local maxima, so they are not compared)
    assert fast.log_evidence_[-1] > fast.log_evidence_[0] + 1.0
    # the decision function is the expansion over the relevance vectors
    f = RBF(0.5)(Xt, fast.relevance_vectors_) @ fast.expansion_.coef.ravel() \
        + fast.expansion_.intercept
    np.testing.assert_allclose(fast.decision_function(Xt), np.ravel(f), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(fast.relevance_vectors_, X[fast.relevance_indices_])


def test_fast_rvc_is_reproducible_and_round_trips(tmp_path):
    X, y = _two_blobs(3)
    a = FastRVC(kernel=RBF(0.5)).fit(X, y)
    b = FastRVC(kernel=RBF(0.5)).fit(X, y)
    np.testing.assert_array_equal(a.relevance_indices_, b.relevance_indices_)
    np.testing.assert_array_equal(a.expansion_.coef, b.expansion_.coef)
    path = tmp_path / "fast_rvc.skm"
    sparsekm.save(a, path)
    c = sparsekm.load(path)
    assert type(c) is FastRVC
    np.testing.assert_array_equal(c.decision_function(X), a.decision_function(X))
    np.testing.assert_array_equal(c.predict_proba(X), a.predict_proba(X))


def test_duplicated_points_are_not_added_twice():
    X, y = _two_blobs(4, 40)
    X2, y2 = np.r_[X, X], np.r_[y, y]
    clf = FastRVC(kernel=RBF(0.5)).fit(X2, y2)
    rv = clf.relevance_vectors_
    assert np.unique(rv, axis=0).shape[0] == rv.shape[0]
    assert clf.score(X, y) > 0.8


def test_fast_rvc_bad_input_is_refused_by_name():
    X, y = _two_blobs()
    with pytest.raises(ValueError, match="max_iter"):
        FastRVC(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="tol"):
        FastRVC(tol=-1.0).fit(X, y)
    with pytest.raises(ValueError):
        FastRVC().fit(X, np.arange(len(X)) % 3)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        FastRVC().fit(Xn, y)
    with pytest.raises(Exception, match="not fitted|fit"):
        FastRVC().predict(X)
