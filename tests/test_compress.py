"""sparsekm.compress: the smallest reduced machine within a validation-error tolerance."""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

import sparsekm
from sparsekm.compress import CompressCurve, construct_prefixes
from sparsekm.kernels import RBF
from sparsekm.models import SLMC
from sparsekm.reduced_set import reduce_expansion


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(300, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:150], y[:150])
    return svc, X[:150], y[:150], X[150:], y[150:]


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(300, centers=3, cluster_std=2.5, random_state=1)
    ovr = OneVsRestClassifier(SVC(C=1, gamma=0.2)).fit(X[:150], y[:150])
    return ovr, X[:150], y[:150], X[150:], y[150:]


def compress(*args, **kwargs):
    """sparsekm.compress with cheap construction settings (fast tests)."""
    kwargs.setdefault("n_init", 2)
    kwargs.setdefault("max_iter", 50)
    return sparsekm.compress(*args, **kwargs)


def _check_curve(model, X_val, y_val):
    """The contract: tolerance met, smallest walked, curve consistent with the model."""
    c = CompressCurve(**model.compress_curve_)
    err = float(np.mean(model.predict(X_val) != y_val))
    # the curve's entry for the returned model is the model's own validation error
    np.testing.assert_allclose(c.error[c.chosen], err, rtol=0, atol=1e-15)
    assert c.budget[c.chosen] == model.n_vectors_ == model.expansion_.compress().n_terms
    assert c.met
    assert err <= c.target_error + 1e-12
    # every smaller size walked fails the tolerance: the returned one is the smallest
    for b, e in zip(c.budget, c.error, strict=True):
        if b < c.budget[c.chosen]:
            assert e > c.target_error
    # bisection ends on neighbours: the chosen n_vectors - 1 was walked (unless it is 1)
    n = c.n_vectors[c.chosen]
    assert n == 1 or (n - 1) in c.n_vectors
    return c


def test_binary_svc_meets_tolerance_and_is_smallest(moons):
    svc, Xtr, ytr, Xv, yv = moons
    small = compress(svc, Xv, yv, max_error_increase=0.01, random_state=0)
    c = _check_curve(small, Xv, yv)
    np.testing.assert_allclose(c.full_error, np.mean(svc.predict(Xv) != yv))
    assert c.full_budget == svc.support_.size
    assert small.n_vectors_ < svc.support_.size
    assert c.search == "prefix"


def test_deterministic(moons):
    svc, Xtr, ytr, Xv, yv = moons
    a = compress(svc, Xv, yv, max_error_increase=0.01, X_train=Xtr, y_train=ytr,
                          random_state=3)
    b = compress(svc, Xv, yv, max_error_increase=0.01, X_train=Xtr, y_train=ytr,
                          random_state=3)
    assert a.compress_curve_ == b.compress_curve_
    np.testing.assert_array_equal(a.expansion_.vectors, b.expansion_.vectors)
    np.testing.assert_array_equal(a.expansion_.coef, b.expansion_.coef)
    _check_curve(a, Xv, yv)


@pytest.mark.parametrize("shared", [False, True])
def test_prefixes_equal_direct_construction(blobs, shared):
    ovr, Xtr, ytr, Xv, yv = blobs
    psi = sparsekm.KernelExpansion.from_estimator(ovr)
    prefix = construct_prefixes(psi, 9, shared=shared, random_state=5)
    for m in (2, 5, 9):
        direct = reduce_expansion(psi, m, method="construct", shared=shared,
                                  random_state=5).expansion
        got = prefix(m)
        assert got.n_terms == direct.n_terms
        np.testing.assert_allclose(got.decision_function(Xv), direct.decision_function(Xv),
                                   rtol=1e-8, atol=1e-8)


def test_ovr_with_training_thresholds(blobs):
    ovr, Xtr, ytr, Xv, yv = blobs
    small = compress(ovr, Xv, yv, max_error_increase=0.01, X_train=Xtr, y_train=ytr,
                              random_state=0)
    c = _check_curve(small, Xv, yv)
    # per-class reduced sets: the budget counts the vectors of all three classes
    assert c.budget[c.chosen] <= 3 * c.n_vectors[c.chosen]
    assert small.refit_intercept is True
    np.testing.assert_array_equal(small.classes_, ovr.classes_)


def test_refit_search_other_method(moons):
    svc, Xtr, ytr, Xv, yv = moons
    small = compress(svc, Xv, yv, max_error_increase=0.02, method="select-l1",
                              random_state=0)
    c = _check_curve(small, Xv, yv)
    assert c.search == "refit"
    # selection keeps support vectors only
    sv = {tuple(v) for v in svc.support_vectors_}
    assert all(tuple(v) in sv for v in small.expansion_.vectors)


