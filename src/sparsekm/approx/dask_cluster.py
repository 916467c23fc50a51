"""The dask plumbing of the distributed fits: the client, a watched round trip, input checks
and the workers' cache budget.

Everything here is about running on a ``dask.distributed`` cluster, nothing about a
particular solver: :mod:`sparsekm.approx.greedy_distributed` (Algorithm 1 over the
partitions) and :mod:`sparsekm.approx.gamma_distributed` (the models on ``Gamma``) are
built on it. **A worker that dies**: every round trip is watched (:func:`run_watched`,
every 0.5 s); tasks that only read the dask graph are rerun by dask elsewhere; no worker
at all for ``sparsekm.no-workers-timeout`` seconds (default 60), or one round trip longer
than ``sparsekm.timeout`` (default none), is a ``RuntimeError`` (:func:`cluster_timeouts`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["get_client", "cluster_guard", "WorkerLost", "cluster_timeouts", "run_watched",
           "pinned_compute", "check_dask_rows", "row_partitions", "check_finite_block",
           "cache_budgets", "plan_cache"]

#: Default fraction of each worker's memory limit the kept per-partition state may use
#: (``dask.config`` key ``sparsekm.cache-fraction``; see :func:`cache_budgets`).
_KEEP_FRACTION = 1.0 / 3.0


# -- client, cluster and input checks ------------------------------------------------------


def get_client(client=None, owner="sparsekm"):
    """The ``dask.distributed`` client to run on, checked to be alive.

    Raises
    ------
    RuntimeError
        No client exists, or its cluster is closed or unreachable.
    """
    try:
        import distributed
    except ImportError:  # pragma: no cover - dask is an extra
        from ..utils._extras import install_hint

        raise ImportError(f"{owner} on a dask array needs dask.distributed: "
                          f"{install_hint('dask')}.") from None
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError:
            raise RuntimeError(
                f"{owner} on a dask array runs on a dask.distributed cluster, but there is no "
                "client: create one first, e.g. distributed.Client(LocalCluster()) or "
                "distributed.Client('scheduler-address:8786').") from None
    if client.status != "running":
        raise RuntimeError(f"{owner}: the dask.distributed client is {client.status!r} (its "
                           "cluster is closed or gone); connect a new Client.")
    try:
        info = client.scheduler_info()
    except Exception as exc:  # noqa: BLE001 - any comm failure means the cluster is gone
        raise RuntimeError(f"{owner}: the dask cluster does not answer ({exc!r}); it is closed "
                           "or gone.") from None
    if not info.get("workers"):
        # e.g. a worker restarting after a crash: wait sparsekm.no-workers-timeout for one
        no_workers = cluster_timeouts()[1]
        try:
            client.wait_for_workers(1, timeout=no_workers)
        except Exception:  # noqa: BLE001 - a timeout, or the cluster went away meanwhile
            raise RuntimeError(f"{owner}: the dask cluster has no workers (waited "
                               f"sparsekm.no-workers-timeout = {no_workers:g} s).") from None
    return client


def _cluster_failure(exc):
    """Whether ``exc`` says the cluster (client, scheduler, workers) went away."""
    try:
        from distributed.client import ClosedClientError, FutureCancelledError
        from distributed.comm.core import CommClosedError
        from distributed.scheduler import KilledWorker
    except ImportError:  # pragma: no cover - dask is an extra
        return False
    import asyncio
    import concurrent.futures

    return isinstance(exc, (ClosedClientError, CommClosedError, KilledWorker,
                            FutureCancelledError, concurrent.futures.CancelledError,
                            asyncio.CancelledError, TimeoutError))


def _cluster_error(exc, owner):
    return RuntimeError(f"{owner}: the dask cluster is closed or gone, or failed during the "
                        f"computation ({type(exc).__name__}: {exc}); nothing was computed on "
                        "the client instead. Connect a new distributed.Client and fit again.")


def cluster_guard(owner):
    """Decorator: a lost cluster inside the call becomes a ``RuntimeError`` naming ``owner``.

    Errors raised by the tasks themselves (e.g. NaN found in a partition) reach the
    caller unchanged: ``dask.distributed`` re-raises them on the client.
    """
    import functools

    def wrap(func):
        @functools.wraps(func)
        def inner(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except Exception as exc:
                if _cluster_failure(exc):
                    raise _cluster_error(exc, owner) from exc
                raise
        return inner
    return wrap


class WorkerLost(RuntimeError):
    """Workers that held kept per-partition state left the cluster during a round trip.

    Raised by :func:`_run` for the callers that keep state on chosen workers: they
    recompute the lost partitions from the dask graph and repeat the round trip.
    """

    def __init__(self, addresses, owner):
        self.addresses = frozenset(addresses)
        super().__init__(f"{owner}: the worker(s) {sorted(self.addresses)} holding kept "
                         "partitions left the cluster.")


#: Seconds between two looks at the cluster while a round trip is running.
_POLL_SECONDS = 0.5
#: Default of ``sparsekm.no-workers-timeout``: a fit with no worker this long fails.
_NO_WORKERS_TIMEOUT = 60.0


def cluster_timeouts():
    """``(timeout, no_workers_timeout)`` in seconds from ``dask.config``.

    ``sparsekm.timeout`` (default ``None``: no limit) bounds one round trip of a fit
    (one greedy step, one L-BFGS evaluation); ``sparsekm.no-workers-timeout`` (default
    60 s) bounds the time a fit waits while the cluster has no worker at all. Numbers
    are seconds; strings as dask writes them (``"90s"``, ``"5 minutes"``).
    """
    import dask
    from dask.utils import parse_timedelta

    out = []
    for key, default in (("sparsekm.timeout", None),
                         ("sparsekm.no-workers-timeout", _NO_WORKERS_TIMEOUT)):
        raw = dask.config.get(key, default)
        if raw is None:
            out.append(None)
            continue
        try:
            value = float(parse_timedelta(raw, default="s"))
        except (TypeError, ValueError, KeyError):
            value = float("nan")
        if not value > 0:
            raise ValueError(f"{key} must be a positive number of seconds, a duration such as "
                             f"'90s', or None; got {raw!r}.")
        out.append(value)
    return tuple(out)


class _Watch:
    """The checks of :func:`_run` between two looks at running futures."""

    def __init__(self, client, owner, pinned):
        import time

        self.client, self.owner, self.pinned = client, owner, pinned
        self.timeout, self.no_workers = cluster_timeouts()
        self.clock = time.monotonic
        self.start = self.clock()
        self.empty_since = None

    def check(self):
        now = self.clock()
        workers = set(self.client.scheduler_info()["workers"])
        dead = self.pinned - workers
        if dead:
            raise WorkerLost(dead, self.owner)
        if workers:
            self.empty_since = None
        elif self.empty_since is None:
            self.empty_since = now
        elif now - self.empty_since > self.no_workers:
            raise RuntimeError(f"{self.owner}: the dask cluster has had no worker for "
                               f"{now - self.empty_since:.0f} s (sparsekm.no-workers-timeout "
                               f"= {self.no_workers:g} s); the fit was abandoned. Restart the "
                               "workers or connect a new Client, and fit again.")
        if self.timeout is not None and now - self.start > self.timeout:
            raise RuntimeError(f"{self.owner}: one round trip on the dask cluster took more "
                               f"than sparsekm.timeout = {self.timeout:g} s; the fit was "
                               "abandoned (raise the limit with dask.config.set("
                               "{'sparsekm.timeout': ...}) if the partitions are large).")


def run_watched(client, futures, owner, pinned=()):
    """``client.gather(futures)``, watching the cluster so that a fit never hangs.

    Every ``_POLL_SECONDS`` while the futures run or their results are fetched: a
    worker in ``pinned`` (it holds kept state the futures need, and tasks pinned to it
    can run nowhere else) that left the cluster cancels the futures and raises
    :class:`WorkerLost`; no worker at all for ``sparsekm.no-workers-timeout`` seconds,
    or a round trip longer than ``sparsekm.timeout``, raises a ``RuntimeError``
    (:func:`cluster_timeouts`). Other lost tasks are recomputed by dask itself on the
    remaining workers (up to ``distributed.scheduler.allowed-failures`` deaths of one
    task, then ``KilledWorker``, reported as a ``RuntimeError``). A cluster that goes
    away becomes a ``RuntimeError`` naming ``owner``.
    """
    import threading

    futs = list(futures) if isinstance(futures, (list, tuple)) else [futures]
    watch = _Watch(client, owner, {a for a in pinned if a is not None})
    box = {}

    def gather():
        # In a thread: a worker dying between the end of the tasks and the fetch of
        # their results makes a gather wait for the recomputation -- forever for a task
        # pinned to that worker. The watch below cancels it instead.
        try:
            box["value"] = client.gather(futures)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    try:
        fetch = threading.Thread(target=gather, daemon=True, name="sparsekm-gather")
        fetch.start()
        while True:
            fetch.join(_POLL_SECONDS)
            if not fetch.is_alive():
                break
            try:
                watch.check()
            except BaseException:
                client.cancel(futs)
                fetch.join(_POLL_SECONDS * 4)
                raise
        if "error" in box:
            raise box["error"]
        return box["value"]
    except WorkerLost:
        raise
    except Exception as exc:
        if _cluster_failure(exc):
            raise _cluster_error(exc, owner) from exc
        raise


def pinned_compute(client, fn, block, args, worker):
    """``fn(block, *args)`` computed on ``worker`` and kept there: a future pinned to it.

    Only the task of ``fn`` is pinned (``allow_other_workers=False``: its state never
    moves between workers). The read of the partition ``block`` (a ``dask.delayed``) is
    placed on the same worker but not tied to it: restricting a whole graph to one
    worker would leave the partition's tasks waiting forever for that worker after it
    died, and recomputing the partition elsewhere (the fallback of
    :class:`PartitionSet` and of the greedy steps) would hang with them.
    """
    data = client.compute(block, workers=[worker], allow_other_workers=True)
    return client.submit(fn, data, *args, pure=False, workers=[worker],
                         allow_other_workers=False)


def check_dask_rows(X, owner, name="X", n_features=None):
    """Validate a dask array of rows without computing it; merge its column chunks.

    Raises
    ------
    ValueError
        Not 2-D, unknown (NaN) chunk sizes, no rows, a non-numeric dtype, or a feature
        count other than ``n_features``.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features); got shape "
                         f"{X.shape}.")
    if any(np.isnan(c) for chunks in X.chunks for c in chunks):
        raise ValueError(f"{owner}: {name} has unknown chunk sizes (NaN in {name}.chunks, e.g. "
                         f"after boolean indexing); call {name}.compute_chunk_sizes() first.")
    if X.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); at least one sample is required.")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {X.shape}); at least one is required.")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got a dask array of dtype {X.dtype}.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but {owner} is expecting "
                         f"{n_features} features as input.")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return X


