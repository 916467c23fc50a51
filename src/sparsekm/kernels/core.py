"""The kernel engine and the classic kernels: :class:`Kernel` (Gram blocks, products,
weighted sums and gradients in bounded row blocks), the radial and dot-product families,
RBF, polynomial, sigmoid, inverse multiquadric and linear; resolving and rebuilding
kernels (:func:`resolve_kernel`, :func:`kernel_from_dict`). See :mod:`sparsekm.kernels`."""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ..backend import array_namespace, check_tensor, resolve_backend
from ..config import effective_n_threads, single_threaded_blas
from ..utils.validation import check_scalar

__all__ = [
    "Kernel",
    "KERNEL_NAMES",
    "WeightedSums",
    "RadialKernel",
    "DotProductKernel",
    "RBF",
    "Polynomial",
    "Sigmoid",
    "InverseMultiquadric",
    "Linear",
    "resolve_kernel",
    "estimator_kernel",
    "kernel_from_dict",
    "register_kernel",
]

# Entries of one kernel block (float64: 4 MiB). Blocks that stay in cache keep the
# element-wise passes after the GEMM (norms, exp) cheap (measurement: CHANGELOG, issue 35).
DEFAULT_BLOCK_ELEMENTS = 2**19
MIN_BLOCK_ROWS = 16

_REGISTRY: dict[str, type] = {}


def _register(cls):
    _REGISTRY[cls.__name__] = cls
    return cls


def register_kernel(cls):
    """Class decorator: let :func:`kernel_from_dict` (and so ``sparsekm.load``) rebuild ``cls``.

    A registered kernel whose parameters are not plain JSON values (a wrapped
    kernel, an array) overrides :meth:`Kernel.to_dict` and provides a classmethod
    ``_from_dict_params(params)`` that inverts it.
    """
    if not (isinstance(cls, type) and issubclass(cls, Kernel)):
        raise TypeError(f"register_kernel expects a Kernel subclass; got {cls!r}.")
    return _register(cls)


