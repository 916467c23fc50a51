"""compress refuses bad input before any work, naming the parameter or the array, and on a
problem whose answer is known (a linear-kernel SVM is one vector, w) finds it."""

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.svm import SVC

import sparsekm


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(80, noise=0.2, random_state=0)
    return X[:40], y[:40], X[40:], y[40:]


@pytest.fixture(scope="module")
def svc(moons):
    Xtr, ytr, *_ = moons
    return SVC(C=10, gamma=1.0).fit(Xtr, ytr)


@pytest.mark.parametrize("kw, match", [
    (dict(n_vectors=0), r"'n_vectors' parameter of compress must be an int >= 1"),
    (dict(n_vectors=-1), r"'n_vectors' parameter of compress must be an int >= 1"),
    (dict(n_vectors=2.5), r"'n_vectors' parameter of compress must be an int >= 1"),
    (dict(n_vectors=True), r"'n_vectors' parameter of compress must be an int >= 1"),
    (dict(max_error_increase=-0.1), r"'max_error_increase' parameter .* float >= 0.0"),
    (dict(max_error_increase=float("nan")), r"'max_error_increase' parameter .* >= 0.0"),
    (dict(n_vectors=3, max_error_increase=0.01), "not both"),
    (dict(n_vectors=3, method="magic"), r"'method' parameter of compress must be 'auto'"),
    (dict(n_vectors=3, cv=1), "cv=1 applies without validation data"),
    (dict(n_vectors=3, time_limit=-1), r"'time_limit' parameter .* >= 0.0"),
    (dict(n_vectors=3, shared="yes"), r"'shared' parameter of compress must be a bool"),
    (dict(n_vectors=3, n_init=0), r"'n_init' parameter of compress must be an int >= 1"),
    (dict(n_vectors=3, max_iter=0), r"'max_iter' parameter of compress must be an int >= 1"),
])
def test_bad_parameters_are_named(svc, moons, kw, match):
    *_, Xv, yv = moons
    with pytest.raises(ValueError, match=match):
        sparsekm.compress(svc, Xv, yv, **{"method": "construct", **kw})


def _nan_row(X):
    X = X.copy()
    X[5, 1] = np.nan
    return X


@pytest.mark.parametrize("make, match", [
    (lambda Xv, yv: (_nan_row(Xv), yv), "X_val contains NaN"),
    (lambda Xv, yv: (Xv[:, :1], yv), "X_val has 1 features, but the model is expecting 2"),
    (lambda Xv, yv: (Xv, yv[:-1]), r"y_val must be 1-D with one label per row of X_val \(40\)"),
    (lambda Xv, yv: (Xv, None), "Pass both X_val and y_val, or neither"),
    (lambda Xv, yv: (None, yv), "Pass both X_val and y_val, or neither"),
], ids=["nan", "features", "labels", "no-y", "no-X"])
def test_bad_validation_data_is_named(svc, moons, make, match):
    *_, Xv, yv = moons
    with pytest.raises(ValueError, match=match):
        sparsekm.compress(svc, *make(Xv, yv), n_vectors=3, method="construct")


@pytest.mark.parametrize("model, exc, match", [
    ("abc", TypeError, "needs a fitted classifier or a KernelExpansion; got str"),
    (SVC(), ValueError, "SVC is not fitted"),
])
def test_what_is_no_fitted_classifier_is_refused(moons, model, exc, match):
    *_, Xv, yv = moons
    with pytest.raises(exc, match=match):
        sparsekm.compress(model, Xv, yv, n_vectors=3)


@pytest.mark.parametrize("method", ["construct", "construct+refine"])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_a_linear_svm_compresses_to_one_vector_deciding_as_before(moons, method, C):
    """k(x, y) = x.y: sum_i alpha_i k(x_i, x) = w.x, so one vector z with beta z = w is
    exact: the same decisions (agreement 1), the same validation error, no warning."""
    Xtr, ytr, Xv, yv = moons
    lin = SVC(kernel="linear", C=C).fit(Xtr, ytr)
    small = sparsekm.compress(lin, Xv, yv, n_vectors=1, method=method, random_state=0,
                              n_init=2)
    scale = np.abs(lin.decision_function(Xv)).max()
    np.testing.assert_allclose(small.decision_function(Xv), lin.decision_function(Xv),
                               atol=1e-3 * scale)
    row = small.compress_report_["rows"][small.compress_report_["chosen"]]
    assert small.n_vectors_ == 1 and row["agreement"] == 1.0
    assert row["val_error"] == pytest.approx(np.mean(lin.predict(Xv) != yv))


# the methods docs/api.md says need X_train, y_train (stated, not read from the code)
DIRECT = ["uniform-svm", "kmeans-svm", "greedy-svm", "slmc", "slmc-peer"]
REDUCED_SET = ["construct", "construct+refine", "select-kpca", "select-backward", "select-l1"]


@pytest.mark.parametrize("method", DIRECT)
def test_direct_methods_without_training_data_are_refused_with_a_reason(svc, moons, method):
    from .test_compress import compress_checked

    *_, Xv, yv = moons
    small = compress_checked(svc, Xv, yv, n_vectors=3, method=[method, "construct"],
                             random_state=0, n_init=2, max_iter=30)
    rows = {r["method"]: r for r in small.compress_report_["rows"]}
    assert rows[method]["status"] == "refused"
    assert rows[method]["reason"] == "needs the training data (X_train, y_train)"
    assert rows["construct"]["status"] == "chosen"


@pytest.mark.parametrize("method", REDUCED_SET)
def test_a_budget_of_every_support_vector_keeps_the_original(svc, moons, method):
    *_, Xv, yv = moons
    n_sv = svc.support_.size
    small = sparsekm.compress(svc, Xv, yv, n_vectors=n_sv, method=method, random_state=0,
                              n_init=2, max_iter=30)
    row = small.compress_report_["rows"][small.compress_report_["chosen"]]
    assert row["method"] == "original" and row["agreement"] == 1.0
    assert small.n_vectors_ == n_sv
    np.testing.assert_allclose(small.decision_function(Xv), svc.decision_function(Xv),
                               rtol=1e-12, atol=1e-12)


def test_the_candidates_are_the_documented_methods():
    from sparsekm.compression import CANDIDATES

    assert sorted(CANDIDATES) == sorted(DIRECT + REDUCED_SET)


@pytest.mark.parametrize("method", DIRECT + REDUCED_SET)
def test_each_candidate_says_what_it_is_and_whether_it_needs_training_data(method):
    """The candidate interface: a name (its key), a label for the report, and needs_train
    exactly for the direct methods (docs/api.md)."""
    from sparsekm.compression import CANDIDATES

    cand = CANDIDATES[method]
    assert cand.name == method
    assert isinstance(cand.label, str) and cand.label.strip()
    assert bool(cand.needs_train) is (method in DIRECT)
