"""sparsekm.compress: the best small classifier for a budget, or the smallest within a
tolerance, chosen on validation data (issue 24)."""

import json

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

import sparsekm
from sparsekm.compression import CompressReport, construct_prefixes
from sparsekm.kernels import RBF
from sparsekm.models import SLMC
from sparsekm.reduced_set import reduce_expansion

# What the docs promise, stated here rather than read from the code under test:
# docs/api.md, compress(method="auto"): the candidates tried, cheap to costly;
DOCUMENTED_AUTO = ["construct", "construct+refine", "kmeans-svm", "uniform-svm", "greedy-svm",
                   "slmc", "slmc-peer"]
# docs/reduced_set.md: the C values the fixed-Z linear SVMs choose among.
DOCUMENTED_C_GRID = (0.1, 1.0, 10.0, 100.0)


def compress_checked(*args, **kwargs):
    """``sparsekm.compress`` with the warning it owes asserted as a stated property: "more
    than ... points above the original's" exactly when the chosen result's selection error
    exceeds the original's by more than the margin (2 points by default, docs/api.md; else
    ``max_error_increase``). Other warnings go on to the caller."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        small = sparsekm.compress(*args, **kwargs)
    rep = small.compress_report_
    best = rep["rows"][rep["chosen"]]
    margin = kwargs.get("max_error_increase")
    margin = 0.02 if margin is None else margin
    worse = best["method"] != "original" and best["val_error"] > rep["full_error"] + margin + 1e-12
    said = [w for w in caught if "points above the original's" in str(w.message)]
    assert len(said) == int(worse), (best["val_error"], rep["full_error"], said)
    # ... and "worse than the uniform-subset Nystrom SVM" exactly when, with training
    # data, the result's selection error exceeds that candidate's at the same budget
    # (compress's docstring); which of the two wins depends on the BLAS kernel's rounding
    uniform = [r["val_error"] for r in rep["rows"] if r["method"] == "uniform-svm"
               and r["budget"] == best["budget"] and np.isfinite(r["val_error"])
               and r["status"] in ("ok", "chosen", "reference")]
    beaten = (best["method"] != "original" and kwargs.get("X_train") is not None
              and bool(uniform) and best["val_error"] > uniform[0] + 1e-12)
    said_uniform = [w for w in caught if "worse than the uniform-subset" in str(w.message)]
    assert len(said_uniform) == int(beaten), (best, uniform, said_uniform)
    said += said_uniform
    for w in caught:
        if w not in said:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return small


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(600, noise=0.25, random_state=0)
    svc = SVC(C=10, gamma=1.0).fit(X[:200], y[:200])
    return svc, X[:200], y[:200], X[200:400], y[200:400], X[400:], y[400:]


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(600, centers=4, cluster_std=2.5, random_state=1)
    ovo = SVC(C=1, gamma=0.2).fit(X[:200], y[:200])
    return ovo, X[:200], y[:200], X[200:400], y[200:400], X[400:], y[400:]


def _cheap(**kw):
    kw.setdefault("n_init", 2)
    kw.setdefault("max_iter", 50)
    return kw


def _rows(model):
    return model.compress_report_["rows"]


def _check_choice(model, X_val, y_val):
    """The chosen row is the lowest validation error among usable candidates (ties:
    fewer vectors, then the one tried first), and its numbers are the model's."""
    rows = _rows(model)
    chosen = model.compress_report_["chosen"]
    usable = [i for i, r in enumerate(rows) if r["status"] in ("ok", "chosen")]
    best = min(usable, key=lambda i: (rows[i]["val_error"], rows[i]["n_vectors"], i))
    assert best == chosen and rows[chosen]["status"] == "chosen"
    err = float(np.mean(model.predict(X_val) != y_val))
    np.testing.assert_allclose(rows[chosen]["val_error"], err, rtol=0, atol=1e-15)
    assert rows[chosen]["n_vectors"] == model.n_vectors_ == model.expansion_.merge_duplicates().n_terms
    return rows[chosen]


@pytest.mark.parametrize("which", ["moons", "blobs"])
def test_auto_picks_lowest_validation_error(which, request):
    model, Xtr, ytr, Xv, yv, Xte, yte = request.getfixturevalue(which)
    small = compress_checked(model, Xv, yv, n_vectors=8, X_train=Xtr, y_train=ytr,
                             random_state=0, **_cheap())
    row = _check_choice(small, Xv, yv)
    assert small.n_vectors_ <= 8
    methods = [r["method"] for r in _rows(small)]
    # every auto candidate was tried, cheap to costly
    assert methods[:len(DOCUMENTED_AUTO)] == DOCUMENTED_AUTO
    # each row reports its agreement with the original on the validation data
    for r in _rows(small):
        if r["status"] in ("ok", "chosen"):
            assert 0.0 <= r["agreement"] <= 1.0
            assert isinstance(r["seconds"], float)  # the report records build time (a field)
    agree = float(np.mean(small.predict(Xv) == model.predict(Xv)))
    np.testing.assert_allclose(row["agreement"], agree, atol=1e-15)
    np.testing.assert_array_equal(small.classes_, model.classes_)
    # multi-class: one shared set of at most 8 vectors for all pairwise machines
    assert small.decision_function(Xte).shape[0] == Xte.shape[0]


