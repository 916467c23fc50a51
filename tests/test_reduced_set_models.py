"""Tests of the reduced-set estimators (sparsekm.models.reduced_set)."""

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_moons
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC, SVR

import sparsekm
from sparsekm import KernelExpansion
from sparsekm.models import ReducedSetClassifier, ReducedSetRegressor, reduce_kernel_pca
from sparsekm.reduced_set import approximation_error


@pytest.fixture(scope="module")
def moons():
    return make_moons(300, noise=0.2, random_state=0)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X, y = X[:450] / 16.0, y[:450]
    return X[:300], y[:300], X[300:], y[300:]


@pytest.mark.parametrize("method", ["construct", "construct+refine", "select-kpca",
                                    "select-backward", "select-l1"])
def test_binary_methods(moons, method):
    X, y = moons
    svc = SVC(C=10, gamma=1.0).fit(X, y)
    clf = ReducedSetClassifier(svc, n_vectors=12, method=method, random_state=0).fit(X, y)
    assert clf.n_vectors_ <= 12
    assert clf.n_support_vectors_ == svc.support_vectors_.shape[0]
    assert clf.expansion_.n_terms == clf.n_vectors_
    # The reduced machine agrees with the SVM on most points.
    agree = np.mean(clf.predict(X) == svc.predict(X))
    assert agree > 0.9
    assert clf.score(X, y) > 0.85
    full = KernelExpansion.from_estimator(svc)
    np.testing.assert_allclose(clf.objective_, approximation_error(full, clf.expansion_),
                               rtol=1e-6, atol=1e-9)


def test_construct_refine_no_worse_than_construct(moons):
    X, y = moons
    svc = SVC(C=10, gamma=1.0).fit(X, y)
    a = ReducedSetClassifier(svc, n_vectors=6, random_state=0).fit(X, y)
    b = ReducedSetClassifier(svc, n_vectors=6, method="construct+refine", random_state=0).fit(X, y)
    assert b.objective_ <= a.objective_ + 1e-12
    c = ReducedSetClassifier(svc, n_vectors=6, n_sweeps=2, random_state=0).fit(X, y)
    assert c.objective_ <= a.objective_ + 1e-12


def test_multiclass_separate_and_shared(digits):
    Xtr, ytr, Xte, yte = digits
    ovr = OneVsRestClassifier(SVC(C=10, gamma=0.5)).fit(Xtr, ytr)
    fast = {"n_init": 3, "max_iter": 50, "random_state": 0}
    sep = ReducedSetClassifier(ovr, n_vectors=6, refit_intercept=False, **fast).fit(Xtr, ytr)
    assert sep.expansion_.n_outputs == 10 and sep.n_vectors_ == 60
    assert sep.decision_function(Xte).shape == (Xte.shape[0], 10)
    shared = ReducedSetClassifier(ovr, n_vectors=40, shared=True, **fast).fit(Xtr, ytr)
    assert shared.n_vectors_ == 40
    base = ovr.score(Xte, yte)
    assert sep.score(Xte, yte) > base - 0.1
    assert shared.score(Xte, yte) > base - 0.1
    # Thresholds: the joint re-fit never has more training errors than the kept ones.
    joint = ReducedSetClassifier(ovr, n_vectors=6, refit_intercept="joint", **fast).fit(Xtr, ytr)
    np.testing.assert_array_equal(joint.expansion_.coef, sep.expansion_.coef)
    assert np.mean(joint.predict(Xtr) != ytr) <= np.mean(sep.predict(Xtr) != ytr)
    # An unfitted OneVsRestClassifier is fitted as given and stays one-vs-rest.
    auto = ReducedSetClassifier(OneVsRestClassifier(SVC(C=10, gamma=0.5)), n_vectors=2,
                                **fast).fit(Xtr, ytr)
    assert auto.scheme_ == "ovr" and auto.expansion_.n_outputs == 10
    assert auto.n_support_vectors_ == sep.n_support_vectors_


