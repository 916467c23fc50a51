import numpy as np
import pytest
from sklearn.base import clone

from sparsekm.kernels import (
    RBF,
    InverseMultiquadric,
    Kernel,
    Laplacian,
    Linear,
    Matern,
    Polynomial,
    RationalQuadratic,
    Sigmoid,
    kernel_from_dict,
    resolve_kernel,
)

KERNELS = [
    RBF(gamma=0.3),
    RBF.from_sigma(2.0),
    InverseMultiquadric(c=-0.5),
    InverseMultiquadric(c=-1.0),
    InverseMultiquadric(c=-2.5),
    Polynomial(degree=2, coef0=0.0),
    Polynomial(degree=3, coef0=1.0),
    Polynomial(degree=3, coef0=0.5, gamma=0.2),
    Sigmoid(kappa=0.2, theta=-0.1),
    Linear(),
    Matern(length_scale=1.5, nu=0.5),
    Matern(length_scale=1.5, nu=1.5),
    Matern(length_scale=2.0, nu=2.5),
    RationalQuadratic(length_scale=1.2, alpha=0.7),
    Laplacian(gamma=0.2),
]
IDS = [repr(k) for k in KERNELS]


def naive_kernel(kernel, x, y):
    """Direct formula for one pair: an independent reference for every kernel class."""
    if isinstance(kernel, RBF):
        return np.exp(-kernel.gamma * np.sum((x - y) ** 2))
    if isinstance(kernel, InverseMultiquadric):
        return (np.sum((x - y) ** 2) + 1.0) ** kernel.c
    if isinstance(kernel, Polynomial):
        return (kernel.gamma * x @ y + kernel.coef0) ** kernel.degree
    if isinstance(kernel, Sigmoid):
        return np.tanh(kernel.kappa * x @ y + kernel.theta)
    if isinstance(kernel, Linear):
        return x @ y
    if isinstance(kernel, Matern):  # Rasmussen & Williams eq. 4.16-4.17 (and 1/2: exp(-r/l))
        r = np.sqrt(np.sum((x - y) ** 2)) / kernel.length_scale
        if kernel.nu == 0.5:
            return np.exp(-r)
        s = np.sqrt(2 * kernel.nu) * r
        return (1 + s + (s * s / 3 if kernel.nu == 2.5 else 0.0)) * np.exp(-s)
    if isinstance(kernel, RationalQuadratic):  # eq. 4.19
        a, ell = kernel.alpha, kernel.length_scale
        return (1 + np.sum((x - y) ** 2) / (2 * a * ell**2)) ** -a
    if isinstance(kernel, Laplacian):
        return np.exp(-kernel.gamma * np.sum(np.abs(x - y)))
    raise AssertionError(kernel)


@pytest.fixture
def data(rng):
    return rng.normal(size=(23, 4)), rng.normal(size=(17, 4))


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_gram_matches_double_loop(kernel, data):
    X, Y = data
    ref = np.array([[naive_kernel(kernel, x, y) for y in Y] for x in X])
    np.testing.assert_allclose(kernel(X, Y), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_symmetry_and_psd(kernel, data):
    X, _ = data
    K = kernel(X)
    np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-12)
    eig = np.linalg.eigvalsh(K)
    if kernel.is_psd:
        assert eig.min() > -1e-10 * max(1.0, eig.max())
    else:
        assert isinstance(kernel, Sigmoid)


