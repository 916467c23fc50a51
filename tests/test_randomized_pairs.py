"""Sampled Gram entries come from the kernel engine (issue 7: one place computes kernel values)."""

import numpy as np
import pytest

from sparsekm.approx.randomized import (
    ProjectedKernel,
    RandomProjection,
    sparsify_gram,
    sparsify_quantize_gram,
)
from sparsekm.kernels import RBF, InverseMultiquadric, Kernel, Linear, Polynomial, Sigmoid

KERNELS = [RBF(0.3), InverseMultiquadric(-0.5), InverseMultiquadric(-2.5),
           Polynomial(3, 1.0, 0.2), Polynomial(2), Sigmoid(0.2, -0.1), Linear(),
           ProjectedKernel(RBF(0.3), RandomProjection(5, 3, random_state=0))]


class _GenericOnly(Kernel):
    """Neither radial nor dot-product: only the engine's generic ``_block`` hook."""

    def _block(self, X, Y, x_sq, y_sq):
        return np.cos(X @ Y.T) + np.abs(X).sum(1)[:, None] * np.abs(Y).sum(1)[None, :]

    def diag(self, X):
        return np.diag(self(X))


@pytest.mark.parametrize("kernel", KERNELS + [_GenericOnly()], ids=repr)
@pytest.mark.parametrize("evaluate", ["pairs", "blocks"])
def test_sparsified_entries_are_s_times_the_engines_gram(kernel, evaluate, rng):
    X = rng.normal(size=(60, 5))
    K_hat = sparsify_gram(X, kernel, s=3, random_state=1, block_size=7,
                          evaluate=evaluate).tocoo()
    K = kernel(X)
    assert K_hat.nnz > 0
    np.testing.assert_allclose(K_hat.data, 3 * K[K_hat.row, K_hat.col], rtol=1e-12, atol=1e-12)


def test_pairs_and_blocks_give_the_same_matrix(rng):
    X = rng.normal(size=(80, 4))
    for kernel in (RBF(0.5), Polynomial(2, 1.0)):
        a = sparsify_gram(X, kernel, s=4, random_state=3, evaluate="pairs")
        b = sparsify_gram(X, kernel, s=4, random_state=3, evaluate="blocks")
        assert (a != b).nnz == 0 or np.abs((a - b).data).max() < 1e-12


def test_sparsify_quantize_with_generic_kernel(rng):
    X = rng.normal(size=(40, 3))
    K_hat = sparsify_quantize_gram(X, Sigmoid(0.2, -0.1), s=2, random_state=0)
    b = np.abs(Sigmoid(0.2, -0.1)(X)).max()
    np.testing.assert_allclose(np.abs(K_hat.data), 2 * b, rtol=1e-12)
