"""Solvers on the torch backend (CPU, float64) against the numpy path.

RS construction, SLMC and the greedy basis take ``backend``/``device`` explicitly
(:func:`sparsekm.backend.solver_kernel`); their large operands go to the device once
(:func:`sparsekm.backend.resident`) and only small results come back. In float64 the
two engines differ by the rounding of their GEMMs only, so the results agree to
1e-8 (relative) unless an algorithm amplifies rounding on purpose (the float32 GEMMs
of the fast Gaussian one-term step, tested separately).
"""

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sparsekm import KernelExpansion  # noqa: E402
from sparsekm.approx import GreedyBasis  # noqa: E402
from sparsekm.backend import DeviceKernel, solver_kernel  # noqa: E402
from sparsekm.config import config_context  # noqa: E402
from sparsekm.kernels import RBF, InverseMultiquadric  # noqa: E402
from sparsekm.models import SLMC  # noqa: E402
from sparsekm.reduced_set import construct, reduce_expansion  # noqa: E402
from sparsekm.reduced_set import construction as construction_module  # noqa: E402

RTOL = 1e-8
#: every test below that names a device runs on the CPU and, where there is one, on CUDA
#: (the GPU's float64 GEMMs round differently from the CPU's: same tolerances)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    return X, rng.normal(size=80), rng.normal(size=(80, 2))


@pytest.fixture
def float64_one_term(monkeypatch):
    """The fast Gaussian one-term step with its GEMMs in float64 (as on both engines)."""
    monkeypatch.setattr(construction_module, "_FLOAT32", False)


