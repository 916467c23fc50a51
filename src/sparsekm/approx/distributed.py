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

import warnings

from .dask_cluster import *  # noqa: F401,F403
from .dask_cluster import cache_budgets, check_dask_rows, get_client, plan_cache, row_partitions
from .gamma_distributed import *  # noqa: F401,F403
from .gamma_distributed import approx_kfd_distributed, squared_hinge_lbfgs_distributed
from .greedy_distributed import *  # noqa: F401,F403
from .greedy_distributed import greedy_basis_distributed
from .squared_hinge import lbfgs_squared_hinge, squared_hinge_objective

warnings.warn("sparsekm.approx.distributed is split into sparsekm.approx.dask_cluster (the "
              "plumbing), .greedy_distributed (Algorithm 1) and .gamma_distributed (the models "
              "on Gamma); this alias goes in the next release.", DeprecationWarning,
              stacklevel=2)

__all__ = ["check_dask_rows", "get_client", "greedy_basis_distributed",
           "approx_kfd_distributed", "cache_budgets", "plan_cache",
           "squared_hinge_lbfgs_distributed", "squared_hinge_objective",
           "lbfgs_squared_hinge", "row_partitions"]
