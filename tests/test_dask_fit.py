"""Fits on dask arrays run on the cluster and equal the in-memory fits.

Algorithm 1 over the partitions selects the same pivots as the in-memory pivoted
Cholesky; ApproxKFD's scatter matrices and ApproxSVC's L-BFGS map-reduce give the
in-memory decision functions. Nothing is computed on the client instead, and bad
input on the distributed paths gets a clear error.
"""

import logging

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from sparsekm.approx import GreedyBasis  # noqa: E402
from sparsekm.approx.dask_cluster import get_client  # noqa: E402
from sparsekm.approx.dask_fits import approx_svc_fit_distributed  # noqa: E402
from sparsekm.approx.greedy_distributed import greedy_basis_distributed  # noqa: E402
from sparsekm.kernels import RBF  # noqa: E402
from sparsekm.models import ApproxKFD, ApproxSVC, KernelFisherDiscriminant, KernelPCA  # noqa: E402


def fit_approx_svc(est, X, y, C, **kw):
    """ApproxSVC's dask fit with explicit solver settings, as ``fit`` takes its result."""
    return est._set_distributed_fit(approx_svc_fit_distributed(est, X, y, C, **kw))



@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(360, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] ** 2 > 1.4, "out", "in")
    return X, y


def _dask(X, rows=100):
    return da.from_array(X, chunks=(rows, X.shape[1]))


@pytest.mark.parametrize("keep", [True, False], ids=["factor-kept", "recomputed"])
def test_greedy_basis_over_partitions_equals_in_memory(dask_client, data, keep):
    X = data[0]
    ref = GreedyBasis(n_basis=12, tol=0.0, kernel=RBF(0.4), random_state=3).fit(X)
    gb = GreedyBasis(n_basis=12, tol=0.0, kernel=RBF(0.4), random_state=3)
    gb._fit_dask(_dask(X, 70), keep_factor=keep)  # 6 partitions, the last one short
    assert gb.dask_info_["keep_factor"] is keep
    np.testing.assert_array_equal(gb.basis_indices_, ref.basis_indices_)
    np.testing.assert_array_equal(gb.basis_vectors_, ref.basis_vectors_)
    np.testing.assert_allclose(np.tril(gb.cholesky_), np.tril(ref.cholesky_), rtol=0, atol=1e-10)
    np.testing.assert_allclose(gb.residuals_.compute(), ref.residuals_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(gb.mse_, ref.mse_, rtol=1e-10)
    assert gb.n_kernel_evaluations_ == ref.n_kernel_evaluations_
    np.testing.assert_allclose(gb.transform(X), ref.transform(X), rtol=0, atol=1e-10)


def test_greedy_basis_tol_max_diag_and_default_kernel(dask_client, data):
    X = data[0]
    # max-diag with an RBF kernel: every k(x, x) = 1, the tie goes to row 0 as in memory.
    # tol stops both at the same step; kernel=None reduces X.var() on the workers.
    ref = GreedyBasis(n_basis=40, tol=0.3, init="max-diag").fit(X)
    gb = GreedyBasis(n_basis=40, tol=0.3, init="max-diag").fit(_dask(X))
    assert gb.basis_indices_[0] == 0
    assert ref.n_basis_ < 40  # tol, not n_basis, ended the selection
    np.testing.assert_allclose(gb.kernel_.gamma, ref.kernel_.gamma, rtol=1e-12)
    np.testing.assert_array_equal(gb.basis_indices_, ref.basis_indices_)
    Gd = gb.fit_transform(_dask(X))
    assert isinstance(Gd, da.Array)
    np.testing.assert_allclose(Gd.compute(), ref.transform(X), rtol=0, atol=1e-9)


@pytest.mark.parametrize("dask_y", [True, False])
def test_approx_kfd_scatter_reduced_over_partitions(dask_client, data, dask_y):
    X, y = data
    params = dict(n_basis=15, C=1e-3, kernel=RBF(0.5), random_state=0)
    ref = ApproxKFD(**params).fit(X, y)
    yd = da.from_array(y, chunks=50) if dask_y else y  # chunks differ from X's: rechunked
    kfd = ApproxKFD(**params).fit(_dask(X), yd)
    np.testing.assert_array_equal(kfd.classes_, ref.classes_)
    np.testing.assert_array_equal(kfd.basis_.basis_indices_, ref.basis_.basis_indices_)
    f_ref = ref.decision_function(X)
    np.testing.assert_allclose(kfd.decision_function(X), f_ref, rtol=0,
                               atol=1e-8 * np.abs(f_ref).max())
    np.testing.assert_array_equal(kfd.predict(X), ref.predict(X))


def test_lbfgs_solver_in_memory_is_the_squared_hinge_optimum(data):
    X, y = data
    clf = ApproxSVC(C=10.0, n_basis=12, kernel=RBF(0.5), solver="lbfgs", random_state=0).fit(X, y)
    G = clf.basis_.transform(X)
    ys = np.where(y == clf.classes_[1], 1.0, -1.0)
    w = clf.basis_.cholesky_.T @ clf.coef_
    b = clf.intercept_
    h = np.maximum(0.0, 1.0 - ys * (G @ w + b))
    # Stationarity of 1/2 ||w||^2 + C sum h^2 (free bias): w = 2 C G^T (y h), sum y h = 0.
    # The Newton phase ends at the optimum up to rounding (L-BFGS alone left ~1e-6 of w).
    scale = np.abs(w).max()
    np.testing.assert_allclose(w, 2 * 10.0 * G.T @ (ys * h), rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(2 * 10.0 * np.sum(ys * h), 0.0, atol=1e-10 * scale)
    # Squared vs plain hinge on the same Gamma: about the same training accuracy.
    smo = ApproxSVC(C=10.0, n_basis=12, kernel=RBF(0.5), random_state=0).fit(X, y)
    assert abs(clf.score(X, y) - smo.score(X, y)) <= 0.05


@pytest.mark.parametrize("keep", [True, False], ids=["features-kept", "recomputed"])
def test_approx_svc_lbfgs_map_reduce_equals_in_memory(dask_client, data, keep):
    X, y = data
    params = dict(C=10.0, n_basis=10, kernel=RBF(0.5), solver="lbfgs", max_iter=25,
                  random_state=0)
    ref = ApproxSVC(**params).fit(X, y)
    clf = fit_approx_svc(ApproxSVC(**params), _dask(X), da.from_array(y, chunks=100), 10.0,
                         max_iter=25, keep_features=keep)
    assert clf.dask_info_["keep_features"] is keep
    np.testing.assert_array_equal(clf.basis_.basis_indices_, ref.basis_.basis_indices_)
    f_ref = ref.decision_function(X)
    np.testing.assert_allclose(clf.decision_function(X), f_ref, rtol=0,
                               atol=1e-6 * np.abs(f_ref).max())
    assert clf.n_iter_ == 25  # not converged in 25 steps: the same L-BFGS path


@pytest.fixture(scope="module")
def data_10d():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 10))
    y = np.where(np.sin(X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=4000) > 0, 1, 0)
    return X, y


