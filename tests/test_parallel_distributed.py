"""joblib on a real multi-process ``dask.distributed.LocalCluster``.

The one-vs-rest fits run on the cluster's worker processes through
``joblib.parallel_backend("dask")`` and give exactly the in-memory sequential
result; a dask array is predicted chunk by chunk on the workers. Each worker's cache
budget is read from dask's config (``sparsekm.cache-bytes``/``-fraction``).
"""


import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
joblib = pytest.importorskip("joblib")

from sklearn.datasets import make_blobs  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from sparsekm.kernels import RBF  # noqa: E402
from sparsekm.models import SLMC, ReducedSetClassifier  # noqa: E402


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(n_samples=120, centers=4, n_features=3, cluster_std=1.5, random_state=1)


# Workers may run with another BLAS thread count than the client (other rounding of
# reductions, amplified a little by the optimisers): agreement to 1e-9, not bits.
_SAME = dict(rtol=1e-9, atol=1e-11)


def _assert_same_machine(a, b):
    np.testing.assert_allclose(a.expansion_.vectors, b.expansion_.vectors, **_SAME)
    np.testing.assert_allclose(a.expansion_.coef, b.expansion_.coef, **_SAME)
    np.testing.assert_allclose(a.expansion_.intercept, b.expansion_.intercept, **_SAME)


def _ran_on_cluster(dask_client, fit):
    with distributed.get_task_stream(dask_client) as ts:
        with joblib.parallel_backend("dask"):
            model = fit()
    workers = {t["worker"] for t in ts.data}
    return model, len(ts.data), workers


def test_one_vs_rest_fits_on_a_cluster_equal_the_sequential_path(dask_client, blobs):
    X, y = blobs
    ovr = OneVsRestClassifier(SVC(C=10.0, gamma=0.5)).fit(X, y)
    rs_params = dict(n_vectors=3, n_init=2, max_iter=40, random_state=0)
    rs_ref = ReducedSetClassifier(ovr, **rs_params).fit(X, y)
    rs, n_tasks, workers = _ran_on_cluster(
        dask_client, lambda: ReducedSetClassifier(ovr, n_jobs=2, **rs_params).fit(X, y))
    assert n_tasks >= 1 and workers  # the per-class reductions ran on the workers
    _assert_same_machine(rs, rs_ref)
    np.testing.assert_allclose(rs.objective_, rs_ref.objective_, **_SAME)

    # tol=1e-3: every problem converges (in at most 9 iterations), no cap warning
    slmc_params = dict(n_vectors=3, C=10.0, kernel=RBF(0.5), max_iter=40, tol=1e-3,
                       random_state=0)
    slmc_ref = SLMC(**slmc_params).fit(X, y)
    # n_jobs=None inside the context: joblib gives the dask backend all workers
    slmc, n_tasks, _ = _ran_on_cluster(dask_client, lambda: SLMC(**slmc_params).fit(X, y))
    assert n_tasks >= 1
    _assert_same_machine(slmc, slmc_ref)
    np.testing.assert_allclose(slmc.objective_, slmc_ref.objective_, **_SAME)
    assert slmc.score(X, y) > 0.8

    # Predicting a dask array on the workers: the numpy answer.
    Xd = da.from_array(X, chunks=(35, 3))
    for model in (rs, slmc):
        labels = dask_client.compute(model.predict(Xd)).result()
        np.testing.assert_array_equal(labels, model.predict(X))
        scores = dask_client.compute(model.decision_function(Xd)).result()
        np.testing.assert_allclose(scores, model.decision_function(X), rtol=1e-12, atol=1e-12)


def test_cache_budgets_reads_dask_sizes_and_names_bad_keys():
    """sparsekm.cache-bytes given as dask writes sizes ('1GiB') failed with "could not
    convert string to float: '1GiB'"; a non-number fraction did not name its key."""
    dask = pytest.importorskip("dask")
    from sparsekm.approx.dask_cluster import cache_budgets

    class Client:
        def scheduler_info(self):
            return {"workers": {"w1": {"memory_limit": 3000}, "w2": {"memory_limit": 0}}}

    with dask.config.set({"sparsekm.cache-bytes": "1GiB"}):
        assert cache_budgets(Client()) == {"w1": 2.0**30, "w2": 2.0**30}
    with dask.config.set({"sparsekm.cache-bytes": 500}):
        assert cache_budgets(Client()) == {"w1": 500.0, "w2": 500.0}
    assert cache_budgets(Client()) == {"w1": 1000.0, "w2": float("inf")}
    for key, value in (("sparsekm.cache-bytes", "lots"), ("sparsekm.cache-bytes", -1),
                       ("sparsekm.cache-fraction", "half"), ("sparsekm.cache-fraction", 2)):
        with dask.config.set({key: value}), pytest.raises(ValueError, match=key):
            cache_budgets(Client())
