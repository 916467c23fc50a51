"""The Matérn and rational-quadratic kernels on the torch engine (issue 36): Gram blocks,
expansion evaluation, weighted sums and gradients equal the numpy engine's. On CUDA when
available, else torch's CPU; skipped without torch."""

import numpy as np
import pytest

from sparsekm import KernelExpansion
from sparsekm.kernels import Matern, RationalQuadratic

KERNELS = [Matern(0.9, 0.5), Matern(0.9, 1.5), Matern(1.1, 2.5), RationalQuadratic(0.8, 1.7)]


@pytest.fixture
def device():
    torch = pytest.importorskip("torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_torch_engine_equals_numpy(kernel, device):
    import torch

    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(70, 4)), rng.normal(size=(9, 4))
    Z[0] = X[0]  # a zero distance: Matérn-1/2's subgradient at the cusp
    W = rng.normal(size=(70, 9))
    t = [torch.as_tensor(a, device=device) for a in (X, Z, W)]
    K = kernel(t[0], t[1])
    assert isinstance(K, torch.Tensor)
    np.testing.assert_allclose(K.cpu().numpy(), kernel(X, Z), rtol=1e-12, atol=1e-14)
    for derivative in (False, True):
        want = kernel.weighted_sums(X, Z, W, derivative=derivative, moment=True)
        got = kernel.weighted_sums(*t, derivative=derivative, moment=True, block_size=16)
        np.testing.assert_allclose(got.total.cpu().numpy(), want.total, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(got.moment.cpu().numpy(), want.moment, rtol=1e-10,
                                   atol=1e-10)
    G = kernel.gradient_sum(*t)
    np.testing.assert_allclose(G.cpu().numpy(), kernel.gradient_sum(X, Z, W), rtol=1e-10,
                               atol=1e-10)
    assert np.isfinite(G.cpu().numpy()).all()
    psi = KernelExpansion(Z, rng.normal(size=9), kernel, 0.5)
    np.testing.assert_allclose(psi.decision_function(X, backend="torch"), psi(X), rtol=1e-10)
