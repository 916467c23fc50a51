"""ONNX export of compressed regressors and the GP kernels (issue 36, item 2): parity in
onnxruntime with sparsekm's own evaluation, float32 and float64."""

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from sklearn.datasets import make_friedman1  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process import kernels as gpk  # noqa: E402
from sklearn.kernel_ridge import KernelRidge  # noqa: E402
from sklearn.svm import OneClassSVM  # noqa: E402

from sparsekm import KernelExpansion  # noqa: E402
from sparsekm.compression import compress  # noqa: E402
from sparsekm.kernels import Matern, RationalQuadratic  # noqa: E402
from sparsekm.onnx_export import to_onnx  # noqa: E402

X, y = make_friedman1(300, noise=0.3, random_state=1)
Xt = make_friedman1(50, random_state=2)[0]


def _run(proto, X):
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": X})[0]


def _check(model_out, ref, dtype):
    got = np.asarray(model_out, dtype=np.float64).reshape(ref.shape)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", [Matern(0.8, 0.5), Matern(0.8, 1.5), Matern(0.8, 2.5),
                                    RationalQuadratic(0.9, 1.5)], ids=repr)
def test_gp_kernels(kernel, dtype):
    psi = KernelExpansion(X[:40], np.linspace(-1, 1, 40), kernel, 0.3)
    _check(_run(to_onnx(psi, dtype=dtype), Xt.astype(dtype)), psi(Xt), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compressed_kernel_ridge_and_gp(dtype):
    krr = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2).fit(X[:200], y[:200])
    small = compress(krr, X[200:], y[200:], n_vectors=20, method=["construct", "refit"],
                     random_state=0, n_init=2, max_iter=30)
    _check(_run(to_onnx(small, dtype=dtype), Xt.astype(dtype)), small.predict(Xt), dtype)
    gpr = GaussianProcessRegressor(gpk.ConstantKernel(10.0) * gpk.Matern(2.0, nu=2.5),
                                   alpha=0.1, optimizer=None, normalize_y=True).fit(X[:200], y[:200])
    small = compress(gpr, X[200:], y[200:], n_vectors=20, method=["refit"], random_state=0)
    _check(_run(to_onnx(small, dtype=dtype), Xt.astype(dtype)), small.predict(Xt), dtype)


def test_compressed_one_class_scores():
    oc = OneClassSVM(nu=0.2, gamma=0.2).fit(X[:200])
    small = compress(oc, X[200:], n_vectors=10, method=["construct"], random_state=0,
                     n_init=2, max_iter=30)
    _check(_run(to_onnx(small, dtype=np.float64), Xt), small.decision_function(Xt), np.float64)