def _rows_per_block(n_cols, block_size):
    if block_size is not None:
        return check_scalar(block_size, "block_size", "Kernel", kind="int", lower=1)
    return max(MIN_BLOCK_ROWS, DEFAULT_BLOCK_ELEMENTS // max(int(n_cols), 1))


def _namespace_of(a):
    """``(xp, a)`` with lists and scalars turned into numpy arrays."""
    xp = array_namespace(a)
    return xp, (a if xp.name == "torch" else np.asarray(a))


def _run_blocks(n_rows, step, work, xp, reduce=None):
    """Call ``work(rows)`` for each row block, on the engine's threads when it pays.

    The numpy engine gives the blocks to ``config.effective_n_threads()``
    threads and limits BLAS to one thread meanwhile: numpy's element-wise passes
    (adding norms, ``exp``) are single-threaded, so one block per thread keeps
    every core busy through the whole block, not only during its GEMM. The row
    partition does not depend on the thread count, and ``reduce`` receives the
    results in block order, so results do not either. At most ``2 n_threads``
    results are held at once. torch parallelises inside each operation and gets
    the blocks in order; so does a call made from inside an engine thread.
    """
    slices = [slice(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]
    consume = reduce if reduce is not None else (lambda result: None)
    n_threads = 1
    if xp.name == "numpy" and len(slices) > 1 and not getattr(_local, "in_pool", False):
        n_threads = min(effective_n_threads(), len(slices))
    if n_threads <= 1:
        for rows in slices:
            consume(work(rows))
        return

    def task(rows):
        _local.in_pool = True
        try:
            return work(rows)
        finally:
            _local.in_pool = False

    with single_threaded_blas(), ThreadPoolExecutor(n_threads) as pool:
        pending = deque()
        for rows in slices:
            pending.append(pool.submit(task, rows))
            if len(pending) >= 2 * n_threads:
                consume(pending.popleft().result())
        while pending:
            consume(pending.popleft().result())


_local = threading.local()


class WeightedSums(NamedTuple):
    """Result of :meth:`Kernel.weighted_sums`: column sums of ``M = W * p(X, Z)``.

    Attributes
    ----------
    total : ndarray (or tensor) of shape (n_vectors,)
        ``sum_i M[i, u]``.
    moment : ndarray (or tensor) of shape (n_vectors, n_features) or None
        ``sum_i M[i, u] x_i`` (``M.T @ X``), when asked for.
    abs_total : ndarray (or tensor) of shape (n_vectors,) or None
        ``sum_i |M[i, u]|``, when asked for (the scale against which ``total`` is
        judged to vanish).
    """

    total: object
    moment: object = None
    abs_total: object = None


class Kernel:
    """Base class of all kernels.

    Subclasses implement ``_block(X, Y, X_sqnorms, Y_sqnorms)`` (one Gram block),
    ``diag`` and the gradient hooks. Parameters are validated in ``__init__``
    (kernels are immutable values, not estimators) and exposed through
    ``get_params`` so that scikit-learn's ``clone`` and our persistence can rebuild
    them.

    The hooks receive numpy arrays or torch tensors and use
    :func:`sparsekm.backend.array_namespace` for every operation that differs,
    so one implementation serves both; a kernel whose hooks are numpy-only keeps
    ``backends = ("numpy",)`` and is refused by the torch engine.
    """

    #: True when k(x, y) depends on ||x - y||^2 only.
    is_radial = False
    #: True when k(x, y) depends on x . y only.
    is_dot_product = False
    #: False for kernels that are not positive semi-definite (the sigmoid).
    is_psd = True
    #: Engines whose arrays the hooks accept (see :mod:`sparsekm.backend`).
    backends: tuple[str, ...] = ("numpy",)
    _param_names: tuple[str, ...] = ()

    # -- parameters ----------------------------------------------------------
    def get_params(self, deep=True):
        """Parameters of this kernel as a dict (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._param_names}

    def set_params(self, **params):
        """Kernels are immutable; return a new kernel with ``params`` replaced."""
        merged = {**self.get_params(), **params}
        return type(self)(**merged)

    def to_dict(self):
        """JSON-serialisable description, inverse of :func:`kernel_from_dict`."""
        return {"name": type(self).__name__, "params": self.get_params()}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.get_params() == other.get_params()

    def __hash__(self):
        return hash((type(self).__name__, tuple(self.get_params().items())))

    # -- evaluation ----------------------------------------------------------
    def _namespace(self, arrays, names, backend):
        xp, to_numpy = resolve_backend(*arrays, backend=backend, names=names)
        if xp.name not in self.backends:
            raise TypeError(f"{self!r} supports the {' and '.join(self.backends)} backend(s), "
                            f"not {xp.name}.")
        return xp, to_numpy

    def _prepare(self, X, Y, name_x="X", name_y="Y", *, backend=None, extra=(), extra_names=()):
        """Validate ``X`` and ``Y`` for one engine; returns ``(xp, to_numpy, X, Y, dtype)``.

        ``dtype`` is float32 when both inputs are float32, else float64. ``extra``
        arrays only take part in choosing the backend (no mixing of tensors and
        arrays).
        """
        xp, to_numpy = self._namespace((X, Y, *extra), (name_x, name_y, *extra_names), backend)
        X = check_tensor(X, name_x, xp=xp)
        if Y is None:
            return xp, to_numpy, X, X, X.dtype
        Y = check_tensor(Y, name_y, xp=xp)
        if X.shape[1] != Y.shape[1]:
            raise ValueError(
                f"{name_x} and {name_y} must have the same number of features; got "
                f"{name_x}.shape={tuple(X.shape)} and {name_y}.shape={tuple(Y.shape)}."
            )
        dtype = X.dtype if X.dtype == Y.dtype else xp.dtype_of("float64")
        return xp, to_numpy, xp.astype(X, dtype), xp.astype(Y, dtype), dtype

    def __call__(self, X, Y=None, *, block_size=None, backend=None):
        """Gram matrix ``K[i, j] = k(X[i], Y[j])``.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples_X, n_features)
        Y : array-like or torch.Tensor of shape (n_samples_Y, n_features), default=None
            ``None`` means ``Y = X``.
        block_size : int, default=None
            Rows of ``X`` processed at once; by default chosen so that one block
            holds about ``2**19`` entries.
        backend : {"numpy", "torch"}, default=None
            Engine (see :mod:`sparsekm.backend`); ``None`` follows the inputs.

        Returns
        -------
        K : ndarray (or tensor, for tensor inputs) of shape (n_samples_X, n_samples_Y)
            float32 if both inputs are float32, else float64.
        """
        symmetric = Y is None
        xp, to_numpy, X, Y, dtype = self._prepare(X, Y, backend=backend)
        K = xp.empty((X.shape[0], Y.shape[0]), dtype)
        y_sq = self._sqnorms(Y)

        def work(rows):
            Xb = X[rows]
            self._block_into(Xb, Y, self._sqnorms(Xb), y_sq, K[rows])

        _run_blocks(X.shape[0], _rows_per_block(Y.shape[0], block_size), work, xp)
        if symmetric and self.is_radial:
            # GEMM-based distances lose ~eps*||x||^2 on the diagonal; it is exactly k(0).
            xp.fill_diagonal_(K, float(self.profile(np.zeros(1))[0]))
        return xp.to_numpy(K) if to_numpy else K

    def mmv(self, X, Y, C, *, block_size=None, Y_sqnorms=None, backend=None):
        """Kernel matrix-matrix product ``K(X, Y) @ C`` computed in row blocks.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples, n_features)
        Y : array-like or torch.Tensor of shape (n_terms, n_features)
        C : array-like or torch.Tensor of shape (n_terms,) or (n_terms, n_outputs)
        block_size : int, default=None
            Rows of ``X`` per block.
        Y_sqnorms : ndarray or tensor of shape (n_terms,), default=None
            Cached squared norms of the rows of ``Y`` (radial kernels).
        backend : {"numpy", "torch"}, default=None
            Engine (see :mod:`sparsekm.backend`); ``None`` follows the inputs.

        Returns
        -------
        ndarray (or tensor) of shape (n_samples,) or (n_samples, n_outputs)
        """
        xp, to_numpy, X, Y, dtype = self._prepare(X, Y, backend=backend, extra=(C,),
                                                  extra_names=("C",))
        C = xp.asarray(C, dtype)
        if C.shape[0] != Y.shape[0]:
            raise ValueError(
                f"C must have one row per row of Y: expected {Y.shape[0]} rows, found {C.shape[0]}."
            )
        out = xp.empty((X.shape[0],) + tuple(C.shape[1:]), dtype)
        y_sq = self._sqnorms(Y) if Y_sqnorms is None else Y_sqnorms
        numpy = xp.name == "numpy"
        step = _rows_per_block(Y.shape[0], block_size)
        # One block buffer per thread and call: allocating a fresh multi-MB block each
        # time costs page faults whenever malloc hands it back to the OS (as dask
        # workers' MALLOC_TRIM_THRESHOLD_ makes it do), ~45 % of the time measured.
        buffers = threading.local()

        def work(rows):
            Xb = X[rows]
            buf = getattr(buffers, "block", None)
            if buf is None:
                buf = buffers.block = xp.empty((min(step, X.shape[0]), Y.shape[0]), dtype)
            Kb = self._block_into(Xb, Y, self._sqnorms(Xb), y_sq, buf[:Xb.shape[0]])
            if numpy:
                np.matmul(Kb, C, out=out[rows])
            else:
                out[rows] = Kb @ C

        _run_blocks(X.shape[0], step, work, xp)
        return xp.to_numpy(out) if to_numpy else out

    def diag(self, X, *, backend=None):
        """``k(x_i, x_i)`` for each row of ``X``; shape (n_samples,)."""
        raise NotImplementedError

    def _prepare_one(self, X, backend):
        xp, to_numpy = self._namespace((X,), ("X",), backend)
        return xp, to_numpy, check_tensor(X, "X", xp=xp)

    def gradient_y(self, X, y, *, backend=None):
        """Gradient of ``k(x_i, y)`` with respect to ``y`` for every row ``x_i``.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples, n_features)
        y : array-like or torch.Tensor of shape (n_features,)
        backend : {"numpy", "torch"}, default=None

        Returns
        -------
        ndarray (or tensor) of shape (n_samples, n_features)
        """
        xp, to_numpy = self._namespace((X, y), ("X", "y"), backend)
        X = check_tensor(X, "X", xp=xp)
        y = check_tensor(y, "y", ndim=1, xp=xp)
        if y.shape[0] != X.shape[1]:
            raise ValueError(f"y has {y.shape[0]} features, but X has {X.shape[1]}.")
        dtype = X.dtype if X.dtype == y.dtype else xp.dtype_of("float64")
        G = self._gradient_rows(xp.astype(X, dtype), xp.astype(y, dtype))
        return xp.to_numpy(G) if to_numpy else G

    def gradient_sum(self, X, Z, W, *, block_size=None, backend=None):
        """``G[u] = sum_i W[i, u] * grad_{z_u} k(x_i, z_u)`` for all ``u`` at once.

        This is the vectorised gradient behind the pre-image, reduced-set
        (phase 2) and SLMC objectives: all of them are weighted sums of kernel
        values, so their gradients with respect to the expansion vectors are
        weighted sums of kernel gradients. For radial and dot-product kernels it is
        assembled from :meth:`weighted_sums` (``derivative=True``): with
        ``M = W * k'``, ``G = 2 (M.sum(0) z_u - M.T @ X)`` (radial) or ``M.T @ X``
        (dot product).

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples, n_features)
        Z : array-like or torch.Tensor of shape (n_vectors, n_features)
        W : array-like or torch.Tensor of shape (n_samples, n_vectors)
            Weights ``W[i, u]``.
        backend : {"numpy", "torch"}, default=None

        Returns
        -------
        G : ndarray (or tensor) of shape (n_vectors, n_features)
        """
        xp, to_numpy, X, Z, W = self._prepare_sums(X, Z, W, backend)
        G = self._gradient_sum(xp, X, Z, W, _rows_per_block(Z.shape[0], block_size))
        return xp.to_numpy(G) if to_numpy else G

    def weighted_sums(self, X, Z, W, *, derivative=False, moment=False, absolute=False,
                      block_size=None, X_sqnorms=None, backend=None, check_input=True):
        """Weighted column sums of kernel values, for all ``z_u`` at once.

        With ``M[i, u] = W[i, u] p(x_i, z_u)``, where ``p`` is the kernel ``k`` or
        (``derivative=True``) its profile derivative ``k'`` (radial kernels:
        ``dk/d(r2)`` at ``r2 = ||x_i - z_u||^2``; dot-product kernels: ``f'(x_i . z_u)``),
        returns ``total[u] = sum_i M[i, u]`` and optionally ``moment[u] = sum_i M[i, u] x_i``
        and ``abs_total[u] = sum_i |M[i, u]|``, in row blocks of ``X`` (``M`` is never
        stored beyond one block).

        These are the kernel sums of the pre-image and reduced-set solvers: with
        ``W`` the coefficients of ``Psi_u``, ``total`` is ``Psi_u . Phi(z_u)``
        (eq. 46), and with ``derivative=True`` the fixed-point iteration (eq. 10/48 of
        *Input space vs. feature space*, eq. 19 of *Fast approximation*) is
        ``z_u <- moment[u] / total[u]``. :meth:`gradient_sum` is built on it.

        Weights may depend on the kernel values themselves (eq. 19 weighs ``y_j`` by
        ``c_j = sum_k G_jk (Psi^k . Phi(z))``): pass a callable ``W(K)`` that maps
        ``K = k(X, Z)`` (shape (n_samples, n_vectors)) to the weights (``K`` is a
        work buffer: copy it to keep it). When ``X`` fits in one block, ``K`` and
        ``k'`` come from one distance computation; else ``K`` is computed (and
        stored) first, then the sums run block by block.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples, n_features)
        Z : array-like or torch.Tensor of shape (n_vectors, n_features)
        W : array-like or torch.Tensor of shape (n_samples, n_vectors), or callable
            Weights ``W[i, u]`` (one column per ``z_u``), or a function of the
            kernel values ``K`` returning them.
        derivative : bool, default=False
            Sum the profile derivative ``k'`` instead of ``k`` (radial and
            dot-product kernels only).
        moment : bool, default=False
            Also return ``M.T @ X``.
        absolute : bool, default=False
            Also return ``|M|.sum(0)``.
        block_size : int, default=None
            Rows of ``X`` per block.
        X_sqnorms : ndarray or tensor of shape (n_samples,), default=None
            Cached squared norms of the rows of ``X`` (radial kernels), for callers
            that evaluate many ``Z`` against the same ``X``.
        backend : {"numpy", "torch"}, default=None
            Engine (see :mod:`sparsekm.backend`); ``None`` follows the inputs.
        check_input : bool, default=True
            ``False`` skips validation and conversion, for iterative solvers that
            validated once: ``X``, ``Z`` and ``W`` must then be finite arrays (or
            tensors on one device) of one floating dtype and consistent shapes.

        Returns
        -------
        WeightedSums
            ``(total, moment, abs_total)``; fields not asked for are None.

        Raises
        ------
        TypeError
            ``derivative=True`` for a kernel that is neither radial nor dot-product.

        Examples
        --------
        ``Psi = Phi(x_1) + Phi(x_2)``: its projection on ``Phi(z)`` and one fixed-point
        step (eq. 10) from ``z = (0.2, 0)`` towards the midpoint:

        >>> import numpy as np
        >>> from sparsekm.kernels import RBF
        >>> X, W = np.array([[0.0, 0.0], [1.0, 0.0]]), np.ones((2, 1))
        >>> RBF(0.5).weighted_sums(X, [[0.2, 0.0]], W).total
        array([1.70634771])
        >>> s = RBF(0.5).weighted_sums(X, [[0.2, 0.0]], W, derivative=True, moment=True)
        >>> np.round(s.moment / s.total[:, None], 6) + 0.0
        array([[0.425557, 0.      ]])
        """
        if derivative and not (self.is_radial or self.is_dot_product):
            raise TypeError(f"weighted_sums(derivative=True) needs a radial or dot-product kernel "
                            f"(a profile derivative k'); got {self!r}.")
        weights = W if callable(W) else None
        if check_input:
            if weights is not None:
                xp, to_numpy, X, Z, _ = self._prepare(X, Z, "X", "Z", backend=backend)
            else:
                xp, to_numpy, X, Z, W = self._prepare_sums(X, Z, W, backend)
            if X_sqnorms is not None:
                X_sqnorms = xp.asarray(X_sqnorms, X.dtype)
        else:
            xp, to_numpy = array_namespace(X, Z, None if weights is not None else W), False
        sums = self._weighted_sums(xp, X, Z, W, _rows_per_block(Z.shape[0], block_size),
                                   derivative=derivative, moment=moment, absolute=absolute,
                                   x_sq=X_sqnorms)
        if to_numpy:
            sums = WeightedSums(*(None if a is None else xp.to_numpy(a) for a in sums))
        return sums

    def diag_gradient(self, Z, *, backend=None):
        """Gradient of ``k(z, z)`` with respect to ``z`` for each row of ``Z``.

        Zero for radial kernels, ``2 f'(||z||^2) z`` for dot-product kernels and
        ``2 grad_y k(z, y)|_{y=z}`` (symmetry) otherwise.

        Parameters
        ----------
        Z : array-like or torch.Tensor of shape (n_vectors, n_features)
        backend : {"numpy", "torch"}, default=None

        Returns
        -------
        ndarray (or tensor) of shape (n_vectors, n_features)
        """
        xp, to_numpy, Z = self._prepare_one(Z, backend)
        G = self._diag_gradient(xp, Z)
        return xp.to_numpy(G) if to_numpy else G

    def _prepare_sums(self, X, Z, W, backend):
        xp, to_numpy, X, Z, dtype = self._prepare(X, Z, "X", "Z", backend=backend, extra=(W,),
                                                  extra_names=("W",))
        W = xp.asarray(W, dtype)
        if tuple(W.shape) != (X.shape[0], Z.shape[0]):
            raise ValueError(
                f"W must have shape (n_samples, n_vectors) = {(X.shape[0], Z.shape[0])}; "
                f"found {tuple(W.shape)}."
            )
        return xp, to_numpy, X, Z, W

    def _weighted_sums(self, xp, X, Z, W, step, *, derivative=False, moment=False,
                       absolute=False, x_sq=None, z_sq=None):
        """The blocked loop behind :meth:`weighted_sums` (inputs already prepared).

        Each thread keeps one ``(step, n_vectors)`` block buffer for the whole call,
        and moment buffers go back to a pool once added, so a call allocates
        ``O(n_threads)`` blocks however many blocks it runs. Partial sums are added
        in block order: results do not depend on the thread count.
        """
        n, m = X.shape[0], Z.shape[0]
        dtype = X.dtype
        z_sq = self._sqnorms(Z) if z_sq is None else z_sq
        value_weights = W if callable(W) else None
        if value_weights is not None and n > step:
            # Weights from the whole K: compute it first, then sum block by block.
            K = xp.empty((n, m), dtype)

            def gram(rows):
                Xb = X[rows]
                self._block_into(Xb, Z, self._sqnorms(Xb) if x_sq is None else x_sq[rows], z_sq,
                                 K[rows])

            _run_blocks(n, step, gram, xp)
            W, value_weights = self._checked_weights(value_weights(K), n, m), None
        mom_shape = (m,) + tuple(X.shape[1:])
        acc = [None, None, None]  # total, moment, abs_total: the first block's parts, then sums
        buffers = threading.local()
        spare = []  # moment buffers already added, free for later blocks (list ops are atomic)

        def work(rows):
            Xb = X[rows]
            buf = getattr(buffers, "block", None)
            if buf is None:
                buf = buffers.block = xp.empty((min(step, n), m), dtype)
            xb_sq = self._sqnorms(Xb) if x_sq is None else x_sq[rows]
            M = buf[:Xb.shape[0]]
            if value_weights is not None:  # one block: K and k' from one distance block
                Wb = self._value_and_weights(Xb, Z, xb_sq, z_sq, M, value_weights, derivative)
            else:
                Wb = W[rows]
                if derivative:
                    M = self._derivative_block_into(Xb, Z, xb_sq, z_sq, M)
                else:
                    M = self._block_into(Xb, Z, xb_sq, z_sq, M)
            M *= Wb
            part_m = None
            if moment:
                try:
                    part_m = spare.pop()
                except IndexError:  # (checking first would race with other threads)
                    part_m = xp.empty(mom_shape, dtype)
                xp.matmul(M.T, Xb, out=part_m)
            part_t = M.sum(axis=0)
            part_a = xp.abs(M, out=M).sum(axis=0) if absolute else None
            return part_t, part_m, part_a

        def add(parts):  # in block order: the result does not depend on threads
            for i, part in enumerate(parts):
                if part is None:
                    continue
                if acc[i] is None:
                    acc[i] = part  # owned from now on (a moment buffer leaves the pool)
                else:
                    acc[i] += part
                    if i == 1:
                        spare.append(part)

        _run_blocks(n, step, work, xp, reduce=add)
        if acc[0] is None:  # no rows
            acc = [xp.zeros((m,), dtype), xp.zeros(mom_shape, dtype), xp.zeros((m,), dtype)]
        return WeightedSums(acc[0], acc[1] if moment else None, acc[2] if absolute else None)

    @staticmethod
    def _checked_weights(W, n, m):
        if tuple(W.shape) != (n, m):
            raise ValueError(f"The weights function must return shape (n_samples, n_vectors) = "
                             f"{(n, m)}; got {tuple(W.shape)}.")
        return W

    def _value_and_weights(self, X, Z, x_sq, z_sq, out, value_weights, derivative):
        """Weights ``value_weights(K)`` of one block, ``out`` left holding ``k`` or ``k'``."""
        if derivative:
            # Distances once; K from a copy of them, k' in place.
            self._distances_into(X, Z, x_sq, z_sq, out)
            K = self._values_from_distances(array_namespace(out).copy(out))
            W = value_weights(K)
            self._derivatives_from_distances(out)
        else:
            W = value_weights(self._block_into(X, Z, x_sq, z_sq, out))
        return self._checked_weights(W, X.shape[0], Z.shape[0])

    def _distances_into(self, X, Z, x_sq, z_sq, out):
        raise NotImplementedError

    def _values_from_distances(self, D):
        raise NotImplementedError

    def _derivatives_from_distances(self, D):
        raise NotImplementedError

    def _gradient_sum(self, xp, X, Z, W, step):
        """``gradient_sum`` on prepared inputs: block by block through ``_gradient_sum_block``."""
        z_sq = self._sqnorms(Z)

        def work(rows):
            Xb = X[rows]
            return self._gradient_sum_block(Xb, Z, W[rows], self._sqnorms(Xb), z_sq)

        G = xp.zeros(tuple(Z.shape), W.dtype)

        def add(part):  # in block order: the result does not depend on threads
            G[...] += part

        _run_blocks(X.shape[0], step, work, xp, reduce=add)
        return G

    def _diag_gradient(self, xp, Z):
        return 2.0 * xp.stack([self._gradient_rows(Z[u:u + 1], Z[u])[0]
                               for u in range(Z.shape[0])])

    # -- hooks ---------------------------------------------------------------
    def _sqnorms(self, X):
        return None

    def _block(self, X, Y, x_sq, y_sq):
        raise NotImplementedError

    def _block_into(self, X, Y, x_sq, y_sq, out):
        """``_block`` written into ``out`` (a C-contiguous buffer); returns ``out``."""
        out[...] = self._block(X, Y, x_sq, y_sq)
        return out

    def _gradient_rows(self, X, y):
        raise NotImplementedError

    def _gradient_sum_block(self, X, Z, W, x_sq, z_sq):
        raise NotImplementedError

    def _derivative_block_into(self, X, Z, x_sq, z_sq, out):
        """Profile derivatives ``k'`` of one block written into ``out``; returns ``out``."""
        raise NotImplementedError


