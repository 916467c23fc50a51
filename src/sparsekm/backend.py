"""Array namespaces: the one evaluation engine on numpy arrays or torch tensors.

The kernel engine (:mod:`sparsekm.kernels`) is written once, against the small
set of operations below. Each hook asks ``array_namespace(A)`` for the namespace
of the array it was given and calls ``xp.exp(A, out=A)``, ``xp.sqnorms(X)``, ...;
the numpy namespace is numpy itself (plus three helpers), the torch namespace
maps the same names onto ``torch`` functions. There is no second copy of any
kernel.

torch is optional and never imported by ``import sparsekm``: tensors are
recognised through ``sys.modules`` (a tensor cannot exist unless torch was
imported), and ``backend="torch"`` imports it on demand.

Selecting the backend (see :func:`resolve_backend`):

* arrays in, numpy engine, arrays out (the default);
* tensors in, torch engine on their device, tensors out;
* ``backend="torch"`` with arrays in: the torch engine runs on
  :func:`sparsekm.config.get_config` ``["device"]`` (``None``: CUDA when available,
  else CPU) and arrays come back.

Solvers (reduced-set construction, SLMC, the greedy basis) take ``backend`` and
``device`` explicitly and bind their kernel once with :func:`solver_kernel`: the
returned :class:`DeviceKernel` holds the solver's large operands (expansion vectors,
training data) as tensors on the device, converted once with :func:`resident`, and
hands back numpy results, so the solver's own (small, CPU-side) algebra is unchanged.
"""

from __future__ import annotations

import sys

import numpy as np

from .config import BACKENDS
from .utils.validation import check_array

__all__ = [
    "BACKENDS",
    "array_namespace",
    "is_tensor",
    "resolve_backend",
    "solver_kernel",
    "resident",
    "release",
    "checkpoint",
    "take",
    "DeviceKernel",
    "NumpyNamespace",
    "TorchNamespace",
]


def is_tensor(a):
    """True when ``a`` is a ``torch.Tensor`` (without importing torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


class NumpyNamespace:
    """The numpy side: numpy's own functions plus the few helpers torch needs too."""

    name = "numpy"

    def __getattr__(self, attr):
        return getattr(np, attr)

    @staticmethod
    def sqnorms(X):
        """Squared Euclidean norm of each row, without an ``X * X`` temporary."""
        return np.einsum("ij,ij->i", X, X)

    @staticmethod
    def clip_(A, lower=None, upper=None):
        """Clip in place (``lower``/``upper`` scalars)."""
        if lower is not None:
            np.maximum(A, lower, out=A)
        if upper is not None:
            np.minimum(A, upper, out=A)
        return A

    @staticmethod
    def fill_diagonal_(A, value):
        np.fill_diagonal(A, value)
        return A

    @staticmethod
    def astype(A, dtype):
        return A.astype(dtype, copy=False)

    @staticmethod
    def dtype_of(name):
        return np.dtype(name)

    @staticmethod
    def to_numpy(A):
        return np.asarray(A)

    def __repr__(self):
        return "NumpyNamespace()"


