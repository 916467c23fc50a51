"""Greedy selection of basis vectors: training-set approximation (Franc & Hlaváč).

The mapped training set ``Phi(X)`` is represented in the span of ``m`` selected
training points ``X_r`` (section 2 of *Training set approximation for kernel
methods*). Every point gets coordinates ``gamma(x) = R^{-T} k_r(x)`` in an
orthonormal basis of ``span Phi(X_r)`` (eq. 3, ``K_r = R^T R``), so that
``k'(x_i, x_j) = gamma_i^T gamma_j`` approximates the kernel and a linear method on
``Gamma`` is a kernel method on the approximated training set.

Algorithm 1 adds, one at a time, the point with the largest residual

    se(x) = k(x, x) - 2 k_r(x)^T beta + beta^T K_r beta = k(x, x) - ||gamma(x)||^2,

which is exactly the pivot rule of a *pivoted incomplete Cholesky* factorisation
of the Gram matrix. We implement it that way: adding pivot ``p`` costs one kernel
column ``k(X, x_p)`` and one matrix-vector product with the current factor,

    l_new = (k(X, x_p) - L L[p]^T) / sqrt(se(x_p)),     se <- se - l_new^2,

so selecting ``m`` points takes O(n m^2) time and O(n m) memory, never the n x n
Gram matrix and never the O(n m^3) re-inversions of the paper (see
``/work/shared/DESIGN-NOTES.md``, "Greedy basis = pivoted Cholesky").
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._constraints import BACKEND, KERNEL, NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE
from ..backend import resident, solver_kernel
from ..kernels import Kernel, estimator_kernel, resolve_kernel
from ..parallel import dask_rowwise, is_dask_array
from ..persistence import register, spec
from ..utils._deprecation import keyword_only_args
from ..utils.validation import OutputContainerMixin, check_array, validate_X
from .dask_cluster import check_dask_rows, get_client
from .greedy_distributed import greedy_basis_distributed

__all__ = ["GreedyBasis", "greedy_basis", "pivoted_cholesky", "checked_kernel", "check_basis_not_empty"]

_INITS = ("random", "max-diag")
_PIVOTING = ("greedy", "random")


def _numerical_floor(diag, n):
    """Residuals below this are rounding noise: the point is already in the span."""
    scale = float(np.max(diag)) if diag.size else 0.0
    return 10.0 * n * np.finfo(diag.dtype).eps * max(scale, np.finfo(diag.dtype).tiny)


def pivoted_cholesky(X, kernel, n_new, *, tol=0.0, first=None, factor=None, residuals=None,
                     pivoting="greedy", random_state=None, lookahead=None, callback=None):
    """Pivoted incomplete Cholesky of the Gram matrix of ``X`` (Algorithm 1).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Points to approximate (already validated).
    kernel : Kernel or DeviceKernel
        A :class:`~sparsekm.backend.DeviceKernel` (:func:`~sparsekm.backend.solver_kernel`)
        computes ``k(x, x)``, the row norms and each pivot's kernel column on its
        device from one (:func:`~sparsekm.backend.resident`) copy of ``X``; only the
        column (``n_samples`` values per pivot) comes back to the factor update.
    n_new : int
        Maximum number of pivots to add.
    tol : float, default=0.0
        Stop as soon as ``max se(x) < tol`` (the paper's epsilon).
    first : int or None
        Index of the first pivot; ``None`` applies the pivoting rule from the start.
    factor : ndarray of shape (m0, n_samples), optional
        Coordinates ``gamma`` of ``X`` in an existing basis of ``m0`` vectors (one
        row per basis vector); the factorisation continues from it (online mode).
    residuals : ndarray of shape (n_samples,), optional
        ``se(x)`` for the existing basis (``k(x, x)`` when there is none).
    pivoting : {"greedy", "random"}, default="greedy"
        ``"greedy"``: the largest residual (Algorithm 1). ``"random"``: a pivot drawn
        with probability proportional to ``se(x)`` (randomly pivoted Cholesky, Chen,
        Epperly, Tropp & Webber 2022; not in Franc & Hlaváč).
    random_state : int, RandomState instance or None
        Used by ``pivoting="random"``.
    lookahead : int or None, default=None
        Pivots per block of the blocked variant (0: plain left-looking update).
        At the start of each block the projections of the ``2 * lookahead``
        points with the largest residuals on the current basis are computed in one
        matrix-matrix product, so that a pivot among them costs only a product with
        the block's own rows. The pivots chosen are exactly the same (the greedy
        argmax is always taken over all residuals); a pivot outside the candidates
        falls back to the plain update. For random pivoting the candidates are
        ``2 * lookahead`` proposals drawn from the residuals at the block start and
        accepted by rejection sampling, which keeps the exact distribution.
        ``None`` uses 64 for large problems.
    callback : callable, optional
        Called as ``callback(j)`` after every pivot (progress bars).

    Returns
    -------
    pivots : ndarray of shape (n_selected,) of int
        Indices into ``X`` of the new basis vectors, in order of selection.
    factor : ndarray of shape (m0 + n_selected, n_samples)
        ``L^T``: row ``j`` is the ``j``-th coordinate of every point, so that
        ``factor.T @ factor`` approximates ``K(X, X)``; ``factor[:, pivots].T``
        is lower triangular (the Cholesky factor of ``K_r`` for the new pivots).
    residuals : ndarray of shape (n_samples,)
        ``se(x)`` after the selection (>= 0, exactly 0 at the pivots).
    n_kernel_evaluations : int
        Kernel values computed (one column of ``n_samples`` values per pivot).
    """
    if pivoting not in _PIVOTING:
        raise ValueError(f"pivoting must be one of {_PIVOTING}; got {pivoting!r}.")
    n = X.shape[0]
    dtype = X.dtype
    m0 = 0 if factor is None else factor.shape[0]
    se = (kernel.diag(X) if residuals is None else residuals).astype(dtype, copy=True)
    floor = _numerical_floor(se if residuals is None else kernel.diag(X), n)
    n_new = int(min(n_new, n))
    L = np.empty((m0 + n_new, n), dtype=dtype)
    if m0:
        L[:m0] = factor
    x_sq = kernel._sqnorms(X)
    if lookahead is None:
        lookahead = 64 if n * (m0 + n_new) >= 2**22 else 0
    rng = check_random_state(random_state) if pivoting == "random" else None
    pivots = []
    block_start = m0
    cand_pos, cand_proj = {}, None
    queue = []  # random pivoting: proposals drawn at the block start, with their se

    def new_block(j):
        nonlocal block_start, cand_pos, cand_proj, queue
        block_start = j
        if pivoting == "greedy":
            c = min(2 * lookahead, n)
            P = np.argpartition(se, n - c)[n - c:]
        else:
            P = rng.choice(n, size=2 * lookahead, p=se / se.sum())
            queue = [(int(q), float(se[q])) for q in P]
            P = np.unique(P)
        cand_pos = {int(q): t for t, q in enumerate(P)}
        cand_proj = L[:j, P].T @ L[:j]

    for j in range(m0, m0 + n_new):
        se_max = float(se.max())
        if se_max < tol or se_max <= floor:
            break
        if lookahead and (j - block_start >= lookahead or (pivoting == "random" and not queue)):
            new_block(j)
        if first is not None and not pivots:
            p = int(first)
        elif pivoting == "greedy":
            p = int(np.argmax(se))
        elif lookahead:
            # Rejection sampling: proposals ~ se at the block start are accepted with
            # probability se_now / se_then <= 1, so accepted pivots ~ se_now exactly.
            p = None
            while p is None:
                if not queue:
                    new_block(j)
                q, se_then = queue.pop(0)
                if se[q] > floor and rng.random_sample() * se_then < se[q]:
                    p = q
        else:
            p = int(rng.choice(n, p=se / se.sum()))
            while se[p] <= floor:
                p = int(rng.choice(n, p=se / se.sum()))
        se_p = float(se[p])
        if se_p <= floor:
            break
        col = kernel._block(X, X[p:p + 1], x_sq, None if x_sq is None else x_sq[p:p + 1])[:, 0]
        t = cand_pos.get(p)
        if t is not None:
            # Projection on the basis before this block was computed for the whole
            # block of candidates in one GEMM; only this block's rows remain.
            col -= cand_proj[t]
            if j > block_start:
                col -= L[block_start:j, p] @ L[block_start:j]
        elif j:
            col -= L[:j, p] @ L[:j]
        col /= np.sqrt(se_p)
        # Exact pivot entry: GEMM distances can lose k(x_p, x_p) entirely (RBF with
        # gamma ||x||^2 > 1/eps), which would leave a zero on the diagonal of L_r.
        col[p] = np.sqrt(se_p)
        L[j] = col
        se -= col * col
        se[p] = 0.0
        np.maximum(se, 0.0, out=se)
        pivots.append(p)
        if callback is not None:
            callback(len(pivots))
    m = m0 + len(pivots)
    # Stopped early (tol or numerical rank): release the unused rows.
    L = L[:m].copy() if m < 0.75 * L.shape[0] else L[:m]
    return np.asarray(pivots, dtype=np.intp), L, se, n * len(pivots)


def greedy_basis(X, kernel, n_basis, *, tol=1e-3, init="random", pivoting="greedy",
                 random_state=None, backend=None, device=None):
    """Functional form of :class:`GreedyBasis` (Algorithm 1 of Franc & Hlaváč).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    kernel : Kernel
    n_basis : int
        Maximum number of basis vectors ``m``.
    tol : float, default=1e-3
        The paper's epsilon: stop once ``se(x) < tol`` for every training point.
    init : {"random", "max-diag"}
        First basis vector: a random point (the paper's step 1) or the point with
        the largest ``k(x, x)``.
    pivoting : {"greedy", "random"}, default="greedy"
        See :class:`GreedyBasis`.
    random_state : int, RandomState instance or None
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel evaluations (``None``: :func:`sparsekm.config.get_config`);
        with ``"torch"``, ``X`` goes to ``device`` once (see :func:`pivoted_cholesky`).
    device : str or None, default=None
        torch device (``None``: the configured one, else CUDA when available).

    Returns
    -------
    indices : ndarray of shape (m,)
    Gamma : ndarray of shape (n_samples, m)
        Coordinates ``gamma_i`` of eq. 3 (``Gamma @ Gamma.T`` approximates ``K``).
    residuals : ndarray of shape (n_samples,)
        ``se(x_i)``.
    """
    X = _check_X(X)
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a sparsekm.kernels.Kernel; got {type(kernel).__name__}.")
    kernel = checked_kernel(kernel, X, "greedy_basis")  # se(x) >= 0 needs a PSD kernel
    kernel = solver_kernel(kernel, backend, device)
    resident(kernel, X)
    rng = check_random_state(random_state)
    first = _first_pivot(kernel, X, init, rng)
    piv, L, se, _ = pivoted_cholesky(X, kernel, n_basis, tol=tol, first=first,
                                     pivoting=pivoting, random_state=rng)
    return piv, L.T, se


def _first_pivot(kernel, X, init, rng):
    if init == "random":
        return int(rng.randint(X.shape[0]))
    if init == "max-diag":
        return int(np.argmax(kernel.diag(X)))
    raise ValueError(f"The 'init' parameter of GreedyBasis must be one of {_INITS}. "
                     f"Got {init!r} instead.")


@register
class GreedyBasis(ClassNamePrefixFeaturesOutMixin, OutputContainerMixin, TransformerMixin,
                  BaseEstimator):
    """Training-set approximation by greedily selected basis vectors (Algorithm 1).

    Selects ``m <= n_basis`` training points ``X_r`` whose images span a subspace
    that approximates the mapped training set, and maps any point to its
    coordinates ``gamma(x) = R^{-T} k_r(x)`` in an orthonormal basis of that
    subspace (eq. 3), so that ``transform(X) @ transform(Y).T`` approximates
    ``K(X, Y)``.

    Parameters
    ----------
    n_basis : int, default=100
        Maximum number of basis vectors ``m`` (the paper's memory limit).
    tol : float, default=1e-3
        The paper's epsilon: selection stops once ``se(x) < tol`` for every
        training point. ``0`` selects ``n_basis`` points (or the numerical rank).
    kernel : Kernel, str or None, default=None
        A :class:`~sparsekm.kernels.Kernel` object (it carries its own parameters),
        or a name as in scikit-learn: ``"rbf"``, ``"poly"``, ``"sigmoid"``,
        ``"linear"`` (or ``"imq"``); ``None`` is ``"rbf"``.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of the string kernels ``"rbf"``, ``"poly"`` and
        ``"sigmoid"`` (and ``None``), as in scikit-learn: ``"scale"`` is
        ``1 / (n_features * X.var())``, ``"auto"`` is ``1 / n_features``.
    degree : int, default=3
        Degree of ``kernel="poly"``.
    coef0 : float, default=0.0
        Constant term of ``kernel="poly"`` and ``kernel="sigmoid"``.
    init : {"random", "max-diag"}, default="random"
        First basis vector: random (Algorithm 1, step 1) or the largest ``k(x, x)``.
    pivoting : {"greedy", "random"}, default="greedy"
        ``"greedy"`` adds the point with the largest residual (Algorithm 1).
        ``"random"`` draws it with probability proportional to its residual
        (randomly pivoted Cholesky; Chen, Epperly, Tropp & Webber, 2022 -- an
        extension, not in the paper): it spends fewer vectors on outliers and
        usually gives a lower *mean* residual, while the greedy rule minimises the
        *largest* one.
    random_state : int, RandomState instance or None, default=None
        Used by ``init="random"`` and ``pivoting="random"``.
    backend : {"numpy", "torch"} or None, default=None
        Engine of the kernel evaluations of :meth:`fit` and :meth:`partial_fit`;
        ``None``: :func:`sparsekm.config.get_config` ``["backend"]``. With
        ``"torch"`` the training data goes to the configured device
        (``config["device"]``; ``None``: CUDA when available, else CPU) once per
        fit, and each pivot's kernel column (``n_samples`` values) comes back for
        the Cholesky update on the CPU. The fitted attributes are numpy arrays.

    Attributes
    ----------
    basis_indices_ : ndarray of shape (m,)
        Indices of the selected points in the training data (in the stream of all
        batches for :meth:`partial_fit`), in order of selection.
    basis_vectors_ : ndarray of shape (m, n_features)
        The selected points ``X_r``.
    cholesky_ : ndarray of shape (m, m)
        Lower-triangular ``L_r = R^T`` with ``K_r = L_r L_r^T``.
    residuals_ : ndarray of shape (n_samples,)
        ``se(x_i)`` of every training point after the selection (for
        :meth:`partial_fit`: of the last batch, when it was processed). After a fit
        on a dask array: a dask array on the cluster, not stored by
        :func:`sparsekm.save` (the loaded model has no ``residuals_``; ``mse_`` is kept).
    mse_ : float
        Mean of ``se(x)`` over the training points (the paper's mse divided by
        ``n``; for :meth:`partial_fit` the running mean over all batches, each
        measured when processed, an upper bound on the current value).
    n_basis_ : int
        ``m``, the number of selected vectors (``< n_basis`` when ``tol`` was met).
    kernel_ : Kernel
    n_kernel_evaluations_ : int
        Kernel values computed by the selection (the paper's ker_eval).
    n_samples_seen_ : int
    n_features_in_ : int

    Notes
    -----
    Implemented as a pivoted incomplete Cholesky factorisation: O(n m^2) time and
    O(n m) memory. ``se(x) = k(x,x) - ||gamma(x)||^2`` is non-increasing as vectors
    are added, and ``sum_i se(x_i)`` is the paper's mse (section 3).

    References
    ----------
    V. Franc and V. Hlaváč, *Training set approximation for kernel methods*.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.approx import GreedyBasis
    >>> from sparsekm.kernels import RBF
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> gb = GreedyBasis(n_basis=40, kernel=RBF(0.5), random_state=0).fit(X)
    >>> Gamma = gb.transform(X)
    >>> Gamma.shape
    (200, 40)
    >>> # |k(x_i, x_j) - gamma_i . gamma_j| <= sqrt(se(x_i) se(x_j)) (Cauchy-Schwarz)
    >>> err = np.abs(Gamma @ Gamma.T - RBF(0.5)(X))
    >>> bool(np.all(err <= np.sqrt(np.outer(gb.residuals_, gb.residuals_)) + 1e-12))
    True
    """

    # Fitted state restored by sparsekm.load (see docs/persistence.md).
    _persist_attrs = {
        "kernel_": spec.kernel(),
        "n_features_in_": spec.int(bind="n_features"),
        "n_samples_seen_": spec.int(),
        "basis_indices_": spec.array("iu", ("n_basis",)),
        "basis_vectors_": spec.array("f", ("n_basis", "n_features")),
        "cholesky_": spec.array("f", ("n_basis", "n_basis")),
        # n-long: left out of the file when it is a dask array (a fit on a cluster)
        "residuals_": spec.array("f", (None,), optional=True, omit_dask=True),
        "mse_": spec.float(),
        "n_basis_": spec.int(bind="n_basis"),
        "n_kernel_evaluations_": spec.int(),
        # timings and state mode of a fit on a dask array (informational)
        "dask_info_": spec.dict(spec.one_of(
            spec.bool(), spec.int(), spec.float(), spec.str(),
            spec.list(spec.one_of(spec.int(), spec.float()))), optional=True),
        # pivoting="random": the random stream where the last fit left it (MT19937 state),
        # so that partial_fit after save/load draws the same pivots as without it
        "random_stream_": spec.dict(spec.one_of(spec.array("u", (624,)), spec.int(),
                                                spec.float()),
                                    keys=("key", "pos", "has_gauss", "cached_gaussian"),
                                    optional=True),
    }

    # Checked by sparsekm.load on every parameter read from a file.
    _parameter_constraints = {
        **KERNEL, "n_basis": POSITIVE_INT, "tol": NON_NEGATIVE,
        "init": [StrOptions(set(_INITS))], "pivoting": [StrOptions(set(_PIVOTING))],
        "random_state": RANDOM_STATE, "backend": BACKEND}

    @keyword_only_args
    def __init__(self, n_basis=100, *, tol=1e-3, kernel=None, init="random", pivoting="greedy",
                 random_state=None,
                 gamma="scale", degree=3, coef0=0.0, backend=None):
        self.n_basis = n_basis
        self.tol = tol
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.init = init
        self.pivoting = pivoting
        self.random_state = random_state
        self.backend = backend

    # -- fitting -------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Select the basis vectors on ``X`` (Algorithm 1).

        A ``dask.array`` runs Algorithm 1 over its row chunks on the workers of the
        current ``dask.distributed`` client (see :mod:`sparsekm.approx.greedy_distributed`):
        the same basis as the in-memory fit, with ``residuals_`` a dask array.
        """
        if is_dask_array(X):
            self._fit_dask(X)
            return self
        self._fit(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit and return ``Gamma`` of the training points (no extra kernel evaluations).

        The result is the transposed Cholesky factor itself (Fortran-ordered), so no
        second ``n x m`` array is allocated. For a dask array: a lazy dask array
        (:meth:`transform` of ``X`` with the fitted basis).
        """
        if is_dask_array(X):
            return self._fit_dask(X).transform(X)
        return self._fit(X).T

    def _keep_stream(self, rng):
        """Keep ``rng`` for :meth:`partial_fit`, and with ``pivoting="random"`` its state as
        ``random_stream_`` (saved in sparsekm files, so a loaded model continues it)."""
        self._rng = rng
        if self.pivoting == "random" and isinstance(rng, np.random.RandomState):
            name, key, pos, has_gauss, cached = rng.get_state()
            self.random_stream_ = {"key": np.array(key, dtype=np.uint32), "pos": int(pos),
                                   "has_gauss": int(has_gauss),
                                   "cached_gaussian": float(cached)}
        else:
            self.__dict__.pop("random_stream_", None)

    def _fit_dask(self, X, keep_factor="auto", callback=None):
        """Algorithm 1 over the partitions of a dask array (nothing of size n on the client)."""
        self._validate_params()
        X = check_dask_rows(X, "GreedyBasis")
        client = get_client(owner="GreedyBasis")
        # gamma="scale" reduces X.var() on the workers (one number comes back).
        self.kernel_ = checked_kernel(self, X)
        rng = check_random_state(self.random_state)
        first = int(rng.randint(X.shape[0])) if self.init == "random" else None
        if self.pivoting != "greedy":
            raise ValueError("GreedyBasis on a dask array supports pivoting='greedy' only; got "
                             f"pivoting={self.pivoting!r}.")
        out = greedy_basis_distributed(X, self.kernel_, self.n_basis, tol=self.tol, first=first,
                                       init=self.init, keep_factor=keep_factor, client=client,
                                       callback=callback)
        piv = out["pivots"]
        self._keep_stream(rng)
        self.n_features_in_ = X.shape[1]
        self.n_samples_seen_ = X.shape[0]
        self.basis_indices_ = piv
        self.basis_vectors_ = out["basis_vectors"]
        self.cholesky_ = np.ascontiguousarray(out["cholesky"], dtype=X.dtype)
        self.residuals_ = out["residuals"]
        self.mse_ = out["mse"]
        self.n_basis_ = len(piv)
        self.n_kernel_evaluations_ = int(X.shape[0] * (1 + len(piv)))
        self.dask_info_ = {"keep_factor": out["keep_factor"],
                           "partitions_kept": out["partitions_kept"],
                           "n_partitions": out["n_partitions"],
                           "partitions_lost": out["partitions_lost"],
                           "step_seconds": out["step_seconds"]}
        return self

    def _fit(self, X):  # reached through fit, fit_transform, partial_fit (``_fit_context``)
        X = validate_X(self, X)
        self.kernel_ = checked_kernel(self, X)
        rng = check_random_state(self.random_state)
        engine = solver_kernel(self.kernel_, self.backend)
        resident(engine, X)
        first = _first_pivot(engine, X, self.init, rng)
        piv, L, se, n_eval = pivoted_cholesky(X, engine, self.n_basis, tol=self.tol,
                                              first=first, pivoting=self.pivoting,
                                              random_state=rng)
        self._keep_stream(rng)  # partial_fit continues the same random stream
        self.n_features_in_ = X.shape[1]
        self.n_samples_seen_ = X.shape[0]
        self.basis_indices_ = piv
        self.basis_vectors_ = X[piv].copy()
        self.cholesky_ = np.ascontiguousarray(L[:, piv].T)
        self.residuals_ = se
        self.mse_ = float(se.mean())
        self.n_basis_ = len(piv)
        self.n_kernel_evaluations_ = int(X.shape[0] + n_eval)
        return L

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Process one batch of a stream (on-line Algorithm 1).

        The batch's residuals are computed against the current basis; then its
        points with the largest residuals are added, greedily, while some residual
        is at least ``tol`` and fewer than ``n_basis`` vectors are selected. Memory
        stays O(batch_size * m); earlier batches are never revisited, so once the
        budget ``n_basis`` is spent later batches only get measured.
        """
        if is_dask_array(X):
            raise TypeError("GreedyBasis.partial_fit takes in-memory batches; for a dask array "
                            "use fit (Algorithm 1 over its partitions on the cluster).")
        if not hasattr(self, "basis_vectors_"):
            self._fit(X)
            return self
        X = validate_X(self, X, reset=False)
        X = X.astype(self.basis_vectors_.dtype, copy=False)
        m0 = self.n_basis_
        G0 = self._coordinates(X).T  # (m0, n_batch)
        se0 = self.kernel_.diag(X) - np.einsum("ij,ij->j", G0, G0)
        np.maximum(se0, 0.0, out=se0)
        budget = max(int(self.n_basis) - m0, 0)
        rng = getattr(self, "_rng", None)
        if rng is None:  # a loaded model: the stream where its last fit left it
            rng = self._rng = _stream(getattr(self, "random_stream_", None), self.random_state)
        engine = solver_kernel(self.kernel_, self.backend)
        resident(engine, X)
        piv, L, se, n_eval = pivoted_cholesky(X, engine, budget, tol=self.tol,
                                              factor=G0, residuals=se0,
                                              pivoting=self.pivoting, random_state=rng)
        if len(piv):
            m = m0 + len(piv)
            chol = np.zeros((m, m), dtype=self.cholesky_.dtype)
            chol[:m0, :m0] = self.cholesky_
            chol[m0:, :] = L[:, piv].T
            self.cholesky_ = chol
            self.basis_vectors_ = np.vstack([self.basis_vectors_, X[piv]])
            self.basis_indices_ = np.concatenate([self.basis_indices_,
                                                  piv + self.n_samples_seen_])
            self.n_basis_ = m
        self._keep_stream(rng)
        self.residuals_ = se
        total = self.mse_ * self.n_samples_seen_ + float(se.sum())
        self.n_samples_seen_ += X.shape[0]
        self.mse_ = total / self.n_samples_seen_
        self.n_kernel_evaluations_ += int(X.shape[0] * (m0 + 1) + n_eval)
        return self

    # -- using the basis ---------------------------------------------------------------
    def _coordinates(self, X):
        if self.n_basis_ == 0:
            return np.zeros((X.shape[0], 0), dtype=X.dtype)
        Kxr = self.kernel_(X, self.basis_vectors_)
        return solve_triangular(self.cholesky_, Kxr.T, lower=True, check_finite=False).T

    @dask_rowwise
    def transform(self, X):
        """Coordinates ``Gamma`` (eq. 3): ``gamma(x) = R^{-T} k_r(x)``; shape (n_samples, m).

        A ``dask.array`` gives a dask array, chunk by chunk of rows (see
        :mod:`sparsekm.parallel`).
        """
        check_is_fitted(self, "basis_vectors_")
        X = validate_X(self, X, reset=False)
        return self._coordinates(X)

    @dask_rowwise
    def approximation_error(self, X):
        """Residual ``se(x) = ||Phi(x) - Phi(x)'||^2`` of each row of ``X`` (section 3)."""
        check_is_fitted(self, "basis_vectors_")
        X = validate_X(self, X, reset=False)
        G = self._coordinates(X)
        se = self.kernel_.diag(X) - np.einsum("ij,ij->i", G, G)
        return np.maximum(se, 0.0)

    @dask_rowwise
    def coefficients(self, X):
        """``beta(x) = K_r^{-1} k_r(x)`` of eq. 2, shape (n_samples, m)."""
        G = self.transform(X)
        return solve_triangular(self.cholesky_.T, G.T, lower=False, check_finite=False).T

    @property
    def _n_features_out(self):
        """``m`` output coordinates, named ``greedybasis0``, ... by ``get_feature_names_out``."""
        return self.n_basis_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


def _check_X(X, name="X"):
    """``check_array`` with scikit-learn's wording for complex and feature-less input."""
    if is_dask_array(X):
        return check_array(X, name)  # a clear TypeError: never computed on the client here
    if not (hasattr(X, "toarray") and hasattr(X, "nnz")):
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ValueError(f"Complex data not supported: {name} holds complex numbers.")
        if X.dtype == object:
            X = X.astype(np.float64)  # numbers stored as objects
        if X.ndim == 1:
            raise ValueError(f"{name} must be a 2-D array (n_samples, n_features); got shape "
                             f"{X.shape}. Reshape your data with X.reshape(-1, 1) for a single "
                             f"feature or X.reshape(1, -1) for a single sample.")
        if X.ndim == 2 and X.shape[1] == 0:
            raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum "
                             f"of 1 is required by {name}.")
    return check_array(X, name)


def resolve_n_basis(n_basis, n_samples, owner):
    """``n_basis`` as an int: an int >= 1 or a fraction in (0, 1] of ``n_samples``."""
    if isinstance(n_basis, numbers.Integral) and not isinstance(n_basis, bool):
        if n_basis < 1:
            raise ValueError(f"The 'n_basis' parameter of {owner} must be an int >= 1 or a "
                             f"float in the range (0, 1]. Got {n_basis!r} instead.")
        return int(min(n_basis, n_samples))
    if isinstance(n_basis, numbers.Real) and not isinstance(n_basis, bool) and 0 < n_basis <= 1:
        return max(1, int(round(n_basis * n_samples)))
    raise ValueError(f"The 'n_basis' parameter of {owner} must be an int >= 1 or a float in "
                     f"the range (0, 1]. Got {n_basis!r} instead.")


def check_basis_not_empty(basis, owner):
    """Refuse a fitted :class:`GreedyBasis` that selected no vector (every residual below
    ``tol``), with a hint."""
    if basis.n_basis_ == 0:
        raise ValueError(
            f"{owner}: the greedy basis is empty, every residual k(x, x) is below "
            f"tol={basis.tol!r} (kernel values are tiny at this input scale). Lower tol or "
            "rescale X.")


def checked_kernel(kernel, X, owner="GreedyBasis"):
    """The PSD kernel of an estimator (``kernel`` is the estimator) or a kernel parameter."""
    if isinstance(kernel, BaseEstimator):
        owner = type(kernel).__name__
        kernel = estimator_kernel(kernel, X, owner)
    else:
        kernel = resolve_kernel(kernel, X, owner=owner)
    if not kernel.is_psd:
        raise ValueError(f"{owner} needs a positive semi-definite kernel (the Cholesky "
                         f"factorisation of K_r); {kernel!r} is not.")
    return kernel


def _stream(state, random_state):
    """A ``RandomState`` at ``state`` (``GreedyBasis.random_stream_``), or
    ``check_random_state(random_state)`` when there is none."""
    if state is None:
        return check_random_state(random_state)
    rng = np.random.RandomState()
    rng.set_state(("MT19937", np.asarray(state["key"], dtype=np.uint32), int(state["pos"]),
                   int(state["has_gauss"]), float(state["cached_gaussian"])))
    return rng