class _ProfileKernel:
    """Engine hooks shared by radial and dot-product kernels ``k = profile(D)``.

    Subclasses provide ``_distances_into`` (``D = ||x - z||^2`` or ``x . z`` of one
    block), ``_profile_inplace``/``_profile_derivative_inplace`` and
    ``_gradient_from_sums(Z, total, moment)``; kernel values, derivatives and
    ``gradient_sum`` (through :meth:`Kernel.weighted_sums`) follow.
    """

    def _block_into(self, X, Y, x_sq, y_sq, out):
        return self._values_from_distances(self._distances_into(X, Y, x_sq, y_sq, out))

    def _derivative_block_into(self, X, Z, x_sq, z_sq, out):
        return self._derivatives_from_distances(self._distances_into(X, Z, x_sq, z_sq, out))

    def _values_from_distances(self, D):
        res = self._profile_inplace(D)
        if res is not D:  # a profile that is not computed in place
            D[...] = res
        return D

    def _derivatives_from_distances(self, D):
        res = self._profile_derivative_inplace(D)
        if res is not D:
            D[...] = res
        return D

    def _gradient_sum(self, xp, X, Z, W, step):
        sums = self._weighted_sums(xp, X, Z, W, step, derivative=True, moment=True)
        return self._gradient_from_sums(Z, sums.total, sums.moment)

    def _gradient_sum_block(self, X, Z, W, x_sq, z_sq):
        sums = self._weighted_sums(array_namespace(X, Z, W), X, Z, W, max(X.shape[0], 1),
                                   derivative=True, moment=True, x_sq=x_sq, z_sq=z_sq)
        return self._gradient_from_sums(Z, sums.total, sums.moment)


