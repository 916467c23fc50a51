"""The dask fits of :class:`~sparsekm.models.ApproxSVC` and
:class:`~sparsekm.models.ApproxKFD`: the greedy basis over the partitions
(:mod:`sparsekm.approx.greedy_distributed`), then the model on ``Gamma``
(:mod:`sparsekm.approx.gamma_distributed`). Each returns a :class:`DistributedFit`;
the models set their own fitted attributes from it.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from scipy.linalg import solve_triangular

from ..expansion import KernelExpansion
from .dask_cluster import check_dask_rows, cluster_guard, get_client
from .gamma_distributed import (
    approx_kfd_distributed,
    binary_classes_distributed,
    gamma_partitions,
    label_blocks,
    label_partitions,
    squared_hinge_lbfgs_distributed,
)
from .greedy import GreedyBasis, check_basis_not_empty, checked_kernel, resolve_n_basis

__all__ = ["DistributedFit", "approx_kfd_fit_distributed", "approx_svc_fit_distributed"]


class DistributedFit(NamedTuple):
    """A model on the greedy basis fitted over the partitions.

    ``classes`` (2,), ``kernel``, ``basis`` (the fitted :class:`GreedyBasis`), ``coef``
    (m,) and ``intercept`` of ``f(x) = sum_j coef_j k(x, z_j) + intercept``, its
    ``expansion``, ``n_kernel_evaluations``, ``n_iter`` (None: closed form) and
    ``dask_info`` (None: not recorded).
    """

    classes: np.ndarray
    kernel: object
    basis: GreedyBasis
    coef: np.ndarray
    intercept: float
    expansion: KernelExpansion
    n_kernel_evaluations: dict
    n_iter: int | None = None
    dask_info: dict | None = None


def _labels(X, y, owner):
    """Checked rows, the label partitions and the two classes."""
    X = check_dask_rows(X, owner)
    blocks = label_blocks(y, X, owner)
    client = get_client(owner=owner)
    classes = binary_classes_distributed(blocks, owner, client)
    return X, classes, label_partitions(blocks, classes)


def _fit_basis(params, X, owner, keep_factor="auto", callback=None):
    """The greedy basis over the partitions, with the settings of ``params`` (an estimator
    with ``n_basis``, ``tol``, ``init``, ``random_state`` and its kernel parameters; only
    read)."""
    client = get_client(owner=owner)
    m = resolve_n_basis(params.n_basis, X.shape[0], owner)
    kernel = checked_kernel(params, X, owner)  # kernel, gamma, degree, coef0 as in memory
    basis = GreedyBasis(n_basis=m, tol=params.tol, kernel=kernel, init=params.init,
                        random_state=params.random_state)
    basis._fit_dask(X, keep_factor=keep_factor, callback=callback)
    check_basis_not_empty(basis, owner)
    return client, kernel, basis


@cluster_guard("ApproxKFD")
def approx_kfd_fit_distributed(params, X, y, C):
    """ApproxKFD's fit for a dask ``X`` (eq. 7 reduced over the partitions; ``y`` a dask or
    numpy array); ``params``: the estimator, whose settings are read."""
    owner = "ApproxKFD"
    X, classes, labels = _labels(X, y, owner)
    client, kernel, basis = _fit_basis(params, X, owner)
    gammas, _ = gamma_partitions(X, basis, client)
    coef, b, _ = approx_kfd_distributed(gammas, labels, basis.cholesky_, C, client, owner)
    return DistributedFit(classes, kernel, basis, coef, b,
                          KernelExpansion(basis.basis_vectors_, coef.astype(X.dtype), kernel, b),
                          {"approximation": basis.n_kernel_evaluations_, "training": 0})


@cluster_guard("ApproxSVC")
def approx_svc_fit_distributed(params, X, y, C, *, max_iter=1000, tol=None,
                               keep_features="auto", callback=None):
    """ApproxSVC's fit for a dask ``X``.

    The greedy basis over the partitions, then the squared-hinge primal on ``Gamma``
    by L-BFGS and finite Newton steps (``solver="lbfgs"``; one map-reduce per
    evaluation). ``Gamma`` of as many partitions as the workers' cache budget holds is
    kept in worker memory (``keep_features="auto"``; :func:`plan_cache`), the rest
    recomputed from ``X`` at every evaluation; ``dask_info`` records how many were kept
    and the seconds of each stage (reported, never used to decide anything).
    """
    owner = "ApproxSVC"
    if params.basis != "greedy" or params.solver != "lbfgs":
        raise ValueError(
            "ApproxSVC on a dask array needs basis='greedy' and solver='lbfgs' (the "
            "squared-hinge primal, solved by one map-reduce over the partitions per "
            f"L-BFGS step); got basis={params.basis!r}, solver={params.solver!r}. The 'smo' "
            "and 'liblinear' solvers need all of Gamma in one process.")
    X, classes, labels = _labels(X, y, owner)
    t0 = time.perf_counter()
    client, kernel, basis = _fit_basis(params, X, owner)
    t_basis = time.perf_counter() - t0
    gammas, n_kept = gamma_partitions(X, basis, client, keep_features)
    n_parts = len(gammas)
    t1 = time.perf_counter()
    w, b, info, times = squared_hinge_lbfgs_distributed(
        gammas, labels, C, basis.n_basis_, client, max_iter=max_iter, tol=tol, owner=owner,
        callback=callback)
    t_svm = time.perf_counter() - t1
    del gammas
    coef = solve_triangular(basis.cholesky_.T.astype(np.float64), w, lower=False,
                            check_finite=False)
    info_basis = basis.dask_info_
    dask_info = {"keep_factor": info_basis["keep_factor"],
                 "keep_features": n_kept == n_parts, "n_partitions": n_parts,
                 "factor_partitions_kept": info_basis["partitions_kept"],
                 "features_partitions_kept": n_kept,
                 "basis_seconds": t_basis, "step_seconds": info_basis["step_seconds"],
                 "svm_seconds": t_svm, "n_evaluations": info["n_evaluations"],
                 "n_newton_steps": info["n_newton"],
                 "partitions_lost": info_basis.get("partitions_lost", 0)
                 + info["partitions_lost"],
                 "evaluation_seconds": [float(t) for t in times]}
    return DistributedFit(classes, kernel, basis, coef, b,
                          KernelExpansion(basis.basis_vectors_, coef.astype(X.dtype), kernel, b),
                          {"approximation": basis.n_kernel_evaluations_, "training": None},
                          max(info["n_iter"] + info["n_newton"], 1), dask_info)
