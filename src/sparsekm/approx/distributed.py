"""Training-set approximation and the models on it, run on a ``dask.distributed`` cluster.

``pip install sparsekm[dask]``. These functions take a ``dask.array.Array`` of rows
split into row chunks (the *partitions*) and run on the workers of the current
``dask.distributed.Client``; the client only ever holds ``O(m^2 + m d)`` numbers
(``m`` basis vectors of ``d`` features) plus ``O(m)`` per partition and step. They
are what :meth:`GreedyBasis.fit <sparsekm.approx.GreedyBasis.fit>`,
:meth:`ApproxSVC.fit <sparsekm.models.ApproxSVC.fit>` and
:meth:`ApproxKFD.fit <sparsekm.models.ApproxKFD.fit>` call for a dask array.

**Algorithm 1 over partitions** (:func:`greedy_basis_distributed`). Franc &
Hlaváč's greedy selection is a pivoted incomplete Cholesky factorisation (see
:mod:`sparsekm.approx.greedy`). Every step is one round trip:

1. each partition reports the largest residual ``se(x)`` among its rows, its
   position, the row itself and its coordinates ``gamma(x_p)`` on the current basis;
2. the client takes the global arg-max (ties: the lowest global row index, as
   ``np.argmax`` on all residuals -- the rule of the in-memory fit) and appends
   the row ``[gamma(x_p), sqrt(se(x_p))]`` to ``L_r`` (``m x m``);
3. the pivot (``x_p``, ``gamma(x_p)``, ``se(x_p)``) is broadcast to the partitions,
   which update their rows of ``L`` and their residuals.

One pivot per step, so the selection rule is literally the in-memory one: the same
points are selected (up to exact ties broken by rounding). Two ways to keep the
per-partition state, chosen by ``keep_factor``:

``keep_factor=True``
    Each partition's rows of ``X``, of the factor ``L`` and of ``se`` live in the
    worker's memory (a future per partition); step ``j`` costs one kernel column and
    one ``j``-term product per row, ``O(n (d + j))`` -- the in-memory algorithm, cut
    into row blocks. Needs ``8 n (d + m + 1)`` bytes on the workers in all.
``keep_factor=False``
    Nothing of size ``n`` is kept: every step re-reads the partitions from the dask
    graph (e.g. a generator or a file) and recomputes ``gamma(x) = L_r^{-1} k_r(x)``,
    ``O(n j (d + j))`` per step. For data (and a factor) larger than the workers'
    memory.

``keep_factor="auto"`` (the default) keeps, partition by partition in row order, as
much of the state as the workers' budget holds and recomputes only the rest every
step (:func:`plan_cache`): each worker may keep ``sparsekm.cache-fraction`` (a
``dask.config`` key, default ``1/3``) of its memory limit, or ``sparsekm.cache-bytes``
bytes when that key is set. With ``P_kept`` of ``P`` partitions kept a step costs
about ``P_kept/P`` of the kept mode's work plus ``(P - P_kept)/P`` of the recomputed
mode's; the kept and recomputed steps compute the same numbers (to rounding), so the
basis does not depend on how much is cached. ``Gamma`` for the models follows the same
rule (``keep_features``).

**Models.** :func:`approx_kfd_distributed` reduces the per-class sums and the
``m x m`` within-class scatter of the rows of ``A = Gamma L_r^T`` over the
partitions (two passes: means, then centred scatter -- the in-memory formula).
:func:`squared_hinge_lbfgs_distributed` minimises the squared-hinge primal on
``Gamma`` by L-BFGS with one map-reduce of the loss and its gradient per
evaluation, then finite Newton steps (one map-reduce of an ``(m+1) x (m+1)`` system
each) to the optimum (:mod:`sparsekm.approx.squared_hinge`): its stopping point does
not depend on the order of the sums, so the fit equals the in-memory one to rounding
whatever the partitioning and caching. KFD is closed-form; both agree with the
in-memory fits up to the order of the sums.

**Errors.** A dask array with unknown chunk sizes, a feature count that does not
match, no client, or a client whose cluster is closed or gone raise a
``ValueError``/``RuntimeError`` naming the problem; nothing falls back to
computing on the client. Values are checked where they are read: a partition with
NaN/inf in ``X`` or bad labels (NaN, continuous) raises the in-memory error on its
worker, which ``dask.distributed`` re-raises on the client; a cluster lost between
two steps becomes a ``RuntimeError`` (:func:`cluster_guard`).

**A worker that dies.** Every round trip is watched (:func:`_run`, every 0.5 s).
Tasks that only read the dask graph are rerun by dask elsewhere (``KilledWorker``, a
``RuntimeError`` here, after ``distributed.scheduler.allowed-failures`` deaths of one
task). State kept on the dead worker (greedy factor rows, ``Gamma``) is recomputed
from the graph from then on (:class:`PartitionSet`; :func:`pinned_compute` pins only
the state's task, never the partition's reads, which would otherwise wait for the dead
worker forever): the fit ends with the result it would have had. No worker at all for
``sparsekm.no-workers-timeout`` seconds (default 60), or one round trip longer than
``sparsekm.timeout`` (default none), is a ``RuntimeError`` (:func:`cluster_timeouts`).

**Saving.** What prediction needs (``basis_vectors_``, ``cholesky_``, ``coef_``,
``expansion_``) is numpy on the client; ``GreedyBasis.residuals_`` (``n`` numbers)
stays a dask array on the cluster and :func:`sparsekm.save` leaves it out.

A real cluster changes nothing in the code: connect with
``distributed.Client("scheduler-address:8786")`` before calling ``fit``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from .squared_hinge import lbfgs_squared_hinge, squared_hinge_objective  # noqa: F401

__all__ = [
    "check_dask_rows",
    "get_client",
    "greedy_basis_distributed",
    "approx_kfd_distributed",
    "cache_budgets",
    "plan_cache",
    "squared_hinge_lbfgs_distributed",
    "squared_hinge_objective",
    "row_partitions",
]

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


def _run(client, futures, owner, pinned=()):
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


def _check_finite_block(B, name):
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


# -- Algorithm 1, per-partition tasks ----------------------------------------------------------


class _PartitionState:
    """A partition's rows of ``X``, of ``L^T`` (rows = basis vectors) and of ``se``."""

    def __init__(self, X, kernel, m_max):
        self.X = X
        self.x_sq = kernel._sqnorms(X)
        self.diag = kernel.diag(X).astype(X.dtype)
        self.se = self.diag.copy()
        self.L = np.empty((m_max, X.shape[0]), dtype=X.dtype)
        self.j = 0  # rows of L filled (guards against a re-run task applying a step twice)

    def __sizeof__(self):
        # What dask's scheduler sees: without it the state looks tiny and may be moved
        # between workers for load balancing.
        return int(self.X.nbytes + self.L.nbytes + self.se.nbytes + self.diag.nbytes
                   + (0 if self.x_sq is None else self.x_sq.nbytes)) + 128


