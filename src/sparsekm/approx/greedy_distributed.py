"""Algorithm 1 of Franc & Hlavac (the greedy basis) over the partitions of a dask array.

See :func:`greedy_basis_distributed`; the plumbing (client, watched round trips, cache
budget) is :mod:`sparsekm.approx.dask_cluster`.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from .dask_cluster import (
    WorkerLost,
    check_finite_block,
    cluster_guard,
    get_client,
    pinned_compute,
    plan_cache,
    row_partitions,
    run_watched,
)

__all__ = ["greedy_basis_distributed"]


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
    X = check_finite_block(np.asarray(X), "X")
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
    X = check_finite_block(np.asarray(X), "X")
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
                res = run_watched(client, futs, owner, pinned={homes[k] for k in kept_now})
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
            total = run_watched(client, client.compute(residuals.sum()), owner,
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

