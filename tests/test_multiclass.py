"""Exact conversion of one-vs-one (and other) scikit-learn classifiers (issue 17)."""

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier, _ovr_decision_function
from sklearn.svm import SVC, SVR, NuSVC

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.multiclass import (
    ExpansionClassifier,
    ovo_pairs,
    ovo_votes,
    ovr_decision_function,
)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return X[:500], y[:500], X[500:800], y[500:800]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    return X[idx[:100]], y[idx[:100]], X[idx[100:]], y[idx[100:]]


def _params(kernel, cls):
    p = {"kernel": kernel}
    p.update({"nu": 0.1} if cls is NuSVC else {"C": 10.0})
    if kernel == "sigmoid":
        p.update(gamma=0.01, coef0=0.0)
    if kernel == "poly":
        p.update(degree=3, coef0=1.0)
    return p


@pytest.mark.parametrize("shape", ["ovo", "ovr"])
@pytest.mark.parametrize("cls", [SVC, NuSVC])
@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_multiclass_svc_exact_digits(digits, shape, cls, kernel):
    Xtr, ytr, Xte, _ = digits
    svc = cls(decision_function_shape=shape, **_params(kernel, cls)).fit(Xtr, ytr)
    psi = KernelExpansion.from_estimator(svc)
    k = len(svc.classes_)
    # k(k-1)/2 pairwise columns over the support vectors, each stored once (as sklearn)
    assert psi.n_outputs == k * (k - 1) // 2 == 45
    np.testing.assert_array_equal(psi.vectors, svc.support_vectors_)
    # the raw columns are scikit-learn's "ovo" decision function (libsvm's sign)
    if shape == "ovo":
        np.testing.assert_allclose(psi.decision_function(Xte), svc.decision_function(Xte),
                                   atol=1e-10, rtol=0)
    clf = ExpansionClassifier.from_estimator(svc)
    np.testing.assert_allclose(clf.decision_function(Xte), svc.decision_function(Xte),
                               atol=1e-10, rtol=0)
    np.testing.assert_array_equal(clf.predict(Xte), svc.predict(Xte))
    np.testing.assert_array_equal(clf.predict(Xtr), svc.predict(Xtr))


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_multiclass_svc_exact_iris_with_labels(iris, kernel):
    Xtr, ytr, Xte, _ = iris
    names = np.array(["setosa", "versicolor", "virginica"])
    for shape in ("ovo", "ovr"):
        for break_ties in (False, True):
            if break_ties and shape == "ovo":
                continue
            svc = SVC(decision_function_shape=shape, break_ties=break_ties,
                      **_params(kernel, SVC)).fit(Xtr, names[ytr])
            clf = ExpansionClassifier.from_estimator(svc)
            np.testing.assert_allclose(clf.decision_function(Xte), svc.decision_function(Xte),
                                       atol=1e-10, rtol=0)
            np.testing.assert_array_equal(clf.predict(Xte), svc.predict(Xte))
            assert clf.predict(Xte).dtype == svc.predict(Xte).dtype


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "sigmoid"])
def test_one_vs_one_classifier_exact(digits, kernel):
    Xtr, ytr, Xte, _ = digits
    # a numeric gamma: with "scale" every pair computes its own (see the error test)
    ovo = OneVsOneClassifier(SVC(**_params(kernel, SVC), **(
        {} if kernel == "sigmoid" else {"gamma": 0.05}))).fit(Xtr, ytr)
    psi = KernelExpansion.from_estimator(ovo)
    assert psi.n_outputs == 45
    # identical rows of different pairs stored once: every training point at most once
    all_sv = np.concatenate([m.support_vectors_ for m in ovo.estimators_])
    assert psi.n_terms == np.unique(all_sv, axis=0).shape[0] < all_sv.shape[0]
    assert np.unique(psi.vectors, axis=0).shape[0] == psi.n_terms
    # column p is minus the p-th binary machine's decision function (positive: first class)
    for p in (0, 17, 44):
        np.testing.assert_allclose(psi.output(p).decision_function(Xte),
                                   -ovo.estimators_[p].decision_function(Xte), atol=1e-10)
    clf = ExpansionClassifier.from_estimator(ovo)
    np.testing.assert_allclose(clf.decision_function(Xte), ovo.decision_function(Xte),
                               atol=1e-10, rtol=0)
    np.testing.assert_array_equal(clf.predict(Xte), ovo.predict(Xte))


