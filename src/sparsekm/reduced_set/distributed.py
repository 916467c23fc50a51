"""Reduced-set construction for expansions too big for one process (dask.distributed).

A :class:`DaskExpansion` holds ``Psi = sum_i alpha_i Phi(x_i)`` with vectors and
coefficients as dask arrays split into row partitions (e.g. 10^6 terms on a
cluster). Every kernel sum over the expansion is a map-reduce over the partitions
on the workers of the current ``dask.distributed`` client:

* ``K^{zx} alpha`` (:meth:`DaskExpansion.inner`), the right-hand side of
  Proposition 8 and the ``Psi . Phi(z)`` of the objective;
* the fixed-point sums ``sum_i alpha_i k'(x_i, z)`` and ``sum_i alpha_i k'(x_i, z) x_i``
  of eq. 10/48 (:meth:`DaskExpansion.fixed_point_sums`);
* ``||Psi||^2 = alpha^T K alpha`` (:meth:`DaskExpansion.norm2`), ``O(N^2)`` kernel
  values over pairs of partitions -- only computed on request.

:func:`construct_distributed` is phase 1 of reduced-set construction (eq. 15-17):
each new ``z`` is the fixed-point pre-image (radial kernels) of the residual
``Psi - sum_j beta_j Phi(z_j)``, started from the ``n_init`` vectors with the
largest ``|alpha_i|``; then all ``beta`` by Proposition 8. The client holds only
``Z``, ``beta`` and ``K^z`` (``O(N_z^2 + N_z d)``).
:func:`~sparsekm.reduced_set.reduce_expansion` calls it for a :class:`DaskExpansion`.
"""

from __future__ import annotations

import numpy as np

from ..approx.dask_cluster import (
    check_dask_rows,
    check_finite_block,
    cluster_guard,
    get_client,
    row_partitions,
    run_watched,
)
from ..expansion import KernelExpansion
from ..kernels import Kernel
from ._base import ReducedSetResult, _solve_kz

__all__ = ["DaskExpansion", "construct_distributed"]

_TINY = 1e-300


def _block(X, a):
    """A partition's vectors and coefficients in float64, checked finite on the worker."""
    X = check_finite_block(np.asarray(X, dtype=np.float64), "vectors")
    a = check_finite_block(np.asarray(a, dtype=np.float64), "coef")
    return X, a


def _inner_block(X, a, kernel, Z):
    X, a = _block(X, a)
    return kernel.mmv(Z, X, a)


def _fp_block(X, a, kernel, Z):
    X, a = _block(X, a)
    W = np.repeat(a[:, None], Z.shape[0], axis=1)
    s = kernel.weighted_sums(X, Z, W, derivative=True, moment=True)
    return s.total, s.moment


def _pair_block(Xp, ap, Xq, aq, kernel):
    Xp, ap = _block(Xp, ap)
    Xq, aq = _block(Xq, aq)
    return float(ap @ kernel.mmv(Xp, Xq, aq))


def _top_block(X, a, start, k):
    X, a = _block(X, a)
    a = np.abs(a)
    idx = np.argsort(-a, kind="stable")[:k]
    return a[idx], idx + start, X[idx]


