"""Models fitted on a dask cluster are saved and deployed; bad input on the distributed
paths gets the same clear errors as in memory, and nothing is computed on the client.

* A dask-fitted model holds numpy for everything prediction needs (``O(m^2 + m d)``);
  the ``n``-long ``GreedyBasis.residuals_`` stays a dask array on the cluster and is
  left out by :func:`sparsekm.save` -- never computed on the client -- and the loaded
  model predicts bit for bit as the fitted one, even after the cluster is gone.
* Unknown chunk sizes, a feature count that does not match, NaN/inf in a partition
  (found on the worker that holds it), bad labels, and a cluster that is closed or
  lost in the middle of a fit raise errors naming the problem.
"""

import logging

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

import sparsekm  # noqa: E402
from sparsekm.approx import GreedyBasis  # noqa: E402
from sparsekm.approx.dask_fits import approx_svc_fit_distributed  # noqa: E402
from sparsekm.approx.greedy_distributed import greedy_basis_distributed  # noqa: E402
from sparsekm.kernels import RBF, Polynomial  # noqa: E402
from sparsekm.models import ApproxKFD, ApproxSVC, KernelPCA  # noqa: E402
from sparsekm.reduced_set import reduce_expansion  # noqa: E402
from sparsekm.reduced_set.distributed import DaskExpansion  # noqa: E402


def fit_approx_svc(est, X, y, C, **kw):
    """ApproxSVC's dask fit with explicit solver settings, as ``fit`` takes its result."""
    return est._set_distributed_fit(approx_svc_fit_distributed(est, X, y, C, **kw))



@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4, "out", "in")
    return X, y


def _dask(X, rows=100):
    return da.from_array(X, chunks=(rows,) + X.shape[1:])


@pytest.fixture
def no_client_compute(monkeypatch):
    """Fail if a dask array is computed or converted to numpy in this (the client) process.

    Tasks sent to the cluster's worker processes are unaffected.
    """
    def refuse(*args, **kwargs):
        raise AssertionError("a dask array was computed on the client")

    monkeypatch.setattr(da.Array, "__array__", refuse)
    monkeypatch.setattr(da.Array, "compute", refuse)


@pytest.fixture
def private_cluster():
    """A cluster of its own (one in-process worker) that a test may close."""
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=":0", silence_logs=logging.ERROR)
    client = distributed.Client(cluster, set_as_default=False)
    yield cluster, client
    client.close()
    cluster.close()


_MODELS = {
    "GreedyBasis-kept": (lambda: GreedyBasis(n_basis=8, kernel=RBF(0.5), random_state=0),
                         "transform", {"keep_factor": True}),
    "GreedyBasis-recomputed": (lambda: GreedyBasis(n_basis=8, kernel=RBF(0.5), random_state=0),
                               "transform", {"keep_factor": False}),
    "ApproxKFD": (lambda: ApproxKFD(n_basis=8, kernel=RBF(0.5), random_state=0),
                  "decision_function", None),
    "ApproxSVC": (lambda: ApproxSVC(n_basis=8, kernel=RBF(0.5), solver="lbfgs", max_iter=10,
                                    random_state=0), "decision_function", None),
}


def _fit(name, X, y):
    make, method, keep = _MODELS[name]
    est = make()
    if keep is not None:
        est._fit_dask(_dask(X), **keep)
        assert est.dask_info_["keep_factor"] is keep["keep_factor"]
    elif isinstance(est, GreedyBasis):
        est.fit(_dask(X))
    else:
        est.fit(_dask(X), da.from_array(y, chunks=100))
    return est, method


def _basis(est):
    return est if isinstance(est, GreedyBasis) else est.basis_


# -- saving a model fitted on the cluster ---------------------------------------------------


