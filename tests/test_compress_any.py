"""compress for regressors, one-class SVMs and kernel PCA (issue 36)."""

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.decomposition import KernelPCA
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as gpk
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVR, OneClassSVM

import sparsekm
from sparsekm.compression import compress as compress_any
from sparsekm.models import ExpansionOutlierDetector, ExpansionRegressor, ExpansionTransformer

X, y = make_friedman1(n_samples=500, noise=0.3, random_state=0)
Xtr, ytr, Xva, yva = X[:300], y[:300], X[300:400], y[300:400]
Xte = X[400:]


def _rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


@pytest.fixture(scope="module")
def krr():
    return KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2).fit(Xtr, ytr)


def test_kernel_ridge_candidates_and_choice(krr):
    small = compress_any(krr, Xva, yva, n_vectors=30, X_train=Xtr, y_train=ytr,
                         random_state=0, n_init=2, max_iter=50)
    assert isinstance(small, ExpansionRegressor)
    rep = small.compress_report_
    methods = [r["method"] for r in rep["rows"]]
    assert methods == ["construct", "construct+refine", "refit", "nystroem-uniform",
                       "nystroem-kmeans"]
    assert small.n_vectors_ <= 30
    chosen = rep["rows"][rep["chosen"]]
    ok = [r for r in rep["rows"] if r["status"] in ("ok", "chosen")]
    assert chosen["val_error"] == min(r["val_error"] for r in ok)
    # the reported numbers recomputed independently
    pred = small.predict(Xva)
    assert chosen["rmse"] == pytest.approx(_rmse(pred, yva), rel=1e-10)
    f = krr.predict(Xva)
    assert chosen["agreement"] == pytest.approx(
        1 - ((pred - f) ** 2).sum() / ((f - f.mean()) ** 2).sum(), rel=1e-10)
    assert rep["full_error"] == pytest.approx(_rmse(f, yva), rel=1e-10)
    # the refit beats plain construction on this problem (ridge on the reduced features)
    by = {r["method"]: r for r in rep["rows"]}
    assert by["refit"]["val_error"] < by["construct"]["val_error"]


def test_kernel_ridge_without_training_data_uses_its_own_rows(krr):
    small = compress_any(krr, Xva, yva, n_vectors=20, method=["construct", "refit"],
                         random_state=0, n_init=2, max_iter=50)
    assert any("X_fit_" in msg for msg in small.compress_report_["messages"])


def test_full_budget_returns_the_original(krr):
    full = compress_any(krr, Xva, yva, n_vectors=300, method=["construct"])
    np.testing.assert_allclose(full.predict(Xte), krr.predict(Xte), rtol=1e-10, atol=1e-10)
    assert full.compress_report_["rows"][0]["method"] == "original"


def test_svr_without_training_data_refuses_the_data_methods():
    svr = SVR(C=10.0, gamma=0.2).fit(Xtr, ytr)
    small = compress_any(svr, Xva, yva, n_vectors=15, random_state=0, n_init=2, max_iter=50)
    status = {r["method"]: r["status"] for r in small.compress_report_["rows"]}
    assert status["refit"] == status["nystroem-uniform"] == "refused"
    assert "X_train" in small.compress_report_["rows"][2]["reason"]


def test_gaussian_process_keeps_a_variance(tmp_path):
    gpr = GaussianProcessRegressor(gpk.ConstantKernel(20.0) * gpk.RBF(2.0) + gpk.WhiteKernel(0.1),
                                   optimizer=None,
                                   normalize_y=True, random_state=0).fit(Xtr[:150], ytr[:150])
    small = compress_any(gpr, Xva, yva, n_vectors=25, random_state=0, n_init=2, max_iter=50)
    mean, std = small.predict(Xte, return_std=True)
    assert np.isfinite(std).all() and (std > 0).all()
    rows = small.compress_report_["rows"]
    assert {r["method"] for r in rows if r["status"] in ("ok", "chosen")} == {
        "construct", "construct+refine", "refit", "nystroem-uniform", "nystroem-kmeans"}
    sparsekm.save(small, tmp_path / "gp.skm")
    back = sparsekm.load(tmp_path / "gp.skm")
    np.testing.assert_array_equal(back.predict(Xte, return_std=True)[1], std)
    assert back.compress_report_["chosen"] == small.compress_report_["chosen"]