def row_partitions(X):
    """The row chunks of ``X`` as a list of ``dask.delayed`` objects, in row order."""
    return list(X.to_delayed().ravel())


def check_finite_block(B, name):
    if not np.isfinite(B).all():
        what = "NaN" if np.isnan(B).any() else "infinity"
        raise ValueError(f"{name} contains {what}; sparsekm needs finite values in {name}.")
    return B


def cache_budgets(client):
    """Bytes of kept per-partition state each worker may hold: ``{address: bytes}``.

    ``dask.config`` key ``sparsekm.cache-bytes`` (bytes per worker: a number, or a size
    such as ``"2GiB"``) if set, else
    ``sparsekm.cache-fraction`` (default ``1/3``) times the worker's memory limit
    (no limit: unbounded). Read at every fit, so ``with dask.config.set(...)`` works.
    """
    import dask

    per_worker = dask.config.get("sparsekm.cache-bytes", None)
    fraction = dask.config.get("sparsekm.cache-fraction", _KEEP_FRACTION)
    if per_worker is not None:
        raw = per_worker
        try:  # a number, or a size as dask writes them ("2GiB", "500 MB")
            per_worker = float(dask.utils.parse_bytes(raw) if isinstance(raw, str) else raw)
        except (TypeError, ValueError):
            per_worker = float("nan")
        if not per_worker >= 0:
            raise ValueError(f"sparsekm.cache-bytes must be a number of bytes >= 0 or a size "
                             f"such as '2GiB'; got {raw!r}.")
    try:
        fraction_ok = 0.0 <= float(fraction) <= 1.0
    except (TypeError, ValueError):
        fraction_ok = False
    if not fraction_ok:
        raise ValueError(f"sparsekm.cache-fraction must be in [0, 1] (a number); got {fraction!r}.")
    workers = client.scheduler_info().get("workers", {})
    out = {}
    for addr, info in sorted(workers.items()):
        limit = info.get("memory_limit") or 0
        if per_worker is not None:
            out[addr] = per_worker
        else:
            out[addr] = float(fraction) * limit if limit else float("inf")
    return out


