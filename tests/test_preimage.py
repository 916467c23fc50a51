"""Pre-image solvers: known answers, agreement between solvers, batching, errors."""

import numpy as np
import pytest

from sparsekm import RBF, InverseMultiquadric, KernelExpansion, Linear, Polynomial, Sigmoid
from sparsekm.preimage import (
    PreimageResult,
    exact_dot_product,
    fixed_point,
    gradient,
    preimage,
    preimage_objective,
)


@pytest.fixture
def cloud():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    alpha = rng.normal(size=40) + 0.5
    return X, alpha


def _fd_gradient(expansion, z, h=1e-6):
    """Central finite differences of the projection objective (eq. 45) at z."""
    g = np.zeros_like(z)
    for j in range(z.size):
        e = np.zeros_like(z)
        e[j] = h
        fp = preimage_objective(expansion, z + e)[1]
        fm = preimage_objective(expansion, z - e)[1]
        g[j] = (fp - fm) / (2 * h)
    return g


# -- known answers --------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [RBF(0.3), InverseMultiquadric(-0.5), InverseMultiquadric(-1.0)])
def test_single_radial_term_has_its_centre_as_preimage(kernel):
    centre = np.array([1.0, -2.0, 0.5])
    psi = KernelExpansion([centre], [2.5], kernel)
    res = fixed_point(psi, z0=centre + 0.3, random_state=0)
    np.testing.assert_allclose(res.z, centre, atol=1e-7)
    np.testing.assert_allclose(res.beta, 2.5, rtol=1e-10)
    np.testing.assert_allclose(res.objective, 0.0, atol=1e-12)
    # rho = ||2.5 Phi(c) - Phi(c)||^2 = (2.5 - 1)^2 k(c, c)
    np.testing.assert_allclose(res.rho, 1.5**2 * kernel.diag(centre[None])[0], rtol=1e-8)
    assert isinstance(res, PreimageResult) and res.converged


def test_two_gaussians_midpoint():
    # Two equal Gaussians closer than the width: the optimum is their midpoint.
    psi = KernelExpansion([[0.0, 0.0], [0.2, 0.0]], [1.0, 1.0], RBF(1.0))
    res = fixed_point(psi, random_state=0)
    np.testing.assert_allclose(res.z, [0.1, 0.0], atol=1e-8)


@pytest.mark.parametrize("kernel", [RBF(0.5), InverseMultiquadric(-0.5)])
def test_fixed_point_equals_gradient(cloud, kernel):
    X, alpha = cloud
    psi = KernelExpansion(X, alpha, kernel)
    fp = fixed_point(psi, n_init=8, X_init=X, random_state=0)
    gr = gradient(psi, z0=fp.z + 0.05, n_init=1, random_state=0)
    assert fp.converged and gr.converged
    np.testing.assert_allclose(gr.z, fp.z, atol=1e-6)
    np.testing.assert_allclose(gr.objective, fp.objective, rtol=1e-10)
    # The fixed point is a stationary point of eq. 45 (finite differences).
    np.testing.assert_allclose(_fd_gradient(psi, fp.z), 0.0, atol=1e-6 * (1 + fp.objective))


def test_result_fields_are_consistent(cloud):
    X, alpha = cloud
    kernel = RBF(0.5)
    psi = KernelExpansion(X, alpha, kernel)
    res = fixed_point(psi, random_state=0)
    s = float(alpha @ kernel(X, res.z[None])[:, 0])
    norm2 = psi.norm2()
    np.testing.assert_allclose(res.beta, s, rtol=1e-12)  # k(z, z) = 1
    np.testing.assert_allclose(res.objective, norm2 - s**2, rtol=1e-10)
    np.testing.assert_allclose(res.rho, norm2 - 2 * s + 1.0, rtol=1e-10)
    # Objective equals the distance to the one-term expansion beta Phi(z) (eq. 44/45).
    one = KernelExpansion(res.z[None], [res.beta], kernel)
    np.testing.assert_allclose(psi.distance2(one), res.objective, rtol=1e-8, atol=1e-12)