def _summary(se, X, G, pivots_here, start):
    """Largest residual of the partition: (se_max, global index, row, gamma of the row)."""
    if pivots_here:
        se = se.copy()
        se[np.asarray(pivots_here) - start] = 0.0
    i = int(np.argmax(se))
    return float(se[i]), start + i, X[i].copy(), G[:, i].copy()


def _keep_init(X, kernel, m_max, start):
    X = _check_finite_block(np.asarray(X), "X")
    st = _PartitionState(X, kernel, m_max)
    return st


def _keep_first_summary(st, start):
    i = int(np.argmax(st.diag))
    return float(st.diag[i]), start + i


def _keep_step(st, kernel, j, x_p, g_p, se_p, p, start):
    """Add pivot ``j`` (row ``x_p``, coordinates ``g_p``, residual ``se_p``) to the partition.

    The in-memory update of :func:`~sparsekm.approx.greedy.pivoted_cholesky`:
    ``l = (k(X, x_p) - L[:j]^T g_p) / sqrt(se_p)``, ``se <- max(se - l^2, 0)``.
    """
    if st.j not in (j, j + 1):
        raise RuntimeError(f"GreedyBasis: a partition lost its state (it holds {st.j} pivots, "
                           f"step {j} expected {j}); a worker was restarted during the fit.")
    if st.j == j:  # not yet applied (a retried task finds st.j == j + 1)
        col = kernel._block(st.X, x_p[None, :], st.x_sq,
                            None if st.x_sq is None else kernel._sqnorms(x_p[None, :]))[:, 0]
        if j:
            col -= g_p @ st.L[:j]
        col /= np.sqrt(se_p)
        local = p - start
        if 0 <= local < st.X.shape[0]:
            col[local] = np.sqrt(se_p)
        st.L[j] = col
        st.se -= col * col
        if 0 <= local < st.X.shape[0]:
            st.se[local] = 0.0
        np.maximum(st.se, 0.0, out=st.se)
        st.j = j + 1
    return st


def _keep_summary(st, start):
    i = int(np.argmax(st.se))
    return float(st.se[i]), start + i, st.X[i].copy(), st.L[:st.j, i].copy()


def _keep_result(st, m):
    return st.se.copy()


def _stream_diag(X, kernel, start):
    X = _check_finite_block(np.asarray(X), "X")
    d = kernel.diag(X)
    i = int(np.argmax(d))
    return float(d[i]), start + i


