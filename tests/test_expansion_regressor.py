"""ExpansionRegressor (issue 36): Nyström + ridge shell, Gaussian-process variance."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as gpk
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.models import ExpansionRegressor

rng = np.random.default_rng(2)
X = rng.uniform(-2, 2, size=(70, 2))
y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=70) + 3.0
Xt = rng.uniform(-2.5, 2.5, size=(30, 2))


def test_fit_is_the_nystroem_ridge_pipeline():
    reg = ExpansionRegressor(kernel="rbf", gamma=0.7, n_vectors=15, alpha=0.2, random_state=4).fit(X, y)
    pipe = make_pipeline(Nystroem(gamma=0.7, n_components=15, random_state=4),
                         Ridge(alpha=0.2)).fit(X, y)
    np.testing.assert_allclose(reg.predict(Xt), pipe.predict(Xt), rtol=1e-8, atol=1e-9)
    assert reg.n_vectors_ == 15
    with pytest.raises(ValueError, match="return_std=True\\) is refused: .*point estimate"):
        reg.predict(Xt, return_std=True)


GPS = [gpk.ConstantKernel(2.0) * gpk.RBF(0.8) + gpk.WhiteKernel(0.05),
       gpk.ConstantKernel(1.0) * gpk.Matern(1.0, nu=1.5) + gpk.WhiteKernel(0.1),
       gpk.RationalQuadratic(1.0, 2.0)]


@pytest.mark.parametrize("kernel", GPS, ids=repr)
@pytest.mark.parametrize("normalize_y", [False, True])
def test_gp_at_full_budget_reproduces_mean_and_std(kernel, normalize_y):
    gpr = GaussianProcessRegressor(kernel, normalize_y=normalize_y, alpha=1e-3,
                                   random_state=0).fit(X, y)
    reg = ExpansionRegressor.from_gaussian_process(gpr)  # Z = all training inputs
    mean, std = reg.predict(Xt, return_std=True)
    m_ref, s_ref = gpr.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, m_ref, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(std, s_ref, rtol=1e-5, atol=1e-6)


def test_gp_projected_process_variance_matches_direct_computation():
    """Quiñonero-Candela & Rasmussen (2005) eq. 21, in y's units, with sklearn's kernel_."""
    gpr = GaussianProcessRegressor(GPS[1], normalize_y=True, alpha=1e-3, random_state=0).fit(X, y)
    Z = X[::5]
    reg = ExpansionRegressor.from_gaussian_process(gpr, Z)
    k = gpr.kernel_
    white = k.k2.noise_level
    s2 = gpr.alpha + white
    Kuu, Kuf, Ksu = k(Z, Z), k(Z, X), k(Xt, Z)  # a second argument: no white noise
    kss = k.diag(Xt) - white
    A = s2 * Kuu + Kuf @ Kuf.T
    var = (kss - np.einsum("ij,ji->i", Ksu, np.linalg.solve(Kuu, Ksu.T))
           + s2 * np.einsum("ij,ji->i", Ksu, np.linalg.solve(A, Ksu.T)) + white)
    ystd = gpr._y_train_std
    mean = Ksu @ np.linalg.solve(A, Kuf @ gpr.y_train_) * ystd + gpr._y_train_mean
    m, s = reg.predict(Xt, return_std=True)
    np.testing.assert_allclose(s, np.sqrt(var) * ystd, rtol=1e-6)
    np.testing.assert_allclose(m, mean, rtol=1e-6)
    assert reg.n_vectors_ == Z.shape[0]


def test_gp_variance_refused_with_reason():
    gpr = GaussianProcessRegressor(gpk.RBF(1.0) + gpk.ConstantKernel(0.5), optimizer=None).fit(X, y)
    full = KernelExpansion.from_estimator(gpr)
    reg = ExpansionRegressor.from_gaussian_process(gpr, expansion=full)
    np.testing.assert_allclose(reg.predict(Xt), gpr.predict(Xt), rtol=1e-8, atol=1e-8)
    with pytest.raises(ValueError, match="ConstantKernel"):
        reg.predict(Xt, return_std=True)
    with pytest.raises(ValueError, match="expansion="):
        ExpansionRegressor.from_gaussian_process(gpr, X[:10])


def test_from_expansion_of_kernel_ridge():
    krr = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.5).fit(X, y)
    reg = ExpansionRegressor.from_expansion(KernelExpansion.from_estimator(krr), alpha=0.1)
    np.testing.assert_allclose(reg.predict(Xt), krr.predict(Xt), rtol=1e-9)
    assert reg.score(X, y) == pytest.approx(krr.score(X, y), rel=1e-9)


def test_save_load_round_trip(tmp_path):
    gpr = GaussianProcessRegressor(GPS[0], normalize_y=True, random_state=0).fit(X, y)
    reg = ExpansionRegressor.from_gaussian_process(gpr, X[::3])
    sparsekm.save(reg, tmp_path / "gp.skm")
    back = sparsekm.load(tmp_path / "gp.skm")
    for a, b in zip(reg.predict(Xt, return_std=True), back.predict(Xt, return_std=True),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    plain = ExpansionRegressor(n_vectors=10, random_state=0).fit(X, y)
    sparsekm.save(plain, tmp_path / "r.skm")
    back = sparsekm.load(tmp_path / "r.skm")
    np.testing.assert_array_equal(back.predict(Xt), plain.predict(Xt))
    with pytest.raises(ValueError, match="refused"):
        back.predict(Xt, return_std=True)


def test_one_class_and_transformer_shells(tmp_path):
    from sklearn.decomposition import KernelPCA
    from sklearn.svm import OneClassSVM

    from sparsekm.models import ExpansionOutlierDetector, ExpansionTransformer

    oc = OneClassSVM(nu=0.3, gamma=0.5).fit(X)
    det = ExpansionOutlierDetector.from_expansion(KernelExpansion.from_estimator(oc))
    np.testing.assert_allclose(det.decision_function(Xt), oc.decision_function(Xt), rtol=1e-9)
    np.testing.assert_array_equal(det.predict(Xt), oc.predict(Xt))
    kp = KernelPCA(3, kernel="rbf", gamma=0.5).fit(X)
    tr = ExpansionTransformer.from_expansion(KernelExpansion.from_estimator(kp))
    np.testing.assert_allclose(tr.transform(Xt), kp.transform(Xt), rtol=1e-8, atol=1e-10)
    for est in (det, tr):
        sparsekm.save(est, tmp_path / "m.skm", force=True)
        back = sparsekm.load(tmp_path / "m.skm")
        np.testing.assert_array_equal(back.expansion_.coef, est.expansion_.coef)
        with pytest.raises(TypeError, match="not fitted"):
            back.fit(X)


@pytest.mark.parametrize("kernel", [gpk.Matern(1.0, nu=0.5), gpk.RationalQuadratic(1.0, 2.0)],
                         ids=repr)
def test_save_load_new_kernels(kernel, tmp_path):
    gpr = GaussianProcessRegressor(kernel + gpk.WhiteKernel(0.1), optimizer=None).fit(X, y)
    reg = ExpansionRegressor.from_gaussian_process(gpr, X[::4])
    sparsekm.save(reg, tmp_path / "k.skm")
    back = sparsekm.load(tmp_path / "k.skm")
    assert back.expansion_.kernel == reg.expansion_.kernel
    for a, b in zip(reg.predict(Xt, return_std=True), back.predict(Xt, return_std=True),
                    strict=True):
        np.testing.assert_array_equal(a, b)