def test_restarts_keep_the_best_start(cloud):
    X, alpha = cloud
    psi = KernelExpansion(X, alpha, RBF(2.0))  # narrow kernel: many local optima
    one = fixed_point(psi, n_init=1, random_state=0)
    many = fixed_point(psi, n_init=10, X_init=X, random_state=0)
    assert many.objective <= one.objective + 1e-12


def test_vanishing_denominator_triggers_restart():
    # Psi = Phi(a) - Phi(b): Psi . Phi(z) = 0 on the bisector; starting there the
    # denominator of eq. 12 vanishes and the iteration must restart elsewhere.
    psi = KernelExpansion([[-1.0, 0.0], [1.0, 0.0]], [1.0, -1.0], RBF(1.0))
    res = fixed_point(psi, z0=[0.0, 0.5], n_init=1, random_state=0)
    assert abs(res.beta) > 0.5
    assert res.objective < psi.norm2() - 0.5
    assert res.converged


def test_random_state_makes_results_reproducible(cloud):
    X, alpha = cloud
    psi = KernelExpansion(X, alpha, RBF(2.0))
    a = fixed_point(psi, n_init=4, X_init=X, random_state=3)
    b = fixed_point(psi, n_init=4, X_init=X, random_state=3)
    np.testing.assert_array_equal(a.z, b.z)


# -- batches ------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", [fixed_point, gradient])
def test_batch_equals_per_output_loop(cloud, solver):
    X, _ = cloud
    rng = np.random.default_rng(1)
    coef = rng.normal(size=(X.shape[0], 7))
    # Starts inside the data, so that no output needs a (random) restart.
    Z0 = X[:7] + 0.1 * rng.normal(size=(7, 3))
    psi = KernelExpansion(X, coef, RBF(0.5))
    batch = solver(psi, z0=Z0, n_init=1, random_state=0)
    assert batch.z.shape == (7, 3) and batch.objective.shape == (7,)
    for u in range(7):
        single = solver(psi.output(u), z0=Z0[u], n_init=1, random_state=0)
        np.testing.assert_allclose(batch.objective[u], single.objective, rtol=1e-7, atol=1e-10)
        if solver is fixed_point:
            np.testing.assert_allclose(batch.z[u], single.z, atol=1e-10)
        else:
            np.testing.assert_allclose(batch.z[u], single.z, atol=1e-5)
        np.testing.assert_allclose(batch.beta[u], single.beta, rtol=1e-5)


def test_batch_shares_one_z0_row(cloud):
    X, _ = cloud
    coef = np.random.default_rng(2).normal(size=(X.shape[0], 3))
    psi = KernelExpansion(X, coef, RBF(0.5))
    res = fixed_point(psi, z0=np.zeros(3), n_init=1, random_state=0)
    assert res.z.shape == (3, 3) and res.converged.dtype == bool


# -- gradient solver for non-radial kernels ----------------------------------------------


@pytest.mark.parametrize("kernel", [Polynomial(2, 1.0), Polynomial(3, 1.0, gamma=0.5),
                                    Sigmoid(0.2, 0.1)])
def test_gradient_reaches_stationary_point(cloud, kernel):
    X, alpha = cloud
    psi = KernelExpansion(X[:10] * 0.5, alpha[:10], kernel)
    res = gradient(psi, n_init=3, random_state=0)
    start_obj = min(preimage_objective(psi, x)[1] for x in X[:10] * 0.5)
    assert res.objective <= start_obj + 1e-12
    scale = 1 + abs(psi.norm2())
    np.testing.assert_allclose(_fd_gradient(psi, res.z), 0.0, atol=1e-4 * scale)


def test_gradient_finds_exact_polynomial_preimage():
    # Degree 2 is not invertible in x . y, but Phi(z) = Psi still has the pre-images +-z.
    z = np.array([0.3, -0.7])
    psi = KernelExpansion([z, [1.0, 1.0]], [1.0, 0.0], Polynomial(2, 1.0))
    res = gradient(psi, z0=[0.2, -0.5], n_init=1)
    np.testing.assert_allclose(res.rho, 0.0, atol=1e-10)
    np.testing.assert_allclose(np.abs(res.z), np.abs(z), atol=1e-6)


