"""``Kernel.paired``: the row-wise diagonal of K(X, Y), the engine's entry point for sampled pairs."""

import numpy as np
import pytest

from sparsekm.approx.randomized import ProjectedKernel, RandomProjection, sparsify_gram
from sparsekm.kernels import RBF, InverseMultiquadric, Kernel, Linear, Polynomial, Sigmoid

KERNELS = [RBF(0.3), InverseMultiquadric(-0.5), InverseMultiquadric(-2.5),
           Polynomial(3, 1.0, 0.2), Polynomial(2), Sigmoid(0.2, -0.1), Linear(),
           ProjectedKernel(RBF(0.3), RandomProjection(5, 3, random_state=0))]


class _GenericOnly(Kernel):
    """Neither radial nor dot-product: exercises the one-block-per-pair fallback."""

    def _block(self, X, Y, x_sq, y_sq):
        return np.cos(X @ Y.T) + np.abs(X).sum(1)[:, None] * np.abs(Y).sum(1)[None, :]


@pytest.fixture
def pair_data(rng):
    return rng.normal(size=(31, 5)), rng.normal(size=(31, 5))


@pytest.mark.parametrize("kernel", KERNELS + [_GenericOnly()], ids=repr)
def test_paired_equals_gram_diagonal(kernel, pair_data):
    X, Y = pair_data
    np.testing.assert_allclose(kernel.paired(X, Y), np.diag(kernel(X, Y)), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(kernel.paired(X), np.diag(kernel(X)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS[:7], ids=repr)
def test_paired_float32_kept(kernel, pair_data):
    X, Y = (a.astype(np.float32) for a in pair_data)
    out = kernel.paired(X, Y)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.diag(kernel(X, Y)), rtol=1e-5, atol=1e-5)


def test_paired_errors(pair_data):
    X, Y = pair_data
    with pytest.raises(ValueError, match="as many rows"):
        RBF().paired(X, Y[:-1])
    with pytest.raises(ValueError, match="same number of features"):
        RBF().paired(X, Y[:, :-1])
    with pytest.raises(ValueError, match="NaN|infinit"):
        RBF().paired(np.full_like(X, np.nan), Y)


@pytest.mark.parametrize("kernel", KERNELS[:7], ids=repr)
def test_paired_torch_equals_numpy(kernel, pair_data):
    torch = pytest.importorskip("torch")
    X, Y = pair_data
    out = kernel.paired(torch.as_tensor(X), torch.as_tensor(Y))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), np.diag(kernel(X, Y)), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kernel", KERNELS + [_GenericOnly()], ids=repr)
def test_sparsify_gram_values_come_from_the_engine(kernel, rng):
    """Every stored entry of K_hat is s * k(x_i, x_j) of the dense Gram matrix."""
    X = rng.normal(size=(60, 5))
    K_hat = sparsify_gram(X, kernel, s=3, random_state=1).tocoo()
    K = kernel(X)
    np.testing.assert_allclose(K_hat.data, 3 * K[K_hat.row, K_hat.col], rtol=1e-12, atol=1e-12)