@pytest.mark.parametrize("chunks", [(1000,) * 4, (1700, 1, 900, 1399)], ids=["4", "uneven"])
@pytest.mark.parametrize("budget", [1e12, 0], ids=["kept", "recomputed"])
def test_approx_svc_default_lbfgs_equals_in_memory_whatever_the_partitions(
        dask_client, data_10d, chunks, budget):
    # Issue 38, item 10: the default rule (L-BFGS to a relative change of 1e-6, then
    # Newton steps to the optimum) ends at a point of the data, not of the summation
    # order; L-BFGS stopped by the tolerance alone differed by 1.2e-2 relative.
    import dask

    X, y = data_10d
    params = dict(n_basis=40, kernel=RBF(gamma=0.2), C=1, solver="lbfgs", random_state=0)
    ref = ApproxSVC(**params).fit(X, y)
    with dask.config.set({"sparsekm.cache-bytes": budget}):
        clf = ApproxSVC(**params).fit(da.from_array(X, chunks=(chunks, 10)), y)
    assert clf.dask_info_["features_partitions_kept"] == (4 if budget else 0)
    np.testing.assert_array_equal(clf.basis_.basis_indices_, ref.basis_.basis_indices_)
    Xt = np.random.default_rng(5).normal(size=(500, 10))
    f_ref = ref.decision_function(Xt)
    rel = np.abs(clf.decision_function(Xt) - f_ref).max() / np.abs(f_ref).max()
    assert rel <= 1e-6
    assert clf.dask_info_["n_newton_steps"] >= 1


def test_fits_never_pull_the_data_to_the_client(dask_client, data, monkeypatch):
    X, y = data
    Xd, yd = _dask(X), da.from_array(y, chunks=100)

    def refuse(*args, **kwargs):
        raise AssertionError("a dask array was converted to numpy on the client")

    monkeypatch.setattr(da.Array, "__array__", refuse)
    gb = GreedyBasis(n_basis=6, kernel=RBF(0.5), random_state=0).fit(Xd)
    assert gb.n_basis_ == 6
    ApproxKFD(n_basis=6, kernel=RBF(0.5), random_state=0).fit(Xd, yd)
    ApproxSVC(n_basis=6, kernel=RBF(0.5), solver="lbfgs", max_iter=3,
              random_state=0).fit(Xd, yd)
    # Estimators without a distributed fit refuse instead of computing in memory.
    with pytest.raises(TypeError, match="is a dask.array.*needs X in memory.*compute"):
        KernelFisherDiscriminant(kernel=RBF(0.5)).fit(Xd, y)
    with pytest.raises(TypeError, match="partial_fit takes in-memory batches"):
        GreedyBasis().partial_fit(Xd)