# -- Proposition 6 -------------------------------------------------------------------------


def _poly_features_1d(x, degree, coef0):
    from math import comb

    return np.stack([np.sqrt(comb(degree, j) * coef0 ** (degree - j)) * x**j
                     for j in range(degree + 1)], axis=1)


def test_exact_recovers_z_from_other_points():
    # In R^1 the cubic kernel (x y + 1)^3 has a 4-D feature space: Phi(z) is an
    # exact combination of the images of 6 other points.
    z = 0.37
    xs = np.linspace(-1.0, 1.2, 6)
    alpha = np.linalg.lstsq(_poly_features_1d(xs, 3, 1.0).T,
                            _poly_features_1d(np.array([z]), 3, 1.0)[0], rcond=None)[0]
    psi = KernelExpansion(xs[:, None], alpha, Polynomial(3, 1.0))
    res = exact_dot_product(psi)
    np.testing.assert_allclose(res.z, [z], atol=1e-8)
    np.testing.assert_allclose(res.rho, 0.0, atol=1e-10)


@pytest.mark.parametrize("kernel", [Polynomial(3, 1.0), Polynomial(5, 0.5, gamma=0.3),
                                    Polynomial(1, 0.0), Sigmoid(0.5, 0.1), Linear()])
def test_exact_recovers_z_batch(kernel):
    rng = np.random.default_rng(0)
    Z = rng.uniform(-0.8, 0.8, size=(4, 5))
    others = rng.normal(size=(3, 5))
    # Psi_u = Phi(z_u) + 0.7 Phi(o) - 0.7 Phi(o): extra terms that cancel exactly.
    vectors = np.vstack([Z, others, others])
    coef = np.zeros((10, 4))
    coef[:4] = np.eye(4)
    coef[4:7] = 0.7
    coef[7:] = -0.7
    res = exact_dot_product(KernelExpansion(vectors, coef, kernel))
    np.testing.assert_allclose(res.z, Z, atol=1e-8)
    assert res.converged.all()


def test_exact_linear_kernel_is_the_weighted_sum(cloud):
    X, alpha = cloud
    res = exact_dot_product(KernelExpansion(X, alpha, Linear()))
    np.testing.assert_allclose(res.z, alpha @ X, rtol=1e-12)


def test_exact_sigmoid_out_of_range_is_flagged():
    psi = KernelExpansion([[3.0, 3.0]], [5.0], Sigmoid(1.0, 0.0))  # values > 1
    res = exact_dot_product(psi)
    assert not res.converged
    assert np.isfinite(res.z).all()


# -- dispatcher -----------------------------------------------------------------------------


def test_auto_dispatch(cloud):
    X, alpha = cloud
    assert preimage(KernelExpansion(X, alpha, RBF(0.5)), random_state=0).method == "fixed-point"
    exact = KernelExpansion([[0.2, 0.4]], [1.0], Polynomial(3, 1.0))
    assert preimage(exact).method == "exact"
    np.testing.assert_allclose(preimage(exact).z, [0.2, 0.4], atol=1e-10)
    even = KernelExpansion(X[:5], alpha[:5], Polynomial(2, 1.0))
    assert preimage(even, random_state=0).method == "gradient"
    # Odd polynomial without an exact pre-image: refined by the gradient solver.
    odd = KernelExpansion(X[:5] * 0.3, alpha[:5], Polynomial(3, 1.0))
    res = preimage(odd, random_state=0)
    assert res.objective <= exact_dot_product(odd).objective + 1e-12
    assert preimage(odd, method="exact").method == "exact"
    assert preimage(KernelExpansion(X, alpha, RBF(0.5)), method="fixed_point").method == "fixed-point"


