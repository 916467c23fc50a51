"""``Kernel.weighted_sums``: the engine's kernel sums, and the solvers moved onto it."""

import numpy as np
import pytest

from sparsekm.config import config_context
from sparsekm.kernels import (
    RBF,
    InverseMultiquadric,
    Linear,
    Polynomial,
    Sigmoid,
    WeightedSums,
)

from ._migration_cases import REFERENCE, compute_all
from .test_engine import _BlockOnly, _Laplacian

KERNELS = [RBF(0.3), InverseMultiquadric(-0.5), InverseMultiquadric(-1.5),
           Polynomial(3, 1.0, 0.2), Polynomial(2, 0.0, 1.0), Polynomial(1), Sigmoid(0.2, -0.1),
           Linear(), _Laplacian()]
TORCH_KERNELS = KERNELS[:-1]


def _naive(kernel, X, Z, derivative):
    """k(x_i, z_u) or k'(.) entry by entry, without the engine's GEMM distances."""
    if kernel.is_radial:
        arg = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    else:
        arg = np.array([[x @ z for z in Z] for x in X])
    f = kernel.profile_derivative if derivative else kernel.profile
    return np.asarray(f(arg), dtype=np.float64)


@pytest.fixture
def data(rng):
    return rng.normal(size=(90, 4)), rng.normal(size=(13, 4)), rng.normal(size=(90, 13))


