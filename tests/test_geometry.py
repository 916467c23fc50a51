"""Feature-space geometry: kernel maps (eq. 13-17), metric (eq. 22-25), curvature (eq. 27-29)."""

import numpy as np
import pytest

from sparsekm import RBF, InverseMultiquadric, Linear, Polynomial, Sigmoid
from sparsekm.geometry import (
    christoffel_symbols,
    empirical_kernel_map,
    inverse_metric_tensor_dot_product,
    metric_tensor,
    metric_tensor_dot_product,
    polynomial_riemann_tensor,
    riemann_tensor,
    scalar_curvature,
    whitened_kernel_map,
)


def test_empirical_kernel_map_is_kernel_rows():
    rng = np.random.default_rng(0)
    Z, X = rng.normal(size=(5, 3)), rng.normal(size=(4, 3))
    k = RBF(0.5)
    np.testing.assert_allclose(empirical_kernel_map(k, Z, X), k(X, Z), rtol=1e-14)


@pytest.mark.parametrize("kernel", [RBF(0.5), Polynomial(2, 1.0)])
def test_whitened_map_reproduces_the_kernel(kernel):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(12, 2))
    F = whitened_kernel_map(kernel, Z)
    # eq. 14/15: the canonical dot product of the whitened map equals k on Z.
    np.testing.assert_allclose(F @ F.T, kernel(Z), atol=1e-8)
    if isinstance(kernel, Polynomial):
        # Degree 2 in R^2: a 6-dimensional feature space, so K is singular (rank 6) and
        # the pseudo-inverse (footnote 5) makes the map exact for *any* x.
        assert F.shape[1] == 6
        X = rng.normal(size=(5, 2))
        G = whitened_kernel_map(kernel, Z, X)
        np.testing.assert_allclose(G @ G.T, kernel(X), rtol=1e-7)


def test_metric_from_kernel_matches_closed_form():
    x = np.array([0.3, -0.5, 0.7])
    for kernel in [Polynomial(3, 1.0), Polynomial(2, 0.0), Polynomial(4, 0.5, gamma=0.7),
                   Sigmoid(0.3, 0.1), Linear()]:
        g_num = metric_tensor(kernel, x)
        g_eq24 = metric_tensor_dot_product(kernel, x)
        np.testing.assert_allclose(g_num, g_eq24, rtol=1e-6, atol=1e-7 * np.abs(g_eq24).max())
        # eq. 25 is the inverse of eq. 24
        np.testing.assert_allclose(inverse_metric_tensor_dot_product(kernel, x) @ g_eq24,
                                   np.eye(3), atol=1e-12)
    np.testing.assert_allclose(metric_tensor(Linear(), x), np.eye(3), atol=1e-7)


@pytest.mark.parametrize("kernel,scale", [(RBF(0.7), 2 * 0.7), (InverseMultiquadric(-0.5), 1.0)])
def test_radial_metric_is_constant_and_flat(kernel, scale):
    x = np.array([0.2, -1.0])
    # ds^2 = 2 (k(0) - k(|dx|^2)) ~ -2 k'(0) |dx|^2
    np.testing.assert_allclose(metric_tensor(kernel, x), scale * np.eye(2), rtol=1e-6)
    assert np.abs(riemann_tensor(kernel, x)).max() == 0.0


def test_christoffel_symbols_are_symmetric():
    G = christoffel_symbols(Polynomial(3, 1.0), np.array([0.3, -0.5, 0.7]))
    np.testing.assert_allclose(G, np.swapaxes(G, 1, 2), atol=1e-14)


@pytest.mark.parametrize("p", [2, 3, 4])
@pytest.mark.parametrize("c", [0.0, 0.5, 2.0])
@pytest.mark.parametrize("N", [2, 3, 4])
def test_numerical_curvature_matches_closed_form(p, c, N):
    x = np.array([0.3, -0.5, 0.7, 0.2])[:N]
    R = riemann_tensor(Polynomial(p, c), x)
    closed = polynomial_riemann_tensor(x, p, c)
    np.testing.assert_allclose(R, closed, atol=1e-6 * (1.0 + np.abs(closed).max()))


