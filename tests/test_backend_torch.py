"""The torch backend gives the numpy engine's results (to 1e-10 in float64)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sparsekm import KernelExpansion  # noqa: E402
from sparsekm.config import config_context  # noqa: E402
from sparsekm.kernels import RBF, InverseMultiquadric, Linear, Polynomial, Sigmoid  # noqa: E402

KERNELS = [RBF(0.3), InverseMultiquadric(-0.5), Polynomial(3, 1.0, 0.2), Polynomial(1),
           Sigmoid(0.2, -0.1), Linear()]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
TOL = dict(rtol=1e-10, atol=1e-10)


def _np(t):
    assert isinstance(t, torch.Tensor)
    return t.detach().cpu().numpy()


@pytest.fixture
def data(rng):
    return (rng.normal(size=(70, 5)), rng.normal(size=(40, 5)), rng.normal(size=(40, 3)),
            rng.normal(size=(70, 40)))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_every_engine_entry_point_equals_numpy(kernel, data, device):
    X, Z, C, W = data
    t = {name: torch.as_tensor(a, device=device) for name, a in zip("XZCW", data, strict=True)}
    pairs = [
        (kernel(t["X"], t["Z"], block_size=16), kernel(X, Z)),
        (kernel(t["X"]), kernel(X)),
        (kernel.mmv(t["X"], t["Z"], t["C"], block_size=16), kernel.mmv(X, Z, C)),
        (kernel.mmv(t["X"], t["Z"], t["C"][:, 0]), kernel.mmv(X, Z, C[:, 0])),
        (kernel.diag(t["X"]), kernel.diag(X)),
        (kernel.gradient_y(t["X"], t["Z"][0]), kernel.gradient_y(X, Z[0])),
        (kernel.gradient_sum(t["X"], t["Z"], t["W"], block_size=16), kernel.gradient_sum(X, Z, W)),
    ]
    for got, want in pairs:
        assert got.device.type == device
        assert got.dtype == torch.float64
        np.testing.assert_allclose(_np(got), want, **TOL)


@pytest.mark.parametrize("kernel", KERNELS, ids=repr)
def test_backend_torch_with_arrays_returns_arrays(kernel, data):
    X, Z, C, _ = data
    got = kernel.mmv(X, Z, C, backend="torch")
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, kernel.mmv(X, Z, C), **TOL)
    with config_context(backend="torch", device="cpu"):
        got = kernel(X, Z)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, kernel(X, Z), **TOL)


@pytest.mark.parametrize("device", [
    "cpu",
    *[pytest.param(d, marks=pytest.mark.xfail(strict=True, reason=(
        "known defect, found on an H100 (2026-11-27): the operand cache is keyed by the "
        "device's name, 'cuda' for backend='torch' and 'cuda:0' for a tensor, so one GPU "
        "holds the operands twice (results are equal); the fix is in backend.py, whose "
        "code keys the reproduction caches, and waits for their next recomputation")))
      for d in DEVICES[1:]]])
def test_expansion_on_tensors(data, device):
    X, Z, C, _ = data
    for coef, intercept in ((C, [0.5, -1.0, 2.0]), (C[:, 1], 0.25)):
        psi = KernelExpansion(Z, coef, RBF(0.3), intercept)
        Xt = torch.as_tensor(X, device=device)
        got = psi.decision_function(Xt, block_size=16)
        assert got.device.type == device and got.dtype == torch.float64
        np.testing.assert_allclose(_np(got), psi(X), **TOL)
        with config_context(device=device):  # numpy in: the configured device
            np.testing.assert_allclose(psi.decision_function(X, backend="torch"), psi(X),
                                       **TOL)
        # The converted operands are cached per device and dtype.
        assert len(psi._backend_cache) == 1


def test_float32_tensors_follow_numpy_dtype_rules(data):
    X, Z, C, _ = data
    psi32 = KernelExpansion(Z.astype(np.float32), C.astype(np.float32), RBF(0.3))
    X32 = torch.as_tensor(X, dtype=torch.float32)
    got = psi32.decision_function(X32)
    assert got.dtype == torch.float32
    np.testing.assert_allclose(_np(got), psi32(X.astype(np.float32)), rtol=1e-5, atol=1e-5)
    psi64 = KernelExpansion(Z, C, RBF(0.3))
    assert psi64.decision_function(X32).dtype == torch.float64
    assert RBF(0.3)(X32, torch.as_tensor(Z)).dtype == torch.float64


def test_tensor_input_errors(data):
    X, Z, C, _ = data
    Xt, Zt = torch.as_tensor(X), torch.as_tensor(Z)
    k = RBF(0.3)
    with pytest.raises(TypeError, match="Cannot mix torch tensors and numpy arrays"):
        k(Xt, Z)
    with pytest.raises(TypeError, match=r"C: ndarray"):
        k.mmv(Xt, Zt, C)
    with pytest.raises(TypeError, match="backend='numpy' was given torch tensors"):
        k(Xt, backend="numpy")
    bad = Xt.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="X contains NaN"):
        k(bad)
    with pytest.raises(ValueError, match="must be a 2-D tensor"):
        k(Xt[0])
    with pytest.raises(ValueError, match="Y must have the same number|same number of features"):
        k(Xt, Zt[:, :2])
    psi = KernelExpansion(Z, C, k)
    with pytest.raises(ValueError, match="X has 2 features, but KernelExpansion is expecting 5"):
        psi.decision_function(Xt[:, :2])
    # Integer tensors are data too: they become float64.
    np.testing.assert_allclose(_np(k(torch.ones(2, 5, dtype=torch.int64))), np.ones((2, 2)))


def test_numpy_only_kernels_are_refused_by_name(data):
    from sparsekm.approx.randomized import ProjectedKernel, RandomProjection

    X, Z, C, _ = data
    k = ProjectedKernel(RBF(0.3), RandomProjection(5, 3, random_state=0))
    with pytest.raises(TypeError, match="supports the numpy backend"):
        KernelExpansion(Z, C, k).decision_function(torch.as_tensor(X))
