"""The spec language: declarations of fitted state (``_persist_attrs``) and their checks."""

from __future__ import annotations

import math

import numpy as np

from .format import _DTYPE_KINDS, FormatError

#: class -> stored class name: the registry of saveable classes (filled by
#: :mod:`.registry`, read here by the estimator declarations)
_NAMES: dict[type, str] = {}


# -- declarations of fitted state ---------------------------------------------------
class _Ctx:
    """What a check needs: where we are (for messages) and the shape symbols bound so far."""

    __slots__ = ("where", "binds", "memory")

    def __init__(self, where, binds, memory=None):
        self.where, self.binds, self.memory = where, binds, memory

    def at(self, suffix):
        return _Ctx(f"{self.where}{suffix}", self.binds, self.memory)

    def fail(self, msg):
        raise FormatError(f"{self.where}: {msg}")

    def bind(self, symbol, value, what):
        if symbol is None:
            return
        if isinstance(symbol, int) and not isinstance(symbol, bool):
            if value != symbol:
                self.fail(f"{what} is {value}, expected {symbol}.")
            return
        seen = self.binds.setdefault(symbol, (value, f"{self.where} ({what})"))
        if seen[0] != value:
            self.fail(f"{what} is {value}, but {seen[1]} says {symbol} = {seen[0]}; "
                      "the attributes are inconsistent.")


class _Attr:
    """Base of the attribute declarations built by :class:`spec`."""

    kind = "value"

    def __init__(self, *, optional=False, nullable=False, finite=False):
        self.optional, self.nullable, self.finite = optional, nullable, bool(finite)

    def check(self, value, ctx):
        if value is None:
            if not self.nullable:
                ctx.fail(f"expected {self.describe()}, found None.")
            return value
        value = self._check(value, ctx)
        if self.finite:
            if isinstance(value, np.ndarray):
                bad = value.dtype.kind in "fc" and not np.all(np.isfinite(value))
            else:
                bad = isinstance(value, float) and not math.isfinite(value)
            if bad:
                ctx.fail("holds non-finite values (NaN or inf); a fitted model has none here.")
        return value

    def describe(self):
        return self.kind

    def encode_value(self, value):
        return value

    def _check(self, value, ctx):  # pragma: no cover - overridden
        raise NotImplementedError


class _Scalar(_Attr):
    def __init__(self, kind, types, *, bind=None, min=None, **kw):
        super().__init__(**kw)
        self.kind, self.types, self.bind, self.min = kind, types, bind, min

    def _check(self, value, ctx):
        if not isinstance(value, self.types) or (bool not in self.types and isinstance(value, bool)):
            ctx.fail(f"expected {self.kind}, found {type(value).__name__}.")
        if self.min is not None and not value >= self.min:
            ctx.fail(f"expected {self.kind} >= {self.min}, found {value!r}.")
        if self.kind == "int" and value > 2**62:
            ctx.fail(f"integer {value} is implausibly large.")
        ctx.bind(self.bind, value, "value")
        return value


class _Array(_Attr):
    def __init__(self, dtype="f", shape=None, *, omit_dask=False, **kw):
        super().__init__(**kw)
        self.dtype, self.shape = dtype, None if shape is None else tuple(shape)
        if omit_dask and not self.optional:
            raise TypeError("spec.array: omit_dask=True needs optional=True (the attribute is "
                            "absent from a model loaded from a file it was left out of).")
        self.omit_dask = bool(omit_dask)
        if not set(dtype) <= set(_DTYPE_KINDS):
            raise TypeError(f"spec.array: dtype kinds must be among {_DTYPE_KINDS!r}; got {dtype!r}.")

    kind = "array"

    def describe(self):
        return f"array (dtype kind {self.dtype!r}, shape {self.shape})"

    def _check(self, value, ctx):
        if not isinstance(value, np.ndarray):
            ctx.fail(f"expected an array, found {type(value).__name__}.")
        if value.dtype.kind not in self.dtype:
            ctx.fail(f"expected an array of dtype kind {self.dtype!r}, found dtype {value.dtype}.")
        if self.shape is not None:
            if value.ndim != len(self.shape):
                ctx.fail(f"expected a {len(self.shape)}-D array, found shape {value.shape}.")
            for i, (sym, n) in enumerate(zip(self.shape, value.shape)):
                ctx.bind(sym, n, f"dimension {i} of shape {value.shape}")
        return value


