"""Dask arrays in, dask arrays out, on a real multi-process LocalCluster."""


import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from sparsekm import KernelExpansion  # noqa: E402
from sparsekm.approx import GreedyBasis  # noqa: E402
from sparsekm.kernels import RBF  # noqa: E402
from sparsekm.models import RandomizedKernelPCA  # noqa: E402
from sparsekm.parallel import apply_by_rows, is_dask_array, map_row_blocks  # noqa: E402

# Same numbers as in memory up to rounding: BLAS may order a row's sums differently
# when a chunk boundary changes the shape of the GEMM it is part of.
TOL = dict(rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 6)), rng.normal(size=(50, 6)), rng.normal(size=(50, 3))


def _graph_keys(arr):
    return [k if isinstance(k, str) else k[0] for k in dict(arr.__dask_graph__())]


@pytest.mark.parametrize("multi", [True, False])
def test_expansion_on_dask_equals_in_memory(dask_client, data, multi):
    X, Z, C = data
    coef = C if multi else C[:, 0]
    psi = KernelExpansion(Z, coef, RBF(0.2), intercept=[1.0, 0.0, -1.0] if multi else 0.5)
    Xd = da.from_array(X, chunks=(70, 6))
    out = psi.decision_function(Xd)
    assert is_dask_array(out)
    assert out.shape == ((300, 3) if multi else (300,))
    assert out.chunks[0] == Xd.chunks[0]
    # The expansion is one key of the graph, shared by every chunk's task.
    assert sum(name.startswith("KernelExpansion") for name in _graph_keys(out)) == 1
    got = dask_client.compute(out).result()
    np.testing.assert_allclose(got, psi(X), **TOL)


def test_expansion_float32_and_column_chunks(dask_client, data):
    X, Z, C = data
    psi = KernelExpansion(Z.astype(np.float32), C.astype(np.float32), RBF(0.2))
    Xd = da.from_array(X.astype(np.float32), chunks=(100, 4))  # columns split: rechunked
    out = psi.decision_function(Xd)
    assert out.dtype == np.float32
    np.testing.assert_allclose(dask_client.compute(out).result(), psi(X.astype(np.float32)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("estimator", [
    RandomizedKernelPCA(n_components=4, kernel=RBF(0.2), sampling="sparsify", s=2.0,
                        random_state=0),
    GreedyBasis(n_basis=20, kernel=RBF(0.2), random_state=0),
], ids=lambda e: type(e).__name__)
def test_estimator_transform_on_dask_equals_in_memory(dask_client, data, estimator):
    X = data[0]
    est = estimator.fit(X[:120])
    out = est.transform(da.from_array(X, chunks=(80, 6)))
    assert is_dask_array(out)
    assert out.shape == est.transform(X).shape
    np.testing.assert_allclose(dask_client.compute(out).result(), est.transform(X), **TOL)


def test_helpers_validate(data):
    X, Z, C = data
    psi = KernelExpansion(Z, C, RBF(0.2))
    with pytest.raises(TypeError, match="X must be a dask.array.Array"):
        map_row_blocks(np.sum, X)
    with pytest.raises(ValueError, match="X has 5 features, but KernelExpansion is expecting 6"):
        psi.decision_function(da.zeros((10, 5), chunks=5))
    with pytest.raises(ValueError, match="must be a 2-D array"):
        psi.decision_function(da.zeros(10, chunks=5))
    with pytest.raises(AttributeError, match="has no method 'predict'"):
        apply_by_rows(psi, "predict", da.zeros((10, 6), chunks=5))
    # Unfitted estimators fail eagerly, before any graph is built.
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        GreedyBasis().transform(da.zeros((10, 6), chunks=5))


def test_map_row_blocks_shapes_without_a_cluster():
    X = da.from_array(np.arange(24.0).reshape(8, 3), chunks=(3, 3))
    w = np.array([1.0, 2.0, 3.0])
    y = map_row_blocks(_dot, X, w)
    assert y.chunks == ((3, 3, 2),)
    np.testing.assert_array_equal(y.compute(scheduler="sync"), X.compute() @ w)
    Y = map_row_blocks(_outer, X, w, n_outputs=2, dtype=np.float32)
    assert Y.dtype == np.float32 and Y.chunks == ((3, 3, 2), (2,))
    np.testing.assert_array_equal(Y.compute(scheduler="sync")[:, 1], 2 * (X.compute() @ w))


def _dot(B, w):
    return B @ w


def _outer(B, w):
    v = B @ w
    return np.stack([v, 2 * v], axis=1).astype(np.float32)