def test_kmeans_candidate_is_sklearn_nystroem_plus_linear_svc(blobs):
    from sklearn.kernel_approximation import Nystroem
    from sklearn.svm import LinearSVC

    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    small = compress_checked(ovo, Xv, yv, n_vectors=12, X_train=Xtr, y_train=ytr,
                             method="kmeans-svm", random_state=3)
    row = _check_choice(small, Xv, yv)
    C = float(row["variant"].split("=")[1])
    Z = np.asarray(small.expansion_.vectors)
    assert Z.shape == (12, Xtr.shape[1])
    from sklearn.cluster import KMeans
    centres = KMeans(n_clusters=12, n_init=1, random_state=small.random_state).fit(
        Xtr).cluster_centers_
    np.testing.assert_allclose(np.sort(Z, axis=0), np.sort(centres, axis=0), atol=1e-12)
    # scikit-learn's Nystroem with these centres as its landmarks (fitted on the 12
    # centres it keeps all of them, in the order of its own permutation)
    ny = Nystroem(kernel="rbf", gamma=0.2, n_components=12,
                  random_state=small.random_state).fit(centres)
    np.testing.assert_array_equal(ny.components_, Z)
    svm = LinearSVC(C=C, max_iter=5000, random_state=small.random_state).fit(
        ny.transform(Xtr), ytr)
    ref = svm.decision_function(ny.transform(Xte))
    np.testing.assert_allclose(small.decision_function(Xte), ref, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(small.predict(Xte), svm.predict(ny.transform(Xte)))


def _spy_fits(monkeypatch, targets):
    """Record ``(Class.method, X)`` of every call of the given ``(class, method)`` pairs."""
    seen = []

    def spy(cls, name):
        orig = getattr(cls, name)

        def wrapped(self, X, *args, **kwargs):
            seen.append((f"{cls.__name__}.{name}", np.asarray(X)))
            return orig(self, X, *args, **kwargs)
        monkeypatch.setattr(cls, name, wrapped)

    for cls, name in targets:
        spy(cls, name)
    return seen


def test_test_data_never_reach_a_fit_or_a_choice(blobs, monkeypatch):
    from sklearn.cluster import KMeans
    from sklearn.svm import LinearSVC

    from sparsekm.approx import GreedyBasis
    from sparsekm.multiclass import ExpansionClassifier

    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    test_rows = {tuple(r) for r in Xte}
    seen = _spy_fits(monkeypatch, ((LinearSVC, "fit"), (KMeans, "fit"), (GreedyBasis, "fit"),
                                   (SLMC, "fit"), (SVC, "fit"), (ExpansionClassifier, "predict")))
    compress_checked(ovo, Xv, yv, n_vectors=6, X_train=Xtr, y_train=ytr, random_state=0,
                     **_cheap())
    compress_checked(ovo, n_vectors=6, X_train=Xtr, y_train=ytr, random_state=0,
                     method=["construct", "kmeans-svm"], **_cheap())  # CV mode
    names = {n for n, _ in seen}
    assert {"LinearSVC.fit", "KMeans.fit", "GreedyBasis.fit", "SparseLargeMarginClassifier.fit",
            "SVC.fit", "ExpansionClassifier.predict"} <= names
    for name, X in seen:
        assert not any(tuple(r) in test_rows for r in X), name


def test_never_more_vectors_than_the_original(moons):
    svc, Xtr, ytr, Xv, yv, Xte, yte = moons
    n_sv = svc.support_.size
    same = compress_checked(svc, Xv, yv, n_vectors=n_sv + 50, X_train=Xtr, y_train=ytr)
    assert same.n_vectors_ == n_sv
    np.testing.assert_allclose(same.decision_function(Xte), svc.decision_function(Xte),
                               rtol=1e-9, atol=1e-9)
    assert _rows(same)[0]["method"] == "original" and "unchanged" in _rows(same)[0]["reason"]
    # a tolerance: never more than the original either (here an exact copy at worst)
    tol = compress_checked(svc, Xv, yv, max_error_increase=0.0, X_train=Xtr, y_train=ytr,
                           method="construct", random_state=0, **_cheap())
    assert tol.n_vectors_ <= n_sv
    assert all(r["n_vectors"] <= n_sv for r in _rows(tol))


def test_tolerance_mode_meets_target_and_is_smallest_walked(moons):
    svc, Xtr, ytr, Xv, yv, Xte, yte = moons
    small = compress_checked(svc, Xv, yv, max_error_increase=0.01, X_train=Xtr, y_train=ytr,
                             method=["construct", "kmeans-svm"], random_state=0, **_cheap())
    rep = small.compress_report_
    err = float(np.mean(small.predict(Xv) != yv))
    assert rep["mode"] == "tolerance" and err <= rep["target_error"] + 1e-12
    np.testing.assert_allclose(rep["target_error"], rep["full_error"] + 0.01)
    # every budget below the chosen one that was walked failed with every candidate
    for r in rep["rows"]:
        if r["budget"] < small.n_vectors_ and r["status"] == "ok":
            assert r["val_error"] > rep["target_error"]
    assert small.n_vectors_ < svc.support_.size
    # the default tolerance (neither a budget nor a tolerance) is 0.005
    d = compress_checked(svc, Xv, yv, method="construct", random_state=0, **_cheap())
    np.testing.assert_allclose(d.compress_report_["target_error"],
                               d.compress_report_["full_error"] + 0.005)


def test_time_limit_skips_and_reports(blobs):
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    with pytest.warns(UserWarning, match="time limit of 0 s cut the search"):
        small = compress_checked(ovo, Xv, yv, n_vectors=6, X_train=Xtr, y_train=ytr,
                                 time_limit=0.0, random_state=0, **_cheap())
    rows = _rows(small)
    assert rows[0]["method"] == "construct" and rows[0]["status"] == "chosen"
    skipped = [r for r in rows if r["status"] == "skipped"]
    assert [r["method"] for r in skipped] == DOCUMENTED_AUTO[1:]  # all after the first
    assert all("time limit" in r["reason"] for r in skipped)


def test_refusals_and_bad_input(blobs, moons):
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    # select-l1 with a separate set per pair at 5 vectors per pair: refused, with a reason
    with pytest.raises(ValueError, match="no candidate"):
        compress_checked(ovo, Xv, yv, n_vectors=5 * 6, method="select-l1", shared=False)
    small = compress_checked(ovo, Xv, yv, n_vectors=30, method=["select-l1", "construct"],
                             shared=False, random_state=0, **_cheap())
    r = _rows(small)[0]
    assert r["status"] == "refused" and "per binary machine" in r["reason"]
    # direct methods without training data: refused, the RS candidates still run
    small = compress_checked(ovo, Xv, yv, n_vectors=6, random_state=0, **_cheap())
    refused = {r["method"] for r in _rows(small) if r["status"] == "refused"}
    assert refused == {"uniform-svm", "kmeans-svm", "greedy-svm", "slmc", "slmc-peer"}
    assert _rows(small)[small.compress_report_["chosen"]]["method"].startswith("construct")
    svc, Xtr2, ytr2, Xv2, yv2, _, _ = moons
    with pytest.raises(ValueError, match="not both"):
        compress_checked(svc, Xv2, yv2, n_vectors=5, max_error_increase=0.01)
    with pytest.raises(ValueError, match="method"):
        compress_checked(svc, Xv2, yv2, n_vectors=5, method="magic")
    with pytest.raises(ValueError, match="validation data|training data"):
        compress_checked(svc, n_vectors=5)
    with pytest.raises(ValueError, match="both X_train and y_train"):
        compress_checked(svc, Xv2, yv2, X_train=Xtr2)
    Xnan = Xv2.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN|infinity|finite"):
        compress_checked(svc, Xnan, yv2, n_vectors=5)
    with pytest.raises(ValueError, match="features"):
        compress_checked(svc, np.hstack([Xv2, Xv2]), yv2, n_vectors=5)
    with pytest.raises(ValueError, match="labels the model does not know"):
        compress_checked(svc, Xv2, yv2 + 5, n_vectors=5)
    with pytest.raises(TypeError, match="expansion_|fit it first"):
        compress_checked(SLMC(), Xv2, yv2, n_vectors=5)
    with pytest.raises(TypeError, match="KernelExpansion"):
        compress_checked("model.skm", Xv2, yv2, n_vectors=5)


def test_warns_when_worse_than_the_full_machine(moons):
    svc, Xtr, ytr, Xv, yv, Xte, yte = moons
    with pytest.warns(UserWarning, match="above the original"):
        small = sparsekm.compress(svc, Xv, yv, n_vectors=3, method="construct",
                                  random_state=0, **_cheap())
    assert any("above the original" in m for m in small.compress_report_["messages"])


def test_cv_without_validation_data(moons):
    svc, Xtr, ytr, Xv, yv, Xte, yte = moons
    small = compress_checked(svc, n_vectors=8, X_train=Xtr, y_train=ytr, cv=3,
                             method=["construct", "kmeans-svm"], random_state=0, **_cheap())
    rep = small.compress_report_
    assert rep["selection"].startswith("3-fold CV")
    assert small.n_vectors_ <= 8
    # a loaded model cannot be re-trained on the folds: RS candidates refused, with a reason
    exact = sparsekm.multiclass.ExpansionClassifier.from_estimator(svc)
    small = compress_checked(exact, n_vectors=8, X_train=Xtr, y_train=ytr,
                             method=["construct", "kmeans-svm"], random_state=0, **_cheap())
    assert _rows(small)[0]["status"] == "refused" and "re-trained" in _rows(small)[0]["reason"]


def test_save_load_report_and_plot(blobs, tmp_path):
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    small = compress_checked(ovo, Xv, yv, n_vectors=6, X_train=Xtr, y_train=ytr,
                             method=["construct", "uniform-svm"], random_state=0, **_cheap())
    sparsekm.save(small, tmp_path / "m.skm")
    back = sparsekm.load(tmp_path / "m.skm")
    np.testing.assert_array_equal(back.predict(Xte), small.predict(Xte))
    np.testing.assert_array_equal(back.decision_function(Xte), small.decision_function(Xte))
    # the report round-trips exactly (NaN included: compared as JSON text)
    assert json.dumps(dict(back.compress_report_), sort_keys=True) == \
        json.dumps(dict(small.compress_report_), sort_keys=True)
    assert str(CompressReport(back.compress_report_)) == str(small.compress_report_)
    assert "chosen" in small.compress_report_.table()
    path = back.plot_report(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0 and str(path).endswith("r.png")


def test_chosen_method_names_the_direct_winner(blobs, tmp_path):
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    small = compress_checked(ovo, Xv, yv, n_vectors=6, X_train=Xtr, y_train=ytr,
                             method=["kmeans-svm"], random_state=0, **_cheap())
    report = small.compress_report_
    assert report["rows"][report["chosen"]]["method"] == "kmeans-svm"
    assert small.chosen_method_ == "kmeans-svm"
    assert small.get_params()["method"] == "construct"  # only the file format's RS field
    sparsekm.save(small, tmp_path / "m.skm")
    assert sparsekm.load(tmp_path / "m.skm").chosen_method_ == "kmeans-svm"


def test_ovr_and_sparsekm_models(moons, blobs):
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    ovr = OneVsRestClassifier(SVC(C=1, gamma=0.2)).fit(Xtr, ytr)
    small = compress_checked(ovr, Xv, yv, n_vectors=8, X_train=Xtr, y_train=ytr,
                             method=["construct", "construct+refine"], random_state=0,
                             **_cheap())
    _check_choice(small, Xv, yv)
    assert small.scheme_ == "ovr" and small.n_vectors_ <= 8
    svc, Xtr, ytr, Xv, yv, Xte, yte = moons
    with pytest.warns(ConvergenceWarning, match="stopped at max_iter=20"):  # 20 is few
        slmc = SLMC(n_vectors=20, C=10.0, kernel=RBF(1.0), max_iter=20,
                    random_state=0).fit(Xtr, ytr)
    small = compress_checked(slmc, Xv, yv, n_vectors=10, method="construct", random_state=0,
                             **_cheap())
    assert small.n_vectors_ <= 10
    psi = sparsekm.KernelExpansion.from_estimator(svc)
    small = compress_checked(psi, Xv, yv, n_vectors=10, method="construct", random_state=0,
                             **_cheap())
    _check_choice(small, Xv, yv)


@pytest.mark.parametrize("shared", [False, True])
def test_prefixes_equal_direct_construction(blobs, shared):
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    ovr = OneVsRestClassifier(SVC(C=1, gamma=0.2)).fit(Xtr, ytr)
    psi = sparsekm.KernelExpansion.from_estimator(ovr)
    prefix = construct_prefixes(psi, 9, shared=shared, random_state=5)
    for m in (2, 5, 9):
        direct = reduce_expansion(psi, m, method="construct", shared=shared,
                                  random_state=5).expansion
        got = prefix(m)
        assert got.n_terms == direct.n_terms
        np.testing.assert_allclose(got.decision_function(Xv), direct.decision_function(Xv),
                                   rtol=1e-8, atol=1e-8)


def test_cli_reduce_with_train_and_validation(blobs, tmp_path, capsys):
    import joblib

    from sparsekm.cli import main
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    joblib.dump(ovo, tmp_path / "m.joblib")
    np.savetxt(tmp_path / "tr.csv", np.column_stack([Xtr, ytr]), delimiter=",")
    np.savetxt(tmp_path / "val.csv", np.column_stack([Xv, yv]), delimiter=",")
    base = ["--quiet", "reduce", str(tmp_path / "m.joblib"), "--trust-pickle"]
    data = ["--train", str(tmp_path / "tr.csv"), "--validation", str(tmp_path / "val.csv")]
    rc = main([*base, "-n", "6", *data, "--method", "kmeans-svm", "-o", str(tmp_path / "s.skm")])
    out = capsys.readouterr().out
    assert rc == 0 and "kmeans-svm" in out and "chosen" in out and "agree" in out
    assert "total time: " in out  # the report states the total time (issue 39)
    assert (tmp_path / "s.png").stat().st_size > 0
    small = sparsekm.load(tmp_path / "s.skm")
    direct = compress_checked(ovo, Xv, yv, n_vectors=6, X_train=Xtr, y_train=ytr,
                              method="kmeans-svm", random_state=0)
    np.testing.assert_allclose(small.decision_function(Xte), direct.decision_function(Xte))
    rc = main([*base, "--max-error-increase", "0.02", "--validation", str(tmp_path / "val.csv"),
               "--method", "construct", "-o", str(tmp_path / "t.skm")])
    assert rc == 0 and "target: error <=" in capsys.readouterr().out
    # options that do not apply are refused (exit 2), never ignored
    refused = [
        ["-n", "6", "--plot", str(tmp_path / "p.png")],                   # no data: no report
        ["-n", "6", "--method", "auto"],                                  # auto needs data
        ["-n", "6", "--per-class", *data],                                # budget is total
        ["-n", "6", "--max-error-increase", "0.01", *data],               # budget or tolerance
    ]
    for extra in refused:
        with pytest.raises(SystemExit) as exc:
            main([*base, *extra, "-o", str(tmp_path / "u.skm")])
        assert exc.value.code == 2, extra
    assert not (tmp_path / "u.skm").exists()


def test_slmc_tries_the_source_machines_C_first(moons):
    """Wu et al.'s SLMC keeps the SVM's C: the SLMC candidates try the grid values nearest
    the original's C (in log C), nearest first; screening tries that one alone."""
    from sparsekm.compression import CANDIDATES, FULL, SCREEN, SLMC_N_C, Problem
    from sparsekm.compression._search import _source_C
    from sparsekm.multiclass import ExpansionClassifier

    svc, Xtr, ytr, Xv, yv, _, _ = moons
    assert _source_C(svc) == 10.0
    assert _source_C(OneVsRestClassifier(SVC(C=3.0))) == 3.0
    assert _source_C(sparsekm.KernelExpansion.from_estimator(svc)) is None
    exact = ExpansionClassifier.from_estimator(svc)
    problem = Problem(exact, [], None, True, 2, 50, 0, source_C=10.0)
    # |log C - log 10|: 10 first, then 1 and 100 (tied: grid order), then 0.1
    assert problem.C_order() == [10.0, 1.0, 100.0, 0.1]
    assert SLMC_N_C == 2
    def C(name, fidelity):  # C travels as a number; the label is the report's
        vs = CANDIDATES[name].variants(problem, fidelity)
        assert [v.label for v in vs] == [f"C={v.C:g}" for v in vs]
        return [v.C for v in vs]
    for name in ("slmc", "slmc-peer"):
        assert C(name, FULL) == [10.0, 1.0]
        assert C(name, SCREEN) == [10.0]
    assert C("kmeans-svm", FULL) == [0.1, 1.0, 10.0, 100.0]
    assert C("kmeans-svm", SCREEN) == [10.0]
    # without the original's C: nearest to 1
    assert Problem(exact, [], None, True, 2, 50, 0).C_order()[0] == 1.0


def test_time_limit_stop_reason_reaches_the_report(moons):
    """A time limit that expires during the SLMC stops it with the deadline's own stop
    reason (not 'converged'): the row, the messages and a warning say what was cut."""
    svc, Xtr, ytr, Xv, yv, _, _ = moons
    with pytest.warns(UserWarning, match="time limit of 1e-09 s cut the search"):
        small = sparsekm.compress(svc, Xv, yv, n_vectors=5, method=["slmc"], X_train=Xtr,
                                  y_train=ytr, time_limit=1e-9, **_cheap(random_state=0))
    (row,) = _rows(small)
    assert row["variant"] == "C=10"
    # the one SLMC fit that ran stopped at the deadline (after its first L-BFGS iteration)
    assert row["reason"] == ("time limit: 1 SLMC fit(s) stopped at the deadline before "
                             "L-BFGS converged (stop reason: deadline); time limit: C=1 not "
                             "tried")
    assert any(m.startswith("warning: the time limit of 1e-09 s cut the search (slmc: 1 "
                            "SLMC fit(s) stopped; slmc: C=1 not tried)")
               for m in small.compress_report_["messages"])
    assert small.compress_report_["time_limit"] == 1e-9


def test_method_of_a_wrong_type_is_a_clear_error(moons):
    """A method that is neither a name nor a list of names raises a TypeError or
    ValueError naming 'method' (it raised "'int' object is not iterable")."""
    svc, Xtr, ytr, Xv, yv, _, _ = moons
    for bad in (5, None, {"construct"}):
        with pytest.raises(TypeError, match="'method' parameter of compress"):
            compress_checked(svc, Xv, yv, n_vectors=5, method=bad)
    for bad in ([["construct"]], ["construct", 3], []):
        with pytest.raises(ValueError, match="'method' parameter of compress"):
            compress_checked(svc, Xv, yv, n_vectors=5, method=bad)


def test_cli_refuses_time_limit_without_data_and_fractional_labels(moons, tmp_path, capsys):
    """reduce --time-limit without --validation/--train was ignored (one method runs, no
    search to stop); a label 0.5 in VAL was truncated to class 0 in silence."""
    import joblib

    from sparsekm.cli import main
    svc, Xtr, ytr, Xv, yv, _, _ = moons
    joblib.dump(svc, tmp_path / "m.joblib")
    base = ["--quiet", "reduce", str(tmp_path / "m.joblib"), "--trust-pickle"]
    with pytest.raises(SystemExit) as exc:
        main([*base, "-n", "5", "--time-limit", "10", "-o", str(tmp_path / "u.skm")])
    assert exc.value.code == 2 and "--time-limit" in capsys.readouterr().err
    assert not (tmp_path / "u.skm").exists()
    yv_bad = yv.astype(float)
    yv_bad[3] = 0.5
    np.savetxt(tmp_path / "val.csv", np.column_stack([Xv, yv_bad]), delimiter=",")
    rc = main([*base, "-n", "5", "--validation", str(tmp_path / "val.csv"), "--method",
               "construct", "-o", str(tmp_path / "u.skm")])
    assert rc == 1 and "not whole numbers" in capsys.readouterr().err
    assert not (tmp_path / "u.skm").exists()


def test_cv_with_validation_data_is_refused(moons):
    """cv applies only without X_val; cv=5 with X_val was ignored in silence."""
    svc, Xtr, ytr, Xv, yv, _, _ = moons
    with pytest.raises(ValueError, match="cv=5 applies without validation data"):
        compress_checked(svc, Xv, yv, n_vectors=5, method="construct", cv=5)


def test_separate_sets_below_one_vector_per_machine_are_refused(blobs):
    """shared=False with a budget below the number of binary machines built one vector
    per machine anyway (6 for a budget of 3) and reported it as 'failed'; it is refused
    up front now, with the reason."""
    ovo, Xtr, ytr, Xv, yv, _, _ = blobs
    with pytest.raises(ValueError, match="no candidate") as exc:
        compress_checked(ovo, Xv, yv, n_vectors=3, shared=False, method="construct",
                         random_state=0, **_cheap())
    assert "refused" in str(exc.value) and "6 binary machines" in str(exc.value)
    small = compress_checked(ovo, Xv, yv, n_vectors=3, shared=False, X_train=Xtr,
                             y_train=ytr, method=["construct", "kmeans-svm"],
                             random_state=0, **_cheap())
    r = _rows(small)[0]
    assert r["status"] == "refused" and "at least one vector" in r["reason"]
    # refused before any build; untimed by default (no clock read): no seconds
    assert np.isnan(r["seconds"]) and small.n_vectors_ <= 3


def test_bare_expansion_classes_come_from_all_labels(blobs):
    """A bare one-vs-rest KernelExpansion takes its classes from the labels; with
    validation data that miss a class it was refused ('3 classes but 4 outputs') although
    the training data have all four."""
    from sparsekm.multiclass import ExpansionClassifier

    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    ovr = OneVsRestClassifier(SVC(C=1, gamma=0.2)).fit(Xtr, ytr)
    psi = ExpansionClassifier.from_estimator(ovr).expansion
    keep = yv != 3
    small = compress_checked(psi, Xv[keep], yv[keep], n_vectors=8, X_train=Xtr, y_train=ytr,
                             method="construct", random_state=0, **_cheap())
    np.testing.assert_array_equal(small.classes_, [0, 1, 2, 3])
    assert np.mean(small.predict(Xte) == ovr.predict(Xte)) > 0.8


def test_validation_data_never_reach_a_fit(blobs, monkeypatch):
    """compress chooses on X_val and never fits on it (the docstring's promise). The test
    above cannot fail, since compress never receives the test set; this one checks the
    data compress does receive."""
    from sklearn.cluster import KMeans
    from sklearn.svm import LinearSVC

    from sparsekm.approx import GreedyBasis

    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    val_rows = {tuple(r) for r in Xv}
    seen = _spy_fits(monkeypatch, [(cls, "fit") for cls in (LinearSVC, KMeans, GreedyBasis,
                                                            SLMC, SVC)])
    small = compress_checked(ovo, Xv, yv, n_vectors=6, X_train=Xtr, y_train=ytr,
                             random_state=0, **_cheap())
    assert {"LinearSVC.fit", "KMeans.fit", "GreedyBasis.fit",
            "SparseLargeMarginClassifier.fit"} <= {n for n, _ in seen}
    for name, X in seen:
        assert not any(tuple(r) in val_rows for r in X), name
    # the reduced sets' thresholds are re-fitted on the training data only
    assert any("refit" in r["variant"] for r in _rows(small))


def test_bad_construction_settings_are_refused(moons):
    """n_init=0 failed only the reduced-set rows, and auto returned a direct candidate
    without a word outside the report; it is refused up front now."""
    svc, Xtr, ytr, Xv, yv, _, _ = moons
    for kw, name in ((dict(n_init=0), "n_init"), (dict(max_iter=0), "max_iter"),
                     (dict(n_init=1.5), "n_init")):
        with pytest.raises(ValueError, match=f"'{name}' parameter of compress"):
            compress_checked(svc, Xv, yv, n_vectors=5, X_train=Xtr, y_train=ytr,
                             method=["construct", "kmeans-svm"], **kw)


def test_linear_c_search_on_a_subsample_then_all_rows(blobs, monkeypatch):
    """Above ``C_SEARCH_ROWS`` fit rows the fixed-Z linear SVMs try their C values on a
    stratified subsample; the model returned is the chosen C fitted on *all* rows
    (scikit-learn's Nystroem k-means + LinearSVC on the whole training set), and the
    reported validation error is that model's."""
    import importlib

    from sklearn.cluster import KMeans
    from sklearn.kernel_approximation import Nystroem
    from sklearn.svm import LinearSVC

    # the module that reads the constant (the package exports the function compress
    # under the package's own name)
    cm = importlib.import_module("sparsekm.compression._candidates")
    ovo, Xtr, ytr, Xv, yv, Xte, yte = blobs
    monkeypatch.setattr(cm, "C_SEARCH_ROWS", 80)
    seen = []  # (features, labels) of every LinearSVC fit
    orig = LinearSVC.fit
    monkeypatch.setattr(LinearSVC, "fit", lambda self, F, y, *a, **k: (
        seen.append((np.asarray(F), np.asarray(y))), orig(self, F, y, *a, **k))[1])
    small = compress_checked(ovo, Xv, yv, n_vectors=12, X_train=Xtr, y_train=ytr,
                             method="kmeans-svm", random_state=3)
    row = _check_choice(small, Xv, yv)
    assert "C chosen on 80 of 200 rows, then fitted on all" in row["reason"]
    # four C values on 80 stratified rows, then one fit on all 200 (twice: the
    # uniform-subset SVM is built too, as the reference of the "worse than Nystrom" check)
    n_C = len(DOCUMENTED_C_GRID)
    assert [F.shape[0] for F, _ in seen] == ([80] * n_C + [200]) * 2
    assert _rows(small)[-1]["method"] == "uniform-svm"
    F_sub, y_sub = seen[0]
    assert all(np.array_equal(F, F_sub) and np.array_equal(y, y_sub) for F, y in seen[:n_C])
    share = np.bincount(ytr, minlength=4) / ytr.size
    assert np.all(np.abs(np.bincount(y_sub, minlength=4) - 80 * share) <= 1)  # stratified
    # the returned model: the chosen C on all rows, exactly the peer's pipeline
    C = float(row["variant"].split("=")[1])
    centres = KMeans(n_clusters=12, n_init=1, random_state=small.random_state).fit(
        Xtr).cluster_centers_
    ny = Nystroem(kernel="rbf", gamma=0.2, n_components=12,
                  random_state=small.random_state).fit(centres)
    np.testing.assert_array_equal(seen[n_C][0], ny.transform(Xtr))
    svm = LinearSVC(C=C, max_iter=5000, random_state=small.random_state).fit(
        ny.transform(Xtr), ytr)
    np.testing.assert_allclose(small.decision_function(Xte),
                               svm.decision_function(ny.transform(Xte)), rtol=1e-9, atol=1e-9)
    # and C is the one whose subsample fit had the lowest validation error (ties: first)
    errs = [float(np.mean(LinearSVC(C=c, max_iter=5000, random_state=small.random_state)
                          .fit(F_sub, y_sub).predict(ny.transform(Xv)) != yv))
            for c in DOCUMENTED_C_GRID]
    assert C == DOCUMENTED_C_GRID[int(np.argmin(errs))]
    # at or below the threshold nothing changes: every C on all rows, no note
    monkeypatch.setattr(cm, "C_SEARCH_ROWS", 200)
    seen.clear()
    again = compress_checked(ovo, Xv, yv, n_vectors=12, X_train=Xtr, y_train=ytr,
                             method="kmeans-svm", random_state=3)
    assert [F.shape[0] for F, _ in seen] == [200] * n_C * 2
    assert "C chosen" not in _rows(again)[again.compress_report_["chosen"]]["reason"]
    # a subsample only where it saves row-fits: n_C * S + n < n_C * n, i.e.
    # (n_C - 1) n > n_C S. With 200 rows and four C values: S = 150 saves (600 > 600 is
    # false: not used), S = 149 saves (600 > 596)
    for S, sizes in ((150, [200] * n_C), (149, [149] * n_C + [200])):
        monkeypatch.setattr(cm, "C_SEARCH_ROWS", S)
        seen.clear()
        compress_checked(ovo, Xv, yv, n_vectors=12, X_train=Xtr, y_train=ytr,
                         method="kmeans-svm", random_state=3)
        assert [F.shape[0] for F, _ in seen][:len(sizes)] == sizes


def test_linear_c_search_subsample_inside_cv_folds(blobs, monkeypatch):
    """Without validation data the folds search C on their subsamples and the final model
    is fitted once on all training rows."""
    import importlib

    from sklearn.svm import LinearSVC

    cm = importlib.import_module("sparsekm.compression._candidates")
    ovo, Xtr, ytr, *_ = blobs
    monkeypatch.setattr(cm, "C_SEARCH_ROWS", 60)
    seen = _spy_fits(monkeypatch, [(LinearSVC, "fit")])
    small = compress_checked(ovo, n_vectors=12, X_train=Xtr, y_train=ytr,
                             method="uniform-svm", random_state=0, cv=3)
    sizes = [X.shape[0] for _, X in seen]
    assert sizes == [60] * (3 * len(DOCUMENTED_C_GRID)) + [200]
    row = _rows(small)[small.compress_report_["chosen"]]
    assert "C chosen on 60 of 134 rows, then fitted on all" in row["reason"]


@pytest.mark.parametrize("which", ["moons", "blobs"])
def test_near_ties_within_one_standard_error_are_named(which, request):
    """The report names exactly the usable candidates whose validation error is within one
    binomial standard error of the chosen one's; the choice itself is unchanged."""
    svc, Xtr, ytr, Xv, yv, Xte, yte = request.getfixturevalue(which)
    small = compress_checked(svc, Xv, yv, n_vectors=8, X_train=Xtr, y_train=ytr,
                             random_state=0, **_cheap())
    best = _check_choice(small, Xv, yv)
    rows, chosen = _rows(small), small.compress_report_["chosen"]
    p = best["val_error"]
    se = np.sqrt(p * (1 - p) / yv.size)
    expected = [r["method"] for i, r in enumerate(rows) if i != chosen
                and r["status"] == "ok" and r["val_error"] <= p + se + 1e-12]
    notes = [m for m in small.compress_report_["messages"] if m.startswith("near tie")]
    if expected:
        assert len(notes) == 1
        named = [part.rsplit(" ", 2)[0] for part in
                 notes[0][len("near tie: "):].split(" within ")[0].split(", ")]
        assert named == expected
        assert f"{100 * se:.2f} %" in notes[0] and f"{yv.size} points" in notes[0]
    else:
        assert notes == []
    if which == "blobs":  # the rule fires here, so the branch above is exercised
        assert expected, [(r["method"], r["val_error"]) for r in rows]


def test_cv_rebuild_that_errs_beyond_its_cv_estimate_is_refused(moons, monkeypatch):
    """Without validation data the returned model is built again on all the training data
    after the folds chose it; a rebuild whose error on those points exceeds its CV estimate
    by more than ``max(WARN_MARGIN, REBUILD_SE * SE)`` is refused and the next candidate
    chosen. The rebuild of 'construct' is made to predict the opposite class."""
    import importlib

    cm = importlib.import_module("sparsekm.compression._search")
    cc = importlib.import_module("sparsekm.compression._candidates")
    svc, Xtr, ytr, Xv, yv, Xte, yte = moons
    kw = dict(n_vectors=8, X_train=Xtr, y_train=ytr, method=["construct", "kmeans-svm"],
              random_state=0, **_cheap())
    honest = compress_checked(svc, **kw)
    assert [r["status"] for r in _rows(honest)].count("refused") == 0
    build = cc.Construct.build

    class Flipped:
        def __init__(self, clf):
            self._clf = clf

        def __getattr__(self, name):
            return getattr(self._clf, name)

        def predict(self, X):
            return 1 - self._clf.predict(X)

    def build_spy(self, problem, split, *a, **k):
        out = build(self, problem, split, *a, **k)
        return Flipped(out) if split.X_eval is None else out
    monkeypatch.setattr(cc.Construct, "build", build_spy)
    small = compress_checked(svc, **kw)
    rows = _rows(small)
    assert rows[0]["method"] == "construct" and rows[0]["status"] == "refused"
    assert rows[0]["reason"].startswith("rebuilt on all the training data it errs on ")
    # its CV estimate is that of the honest run: only the rebuild changed
    assert rows[0]["val_error"] == _rows(honest)[0]["val_error"]
    assert rows[1]["method"] == "kmeans-svm" and rows[1]["status"] == "chosen"
    err = float(np.mean(small.predict(Xtr) != ytr))
    assert err <= rows[1]["val_error"] + cm._rebuild_margin(rows[1]["val_error"], ytr.size)
    # the margin: two points, or two binomial standard errors where those are larger
    assert cm._rebuild_margin(0.01, 10_000) == cm.WARN_MARGIN
    np.testing.assert_allclose(cm._rebuild_margin(0.3, 100), 2 * np.sqrt(0.3 * 0.7 / 100))