@pytest.mark.parametrize("name", list(_MODELS))
def test_dask_fitted_model_saves_and_predicts_bit_identically(dask_client, data, name, tmp_path,
                                                               no_client_compute):
    X, y = data
    est, method = _fit(name, X, y)
    gb = _basis(est)
    # What prediction needs is numpy on the client; the n-long residuals stay on the cluster.
    assert isinstance(gb.residuals_, da.Array) and gb.residuals_.shape == (X.shape[0],)
    for attr in ("basis_vectors_", "cholesky_", "basis_indices_"):
        assert type(getattr(gb, attr)) is np.ndarray
    path = tmp_path / "model.skm"
    sparsekm.save(est, path)  # no_client_compute: the residuals are not pulled over
    loaded = sparsekm.load(path)
    assert type(loaded) is type(est)
    lgb = _basis(loaded)
    assert not hasattr(lgb, "residuals_")  # documented: not stored for a dask fit
    assert lgb.mse_ == gb.mse_
    np.testing.assert_array_equal(lgb.basis_indices_, gb.basis_indices_)
    np.testing.assert_array_equal(lgb.cholesky_, gb.cholesky_)
    assert lgb.dask_info_ == gb.dask_info_  # step timings and state mode, as lists
    assert getattr(loaded, "dask_info_", None) == getattr(est, "dask_info_", None)
    np.testing.assert_array_equal(getattr(loaded, method)(X), getattr(est, method)(X))
    if not isinstance(est, GreedyBasis):
        np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    # The fitted model keeps its residuals on the cluster.
    assert isinstance(gb.residuals_, da.Array)


def test_in_memory_fit_still_saves_its_residuals(data, tmp_path):
    X = data[0]
    gb = GreedyBasis(n_basis=8, kernel=RBF(0.5), random_state=0).fit(X)
    sparsekm.save(gb, tmp_path / "gb.skm")
    loaded = sparsekm.load(tmp_path / "gb.skm")
    np.testing.assert_array_equal(loaded.residuals_, gb.residuals_)
    np.testing.assert_array_equal(loaded.transform(X), gb.transform(X))


def test_a_dask_array_itself_is_not_saved(dask_client, data, tmp_path, no_client_compute):
    with pytest.raises(TypeError, match="Cannot save object.*is a dask array.*compute it"):
        sparsekm.save(_dask(data[0]), tmp_path / "x.skm")
    assert not (tmp_path / "x.skm").exists()


def test_model_saved_and_used_after_the_cluster_is_closed(private_cluster, data, tmp_path):
    X, y = data
    cluster, client = private_cluster
    with client.as_current():
        clf = ApproxSVC(n_basis=8, kernel=RBF(0.5), solver="lbfgs", max_iter=10,
                        random_state=0).fit(_dask(X), y)
    scores = clf.decision_function(X)
    client.close()
    cluster.close()
    # Deploy after the cluster is gone: numpy prediction and saving need no cluster.
    np.testing.assert_array_equal(clf.decision_function(X), scores)
    sparsekm.save(clf, tmp_path / "clf.skm")
    np.testing.assert_array_equal(sparsekm.load(tmp_path / "clf.skm").decision_function(X),
                                  scores)


# -- the kernel parameters of a dask fit -------------------------------------------------------


def test_kernel_parameters_of_a_dask_fit_are_the_in_memory_ones(dask_client, data, monkeypatch):
    X, y = data

    def refuse(*args, **kwargs):
        raise AssertionError("a dask array was converted to numpy on the client")

    monkeypatch.setattr(da.Array, "__array__", refuse)  # computing one number is allowed
    # gamma="scale" (the default) needs X.var(): reduced on the workers, one number back.
    gb = GreedyBasis(n_basis=5, random_state=0).fit(_dask(X))
    ref = GreedyBasis(n_basis=5, random_state=0).fit(X)
    np.testing.assert_allclose(gb.kernel_.gamma, ref.kernel_.gamma, rtol=1e-12)
    # The models' gamma / degree / coef0 are used as in memory (they were ignored once).
    params = dict(kernel="poly", degree=2, gamma=0.3, coef0=1.0, n_basis=6, random_state=0)
    kfd = ApproxKFD(**params).fit(_dask(X), y)
    assert kfd.kernel_.to_dict() == ApproxKFD(**params).fit(X, y).kernel_.to_dict()
    svc = ApproxSVC(gamma=0.05, solver="lbfgs", max_iter=5, n_basis=6, random_state=0)
    assert svc.fit(_dask(X), y).kernel_.to_dict() == svc.fit(X, y).kernel_.to_dict()
    assert svc.kernel_.gamma == 0.05


# -- unknown chunk sizes ----------------------------------------------------------------------


