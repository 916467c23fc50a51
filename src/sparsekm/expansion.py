"""The central object: a kernel expansion ``Psi = sum_i coef_i Phi(vectors_i)``.

A :class:`KernelExpansion` holds expansion vectors ``Z`` (one per row), their
coefficients (one column per output) and the kernel; its decision function is
``f(x) = sum_i coef_i k(x, z_i) + intercept``. SVMs, kernel PCA components and
kernel Fisher discriminants all produce such expansions; reduced-set methods
transform them; pre-image solvers and plots consume them.

Feature-space algebra works through the kernel only (eq. 6 of *Fast approximation
of support vector kernel expansions*)::

    <Psi, Psi'>   = coef^T K(Z, Z') coef'
    ||Psi - Psi'||^2 = ||Psi||^2 + ||Psi'||^2 - 2 <Psi, Psi'>

The intercept is not part of ``Psi`` (it is the threshold of the affine decision
function), so it is ignored by ``inner``, ``norm2`` and ``distance2``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from .backend import check_tensor, resolve_backend
from .kernels import Kernel
from .utils.hooks import Hook
from .utils.validation import check_array, check_same_features

# rows up to which predict/decision_function of the classifiers take the fused path
_FEW_ROWS = 16
_FEW_ROWS_MAX_ABS = 1e100  # below it no squared norm or dot product overflows

__all__ = ["KernelExpansion"]


class KernelExpansion:
    """A kernel expansion ``f(x) = sum_i coef[i] k(x, vectors[i]) + intercept``.

    Parameters
    ----------
    vectors : array-like of shape (n_terms, n_features)
        Expansion vectors (support vectors, reduced-set vectors ``z_j``, ...).
    coef : array-like of shape (n_terms,) or (n_terms, n_outputs)
        Coefficients ``alpha_i`` (or ``beta_j``), one column per output.
    kernel : Kernel
        The kernel ``k``.
    intercept : float or array-like of shape (n_outputs,), default=0.0
        Constant added to the decision function (not part of ``Psi``).

    Attributes
    ----------
    n_terms, n_features, n_outputs : int

    Notes
    -----
    Arrays are copied and made read-only, so an expansion never changes after
    construction and can cache the squared norms of its vectors for evaluation.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion
    >>> from sparsekm.kernels import Linear
    >>> psi = KernelExpansion([[1.0, 0.0], [0.0, 2.0]], [1.0, 0.5], Linear())
    >>> psi.decision_function([[1.0, 1.0]])
    array([2.])
    >>> psi.norm2()  # ||(1, 1)||^2
    2.0
    """

    def __init__(self, vectors, coef, kernel, intercept=0.0):
        if not isinstance(kernel, Kernel):
            raise TypeError(
                f"kernel must be a sparsekm.kernels.Kernel instance; got {type(kernel).__name__}."
            )
        # Zero terms are allowed: Psi = 0 (e.g. after merge_duplicates() of cancelling terms).
        vectors = check_array(vectors, "vectors", copy=True, allow_empty=True)
        coef = check_array(coef, "coef", ndim=None, dtype=vectors.dtype, copy=True,
                           allow_empty=True)
        if coef.ndim not in (1, 2):
            raise ValueError(f"coef must be 1-D or 2-D; got shape {coef.shape}.")
        if coef.shape[0] != vectors.shape[0]:
            raise ValueError(
                f"coef must have one row per expansion vector: expected {vectors.shape[0]} rows, "
                f"found {coef.shape[0]}."
            )
        n_outputs = 1 if coef.ndim == 1 else coef.shape[1]
        if coef.ndim == 2 and n_outputs == 0:
            raise ValueError("coef has 0 outputs (shape (n_terms, 0)).")
        intercept = check_array(intercept, "intercept", ndim=None, dtype=np.float64, copy=True,
                                allow_empty=True)
        if coef.ndim == 1:
            if intercept.size != 1:
                raise ValueError(
                    f"intercept must be a scalar for a single-output expansion; got shape "
                    f"{intercept.shape}."
                )
            intercept = float(intercept.reshape(-1)[0])
        else:
            if intercept.ndim == 0:
                intercept = np.full(n_outputs, float(intercept))
            elif intercept.shape != (n_outputs,):
                raise ValueError(
                    f"intercept must have shape (n_outputs,) = ({n_outputs},); got {intercept.shape}."
                )
            intercept.setflags(write=False)
        vectors.setflags(write=False)
        coef.setflags(write=False)
        self._vectors = vectors
        self._coef = coef
        self._kernel = kernel
        self._intercept = intercept
        self._sqnorms_cache = None
        self._backend_cache = {}

    # -- basic properties ------------------------------------------------------
    @property
    def vectors(self):
        """Expansion vectors, shape (n_terms, n_features) (read-only)."""
        return self._vectors

    @property
    def coef(self):
        """Coefficients, shape (n_terms,) or (n_terms, n_outputs) (read-only)."""
        return self._coef

    @property
    def kernel(self):
        """The kernel."""
        return self._kernel

    @property
    def intercept(self):
        """Intercept: float, or (n_outputs,) array for multi-output expansions."""
        return self._intercept

    @property
    def n_terms(self):
        return self._vectors.shape[0]

    @property
    def n_features(self):
        return self._vectors.shape[1]

    @property
    def n_outputs(self):
        return 1 if self._coef.ndim == 1 else self._coef.shape[1]

    @property
    def is_multioutput(self):
        """True when ``coef`` is 2-D (even with one column)."""
        return self._coef.ndim == 2

    def __repr__(self):
        return (
            f"KernelExpansion(n_terms={self.n_terms}, n_features={self.n_features}, "
            f"n_outputs={self.n_outputs}, kernel={self._kernel!r})"
        )

    def __len__(self):
        return self.n_terms

    def _vector_sqnorms(self):
        if self._sqnorms_cache is None:
            self._sqnorms_cache = self._kernel._sqnorms(self._vectors)
        return self._sqnorms_cache

    # -- evaluation ----------------------------------------------------------------
    def decision_function(self, X, *, block_size=None, backend=None):
        """Evaluate ``f(x) = sum_i coef_i k(x, z_i) + intercept`` in row blocks.

        Parameters
        ----------
        X : array-like, torch.Tensor or dask.array.Array of shape (n_samples, n_features)
            A tensor is evaluated by the torch engine on its device and gives a
            tensor; a dask array gives a dask array, computed chunk by chunk of
            rows with this expansion sent to each worker once (see
            :func:`sparsekm.parallel.map_row_blocks`).
        block_size : int, default=None
            Rows of ``X`` per block (bounds memory at ``block_size * n_terms``).
        backend : {"numpy", "torch"}, default=None
            Engine; ``None`` follows ``X`` (tensors -> torch) and otherwise
            :func:`sparsekm.config.get_config`. ``"torch"`` with a numpy ``X``
            runs on the configured device (CUDA when available) and returns numpy.

        Returns
        -------
        ndarray (tensor, dask array) of shape (n_samples,) or (n_samples, n_outputs)
            float32 when ``X`` and the vectors are float32, else float64.
        """
        if block_size is None and backend is None:
            fast = self._decision_few_rows(X)  # one row (up to _FEW_ROWS): no dispatch
            if fast is not None:
                return fast
        from .parallel import is_dask_array

        if is_dask_array(X):
            return self._dask_decision_function(X, block_size=block_size, backend=backend)
        xp, to_numpy = resolve_backend(X, backend=backend)
        if xp.name != "numpy" and xp.name not in self._kernel.backends:
            raise TypeError(f"{self._kernel!r} supports the {' and '.join(self._kernel.backends)} "
                            f"backend(s), not {xp.name}.")
        X = check_tensor(X, "X", xp=xp)
        check_same_features(X, self.n_features, "X", "KernelExpansion")
        same = X.dtype == xp.dtype_of(self._vectors.dtype)
        dtype = self._vectors.dtype if same else np.dtype(np.float64)
        if self.n_terms == 0:  # Psi = 0: only the intercept remains
            out = np.zeros((X.shape[0],) + self._coef.shape[1:], dtype=dtype)
            out += np.asarray(self._intercept, dtype=dtype)
            return out if (xp.name == "numpy" or to_numpy) else xp.asarray(out)
        V, C, sq, b = self._operands(xp, dtype)
        if xp.name == "numpy":
            # Called without `backend` so that kernels overriding `mmv` keep working.
            out = self._kernel.mmv(xp.astype(X, dtype), V, C, block_size=block_size, Y_sqnorms=sq)
        else:
            out = self._kernel.mmv(xp.astype(X, xp.dtype_of(dtype)), V, C,
                                   block_size=block_size, Y_sqnorms=sq, backend="torch")
        out += b
        return xp.to_numpy(out) if to_numpy else out

    def _decision_few_rows(self, X):
        """The fused numpy path for a few float64 rows, or None where it does not apply.

        ``K(X, Z) @ coef + intercept`` through the kernel's own block routine, without
        the engine's per-call dispatch (backend, validation, blocks): the same
        operations as :meth:`decision_function` on one block, so the same numbers.
        Applies to a C-contiguous float64 ``X`` of at most ``_FEW_ROWS`` finite rows,
        float64 vectors, a radial or dot-product kernel that does not override the
        engine, and the numpy backend; callers fall back to
        :meth:`decision_function` (which validates and raises) on None.
        """
        from .config import get_config

        k = self._kernel
        if not (type(X) is np.ndarray and X.ndim == 2 and 0 < X.shape[0] <= _FEW_ROWS
                and X.dtype == np.float64 and X.shape[1] == self.n_features and self.n_terms
                and self._vectors.dtype == np.float64 and (k.is_radial or k.is_dot_product)
                and hasattr(k, "_block_into")
                and type(k).mmv is Kernel.mmv and get_config()["backend"] == "numpy"
                and np.isfinite(X).all() and np.abs(X).max() < _FEW_ROWS_MAX_ABS):
            return None  # (huge entries: the engine's check of squared norms decides)
        K = k._block_into(X, self._vectors, k._sqnorms(X), self._vector_sqnorms(),
                          np.empty((X.shape[0], self.n_terms)))
        out = np.matmul(K, self._coef)
        out += self._intercept
        return out

    def _operands(self, xp, dtype):
        """Vectors, coefficients, cached squared norms and intercept for one engine.

        Converted once per (device, dtype) and kept, so repeated evaluation (and
        a GPU) does not copy the expansion each time.
        """
        dtype = np.dtype(dtype)
        if xp.name == "numpy":
            sq = self._vector_sqnorms()
            return (self._vectors.astype(dtype, copy=False), self._coef.astype(dtype, copy=False),
                    None if sq is None else sq.astype(dtype, copy=False),
                    np.asarray(self._intercept, dtype=dtype))
        key = (str(xp.device), dtype.name)
        ops = self._backend_cache.get(key)
        if ops is None:
            sq = self._vector_sqnorms()
            # np.array copies: torch refuses to wrap our read-only arrays without a warning.
            ops = tuple(None if a is None else xp.asarray(np.array(a, dtype=dtype))
                        for a in (self._vectors, self._coef, sq, self._intercept))
            self._backend_cache[key] = ops
        return ops

    def _dask_decision_function(self, X, *, block_size, backend):
        from .parallel import map_row_blocks

        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
        check_same_features(X, self.n_features, "X", "KernelExpansion")
        dtype = self._vectors.dtype if X.dtype == self._vectors.dtype else np.dtype(np.float64)
        return map_row_blocks(_decision_function_block, X, self,
                              n_outputs=self.n_outputs if self.is_multioutput else None,
                              dtype=dtype, block_size=block_size, backend=backend)

    # Pickling (dask ships expansions to its workers): drop device copies, keep read-only.
    def __getstate__(self):
        state = dict(self.__dict__)
        state["_backend_cache"] = {}
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_vectors", "_coef", "_intercept"):
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    __call__ = decision_function

    def output(self, k):
        """The single-output expansion of output ``k`` (its own intercept)."""
        if not self.is_multioutput:
            if k != 0:
                raise IndexError(f"output index {k} out of range for a single-output expansion.")
            return self
        if not -self.n_outputs <= k < self.n_outputs:
            raise IndexError(f"output index {k} out of range for {self.n_outputs} outputs.")
        return KernelExpansion(self._vectors, self._coef[:, k], self._kernel, self._intercept[k])

    # -- feature-space algebra -----------------------------------------------------
    def _check_compatible(self, other, op):
        if not isinstance(other, KernelExpansion):
            raise TypeError(f"{op} needs another KernelExpansion; got {type(other).__name__}.")
        if self._kernel != other._kernel:
            raise ValueError(
                f"Cannot {op} expansions with different kernels: {self._kernel!r} and "
                f"{other._kernel!r}."
            )
        if self.n_features != other.n_features:
            raise ValueError(
                f"Cannot {op} expansions with different numbers of features: "
                f"{self.n_features} and {other.n_features}."
            )

    def _coef2d(self):
        return self._coef if self._coef.ndim == 2 else self._coef[:, None]

    def inner(self, other, *, block_size=None):
        """Feature-space inner product ``<Psi, Psi'> = coef^T K(Z, Z') coef'``.

        Returns a float when both expansions are single-output; otherwise an
        array of shape (n_outputs_self, n_outputs_other) (a 1-D axis is dropped
        for a single-output side).
        """
        self._check_compatible(other, "take the inner product of")
        if self.n_terms == 0 or other.n_terms == 0:
            G = np.zeros((self.n_outputs, other.n_outputs))
            if not self.is_multioutput:
                G = G[0]
            if not other.is_multioutput:
                G = G[..., 0]
            return float(G) if np.ndim(G) == 0 else G
        KB = self._kernel.mmv(self._vectors, other._vectors, other._coef2d(),
                              block_size=block_size, Y_sqnorms=other._vector_sqnorms())
        G = self._coef2d().T.astype(np.float64) @ KB.astype(np.float64)
        if not self.is_multioutput:
            G = G[0]
        if not other.is_multioutput:
            G = G[..., 0]
        return float(G) if np.ndim(G) == 0 else G

    def norm2(self, *, block_size=None):
        """Squared feature-space norm ``||Psi||^2 = coef^T K coef`` (per output)."""
        A = self._coef2d()
        if self.n_terms == 0:
            return 0.0 if not self.is_multioutput else np.zeros(self.n_outputs)
        KA = self._kernel.mmv(self._vectors, self._vectors, A, block_size=block_size,
                              Y_sqnorms=self._vector_sqnorms())
        n2 = np.einsum("ij,ij->j", A.astype(np.float64), KA.astype(np.float64))
        return float(n2[0]) if not self.is_multioutput else n2

    def distance2(self, other, *, block_size=None):
        """Squared feature-space distance ``||Psi - Psi'||^2`` through the kernel only.

        Computed as the norm of the concatenated expansion ``Psi - Psi'`` (eq. 6 of
        the fixed-point paper), per output. Identical vectors are merged first, so
        terms shared by both expansions cancel exactly (``psi.distance2(psi) == 0``);
        tiny negative values from rounding are clipped to 0.
        """
        self._check_compatible(other, "compute the distance between")
        d2 = (self - other).merge_duplicates().norm2(block_size=block_size)
        return max(d2, 0.0) if np.ndim(d2) == 0 else np.maximum(d2, 0.0)

    # -- arithmetic (concatenating terms) -------------------------------------------
    def __add__(self, other):
        if not isinstance(other, KernelExpansion):
            return NotImplemented
        self._check_compatible(other, "add")
        if self.is_multioutput != other.is_multioutput or self.n_outputs != other.n_outputs:
            raise ValueError(
                f"Cannot add expansions with {self.n_outputs} and {other.n_outputs} outputs."
            )
        vectors = np.concatenate([self._vectors, other._vectors.astype(self._vectors.dtype)])
        coef = np.concatenate([self._coef, other._coef.astype(self._coef.dtype)])
        intercept = np.asarray(self._intercept) + np.asarray(other._intercept)
        return KernelExpansion(vectors, coef, self._kernel, intercept)

    def __neg__(self):
        return KernelExpansion(self._vectors, -self._coef, self._kernel,
                               -np.asarray(self._intercept))

    def __sub__(self, other):
        if not isinstance(other, KernelExpansion):
            return NotImplemented
        return self + (-other)

    def __mul__(self, scalar):
        if not isinstance(scalar, numbers.Real) or isinstance(scalar, bool):
            return NotImplemented
        if not np.isfinite(scalar):
            raise ValueError(f"Cannot scale an expansion by {scalar!r}.")
        return KernelExpansion(self._vectors, self._coef * scalar, self._kernel,
                               np.asarray(self._intercept) * scalar)

    __rmul__ = __mul__

    def __truediv__(self, scalar):
        if not isinstance(scalar, numbers.Real) or isinstance(scalar, bool):
            return NotImplemented
        if scalar == 0:
            raise ZeroDivisionError("Cannot divide an expansion by 0.")
        return self * (1.0 / scalar)

    def copy(self):
        return KernelExpansion(self._vectors, self._coef, self._kernel, self._intercept)

    def merge_duplicates(self):
        """Merge identical vectors (summing their coefficients) and drop zero terms.

        Both operations are exact: the decision function and every feature-space
        quantity are unchanged (up to floating-point summation order). The first
        occurrence of each vector keeps its position.
        """
        _, first, inverse = np.unique(self._vectors, axis=0, return_index=True,
                                      return_inverse=True)
        inverse = inverse.reshape(-1)
        # Re-label groups in order of first appearance.
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        groups = rank[inverse]
        coef = np.zeros((order.size,) + self._coef.shape[1:], dtype=self._coef.dtype)
        np.add.at(coef, groups, self._coef)
        vectors = self._vectors[first[order]]
        keep = (coef != 0) if coef.ndim == 1 else (coef != 0).any(axis=1)
        return KernelExpansion(vectors[keep], coef[keep], self._kernel, self._intercept)

    def compress(self):
        """Deprecated alias of :meth:`merge_duplicates` (removed in the next release)."""
        warnings.warn("KernelExpansion.compress() is deprecated (not to be confused with "
                      "sparsekm.compress); use KernelExpansion.merge_duplicates().",
                      DeprecationWarning, stacklevel=2)
        return self.merge_duplicates()

    # -- conversion from scikit-learn -----------------------------------------------
    @classmethod
    def from_estimator(cls, estimator):
        """Build the expansion of a fitted scikit-learn kernel machine.

        Supported: ``SVC`` (binary; ``decision_function``), ``SVR``/``NuSVR``
        (``predict``), ``OneVsRestClassifier`` of binary ``SVC`` (one column per
        class, each distinct support vector stored once), ``KernelPCA`` (one column
        per component; ``transform``). See :func:`sparsekm.interop.expansion_from_estimator`.
        """
        return estimator_to_expansion(estimator)



#: The conversion of a fitted estimator to its expansion; :mod:`sparsekm.interop` (a floor
#: above) registers :func:`~sparsekm.interop.expansion_from_estimator` on it.
estimator_to_expansion = Hook("KernelExpansion.from_estimator", "sparsekm.interop")


def _decision_function_block(X, expansion, block_size=None, backend=None):
    """One row chunk of a dask evaluation (module level, so workers can unpickle it)."""
    return expansion.decision_function(X, block_size=block_size, backend=backend)
