"""Fitted KernelRidge, GaussianProcessRegressor, SVR/NuSVR, OneClassSVM and KernelPCA as
KernelExpansions (issue 36): each expansion evaluates to scikit-learn's own output."""

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as gpk
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVR, NuSVR, OneClassSVM

from sparsekm import KernelExpansion
from sparsekm.interop import GPKernelForm, kernel_from_sklearn_gp
from sparsekm.kernels import RBF, Laplacian, Matern, Polynomial, RationalQuadratic

rng = np.random.default_rng(0)
X = rng.normal(size=(80, 3))
y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.normal(size=80) + 2.0
Xt = rng.normal(size=(40, 3))


@pytest.mark.parametrize("params", [
    {"kernel": "rbf", "gamma": 0.4}, {"kernel": "rbf"}, {"kernel": "laplacian", "gamma": 0.3},
    {"kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 1.0}, {"kernel": "polynomial"},
    # sigmoid: gamma=0.05 keeps K + alpha I nonsingular (gamma=0.1 did not: scikit-learn
    # warned "Singular matrix in solving dual problem" and fell back to least squares)
    {"kernel": "sigmoid", "gamma": 0.05, "coef0": 0.2}, {"kernel": "linear"},
    {"kernel": gpk.ConstantKernel(2.0) * gpk.Matern(1.1, nu=2.5) + gpk.ConstantKernel(0.7)},
], ids=repr)
def test_kernel_ridge(params):
    est = KernelRidge(alpha=0.3, **params).fit(X, y)
    psi = KernelExpansion.from_estimator(est)
    assert psi.n_terms == X.shape[0]
    np.testing.assert_allclose(psi(Xt), est.predict(Xt), rtol=1e-9, atol=1e-9)


def test_kernel_ridge_multi_target():
    Y = np.c_[y, -2 * y]
    est = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.5).fit(X, Y)
    np.testing.assert_allclose(KernelExpansion.from_estimator(est)(Xt), est.predict(Xt),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kernel", ["chi2", "cosine", "precomputed"])
def test_kernel_ridge_refused(kernel):
    Xp = np.abs(X)
    est = KernelRidge(kernel=kernel, gamma=1.0).fit(Xp @ Xp.T if kernel == "precomputed" else Xp, y)
    with pytest.raises(TypeError, match="sparsekm"):
        KernelExpansion.from_estimator(est)


# Fitted hyperparameters inside their bounds (no scikit-learn ConvergenceWarning): the
# RBF's length scale with normalize_y, and the noise beside the rough Matern(nu=0.5), ran
# to their lower bounds 1e-5 (the data were interpolated); the noise is fixed there, so
# the expansion still carries a white-noise term.
GP_KERNELS = [
    gpk.RBF(1.0, length_scale_bounds=(0.1, 1e3)),
    gpk.ConstantKernel(1.0) * gpk.Matern(1.0, nu=0.5) + gpk.WhiteKernel(
        0.1, noise_level_bounds="fixed"),
    gpk.ConstantKernel(1.0) * gpk.Matern(1.0, nu=1.5) + gpk.WhiteKernel(0.1),
    gpk.Matern(1.0, nu=2.5) * gpk.ConstantKernel(1.0) + gpk.WhiteKernel(0.1),
    gpk.ConstantKernel(1.0) * gpk.RationalQuadratic(1.0, 1.0) + gpk.WhiteKernel(0.1),
    gpk.ConstantKernel(1.0) * gpk.RBF(1.0) + gpk.ConstantKernel(0.5) + gpk.WhiteKernel(0.1),
]


@pytest.mark.parametrize("kernel", GP_KERNELS, ids=repr)
@pytest.mark.parametrize("normalize_y", [False, True])
def test_gaussian_process_mean(kernel, normalize_y):
    est = GaussianProcessRegressor(kernel, normalize_y=normalize_y, random_state=0).fit(X, y)
    psi = KernelExpansion.from_estimator(est)
    np.testing.assert_allclose(psi(Xt), est.predict(Xt), rtol=1e-8, atol=1e-9)


def test_gaussian_process_multi_target_and_default_kernel():
    Y = np.c_[y, y ** 2]
    est = GaussianProcessRegressor(normalize_y=True, alpha=1e-2).fit(X, Y)
    np.testing.assert_allclose(KernelExpansion.from_estimator(est)(Xt), est.predict(Xt),
                               rtol=1e-8, atol=1e-8)


def test_gaussian_process_unfitted_refused():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="prior"):
        KernelExpansion.from_estimator(GaussianProcessRegressor())