def _stream_residuals(X, kernel, Xr, Lr):
    """``gamma`` (m, n_chunk) and ``se`` of a partition's rows on the basis ``(Xr, L_r)``."""
    X = np.asarray(X)
    d = kernel.diag(X).astype(X.dtype)
    if Xr.shape[0] == 0:
        return np.zeros((0, X.shape[0]), X.dtype), d
    G = solve_triangular(Lr, kernel(X, Xr).T, lower=True, check_finite=False)
    se = d - np.einsum("ij,ij->j", G, G)
    np.maximum(se, 0.0, out=se)
    return G, se


def _stream_step(X, kernel, Xr, Lr, pivots_here, start):
    G, se = _stream_residuals(X, kernel, Xr, Lr)
    return _summary(se, np.asarray(X), G, pivots_here, start)


def _stream_final(X, kernel, Xr, Lr, pivots_here, start):
    _, se = _stream_residuals(X, kernel, Xr, Lr)
    if pivots_here:
        se[np.asarray(pivots_here) - start] = 0.0
    return se


@cluster_guard("GreedyBasis")
def greedy_basis_distributed(X, kernel, n_basis, *, tol=1e-3, first=None, init="random",
                             keep_factor="auto", client=None, callback=None):
    """Algorithm 1 (greedy pivoted Cholesky) over the row partitions of a dask array.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Validated by :func:`check_dask_rows`; each row chunk is a partition.
    kernel : Kernel
        A positive semi-definite kernel.
    n_basis : int
        Maximum number of basis vectors ``m``.
    tol : float, default=1e-3
        Stop once ``max se(x) < tol`` (the paper's epsilon).
    first : int or None
        Global index of the first pivot (``init="random"`` draws it on the client as
        the in-memory fit does); ``None`` uses ``init``.
    init : {"random", "max-diag"}
        Only used when ``first`` is None: ``"max-diag"`` takes the largest ``k(x, x)``
        (lowest index on ties).
    keep_factor : bool or "auto", default="auto"
        ``True``: keep every partition's rows of ``X``, ``L`` and ``se`` in worker
        memory (``O(n_k (d + j))`` per partition and step); ``False``: re-read every
        partition and recompute its coordinates each step (``O(n_k j (d + j))``, no
        state kept); ``"auto"``: keep as many partitions as :func:`cache_budgets`
        allows (:func:`plan_cache`), recompute the others. Same result in every mode.
    client : distributed.Client or None
        ``None``: the current client.
    callback : callable, optional
        ``callback(j, seconds)`` after every pivot.

    Returns
    -------
    dict
        ``pivots`` (m,), ``basis_vectors`` (m, d), ``cholesky`` (m, m) lower
        triangular ``L_r``, ``residuals`` (dask array of ``se`` over the rows, lazy
        or backed by the kept state), ``mse`` (mean residual), ``keep_factor``
        (whether every partition was kept), ``partitions_kept``, ``n_partitions``,
        ``step_seconds`` (list of the wall time of each step).
    """
    import time

    import dask
    import dask.array as da

    owner = "GreedyBasis"
    client = get_client(client, owner)
    n, dim = X.shape
    m_max = int(min(n_basis, n))
    dtype = X.dtype
    parts = row_partitions(X)
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(int)
    sizes = np.asarray(X.chunks[0], dtype=int)
    item = np.dtype(dtype).itemsize
    homes = plan_cache(keep_factor, client,
                       [float(c) * (item * (dim + m_max + 2) + 8) for c in sizes], owner)
    kept = [k for k, h in enumerate(homes) if h is not None]
    n_kept = len(kept)
    kern = dask.delayed(kernel, pure=True, traverse=False)

    # Step 0: per-partition diagonals (largest k(x, x) and its row, and sum for the floor).
    # Kept partitions build their state on their planned worker and every later task of
    # theirs runs there (nothing of size n moves between workers); the others are re-read
    # from the dask graph at every step.
    states = [None] * len(parts)
    for k in kept:
        states[k] = pinned_compute(client, _keep_init, parts[k],
                                   (kernel, m_max, int(starts[k])), homes[k])

    lost = set()

    def drop(addresses):
        """Partitions kept on dead workers: recomputed from the dask graph from now on."""
        for k in range(len(parts)):
            if homes[k] in addresses:
                states[k] = None
                homes[k] = None
                lost.add(k)

    def gather_in_order(kept_task, streamed_task, only=None):
        """``kept_task(k)`` (a future) of the kept partitions, ``streamed_task(k)`` (a delayed)
        of the others, in partition order. A worker that dies with kept partitions turns
        them into recomputed ones and the round trip is repeated: the two modes compute
        the same numbers, so the result is the one without the failure. ``only``: these
        partitions only."""
        which = range(len(parts)) if only is None else only
        while True:
            kept_now = [k for k in which if states[k] is not None]
            streamed = [k for k in which if states[k] is None]
            futs = [kept_task(k) for k in kept_now]
            if streamed:
                futs += client.compute([streamed_task(k) for k in streamed])
            try:
                res = _run(client, futs, owner, pinned={homes[k] for k in kept_now})
            except WorkerLost as exc:
                del futs
                drop(exc.addresses)
                continue
            by_k = dict(zip(kept_now + streamed, res, strict=True))
            return [by_k[k] for k in which]

    first_info = gather_in_order(
        lambda k: client.submit(_keep_first_summary, states[k], int(starts[k]), pure=False,
                                workers=[homes[k]]),
        lambda k: dask.delayed(_stream_diag)(parts[k], kern, int(starts[k])))
    diag_max = max(info[0] for info in first_info)
    floor = 10.0 * n * np.finfo(dtype).eps * max(diag_max, np.finfo(dtype).tiny)

    def owner_of(p):
        return int(np.searchsorted(starts, p, side="right") - 1)

    def best(infos):
        # Largest se; ties: lowest partition (then np.argmax's lowest index within it).
        k = int(np.argmax([info[0] for info in infos]))
        return infos[k]

    if first is None:
        if init != "max-diag":
            raise ValueError("greedy_basis_distributed needs `first` unless init='max-diag'.")
        first = best(first_info)[1]
    first = int(first)
    if not 0 <= first < n:
        raise ValueError(f"first pivot {first} is out of range for {n} rows.")

    pivots = []
    Xr = np.empty((0, dim), dtype=dtype)
    Lr = np.zeros((0, 0), dtype=np.float64)
    step_seconds = []
    # The first pivot's row, coordinates (none yet) and residual k(x_p, x_p).
    k_first = owner_of(first)
    local_first = first - int(starts[k_first])
    x_first = gather_in_order(
        lambda k: client.submit(_pick_row, states[k], local_first, pure=False,
                                workers=[homes[k]]),
        lambda k: dask.delayed(_pick_row)(parts[k], local_first), only=[k_first])[0]
    cand = (float(kernel.diag(x_first[None, :])[0]), first, x_first, np.zeros(0, dtype))
    # The in-memory loop checks the stopping rule on the current residuals first.
    se_max_now = diag_max
    for j in range(m_max):
        t0 = time.perf_counter()
        if se_max_now < tol or se_max_now <= floor:
            break
        se_p, p, x_p, g_p = cand
        if j:
            # The pivot's row of L_r from x_p on the client, not the partition's report: a
            # kept partition updates its L incrementally, a recomputed one solves with L_r,
            # and the two agree only to rounding. Recomputing it here makes L_r (and so
            # Gamma and the model) independent of which partitions were cached.
            g_p = solve_triangular(Lr, kernel(Xr, x_p[None, :])[:, 0].astype(np.float64),
                                   lower=True, check_finite=False)
            se_p = max(float(kernel.diag(x_p[None, :])[0]) - float(g_p @ g_p), 0.0)
        if se_p <= floor:
            break
        pivots.append(int(p))
        # Grow L_r by the row [gamma(x_p), sqrt(se_p)] (lower triangular).
        L_next = np.zeros((j + 1, j + 1))
        L_next[:j, :j] = Lr
        L_next[j, :j] = g_p
        L_next[j, j] = np.sqrt(se_p)
        Lr = L_next
        Xr = np.vstack([Xr, x_p[None, :]])
        # Kept: the step returns the (updated) state as a new future, run where it lives,
        # and the old key is released. Recomputed: gamma from the partition and (Xr, L_r).
        for k in range(len(parts)):
            if states[k] is not None:
                states[k] = client.submit(_keep_step, states[k], kernel, j, x_p, g_p, se_p,
                                          int(p), int(starts[k]), pure=False,
                                          workers=[homes[k]])
        Lr_cast = Lr.astype(dtype)
        here = _pivots_by_partition(pivots, starts, sizes)
        infos = gather_in_order(
            lambda k: client.submit(_keep_summary, states[k], int(starts[k]), pure=False,
                                    workers=[homes[k]]),
            lambda k, Xr=Xr, Lr_cast=Lr_cast, here=here: dask.delayed(_stream_step)(
                parts[k], kern, Xr, Lr_cast, here[k], int(starts[k])))
        top = best(infos)
        se_max_now = top[0]
        cand = top
        step_seconds.append(time.perf_counter() - t0)
        if callback is not None:
            callback(len(pivots), step_seconds[-1])

    m = len(pivots)
    here = _pivots_by_partition(pivots, starts, sizes)
    Lr_cast = Lr.astype(dtype)
    while True:
        pieces = []
        for k, b in enumerate(parts):
            if states[k] is not None:
                fut = client.submit(_keep_result, states[k], m, pure=False, workers=[homes[k]])
                pieces.append(client.persist(da.from_delayed(fut, shape=(int(sizes[k]),),
                                                             dtype=dtype)))
            else:
                pieces.append(da.from_delayed(
                    dask.delayed(_stream_final)(b, kern, Xr, Lr_cast, here[k], int(starts[k])),
                    shape=(int(sizes[k]),), dtype=dtype))
        residuals = da.concatenate(pieces)
        try:
            total = _run(client, client.compute(residuals.sum()), owner,
                         pinned={h for h in homes if h is not None})
            break
        except WorkerLost as exc:
            drop(exc.addresses)
    states.clear()  # release the kept state's futures (residuals keep what they need)
    mse = float(total) / n
    return {"pivots": np.asarray(pivots, dtype=np.intp), "basis_vectors": Xr,
            "cholesky": Lr, "residuals": residuals, "mse": mse,
            "keep_factor": n_kept == len(parts), "partitions_kept": n_kept,
            "n_partitions": len(parts), "partitions_lost": len(lost),
            "step_seconds": [float(t) for t in step_seconds]}