def _sqdist(X, Y, x_sq, y_sq, out=None):
    """Squared Euclidean distances ``||x||^2 + ||y||^2 - 2 x.y`` through one GEMM, clipped at 0.

    ``out`` receives the result in place (no temporaries of the block's size).
    The order of operations is kept as it is on purpose: scaling by ``-2`` is
    exact, so ``r2`` carries only the rounding of the GEMM and the norms (folding a
    kernel's ``-gamma`` in here would save one cheap pass, <1 %, but adds roundings
    that finite-difference users of kernel values notice).
    """
    xp = array_namespace(X)
    D = xp.matmul(X, Y.T) if out is None else xp.matmul(X, Y.T, out=out)
    D *= -2.0
    D += x_sq[:, None]
    D += y_sq[None, :]
    return xp.clip_(D, lower=0.0)


class RadialKernel(_ProfileKernel, Kernel):
    """Kernel of the form ``k(x, y) = k(||x - y||^2)`` (the *profile*).

    Subclasses implement :meth:`profile` and :meth:`profile_derivative` (both as
    functions of ``r2 = ||x - y||^2``); Gram blocks, gradients and the pre-image
    fixed-point iteration (eq. 10) all follow from these two.

    ``_profile_inplace(r2)`` and ``_profile_derivative_inplace(r2)`` may overwrite
    ``r2`` with ``k(r2)`` / ``k'(r2)`` (and return it) to save temporaries per block.
    """

    is_radial = True
    backends = ("numpy", "torch")

    def profile(self, r2):
        """``k`` as a function of the squared distance ``r2``."""
        raise NotImplementedError

    def profile_derivative(self, r2):
        """``k'(r2) = dk/d(r2)``."""
        raise NotImplementedError

    def _profile_inplace(self, r2):
        return self.profile(r2)

    def _profile_derivative_inplace(self, r2):
        return self.profile_derivative(r2)

    def diag(self, X, *, backend=None):
        xp, to_numpy, X = self._prepare_one(X, backend)
        out = xp.full((X.shape[0],), float(self.profile(np.zeros(1))[0]), X.dtype)
        return xp.to_numpy(out) if to_numpy else out

    def _sqnorms(self, X):
        return array_namespace(X).sqnorms(X)

    def _block(self, X, Y, x_sq, y_sq):
        return self._profile_inplace(_sqdist(X, Y, x_sq, y_sq))

    @staticmethod
    def _distances_into(X, Y, x_sq, y_sq, out):
        return _sqdist(X, Y, x_sq, y_sq, out=out)

    def _gradient_rows(self, X, y):
        diff = y[None, :] - X
        r2 = array_namespace(diff).sqnorms(diff)
        return (2.0 * self.profile_derivative(r2))[:, None] * diff

    @staticmethod
    def _gradient_from_sums(Z, total, moment):
        # sum_i W_iu 2 k'(r2_iu) (z_u - x_i) = 2 [ (sum_i M_iu) z_u - (M^T X)_u ],  M = W * k'
        G = Z * total[:, None]
        G -= moment
        G *= 2.0
        return G

    def _diag_gradient(self, xp, Z):
        return xp.zeros(tuple(Z.shape), Z.dtype)


