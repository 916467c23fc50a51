"""The models on ``Gamma`` over the partitions of a dask array: kernel Fisher
discriminant (eq. 7, reduced over the partitions) and the squared-hinge primal (L-BFGS,
then finite Newton steps; :mod:`sparsekm.approx.squared_hinge`).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from ..utils.validation import check_labels
from .dask_cluster import WorkerLost, pinned_compute, plan_cache, row_partitions, run_watched

__all__ = ["gamma_partitions", "PartitionSet", "label_blocks", "label_partitions",
           "binary_classes_distributed", "approx_kfd_distributed",
           "squared_hinge_lbfgs_distributed"]

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
                res = run_watched(client, futs, owner, pinned={self.homes[k] for k in kept})
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

    Runs on a worker: NaN/inf (:func:`~sparsekm.utils.validation.check_labels`, the
    in-memory fit's error) and continuous targets (scikit-learn's) raise there, and
    :func:`_run` re-raises them on the client.
    """
    from sklearn.utils.multiclass import check_classification_targets

    y = check_labels(y)
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
        parts = run_watched(client, client.compute([dask.delayed(_label_summary)(b) for b in blocks]),
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