def test_one_vs_one_classifier_binary_and_ovr(iris, digits):
    Xtr, ytr, Xte, _ = iris
    keep = ytr < 2
    ovo = OneVsOneClassifier(SVC(C=1.0)).fit(Xtr[keep], ytr[keep])
    clf = ExpansionClassifier.from_estimator(ovo)
    np.testing.assert_allclose(clf.decision_function(Xte), ovo.decision_function(Xte),
                               atol=1e-10)
    np.testing.assert_array_equal(clf.predict(Xte), ovo.predict(Xte))
    Xtr, ytr, Xte, _ = digits
    ovr = OneVsRestClassifier(SVC(C=10, gamma=0.5)).fit(Xtr, ytr)
    clf = ExpansionClassifier.from_estimator(ovr)
    assert clf.scheme == "ovr"
    np.testing.assert_allclose(clf.decision_function(Xte), ovr.decision_function(Xte),
                               atol=1e-10)
    np.testing.assert_array_equal(clf.predict(Xte), ovr.predict(Xte))
    svc = SVC(C=10).fit(Xtr, ytr == 3)
    clf = ExpansionClassifier.from_estimator(svc)
    assert clf.scheme == "binary"
    np.testing.assert_allclose(clf.decision_function(Xte), svc.decision_function(Xte),
                               atol=1e-10)
    np.testing.assert_array_equal(clf.predict(Xte), svc.predict(Xte))


def test_ovr_aggregation_matches_sklearn():
    rng = np.random.default_rng(0)
    for k in (2, 3, 5):
        F = rng.normal(size=(50, k * (k - 1) // 2))
        F[:5] = 0.0  # exact ties: sklearn counts f = 0 as a vote for the first class
        np.testing.assert_allclose(ovr_decision_function(F, k),
                                   _ovr_decision_function(F < 0, -F, k), atol=1e-15)
        votes = ovo_votes(F, k)
        np.testing.assert_array_equal(votes.sum(axis=1), k * (k - 1) // 2)
    i, j = ovo_pairs(4)
    np.testing.assert_array_equal(i, [0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(j, [1, 2, 3, 2, 3, 3])
    with pytest.raises(ValueError, match="need 3 columns"):
        ovr_decision_function(np.ones((2, 4)), 3)


def test_conversion_errors_name_the_cause(digits):
    Xtr, ytr, _, _ = digits
    Xs, ys = Xtr[:100], ytr[:100]
    with pytest.raises(TypeError, match=r"kernel=<function.*'kernel' parameter"):
        KernelExpansion.from_estimator(SVC(kernel=lambda a, b: a @ b.T).fit(Xs, ys))
    K = Xs @ Xs.T
    with pytest.raises(TypeError, match="kernel='precomputed'"):
        KernelExpansion.from_estimator(SVC(kernel="precomputed").fit(K, ys))
    with pytest.raises(TypeError, match="precomputed"):
        KernelExpansion.from_estimator(OneVsOneClassifier(SVC(kernel="precomputed")).fit(K, ys))
    with pytest.raises(ValueError, match="different kernels.*give the SVC a numeric gamma"):
        KernelExpansion.from_estimator(OneVsOneClassifier(SVC()).fit(Xs, ys))
    from sklearn.linear_model import RidgeClassifier

    with pytest.raises(TypeError, match="estimators_ hold a RidgeClassifier"):
        KernelExpansion.from_estimator(OneVsOneClassifier(RidgeClassifier()).fit(Xs, ys))
    from scipy import sparse

    with pytest.raises(TypeError, match="sparse"):
        KernelExpansion.from_estimator(SVC().fit(sparse.csr_matrix(Xs), ys))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        KernelExpansion.from_estimator(SVC())
    with pytest.raises(NotFittedError):
        KernelExpansion.from_estimator(OneVsOneClassifier(SVC()))
    with pytest.raises(TypeError, match="Cannot build a kernel classifier from SVR"):
        ExpansionClassifier.from_estimator(SVR().fit(Xs, ys))


def test_expansion_classifier_validation_and_round_trip(tmp_path, digits):
    Xtr, ytr, Xte, _ = digits
    svc = SVC(C=10, gamma=0.5).fit(Xtr, ytr)
    clf = ExpansionClassifier.from_estimator(svc)
    sparsekm.save(clf, tmp_path / "clf.skm")
    back = sparsekm.load(tmp_path / "clf.skm")
    assert isinstance(back, ExpansionClassifier)
    np.testing.assert_array_equal(back.decision_function(Xte), clf.decision_function(Xte))
    np.testing.assert_array_equal(back.predict(Xte), svc.predict(Xte))
    assert clf.n_vectors_ == svc.support_vectors_.shape[0]
    with pytest.raises(ValueError, match="needs an expansion with 45 output"):
        ExpansionClassifier(clf.expansion.output(0), svc.classes_).predict(Xte)
    with pytest.raises(ValueError, match="'scheme' parameter"):
        ExpansionClassifier(clf.expansion, svc.classes_, scheme="magic").predict(Xte)
    with pytest.raises(TypeError, match="must be a KernelExpansion"):
        ExpansionClassifier(None, svc.classes_).predict(Xte)
    with pytest.raises(ValueError, match="X has 3 features"):
        clf.predict(np.ones((2, 3)))