class _StrArray(_Array):
    """Object array of str (``feature_names_in_``), stored as a fixed-width unicode array."""

    def __init__(self, shape=(None,), **kw):
        super().__init__("U", shape, **kw)

    def encode_value(self, value):
        if isinstance(value, np.ndarray) and value.dtype == object:
            if not all(isinstance(v, str) for v in value.flat):
                raise TypeError("feature names must be strings.")
            return value.astype(str)
        return value

    def _check(self, value, ctx):
        value = super()._check(value, ctx)
        if ctx.memory is not None:  # one Python str per element: ~22 times the stored size
            ctx.memory.text(value, ctx.where.rsplit(": ", 1)[-1])
        return value.astype(object)


class _Kernel(_Attr):
    kind = "kernel"

    def _check(self, value, ctx):
        from ..kernels import Kernel

        if not isinstance(value, Kernel):
            ctx.fail(f"expected a kernel, found {type(value).__name__}.")
        return value


class _Expansion(_Attr):
    kind = "KernelExpansion"

    def __init__(self, *, n_terms=None, n_features=None, n_outputs=None, **kw):
        super().__init__(**kw)
        self.n_terms, self.n_features, self.n_outputs = n_terms, n_features, n_outputs

    def _check(self, value, ctx):
        from ..expansion import KernelExpansion

        if not isinstance(value, KernelExpansion):
            ctx.fail(f"expected a KernelExpansion, found {type(value).__name__}.")
        ctx.bind(self.n_terms, value.n_terms, "number of terms")
        ctx.bind(self.n_features, value.vectors.shape[1], "number of features")
        ctx.bind(self.n_outputs, value.n_outputs, "number of outputs")
        return value


class _Estimator(_Attr):
    kind = "estimator"

    def __init__(self, name, *, n_features=None, **kw):
        super().__init__(**kw)
        self.name, self.n_features = name, n_features

    def _check(self, value, ctx):
        if type(value) not in _NAMES or (self.name is not None
                                         and _NAMES[type(value)] != self.name):
            ctx.fail(f"expected a fitted {self.name or 'registered estimator'}, found "
                     f"{type(value).__name__}.")
        ctx.bind(self.n_features, getattr(value, "n_features_in_", None), "n_features_in_")
        return value


class _Dict(_Attr):
    kind = "dict"

    def __init__(self, values, *, keys=None, **kw):
        super().__init__(**kw)
        self.values, self.keys = values, None if keys is None else frozenset(keys)

    def _check(self, value, ctx):
        if not isinstance(value, dict):
            ctx.fail(f"expected a dict, found {type(value).__name__}.")
        if self.keys is not None and not set(value) <= self.keys:
            ctx.fail(f"unexpected keys {sorted(set(value) - self.keys)}; allowed: {sorted(self.keys)}.")
        return {k: self.values.check(v, ctx.at(f"[{k!r}]")) for k, v in value.items()}


class _List(_Attr):
    kind = "list"

    def __init__(self, item, *, length=None, container=list, **kw):
        super().__init__(**kw)
        self.item, self.length, self.container = item, length, container
        self.kind = container.__name__

    def _check(self, value, ctx):
        if type(value) is not self.container:
            ctx.fail(f"expected a {self.kind}, found {type(value).__name__}.")
        ctx.bind(self.length, len(value), "length")
        return self.container([self.item.check(v, ctx.at(f"[{i}]")) for i, v in enumerate(value)])


