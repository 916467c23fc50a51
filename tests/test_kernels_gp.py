"""Matérn, rational quadratic and Laplacian kernels (issue 36): values equal
scikit-learn's, gradients equal central finite differences, the fixed-point iteration
is refused where it does not apply."""

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as gpk
from sklearn.metrics.pairwise import laplacian_kernel

from sparsekm import KernelExpansion
from sparsekm.kernels import Laplacian, Matern, RationalQuadratic, kernel_from_dict
from sparsekm.preimage import fixed_point, gradient, preimage

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 4))
Y = RNG.normal(size=(12, 4))

CASES = [
    (Matern(0.7, 0.5), gpk.Matern(0.7, nu=0.5)),
    (Matern(1.3, 1.5), gpk.Matern(1.3, nu=1.5)),
    (Matern(2.1, 2.5), gpk.Matern(2.1, nu=2.5)),
    (RationalQuadratic(0.9, 0.6), gpk.RationalQuadratic(length_scale=0.9, alpha=0.6)),
]


@pytest.mark.parametrize("ours, theirs", CASES, ids=lambda c: repr(c))
def test_values_equal_sklearn(ours, theirs):
    np.testing.assert_allclose(ours(X, Y), theirs(X, Y), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours(X), theirs(X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.diag(X), theirs.diag(X), rtol=1e-14)
    C = RNG.normal(size=(12, 2))
    np.testing.assert_allclose(ours.mmv(X, Y, C), theirs(X, Y) @ C, rtol=1e-10, atol=1e-12)


def test_laplacian_equals_sklearn():
    k = Laplacian(0.3)
    np.testing.assert_allclose(k(X, Y), laplacian_kernel(X, Y, gamma=0.3), rtol=1e-12)
    np.testing.assert_allclose(k.diag(X), 1.0)


def _fd_gradient_y(kernel, X, y, h=1e-6):
    G = np.empty((X.shape[0], y.size))
    for j in range(y.size):
        e = np.zeros(y.size)
        e[j] = h
        G[:, j] = (kernel(X, (y + e)[None])[:, 0] - kernel(X, (y - e)[None])[:, 0]) / (2 * h)
    return G


@pytest.mark.parametrize("kernel", [c[0] for c in CASES] + [Laplacian(0.3)], ids=repr)
def test_gradients_match_finite_differences(kernel):
    y = RNG.normal(size=4)
    np.testing.assert_allclose(kernel.gradient_y(X, y), _fd_gradient_y(kernel, X, y),
                               rtol=1e-5, atol=1e-8)
    Z = RNG.normal(size=(3, 4))
    W = RNG.normal(size=(30, 3))
    G = kernel.gradient_sum(X, Z, W)
    # finite differences of sum_i W[i, u] k(x_i, z_u) in z_u
    for u in range(3):
        fd = _fd_gradient_y(kernel, X, Z[u])
        np.testing.assert_allclose(G[u], W[:, u] @ fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("kernel", [c[0] for c in CASES[1:]], ids=repr)
def test_profile_derivative_matches_finite_differences(kernel):
    r2 = np.array([1e-3, 0.01, 0.5, 2.0, 7.0])  # (at 0 a one-sided quotient errs by O(h^0.5))
    h = 1e-8
    fd = (kernel.profile(r2 + h) - kernel.profile(r2 - h)) / (2 * h)
    np.testing.assert_allclose(kernel.profile_derivative(r2), fd, rtol=1e-4, atol=1e-6)


def test_matern_half_subgradient_at_the_cusp():
    k = Matern(1.0, 0.5)
    assert k.profile_derivative(np.array([0.0]))[0] == 0.0
    np.testing.assert_array_equal(k.gradient_y(X[:2], X[0])[0], 0.0)


def test_fixed_point_refused_for_the_cusp_and_gradient_used():
    psi = KernelExpansion(X[:5], np.ones(5), Matern(1.0, 0.5))
    with pytest.raises(ValueError, match="unbounded"):
        fixed_point(psi)
    res = preimage(psi, random_state=0)  # "auto" falls back to gradient steps
    ref = gradient(psi, random_state=0)
    np.testing.assert_allclose(res.z, ref.z)
    # fixed point works for the smooth Matérn
    fixed_point(KernelExpansion(X[:5], np.ones(5), Matern(1.0, 2.5)), random_state=0)


def test_laplacian_gradient_preimage_and_no_fixed_point():
    psi = KernelExpansion(X[:5], np.ones(5), Laplacian(0.5))
    with pytest.raises(ValueError, match="radial"):
        fixed_point(psi)
    res = gradient(psi, random_state=0)
    assert np.isfinite(res.z).all()


@pytest.mark.parametrize("kernel", [c[0] for c in CASES] + [Laplacian(0.3)], ids=repr)
def test_round_trip_dict(kernel):
    assert kernel_from_dict(kernel.to_dict()) == kernel


def test_bad_parameters():
    with pytest.raises(ValueError, match="0.5, 1.5 or 2.5"):
        Matern(1.0, nu=1.0)
    with pytest.raises(ValueError):
        RationalQuadratic(length_scale=-1.0)