def plan_cache(keep, client, part_bytes, owner="GreedyBasis", name="keep_factor"):
    """The worker that keeps each partition's state, or ``None`` (recomputed per step).

    ``keep=True`` keeps every partition, ``False`` none; ``"auto"`` keeps, in row
    order, every partition that still fits some worker's :func:`cache_budgets`
    (the worker with the fewest kept bytes that has room), so as much of the state
    as the budget allows stays in memory and only the rest is recomputed. Kept
    partitions are spread over the workers by bytes (fewest kept bytes first, ties
    by address). The plan decides only where the work happens: the kept and the
    recomputed steps give the same numbers up to rounding.
    """
    if keep not in (True, False, "auto"):
        raise ValueError(f"{name} must be True, False or 'auto'; got {keep!r}.")
    budgets = cache_budgets(client)
    if not budgets:
        raise RuntimeError(f"{owner}: the dask cluster has no workers.")
    if keep is False:
        return [None] * len(part_bytes)
    used = dict.fromkeys(budgets, 0.0)
    homes = []
    for nbytes in part_bytes:
        room = [a for a in budgets if keep is True or used[a] + nbytes <= budgets[a]]
        if not room:
            homes.append(None)
            continue
        addr = min(room, key=lambda a: used[a])  # sorted addresses: ties to the first
        used[addr] += nbytes
        homes.append(addr)
    return homes