def test_one_class_svm():
    oc = OneClassSVM(nu=0.1, gamma=0.3).fit(Xtr)
    with pytest.raises(ValueError, match="y_val must be None"):
        compress_any(oc, Xva, yva, n_vectors=10)
    small = compress_any(oc, Xva, n_vectors=15, X_train=Xtr, random_state=0, n_init=2,
                         max_iter=50)
    assert isinstance(small, ExpansionOutlierDetector)
    rep = small.compress_report_
    chosen = rep["rows"][rep["chosen"]]
    agree = np.mean(small.predict(Xva) == oc.predict(Xva))
    assert chosen["agreement"] == pytest.approx(agree)
    assert 0.5 <= chosen["auc"] <= 1.0


def test_kernel_pca_projection_error():
    kp = KernelPCA(n_components=3, kernel="rbf", gamma=0.2).fit(Xtr)
    small = compress_any(kp, Xva, n_vectors=20, X_train=Xtr, random_state=0, n_init=2,
                         max_iter=50)
    assert isinstance(small, ExpansionTransformer)
    T, T0 = small.transform(Xva), kp.transform(Xva)
    err = ((T - T0) ** 2).sum() / ((T0 - T0.mean(0)) ** 2).sum()
    chosen = small.compress_report_["rows"][small.compress_report_["chosen"]]
    assert chosen["projection_error"] == pytest.approx(err, rel=1e-9)
    assert err < 0.5


def test_options_of_the_classifier_search_refused_with_reason(krr):
    with pytest.raises(ValueError, match="not both"):
        compress_any(krr, Xva, yva, n_vectors=5, max_error_increase=0.01)
    with pytest.raises(ValueError, match="time_limit=5 is implemented for classifiers only"):
        compress_any(krr, Xva, yva, n_vectors=5, time_limit=5)
    with pytest.raises(ValueError, match="needs validation rows"):
        compress_any(krr, None, None, n_vectors=5, X_train=Xtr, y_train=ytr)
    # no clock read unless asked: the seconds are NaN, and two runs give the same report
    a = compress_any(krr, Xva, yva, n_vectors=10, method=["construct", "refit"], random_state=0)
    b = compress_any(krr, Xva, yva, n_vectors=10, method=["construct", "refit"], random_state=0)
    assert all(np.isnan(r["seconds"]) for r in a.compress_report_["rows"])
    assert repr(a.compress_report_) == repr(b.compress_report_)
    np.testing.assert_array_equal(a.expansion_.coef, b.expansion_.coef)