def test_sigmoid_is_documented_not_psd(rng):
    X = rng.normal(size=(30, 3))
    K = Sigmoid(kappa=1.0, theta=-2.0)(X)
    assert np.linalg.eigvalsh(K).min() < -1e-3
    assert Sigmoid.is_psd is False


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_diag(kernel, data):
    X, _ = data
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X)), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
@pytest.mark.parametrize("block_size", [1, 5, 100])
def test_blocked_equals_unblocked(kernel, data, block_size):
    X, Y = data
    C = np.random.default_rng(1).normal(size=(Y.shape[0], 3))
    full = kernel(X, Y)
    np.testing.assert_allclose(kernel(X, Y, block_size=block_size), full, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(kernel.mmv(X, Y, C, block_size=block_size), full @ C,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(kernel.mmv(X, Y, C[:, 0], block_size=block_size), full @ C[:, 0],
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_gradient_y_matches_finite_differences(kernel, data):
    X, Y = data
    y = Y[0] * 0.5
    G = kernel.gradient_y(X, y)
    h = 1e-6
    fd = np.empty_like(G)
    for j in range(y.size):
        e = np.zeros_like(y)
        e[j] = h
        fd[:, j] = (kernel(X, (y + e)[None])[:, 0] - kernel(X, (y - e)[None])[:, 0]) / (2 * h)
    np.testing.assert_allclose(G, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_gradient_sum_equals_loop_of_gradient_y(kernel, data):
    X, Z = data
    W = np.random.default_rng(2).normal(size=(X.shape[0], Z.shape[0]))
    G = kernel.gradient_sum(X, Z, W, block_size=4)
    ref = np.array([W[:, u] @ kernel.gradient_y(X, Z[u]) for u in range(Z.shape[0])])
    np.testing.assert_allclose(G, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kernel", [k for k in KERNELS if k.is_radial or k.is_dot_product],
                         ids=repr)
def test_profile_derivative_matches_finite_differences(kernel):
    t = np.linspace(0.1, 3.0, 9)
    h = 1e-6
    fd = (kernel.profile(t + h) - kernel.profile(t - h)) / (2 * h)
    np.testing.assert_allclose(kernel.profile_derivative(t), fd, rtol=1e-7, atol=1e-9)


def test_radial_profile_reproduces_gram(data):
    X, Y = data
    r2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    for kernel in (RBF(0.7), InverseMultiquadric(-1.0)):
        np.testing.assert_allclose(kernel(X, Y), kernel.profile(r2), rtol=1e-12)


def test_rbf_from_sigma_convention():
    k = RBF.from_sigma(3.0)
    assert k.gamma == pytest.approx(1 / 18)
    x, y = np.zeros((1, 2)), np.array([[3.0, 0.0]])
    assert k(x, y)[0, 0] == pytest.approx(np.exp(-9 / 18))


def explicit_poly2_features(X, c):
    """Feature map of (x.y + c)^2: all ordered products, sqrt(2c) x_i and c."""
    n, d = X.shape
    quad = np.einsum("ni,nj->nij", X, X).reshape(n, d * d)
    return np.hstack([quad, np.sqrt(2 * c) * X, np.full((n, 1), c)])


@pytest.mark.parametrize("c", [0.0, 1.0, 2.5])
def test_polynomial_degree2_norm_equals_explicit_feature_norm(rng, c):
    X = rng.normal(size=(12, 3))
    alpha = rng.normal(size=12)
    kernel = Polynomial(degree=2, coef0=c)
    F = explicit_poly2_features(X, c)
    np.testing.assert_allclose(F @ F.T, kernel(X), rtol=1e-12, atol=1e-12)
    explicit = np.sum((alpha @ F) ** 2)
    assert alpha @ kernel(X) @ alpha == pytest.approx(explicit, rel=1e-12)


def test_dtype_kept(rng):
    X32 = rng.normal(size=(10, 3)).astype(np.float32)
    X64 = X32.astype(np.float64)
    for kernel in (RBF(0.5), Polynomial(3, 1.0), Linear()):
        assert kernel(X32).dtype == np.float32
        assert kernel(X32, X64).dtype == np.float64
        assert kernel(X64).dtype == np.float64
        assert kernel.mmv(X32, X32, np.ones(10, np.float32)).dtype == np.float32
        np.testing.assert_allclose(kernel(X32), kernel(X64), rtol=1e-5, atol=1e-5)
    assert RBF(0.5)(np.arange(6).reshape(3, 2)).dtype == np.float64  # ints -> float64


@pytest.mark.parametrize(
    "factory, match",
    [
        (lambda: RBF(gamma=-1), r"The 'gamma' parameter of RBF must be a float > 0. Got -1 instead."),
        (lambda: RBF(gamma=0), r"'gamma' parameter of RBF must be a float > 0"),
        (lambda: RBF(gamma="scale"), r"'gamma' parameter of RBF"),
        (lambda: RBF(gamma=np.nan), r"'gamma' parameter of RBF"),
        (lambda: RBF.from_sigma(0), r"'sigma' parameter of RBF must be a float > 0"),
        (lambda: Polynomial(degree=0), r"'degree' parameter of Polynomial must be an int >= 1"),
        (lambda: Polynomial(degree=2.5), r"'degree' parameter of Polynomial must be an int"),
        (lambda: Polynomial(degree=2, coef0=-1), r"'coef0' parameter of Polynomial"),
        (lambda: Polynomial(degree=2, gamma=0), r"'gamma' parameter of Polynomial"),
        (lambda: InverseMultiquadric(c=0.5), r"'c' parameter of InverseMultiquadric must be a float < 0"),
        (lambda: Sigmoid(kappa=np.inf), r"'kappa' parameter of Sigmoid"),
        (lambda: Sigmoid(theta=None), r"'theta' parameter of Sigmoid"),
    ],
)
def test_parameter_validation(factory, match):
    with pytest.raises(ValueError, match=match):
        factory()


def test_input_validation(rng):
    k = RBF(1.0)
    X = rng.normal(size=(5, 3))
    with pytest.raises(ValueError, match="X contains NaN"):
        k(np.where(X > 1, np.nan, X) if (X > 1).any() else np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="Y contains infinity"):
        k(X, np.full((2, 3), np.inf))
    with pytest.raises(ValueError, match="same number of features"):
        k(X, rng.normal(size=(4, 2)))
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        k(np.ones(3))
    with pytest.raises(ValueError, match="X is empty"):
        k(np.ones((0, 3)))
    with pytest.raises(TypeError, match="X must hold real numbers"):
        k(np.array([["a", "b"]]))
    with pytest.raises(ValueError, match="'block_size' parameter of Kernel must be an int >= 1"):
        k(X, block_size=0)
    with pytest.raises(ValueError, match="C must have one row per row of Y"):
        k.mmv(X, X, np.ones(4))
    with pytest.raises(ValueError, match="y has 2 features"):
        k.gradient_y(X, np.ones(2))
    with pytest.raises(ValueError, match=r"W must have shape \(n_samples, n_vectors\)"):
        k.gradient_sum(X, X[:2], np.ones((5, 3)))


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_params_round_trip(kernel):
    assert kernel_from_dict(kernel.to_dict()) == kernel
    assert clone(kernel) == kernel
    assert eval(repr(kernel), {type(kernel).__name__: type(kernel)}) == kernel
    assert hash(clone(kernel)) == hash(kernel)


def test_kernel_equality_and_set_params():
    assert RBF(0.5) == RBF(0.5)
    assert RBF(0.5) != RBF(0.25)
    assert RBF(0.5) != Linear()
    assert RBF(0.5).set_params(gamma=2.0) == RBF(2.0)


def test_kernel_from_dict_errors():
    with pytest.raises(ValueError, match="Unknown kernel 'Foo'"):
        kernel_from_dict({"name": "Foo", "params": {}})
    with pytest.raises(ValueError, match="Invalid kernel description"):
        kernel_from_dict({"params": {}})
    with pytest.raises(ValueError, match="Invalid parameters for kernel RBF"):
        kernel_from_dict({"name": "RBF", "params": {"sigma": 1}})
    with pytest.raises(ValueError, match="'gamma' parameter of RBF"):
        kernel_from_dict({"name": "RBF", "params": {"gamma": -3}})


def test_resolve_kernel(rng):
    X = rng.normal(size=(20, 4)) * 2
    k = resolve_kernel(None, X)
    assert isinstance(k, RBF)
    assert k.gamma == pytest.approx(1 / (4 * X.var()))
    assert resolve_kernel("linear") == Linear()
    assert resolve_kernel("poly", gamma=1.0, degree=2) == Polynomial()
    # scikit-learn's conventions for string kernels: gamma "scale"/"auto", degree 3, coef0 0
    assert resolve_kernel("rbf", X) == k
    assert resolve_kernel("RBF", X, gamma="auto") == RBF(0.25)
    assert resolve_kernel("poly", X) == Polynomial(3, 0.0, 1 / (4 * X.var()))
    assert resolve_kernel("sigmoid", X, gamma=0.1, coef0=-1.0) == Sigmoid(0.1, -1.0)
    assert resolve_kernel("imq", X, gamma=5.0) == InverseMultiquadric()
    assert resolve_kernel("rbf", np.ones((4, 2))) == RBF(1.0)  # constant X: gamma = 1
    kern = RBF(3.0)
    assert resolve_kernel(kern) is kern
    with pytest.raises(ValueError, match=r"got kernel=RBF\(gamma=3.0\) and gamma=0.5"):
        resolve_kernel(kern, X, owner="SLMC", gamma=0.5)
    with pytest.raises(ValueError, match="'gamma' parameter of SLMC must be 'scale', 'auto'"):
        resolve_kernel("rbf", X, owner="SLMC", gamma="large")
    with pytest.raises(ValueError, match="'gamma' parameter of SLMC must be"):
        resolve_kernel("rbf", X, owner="SLMC", gamma=-1.0)
    with pytest.raises(ValueError, match="'degree' parameter of SLMC"):
        resolve_kernel("poly", X, owner="SLMC", degree=0)
    with pytest.raises(ValueError, match="needs the training data"):
        resolve_kernel("rbf")
    with pytest.raises(TypeError, match="The 'kernel' parameter of SLMC must be"):
        resolve_kernel("laplacian", owner="SLMC")


def test_every_kernel_class_is_covered():
    """Walk all concrete subclasses so a new kernel cannot skip the checks above."""
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    # ProjectedKernel wraps another kernel and has its own checks (Gram, mmv, gradients,
    # persistence) in tests/test_randomized.py and tests/test_randomized_pairs.py.
    concrete = {c for c in subclasses(Kernel) if c.__module__ == "sparsekm.kernels"
                and c.__name__ not in ("RadialKernel", "DotProductKernel", "ProjectedKernel")}
    assert concrete <= {type(k) for k in KERNELS}


def test_large_distances_do_not_go_negative(rng):
    X = rng.normal(size=(50, 8)) * 1e3
    K = RBF(1e-7)(X, X + 1e-9)
    assert np.all(K <= 1.0) and np.all(K >= 0.0)
    # the self-Gram diagonal is exactly k(0) even where GEMM distances lose digits
    assert np.all(np.diag(RBF(1.0)(X)) == 1.0)
    assert np.all(np.diag(InverseMultiquadric(-0.5)(X)) == 1.0)


def test_projected_kernel_projects_an_expansions_vectors_once(rng, monkeypatch):
    """Issue 26: Z P of the expansion's vectors is computed once across calls; the
    outputs are those of the uncached kernel (k(x P, z P) computed directly)."""
    import copy
    import gc
    import pickle

    from sparsekm import KernelExpansion
    from sparsekm.kernels import ProjectedKernel, RandomProjection

    kernel = ProjectedKernel(RBF(0.05), RandomProjection(30, 12, random_state=0))
    psi = KernelExpansion(rng.normal(size=(40, 30)), rng.normal(size=(40, 3)), kernel, 0.5)
    projected = []
    original = ProjectedKernel._project_rows

    def spy(self, X):
        projected.append(X.shape[0])
        return original(self, X)

    monkeypatch.setattr(ProjectedKernel, "_project_rows", spy)
    P = kernel.projection.matrix
    Z = np.asarray(psi.vectors)
    outs = []
    for n_rows in (5, 7, 1):
        X = rng.normal(size=(n_rows, 30))
        out = psi.decision_function(X)
        ref = RBF(0.05)(X @ P, Z @ P) @ psi.coef + 0.5
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)
        outs.append((X, out))
    # the 40 vectors were projected once; each X once per call
    assert projected == [5, 40, 7, 1]
    # gradients and Gram blocks against the vectors use the same cached projection
    projected.clear()
    kernel(outs[0][0], psi.vectors)
    assert projected == [5]
    # a writable array is projected every time (its values may change)
    W = np.array(psi.vectors)
    kernel(outs[0][0], W)
    W += 1.0
    np.testing.assert_allclose(kernel(outs[0][0], W), RBF(0.05)(outs[0][0] @ P, W @ P),
                               rtol=1e-12)
    # copies (pickle, deepcopy) evaluate alike without carrying the cache
    for copied in (pickle.loads(pickle.dumps(psi)), copy.deepcopy(psi)):
        np.testing.assert_allclose(copied.decision_function(outs[0][0]), outs[0][1],
                                   rtol=1e-12)
    # the cache forgets an expansion that is gone
    assert len(kernel._projected) >= 1
    del psi, copied, Z  # Z is the expansion's own (read-only) array
    gc.collect()
    assert len(kernel._projected) == 0


def test_projected_kernel_cache_is_thread_safe():
    """Threads sharing one ProjectedKernel: no error from its projection cache, right values."""
    import sys
    import threading

    from sparsekm.kernels import ProjectedKernel, RandomProjection

    P = RandomProjection(20, 5, random_state=0)
    k = ProjectedKernel(RBF(0.5), P)
    k.cache_size = 2  # constant eviction: the race needs stores and drops to interleave
    errors, wrong = [], []

    def work(seed):
        rng = np.random.default_rng(seed)
        Y = rng.normal(size=(3, 20))
        for _ in range(2000):
            Z = rng.normal(size=(4, 20))
            Z.setflags(write=False)  # read-only arrays are the ones cached
            try:
                G = k(Y, Z)
            except Exception as exc:  # noqa: BLE001 - any error is the failure
                errors.append(repr(exc))
                return
            if not np.allclose(G, RBF(0.5)(Y @ P.matrix, Z @ P.matrix), rtol=1e-12, atol=0):
                wrong.append(seed)
                return

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == [] and wrong == []