class DaskExpansion:
    """``Psi = sum_i coef_i Phi(vectors_i)`` with dask-array vectors and coefficients.

    Parameters
    ----------
    vectors : dask.array.Array of shape (n_terms, n_features)
    coef : dask.array.Array of shape (n_terms,)
        Single-output coefficients; re-chunked to the row chunks of ``vectors``.
    kernel : Kernel
    intercept : float, default=0.0
    client : distributed.Client or None
        ``None``: the current client.
    """

    def __init__(self, vectors, coef, kernel, intercept=0.0, client=None):
        import dask.array as da

        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a sparsekm.kernels.Kernel instance; got "
                            f"{type(kernel).__name__}.")
        if not isinstance(vectors, da.Array):
            raise TypeError(f"vectors must be a dask array; got {type(vectors).__name__} (use "
                            "KernelExpansion for in-memory arrays).")
        vectors = check_dask_rows(vectors, "DaskExpansion", name="vectors")
        coef = coef if isinstance(coef, da.Array) else da.from_array(np.asarray(coef))
        if coef.ndim != 1:
            raise ValueError(f"coef must be 1-D (single output); got shape {coef.shape}.")
        if any(np.isnan(c) for c in coef.chunks[0]):
            raise ValueError("DaskExpansion: coef has unknown chunk sizes; call "
                             "coef.compute_chunk_sizes() first.")
        if coef.shape[0] != vectors.shape[0]:
            raise ValueError(f"coef must have one row per expansion vector: expected "
                             f"{vectors.shape[0]} rows, found {coef.shape[0]}.")
        self.vectors = vectors
        self.coef = coef.rechunk({0: vectors.chunks[0]})
        self.kernel = kernel
        self.intercept = float(intercept)
        self.client = get_client(client, "DaskExpansion")
        self._parts = list(zip(row_partitions(self.vectors),
                               list(self.coef.to_delayed().ravel()), strict=True))

    @property
    def n_terms(self):
        return int(self.vectors.shape[0])

    @property
    def n_features(self):
        return int(self.vectors.shape[1])

    def _map(self, func, *args):
        import dask

        kern = dask.delayed(self.kernel, pure=True, traverse=False)
        tasks = [dask.delayed(func)(X, a, kern, *args) for X, a in self._parts]
        return run_watched(self.client, self.client.compute(tasks), "DaskExpansion")

    def _check_Z(self, Z):
        """``Z`` as a finite float64 (n_z, n_features) array, checked on the client."""
        from ..utils.validation import check_array

        Z = check_array(Z, "Z", ndim=None, dtype=np.float64)  # NaN/inf, non-numeric
        if Z.ndim == 1:
            Z = Z[None, :]
        if Z.ndim != 2:
            raise ValueError(f"Z must be a 2-D array (n_z, n_features); got shape {Z.shape}.")
        if Z.shape[1] != self.n_features:
            raise ValueError(f"Z has {Z.shape[1]} features, but DaskExpansion is expecting "
                             f"{self.n_features} features as input.")
        return Z

    @cluster_guard("DaskExpansion")
    def inner(self, Z):
        """``K^{zx} alpha``: ``Psi . Phi(z_j)`` for every row of ``Z``, shape (n_z,)."""
        Z = self._check_Z(Z)
        out = np.zeros(Z.shape[0])
        for part in self._map(_inner_block, Z):
            out += part
        return out

    @cluster_guard("DaskExpansion")
    def fixed_point_sums(self, Z):
        """``(sum_i alpha_i k'(x_i, z_u), sum_i alpha_i k'(x_i, z_u) x_i)`` per row of ``Z``."""
        Z = self._check_Z(Z)
        den, num = np.zeros(Z.shape[0]), np.zeros(Z.shape)
        for t, mom in self._map(_fp_block, Z):
            den += t
            num += mom
        return den, num

    @cluster_guard("DaskExpansion")
    def norm2(self):
        """``||Psi||^2 = alpha^T K alpha`` over all pairs of partitions (``O(N^2)`` kernel values)."""
        import dask

        kern = dask.delayed(self.kernel, pure=True, traverse=False)
        P = self._parts
        tasks = [dask.delayed(_pair_block)(P[p][0], P[p][1], P[q][0], P[q][1], kern)
                 for p in range(len(P)) for q in range(p, len(P))]
        vals = run_watched(self.client, self.client.compute(tasks), "DaskExpansion")
        total, t = 0.0, 0
        for p in range(len(P)):
            for q in range(p, len(P)):
                total += vals[t] if p == q else 2.0 * vals[t]
                t += 1
        return max(total, 0.0)

    @cluster_guard("DaskExpansion")
    def largest_terms(self, k):
        """The ``k`` vectors with the largest ``|alpha_i|`` (ties: lowest index), shape (k, d)."""
        import dask

        starts = np.concatenate([[0], np.cumsum(self.vectors.chunks[0])[:-1]])
        tasks = [dask.delayed(_top_block)(X, a, int(s), k)
                 for (X, a), s in zip(self._parts, starts, strict=True)]
        parts = run_watched(self.client, self.client.compute(tasks), "DaskExpansion")
        vals = np.concatenate([p[0] for p in parts])
        idx = np.concatenate([p[1] for p in parts])
        rows = np.vstack([p[2] for p in parts])
        order = np.lexsort((idx, -vals))[:k]
        return rows[order]


