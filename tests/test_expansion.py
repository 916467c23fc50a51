import numpy as np
import pytest
from sklearn.decomposition import KernelPCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC, SVR, NuSVR

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF, InverseMultiquadric, Linear, Polynomial, Sigmoid


def explicit_poly2(X, c):
    n, d = X.shape
    quad = np.einsum("ni,nj->nij", X, X).reshape(n, d * d)
    return np.hstack([quad, np.sqrt(2 * c) * X, np.full((n, 1), c)])


@pytest.fixture
def psi(rng):
    return KernelExpansion(rng.normal(size=(30, 4)), rng.normal(size=30), RBF(0.4), intercept=0.3)


def test_decision_function_is_the_kernel_sum(psi, rng):
    X = rng.normal(size=(11, 4))
    ref = np.array([sum(c * np.exp(-0.4 * np.sum((x - v) ** 2)) for v, c in
                        zip(psi.vectors, psi.coef, strict=True)) for x in X]) + 0.3
    np.testing.assert_allclose(psi.decision_function(X), ref, rtol=1e-12)
    np.testing.assert_allclose(psi(X), ref, rtol=1e-12)


@pytest.mark.parametrize("block_size", [1, 3, 1000])
def test_blocked_evaluation_equals_unblocked(rng, block_size):
    psi = KernelExpansion(rng.normal(size=(40, 5)), rng.normal(size=(40, 3)), RBF(0.2),
                          intercept=[1.0, 2.0, 3.0])
    X = rng.normal(size=(17, 5))
    full = RBF(0.2)(X, psi.vectors) @ psi.coef + psi.intercept
    np.testing.assert_allclose(psi.decision_function(X, block_size=block_size), full, rtol=1e-12)


def test_shapes_and_properties(rng):
    multi = KernelExpansion(rng.normal(size=(6, 2)), rng.normal(size=(6, 3)), Linear(), 0.5)
    assert (multi.n_terms, multi.n_features, multi.n_outputs) == (6, 2, 3)
    assert multi.is_multioutput and len(multi) == 6
    np.testing.assert_array_equal(multi.intercept, [0.5, 0.5, 0.5])
    assert multi.decision_function(rng.normal(size=(4, 2))).shape == (4, 3)
    single = multi.output(1)
    assert single.n_outputs == 1 and not single.is_multioutput
    np.testing.assert_array_equal(single.coef, multi.coef[:, 1])
    assert "n_terms=6" in repr(multi)
    with pytest.raises(ValueError, match="read-only"):
        multi.coef[0, 0] = 1.0
    with pytest.raises(IndexError):
        multi.output(3)


def test_float32_expansion_evaluates_in_float32(rng):
    V = rng.normal(size=(20, 3)).astype(np.float32)
    psi = KernelExpansion(V, np.ones(20, np.float32), RBF(0.5))
    X = rng.normal(size=(5, 3))
    assert psi(X.astype(np.float32)).dtype == np.float32
    assert psi(X).dtype == np.float64
    np.testing.assert_allclose(psi(X.astype(np.float32)), psi(X), rtol=1e-5)


def test_linear_distance_equals_explicit(rng):
    X, Y = rng.normal(size=(8, 3)), rng.normal(size=(5, 3))
    a, b = rng.normal(size=8), rng.normal(size=5)
    psi, phi = KernelExpansion(X, a, Linear()), KernelExpansion(Y, b, Linear())
    w, v = a @ X, b @ Y
    assert psi.norm2() == pytest.approx(w @ w, rel=1e-12)
    assert psi.inner(phi) == pytest.approx(w @ v, rel=1e-12)
    assert psi.distance2(phi) == pytest.approx(np.sum((w - v) ** 2), rel=1e-12)