def _unknown_rows(X):
    """``X`` as a dask array whose row chunks have unknown (NaN) sizes."""
    parts = [da.from_delayed(dask.delayed(np.array)(X[i:i + 100]), shape=(np.nan, X.shape[1]),
                             dtype=X.dtype) for i in range(0, X.shape[0], 100)]
    return da.concatenate(parts)


def test_unknown_chunk_sizes_are_refused_by_every_fit(dask_client, data, no_client_compute):
    X, y = data
    Xu = _unknown_rows(X)
    assert np.isnan(Xu.shape[0])
    with pytest.raises(ValueError, match="GreedyBasis: X has unknown chunk sizes.*"
                                         "compute_chunk_sizes"):
        GreedyBasis(n_basis=3, kernel=RBF(0.5)).fit(Xu)
    with pytest.raises(ValueError, match="ApproxSVC: X has unknown chunk sizes"):
        ApproxSVC(n_basis=3, kernel=RBF(0.5), solver="lbfgs").fit(Xu, y)
    with pytest.raises(ValueError, match="ApproxKFD: X has unknown chunk sizes"):
        ApproxKFD(n_basis=3, kernel=RBF(0.5)).fit(Xu, y)
    yd = da.from_array(y, chunks=100)
    y_unknown = yd[yd == yd]  # boolean mask: NaN chunk sizes
    with pytest.raises(ValueError, match="ApproxSVC: y has unknown chunk sizes"):
        ApproxSVC(n_basis=3, kernel=RBF(0.5), solver="lbfgs").fit(_dask(X), y_unknown)
    with pytest.raises(ValueError, match="DaskExpansion: vectors has unknown chunk sizes"):
        DaskExpansion(Xu, da.ones(X.shape[0], chunks=100), RBF(0.5))
    a = da.ones(X.shape[0], chunks=100)
    with pytest.raises(ValueError, match="DaskExpansion: coef has unknown chunk sizes"):
        DaskExpansion(_dask(X), a[a > 0], RBF(0.5))


def test_row_wise_prediction_takes_unknown_chunks(dask_client, data):
    X, y = data
    clf = ApproxSVC(n_basis=8, kernel=RBF(0.5), solver="lbfgs", max_iter=10,
                    random_state=0).fit(X, y)
    keep = X[:, 0] > 0
    Xm = _dask(X)[da.from_array(keep, chunks=100)]
    out = clf.decision_function(Xm)
    assert isinstance(out, da.Array) and np.isnan(out.shape[0])
    np.testing.assert_allclose(out.compute(), clf.decision_function(X[keep]), rtol=1e-12,
                               atol=1e-12)


# -- feature counts ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GreedyBasis-kept", "ApproxKFD", "ApproxSVC"])
def test_mismatched_features_after_a_dask_fit(dask_client, data, name, no_client_compute):
    X, y = data
    est, method = _fit(name, X, y)
    owner = type(est).__name__
    msg = f"X has 2 features, but {owner} is expecting 3 features as input"
    with pytest.raises(ValueError, match=msg):
        getattr(est, method)(da.zeros((10, 2), chunks=5))  # before any graph is built
    with pytest.raises(ValueError, match=msg):
        getattr(est, method)(np.zeros((10, 2)))
    if not isinstance(est, GreedyBasis):
        with pytest.raises(ValueError, match=msg):
            est.predict(da.zeros((10, 2), chunks=5))


# -- NaN / inf in a partition (found by the worker that holds it) -----------------------------