def test_shared_selection_methods(digits):
    Xtr, ytr, _, _ = digits
    Xtr, ytr = Xtr[:150], ytr[:150]
    ovr = OneVsRestClassifier(SVC(C=10, gamma=0.5)).fit(Xtr, ytr)
    for method in ("select-kpca", "select-backward", "select-l1"):
        clf = ReducedSetClassifier(ovr, n_vectors=50, method=method, shared=True).fit(Xtr, ytr)
        assert clf.n_vectors_ <= 50
        assert clf.score(Xtr, ytr) > 0.8


def test_regressor():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 6, size=(200, 1))
    y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=200)
    svr = SVR(C=10, gamma=1.0, epsilon=0.05).fit(X, y)
    reg = ReducedSetRegressor(svr, n_vectors=10, random_state=0).fit(X, y)
    assert reg.n_vectors_ == 10 < reg.n_support_vectors_
    np.testing.assert_allclose(reg.predict(X), svr.predict(X), atol=0.1)
    # The refitted intercept is the least-squares one.
    raw = reg.expansion_.decision_function(X) - reg.expansion_.intercept
    assert reg.expansion_.intercept == pytest.approx(np.mean(y - raw))


def test_reduce_kernel_pca():
    X, _ = make_moons(200, noise=0.1, random_state=0)
    kpca = SkKernelPCA(n_components=4, kernel="rbf", gamma=2.0).fit(X)
    res = reduce_kernel_pca(kpca, 30, random_state=0)
    assert res.expansion.n_terms == 30 and res.expansion.n_outputs == 4
    F, G = kpca.transform(X), res.expansion.decision_function(X)
    rel = np.linalg.norm(F - G) / np.linalg.norm(F)
    assert rel < 0.05
    # Separate sets cost more vectors for a similar quality.
    sep = reduce_kernel_pca(kpca, 8, shared=False, random_state=0)
    assert sep.expansion.n_terms == 32


def test_reduce_kernel_pca_sparsekm_model():
    from sparsekm.models import KernelPCA

    X, _ = make_moons(150, noise=0.1, random_state=0)
    kpca = KernelPCA(n_components=3, kernel=sparsekm.RBF(2.0)).fit(X)
    res = reduce_kernel_pca(kpca, 25, random_state=0)
    F, G = kpca.transform(X), res.expansion.decision_function(X)
    assert np.linalg.norm(F - G) / np.linalg.norm(F) < 0.05


def test_persistence_round_trip(tmp_path, moons, digits):
    X, y = moons
    clf = ReducedSetClassifier(SVC(C=10, gamma=1.0), n_vectors=8, random_state=0).fit(X, y)
    sparsekm.save(clf, tmp_path / "clf.skm")
    back = sparsekm.load(tmp_path / "clf.skm")
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    Xtr, ytr, Xte, _ = digits
    multi = ReducedSetClassifier(n_vectors=5, random_state=0).fit(Xtr, ytr)
    sparsekm.save(multi, tmp_path / "multi.skm")
    np.testing.assert_array_equal(sparsekm.load(tmp_path / "multi.skm").predict(Xte),
                                  multi.predict(Xte))
    reg = ReducedSetRegressor(n_vectors=5, random_state=0).fit(X, y.astype(float))
    sparsekm.save(reg, tmp_path / "reg.skm")
    np.testing.assert_array_equal(sparsekm.load(tmp_path / "reg.skm").predict(X), reg.predict(X))