def test_gp_kernel_forms():
    form = kernel_from_sklearn_gp(gpk.ConstantKernel(3.0) * gpk.RationalQuadratic(0.5, 2.0)
                                  + gpk.WhiteKernel(0.2) + gpk.ConstantKernel(0.5))
    assert form == GPKernelForm(RationalQuadratic(0.5, 2.0), 3.0, 0.5, 0.2)
    assert kernel_from_sklearn_gp(gpk.Matern(2.0, nu=np.inf)).kernel == RBF(1 / 8)
    assert kernel_from_sklearn_gp(gpk.DotProduct(2.0) ** 2).kernel == Polynomial(2, 4.0)
    # the covariance amplitude * k + constant equals scikit-learn's off the diagonal
    k = gpk.ConstantKernel(1.7) * gpk.Matern(0.8, nu=1.5) + gpk.ConstantKernel(0.3) \
        + gpk.WhiteKernel(0.5)
    f = kernel_from_sklearn_gp(k)
    assert f.kernel == Matern(0.8, 1.5)
    np.testing.assert_allclose(f.amplitude * f.kernel(X, Xt) + f.constant, k(X, Xt), rtol=1e-12)
    np.testing.assert_allclose(f.amplitude * f.kernel(X) + f.constant + f.noise * np.eye(80),
                               k(X), rtol=1e-12)


@pytest.mark.parametrize("kernel, reason", [
    (gpk.ExpSineSquared(), "no sparsekm kernel form"),
    (gpk.RBF([1.0, 2.0, 3.0]), "anisotropic"),
    (gpk.Matern(1.0, nu=0.7), "Bessel"),
    (gpk.RBF(1.0) * gpk.Matern(1.0), "two non-constant"),
    (gpk.RBF(1.0) + gpk.RBF(2.0), "sums two different"),
    (gpk.ConstantKernel(1.0) + gpk.WhiteKernel(1.0), "only constant"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gp_kernels_refused(kernel, reason):
    with pytest.raises(TypeError, match=reason):
        kernel_from_sklearn_gp(kernel)


@pytest.mark.parametrize("est", [SVR(C=3.0, gamma=0.5), NuSVR(nu=0.4, kernel="poly")], ids=repr)
def test_svr(est):
    est.fit(X, y)
    np.testing.assert_allclose(KernelExpansion.from_estimator(est)(Xt), est.predict(Xt),
                               rtol=1e-9, atol=1e-9)


def test_one_class_svm():
    est = OneClassSVM(nu=0.2, gamma=0.3).fit(X)
    psi = KernelExpansion.from_estimator(est)
    np.testing.assert_allclose(psi(Xt), est.decision_function(Xt), rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(np.where(psi(Xt) < 0, -1, 1), est.predict(Xt))


@pytest.mark.parametrize("kernel", ["rbf", "sigmoid", "poly"])
def test_kernel_pca(kernel):
    est = KernelPCA(n_components=4, kernel=kernel, gamma=0.3).fit(X)
    psi = KernelExpansion.from_estimator(est)
    np.testing.assert_allclose(psi(Xt), est.transform(Xt), rtol=1e-8, atol=1e-9)


def test_laplacian_kernel_ridge_kernel_is_laplacian():
    est = KernelRidge(kernel="laplacian").fit(X, y)  # gamma None -> 1 / n_features
    assert KernelExpansion.from_estimator(est).kernel == Laplacian(1 / 3)
