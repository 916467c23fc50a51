"""The RVM rows of Wu et al. (2006) Table 1 go through ``run_cell`` and the keyed cache."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from sparsekm.kernels import RBF
from sparsekm.models import RVC
from sparsekm.reproduce import _cache as cache_mod
from sparsekm.reproduce import wu2006
from sparsekm.reproduce._cache import CellCache


def _toy(seed=0, n=40, n_test=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 0.5, 1, -1)
    Xt = rng.normal(size=(n_test, 2))
    yt = np.where(Xt[:, 0] ** 2 + Xt[:, 1] > 0.5, 1, -1)
    return X, y, Xt, yt


def _fast(monkeypatch):
    """Fewer alpha re-estimations (speed; the protocol is the same)."""
    monkeypatch.setattr(wu2006, "RVM_OPTIONS", dict(wu2006.RVM_OPTIONS, max_iter=25))


def test_rvm_estimator_is_an_rvc_with_gamma_by_stratified_cv_on_the_training_set(monkeypatch):
    _fast(monkeypatch)
    est = wu2006._rvm_estimator(10.0, RBF(0.5), 7)
    assert isinstance(est, GridSearchCV) and isinstance(est.estimator, RVC)
    gammas = [k.gamma for k in est.param_grid["kernel"]]
    np.testing.assert_allclose(gammas, [0.5 * f for f in sorted(wu2006.RVM_GAMMA_FACTORS)])
    assert isinstance(est.cv, StratifiedKFold) and est.cv.n_splits == 5 == wu2006.RVM_FOLDS
    X, y, Xt, yt = _toy()
    est.fit(X, y)
    assert isinstance(est.best_estimator_, RVC)
    assert est.best_estimator_.kernel.gamma in gammas
    # the refit is RVC on all training data with the chosen gamma: same as fitting by hand
    by_hand = RVC(kernel=RBF(est.best_estimator_.kernel.gamma), **wu2006.RVM_OPTIONS).fit(X, y)
    np.testing.assert_allclose(est.decision_function(Xt), by_hand.decision_function(Xt),
                               rtol=1e-12, atol=1e-12)


def test_rvm_code_key_covers_models_rvm_and_params_cover_the_options(monkeypatch):
    key = wu2006.cell_code_key("rvm")
    slmc_key = wu2006.cell_code_key("slmc")
    assert wu2006.cell_code_key("rvm") == key
    monkeypatch.setitem(cache_mod._SOURCES, "sparsekm.models.rvm", "edited RVC code")
    assert wu2006.cell_code_key("rvm") != key
    assert wu2006.cell_code_key("slmc") == slmc_key  # other methods do not depend on the RVM
    monkeypatch.undo()
    monkeypatch.setattr(wu2006, "_data_key", lambda *a: "data")
    p = wu2006.cell_params("banana", 1, None, "rvm")
    assert p["rvm_gamma_factors"] == list(wu2006.RVM_GAMMA_FACTORS)
    assert p["rvm_folds"] == 5 and p["rvm_options"] == wu2006.RVM_OPTIONS
    monkeypatch.setattr(wu2006, "RVM_GAMMA_FACTORS", (1.0,))
    assert wu2006.cell_params("banana", 1, None, "rvm") != p


def test_rvm_cell_chooses_nothing_on_the_test_set_and_is_cached(tmp_path, monkeypatch):
    """Flipping the test labels flips the error and changes nothing else."""
    monkeypatch.setattr(cache_mod, "_FRESH", set())
    _fast(monkeypatch)
    monkeypatch.setattr(wu2006, "RVM_GAMMA_FACTORS", (0.5, 2.0))
    monkeypatch.setattr(wu2006, "_params", lambda name: (1.0, RBF(1.0)))
    data = _toy(1)
    monkeypatch.setattr(wu2006, "_data_key", lambda name, split, path: f"toy-{name}")
    monkeypatch.setattr(wu2006, "_load", lambda name, split, path: data)
    first = wu2006.run_cell("banana", 1, None, "rvm", CellCache(tmp_path / "a.json"))
    X, y, Xt, yt = data
    monkeypatch.setattr(wu2006, "_load", lambda name, split, path: (X, y, Xt, -yt))
    second = wu2006.run_cell("banana", 1, None, "rvm", CellCache(tmp_path / "b.json"))
    assert second["n_z"] == first["n_z"] and second["ratio_percent"] == first["ratio_percent"]
    np.testing.assert_allclose(second["error"], 1.0 - first["error"], atol=1e-12)
    assert 0.0 <= first["error"] <= 0.3
    # N_z / N_SV in % of the SVM's support vectors, as in the paper's Table 1
    svm = wu2006.run_cell("banana", 1, None, "svm", CellCache(tmp_path / "s.json"))
    np.testing.assert_allclose(first["ratio_percent"], 100.0 * first["n_z"] / svm["n_sv"])
    # a second call (a new process) is a cache hit
    cache_mod._FRESH.clear()
    cache = CellCache(tmp_path / "a.json")
    assert wu2006.run_cell("banana", 1, None, "rvm", cache, compute=False) == first
    assert len(cache.hits) == 1


def _toy3(seed=0, n=60):
    rng = np.random.default_rng(seed)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    y = np.arange(n) % 3
    X = centres[y] + rng.normal(size=(n, 2))
    yt = np.arange(n) % 3
    Xt = centres[yt] + rng.normal(size=(n, 2))
    return X, y, Xt, yt


def test_usps_rvm_cell_is_ten_fast_rvcs_with_the_svm_kernel_and_is_cached(tmp_path, monkeypatch):
    """USPS goes to run_rvm_usps_cell: FastRVC one-vs-rest, the test set only scores."""
    from types import SimpleNamespace

    from sparsekm.models import FastRVC

    monkeypatch.setattr(cache_mod, "_FRESH", set())
    data = _toy3()
    patched = {"_data_key": lambda *a: "toy3", "_load": lambda *a: data,
               "_params": lambda name: (1.0, RBF(0.5))}
    for attr, value in patched.items():
        monkeypatch.setattr(wu2006, attr, value)
    ctx = SimpleNamespace(data_path=None, seed=0, quick=False, cached_only=False)
    cache = CellCache(tmp_path / "u.json")
    out = wu2006._run("usps", 1, None, "rvm", cache, ctx)
    X, y, Xt, yt = data
    F = np.column_stack([FastRVC(kernel=RBF(0.5), **wu2006.RVM_USPS_OPTIONS)
                         .fit(X, np.where(y == c, 1, -1)).decision_function(Xt) for c in range(3)])
    np.testing.assert_allclose(out["error"], np.mean(np.argmax(F, axis=1) != yt), atol=1e-12)
    assert out["error"] < 0.2 and len(out["n_z_per_class"]) == 3
    svm = wu2006.run_cell("usps", 1, None, "svm", cache)
    np.testing.assert_allclose(out["ratio_percent"], 100.0 * out["n_z"] / svm["n_sv"])
    # the run_cell route (IDA protocol) is not used for USPS
    assert wu2006.run_cell("usps", 1, None, "rvm", cache) is None
    # keyed by its own code: the fast RVM's source, not the Tipping (2001) cells' key
    assert wu2006.cell_code_key("rvm_fast") != wu2006.cell_code_key("rvm")
    key = wu2006.cell_code_key("rvm_fast")
    monkeypatch.setitem(cache_mod._SOURCES, "sparsekm.models.fast_rvm", "edited")
    assert wu2006.cell_code_key("rvm_fast") != key
    monkeypatch.undo()
    cache_mod._FRESH.clear()
    again = CellCache(tmp_path / "u.json")
    for attr, value in patched.items():
        monkeypatch.setattr(wu2006, attr, value)
    assert wu2006.run_rvm_usps_cell(again, compute=False) == out
    text = wu2006.rvm_usps_protocol()
    assert "FastRVC" in text and "RBF(1/128)" in text


def test_partial_reason_counts_cached_splits_without_touching_provenance(monkeypatch):
    from types import SimpleNamespace

    from sparsekm.reproduce import wu2006
    from sparsekm.reproduce._cache import CellCache

    cache = CellCache(None)  # in memory; the look goes through CellCache.uncounted
    cache.hits = [{"cell": "x"}]

    def fake_run_cell(name, split, ratio, method, cache_, data_path, seed, compute=True):
        assert compute is False  # never computes
        if split == 1:
            cache_.hits.append({"cell": f"{name}/1/None/rvm", "seconds": 12.0})
            return {"error": 0.1}
        return None

    monkeypatch.setattr(wu2006, "_splits", lambda name, quick: [1, 2, 3])
    monkeypatch.setattr(wu2006, "run_cell", fake_run_cell)
    ctx = SimpleNamespace(cached_only=True, quick=False, data_path=None, seed=0)
    why = wu2006._partial_reason("image", None, "rvm", cache, ctx)
    assert why.startswith("1 of 3 splits in the cache") and "12 s per split" in why
    assert "--datasets image" in why
    assert cache.hits == [{"cell": "x"}]  # the look left the provenance alone
    assert wu2006._partial_reason("image", None, "rvm", cache, SimpleNamespace(
        cached_only=False, quick=False, data_path=None, seed=0)) is None


METHODS = ("svm", "rs", "mrs", "rsvm", "mrsvm", "slmc", "slmc_kmeans", "skfd", "skfd_cv",
           "rvm", "rvm_fast")


def _keys():
    return {m: wu2006.cell_code_key(m) for m in METHODS}


@pytest.mark.parametrize("module, changed", [
    # the private L-BFGS driver runs in every SLMC / SKFD / RSVM cell (it was left out once)
    ("sparsekm.sparse_learning._lbfgs", set(METHODS) - {"svm", "rvm", "rvm_fast"}),
    # the fixed-Z solvers: every direct method, not the SVM or RVM cells
    ("sparsekm.sparse_learning.fixed_z", set(METHODS) - {"svm", "rvm", "rvm_fast"}),
    ("sparsekm.sparse_learning.svm_marginal", set(METHODS) - {"svm", "rvm", "rvm_fast"}),
    # the full SVM is fitted first in every cell
    ("sparsekm.sparse_learning.full_svm", set(METHODS)),
    ("sparsekm.reduced_set.construction", {"rs", "mrs"}),
    ("sparsekm.models.fast_rvm", {"rvm_fast"}),
])
def test_cell_code_key_covers_exactly_the_code_each_method_runs(monkeypatch, module, changed):
    before = _keys()
    monkeypatch.setitem(cache_mod._SOURCES, module, f"edited {module}")
    after = _keys()
    assert {m for m in METHODS if after[m] != before[m]} == changed


def test_usps_rvm_note_quotes_the_time_the_cache_records():
    """Issue 38: the note said "938 s" (typed) where the cache recorded 812 s."""
    from sparsekm.reproduce import wu2006
    from sparsekm.reproduce._cache import CellCache

    cache = CellCache(None)
    cache.hits = [{"cell": "usps/1/None/svm", "seconds": 5.0},
                  {"cell": wu2006.RVM_USPS_CELL, "seconds": 812.4}]
    secs = wu2006._cell_seconds(cache, wu2006.RVM_USPS_CELL)
    assert secs == 812.4
    text = wu2006.rvm_usps_protocol(secs)
    assert "took 812 s as the cell cache records (about 81 s each)" in text
    assert f"needs {wu2006.RVM_CV_FITS} fits (about 6 h at that rate)" in text
    assert "938" not in text
    assert wu2006._cell_seconds(CellCache(None), wu2006.RVM_USPS_CELL) is None
    assert "not in the cache" in wu2006.rvm_usps_protocol(None)
    # the cell name is the runner's
    import inspect

    assert 'f"{name}/{split}/None/rvm_fast"' in inspect.getsource(wu2006.run_rvm_usps_cell)
    assert wu2006.RVM_USPS_CELL == "usps/1/None/rvm_fast"
