"""Random projections of the inputs and the kernels on them (Achlioptas, McSherry &
Schölkopf 2001, section 5): :class:`RandomProjection` (Theorem 6's dimension,
:func:`theorem6_s`) and :class:`ProjectedKernel` ``k(P^T x, P^T y)``.

In the kernels floor, so that :func:`~sparsekm.kernels.kernel_from_dict` (and
``sparsekm.load``) rebuild a ProjectedKernel without importing :mod:`sparsekm.approx`;
:mod:`sparsekm.approx.randomized` re-exports them.
"""

from __future__ import annotations

import base64
import hashlib
import math
import numbers
import threading
import weakref

import numpy as np

from ..utils._random import as_generator as _as_generator
from ..utils.validation import check_array, check_scalar
from .core import Kernel, kernel_from_dict, register_kernel

__all__ = ["theorem6_s", "RandomProjection", "ProjectedKernel"]


def theorem6_s(eps, beta, n):
    """Theorem 6's projection dimension ``s = (4 + 2 beta) / (eps^2/2 - eps^3/3) ln n``.

    Parameters
    ----------
    eps : float in (0, 1)
    beta : float > 0
        Failure probability ``1 / n^beta``.
    n : int >= 2
        Number of points ``m + t``.

    Returns
    -------
    int
        The formula rounded up.
    """
    owner = "theorem6_s"
    if isinstance(eps, numbers.Real) and not isinstance(eps, bool) and not 0 < eps < 1:
        raise ValueError(f"The 'eps' parameter of {owner} must be a float in the range (0, 1). "
                         f"Got {eps!r} instead.")
    eps = check_scalar(eps, "eps", owner, lower=0, upper=1, lower_inclusive=False,
                       upper_inclusive=False)
    beta = check_scalar(beta, "beta", owner, lower=0, lower_inclusive=False)
    n = check_scalar(n, "n", owner, kind="int", lower=2)
    return int(math.ceil((4.0 + 2.0 * beta) / (eps**2 / 2.0 - eps**3 / 3.0) * math.log(n)))


class RandomProjection:
    """Database-friendly random projection ``z -> z P`` (section 5, Theorem 6).

    Achlioptas, McSherry & Schölkopf, *Sampling techniques for kernel methods*
    (NIPS 2001), section 5; re-exported by :mod:`sparsekm.approx.randomized`.

    ``P`` is ``d x s`` with i.i.d. entries ``+-1/sqrt(s)`` (each sign with probability
    1/2), so ``E ||z P||^2 = ||z||^2``.

    .. note:: The paper prints ``P_ij = p_ij / sqrt(d)``. With ``s < d`` columns
       that scaling shrinks squared lengths by ``s/d`` on average and inequality
       (2) could not hold; the lemma it cites (Achlioptas 2001, "Database-friendly
       random projections") scales by the square root of the *target* dimension,
       which is what is used here. ``tests/test_randomized.py`` checks
       ``E ||z P||^2 = ||z||^2``.

    Parameters
    ----------
    d : int >= 1
        Input dimension.
    s : int >= 1, optional
        Target dimension. Give either ``s`` or ``eps`` (with ``n_points``).
    eps : float in (0, 1), optional
        Distortion; ``s`` is then :func:`theorem6_s` ``(eps, beta, n_points)``.
    beta : float > 0, default=1.0
    n_points : int >= 2, optional
        ``n = m + t`` of Theorem 6 (training plus test points).
    random_state : None, int, numpy Generator or RandomState

    Attributes
    ----------
    matrix : ndarray of shape (d, s), read-only
    d, s : int

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.kernels import RandomProjection
    >>> P = RandomProjection(256, 64, random_state=0)
    >>> P.transform(np.ones((2, 256))).shape
    (2, 64)
    """

    def __init__(self, d, s=None, *, eps=None, beta=1.0, n_points=None, random_state=None):
        self.d = check_scalar(d, "d", "RandomProjection", kind="int", lower=1)
        if s is not None and eps is not None:
            raise ValueError("RandomProjection: give either s or eps (with n_points), not both.")
        if s is None and eps is None:
            raise ValueError("RandomProjection: give the target dimension s, or eps and "
                             "n_points to use Theorem 6's s.")
        self.eps = None if eps is None else float(eps)
        self.beta = check_scalar(beta, "beta", "RandomProjection", lower=0,
                                 lower_inclusive=False)
        self.n_points = None if n_points is None else check_scalar(
            n_points, "n_points", "RandomProjection", kind="int", lower=2)
        if eps is not None:
            if n_points is None:
                raise ValueError("RandomProjection: eps needs n_points (the n of Theorem 6).")
            s = theorem6_s(eps, self.beta, self.n_points)
        self.s = check_scalar(s, "s", "RandomProjection", kind="int", lower=1)
        rng = _as_generator(random_state)
        signs = rng.integers(0, 2, size=(self.d, self.s), dtype=np.uint8)
        self._set_signs(signs)

    def _set_signs(self, signs):
        self._packed = np.packbits(signs.reshape(-1))
        P = (2.0 * signs - 1.0) / math.sqrt(self.s)
        P.setflags(write=False)
        self.matrix = P

    @classmethod
    def from_signs(cls, signs):
        """Projection with ``P = (2 signs - 1) / sqrt(s)`` for a (d, s) array of 0/1."""
        signs = np.asarray(signs)
        if signs.ndim != 2 or not np.isin(signs, (0, 1)).all():
            raise ValueError("signs must be a 2-D array of zeros and ones.")
        obj = cls.__new__(cls)
        obj.d, obj.s = int(signs.shape[0]), int(signs.shape[1])
        obj.eps, obj.beta, obj.n_points = None, 1.0, None
        obj._set_signs(signs.astype(np.uint8))
        return obj

    def transform(self, X):
        """Project the rows of ``X``: ``X P`` of shape (n_samples, s)."""
        X = check_array(X, "X")
        if X.shape[1] != self.d:
            raise ValueError(f"X has {X.shape[1]} features, but the RandomProjection expects "
                             f"d = {self.d}.")
        return X @ self.matrix.astype(X.dtype, copy=False)

    __call__ = transform

    def to_dict(self):
        """JSON-serialisable description (the signs packed 8 per byte, base64)."""
        return {"d": self.d, "s": self.s, "eps": self.eps, "beta": self.beta,
                "n_points": self.n_points,
                "signs": base64.b64encode(self._packed.tobytes()).decode("ascii")}

    @classmethod
    def from_dict(cls, spec):
        """Inverse of :meth:`to_dict`."""
        try:
            d, s = int(spec["d"]), int(spec["s"])
            packed = np.frombuffer(base64.b64decode(spec["signs"], validate=True), dtype=np.uint8)
        except Exception as exc:
            raise ValueError(f"Invalid RandomProjection description: {exc}") from None
        if d < 1 or s < 1 or packed.size != (d * s + 7) // 8:
            raise ValueError("Invalid RandomProjection description: sizes do not match.")
        obj = cls.from_signs(np.unpackbits(packed, count=d * s).reshape(d, s))
        obj.eps = None if spec.get("eps") is None else float(spec["eps"])
        obj.beta = float(spec.get("beta", 1.0))
        obj.n_points = None if spec.get("n_points") is None else int(spec["n_points"])
        return obj

    def __eq__(self, other):
        return (isinstance(other, RandomProjection) and self.d == other.d
                and self.s == other.s and np.array_equal(self._packed, other._packed))

    def __hash__(self):
        return hash((self.d, self.s, hashlib.sha1(self._packed.tobytes()).hexdigest()))

    def __repr__(self):
        return f"RandomProjection(d={self.d}, s={self.s})"