@pytest.mark.parametrize("c", [0.0, 1.0])
def test_polynomial2_distance_equals_explicit_features(rng, c):
    X, Y = rng.normal(size=(9, 3)), rng.normal(size=(4, 3))
    a, b = rng.normal(size=9), rng.normal(size=4)
    k = Polynomial(degree=2, coef0=c)
    w, v = a @ explicit_poly2(X, c), b @ explicit_poly2(Y, c)
    psi, phi = KernelExpansion(X, a, k), KernelExpansion(Y, b, k)
    assert psi.distance2(phi) == pytest.approx(np.sum((w - v) ** 2), rel=1e-10)
    assert psi.norm2() == pytest.approx(w @ w, rel=1e-12)


def test_multioutput_inner_shapes(rng):
    k = RBF(0.3)
    A = KernelExpansion(rng.normal(size=(7, 2)), rng.normal(size=(7, 3)), k)
    B = KernelExpansion(rng.normal(size=(5, 2)), rng.normal(size=(5, 2)), k)
    s = KernelExpansion(rng.normal(size=(4, 2)), rng.normal(size=4), k)
    G = A.inner(B)
    assert G.shape == (3, 2)
    np.testing.assert_allclose(G, A.coef.T @ k(A.vectors, B.vectors) @ B.coef, rtol=1e-12)
    assert A.inner(s).shape == (3,)
    assert s.inner(B).shape == (2,)
    assert isinstance(s.inner(s), float)
    np.testing.assert_allclose(A.norm2(), np.diag(A.inner(A)), rtol=1e-12)
    np.testing.assert_allclose(A.distance2(A * 0.5), 0.25 * A.norm2(), rtol=1e-10)


def test_arithmetic_concatenates_terms(rng):
    k = RBF(0.5)
    a = KernelExpansion(rng.normal(size=(6, 2)), rng.normal(size=6), k, 1.0)
    b = KernelExpansion(rng.normal(size=(3, 2)), rng.normal(size=3), k, 2.0)
    X = rng.normal(size=(10, 2))
    np.testing.assert_allclose((a + b)(X), a(X) + b(X), rtol=1e-12)
    np.testing.assert_allclose((a - b)(X), a(X) - b(X), rtol=1e-12)
    np.testing.assert_allclose((2.5 * a)(X), 2.5 * a(X), rtol=1e-12)
    np.testing.assert_allclose((a / 4)(X), a(X) / 4, rtol=1e-12)
    assert (a + b).n_terms == 9
    assert (a - a).norm2() == pytest.approx(0.0, abs=1e-12)
    assert a.distance2(a) == 0.0
    with pytest.raises(ZeroDivisionError):
        a / 0


def test_merge_duplicates_merges_and_drops_zeros(rng):
    V = rng.normal(size=(5, 3))
    vectors = np.vstack([V, V[[1, 3]], V[[0]]])
    coef = np.array([1.0, 2.0, 0.0, -1.0, 0.5, 3.0, 1.0, -1.0])
    psi = KernelExpansion(vectors, coef, RBF(0.7))
    small = psi.merge_duplicates()
    # V0: 1 - 1 = 0 (dropped); V1: 2 + 3; V2: 0 (dropped); V3: -1 + 1 = 0 (dropped); V4: 0.5
    assert small.n_terms == 2
    np.testing.assert_array_equal(small.vectors, V[[1, 4]])
    np.testing.assert_array_equal(small.coef, [5.0, 0.5])
    X = rng.normal(size=(7, 3))
    np.testing.assert_allclose(small(X), psi(X), rtol=1e-12, atol=1e-14)


def test_merge_duplicates_multioutput_keeps_rows_nonzero_in_any_output(rng):
    V = rng.normal(size=(3, 2))
    psi = KernelExpansion(V, np.array([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]]), Linear())
    assert psi.merge_duplicates().n_terms == 2


def test_compress_is_a_deprecated_alias_of_merge_duplicates(rng):
    V = rng.normal(size=(3, 2))
    psi = KernelExpansion(np.vstack([V, V[:1]]), np.array([1.0, 2.0, 3.0, 4.0]), RBF(0.5))
    with pytest.warns(DeprecationWarning, match=r"use KernelExpansion\.merge_duplicates\(\)"):
        old = psi.compress()
    np.testing.assert_array_equal(old.vectors, V)
    np.testing.assert_array_equal(old.coef, [5.0, 2.0, 3.0])