def test_full_budget_gaussian_process_keeps_mean_and_std():
    gpr = GaussianProcessRegressor(gpk.ConstantKernel(20.0) * gpk.Matern(2.0, nu=1.5)
                                   + gpk.WhiteKernel(0.1), optimizer=None,
                                   normalize_y=True).fit(Xtr[:120], ytr[:120])
    # the refit at full budget: Z = the training inputs, the GP's own noise
    full = compress_any(gpr, Xva, yva, n_vectors=120, method=["refit"], random_state=0)
    assert [r["method"] for r in full.compress_report_["rows"]] == ["original", "refit"]
    m, s = full.predict(Xte, return_std=True)
    m0, s0 = gpr.predict(Xte, return_std=True)
    np.testing.assert_allclose(m, m0, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(s, s0, rtol=1e-5, atol=1e-6)


def test_sparsekm_kernel_pca():
    from sparsekm.models import KernelPCA as OwnKernelPCA

    kp = OwnKernelPCA(n_components=3, kernel="rbf", gamma=0.2).fit(Xtr)
    small = compress_any(kp, Xva, n_vectors=20, method=["construct", "refit"], X_train=Xtr,
                         random_state=0, n_init=2, max_iter=50)
    T, T0 = small.transform(Xva), kp.transform(Xva)
    err = ((T - T0) ** 2).sum() / ((T0 - T0.mean(0)) ** 2).sum()
    assert small.compress_report_["rows"][small.compress_report_["chosen"]][
        "projection_error"] == pytest.approx(err, rel=1e-9)


def test_tolerance_mode_smallest_budget_within_the_target(krr):
    small = compress_any(krr, Xva, yva, max_error_increase=0.05, X_train=Xtr, y_train=ytr,
                         method=["construct", "refit"], random_state=0, n_init=2, max_iter=50)
    rep = small.compress_report_
    assert rep["mode"] == "tolerance" and rep["met"]
    target = rep["full_error"] * 1.05
    assert rep["target_error"] == pytest.approx(target)
    chosen = rep["rows"][rep["chosen"]]
    assert chosen["val_error"] <= target
    # every smaller budget walked missed the target
    for r in rep["rows"]:
        if r["budget"] < chosen["budget"] and r["status"] == "ok":
            assert r["val_error"] > target
    assert rep["budget"] == chosen["budget"] == small.n_vectors_


def test_gp_with_a_constant_kernel_term_refits_by_ridge_without_variance():
    gpr = GaussianProcessRegressor(gpk.ConstantKernel(20.0) * gpk.RBF(2.0)
                                   + gpk.ConstantKernel(4.0), alpha=0.1, optimizer=None,
                                   normalize_y=True).fit(Xtr[:150], ytr[:150])
    small = compress_any(gpr, Xva, yva, n_vectors=20, method=["construct", "refit"],
                         random_state=0, n_init=2, max_iter=50)
    status = {r["method"]: r["status"] for r in small.compress_report_["rows"]}
    assert set(status.values()) <= {"ok", "chosen"}
    with pytest.raises(ValueError, match="ConstantKernel"):
        small.predict(Xte, return_std=True)


@pytest.mark.parametrize("make", [
    lambda: GaussianProcessRegressor(gpk.ConstantKernel(2.0) * gpk.RBF(2.0)
                                     + gpk.WhiteKernel(0.1), normalize_y=True,
                                     optimizer=None),
    lambda: SVR(C=3.0, gamma=0.2, epsilon=0.1)])
def test_original_judged_through_its_blocked_expansion_not_predict(make):
    """The original's validation outputs come from its expansion in row blocks (issue 36):
    equal to scikit-learn's predict, which holds K(X_val, X_train) whole and is not called."""
    model = make().fit(Xtr, ytr)
    expected = _rmse(model.predict(Xva), yva)  # scikit-learn's own prediction

    def whole_matrix(*a, **k):
        raise AssertionError("predict holds the whole kernel matrix")

    model.predict = whole_matrix
    small = compress_any(model, Xva, yva, n_vectors=10, X_train=Xtr, y_train=ytr,
                         random_state=0, n_init=1, max_iter=20,
                         method=["refit", "nystroem-uniform"])
    assert small.compress_report_["full_error"] == pytest.approx(expected, rel=1e-9)


def test_construct_refine_reuses_the_construct_set(krr):
    """construct+refine refines the construct row's set (issue 36: built once, not twice).
    That set is the phase-1 set of reduce_expansion(method="construct+refine") with the same
    seed (same objective); the refine never raises it and lands within 1 % of the standalone
    run's phase-2 objective (the same L-BFGS and stopping rule; its stopping iteration may
    differ by rounding)."""
    from sparsekm.reduced_set import reduce_expansion

    small = compress_any(krr, Xva, yva, n_vectors=12, X_train=Xtr, y_train=ytr,
                         random_state=0, n_init=2, max_iter=50,
                         method=["construct", "construct+refine"])
    by = {r["method"]: r for r in small.compress_report_["rows"]}
    assert by["construct+refine"]["variant"] == "refine of the construct set"
    psi = sparsekm.KernelExpansion.from_estimator(krr)
    seed = int(np.random.default_rng(0).integers(2**31))
    alone = reduce_expansion(psi, 12, method="construct+refine", n_init=2, max_iter=50,
                             random_state=seed)
    assert by["construct+refine"]["status"] == "chosen"  # phase 2 lowers the error here

    def objective(e):  # ||Psi - Psi'||^2 in feature space, from kernel sums
        return psi.distance2(e)

    phase1 = alone.info["objective_phase1"]
    start = reduce_expansion(psi, 12, method="construct", n_init=2, max_iter=50,
                             random_state=seed).expansion  # the construct row's set
    assert objective(start) == pytest.approx(phase1, rel=1e-9)
    got = objective(small.expansion_)
    assert got < phase1
    assert got == pytest.approx(alone.objective, rel=1e-2)
    # the validation errors of the two phase-2 results agree closely
    assert by["construct+refine"]["rmse"] == pytest.approx(
        _rmse(alone.expansion.decision_function(Xva), yva), rel=1e-2)