@cluster_guard("reduce_expansion")
def construct_distributed(expansion, n_vectors, *, n_init=3, max_iter=100, tol=1e-6,
                          compute_norm2=None):
    """Phase 1 of reduced-set construction with the sums over ``Psi`` on the cluster.

    Parameters
    ----------
    expansion : DaskExpansion
        Single-output expansion with a radial kernel (fixed-point iteration, eq. 10/48).
    n_vectors : int
        ``N_z``.
    n_init : int, default=3
        Starts per one-term step: the ``n_init`` vectors with the largest ``|alpha|``.
    max_iter, tol
        Fixed-point iterations per start and the relative step tolerance.
    compute_norm2 : bool or None
        ``||Psi||^2`` (``O(N^2)``) for the objective; ``None`` computes it for at most
        20,000 terms. Without it ``objective`` is NaN and ``info["objective_minus_norm2"]``
        holds ``||Psi - Psi'||^2 - ||Psi||^2 = -c^T beta`` after each step.

    Returns
    -------
    ReducedSetResult
    """
    kernel = expansion.kernel
    if not (kernel.is_radial and getattr(kernel, "supports_fixed_point", True)):
        raise ValueError("construct_distributed needs a radial kernel with a bounded k' "
                         f"(fixed-point pre-images); got {kernel!r}.")
    if compute_norm2 is None:
        compute_norm2 = expansion.n_terms <= 20_000
    norm2 = expansion.norm2() if compute_norm2 else np.nan
    starts = expansion.largest_terms(max(1, int(n_init)))
    d = expansion.n_features
    Z, B, c = np.empty((0, d)), np.empty(0), np.empty(0)
    Kz = np.empty((0, 0))
    rel_path, n_iter = [], 0
    for _ in range(int(n_vectors)):
        # One-term steps from every start at once: z <- num / den (eq. 10/48) for the
        # residual Psi - sum_j beta_j Phi(z_j); the Z part is summed on the client.
        Zs = np.vstack([starts, Z[-1:]]) if Z.shape[0] else starts.copy()
        active = np.ones(Zs.shape[0], bool)
        for _it in range(int(max_iter)):
            den, num = expansion.fixed_point_sums(Zs)
            if Z.shape[0]:
                Wz = np.repeat(-B[:, None], Zs.shape[0], axis=1)
                s = kernel.weighted_sums(Z, Zs, Wz, derivative=True, moment=True)
                den, num = den + s.total, num + s.moment
            n_iter += 1
            ok = np.abs(den) > _TINY
            new = Zs.copy()
            new[ok] = num[ok] / den[ok, None]
            step = np.linalg.norm(new - Zs, axis=1) / (1.0 + np.linalg.norm(Zs, axis=1))
            Zs = np.where(active[:, None], new, Zs)
            active &= step > tol
            if not active.any():
                break
        # The start with the largest (Psi_m . Phi(z))^2 / k(z, z) wins (eq. 45).
        proj = expansion.inner(Zs)
        if Z.shape[0]:
            proj -= kernel(Zs, Z) @ B
        gain = proj ** 2 / np.maximum(kernel.diag(Zs), _TINY)
        z = Zs[int(np.argmax(gain))]
        kz = kernel(Z, z[None, :])[:, 0] if Z.shape[0] else np.empty(0)
        m = Z.shape[0]
        Kn = np.empty((m + 1, m + 1))
        Kn[:m, :m], Kn[:m, m], Kn[m, :m] = Kz, kz, kz
        Kn[m, m] = kernel.diag(z[None, :])[0]
        Z = np.vstack([Z, z])
        Kz = Kn
        c = np.append(c, expansion.inner(z[None, :])[0])
        B = _solve_kz(Kz, c)
        rel_path.append(-float(c @ B))  # ||Psi - Psi'||^2 - ||Psi||^2 at Proposition 8
    path = np.maximum(norm2 + np.asarray(rel_path), 0.0)
    out = KernelExpansion(Z, B, kernel, expansion.intercept)
    return ReducedSetResult(out, float(path[-1]), path, support=None, norm2=norm2,
                            n_iter=n_iter, info={"objective_minus_norm2": np.asarray(rel_path)})
