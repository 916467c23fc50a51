"""The evaluation engine: threads, the float32 path, backend selection (no torch needed)."""

import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.backend import resolve_backend
from sparsekm.config import (
    config_context,
    effective_n_threads,
    get_config,
    reset_config,
    set_config,
    single_threaded_blas,
    threads,
)
from sparsekm.kernels import (
    RBF,
    InverseMultiquadric,
    Kernel,
    Linear,
    Polynomial,
    RadialKernel,
    Sigmoid,
)

from .conftest import requires_usps

KERNELS = [RBF(0.3), InverseMultiquadric(-0.5), Polynomial(3, 1.0, 0.2), Sigmoid(0.2, -0.1),
           Linear()]


def _blas_threads():
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_results_do_not_depend_on_the_thread_count(kernel, rng):
    # Small blocks force several of them, so the threaded path runs.
    X, Z = rng.normal(size=(90, 5)), rng.normal(size=(40, 5))
    C, W = rng.normal(size=(40, 3)), rng.normal(size=(90, 40))
    results = []
    for n in (1, 2, 3):
        with config_context(n_threads=n):
            results.append((kernel(X, Z, block_size=16), kernel.mmv(X, Z, C, block_size=16),
                            kernel.gradient_sum(X, Z, W, block_size=16)))
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b)
    # ... and blocks (threaded or not) give the unblocked answer up to rounding.
    np.testing.assert_allclose(results[1][1], kernel(X, Z) @ C, rtol=1e-12, atol=1e-12)


class _Laplacian(RadialKernel):
    """A radial kernel with only the public profile (no in-place hooks)."""

    _param_names = ()

    def profile(self, r2):
        return np.exp(-np.sqrt(np.asarray(r2)))

    def profile_derivative(self, r2):
        r = np.sqrt(np.maximum(np.asarray(r2), 1e-300))
        return -np.exp(-r) / (2 * r)


class _BlockOnly(Kernel):
    """A kernel that implements nothing but ``_block`` (like a third-party kernel)."""

    def _block(self, X, Y, x_sq, y_sq):
        return np.cos(X @ Y.T)


@pytest.mark.parametrize("kernel", [_Laplacian(), _BlockOnly()], ids=lambda k: type(k).__name__)
def test_kernels_with_minimal_hooks_use_the_blocked_engine(kernel, rng):
    X, Z, C = rng.normal(size=(50, 3)), rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    if isinstance(kernel, _Laplacian):
        want = np.exp(-np.sqrt(((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)))
    else:
        want = np.cos(X @ Z.T)
    with config_context(n_threads=2):
        np.testing.assert_allclose(kernel(X, Z, block_size=7), want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(kernel.mmv(X, Z, C, block_size=7), want @ C, rtol=1e-12,
                                   atol=1e-12)


def test_threads_context_sets_every_pool_and_restores():
    before = _blas_threads()
    with threads(1) as n:
        assert n == 1
        assert get_config()["n_threads"] == 1
        assert effective_n_threads() == 1
        assert set(_blas_threads()) == {1}
    assert _blas_threads() == before
    assert get_config()["n_threads"] is None


def test_default_threads_follow_the_blas_pool():
    with threadpool_limits(limits=1, user_api="blas"):
        assert effective_n_threads() == 1
    with config_context(n_threads=3):
        assert effective_n_threads() == 3


def test_single_threaded_blas_is_reentrant_and_restores():
    before = _blas_threads()
    with single_threaded_blas():
        with single_threaded_blas():
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}
        # Inside the engine's own limiting, the default still reports the user's pool.
        assert effective_n_threads() == max(before)
    assert _blas_threads() == before


def test_config_validation_and_reset():
    with pytest.raises(ValueError, match="'backend' option must be one of"):
        set_config(backend="jax")
    with pytest.raises(ValueError, match="'n_threads' parameter of sparsekm.config must be an int"):
        set_config(n_threads=0)
    with pytest.raises(ValueError, match="'n' parameter of sparsekm.config.threads"):
        with threads(0):
            pass
    set_config(n_threads=2)
    assert get_config()["n_threads"] == 2
    reset_config()
    assert get_config() == {"backend": "numpy", "device": None, "n_threads": None}


def test_resolve_backend_defaults_and_errors(rng):
    X = rng.normal(size=(3, 2))
    xp, to_numpy = resolve_backend(X)
    assert xp.name == "numpy" and not to_numpy
    with pytest.raises(ValueError, match="backend must be one of"):
        resolve_backend(X, backend="cupy")
    with pytest.raises(ValueError, match="backend must be one of"):
        RBF(1.0)(X, backend="cupy")


def test_missing_torch_is_explained(monkeypatch, rng):
    import sparsekm.backend as backend

    monkeypatch.setitem(sys.modules, "torch", None)  # "import torch" now fails
    monkeypatch.setattr(backend, "_TORCH_CACHE", {})
    with pytest.raises(ImportError, match=r"needs PyTorch: pip install 'sparsekm\[torch\]'"):
        RBF(1.0)(rng.normal(size=(3, 2)), backend="torch")


def test_import_does_not_load_optional_backends():
    code = ("import sys, sparsekm, sparsekm.kernels, sparsekm.expansion, sparsekm.parallel, "
            "sparsekm.models, sparsekm.approx; "
            "print(sorted(m for m in ('torch', 'dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the float32 path -------------------------------------------------------------------
# Documented accuracy (docs/performance.md): an RBF expansion evaluated in float32 agrees
# with float64 to F32_RTOL relative to the scale sum_i |coef_i| k(x, z_i) of each output,
# and Gram entries to F32_KERNEL_ATOL, for inputs in [-1, 1]^256 (USPS's range) and
# gamma = 1/128. Rounding in ||x||^2 + ||z||^2 - 2 x.z dominates: about
# u32 * (||x||^2 + ||z||^2) * gamma * sqrt(d), i.e. ~1e-6 here; measured 1.1e-7 and 1.7e-6
# on USPS.
F32_RTOL = 1e-5
F32_KERNEL_ATOL = 1e-5


def _float32_errors(Z, X, gamma, rng):
    C = rng.normal(size=(Z.shape[0], 10))
    kernel = RBF(gamma)
    psi64 = KernelExpansion(Z, C, kernel)
    psi32 = KernelExpansion(Z.astype(np.float32), C.astype(np.float32), kernel)
    f32 = psi32(X.astype(np.float32))
    assert f32.dtype == np.float32
    K = kernel(X, Z)
    scale = K @ np.abs(C)
    K32 = kernel(X.astype(np.float32), Z.astype(np.float32))
    return np.max(np.abs(f32 - psi64(X)) / scale), np.max(np.abs(K32 - K))


def test_float32_accuracy_against_float64_synthetic(rng):
    Z = rng.uniform(-1, 1, size=(400, 256))
    X = rng.uniform(-1, 1, size=(200, 256))
    rel, kabs = _float32_errors(Z, X, 1 / 128, rng)
    assert rel < F32_RTOL
    assert kabs < F32_KERNEL_ATOL


@requires_usps
def test_float32_accuracy_against_float64_usps(rng):
    X_tr, _, X_te, _ = sparsekm.datasets.load_usps()
    rel, kabs = _float32_errors(X_tr[:1000], X_te[:500], 1 / 128, rng)
    assert rel < F32_RTOL
    assert kabs < F32_KERNEL_ATOL