def test_auto_batch_mixes_exact_and_refined():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2)) * 0.3
    coef = np.zeros((6, 2))
    coef[0, 0] = 1.0             # output 0: exactly Phi(x_0)
    coef[:, 1] = rng.normal(size=6)  # output 1: no exact pre-image
    psi = KernelExpansion(X, coef, Polynomial(3, 1.0))
    res = preimage(psi, random_state=0)
    np.testing.assert_allclose(res.z[0], X[0], atol=1e-10)
    assert res.objective[1] <= exact_dot_product(psi).objective[1] + 1e-12


# -- errors ----------------------------------------------------------------------------------


def test_errors(cloud):
    X, alpha = cloud
    rbf = KernelExpansion(X, alpha, RBF(0.5))
    poly = KernelExpansion(X, alpha, Polynomial(3, 1.0))
    with pytest.raises(ValueError, match="radial kernel"):
        fixed_point(poly)
    with pytest.raises(ValueError, match="invertible function of x . y"):
        exact_dot_product(rbf)
    with pytest.raises(ValueError, match="invertible function of x . y"):
        exact_dot_product(KernelExpansion(X, alpha, Polynomial(2, 1.0)))
    with pytest.raises(ValueError, match="invertible function of x . y"):
        exact_dot_product(KernelExpansion(X, alpha, Sigmoid(0.0, 0.5)))
    with pytest.raises(TypeError, match="KernelExpansion"):
        fixed_point(X)
    with pytest.raises(TypeError, match="KernelExpansion"):
        gradient("psi")
    with pytest.raises(TypeError, match="KernelExpansion"):
        exact_dot_product(None)
    with pytest.raises(TypeError, match="KernelExpansion"):
        preimage(alpha)
    with pytest.raises(ValueError, match="z0 has 2 features"):
        fixed_point(rbf, z0=[0.0, 0.0])
    with pytest.raises(ValueError, match="z0 must have shape"):
        fixed_point(rbf, z0=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="z0 contains NaN"):
        gradient(rbf, z0=[np.nan, 0.0, 0.0])
    with pytest.raises(ValueError, match="X_init has 2 features"):
        fixed_point(rbf, X_init=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="'n_init' parameter of fixed_point"):
        fixed_point(rbf, n_init=0)
    with pytest.raises(ValueError, match="'max_iter' parameter of gradient"):
        gradient(rbf, max_iter=0)
    with pytest.raises(ValueError, match="'tol' parameter of fixed_point"):
        fixed_point(rbf, tol=-1.0)
    with pytest.raises(ValueError, match="'method' parameter of preimage"):
        preimage(rbf, method="newton")
    with pytest.raises(ValueError, match="Z has 2 features"):
        preimage_objective(rbf, [0.0, 1.0])


@pytest.mark.parametrize("solver, kernel", [(fixed_point, RBF(0.5)),
                                            (gradient, Polynomial(3, coef0=1.0))])
def test_known_norm2_gives_the_same_preimages_and_objective(solver, kernel):
    rng = np.random.default_rng(3)
    psi = KernelExpansion(rng.normal(size=(25, 3)), rng.normal(size=(25, 2)), kernel)
    ref = solver(psi, n_init=3, random_state=0)
    got = solver(psi, n_init=3, random_state=0, norm2=psi.norm2())
    np.testing.assert_allclose(got.z, ref.z, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got.objective, ref.objective, rtol=1e-10, atol=1e-12)
    # a scalar applies to every output
    one = solver(psi.output(0), random_state=0, norm2=float(psi.output(0).norm2()))
    np.testing.assert_allclose(one.objective, solver(psi.output(0), random_state=0).objective,
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bad, match", [(-1.0, ">= 0"), (np.nan, "finite"),
                                        (np.ones(3), "one value per output")])
def test_known_norm2_is_validated(bad, match):
    psi = KernelExpansion(np.eye(3), np.ones((3, 2)), RBF(1.0))
    with pytest.raises(ValueError, match=match):
        fixed_point(psi, norm2=bad)