def test_sparsekm_model_and_expansion(moons):
    svc, Xtr, ytr, Xv, yv = moons
    slmc = SLMC(n_vectors=20, C=10.0, kernel=RBF(1.0), max_iter=20, random_state=0).fit(Xtr, ytr)
    small = compress(slmc, Xv, yv, max_error_increase=0.02, random_state=0)
    c = _check_curve(small, Xv, yv)
    assert c.full_budget == 20 and small.n_vectors_ <= 20
    psi = sparsekm.KernelExpansion.from_estimator(svc)
    small2 = compress(psi, Xv, yv, max_error_increase=0.01, random_state=0)
    _check_curve(small2, Xv, yv)


def test_save_load_and_plot(moons, tmp_path):
    svc, Xtr, ytr, Xv, yv = moons
    small = compress(svc, Xv, yv, max_error_increase=0.01, random_state=0)
    sparsekm.save(small, tmp_path / "m.skm")
    back = sparsekm.load(tmp_path / "m.skm")
    np.testing.assert_array_equal(back.predict(Xv), small.predict(Xv))
    assert back.compress_curve_ == small.compress_curve_
    from sparsekm.plotting import compress_curve
    path = compress_curve(small, path=tmp_path / "c.png")
    assert (tmp_path / "c.png").stat().st_size > 0 and path.endswith("c.png")


def test_cli_reduce_max_error_increase(moons, tmp_path, capsys):
    import joblib

    from sparsekm.cli import main
    svc, Xtr, ytr, Xv, yv = moons
    joblib.dump(svc, tmp_path / "m.joblib")
    np.savetxt(tmp_path / "val.csv", np.column_stack([Xv, yv]), delimiter=",")
    rc = main(["reduce", str(tmp_path / "m.joblib"), "--trust-pickle", "--quiet",
               "--max-error-increase", "0.01", "--validation", str(tmp_path / "val.csv"),
               "-o", str(tmp_path / "s.skm")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "<- chosen" in out and "validation error" in out
    assert (tmp_path / "s.png").stat().st_size > 0
    small = sparsekm.load(tmp_path / "s.skm")
    direct = sparsekm.compress(svc, Xv, yv, max_error_increase=0.01, random_state=0)
    assert small.n_vectors_ == direct.n_vectors_
    # without -n and without --max-error-increase: a usage error, exit code 2
    with pytest.raises(SystemExit) as exc:
        main(["reduce", str(tmp_path / "m.joblib"), "--trust-pickle", "-o",
              str(tmp_path / "x.skm")])
    assert exc.value.code == 2
    assert "--n-vectors" in capsys.readouterr().err


def test_bad_input(moons):
    svc, Xtr, ytr, Xv, yv = moons
    Xnan = Xv.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN|infinity|finite"):
        compress(svc, Xnan, yv)
    with pytest.raises(ValueError, match="y_val"):
        compress(svc, Xv, yv[:-1])
    with pytest.raises(ValueError, match="max_error_increase"):
        compress(svc, Xv, yv, max_error_increase=-0.1)
    with pytest.raises(ValueError, match="method"):
        compress(svc, Xv, yv, method="magic")
    with pytest.raises(ValueError, match="both X_train and y_train"):
        compress(svc, Xv, yv, X_train=Xtr)
    with pytest.raises(ValueError, match="features"):
        compress(svc, np.hstack([Xv, Xv]), yv)
    with pytest.raises(ValueError, match="labels the model does not know"):
        compress(svc, Xv, yv + 5)
    with pytest.raises(ValueError, match="not fitted|fitted"):
        compress(SVC(), Xv, yv)
    with pytest.raises(TypeError, match="expansion_|fit it first"):
        compress(SLMC(), Xv, yv)
    with pytest.raises(TypeError, match="KernelExpansion"):
        compress("model.skm", Xv, yv)


def test_one_vs_one_svc_clear_error_or_supported(blobs):
    ovr, Xtr, ytr, Xv, yv = blobs
    ovo = SVC(C=1, gamma=0.2).fit(Xtr, ytr)
    try:
        sparsekm.KernelExpansion.from_estimator(ovo)
    except (TypeError, ValueError):
        with pytest.raises(TypeError, match="one-vs-one"):
            compress(ovo, Xv, yv)
        return
    # a sparsekm that can represent one-vs-one SVCs reduces them through
    # ReducedSetClassifier at every size walked
    small = compress(ovo, Xv, yv, max_error_increase=0.02, X_train=Xtr, y_train=ytr,
                              random_state=0)
    _check_curve(small, Xv, yv)