def test_algebra_errors(rng):
    a = KernelExpansion(rng.normal(size=(3, 2)), np.ones(3), RBF(0.5))
    with pytest.raises(ValueError, match=r"different kernels: RBF\(gamma=0.5\) and RBF\(gamma=0.2\)"):
        a.distance2(KernelExpansion(a.vectors, np.ones(3), RBF(0.2)))
    with pytest.raises(ValueError, match="different kernels"):
        a.inner(KernelExpansion(a.vectors, np.ones(3), Linear()))
    with pytest.raises(ValueError, match="different numbers of features"):
        a + KernelExpansion(np.ones((2, 3)), np.ones(2), RBF(0.5))
    with pytest.raises(ValueError, match="1 and 2 outputs"):
        a + KernelExpansion(a.vectors, np.ones((3, 2)), RBF(0.5))
    with pytest.raises(TypeError, match="needs another KernelExpansion"):
        a.inner(np.ones(3))
    with pytest.raises(TypeError):
        a + 1.0
    with pytest.raises(ValueError, match="Cannot scale"):
        a * np.nan


def test_construction_errors(rng):
    V = rng.normal(size=(4, 2))
    with pytest.raises(TypeError, match="kernel must be a sparsekm.kernels.Kernel"):
        KernelExpansion(V, np.ones(4), "rbf")
    with pytest.raises(ValueError, match="one row per expansion vector: expected 4 rows, found 3"):
        KernelExpansion(V, np.ones(3), RBF())
    with pytest.raises(ValueError, match="coef contains NaN"):
        KernelExpansion(V, [1, np.nan, 1, 1], RBF())
    with pytest.raises(ValueError, match="vectors contains infinity"):
        KernelExpansion(np.full((4, 2), np.inf), np.ones(4), RBF())
    with pytest.raises(ValueError, match="intercept must be a scalar"):
        KernelExpansion(V, np.ones(4), RBF(), intercept=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"intercept must have shape \(n_outputs,\) = \(2,\)"):
        KernelExpansion(V, np.ones((4, 2)), RBF(), intercept=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="coef must be 1-D or 2-D"):
        KernelExpansion(V, np.ones((4, 2, 1)), RBF())
    psi = KernelExpansion(V, np.ones(4), RBF())
    with pytest.raises(ValueError, match="X has 3 features, but KernelExpansion is expecting 2"):
        psi.decision_function(np.ones((1, 3)))
    with pytest.raises(ValueError, match="X must be a 2-D array"):
        psi.decision_function(np.ones(2))


# -- from_estimator ------------------------------------------------------------------------
@pytest.fixture
def clf_data(rng):
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    return X, y, y3, rng.normal(size=(60, 5))


SVC_KERNELS = [
    dict(kernel="rbf", gamma=0.3),
    dict(kernel="rbf", gamma="scale"),
    dict(kernel="poly", degree=3, gamma=0.4, coef0=1.0),
    dict(kernel="poly", degree=2, gamma="auto", coef0=0.0),
    dict(kernel="sigmoid", gamma=0.05, coef0=-0.2),
    dict(kernel="linear"),
]


@pytest.mark.parametrize("params", SVC_KERNELS, ids=[str(p) for p in SVC_KERNELS])
def test_from_binary_svc(clf_data, params):
    X, y, _, Xt = clf_data
    svc = SVC(C=2.0, **params).fit(X, y)
    psi = KernelExpansion.from_estimator(svc)
    assert psi.n_terms == svc.support_vectors_.shape[0]
    np.testing.assert_allclose(psi(Xt), svc.decision_function(Xt), rtol=0, atol=1e-10)


@pytest.mark.parametrize("cls", [SVR, NuSVR])
def test_from_svr(clf_data, cls):
    X, _, _, Xt = clf_data
    svr = cls(gamma=0.2, C=3.0).fit(X, X[:, 0] - X[:, 2])
    np.testing.assert_allclose(KernelExpansion.from_estimator(svr)(Xt), svr.predict(Xt),
                               rtol=0, atol=1e-10)