class TorchNamespace:
    """The torch side, for tensors on one ``device``.

    Only the operations the kernel engine uses are provided, with numpy's names
    and ``out=`` conventions so that the engine's code reads the same on both.
    """

    name = "torch"

    def __init__(self, device=None):
        torch = _import_torch()

        self.torch = torch
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)

    # -- creation and conversion -------------------------------------------------
    def dtype_of(self, dtype):
        """The torch dtype of a numpy dtype (float32 or float64), or ``dtype`` itself."""
        if isinstance(dtype, self.torch.dtype):
            return dtype
        return {"float32": self.torch.float32, "float64": self.torch.float64}[np.dtype(dtype).name]

    def asarray(self, a, dtype=None):
        dtype = None if dtype is None else self.dtype_of(dtype)
        return self.torch.as_tensor(a, dtype=dtype, device=self.device)

    def astype(self, A, dtype):
        return A.to(self.dtype_of(dtype))

    def empty(self, shape, dtype):
        return self.torch.empty(shape, dtype=self.dtype_of(dtype), device=self.device)

    def zeros(self, shape, dtype):
        return self.torch.zeros(shape, dtype=self.dtype_of(dtype), device=self.device)

    def full(self, shape, value, dtype):
        return self.torch.full(shape, value, dtype=self.dtype_of(dtype), device=self.device)

    def full_like(self, A, value):
        return self.torch.full_like(A, value)

    def ones_like(self, A):
        return self.torch.ones_like(A)

    @staticmethod
    def to_numpy(A):
        return A.detach().cpu().numpy()

    # -- element-wise (numpy names, ``out=`` for in-place) ------------------------
    def exp(self, A, out=None):
        return self.torch.exp(A, out=out) if out is not None else self.torch.exp(A)

    def tanh(self, A, out=None):
        return self.torch.tanh(A, out=out) if out is not None else self.torch.tanh(A)

    def power(self, A, p, out=None):
        return self.torch.pow(A, p, out=out) if out is not None else self.torch.pow(A, p)

    def multiply(self, A, B, out=None):
        return self.torch.mul(A, B, out=out) if out is not None else self.torch.mul(A, B)

    def matmul(self, A, B, out=None):
        return self.torch.matmul(A, B, out=out) if out is not None else self.torch.matmul(A, B)

    def einsum(self, spec, *ops):
        return self.torch.einsum(spec, *ops)

    @staticmethod
    def copy(A):
        return A.clone()

    def abs(self, A, out=None):
        return self.torch.abs(A, out=out) if out is not None else self.torch.abs(A)

    def stack(self, arrays, axis=0):
        return self.torch.stack(list(arrays), dim=axis)

    def sqnorms(self, X):
        return self.torch.einsum("ij,ij->i", X, X)

    def clip_(self, A, lower=None, upper=None):
        return A.clamp_(min=lower, max=upper)

    @staticmethod
    def fill_diagonal_(A, value):
        return A.fill_diagonal_(value)

    def __repr__(self):
        return f"TorchNamespace(device={str(self.device)!r})"


_NUMPY = NumpyNamespace()


def _import_torch():
    try:
        import torch
    except ImportError:
        from .utils._extras import install_hint

        raise ImportError(f"backend='torch' needs PyTorch: {install_hint('torch')}; for a "
                          "CUDA build see https://pytorch.org.") from None
    return torch


def array_namespace(*arrays):
    """The namespace of the given arrays: torch if any is a tensor, else numpy.

    Tensors on different devices are refused. Non-array arguments (scalars,
    ``None``) are ignored.
    """
    tensors = [a for a in arrays if is_tensor(a)]
    if not tensors:
        return _NUMPY
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise ValueError(f"Tensors on different devices: {sorted(map(str, devices))}.")
    return _torch_namespace(tensors[0].device)


_TORCH_CACHE: dict = {}


def _torch_namespace(device):
    key = str(device)
    ns = _TORCH_CACHE.get(key)
    if ns is None:
        ns = _TORCH_CACHE[key] = TorchNamespace(device)
    return ns


def resolve_backend(*arrays, backend=None, names=None):
    """Pick the engine for a call and say whether its result must become numpy.

    Parameters
    ----------
    *arrays : ndarray, torch.Tensor or None
        The call's data arguments (``None`` entries are ignored).
    backend : {"numpy", "torch"} or None
        ``None`` follows the inputs (tensors -> torch) and otherwise the
        configured default (:func:`sparsekm.config.get_config`).
    names : sequence of str, optional
        Argument names for the mixing error message.

    Returns
    -------
    xp : NumpyNamespace or TorchNamespace
    to_numpy : bool
        True when the inputs were arrays but the torch engine runs, so the
        result has to be converted back.

    Raises
    ------
    TypeError
        When tensors and numpy arrays are mixed, or ``backend="numpy"`` is asked
        for tensor inputs.
    ValueError
        For an unknown backend name.
    """
    from .config import get_config

    if backend is None:
        backend = get_config()["backend"]
        explicit = False
    else:
        explicit = True
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    present = [a for a in arrays if a is not None]
    flags = [is_tensor(a) for a in present]
    if any(flags) and not all(flags):
        names = list(names) if names is not None else [f"argument {i}" for i in range(len(arrays))]
        kinds = ", ".join(f"{n}: {'torch.Tensor' if is_tensor(a) else type(a).__name__}"
                          for n, a in zip(names, arrays, strict=False) if a is not None)
        raise TypeError(
            f"Cannot mix torch tensors and numpy arrays ({kinds}); pass all as tensors, "
            f"or all as arrays with backend='torch'."
        )
    if all(flags) and present:
        if explicit and backend == "numpy":
            raise TypeError("backend='numpy' was given torch tensors; convert them with "
                            ".cpu().numpy() or use backend='torch'.")
        return array_namespace(*present), False
    if backend == "numpy":
        return _NUMPY, False
    return _torch_namespace(_default_device()), True