def _is_frozen(X):
    """True when no one can change ``X``'s values through it or the arrays it views."""
    a = X
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return a is None or isinstance(a, bytes)


#: Guards every ProjectedKernel's projection cache (threads may share one kernel). Reentrant:
#: a weak reference's callback may run (garbage collection) while the same thread holds it.
_PROJECTED_LOCK = threading.RLock()


@register_kernel
class ProjectedKernel(Kernel):
    """``k_hat(x, y) = k(x P, y P)``: a radial or dot-product kernel on projected points.

    Achlioptas, McSherry & Schölkopf (2001), section 5: distances and inner
    products, hence radial and dot-product kernel values, are evaluated on
    ``s``-dimensional random projections (cost
    ``O(m s)`` instead of ``O(m d)`` per test point once the training points are
    projected). ``ProjectedKernel`` is a :class:`~sparsekm.kernels.Kernel`, so it
    works inside :class:`~sparsekm.KernelExpansion` (vectors stay in input space)
    and every model; gradients are ``P grad k`` by the chain rule. It is saved by
    ``sparsekm.save`` like any kernel (the projection's signs are stored).

    Parameters
    ----------
    kernel : Kernel
        A radial or dot-product kernel.
    projection : RandomProjection

    Notes
    -----
    The wrapper is neither radial nor dot-product in input space
    (``is_radial = is_dot_product = False``), so methods that need a profile
    (e.g. the fixed-point pre-image iteration) refuse it rather than silently
    mis-compute.

    The projection ``Z P`` of a read-only array (the vectors of a
    :class:`~sparsekm.KernelExpansion`, which are copied and frozen at
    construction) is computed once and kept, keyed by the array's identity, for
    as long as that array lives (at most :attr:`cache_size` arrays): evaluating an
    expansion then costs ``O(m s)`` per test point, as the paper intends, instead
    of re-projecting all ``N_z`` vectors (``O(N_z d s)``) on every call. Writable
    arrays are projected every time (their content may change).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm.kernels import RBF
    >>> from sparsekm.kernels import ProjectedKernel, RandomProjection
    >>> k = ProjectedKernel(RBF(0.1), RandomProjection(50, 20, random_state=0))
    >>> k(np.zeros((1, 50)), np.zeros((1, 50)))
    array([[1.]])
    """

    _param_names = ("kernel", "projection")
    #: how many read-only arrays' projections are kept (least recently stored dropped)
    cache_size = 8

    def __init__(self, kernel, projection):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"ProjectedKernel: kernel must be a sparsekm.kernels.Kernel; got "
                            f"{type(kernel).__name__}.")
        if not (kernel.is_radial or kernel.is_dot_product):
            raise TypeError(f"ProjectedKernel wraps radial or dot-product kernels only; got "
                            f"{kernel!r}.")
        if not isinstance(projection, RandomProjection):
            raise TypeError(f"ProjectedKernel: projection must be a RandomProjection; got "
                            f"{type(projection).__name__}.")
        self.kernel = kernel
        self.projection = projection
        self.is_psd = kernel.is_psd
        self._projected = {}  # id(array) -> (weak reference to the array, its projection)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_projected"] = {}  # weak references do not pickle; rebuilt on use
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_projected", {})

    def to_dict(self):
        return {"name": "ProjectedKernel",
                "params": {"kernel": self.kernel.to_dict(),
                           "projection": self.projection.to_dict()}}

    @classmethod
    def _from_dict_params(cls, params):
        if set(params) != {"kernel", "projection"}:
            raise ValueError(f"Invalid parameters for ProjectedKernel: {sorted(params)}.")
        return cls(kernel_from_dict(params["kernel"]),
                   RandomProjection.from_dict(params["projection"]))

    def _project(self, X, name):
        X = check_array(X, name)
        if X.shape[1] != self.projection.d:
            raise ValueError(f"{name} has {X.shape[1]} features, but the ProjectedKernel's "
                             f"projection expects d = {self.projection.d}.")
        if not _is_frozen(X):
            return self._project_rows(X)
        key = id(X)
        cache = self._projected
        with _PROJECTED_LOCK:
            hit = cache.get(key)
        if hit is not None and hit[0]() is X:
            return hit[1]
        Xp = self._project_rows(X)  # outside the lock: two threads may both compute it
        Xp.setflags(write=False)

        def drop(ref, key=key):  # the array is gone: forget its projection
            with _PROJECTED_LOCK:
                if cache.get(key, (None,))[0] is ref:
                    cache.pop(key, None)

        with _PROJECTED_LOCK:  # threads share one kernel: every change of the dict locked
            while len(cache) >= max(int(self.cache_size), 1):
                cache.pop(next(iter(cache)), None)
            cache[key] = (weakref.ref(X, drop), Xp)
        return Xp

    def _project_rows(self, X):
        """``X P`` (no cache)."""
        return X @ self.projection.matrix.astype(X.dtype, copy=False)

    def _P(self, dtype):
        return self.projection.matrix.astype(dtype, copy=False)

    def __call__(self, X, Y=None, *, block_size=None):
        Xp = self._project(X, "X")
        Yp = None if Y is None else self._project(Y, "Y")
        return self.kernel(Xp, Yp, block_size=block_size)

    def mmv(self, X, Y, C, *, block_size=None, Y_sqnorms=None):
        return self.kernel.mmv(self._project(X, "X"), self._project(Y, "Y"), C,
                               block_size=block_size)

    def diag(self, X):
        return self.kernel.diag(self._project(X, "X"))

    def gradient_y(self, X, y):
        y = check_array(y, "y", ndim=1)
        Xp = self._project(X, "X")
        yp = self._project(y[None, :], "y")[0]
        G = self.kernel.gradient_y(Xp, yp)
        return G @ self._P(G.dtype).T

    def gradient_sum(self, X, Z, W, *, block_size=None):
        G = self.kernel.gradient_sum(self._project(X, "X"), self._project(Z, "Z"), W,
                                     block_size=block_size)
        return G @ self._P(G.dtype).T

    # Hooks, so that code calling the base-class machinery directly also works.
    def _sqnorms(self, X):
        return None

    def _block(self, X, Y, x_sq, y_sq):
        Xp, Yp = X @ self._P(X.dtype), Y @ self._P(Y.dtype)
        return self.kernel._block(Xp, Yp, self.kernel._sqnorms(Xp), self.kernel._sqnorms(Yp))

    def _gradient_rows(self, X, y):
        P = self._P(X.dtype)
        return self.kernel._gradient_rows(X @ P, y @ P) @ P.T

    def _gradient_sum_block(self, X, Z, W, x_sq, z_sq):
        P = self._P(X.dtype)
        Xp, Zp = X @ P, Z @ P
        G = self.kernel._gradient_sum_block(Xp, Zp, W, self.kernel._sqnorms(Xp),
                                            self.kernel._sqnorms(Zp))
        return G @ P.T