def _pick_row(block, i):
    block = block.X if isinstance(block, _PartitionState) else np.asarray(block)
    return np.array(block[i], copy=True)


def parts_future(client, parts, k, states):
    """Partition ``k`` as a future: the kept state, or the delayed block computed once."""
    if states is not None and states[k] is not None:
        return states[k]
    return client.compute(parts[k])


def _pivots_by_partition(pivots, starts, sizes):
    out = [[] for _ in starts]
    for p in pivots:
        k = int(np.searchsorted(starts, p, side="right") - 1)
        out[k].append(int(p))
    return out


# -- models on Gamma ----------------------------------------------------------------------------


def _features(X, kernel, Xr, Lr):
    """``Gamma`` of a partition's rows (n_chunk, m), in float64."""
    X = np.asarray(X)
    G = solve_triangular(Lr, kernel(X, Xr).T, lower=True, check_finite=False)
    return np.ascontiguousarray(G.T, dtype=np.float64)


def _labels_block(y, positive):
    y = np.asarray(y)
    return np.where(y == positive, 1.0, -1.0)


def gamma_partitions(X, basis, client, keep="auto"):
    """Per-partition ``Gamma``: futures (kept in worker memory) or delayed (recomputed).

    Returns a list with one entry per row chunk of ``X`` and how many of them are
    kept: all (``keep=True``), none (``False``) or, for ``"auto"``, as many as the
    workers' :func:`cache_budgets` hold (:func:`plan_cache`, ``8 n_k (m + 2)`` bytes
    each); the others are recomputed from ``X`` at every evaluation.
    """
    import dask

    m = basis.n_basis_
    kern = dask.delayed(basis.kernel_, pure=True, traverse=False)
    Xr = dask.delayed(basis.basis_vectors_, pure=True, traverse=False)
    Lr = dask.delayed(basis.cholesky_.astype(basis.basis_vectors_.dtype), pure=True,
                      traverse=False)
    blocks = row_partitions(X)
    parts = [dask.delayed(_features)(b, kern, Xr, Lr) for b in blocks]
    homes = plan_cache(keep, client, [8.0 * c * (m + 2) for c in X.chunks[0]], "ApproxSVC",
                       "keep_features")
    args = (basis.kernel_, basis.basis_vectors_,
            basis.cholesky_.astype(basis.basis_vectors_.dtype))
    kept = [None if h is None else pinned_compute(client, _features, b, args, h)
            for b, h in zip(blocks, homes, strict=True)]
    parts = PartitionSet(client, parts, kept, homes)
    return parts, parts.n_kept


