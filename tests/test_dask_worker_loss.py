"""A worker process that dies during a dask fit: the in-memory result or a clear error,
in bounded time -- never a hang (issue 38, item 9).

The cluster is real: 2 worker processes under nannies (a killed worker is restarted
at a new address). Three ways to lose a worker:

* the client kills (SIGKILL) a worker that holds kept per-partition state, between
  two greedy steps or two L-BFGS evaluations: the partitions it kept are recomputed
  from the dask graph from then on, and the fit equals the in-memory fit;
* a partition's task kills its own process on its first attempt: dask reruns it on
  another worker, and the fit equals the in-memory fit;
* a task that kills its worker every time: ``KilledWorker`` after
  ``distributed.scheduler.allowed-failures`` (1 here) retries, reported as a
  ``RuntimeError`` naming the fit.

Every fit runs in a thread joined with a deadline, so a hang fails the test instead
of stalling the run.
"""

import logging
import os
import signal
import threading

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

from sparsekm.approx import GreedyBasis  # noqa: E402
from sparsekm.approx.dask_fits import approx_svc_fit_distributed  # noqa: E402
from sparsekm.approx.greedy_distributed import greedy_basis_distributed  # noqa: E402
from sparsekm.kernels import RBF  # noqa: E402
from sparsekm.models import ApproxSVC  # noqa: E402

#: A fit that has not ended this long after a worker died is a hang.
DEADLINE = 150.0

def fit_approx_svc(est, X, y, C, **kw):
    """ApproxSVC's dask fit with explicit solver settings, as ``fit`` takes its result."""
    return est._set_distributed_fit(approx_svc_fit_distributed(est, X, y, C, **kw))



@pytest.fixture
def cluster():
    """2 fresh worker processes per test: no test waits for another's restarted worker."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=":0",
                                      silence_logs=logging.CRITICAL) as cl:
            with distributed.Client(cl) as client, client.as_current():
                client.wait_for_workers(2, timeout=120)
                yield client


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1200, 4))
    y = np.where(X[:, 0] ** 2 + X[:, 1] * X[:, 2] > 0.8, 1, -1)
    return X, y


def _within_deadline(fit):
    """``fit()`` in a thread: its result or exception, or a failure after ``DEADLINE``."""
    box = {}

    def run():
        try:
            box["value"] = fit()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    if thread.is_alive():
        pytest.fail(f"the fit neither ended nor failed within {DEADLINE:.0f} s of losing a "
                    "worker (a hang)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _killer(client, when):
    """A callback that SIGKILLs the first worker process (by address) at call ``when``."""
    calls = []
    victim = sorted(client.run(os.getpid).items())[0]

    def callback(*args):
        calls.append(args)
        if len(calls) == when:
            os.kill(victim[1], signal.SIGKILL)
    callback.victim = victim[0]
    return callback


def test_greedy_steps_continue_after_the_worker_with_kept_state_is_killed(cluster, data):
    X = data[0]
    ref = GreedyBasis(n_basis=15, tol=0.0, kernel=RBF(0.3), random_state=0).fit(X)
    kill = _killer(cluster, when=3)
    with dask.config.set({"sparsekm.cache-bytes": 1e12}):  # every partition kept
        out = _within_deadline(lambda: greedy_basis_distributed(
            da.from_array(X, chunks=(300, 4)), RBF(0.3), 15, tol=0.0,
            first=int(ref.basis_indices_[0]), keep_factor=True, client=cluster,
            callback=kill))
    assert out["partitions_kept"] == 4
    assert out["partitions_lost"] == 2  # the victim kept two of the four
    np.testing.assert_array_equal(out["pivots"], ref.basis_indices_)
    np.testing.assert_allclose(out["cholesky"], ref.cholesky_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(out["residuals"].compute(), ref.residuals_, rtol=0, atol=1e-10)


def test_svm_evaluations_continue_after_the_worker_with_kept_gamma_is_killed(cluster, data):
    X, y = data
    params = dict(C=1.0, n_basis=15, kernel=RBF(0.3), solver="lbfgs", random_state=0)
    ref = ApproxSVC(**params).fit(X, y)
    kill = _killer(cluster, when=2)  # at the second L-BFGS iteration
    with dask.config.set({"sparsekm.cache-bytes": 1e12}):
        clf = _within_deadline(lambda: fit_approx_svc(
            ApproxSVC(**params), da.from_array(X, chunks=(300, 4)), y, 1.0, max_iter=1000,
            tol=1e-6, callback=kill))
    assert clf.dask_info_["features_partitions_kept"] == 4
    assert clf.dask_info_["partitions_lost"] == 2
    f_ref = ref.decision_function(X)
    np.testing.assert_allclose(clf.decision_function(X), f_ref, rtol=0,
                               atol=1e-6 * np.abs(f_ref).max())


def _dies_once(block, marker):
    """The block, after killing this worker process the first time it is asked for."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return block


def _always_dies(block):
    os.kill(os.getpid(), signal.SIGKILL)
    return block  # pragma: no cover


def _rows_through(fn, X, *args):
    """``X`` as a dask array whose second partition is produced by ``fn(block, *args)``."""
    blocks = [da.from_array(X[i:i + 300], chunks=(300, X.shape[1]))
              for i in range(0, X.shape[0], 300)]
    blocks[1] = da.from_delayed(dask.delayed(fn, pure=False)(X[300:600], *args),
                                shape=(300, X.shape[1]), dtype=X.dtype)
    return da.concatenate(blocks)


def test_a_task_that_kills_its_worker_once_is_rerun(cluster, data, tmp_path):
    X, y = data
    params = dict(C=1.0, n_basis=15, kernel=RBF(0.3), solver="lbfgs", random_state=0)
    ref = ApproxSVC(**params).fit(X, y)
    Xd = _rows_through(_dies_once, X, str(tmp_path / "died"))
    with dask.config.set({"sparsekm.cache-bytes": 0}):  # partitions re-read every step
        clf = _within_deadline(lambda: ApproxSVC(**params).fit(Xd, y))
    assert (tmp_path / "died").exists()  # the worker did die
    f_ref = ref.decision_function(X)
    np.testing.assert_allclose(clf.decision_function(X), f_ref, rtol=0,
                               atol=1e-6 * np.abs(f_ref).max())


def test_a_task_that_always_kills_its_worker_is_a_clear_error(cluster, data):
    X = data[0]
    Xd = _rows_through(_always_dies, X)
    with dask.config.set({"sparsekm.cache-bytes": 0}):
        with pytest.raises(RuntimeError, match="GreedyBasis: .*KilledWorker"):
            _within_deadline(lambda: GreedyBasis(n_basis=5, kernel=RBF(0.3),
                                                 random_state=0).fit(Xd))