def test_distributed_paths_validate(dask_client, data):
    X, y = data
    Xd = _dask(X)
    unknown = Xd[da.from_array(X[:, 0] > 0, chunks=100)]  # boolean mask: NaN chunk sizes
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        GreedyBasis(n_basis=3).fit(unknown)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        ApproxKFD(n_basis=3).fit(unknown, y[:10])
    with pytest.raises(ValueError, match="one label per row of X"):
        ApproxKFD(n_basis=3).fit(Xd, y[:-1])
    with pytest.raises(ValueError, match="one label per row of X"):
        ApproxKFD(n_basis=3).fit(Xd, da.from_array(y[:-1], chunks=100))
    with pytest.raises(ValueError, match="Only binary classification"):
        ApproxKFD(n_basis=3).fit(Xd, np.arange(X.shape[0]) % 3)
    with pytest.raises(ValueError, match="needs basis='greedy' and solver='lbfgs'"):
        ApproxSVC(n_basis=3).fit(Xd, y)  # default solver "smo" needs Gamma in one process
    with pytest.raises(ValueError, match="X has 2 features, but ApproxKFD is expecting 3"):
        ApproxKFD(n_basis=3, kernel=RBF(0.5), random_state=0).fit(Xd, y).predict(
            da.zeros((10, 2), chunks=5))
    bad = da.from_array(np.where(np.arange(360)[:, None] == 200, np.nan, X), chunks=(100, 3))
    with pytest.raises(ValueError, match="X contains NaN"):
        GreedyBasis(n_basis=3, kernel=RBF(0.5), random_state=0).fit(bad)
    kpca = KernelPCA(n_components=2, kernel=RBF(0.5)).fit(X[:50])
    with pytest.raises(TypeError, match="denoise does not take a dask array"):
        kpca.denoise(Xd)


def test_a_closed_cluster_is_a_clear_error(data):
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster:
        client = distributed.Client(cluster, set_as_default=False)
        assert get_client(client) is client
        client.close()
    with pytest.raises(RuntimeError, match="closed or gone"):
        greedy_basis_distributed(_dask(data[0]), RBF(0.5), 3, first=0, client=client)