class PartitionSet:
    """Per-partition inputs of a map-reduce, kept in worker memory or recomputed.

    Partition ``k`` is ``delayed[k]`` (a ``dask.delayed`` graph, recomputed at every
    use) and, when ``homes[k]`` names a worker, also ``futures[k]``, its value kept in
    that worker's memory (:func:`pinned_compute`). Indexing gives the future or, if none, the
    delayed object. A worker that dies during :meth:`map` takes its futures with it:
    those partitions are recomputed from then on and the map is repeated, so a lost
    worker costs time, not the result.
    """

    def __init__(self, client, delayed, futures=None, homes=None):
        self.client = client
        self.delayed = list(delayed)
        self.futures = [None] * len(self.delayed) if futures is None else list(futures)
        self.homes = [None] * len(self.delayed) if homes is None else list(homes)
        self.n_kept = sum(f is not None for f in self.futures)
        self.lost = 0

    def __len__(self):
        return len(self.delayed)

    def __getitem__(self, k):
        return self.delayed[k] if self.futures[k] is None else self.futures[k]

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def drop(self, addresses):
        """Recompute, from now on, the partitions kept on the workers ``addresses``."""
        for k, h in enumerate(self.homes):
            if h is not None and h in addresses:
                self.futures[k] = None
                self.homes[k] = None
                self.lost += 1

    def map(self, fn, extra, *args, owner="sparsekm"):
        """``[fn(part_k, extra[k], *args) for k]`` on the workers, in partition order."""
        import dask

        client = self.client
        while True:
            kept = [k for k, f in enumerate(self.futures) if f is not None]
            streamed = [k for k, f in enumerate(self.futures) if f is None]
            # Kept: plain task submission (no graph to build), run where the future is.
            futs = [client.submit(fn, self.futures[k], extra[k], *args, pure=False)
                    for k in kept]
            if streamed:
                futs += client.compute([dask.delayed(fn)(self.delayed[k], extra[k], *args)
                                        for k in streamed])
            try:
                res = _run(client, futs, owner, pinned={self.homes[k] for k in kept})
            except WorkerLost as exc:
                del futs
                self.drop(exc.addresses)
                continue
            by_k = dict(zip(kept + streamed, res, strict=True))
            return [by_k[k] for k in range(len(self))]