class DotProductKernel(_ProfileKernel, Kernel):
    """Kernel of the form ``k(x, y) = f(x . y)``.

    Subclasses implement :meth:`profile` ``f(t)`` and :meth:`profile_derivative`
    ``f'(t)`` with ``t = x . y``.
    """

    is_dot_product = True
    backends = ("numpy", "torch")

    def profile(self, t):
        """``f(t)`` with ``t = x . y``."""
        raise NotImplementedError

    def profile_derivative(self, t):
        """``f'(t)``."""
        raise NotImplementedError

    def _profile_inplace(self, t):
        return self.profile(t)

    def _profile_derivative_inplace(self, t):
        return self.profile_derivative(t)

    def diag(self, X, *, backend=None):
        xp, to_numpy, X = self._prepare_one(X, backend)
        out = self.profile(xp.sqnorms(X))
        return xp.to_numpy(out) if to_numpy else out

    def _block(self, X, Y, x_sq, y_sq):
        return self._profile_inplace(X @ Y.T)

    @staticmethod
    def _distances_into(X, Y, x_sq, y_sq, out):
        return array_namespace(X).matmul(X, Y.T, out=out)

    def _gradient_rows(self, X, y):
        return self.profile_derivative(X @ y)[:, None] * X

    @staticmethod
    def _gradient_from_sums(Z, total, moment):
        return moment

    def _diag_gradient(self, xp, Z):
        return 2.0 * self.profile_derivative(xp.sqnorms(Z))[:, None] * Z