def _default_device():
    from .config import get_config

    device = get_config()["device"]
    if device is None:
        torch = _import_torch()
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return device


def solver_kernel(kernel, backend=None, device=None):
    """The kernel a solver evaluates through: ``kernel`` itself or a :class:`DeviceKernel`.

    Parameters
    ----------
    kernel : Kernel
    backend : {"numpy", "torch"}, DeviceKernel or None
        ``None``: :func:`sparsekm.config.get_config` ``["backend"]``. A
        :class:`DeviceKernel` of ``kernel`` (an outer solver's, with its resident
        operands) is used as it is.
    device : str or None
        torch device for ``backend="torch"``; ``None``: the configured device
        (``None`` there: CUDA when available, else CPU).

    Returns
    -------
    Kernel or DeviceKernel
        ``kernel`` unchanged for numpy (the numpy path stays exactly as it is).
    """
    from .config import get_config

    if isinstance(kernel, DeviceKernel):
        return kernel
    if isinstance(backend, DeviceKernel):
        if backend.kernel != kernel:
            raise ValueError(f"{backend!r} is bound to another kernel than {kernel!r}.")
        return backend
    if backend is None:
        backend = get_config()["backend"]
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    if backend == "numpy":
        return kernel
    if "torch" not in kernel.backends:
        raise TypeError(f"{kernel!r} supports the {' and '.join(kernel.backends)} backend(s), "
                        f"not backend='torch'.")
    return DeviceKernel(kernel, _torch_namespace(device if device is not None
                                                 else _default_device()))


def resident(kernel, A, parts=None):
    """Put the large operand ``A`` on ``kernel``'s device once (no-op for numpy kernels).

    Later calls of the :class:`DeviceKernel` that pass this very array (``is``)
    use the device copy instead of converting it again. ``parts``: arrays
    (already resident or small) whose row-wise concatenation is ``A``; the device
    copy is then assembled from theirs (for ``Y = [X; Z]`` with ``X`` resident; one
    part: ``A`` is a copy of it and shares its device copy).
    Returns the device tensor, or ``A`` for a numpy kernel.
    """
    if not isinstance(kernel, DeviceKernel):
        return A
    return kernel.put(A, parts)


def checkpoint(kernel):
    """A mark of ``kernel``'s resident operands, for :func:`release` (None for numpy)."""
    return frozenset(kernel._cache) if isinstance(kernel, DeviceKernel) else None


def release(kernel, mark):
    """Drop the device copies made since :func:`checkpoint` returned ``mark``.

    For the operands of one step of an outer loop (``[X; Z]`` of one one-term step
    and what the inner solver made resident), so that the device holds one step's
    worth at a time. No-op for numpy kernels.
    """
    if isinstance(kernel, DeviceKernel):
        for key in set(kernel._cache) - mark:
            del kernel._cache[key]


def take(kernel, A, index, axis=0):
    """``A[index]`` (rows) or ``A[:, index]`` (``axis=1``), on ``kernel``'s engine.

    For a numpy kernel: numpy indexing (a C-contiguous copy for columns). For a
    :class:`DeviceKernel` the subset (e.g. this iteration's support vectors, the
    still active outputs) is cut on the device from ``A``'s resident copy instead
    of being converted anew.
    """
    if not isinstance(kernel, DeviceKernel):
        return A[index] if axis == 0 else np.ascontiguousarray(A[:, index])
    index = np.asarray(index)
    if index.dtype == bool:
        index = np.flatnonzero(index)
    torch = kernel.xp.torch
    return torch.index_select(kernel.put(A), axis,
                              torch.as_tensor(index, device=kernel.xp.device))