def _as_partition_set(client, parts):
    """A :class:`PartitionSet` from one, or from a list of futures/delayed (none pinned)."""
    if isinstance(parts, PartitionSet):
        return parts
    from dask.delayed import Delayed

    return PartitionSet(client, [p if isinstance(p, Delayed) else None for p in parts],
                        [None if isinstance(p, Delayed) else p for p in parts])


def label_blocks(y, X, owner):
    """``y`` cut into the row chunks of ``X`` (delayed blocks for a dask ``y``), checked.

    Shape and chunk sizes are checked on the client; the values by
    :func:`binary_classes_distributed` on the workers.
    """
    import dask.array as da

    if isinstance(y, da.Array):
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D with one label per row of X; got shape {y.shape}.")
        if any(np.isnan(c) for c in y.chunks[0]):
            raise ValueError(f"{owner}: y has unknown chunk sizes (NaN in y.chunks, e.g. after "
                             "boolean indexing); call y.compute_chunk_sizes() first.")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with one label per row of X; got shape {y.shape} "
                             f"for {X.shape[0]} samples.")
        if y.chunks[0] != X.chunks[0]:
            y = y.rechunk({0: X.chunks[0]})
        return list(y.to_delayed().ravel())
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must be 1-D with one label per row of X; got shape {y.shape} "
                         f"for {X.shape[0]} samples.")
    ends = np.cumsum(X.chunks[0])
    return [y[e - c:e] for e, c in zip(ends, X.chunks[0], strict=True)]


def label_partitions(blocks, classes):
    """Per-partition ±1 labels (``classes[1]`` positive) of the blocks of :func:`label_blocks`."""
    import dask

    return [dask.delayed(_labels_block)(b, classes[1]) for b in blocks]


#: Distinct labels a partition reports: enough to tell a binary ``y`` from any other.
_N_LABELS = 6


def _label_summary(y):
    """A partition's first distinct labels, after the in-memory checks of ``y``.

    Runs on a worker: NaN/inf (``"Input y contains NaN."``) and continuous targets
    raise scikit-learn's errors there, and :func:`_run` re-raises them on the client.
    """
    from sklearn.utils import assert_all_finite
    from sklearn.utils.multiclass import check_classification_targets

    y = np.asarray(y)
    if y.dtype.kind in "fc":
        assert_all_finite(y, input_name="y")
    if y.size:
        check_classification_targets(y)
    return np.unique(y)[:_N_LABELS]


def binary_classes_distributed(blocks, owner, client):
    """``classes_`` of a binary problem from the label blocks of :func:`label_blocks`.

    Each partition checks its labels and reports at most ``_N_LABELS`` distinct
    values, so the client holds ``O(partitions)`` labels whatever ``n`` is.
    """
    import dask

    if blocks and isinstance(blocks[0], np.ndarray):
        y = np.concatenate(blocks)  # numpy y: already on the client
        _label_summary(y)  # the same checks as on the workers
        parts = [np.unique(y)]
    else:
        parts = _run(client, client.compute([dask.delayed(_label_summary)(b) for b in blocks]),
                     owner)
    classes = np.unique(np.concatenate(parts))
    if classes.size != 2:
        many = "at least " if classes.size >= _N_LABELS else ""
        raise ValueError(f"Only binary classification is supported by {owner}; y has "
                         f"{many}{classes.size} class(es) {classes.tolist()[:5]}. Use "
                         f"sklearn.multiclass.OneVsRestClassifier for more classes.")
    return classes