def test_estimator_errors(moons):
    X, y = moons
    with pytest.raises(NotFittedError):
        ReducedSetClassifier().predict(X)
    with pytest.raises(ValueError, match="'method' parameter of ReducedSetClassifier"):
        ReducedSetClassifier(method="magic").fit(X, y)
    with pytest.raises(ValueError, match="'n_vectors' parameter of ReducedSetClassifier"):
        ReducedSetClassifier(n_vectors=0).fit(X, y)
    with pytest.raises(ValueError, match="'refit_intercept' parameter"):
        ReducedSetClassifier(refit_intercept="maybe").fit(X, y)
    with pytest.raises(ValueError, match="'shared' parameter"):
        ReducedSetClassifier(shared="yes").fit(X, y)
    with pytest.raises(TypeError, match="must be an SVC, NuSVC, OneVsOneClassifier"):
        ReducedSetClassifier(LogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="must be an SVR"):
        ReducedSetRegressor(SVC()).fit(X, y)
    with pytest.raises(ValueError, match="positive semi-definite"):
        ReducedSetClassifier(SVC(kernel="sigmoid")).fit(X, y)
    with pytest.raises(ValueError, match="contains NaN"):
        ReducedSetClassifier().fit(np.full_like(X, np.nan), y)
    clf = ReducedSetClassifier(n_vectors=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features"):
        clf.predict(np.ones((2, 3)))


def test_reduce_kernel_pca_errors():
    with pytest.raises(NotFittedError):
        reduce_kernel_pca(SkKernelPCA(n_components=2), 5)
    X, _ = make_moons(50, noise=0.1, random_state=0)
    kpca = SkKernelPCA(n_components=2, kernel="rbf", gamma=2.0).fit(X)
    with pytest.raises(ValueError, match="'method' parameter of reduce_expansion"):
        reduce_kernel_pca(kpca, 5, method="magic")
    with pytest.raises(ValueError, match="'n_vectors' parameter of construct"):
        reduce_kernel_pca(kpca, 0)


# -- one-vs-one: the fitted model is reduced as it is (issue 17) --------------------------
def test_fitted_ovo_svc_is_never_refitted(digits):
    from unittest import mock

    Xtr, ytr, Xte, _ = digits
    svc = SVC(C=10, gamma=0.5).fit(Xtr, ytr)  # scikit-learn's default: one-vs-one
    sv, dual, b = svc.support_vectors_.copy(), svc.dual_coef_.copy(), svc.intercept_.copy()
    fast = {"n_init": 3, "max_iter": 50, "random_state": 0}
    with mock.patch.object(SVC, "fit", side_effect=AssertionError("hidden SVC.fit")) as spy, \
            mock.patch.object(OneVsRestClassifier, "fit",
                              side_effect=AssertionError("hidden OvR fit")) as spy_ovr:
        clf = ReducedSetClassifier(svc, n_vectors=60, **fast).fit(Xtr, ytr)
    assert spy.call_count == 0 and spy_ovr.call_count == 0
    np.testing.assert_array_equal(svc.support_vectors_, sv)
    np.testing.assert_array_equal(svc.dual_coef_, dual)
    np.testing.assert_array_equal(svc.intercept_, b)
    # one reduced set shared by the 45 pairwise machines
    assert clf.scheme_ == "ovo" and clf.expansion_.n_outputs == 45
    assert clf.n_vectors_ == clf.expansion_.n_terms == 60
    assert clf.n_support_vectors_ == sv.shape[0]
    # same decision-function shape as the user's model, and agreement with it
    assert clf.decision_function(Xte).shape == svc.decision_function(Xte).shape == (150, 10)
    agree = np.mean(clf.predict(Xte) == svc.predict(Xte))
    assert agree >= 0.93
    # the reduced pairwise machines approximate the exact ones
    full = KernelExpansion.from_estimator(svc)
    np.testing.assert_allclose(clf.objective_, approximation_error(full, clf.expansion_),
                               rtol=1e-6, atol=1e-9)
    assert np.all(clf.relative_objective_ < 0.5)


def test_ovo_thresholds_are_refit_per_pair(digits):
    from sparsekm.multiclass import ovo_pairs
    from sparsekm.reduced_set import optimal_threshold

    Xtr, ytr, _, _ = digits
    svc = SVC(C=10, gamma=0.5, decision_function_shape="ovo").fit(Xtr, ytr)
    fast = {"n_init": 2, "max_iter": 30, "random_state": 0}
    kept = ReducedSetClassifier(svc, n_vectors=30, refit_intercept=False, **fast).fit(Xtr, ytr)
    refit = ReducedSetClassifier(svc, n_vectors=30, **fast).fit(Xtr, ytr)
    np.testing.assert_array_equal(kept.expansion_.coef, refit.expansion_.coef)
    np.testing.assert_array_equal(kept.expansion_.intercept, svc.intercept_)
    F = kept.expansion_.decision_function(Xtr) - svc.intercept_
    for p, (i, j) in enumerate(zip(*ovo_pairs(10), strict=True)):
        mask = (ytr == i) | (ytr == j)

        def errors(b, p=p, i=i, mask=mask):
            return np.sum((F[mask, p] + b > 0) != (ytr[mask] == i))

        # the re-fitted threshold is training-error optimal on the pair's samples
        best = optimal_threshold(F[mask, p], ytr[mask] == i, b0=svc.intercept_[p])
        assert errors(refit.expansion_.intercept[p]) == errors(best)
        assert errors(refit.expansion_.intercept[p]) <= errors(svc.intercept_[p])
    assert kept.decision_function(Xtr).shape == (300, 45)
    with pytest.raises(ValueError, match="'joint' .* applies to one-vs-rest"):
        ReducedSetClassifier(svc, n_vectors=5, refit_intercept="joint").fit(Xtr, ytr)


def test_unfitted_estimators_are_fitted_as_given(digits):
    from sklearn.multiclass import OneVsOneClassifier

    Xtr, ytr, Xte, _ = digits
    fast = {"n_init": 2, "max_iter": 30, "random_state": 0}
    est = SVC(C=10, gamma=0.5)
    clf = ReducedSetClassifier(est, n_vectors=40, **fast).fit(Xtr, ytr)
    assert not hasattr(est, "support_vectors_")  # cloned, the parameter is untouched
    assert clf.scheme_ == "ovo" and clf.expansion_.n_outputs == 45
    ref = SVC(C=10, gamma=0.5).fit(Xtr, ytr)
    assert clf.n_support_vectors_ == ref.support_vectors_.shape[0]
    ovo = ReducedSetClassifier(OneVsOneClassifier(SVC(C=10, gamma=0.5)), n_vectors=40,
                               **fast).fit(Xtr, ytr)
    assert ovo.scheme_ == "ovo" and ovo.vote_ == "ovo-classifier"
    assert np.mean(ovo.predict(Xte) == ref.predict(Xte)) > 0.9
    # separate sets per pair when asked for
    sep = ReducedSetClassifier(ref, n_vectors=2, shared=False, **fast).fit(Xtr, ytr)
    assert sep.n_vectors_ <= 90
    with pytest.raises(ValueError, match="X has 3 features, but the fitted SVC"):
        ReducedSetClassifier(ref, n_vectors=5).fit(Xtr[:, :3], ytr)


def test_ovo_persistence_round_trip(tmp_path, digits):
    Xtr, ytr, Xte, _ = digits
    svc = SVC(C=10, gamma=0.5, decision_function_shape="ovo").fit(Xtr, ytr)
    clf = ReducedSetClassifier(svc, n_vectors=20, n_init=2, max_iter=30,
                               random_state=0).fit(Xtr, ytr)
    sparsekm.save(clf, tmp_path / "ovo.skm")
    back = sparsekm.load(tmp_path / "ovo.skm")
    assert back.scheme_ == "ovo" and back.decision_function_shape_ == "ovo"
    np.testing.assert_array_equal(back.decision_function(Xte), clf.decision_function(Xte))
    np.testing.assert_array_equal(back.predict(Xte), clf.predict(Xte))
