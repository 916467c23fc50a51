"""Ridge on reduced features / Nyström peer (issue 36): closed forms and scikit-learn."""

import numpy as np
import pytest
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline

from sparsekm.approx.ridge import nystroem_landmarks, nystroem_ridge, ridge_on_landmarks
from sparsekm.kernels import RBF, Matern

rng = np.random.default_rng(1)
X = rng.uniform(-2, 2, size=(150, 2))
y = np.sin(2 * X[:, 0]) * X[:, 1] + 0.1 * rng.normal(size=150)
Xv = rng.uniform(-2, 2, size=(60, 2))
yv = np.sin(2 * Xv[:, 0]) * Xv[:, 1] + 0.1 * rng.normal(size=60)
Z = X[::10]
K = RBF(0.8)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("kernel", [RBF(0.8), Matern(1.0, 1.5)], ids=repr)
def test_refit_equals_closed_form_ridge(kernel, fit_intercept):
    lam = 0.05
    res = ridge_on_landmarks(kernel, Z, X, y, lam=lam, fit_intercept=fit_intercept,
                             block_size=17)
    Kxz, Kzz = kernel(X, Z), kernel(Z)
    if fit_intercept:  # the intercept is unpenalised: centre the features and y
        mx, my = Kxz.mean(axis=0), y.mean()
        A = Kxz - mx
        beta = np.linalg.solve(A.T @ A + lam * Kzz, A.T @ (y - my))
        b = my - mx @ beta
    else:  # eq. (2): beta = (K_zx K_xz + lam K_zz)^-1 K_zx y
        beta, b = np.linalg.solve(Kxz.T @ Kxz + lam * Kzz, Kxz.T @ y), 0.0
    np.testing.assert_allclose(res.expansion(Xv), kernel(Xv, Z) @ beta + b, rtol=1e-7,
                               atol=1e-8)
    np.testing.assert_allclose(res.expansion.coef, beta, rtol=1e-5, atol=1e-6)


def test_peer_equals_sklearn_nystroem_ridge_pipeline():
    for seed in (0, 3):
        pipe = make_pipeline(Nystroem(kernel="rbf", gamma=0.8, n_components=20,
                                      random_state=seed), Ridge(alpha=0.1)).fit(X, y)
        res = nystroem_ridge(K, X, y, 20, lam=0.1, random_state=seed)
        np.testing.assert_array_equal(
            res.expansion.vectors,
            X[np.sort(pipe[0].component_indices_)])  # the same landmarks for the same seed
        assert res.expansion.n_terms == 20
        np.testing.assert_allclose(res.expansion(Xv), pipe.predict(Xv), rtol=1e-8, atol=1e-9)


def test_full_budget_reproduces_kernel_ridge():
    for lam in (0.3, 1e-4):
        krr = KernelRidge(alpha=lam, kernel="rbf", gamma=0.8).fit(X, y)
        res = ridge_on_landmarks(K, X, X, y, lam=lam, fit_intercept=False)
        np.testing.assert_allclose(res.expansion(Xv), krr.predict(Xv), rtol=1e-7, atol=1e-7)


def test_lambda_chosen_on_validation_is_the_best_single_fit():
    grid = [1e-4, 1e-2, 1.0, 10.0]
    res = ridge_on_landmarks(K, Z, X, y, lam=grid, X_val=Xv, y_val=yv)
    single = [np.sqrt(np.mean((ridge_on_landmarks(K, Z, X, y, lam=g).expansion(Xv) - yv) ** 2))
              for g in grid]
    np.testing.assert_allclose(res.validation_rmse, single, rtol=1e-8)
    assert res.lam == grid[int(np.argmin(single))]
    with pytest.raises(ValueError, match="validation"):
        ridge_on_landmarks(K, Z, X, y, lam=grid)


def test_multi_output_equals_columns():
    Y = np.c_[y, y ** 2]
    res = ridge_on_landmarks(K, Z, X, Y, lam=0.1)
    for j in range(2):
        one = ridge_on_landmarks(K, Z, X, Y[:, j], lam=0.1)
        np.testing.assert_allclose(res.expansion(Xv)[:, j], one.expansion(Xv), rtol=1e-9)


def test_projected_process_variance_matches_direct_formula():
    """Quiñonero-Candela & Rasmussen (2005) eq. 21 / R&W eq. 8.27 with the SoR term."""
    amp, noise = 1.7, 0.2
    res = ridge_on_landmarks(K, Z, X, y, lam=noise / amp, fit_intercept=False)
    A, B, lam = res.variance_factors()
    kxz = K(Xv, Z)
    var = amp * (K.diag(Xv) - ((kxz @ A) ** 2).sum(1) + lam * ((kxz @ B) ** 2).sum(1))
    Kuu, Kuf, Ksu = amp * K(Z), amp * K(Z, X), amp * K(Xv, Z)
    direct = (amp - np.einsum("ij,ji->i", Ksu, np.linalg.solve(Kuu, Ksu.T))
              + noise * np.einsum("ij,ji->i", Ksu,
                                  np.linalg.solve(noise * Kuu + Kuf @ Kuf.T, Ksu.T)))
    np.testing.assert_allclose(var, direct, rtol=1e-6, atol=1e-10)
    # and the mean is the SoR/PP mean  K_su (sigma^2 K_uu + K_uf K_fu)^-1 K_uf y
    mean = Ksu @ np.linalg.solve(noise * Kuu + Kuf @ Kuf.T, Kuf @ y)
    np.testing.assert_allclose(res.expansion(Xv), mean, rtol=1e-6, atol=1e-9)


def test_kmeans_landmarks_reproducible_and_bad_input():
    a = nystroem_landmarks(X, 10, method="kmeans", random_state=0)
    b = nystroem_landmarks(X, 10, method="kmeans", random_state=0)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (10, 2)
    with pytest.raises(ValueError, match="'uniform' or 'kmeans'"):
        nystroem_landmarks(X, 10, method="grid")
    with pytest.raises(ValueError, match="NaN"):
        ridge_on_landmarks(K, Z, X, np.r_[np.nan, y[1:]])