def _class_sums(G, y, Lr):
    A = G @ Lr.T
    out = []
    for label in (1.0, -1.0):
        Ak = A[y == label]
        out.append((Ak.shape[0], Ak.sum(axis=0)))
    return out


def _class_scatter(G, y, Lr, means):
    A = G @ Lr.T
    out = []
    for label, mu in zip((1.0, -1.0), means, strict=True):
        Ac = A[y == label] - mu
        out.append(Ac.T @ Ac)
    return out


def approx_kfd_distributed(gammas, labels, cholesky, C, client, owner="ApproxKFD"):
    """Eq. 7 from per-partition ``Gamma`` and labels: ``(alpha', b, n_per_class)``.

    Two map-reduces: the per-class counts and sums of the rows of ``A = Gamma L_r^T``
    (the class means), then the per-class centred scatter ``sum (A - mu)^T (A - mu)``
    -- the in-memory :func:`~sparsekm.approx.fisher.fisher_scatter`, summed by partition.
    """
    from .fisher import fisher_threshold, kfd_solve

    Lr = np.asarray(cholesky, dtype=np.float64)
    gammas = _as_partition_set(client, gammas)
    labels = client.compute(list(labels))  # small: kept on the workers for both passes
    sums = gammas.map(_class_sums, labels, Lr, owner=owner)
    counts = [sum(s[k][0] for s in sums) for k in range(2)]
    if min(counts) == 0:
        raise ValueError(f"{owner}: both classes need at least one sample.")
    means = tuple(sum(s[k][1] for s in sums) / counts[k] for k in range(2))
    scat = gammas.map(_class_scatter, labels, Lr, means, owner=owner)
    N = sum(s[0] for s in scat) / counts[0] + sum(s[1] for s in scat) / counts[1]
    d = means[0] - means[1]
    coef = kfd_solve(N, d, C)
    return coef, fisher_threshold(coef, means), counts


def _sh_block(G, y, block_fn, *args):
    return block_fn(G, y, *args)


def squared_hinge_lbfgs_distributed(gammas, labels, C, m, client, *, max_iter=1000, tol=None,
                                    owner="ApproxSVC", callback=None):
    """The squared-hinge primal, one map-reduce over the partitions per pass over the rows.

    :func:`~sparsekm.approx.squared_hinge.solve_squared_hinge` with ``reduce`` a
    map-reduce: each partition returns its block sums (``m + 1`` numbers for the loss
    and gradient, ``(m + 1)^2`` for a Newton system), the client adds them in partition
    order. With ``tol`` (L-BFGS, then Newton steps to the optimum) the result is the
    in-memory one whatever the partitioning, to rounding. ``gammas`` is a
    :class:`PartitionSet` (or a list of futures / ``dask.delayed``); partitions kept on
    a worker that dies are recomputed from ``X``. Returns ``(w, b, info,
    seconds_per_pass)`` with ``info`` as :func:`solve_squared_hinge`'s.
    """
    import time

    from .squared_hinge import solve_squared_hinge

    times = []
    gammas = _as_partition_set(client, gammas)
    labels = client.compute(list(labels))  # small: kept on the workers for all evaluations

    def reduce(block_fn, *args):
        t0 = time.perf_counter()
        parts = gammas.map(_sh_block, labels, block_fn, *args, owner=owner)
        total = list(parts[0])
        for part in parts[1:]:  # summed in partition order
            for i, v in enumerate(part):
                total[i] = total[i] + v
        times.append(time.perf_counter() - t0)
        return tuple(total)

    w, b, info = solve_squared_hinge(reduce, m, C, max_iter=max_iter, tol=tol,
                                     callback=callback)
    info["partitions_lost"] = gammas.lost
    return w, b, info, np.asarray(times)


# -- the estimators' dask paths ---------------------------------------------------------------


def _fit_basis(est, X, owner, keep_factor="auto", callback=None):
    """Shared start of the models' dask fits: checks, classes, ``m`` and the greedy basis."""
    from .greedy import GreedyBasis, _check_basis_not_empty, _checked_kernel, resolve_n_basis

    X = check_dask_rows(X, owner)
    client = get_client(owner=owner)
    m = resolve_n_basis(est.n_basis, X.shape[0], owner)
    kernel = _checked_kernel(est, X, owner)  # kernel, gamma, degree, coef0 as in memory
    basis = GreedyBasis(n_basis=m, tol=est.tol, kernel=kernel, init=est.init,
                        random_state=est.random_state)
    basis._fit_dask(X, keep_factor=keep_factor, callback=callback)
    _check_basis_not_empty(basis, owner)
    return X, client, kernel, basis


