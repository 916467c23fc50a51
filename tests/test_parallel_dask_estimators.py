"""Every estimator's row-wise methods take a dask array and give the numpy answer.

Computed on dask's default threaded scheduler (no cluster: see
``test_parallel_distributed.py`` for a real multi-process one).
"""


import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.svm import SVC, SVR

import sparsekm.approx
import sparsekm.models
from sparsekm.kernels import RBF

da = pytest.importorskip("dask.array")

from sparsekm.parallel import dask_rowwise, is_dask_array  # noqa: E402

from .conftest import public_estimators  # noqa: E402

#: Row-wise methods that must accept dask arrays wherever an estimator has them.
ROW_METHODS = ("predict", "predict_proba", "decision_function", "transform",
               "approximation_error", "coefficients")
#: Chunk boundaries change the shape of the GEMMs a row is part of, so the sums of a
#: row may be ordered differently: equal up to rounding.
TOL = dict(rtol=1e-12, atol=1e-12)

K = RBF(0.5)
# (estimator, data kind): "binary", "multi" (3 classes), "regression", "unsupervised"
SPECS = {
    "ApproxSVC": (sparsekm.models.ApproxSVC(C=10.0, n_basis=15, kernel=K, random_state=0),
                  "binary"),
    "ApproxKFD": (sparsekm.models.ApproxKFD(n_basis=15, kernel=K, random_state=0), "binary"),
    "KernelFisherDiscriminant": (sparsekm.models.KernelFisherDiscriminant(C=1e-2, kernel=K),
                                 "binary"),
    "KernelPCA": (sparsekm.models.KernelPCA(n_components=4, kernel=K), "unsupervised"),
    "RVC": (sparsekm.models.RVC(kernel=K, max_iter=100), "binary"),
    "FastRVC": (sparsekm.models.FastRVC(kernel=K), "binary"),
    "RandomizedKernelPCA": (sparsekm.models.RandomizedKernelPCA(
        n_components=3, kernel=K, sampling="sparsify", s=2.0, random_state=0), "unsupervised"),
    "ReducedSetClassifier": (sparsekm.models.ReducedSetClassifier(
        SVC(C=10.0, gamma=0.5), n_vectors=3, n_init=2, max_iter=30, random_state=0), "multi"),
    "ExpansionRegressor": (sparsekm.models.ExpansionRegressor(kernel=K, n_vectors=10, random_state=0),
                           "regression"),
    "ReducedSetRegressor": (sparsekm.models.ReducedSetRegressor(
        SVR(C=10.0, gamma=0.5), n_vectors=4, n_init=2, max_iter=30, random_state=0),
        "regression"),
    # tol=1e-3: the SLMC/SparseKFD fits converge (within 11 iterations), no cap warning
    "SparseLargeMarginClassifier": (sparsekm.models.SLMC(
        n_vectors=3, C=10.0, kernel=K, max_iter=40, tol=1e-3, random_state=0), "multi"),
    "SparseKFD": (sparsekm.models.SparseKFD(n_vectors=3, kernel=K, max_iter=40, tol=1e-3,
                                            random_state=0), "binary"),
    "RSVM": (sparsekm.models.RSVM(n_vectors=6, C=10.0, kernel=K, random_state=0), "multi"),
    "ModifiedRSVM": (sparsekm.models.ModifiedRSVM(n_vectors=6, C=10.0, kernel=K,
                                                  random_state=0), "binary"),
    "ModifiedRS": (sparsekm.models.ModifiedRS(n_vectors=3, C=10.0, kernel=K, random_state=0),
                   "binary"),
    "GreedyBasis": (sparsekm.approx.GreedyBasis(n_basis=12, kernel=K, random_state=0),
                    "unsupervised"),
}


def _data(kind):
    X, y = make_blobs(n_samples=90, centers=3, n_features=3, cluster_std=1.5, random_state=0)
    if kind == "binary":
        return X, (y == 0).astype(int)
    if kind == "regression":
        return X, np.sin(X[:, 0]) + 0.1 * X[:, 1]
    if kind == "unsupervised":
        return X, None
    return X, y


def test_every_public_estimator_is_covered():
    names = {cls.__name__ for cls in public_estimators()}
    assert names == set(SPECS)


@pytest.fixture(scope="module")
def fitted():
    out = {}
    for name, (est, kind) in SPECS.items():
        X, y = _data(kind)
        out[name] = est.fit(X) if y is None else est.fit(X, y)
    return out


@pytest.mark.parametrize("name", sorted(SPECS))
def test_dask_rows_equal_numpy(fitted, name):
    est = fitted[name]
    rng = np.random.default_rng(1)
    X = rng.normal(scale=2.0, size=(137, 3))
    Xd = da.from_array(X, chunks=(40, 3))
    methods = [m for m in ROW_METHODS if hasattr(est, m)]
    assert methods, f"{name} has no row-wise method"
    for method in methods:
        expected = getattr(est, method)(X)
        out = getattr(est, method)(Xd)
        assert is_dask_array(out), (name, method)
        assert out.shape == expected.shape and out.dtype == expected.dtype, (name, method)
        assert out.chunks[0] == Xd.chunks[0]
        got = out.compute()  # dask's default (threaded) scheduler
        if expected.dtype.kind == "f":
            np.testing.assert_allclose(got, expected, **TOL, err_msg=f"{name}.{method}")
        else:
            np.testing.assert_array_equal(got, expected, err_msg=f"{name}.{method}")


def test_float32_rows_stay_float32(fitted):
    est = fitted["GreedyBasis"]
    X = np.random.default_rng(2).normal(size=(50, 3)).astype(np.float32)
    out = est.transform(da.from_array(X, chunks=(20, 3)))
    assert out.dtype == est.transform(X).dtype
    np.testing.assert_allclose(out.compute(), est.transform(X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["SparseLargeMarginClassifier", "ReducedSetClassifier",
                                  "ApproxSVC", "KernelPCA"])
def test_dask_input_is_validated_eagerly(fitted, name):
    est, _ = SPECS[name]
    method = "transform" if name == "KernelPCA" else "predict"
    with pytest.raises(NotFittedError):
        getattr(type(est)(), method)(da.zeros((10, 3), chunks=5))
    with pytest.raises(ValueError, match="4 features"):
        getattr(fitted[name], method)(da.zeros((10, 4), chunks=5))


def test_dask_rowwise_rejects_extra_arguments():
    class Doubler:
        @dask_rowwise
        def transform(self, X, scale=2.0):
            """Scale the rows."""
            return scale * np.asarray(X)

    d = Doubler()
    assert Doubler.transform.__doc__ == "Scale the rows."
    np.testing.assert_array_equal(d.transform(np.ones((2, 2)), scale=3.0), np.full((2, 2), 3.0))
    out = d.transform(da.ones((4, 2), chunks=2))
    np.testing.assert_array_equal(out.compute(), np.full((4, 2), 2.0))
    with pytest.raises(TypeError, match="no further arguments when X is a dask array"):
        d.transform(da.ones((4, 2), chunks=2), scale=3.0)