@_register
class RBF(RadialKernel):
    """Gaussian kernel ``k(x, y) = exp(-gamma ||x - y||^2)``.

    Parameters
    ----------
    gamma : float > 0
        Inverse width. The RS/denoising papers write ``exp(-||x-y||^2 / c)``
        (``gamma = 1/c``; USPS: ``c = 128``) or ``exp(-||x-y||^2 / (2 sigma^2))``
        (use :meth:`from_sigma`).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.kernels import RBF
    >>> k = RBF.from_sigma(1.0)
    >>> float(k(np.zeros((1, 2)), np.ones((1, 2)))[0, 0])  # exp(-2 / 2)
    0.36787944117144233
    """

    _param_names = ("gamma",)

    def __init__(self, gamma=1.0):
        self.gamma = check_scalar(gamma, "gamma", "RBF", lower=0, lower_inclusive=False)

    @classmethod
    def from_sigma(cls, sigma):
        """RBF with ``k = exp(-||x - y||^2 / (2 sigma^2))``."""
        sigma = check_scalar(sigma, "sigma", "RBF", lower=0, lower_inclusive=False)
        return cls(gamma=1.0 / (2.0 * sigma**2))

    def profile(self, r2):
        xp, r2 = _namespace_of(r2)
        return xp.exp(-self.gamma * r2)

    def profile_derivative(self, r2):
        xp, r2 = _namespace_of(r2)
        return -self.gamma * xp.exp(-self.gamma * r2)

    def _profile_inplace(self, r2):
        r2 *= -self.gamma
        return array_namespace(r2).exp(r2, out=r2)

    def _profile_derivative_inplace(self, r2):
        r2 *= -self.gamma
        array_namespace(r2).exp(r2, out=r2)
        r2 *= -self.gamma
        return r2