@pytest.mark.parametrize("keep", [True, False], ids=["factor-kept", "recomputed"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_or_inf_in_one_partition_is_found_on_the_worker(dask_client, data, keep, value,
                                                            no_client_compute):
    X = data[0].copy()
    X[250, 1] = value  # only the third partition holds it
    what = "NaN" if np.isnan(value) else "infinity"
    with pytest.raises(ValueError, match=f"X contains {what}"):
        greedy_basis_distributed(_dask(X), RBF(0.5), 4, first=0, keep_factor=keep)


def test_nan_in_a_partition_fails_the_model_fits(dask_client, data, no_client_compute):
    X, y = data
    Xbad = X.copy()
    Xbad[123, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        ApproxSVC(n_basis=4, kernel=RBF(0.5), solver="lbfgs", random_state=0).fit(
            _dask(Xbad), y)
    with pytest.raises(ValueError, match="X contains NaN"):
        ApproxKFD(n_basis=4, kernel=RBF(0.5), random_state=0).fit(_dask(Xbad), y)


def test_bad_dask_labels_get_the_in_memory_errors(dask_client, data, no_client_compute):
    X, y = data
    Xd = _dask(X)
    ok = np.where(y == "out", 1.0, 0.0)
    # A NaN among labels {1, NaN} would make a "binary" problem if NaN counted as a class.
    y_nan = np.where(y == "out", 1.0, np.nan)
    for est in (ApproxSVC(n_basis=3, kernel=RBF(0.5), solver="lbfgs"),
                ApproxKFD(n_basis=3, kernel=RBF(0.5))):
        for bad in (y_nan, np.where(np.arange(300) == 7, np.inf, ok)):
            what = "NaN" if np.isnan(bad).any() else "infinity"
            with pytest.raises(ValueError, match=f"y contains {what}; class labels must be finite"):
                est.fit(Xd, da.from_array(bad, chunks=100))
            # the same error as the in-memory fit, and for dask X with numpy y
            with pytest.raises(ValueError, match=f"y contains {what}; class labels must be finite"):
                est.fit(X, bad)
            with pytest.raises(ValueError, match=f"y contains {what}; class labels must be finite"):
                est.fit(Xd, bad)
        with pytest.raises(ValueError, match="Unknown label type: continuous"):
            est.fit(Xd, da.from_array(X[:, 1], chunks=60))
        # Many classes: each partition reports at most a few labels to the client.
        with pytest.raises(ValueError, match="Only binary classification.*at least 6 class"):
            est.fit(Xd, da.arange(300, chunks=100) % 10)
        with pytest.raises(ValueError, match="one label per row of X"):
            est.fit(Xd, da.from_array(ok[:, None], chunks=100))


# -- a cluster that is gone --------------------------------------------------------------------


def test_fit_on_a_closed_default_client_is_a_clear_error(private_cluster, data,
                                                         no_client_compute):
    X, y = data
    cluster, client = private_cluster
    client.close()
    with client.as_current():
        for fit in (lambda: GreedyBasis(n_basis=3, kernel=RBF(0.5)).fit(_dask(X)),
                    lambda: ApproxSVC(n_basis=3, kernel=RBF(0.5), solver="lbfgs").fit(
                        _dask(X), y),
                    lambda: ApproxKFD(n_basis=3, kernel=RBF(0.5)).fit(_dask(X), y)):
            with pytest.raises(RuntimeError, match="client is 'closed'.*closed or gone"):
                fit()
        with pytest.raises(RuntimeError, match="DaskExpansion.*closed or gone"):
            DaskExpansion(_dask(X), da.ones(300, chunks=100), RBF(0.5))


def test_cluster_lost_during_the_greedy_steps(private_cluster, data, no_client_compute):
    cluster, client = private_cluster
    steps = []

    def close_after_two(j, seconds):
        steps.append(j)
        if j == 2:
            cluster.close()

    with pytest.raises(RuntimeError, match="GreedyBasis: the dask cluster is closed or gone"):
        greedy_basis_distributed(_dask(data[0]), RBF(0.5), 8, first=0, keep_factor=True,
                                 client=client, callback=close_after_two)
    assert steps == [1, 2]  # it stopped at the first step after the loss


def test_cluster_lost_during_the_lbfgs_evaluations(private_cluster, data, no_client_compute):
    X, y = data
    cluster, client = private_cluster
    iterations = []

    def close_after_two(theta):
        iterations.append(theta)
        if len(iterations) == 2:
            cluster.close()

    with client.as_current():
        with pytest.raises(RuntimeError, match="ApproxSVC: the dask cluster is closed or gone"):
            fit_approx_svc(ApproxSVC(n_basis=6, kernel=RBF(0.5), solver="lbfgs",
                                     random_state=0), _dask(X), y, 1.0, max_iter=50,
                           callback=close_after_two)
    assert len(iterations) == 2


def test_reduce_expansion_after_the_cluster_is_gone(private_cluster, no_client_compute):
    cluster, client = private_cluster
    rng = np.random.default_rng(1)
    dpsi = DaskExpansion(_dask(rng.normal(size=(200, 2))), _dask(rng.normal(size=200)),
                         RBF(0.5), client=client)
    client.close()
    cluster.close()
    with pytest.raises(RuntimeError, match="the dask cluster is closed or gone"):
        reduce_expansion(dpsi, 2, n_init=1, max_iter=3)
    with pytest.raises(RuntimeError, match="DaskExpansion: the dask cluster is closed or gone"):
        dpsi.inner(np.zeros((1, 2)))


# -- reduce_expansion of a DaskExpansion with bad input ----------------------------------------


def test_dask_expansion_refuses_bad_input(dask_client, no_client_compute):
    rng = np.random.default_rng(2)
    V, a = rng.normal(size=(200, 2)), rng.normal(size=200)
    Vd, ad = _dask(V), _dask(a)
    with pytest.raises(TypeError, match="vectors must be a dask array"):
        DaskExpansion(V, ad, RBF(0.5))
    with pytest.raises(TypeError, match="kernel must be a sparsekm.kernels.Kernel"):
        DaskExpansion(Vd, ad, "rbf")
    with pytest.raises(ValueError, match="coef must have one row per expansion vector: "
                                         "expected 200 rows, found 199"):
        DaskExpansion(Vd, ad[:-1], RBF(0.5))
    with pytest.raises(ValueError, match="coef must be 1-D"):
        DaskExpansion(Vd, da.ones((200, 2), chunks=100), RBF(0.5))
    with pytest.raises(ValueError, match="vectors must be a 2-D array"):
        DaskExpansion(ad, ad, RBF(0.5))
    dpsi = DaskExpansion(Vd, ad, RBF(0.5))
    with pytest.raises(ValueError, match="Z has 3 features, but DaskExpansion is expecting 2"):
        dpsi.inner(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Z has 3 features, but DaskExpansion is expecting 2"):
        dpsi.fixed_point_sums(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Z contains NaN"):
        dpsi.inner(np.full((1, 2), np.nan))
    with pytest.raises(ValueError, match="method='construct' only"):
        reduce_expansion(dpsi, 3, method="construct+refine")
    with pytest.raises(ValueError, match="method='construct' only"):
        reduce_expansion(dpsi, 3, shared=True)
    with pytest.raises(ValueError, match="n_vectors"):
        reduce_expansion(dpsi, 0)
    with pytest.raises(ValueError, match="needs a radial kernel"):
        reduce_expansion(DaskExpansion(Vd, ad, Polynomial(degree=2)), 2)


@pytest.mark.parametrize("where", ["vectors", "coef"])
def test_dask_expansion_with_nan_or_inf_is_found_on_the_worker(dask_client, where,
                                                               no_client_compute):
    rng = np.random.default_rng(3)
    V, a = rng.normal(size=(200, 2)), rng.normal(size=200)
    if where == "vectors":
        V[150, 0] = np.nan
    else:
        a[150] = np.inf
    what = "NaN" if where == "vectors" else "infinity"
    dpsi = DaskExpansion(_dask(V), _dask(a), RBF(0.5))
    with pytest.raises(ValueError, match=f"{where} contains {what}"):
        reduce_expansion(dpsi, 2, n_init=1, max_iter=3)
    with pytest.raises(ValueError, match=f"{where} contains {what}"):
        dpsi.inner(np.zeros((1, 2)))


# -- KernelPCA: no silent numpy for dask input ------------------------------------------------


def test_kernel_pca_preimages_refuse_dask_and_transform_stays_lazy(dask_client, data):
    X = data[0]
    kpca = KernelPCA(n_components=3, kernel=RBF(0.5)).fit(X[:60])
    Xd = _dask(X[:40], 20)
    with pytest.raises(TypeError, match="denoise does not take a dask array"):
        kpca.denoise(Xd)
    with pytest.raises(TypeError, match="is a dask.array.*needs X in memory"):
        kpca.inverse_transform(kpca.transform(Xd))
    B = kpca.transform(Xd)
    assert isinstance(B, da.Array)
    np.testing.assert_allclose(B.compute(), kpca.transform(X[:40]), rtol=1e-12, atol=1e-12)