def test_reduce_expansion_of_dask_vectors_uses_partition_sums(dask_client):
    from sparsekm import KernelExpansion
    from sparsekm.reduced_set import reduce_expansion
    from sparsekm.reduced_set._base import optimal_coefficients
    from sparsekm.reduced_set.distributed import DaskExpansion

    rng = np.random.default_rng(1)
    Xv, a = rng.normal(size=(300, 2)), rng.normal(size=300)
    psi = KernelExpansion(Xv, a, RBF(0.5))
    dpsi = DaskExpansion(da.from_array(Xv, chunks=(150, 2)), da.from_array(a, chunks=100),
                         RBF(0.5))
    Z = rng.normal(size=(4, 2))
    # The kernel sums over the partitions equal the in-memory ones.
    np.testing.assert_allclose(dpsi.inner(Z), RBF(0.5)(Z, Xv) @ a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dpsi.norm2(), psi.norm2(), rtol=1e-12)
    den, num = dpsi.fixed_point_sums(Z)
    s = RBF(0.5).weighted_sums(Xv, Z, np.repeat(a[:, None], 4, axis=1), derivative=True,
                               moment=True)
    np.testing.assert_allclose(den, s.total, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(num, s.moment, rtol=1e-12, atol=1e-12)
    res = reduce_expansion(dpsi, 3, n_init=2, max_iter=6)  # few map-reduces: keep CI fast
    red = res.expansion
    assert red.n_terms == 3
    # beta is Proposition 8 for the constructed Z, and the objective is the in-memory
    # ||Psi - Psi'||^2 of the result.
    np.testing.assert_allclose(red.coef, optimal_coefficients(psi, red.vectors), rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(res.objective, psi.distance2(red), rtol=1e-8, atol=1e-10)
    assert np.all(np.diff(res.objective_path) <= 1e-12) and res.objective < psi.norm2()
    with pytest.raises(ValueError, match="method='construct' only"):
        reduce_expansion(dpsi, 5, method="select-kpca")


# -- partial caching: as much per-partition state as the budget holds -------------------------

#: bytes of one 70-row partition's greedy state at m = 12, d = 3 (X, L, se, diag, |x|^2)
_STATE_70 = 70 * (8 * (3 + 12 + 2) + 8)


def test_cache_plan_keeps_what_the_budget_holds(dask_client):
    import dask

    from sparsekm.approx.dask_cluster import cache_budgets, plan_cache

    sizes = [100.0] * 7
    with dask.config.set({"sparsekm.cache-bytes": 250}):
        assert set(cache_budgets(dask_client).values()) == {250.0}
        homes = plan_cache("auto", dask_client, sizes)
    # two per worker (2 workers), in row order, spread over both workers
    assert [h is not None for h in homes] == [True] * 4 + [False] * 3
    assert len(set(homes[:4])) == 2
    assert None not in plan_cache(True, dask_client, sizes)
    assert plan_cache(False, dask_client, sizes) == [None] * 7
    with dask.config.set({"sparsekm.cache-fraction": 0.0}):
        assert plan_cache("auto", dask_client, sizes) == [None] * 7
    with dask.config.set({"sparsekm.cache-fraction": 1.5}), \
            pytest.raises(ValueError, match="cache-fraction must be in"):
        plan_cache("auto", dask_client, sizes)
    with pytest.raises(ValueError, match="keep_factor must be True, False or 'auto'"):
        plan_cache("yes", dask_client, sizes)


@pytest.mark.parametrize("budget, n_kept", [(None, 6), (0, 0), (2 * _STATE_70 + 1, 4),
                                            (_STATE_70, 2)],
                         ids=["all", "none", "two-per-worker", "one-per-worker"])
def test_greedy_basis_partial_cache_equals_in_memory(dask_client, data, budget, n_kept):
    import dask

    X = data[0]
    ref = GreedyBasis(n_basis=12, tol=0.0, kernel=RBF(0.4), random_state=3).fit(X)
    gb = GreedyBasis(n_basis=12, tol=0.0, kernel=RBF(0.4), random_state=3)
    cfg = {} if budget is None else {"sparsekm.cache-bytes": budget}
    with dask.config.set(cfg):
        gb._fit_dask(_dask(X, 70))  # 6 partitions (the last of 10 rows), keep_factor="auto"
    assert (gb.dask_info_["partitions_kept"], gb.dask_info_["n_partitions"]) == (n_kept, 6)
    assert gb.dask_info_["keep_factor"] is (n_kept == 6)
    np.testing.assert_array_equal(gb.basis_indices_, ref.basis_indices_)
    np.testing.assert_array_equal(gb.basis_vectors_, ref.basis_vectors_)
    np.testing.assert_allclose(np.tril(gb.cholesky_), np.tril(ref.cholesky_), rtol=0, atol=1e-10)
    np.testing.assert_allclose(gb.residuals_.compute(), ref.residuals_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(gb.mse_, ref.mse_, rtol=1e-10)


def test_approx_svc_same_model_whatever_is_cached(dask_client, data):
    import dask

    X, y = data
    params = dict(C=10.0, n_basis=10, kernel=RBF(0.5), solver="lbfgs", max_iter=25,
                  random_state=0)
    fits = {}
    # all kept (unbounded budget), none kept, and part kept: Gamma of a 100-row partition
    # at m = 10 takes 8 * 100 * 12 = 9,600 bytes, its greedy state 100 * (8 * 15 + 8).
    for name, budget in [("all", 1e12), ("none", 0), ("half", 10_000)]:
        cfg = {"sparsekm.cache-bytes": budget}
        with dask.config.set(cfg):
            # stopped on the objective's relative change: a rounding difference in L_r
            # between the modes would move the stopping iteration and the model
            fits[name] = fit_approx_svc(ApproxSVC(**params), _dask(X),
                                        da.from_array(y, chunks=100), 10.0, max_iter=1000,
                                        tol=1e-6)
    info = {k: (c.dask_info_["factor_partitions_kept"], c.dask_info_["features_partitions_kept"])
            for k, c in fits.items()}
    assert info["all"] == (4, 4) and info["none"] == (0, 0)
    assert 0 < info["half"][0] < 4 and 0 < info["half"][1] < 4
    f_all = fits["all"].decision_function(X)
    for name in ("none", "half"):
        np.testing.assert_array_equal(fits[name].basis_.basis_indices_,
                                      fits["all"].basis_.basis_indices_)
        np.testing.assert_allclose(fits[name].basis_.cholesky_, fits["all"].basis_.cholesky_,
                                   rtol=0, atol=0)  # the client builds L_r in every mode
        np.testing.assert_allclose(fits[name].decision_function(X), f_all, rtol=0,
                                   atol=1e-12 * np.abs(f_all).max())
        assert fits[name].n_iter_ == fits["all"].n_iter_ < 1000