def test_closed_form_equals_eq29_for_homogeneous_kernels():
    # Eq. 29 as printed: R_{mu nu rho}^sigma = (p-1)/|x|^2 (d_{rho nu} d_{sigma mu} -
    # d_{rho mu} d_{sigma nu}) - (p-1)/|x|^4 (x_nu x_rho d_{mu sigma} - x_mu x_rho d_{sigma nu}
    # + x_sigma x_mu d_{rho nu} - x_sigma x_nu d_{rho mu}); the paper's lower indices are
    # ordered (derivative, derivative, row), i.e. R_{mu nu rho}^sigma = R^sigma_{rho nu mu}.
    x = np.array([0.3, -0.5, 0.7])
    d = np.eye(3)
    r2 = x @ x
    for p in (2, 3, 5):
        eq29 = ((p - 1) / r2 * (np.einsum("rn,sm->mnrs", d, d) - np.einsum("rm,sn->mnrs", d, d))
                - (p - 1) / r2**2 * (np.einsum("n,r,ms->mnrs", x, x, d)
                                     - np.einsum("m,r,sn->mnrs", x, x, d)
                                     + np.einsum("s,m,rn->mnrs", x, x, d)
                                     - np.einsum("s,n,rm->mnrs", x, x, d)))
        ours = np.einsum("srnm->mnrs", riemann_tensor(Polynomial(p, 0.0), x))
        np.testing.assert_allclose(ours, eq29, atol=1e-6 * np.abs(eq29).max())


def test_printed_inhomogeneous_formula_agrees_only_where_it_can():
    # The formula printed after eq. 28 agrees at x = 0, where only its first term
    # (p-1)/c (d_{nu alpha} d_{mu beta} - d_{nu beta} d_{mu alpha}) survives.
    for p, c in [(2, 1.0), (3, 0.5)]:
        R0 = riemann_tensor(Polynomial(p, c), np.zeros(3), h=1e-4)
        d = np.eye(3)
        first = (p - 1) / c * (np.einsum("na,mb->mnab", d, d) - np.einsum("nb,ma->mnab", d, d))
        np.testing.assert_allclose(R0, first, atol=1e-7)


def test_papers_stated_curvature_facts():
    rng = np.random.default_rng(0)
    for x2, x3 in zip(rng.normal(size=(3, 2)), rng.normal(size=(3, 3)), strict=True):
        for c in (0.0, 1.0):
            # p = 1: flat for every N and c.
            assert abs(scalar_curvature(Polynomial(1, c), x3)) < 1e-9
            assert np.abs(riemann_tensor(Polynomial(1, c), x3)).max() < 1e-9
        for p in (2, 3, 4):
            # N = 2: the homogeneous surface is flat for every p ...
            R_hom = riemann_tensor(Polynomial(p, 0.0), x2)
            assert np.abs(R_hom).max() < 1e-5 * (p - 1) / (x2 @ x2)
            # ... the inhomogeneous one is not.
            assert abs(scalar_curvature(Polynomial(p, 1.0), x2)) > 1e-3
            # N = 3, homogeneous: curved (a cone over a sphere of radius sqrt(p)).
            r2 = x3 @ x3
            np.testing.assert_allclose(scalar_curvature(Polynomial(p, 0.0), x3),
                                       2 * (1 - p) / (p * r2**p), rtol=1e-5)
    # c > 0: no singularity at x = 0; c = 0 is singular there.
    assert np.isfinite(polynomial_riemann_tensor(np.zeros(3), 3, 1.0)).all()
    with pytest.raises(ValueError, match="singular at x = 0"):
        polynomial_riemann_tensor(np.zeros(3), 3, 0.0)


def test_errors():
    x = np.array([0.1, 0.2])
    with pytest.raises(ValueError, match="dot-product kernel"):
        metric_tensor_dot_product(RBF(1.0), x)
    with pytest.raises(ValueError, match="dot-product kernel"):
        inverse_metric_tensor_dot_product(RBF(1.0), x)
    with pytest.raises(TypeError, match="Kernel"):
        metric_tensor("rbf", x)
    with pytest.raises(ValueError, match="x must be a 1-D array"):
        metric_tensor(RBF(1.0), [[0.1, 0.2]])
    with pytest.raises(ValueError, match="x contains NaN"):
        riemann_tensor(Polynomial(2, 1.0), [np.nan, 0.0])
    with pytest.raises(ValueError, match="positive semi-definite"):
        whitened_kernel_map(Sigmoid(), np.ones((3, 2)))
    with pytest.raises(ValueError, match="X has 3 features, but Z has 2"):
        empirical_kernel_map(RBF(), np.ones((3, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="'degree' parameter of polynomial_riemann_tensor"):
        polynomial_riemann_tensor(x, 0, 1.0)
    with pytest.raises(ValueError, match="'h' parameter of metric_tensor"):
        metric_tensor(RBF(), x, h=0.0)