class _OneOf(_Attr):
    kind = "one of"

    def __init__(self, *options, **kw):
        super().__init__(**kw)
        self.options = options

    def describe(self):
        return " or ".join(o.describe() for o in self.options)

    def _check(self, value, ctx):
        errors = []
        for option in self.options:
            trial = _Ctx(ctx.where, dict(ctx.binds), ctx.memory)
            try:
                out = option.check(value, trial)
            except FormatError as exc:
                errors.append(str(exc).removeprefix(f"{ctx.where}: "))
                continue
            ctx.binds.update(trial.binds)
            return out
        ctx.fail(f"expected {self.describe()}: " + "; ".join(errors))


class spec:
    """Builders for fitted-attribute declarations (``_persist_attrs``).

    Shapes are tuples whose entries are ``None`` (any size), an ``int`` (exact size)
    or a symbol ``str``: every use of one symbol within one object must have the same
    size (``("n_terms", "n_features")`` for the vectors, ``bind="n_features"`` for
    ``n_features_in_``). Every builder takes ``optional=True`` (the attribute may be
    absent), ``nullable=True`` (it may be ``None``) and ``finite=True`` (floats and
    float arrays may hold no NaN or inf: checked on load).
    """

    @staticmethod
    def int(*, bind=None, min=0, **kw):
        """A Python ``int`` (not bool), ``>= min``; ``bind`` names its shape symbol."""
        return _Scalar("int", (int,), bind=bind, min=min, **kw)

    @staticmethod
    def float(**kw):
        """A Python ``float`` (NaN and inf allowed unless ``finite=True``)."""
        return _Scalar("float", (float,), **kw)

    @staticmethod
    def bool(**kw):
        return _Scalar("bool", (bool,), **kw)

    @staticmethod
    def str(**kw):
        return _Scalar("str", (str,), **kw)

    @staticmethod
    def array(dtype="f", shape=None, *, omit_dask=False, **kw):
        """An ndarray whose dtype kind is in ``dtype`` (e.g. ``"f"``, ``"iu"``, ``"biufU"``).

        ``omit_dask=True`` (with ``optional=True``): when the fitted value is a dask
        array -- ``n``-sized state a fit on a dask array leaves on the cluster, such as
        ``GreedyBasis.residuals_`` -- :func:`save` leaves the attribute out of the file
        instead of refusing the model (it is never computed on the client). Only for
        state that prediction does not use: the loaded model lacks the attribute.
        """
        return _Array(dtype, shape, omit_dask=omit_dask, **kw)

    @staticmethod
    def str_array(shape=(None,), **kw):
        """An object array of ``str`` (scikit-learn's ``feature_names_in_``)."""
        return _StrArray(shape, **kw)

    @staticmethod
    def kernel(**kw):
        return _Kernel(**kw)

    @staticmethod
    def expansion(*, n_terms=None, n_features=None, n_outputs=None, **kw):
        """A :class:`~sparsekm.KernelExpansion`; the keywords bind its sizes to symbols."""
        return _Expansion(n_terms=n_terms, n_features=n_features, n_outputs=n_outputs, **kw)

    @staticmethod
    def estimator(name=None, *, n_features=None, **kw):
        """A fitted registered estimator stored under class name ``name`` (None: any)."""
        return _Estimator(name, n_features=n_features, **kw)

    @staticmethod
    def dict(values, *, keys=None, **kw):
        """A dict of str keys (restricted to ``keys`` if given) to ``values``."""
        return _Dict(values, keys=keys, **kw)

    @staticmethod
    def list(item, *, length=None, **kw):
        return _List(item, length=length, **kw)

    @staticmethod
    def tuple(item, *, length=None, **kw):
        return _List(item, length=length, container=tuple, **kw)

    @staticmethod
    def one_of(*options, **kw):
        return _OneOf(*options, **kw)