def test_from_one_vs_rest_stores_each_distinct_vector_once(clf_data):
    X, _, y3, Xt = clf_data
    ovr = OneVsRestClassifier(SVC(gamma=0.2, C=5.0)).fit(X, y3)
    psi = KernelExpansion.from_estimator(ovr)
    assert psi.coef.shape[1] == 3
    distinct = np.unique(np.vstack([m.support_vectors_ for m in ovr.estimators_]), axis=0)
    assert psi.n_terms == distinct.shape[0] < sum(m.support_vectors_.shape[0]
                                                  for m in ovr.estimators_)
    np.testing.assert_allclose(psi(Xt), ovr.decision_function(Xt), rtol=0, atol=1e-10)


def test_from_binary_one_vs_rest_is_single_output(clf_data):
    X, y, _, Xt = clf_data
    ovr = OneVsRestClassifier(SVC(gamma=0.2)).fit(X, y)
    psi = KernelExpansion.from_estimator(ovr)
    assert not psi.is_multioutput
    np.testing.assert_allclose(psi(Xt), ovr.decision_function(Xt), rtol=0, atol=1e-10)


@pytest.mark.parametrize("params", [dict(kernel="rbf", gamma=0.2), dict(kernel="poly", degree=2,
                                    gamma=0.5, coef0=1.0), dict(kernel="linear"),
                                    dict(kernel="rbf", gamma=None)])
def test_from_kernel_pca(clf_data, params):
    X, _, _, Xt = clf_data
    kpca = KernelPCA(n_components=6, **params).fit(X)
    psi = KernelExpansion.from_estimator(kpca)
    assert psi.n_outputs == 6
    np.testing.assert_allclose(psi(Xt), kpca.transform(Xt), rtol=0, atol=1e-10)
    # Centring is absorbed in the coefficients: each component's coefficients sum to 0
    # (eigenvectors of the centred Gram matrix are orthogonal to the all-ones vector).
    np.testing.assert_allclose(psi.coef.sum(axis=0), 0.0, atol=1e-10)


def test_from_estimator_errors(clf_data):
    X, y, y3, _ = clf_data
    # a multi-class SVC converts (one-vs-one: one output per pair, see test_multiclass.py)
    svc3 = SVC().fit(X, y3)
    psi3 = KernelExpansion.from_estimator(svc3)
    assert psi3.n_outputs == 3
    np.testing.assert_allclose(psi3(X), SVC(decision_function_shape="ovo").fit(X, y3)
                               .decision_function(X), atol=1e-10)
    with pytest.raises(TypeError, match="kernel='precomputed'"):
        KernelExpansion.from_estimator(SVC(kernel="precomputed").fit(X @ X.T, y))
    with pytest.raises(TypeError, match="only 'rbf', 'poly', 'sigmoid' and 'linear'"):
        KernelExpansion.from_estimator(SVC(kernel=lambda a, b: a @ b.T).fit(X, y))
    with pytest.raises(NotFittedError, match="not fitted yet"):
        KernelExpansion.from_estimator(SVC())
    with pytest.raises(NotFittedError):
        KernelExpansion.from_estimator(OneVsRestClassifier(SVC()))
    with pytest.raises(TypeError, match="Cannot build a KernelExpansion from LogisticRegression"):
        KernelExpansion.from_estimator(LogisticRegression().fit(X, y))
    with pytest.raises(TypeError, match="must wrap binary SVC"):
        KernelExpansion.from_estimator(OneVsRestClassifier(LogisticRegression()).fit(X, y3))


def test_other_kernels_work_in_expansions(rng):
    X = rng.normal(size=(10, 3))
    for k in (InverseMultiquadric(-1.0), Sigmoid(0.1, 0.0)):
        psi = KernelExpansion(X, np.ones(10), k)
        np.testing.assert_allclose(psi(X), k(X).sum(axis=1), rtol=1e-12)