@_register
class InverseMultiquadric(RadialKernel):
    """Inverse multiquadric kernel ``k(x, y) = (||x - y||^2 + 1)^c`` with ``c < 0``.

    ``c = -1/2`` and ``c = -1`` are the cases named in the fixed-point paper
    (remark before eq. 10); any negative exponent gives a positive definite kernel.
    """

    _param_names = ("c",)

    def __init__(self, c=-0.5):
        self.c = check_scalar(c, "c", "InverseMultiquadric", upper=0, upper_inclusive=False)

    def profile(self, r2):
        _, r2 = _namespace_of(r2)
        return (r2 + 1.0) ** self.c

    def profile_derivative(self, r2):
        _, r2 = _namespace_of(r2)
        return self.c * (r2 + 1.0) ** (self.c - 1.0)

    def _profile_inplace(self, r2):
        r2 += 1.0
        return array_namespace(r2).power(r2, self.c, out=r2)

    def _profile_derivative_inplace(self, r2):
        r2 += 1.0
        array_namespace(r2).power(r2, self.c - 1.0, out=r2)
        r2 *= self.c
        return r2


@_register
class Polynomial(DotProductKernel):
    """Polynomial kernel ``k(x, y) = (gamma x.y + coef0)^degree``.

    ``coef0 = 0`` gives the homogeneous kernel. With ``gamma = 1`` this is eq. 26/38
    of *Input space vs. feature space*; ``gamma`` exists so that scikit-learn's
    ``kernel="poly"`` models convert exactly.
    """

    _param_names = ("degree", "coef0", "gamma")

    def __init__(self, degree=2, coef0=0.0, gamma=1.0):
        self.degree = check_scalar(degree, "degree", "Polynomial", kind="int", lower=1)
        self.coef0 = check_scalar(coef0, "coef0", "Polynomial", lower=0)
        self.gamma = check_scalar(gamma, "gamma", "Polynomial", lower=0, lower_inclusive=False)

    def _overflow(self, dtype):
        return ValueError(
            f"{self!r} values overflow {np.dtype(dtype).name} (|gamma x.y + coef0|^{self.degree} "
            f"> {float(np.finfo(dtype).max):.3g}); rescale the inputs or use float64 arrays.")

    def profile(self, t):
        _, t = _namespace_of(t)
        with np.errstate(over="raise"):
            try:
                return (self.gamma * t + self.coef0) ** self.degree
            except FloatingPointError:
                raise self._overflow(t.dtype) from None

    def profile_derivative(self, t):
        xp, t = _namespace_of(t)
        d = self.degree
        if d == 1:
            return xp.full_like(t if xp.name == "torch" else t.astype(float), self.gamma)
        with np.errstate(over="raise"):
            try:
                return d * self.gamma * (self.gamma * t + self.coef0) ** (d - 1)
            except FloatingPointError:
                raise self._overflow(t.dtype) from None

    def _profile_inplace(self, t):
        if self.gamma != 1.0:
            t *= self.gamma
        if self.coef0:
            t += self.coef0
        xp = array_namespace(t)
        with np.errstate(over="raise"):
            try:
                if self.degree == 2:
                    return xp.multiply(t, t, out=t)
                return xp.power(t, self.degree, out=t)
            except FloatingPointError:
                raise self._overflow(t.dtype) from None

    def _profile_derivative_inplace(self, t):
        d = self.degree
        if d == 1:
            t[...] = self.gamma
            return t
        t *= self.gamma
        t += self.coef0
        xp = array_namespace(t)
        with np.errstate(over="raise"):
            try:
                if d > 2:
                    xp.power(t, d - 1, out=t)
                t *= d * self.gamma
            except FloatingPointError:
                raise self._overflow(t.dtype) from None
        return t


@_register
class Sigmoid(DotProductKernel):
    """Sigmoid kernel ``k(x, y) = tanh(kappa x.y + theta)`` (eq. 39).

    Not positive semi-definite for most parameter values (``is_psd = False``);
    methods that need a PSD Gram matrix say so when given it.
    """

    is_psd = False
    _param_names = ("kappa", "theta")

    def __init__(self, kappa=1.0, theta=0.0):
        self.kappa = check_scalar(kappa, "kappa", "Sigmoid")
        self.theta = check_scalar(theta, "theta", "Sigmoid")

    def profile(self, t):
        xp, t = _namespace_of(t)
        return xp.tanh(self.kappa * t + self.theta)

    def profile_derivative(self, t):
        xp, t = _namespace_of(t)
        th = xp.tanh(self.kappa * t + self.theta)
        return self.kappa * (1.0 - th * th)

    def _profile_inplace(self, t):
        t *= self.kappa
        t += self.theta
        return array_namespace(t).tanh(t, out=t)

    def _profile_derivative_inplace(self, t):
        xp = array_namespace(t)
        self._profile_inplace(t)
        xp.multiply(t, t, out=t)
        t *= -1.0
        t += 1.0
        t *= self.kappa
        return t


@_register
class Linear(DotProductKernel):
    """Linear kernel ``k(x, y) = x . y``."""

    def __init__(self):
        pass

    def profile(self, t):
        return _namespace_of(t)[1]

    def profile_derivative(self, t):
        xp, t = _namespace_of(t)
        return xp.ones_like(t if xp.name == "torch" else t.astype(float))

    def _profile_inplace(self, t):
        return t

    def _profile_derivative_inplace(self, t):
        t[...] = 1.0
        return t


_STRING_KERNELS = {
    "rbf": RBF,
    "poly": Polynomial,
    "polynomial": Polynomial,
    "sigmoid": Sigmoid,
    "linear": Linear,
    "imq": InverseMultiquadric,
}

#: The names a string ``kernel`` may take (any case), as :func:`resolve_kernel` reads them.
KERNEL_NAMES = tuple(sorted(_STRING_KERNELS))