class DeviceKernel:
    """A kernel bound to one torch device for the duration of one solver run.

    The kernel methods the solvers call (``__call__``, ``mmv``, ``diag``,
    ``weighted_sums``, ``gradient_sum``, ``diag_gradient``, ``gradient_y`` and the
    ``_sqnorms``/``_block`` hooks) accept numpy arrays or tensors. An array made
    :func:`resident` is looked up by identity and its device copy is used (no
    copy); any other array is a small operand (candidate points, coefficients) and
    is converted for the call. Results come back as numpy arrays, except
    ``_sqnorms``, whose row norms stay on the device for the ``_block`` calls. A
    callable ``W`` of :meth:`weighted_sums` receives the kernel block as a tensor
    (form its weights from :func:`resident` operands).
    Other attributes (``gamma``, ``is_radial``, ...) are the kernel's.

    Attributes
    ----------
    kernel : Kernel
    xp : TorchNamespace
    n_resident : int
        Arrays converted by :meth:`put` (the large operands).
    """

    def __init__(self, kernel, xp):
        self.kernel = kernel
        self.xp = xp
        self._cache = {}
        self.n_resident = 0

    def __getattr__(self, name):
        if name in ("kernel", "xp", "_cache"):  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def __repr__(self):
        return f"DeviceKernel({self.kernel!r}, device={str(self.xp.device)!r})"

    def put(self, A, parts=None):
        """Device copy of ``A`` (converted on first use, then cached by identity)."""
        if A is None or is_tensor(A):
            return A
        hit = self._cache.get(id(A))
        if hit is not None and hit[0] is A:
            return hit[1]
        if parts is not None:
            T = (self._in(parts[0]) if len(parts) == 1
                 else self.xp.torch.cat([self._in(P) for P in parts], dim=0))
        else:
            T = self._convert(A)
            self.n_resident += 1
        self._cache[id(A)] = (A, T)  # keeps A alive, so its id is not reused
        return T

    @property
    def device(self):
        """The device, as a string."""
        return str(self.xp.device)

    def _in(self, A):
        if A is None or is_tensor(A) or not isinstance(A, np.ndarray):
            return A
        hit = self._cache.get(id(A))
        if hit is not None and hit[0] is A:
            return hit[1]
        return self._convert(A)

    def _convert(self, A):
        # On the CPU torch shares the array's memory; a read-only one (expansion vectors)
        # is copied instead of being wrapped in a tensor that torch would consider writable.
        if not A.flags.writeable and self.xp.device.type == "cpu":
            A = A.copy()
        return self.xp.asarray(A)

    def _out(self, R):
        return self.xp.to_numpy(R) if is_tensor(R) else R

    def __call__(self, X, Y=None, **kw):
        return self._out(self.kernel(self._in(X), self._in(Y), **kw))

    def mmv(self, X, Y, C, **kw):
        kw["Y_sqnorms"] = self._in(kw.get("Y_sqnorms"))
        return self._out(self.kernel.mmv(self._in(X), self._in(Y), self._in(C), **kw))

    def diag(self, X, **kw):
        return self._out(self.kernel.diag(self._in(X), **kw))

    def gradient_y(self, X, y, **kw):
        return self._out(self.kernel.gradient_y(self._in(X), self._in(y), **kw))

    def gradient_sum(self, X, Z, W, **kw):
        return self._out(self.kernel.gradient_sum(self._in(X), self._in(Z), self._in(W), **kw))

    def diag_gradient(self, Z, **kw):
        return self._out(self.kernel.diag_gradient(self._in(Z), **kw))

    def weighted_sums(self, X, Z, W, **kw):
        kw["X_sqnorms"] = self._in(kw.get("X_sqnorms"))
        W = W if callable(W) else self._in(W)
        sums = self.kernel.weighted_sums(self._in(X), self._in(Z), W, **kw)
        return type(sums)(*(self._out(a) for a in sums))

    def _sqnorms(self, X):
        return self.kernel._sqnorms(self._in(X))

    def _block(self, X, Y, x_sq, y_sq):
        return self._out(self.kernel._block(self._in(X), self._in(Y), self._in(x_sq),
                                            self._in(y_sq)))


def check_tensor(X, name="X", *, ndim=2, xp=None):
    """:func:`~sparsekm.utils.validation.check_array` for the active namespace.

    Numpy input goes through ``check_array`` (and onto the torch device when
    ``xp`` is torch). Tensors are checked for dimension, emptiness and finiteness
    on their device; integer and bool tensors become float64.
    """
    if xp is None or xp.name == "numpy" or not is_tensor(X):
        arr = check_array(X, name, ndim=ndim)
        return arr if xp is None or xp.name == "numpy" else xp.asarray(arr)
    torch = xp.torch
    if X.is_complex():
        raise TypeError(f"{name} must hold real numbers; got a tensor of dtype {X.dtype}.")
    if X.dtype not in (torch.float32, torch.float64):
        X = X.to(torch.float64)
    if ndim is not None and X.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D tensor; got shape {tuple(X.shape)}.")
    if X.ndim >= 1 and X.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(X.shape)}); at least one sample is "
                         f"required.")
    if ndim == 2 and X.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {tuple(X.shape)}); at least one is "
                         f"required.")
    if not bool(torch.isfinite(X).all()):
        what = "NaN" if bool(torch.isnan(X).any()) else "infinity"
        raise ValueError(f"{name} contains {what}; sparsekm needs finite values in {name}.")
    return X