@pytest.mark.parametrize("derivative", [False, True])
@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_weighted_sums_equal_the_naive_sums(kernel, derivative, data):
    X, Z, W = data
    M = W * _naive(kernel, X, Z, derivative)
    for block_size, n_threads in [(None, 1), (16, 1), (16, 2)]:
        with config_context(n_threads=n_threads):
            s = kernel.weighted_sums(X, Z, W, derivative=derivative, moment=True, absolute=True,
                                     block_size=block_size)
        assert isinstance(s, WeightedSums)
        np.testing.assert_allclose(s.total, M.sum(0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s.moment, M.T @ X, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s.abs_total, np.abs(M).sum(0), rtol=1e-12, atol=1e-12)
    bare = kernel.weighted_sums(X, Z, W, derivative=derivative)
    assert bare.moment is None and bare.abs_total is None
    np.testing.assert_allclose(bare.total, M.sum(0), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("derivative", [False, True])
@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_callable_weights_see_the_kernel_values(kernel, derivative, data):
    # Weights that depend on K, as in eq. 19 (c = G G^T K): one block (fused: K and k'
    # from one distance computation) and several blocks (K first) give the same sums.
    X, Z, _ = data
    G = np.random.default_rng(1).normal(size=(90, 3))
    K = _naive(kernel, X, Z, False)
    C = G @ (G.T @ K)
    M = C * _naive(kernel, X, Z, derivative)
    seen = []

    def weights(Kb):
        seen.append(np.array(Kb))
        return G @ (G.T @ Kb)

    for block_size in (None, 16):
        with config_context(n_threads=2):
            s = kernel.weighted_sums(X, Z, weights, derivative=derivative, moment=True,
                                     absolute=True, block_size=block_size)
        np.testing.assert_allclose(seen[-1], K, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s.total, M.sum(0), rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(s.moment, M.T @ X, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(s.abs_total, np.abs(M).sum(0), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("kernel", KERNELS[:3] + KERNELS[6:8], ids=repr)
def test_weighted_sums_do_not_depend_on_the_thread_count(kernel, data):
    X, Z, W = data
    runs = []
    for n in (1, 2, 3):
        with config_context(n_threads=n):
            runs.append(kernel.weighted_sums(X, Z, W, derivative=True, moment=True, absolute=True,
                                             block_size=8))
    for other in runs[1:]:
        for a, b in zip(runs[0], other, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_gradient_sum_is_assembled_from_the_derivative_sums(kernel, data):
    X, Z, W = data
    M = W * _naive(kernel, X, Z, True)
    want = 2.0 * (M.sum(0)[:, None] * Z - M.T @ X) if kernel.is_radial else M.T @ X
    np.testing.assert_allclose(kernel.gradient_sum(X, Z, W, block_size=16), want, rtol=1e-11,
                               atol=1e-11)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_diag_gradient_matches_finite_differences(kernel, rng):
    Z = 0.7 * rng.normal(size=(4, 3))
    h = 1e-6
    fd = np.empty_like(Z)
    for j in range(Z.shape[1]):
        e = np.zeros(Z.shape[1])
        e[j] = h
        fd[:, j] = (kernel.diag(Z + e) - kernel.diag(Z - e)) / (2 * h)
    np.testing.assert_allclose(kernel.diag_gradient(Z), fd, rtol=1e-6, atol=1e-8)


def test_float32_inputs_are_summed_in_float32(data):
    X, Z, W = (a.astype(np.float32) for a in data)
    s32 = RBF(0.3).weighted_sums(X, Z, W, derivative=True, moment=True)
    s64 = RBF(0.3).weighted_sums(*(a.astype(np.float64) for a in (X, Z, W)), derivative=True,
                                 moment=True)
    assert s32.total.dtype == np.float32 and s32.moment.dtype == np.float32
    np.testing.assert_allclose(s32.moment, s64.moment, rtol=1e-4, atol=1e-4)


def test_bad_inputs_are_refused(data):
    X, Z, W = data
    with pytest.raises(TypeError, match="radial or dot-product kernel"):
        _BlockOnly().weighted_sums(X, Z, W, derivative=True)
    with pytest.raises(ValueError, match=r"W must have shape \(n_samples, n_vectors\)"):
        RBF().weighted_sums(X, Z, W[:, :3])
    with pytest.raises(ValueError, match="weights function must return shape"):
        RBF().weighted_sums(X, Z, lambda K: K[:, :2])
    with pytest.raises(ValueError, match="Z contains NaN"):
        RBF().weighted_sums(X, np.full_like(Z, np.nan), W)
    with pytest.raises(ValueError, match="same number of features"):
        RBF().weighted_sums(X, Z[:, :2], W)


def test_non_profile_kernels_sum_values_through_their_blocks(data):
    X, Z, W = data
    s = _BlockOnly().weighted_sums(X, Z, W, moment=True, block_size=16)
    M = W * np.cos(X @ Z.T)
    np.testing.assert_allclose(s.total, M.sum(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s.moment, M.T @ X, rtol=1e-12, atol=1e-12)


# -- torch backend --------------------------------------------------------------------


@pytest.mark.parametrize("derivative", [False, True])
@pytest.mark.parametrize("kernel", TORCH_KERNELS, ids=repr)
def test_weighted_sums_torch_equal_numpy(kernel, derivative, data):
    torch = pytest.importorskip("torch")
    X, Z, W = data
    want = kernel.weighted_sums(X, Z, W, derivative=derivative, moment=True, absolute=True)
    t = [torch.as_tensor(a) for a in data]
    got = kernel.weighted_sums(*t, derivative=derivative, moment=True, absolute=True,
                               block_size=16)
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, torch.Tensor) and g.dtype == torch.float64
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-10, atol=1e-10)
    # numpy in, torch engine, numpy out; and weights computed from K on tensors
    got = kernel.weighted_sums(X, Z, W, derivative=derivative, moment=True, backend="torch")
    assert isinstance(got.moment, np.ndarray)
    np.testing.assert_allclose(got.moment, want.moment, rtol=1e-10, atol=1e-10)
    G = torch.as_tensor(np.random.default_rng(1).normal(size=(90, 3)))
    Gn = G.numpy()
    want = kernel.weighted_sums(X, Z, lambda K: Gn @ (Gn.T @ K), derivative=derivative,
                                moment=True)
    for block_size in (None, 16):  # fused single block, and K first
        got = kernel.weighted_sums(t[0], t[1], lambda K: G @ (G.T @ K), derivative=derivative,
                                   moment=True, block_size=block_size)
        np.testing.assert_allclose(got.moment.numpy(), want.moment, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(kernel.diag_gradient(t[1]).numpy(), kernel.diag_gradient(Z),
                               rtol=1e-10, atol=1e-10)


# -- the solvers moved onto the engine give their previous results -----------------------

# The reference was recorded on one machine; BLAS thread count, load and library
# versions change the rounding of every GEMM, and iterative solvers amplify that by
# up to their own stopping tolerance. So values are compared with tolerances, never
# bit for bit: closed-form values and scores to 1e-9 (relative to their scale), the
# points an optimiser returns to the accuracy it determines them. The L-BFGS
# pre-image/one-term solves for polynomial and sigmoid kernels stop on flat maxima
# (their objectives agree to rounding), so rounding-level changes of the gradient move
# the returned z by up to ~1e-8 (measured: 1.2e-8 for gradient_poly_z).
_DEFAULT_TOLERANCE = 1e-9
_SOLVER_TOLERANCE = {"one_term_poly_z": 1e-6, "gradient_poly_z": 1e-6,
                     "gradient_sigmoid_z": 1e-6, "gradient_rbf_z": 1e-6,
                     "auto_poly_z": 1e-6}


@pytest.fixture(scope="module")
def migrated():
    return compute_all()


def test_migrated_solvers_reproduce_their_previous_results(migrated):
    reference = np.load(REFERENCE)
    assert set(reference.files) == set(migrated)
    for name in reference.files:
        want, got = reference[name], migrated[name]
        tol = _SOLVER_TOLERANCE.get(name, _DEFAULT_TOLERANCE)
        scale = 1.0 + np.max(np.abs(want))
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale, err_msg=name)