def resolve_kernel(kernel, X=None, owner="estimator", *, gamma="scale", degree=3, coef0=0.0):
    """Turn an estimator's ``kernel`` parameter into a :class:`Kernel`.

    String kernels follow scikit-learn's ``SVC``/``KernelPCA`` conventions:

    ========================  ==========================================================
    ``"rbf"`` (and ``None``)   ``RBF(gamma)``: ``exp(-gamma ||x - y||^2)``
    ``"poly"``                 ``Polynomial(degree, coef0, gamma)``: ``(gamma x.y + coef0)^degree``
    ``"sigmoid"``              ``Sigmoid(gamma, coef0)``: ``tanh(gamma x.y + coef0)``
    ``"linear"``               ``Linear()`` (``gamma``, ``degree``, ``coef0`` unused)
    ``"imq"``                  ``InverseMultiquadric()`` (``gamma``, ``degree``, ``coef0`` unused)
    ========================  ==========================================================

    ``gamma="scale"`` (the default, as in scikit-learn) is ``1 / (n_features * X.var())``
    (1.0 when ``X`` is constant), ``"auto"`` is ``1 / n_features``; both need ``X``.
    A :class:`Kernel` is returned unchanged; it carries its own parameters, so a
    non-default ``gamma``/``degree``/``coef0`` beside it is refused as ambiguous.

    Parameters
    ----------
    kernel : Kernel, str or None
    X : ndarray of shape (n_samples, n_features) or None
        Training data (for ``gamma="scale"``/``"auto"``).
    owner : str
        Estimator name for error messages.
    gamma : {"scale", "auto"} or float > 0, default="scale"
    degree : int >= 1, default=3
    coef0 : float, default=0.0
    """
    if isinstance(kernel, Kernel):
        given = [f"{name}={value!r}" for name, value, default in
                 (("gamma", gamma, "scale"), ("degree", degree, 3), ("coef0", coef0, 0.0))
                 if not _is_default(value, default)]
        if given:
            raise ValueError(
                f"{owner} got kernel={kernel!r} and {', '.join(given)}: gamma, degree and "
                "coef0 apply to string kernels only (a Kernel object carries its own "
                "parameters). Pass one or the other."
            )
        return kernel
    name = "rbf" if kernel is None else kernel.lower() if isinstance(kernel, str) else None
    if isinstance(kernel, str) and name not in _STRING_KERNELS:
        from sklearn.utils._param_validation import InvalidParameterError

        # a ValueError (a string naming no kernel), and a TypeError as before
        raise InvalidParameterError(
            f"The 'kernel' parameter of {owner} must be a sparsekm.kernels.Kernel, one of "
            f"{sorted(_STRING_KERNELS)} or None; {kernel!r} names no kernel.")
    if name not in _STRING_KERNELS:
        raise TypeError(
            f"The 'kernel' parameter of {owner} must be a sparsekm.kernels.Kernel, one of "
            f"{sorted(_STRING_KERNELS)} or None. Got {kernel!r} instead."
        )
    if name in ("linear", "imq"):
        return _STRING_KERNELS[name]()
    g = _resolve_gamma(gamma, X, owner)
    if name == "rbf":
        return RBF(gamma=g)
    coef0 = check_scalar(coef0, "coef0", owner)
    if name == "sigmoid":
        return Sigmoid(kappa=g, theta=coef0)
    degree = check_scalar(degree, "degree", owner, kind="int", lower=1)
    return Polynomial(degree=degree, coef0=coef0, gamma=g)


def _is_default(value, default):
    if isinstance(default, str) or isinstance(value, str):
        return isinstance(value, str) and value == default
    return isinstance(value, (int, float, np.number)) and value == default


def _resolve_gamma(gamma, X, owner):
    """``gamma`` as a float: scikit-learn's ``"scale"``/``"auto"`` or a float > 0."""
    if isinstance(gamma, str):
        if gamma not in ("scale", "auto"):
            raise ValueError(f"The 'gamma' parameter of {owner} must be 'scale', 'auto' or a "
                             f"float > 0. Got {gamma!r} instead.")
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training data X to be resolved.")
        if not (type(X).__module__.startswith("dask.") and hasattr(X, "dask")):
            X = np.asarray(X)  # a dask X stays lazy: np.var reduces it on its cluster
        if gamma == "auto":
            return 1.0 / X.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            var = float(np.var(X, dtype=np.float64)) * X.shape[1]
        if not np.isfinite(var):
            raise ValueError(
                f"X is finite but too large for {owner}: X.var() overflows float64 (max |X| = "
                f"{float(np.max(np.abs(X))):.3g}), so gamma='scale' = 1 / (n_features * X.var()) "
                "and the kernel computation would produce non-finite intermediate values. "
                "Rescale X, e.g. with sklearn.preprocessing.StandardScaler."
            )
        return 1.0 / var if var > 0 else 1.0
    return check_scalar(gamma, "gamma", owner, lower=0, lower_inclusive=False)


def estimator_kernel(estimator, X, owner=None):
    """:func:`resolve_kernel` with an estimator's ``kernel``, ``gamma``, ``degree``, ``coef0``."""
    return resolve_kernel(estimator.kernel, X, owner or type(estimator).__name__,
                          gamma=getattr(estimator, "gamma", "scale"),
                          degree=getattr(estimator, "degree", 3),
                          coef0=getattr(estimator, "coef0", 0.0))


def kernel_from_dict(spec):
    """Rebuild a kernel from :meth:`Kernel.to_dict` output (only known classes)."""
    if not isinstance(spec, dict) or "name" not in spec or "params" not in spec:
        raise ValueError(f"Invalid kernel description: {spec!r}.")
    cls = _REGISTRY.get(spec["name"])
    if cls is None:
        raise ValueError(f"Unknown kernel {spec['name']!r}; known: {sorted(_REGISTRY)}.")
    if not isinstance(spec["params"], dict):
        raise ValueError(f"Invalid kernel parameters: {spec['params']!r}.")
    try:
        if hasattr(cls, "_from_dict_params"):
            return cls._from_dict_params(spec["params"])
        return cls(**spec["params"])
    except TypeError as exc:
        raise ValueError(f"Invalid parameters for kernel {spec['name']}: {exc}") from None