@cluster_guard("ApproxKFD")
def fit_approx_kfd(est, X, y, C):
    """:meth:`ApproxKFD.fit <sparsekm.models.ApproxKFD.fit>` for a dask ``X`` (eq. 7 reduced
    over the partitions; ``y`` a dask or numpy array)."""
    from ..expansion import KernelExpansion

    owner = "ApproxKFD"
    X = check_dask_rows(X, owner)
    blocks = label_blocks(y, X, owner)
    client = get_client(owner=owner)
    classes = binary_classes_distributed(blocks, owner, client)
    labels = label_partitions(blocks, classes)
    X, client, kernel, basis = _fit_basis(est, X, owner)
    gammas, _ = gamma_partitions(X, basis, client)
    coef, b, _ = approx_kfd_distributed(gammas, labels, basis.cholesky_, C, client, owner)
    est.classes_ = classes
    est.kernel_ = kernel
    est.basis_ = basis
    est.coef_ = coef
    est.intercept_ = b
    est.expansion_ = KernelExpansion(basis.basis_vectors_, coef.astype(X.dtype), kernel, b)
    est.n_features_in_ = X.shape[1]
    est.n_kernel_evaluations_ = {"approximation": basis.n_kernel_evaluations_, "training": 0}
    return est


@cluster_guard("ApproxSVC")
def fit_approx_svc(est, X, y, C, *, max_iter=1000, tol=None, keep_features="auto",
                   callback=None):
    """:meth:`ApproxSVC.fit <sparsekm.models.ApproxSVC.fit>` for a dask ``X``.

    The greedy basis over the partitions, then the squared-hinge primal on ``Gamma``
    by L-BFGS (``solver="lbfgs"``; one map-reduce per evaluation). ``Gamma`` of as
    many partitions as the workers' cache budget holds is kept in worker memory
    (``keep_features="auto"``; :func:`plan_cache`), the rest recomputed from ``X`` at
    every evaluation. ``dask_info_`` records how many partitions were kept.
    """
    import time

    from ..expansion import KernelExpansion

    owner = "ApproxSVC"
    if est.basis != "greedy" or est.solver != "lbfgs":
        raise ValueError(
            "ApproxSVC on a dask array needs basis='greedy' and solver='lbfgs' (the "
            "squared-hinge primal, solved by one map-reduce over the partitions per "
            f"L-BFGS step); got basis={est.basis!r}, solver={est.solver!r}. The 'smo' and "
            "'liblinear' solvers need all of Gamma in one process.")
    X = check_dask_rows(X, owner)
    blocks = label_blocks(y, X, owner)
    client = get_client(owner=owner)
    classes = binary_classes_distributed(blocks, owner, client)
    labels = label_partitions(blocks, classes)
    t0 = time.perf_counter()
    X, client, kernel, basis = _fit_basis(est, X, owner)
    t_basis = time.perf_counter() - t0
    gammas, n_kept = gamma_partitions(X, basis, client, keep_features)
    n_parts = len(gammas)
    iters = []
    t1 = time.perf_counter()

    def cb(theta):
        iters.append(time.perf_counter())
        if callback is not None:
            callback(theta)

    w, b, info, times = squared_hinge_lbfgs_distributed(
        gammas, labels, C, basis.n_basis_, client, max_iter=max_iter, tol=tol, owner=owner,
        callback=cb)
    t_svm = time.perf_counter() - t1
    del gammas
    coef = solve_triangular(basis.cholesky_.T.astype(np.float64), w, lower=False,
                            check_finite=False)
    est.classes_ = classes
    est.kernel_ = kernel
    est.basis_ = basis
    est.coef_ = coef
    est.intercept_ = b
    est.support_ = None
    est.expansion_ = KernelExpansion(basis.basis_vectors_, coef.astype(X.dtype), kernel, b)
    est.n_features_in_ = X.shape[1]
    est.n_iter_ = max(info["n_iter"] + info["n_newton"], 1)
    est.n_kernel_evaluations_ = {"approximation": basis.n_kernel_evaluations_,
                                 "training": None}
    est.dask_info_ = {"keep_factor": basis.dask_info_["keep_factor"],
                      "keep_features": n_kept == n_parts, "n_partitions": n_parts,
                      "factor_partitions_kept": basis.dask_info_["partitions_kept"],
                      "features_partitions_kept": n_kept,
                      "basis_seconds": t_basis, "step_seconds": basis.dask_info_["step_seconds"],
                      "svm_seconds": t_svm, "n_evaluations": info["n_evaluations"],
                      "n_newton_steps": info["n_newton"],
                      "partitions_lost": basis.dask_info_.get("partitions_lost", 0)
                      + info["partitions_lost"],
                      "evaluation_seconds": [float(t) for t in times]}
    return est