def _same_expansion(e0, e1, X):
    np.testing.assert_allclose(e1.vectors, e0.vectors, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(e1.coef, e0.coef, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(e1.decision_function(X), e0.decision_function(X), rtol=RTOL,
                               atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel, shared", [(RBF(0.5), None), (RBF(0.3), True),
                                            (InverseMultiquadric(-1.0), None)])
def test_construct_torch_equals_numpy(data, float64_one_term, kernel, shared, device):
    X, a, A = data
    coef = A if shared else a
    psi = KernelExpansion(X, coef, kernel)
    r0 = construct(psi, 4, shared=shared, random_state=0, backend="numpy")
    r1 = construct(psi, 4, shared=shared, random_state=0, backend="torch", device=device)
    _same_expansion(r0.expansion, r1.expansion, X)
    np.testing.assert_allclose(r1.objective, r0.objective, rtol=RTOL)
    np.testing.assert_allclose(r1.objective_path, r0.objective_path, rtol=RTOL)
    # and the result is a real reduction: ||Psi - Psi'||^2 < ||Psi||^2
    assert np.all(np.asarray(r1.objective) < np.asarray(r1.norm2))


@pytest.mark.parametrize("device", DEVICES)
def test_construct_refine_orthogonal_torch(data, float64_one_term, device):
    X, a, _ = data
    psi = KernelExpansion(X, a, RBF(0.5))
    kw = dict(refine=True, step="orthogonal", random_state=0)
    r0 = construct(psi, 3, backend="numpy", **kw)
    r1 = construct(psi, 3, backend="torch", device=device, **kw)
    # L-BFGS over (Z, B) amplifies the engines' rounding a little (measured 1.4e-9)
    np.testing.assert_allclose(r1.objective, r0.objective, rtol=RTOL)
    np.testing.assert_allclose(r1.expansion.decision_function(X),
                               r0.expansion.decision_function(X), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_reduce_expansion_passes_backend(data, float64_one_term, device):
    X, _, A = data
    psi = KernelExpansion(X, A, RBF(0.5))
    r0 = reduce_expansion(psi, 3, random_state=0, backend="numpy")
    r1 = reduce_expansion(psi, 3, random_state=0, backend="torch", device=device)
    _same_expansion(r0.expansion, r1.expansion, X)


def test_reduced_set_classifier_backend(data, float64_one_term):
    from sklearn.svm import SVC

    from sparsekm.models import ReducedSetClassifier

    X = data[0]
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    svc = SVC(kernel="rbf", gamma=0.5, C=10.0).fit(X, y)
    m0 = ReducedSetClassifier(svc, n_vectors=5, random_state=0, backend="numpy").fit(X, y)
    m1 = ReducedSetClassifier(svc, n_vectors=5, random_state=0, backend="torch").fit(X, y)
    np.testing.assert_allclose(m1.decision_function(X), m0.decision_function(X), rtol=RTOL,
                               atol=1e-12)


def test_construct_float32_one_term_close(data):
    # The default fast Gaussian step runs two GEMMs per iteration in float32; torch's
    # and numpy's BLAS round them differently and the fixed point moves along the flat
    # maximum, so the vectors differ at ~1e-3 but the objective agrees to ~1e-4.
    X, a, _ = data
    psi = KernelExpansion(X, a, RBF(0.5))
    r0 = construct(psi, 5, random_state=0, backend="numpy")
    r1 = construct(psi, 5, random_state=0, backend="torch", device="cpu")
    np.testing.assert_allclose(r1.objective, r0.objective, rtol=1e-3)


def test_global_config_is_the_default(data, float64_one_term):
    X, a, _ = data
    psi = KernelExpansion(X, a, RBF(0.5))
    r0 = construct(psi, 3, random_state=0, backend="torch", device="cpu")
    with config_context(backend="torch", device="cpu"):
        assert isinstance(solver_kernel(RBF(0.5)), DeviceKernel)
        r1 = construct(psi, 3, random_state=0)
    np.testing.assert_array_equal(r1.expansion.vectors, r0.expansion.vectors)
    assert solver_kernel(RBF(0.5)) == RBF(0.5)  # numpy default: the kernel itself


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n_classes, shared", [(2, False), (3, False), (3, True)])
def test_slmc_torch_equals_numpy(data, n_classes, shared, device):
    X = data[0]
    y = (np.digitize(X[:, 0], [-0.5, 0.5]) if n_classes == 3
         else (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int))
    kw = dict(n_vectors=4, C=1.0, kernel=RBF(0.5), random_state=0, max_iter=30, shared=shared)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter reached: same on both engines
        m0 = SLMC(backend="numpy", **kw).fit(X, y)
        with config_context(device=device):
            m1 = SLMC(backend="torch", **kw).fit(X, y)
    d0, d1 = m0.decision_function(X), m1.decision_function(X)
    # L-BFGS over Z (stopped at max_iter) carries the engines' rounding into the
    # vectors (measured 1.4e-7 relative, one-vs-rest) and so into the decision values
    # (3.1e-8 relative with torch 2.14 on the CPU, 1.2e-8 with earlier versions): both
    # are held to 1e-6, two orders above the rounding seen and far below any real change
    np.testing.assert_allclose(d1, d0, rtol=1e-6, atol=1e-6 * np.abs(d0).max())
    np.testing.assert_allclose(m1.expansion_.vectors, m0.expansion_.vectors, rtol=1e-6,
                               atol=1e-9)
    assert isinstance(m1.expansion_.vectors, np.ndarray)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("pivoting", ["greedy", "random"])
def test_greedy_basis_torch_equals_numpy(data, pivoting, device):
    X = data[0]
    kw = dict(n_basis=12, tol=0.0, kernel=RBF(0.5), random_state=0, pivoting=pivoting)
    g0 = GreedyBasis(backend="numpy", **kw).fit(X)
    with config_context(device=device):
        g1 = GreedyBasis(backend="torch", **kw).fit(X)
    np.testing.assert_array_equal(g1.basis_indices_, g0.basis_indices_)
    np.testing.assert_allclose(g1.cholesky_, g0.cholesky_, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(g1.residuals_, g0.residuals_, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(g1.transform(X), g0.transform(X), rtol=RTOL, atol=1e-12)
    # partial_fit continues on the same engine
    X2 = np.random.default_rng(1).normal(size=(30, 3))
    g0.set_params(n_basis=16).partial_fit(X2)
    with config_context(device=device):
        g1.set_params(n_basis=16).partial_fit(X2)
    np.testing.assert_array_equal(g1.basis_indices_, g0.basis_indices_)


def test_backend_parameter_is_validated(data):
    X = data[0]
    with pytest.raises(ValueError, match="backend must be one of"):
        GreedyBasis(n_basis=3, kernel=RBF(0.5), backend="cupy").fit(X)
    with pytest.raises(ValueError, match="backend must be one of"):
        construct(KernelExpansion(X, data[1], RBF(0.5)), 2, backend="jax")


# -- the large operands are converted once ----------------------------------------------


@pytest.fixture
def conversions(monkeypatch):
    """Shapes of every numpy array converted to a tensor (``torch.as_tensor``)."""
    shapes = []
    real = torch.as_tensor

    def spy(a, *args, **kwargs):
        if isinstance(a, np.ndarray):
            shapes.append(a.shape)
        return real(a, *args, **kwargs)

    monkeypatch.setattr(torch, "as_tensor", spy)
    return shapes


def _n_data(shapes, X):
    """Conversions of data-sized arrays: at least ``X``'s rows, ``X``'s columns."""
    return sum(1 for s in shapes if len(s) == 2 and s[0] >= X.shape[0] and s[1] == X.shape[1])


@pytest.mark.parametrize("max_iter", [5, 40])
def test_slmc_converts_training_data_once(data, conversions, max_iter):
    X = data[0]
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = SLMC(n_vectors=4, kernel=RBF(0.5), random_state=0, max_iter=max_iter,
                 backend="torch").fit(X, y)
    assert m.n_iter_[0] >= 3  # many kernel evaluations ...
    assert conversions.count(X.shape) == 1  # ... one copy of X
    assert _n_data(conversions, X) == 1


def test_greedy_basis_converts_training_data_once(data, conversions):
    X = data[0]
    GreedyBasis(n_basis=15, tol=0.0, kernel=RBF(0.5), random_state=0, backend="torch").fit(X)
    assert conversions.count(X.shape) == 1
    assert _n_data(conversions, X) == 1


@pytest.mark.parametrize("kernel", [RBF(0.5), InverseMultiquadric(-1.0)])
def test_construct_converts_expansion_once(data, conversions, kernel):
    X, a, _ = data
    n_vectors = 5
    construct(KernelExpansion(X, a, kernel), n_vectors, random_state=0, backend="torch",
              device="cpu")
    # X once; per one-term step only the few new vectors Z join it on the device
    # ([X; Z] is assembled there); the coefficients go once (A) and once per step
    # ([A; -B], or (N, n_starts) columns for the pre-image solver); nothing per iteration
    assert conversions.count(X.shape) == 1
    assert _n_data(conversions, X) == 1
    n_coef = sum(1 for s in conversions if len(s) == 2 and s[0] >= X.shape[0]
                 and s[1] != X.shape[1])
    assert n_coef <= n_vectors + 1
