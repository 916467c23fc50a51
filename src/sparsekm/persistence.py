"""Safe persistence: ``save(obj, path)`` / ``load(path)`` without pickle.

File format (schema version 1): an uncompressed (``ZIP_STORED``) ZIP archive holding

* ``meta.json`` — ``{"format": "sparsekm", "schema_version": 1, "sparsekm_version",
  "object": <encoded object tree>, "arrays": {name: {"dtype", "shape", "sha256"}}}``;
* ``arrays/<name>.npy`` — one NumPy ``.npy`` file per array (``allow_pickle=False``);
* ``signature.json`` — only when saved with ``key=``: an HMAC-SHA256 tag over the
  name, size and SHA-256 of the contents of every other member.

The object tree is JSON; non-JSON values are tagged dictionaries (``{"__type__": ...}``)
for tuples, dicts, arrays, kernels, :class:`~sparsekm.KernelExpansion` and registered
estimators. What :func:`load` guarantees (see ``docs/persistence.md``):

* **No code runs.** Only classes registered with :func:`register` are rebuilt, only
  from their constructor parameters (``get_params`` names, each validated with the
  class's ``_parameter_constraints``; ``memory`` must be None) and the fitted
  attributes each class *declares* in ``_persist_attrs`` (an allow-list with expected
  types, dtypes and shapes). Undeclared keys, dunder names and method names are
  refused. The rebuilt estimator is validated like a fitted one (scikit-learn steps:
  their statistics recomputed) before it is returned.
* **Bounded memory.** The ZIP directory's entries are counted before :mod:`zipfile`
  parses it; local headers must agree with it; every member must be stored
  uncompressed; ``meta.json`` is read with a cap on the bytes actually read and the
  cost of parsing it is bounded beforehand; JSON keys may not repeat; every declared
  array shape must agree with the bytes its member holds, and even a zero-size array
  may not declare dimensions whose product (zeros counted as one) exceeds the
  allocation budget (:data:`ALLOCATION_FACTOR` times the file size plus
  :data:`ALLOCATION_SLACK`); random projections are bounded by integer sizes within
  :data:`PROJECTION_ALLOWANCE`.
* **Authenticity on request.** ``save(obj, path, key=...)`` / ``load(path, key=...)``
  sign and verify every member's name, size and contents with HMAC-SHA256. Without a
  key the SHA-256 digests in ``meta.json`` detect accidental corruption only: anyone
  can edit the file and recompute them; a signed file loaded without a key warns
  (:class:`UnverifiedSignatureWarning`) and ``require_key=True`` refuses it.

Every violation raises :class:`FormatError` (a ``ValueError``) naming the problem.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import hmac
import json
import math
import os
import re
import stat
import struct
import tempfile
import warnings
import zipfile

import numpy as np

__all__ = ["save", "load", "register", "FormatError", "UnverifiedSignatureWarning",
           "SCHEMA_VERSION", "spec", "ALLOCATION_FACTOR", "ALLOCATION_SLACK",
           "PROJECTION_ALLOWANCE"]

SCHEMA_VERSION = 1
_FORMAT = "sparsekm"
_META = "meta.json"
_SIGNATURE = "signature.json"
_HMAC_CONTEXT = b"sparsekm-hmac-sha256-v1\n"
_ARRAY_MEMBER = re.compile(r"arrays/(a[0-9]{1,9})\.npy")
_MAX_META_BYTES = 64 * 2**20
_MAX_MEMBERS = 100_000
_MAX_NDIM = 32
_DTYPE_KINDS = "biufcUS"  # bool, ints, floats, complex, fixed-width unicode / bytes
_CHUNK = 2**20

#: Derived allocations (array dimensions, outputs of an expansion) may not exceed
#: ``ALLOCATION_FACTOR * file_size + ALLOCATION_SLACK`` bytes. Real arrays hold at most
#: the file's size, so only sizes written in the file (zero-size arrays' dimensions)
#: can reach the budget.
ALLOCATION_FACTOR = 2
ALLOCATION_SLACK = 2**20
#: Random projections are stored packed (one bit per sign) and rebuilt as float64
#: matrices, 64 times larger: their estimated peak (:data:`_PROJECTION_PEAK_PER_SIGN`
#: bytes per sign, all distinct projections of a file together) may use
#: ``ALLOCATION_FACTOR * file_size + PROJECTION_ALLOWANCE`` bytes. 32 MiB holds a
#: 784 x 2,000 projection whatever the file size.
PROJECTION_ALLOWANCE = 32 * 2**20
_PROJECTION_PEAK_PER_SIGN = 16  # measured 13.1 (packed, unpacked, uint8 copy, float64 P)
#: Parsing meta.json costs Python objects. Before parsing, its cost is bounded from its
#: structural characters: ``_META_COST_PER_TOKEN`` bytes per ``[ { , :`` plus
#: ``_META_COST_PER_BYTE`` per byte (measured worst: 66 bytes per ``[]`` token, twice
#: that with the decoded tree), within ``ALLOCATION_FACTOR * file_size + META_ALLOWANCE``.
_META_COST_PER_TOKEN = 160
_META_COST_PER_BYTE = 2
_META_ALLOWANCE = 16 * 2**20
_TMP_SUFFIX = ".skm-tmp"

_CLASSES: dict[str, type] = {}   # stored class name -> class
_NAMES: dict[type, str] = {}     # class -> stored class name


class FormatError(ValueError):
    """A file is not a valid sparsekm file (corrupt, truncated, tampered or unsupported)."""


class UnverifiedSignatureWarning(UserWarning):
    """A signed file was loaded without a key: its HMAC tag was not checked.

    Pass ``key=`` to verify it, or ``require_key=True`` (CLI ``--require-key``) to refuse
    such loads; ``warnings.simplefilter("error", UnverifiedSignatureWarning)`` turns the
    warning into an exception.
    """


# -- declarations of fitted state ---------------------------------------------------
class _Ctx:
    """What a check needs: where we are (for messages) and the shape symbols bound so far."""

    __slots__ = ("where", "binds")

    def __init__(self, where, binds):
        self.where, self.binds = where, binds

    def at(self, suffix):
        return _Ctx(f"{self.where}{suffix}", self.binds)

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

    def __init__(self, *, optional=False, nullable=False):
        self.optional, self.nullable = optional, nullable

    def check(self, value, ctx):
        if value is None:
            if not self.nullable:
                ctx.fail(f"expected {self.describe()}, found None.")
            return value
        return self._check(value, ctx)

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
        return super()._check(value, ctx).astype(object)


class _Kernel(_Attr):
    kind = "kernel"

    def _check(self, value, ctx):
        from .kernels import Kernel

        if not isinstance(value, Kernel):
            ctx.fail(f"expected a kernel, found {type(value).__name__}.")
        return value


class _Expansion(_Attr):
    kind = "KernelExpansion"

    def __init__(self, *, n_terms=None, n_features=None, n_outputs=None, **kw):
        super().__init__(**kw)
        self.n_terms, self.n_features, self.n_outputs = n_terms, n_features, n_outputs

    def _check(self, value, ctx):
        from .expansion import KernelExpansion

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
            trial = _Ctx(ctx.where, dict(ctx.binds))
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
    absent) and ``nullable=True`` (it may be ``None``).
    """

    @staticmethod
    def int(*, bind=None, min=0, **kw):
        """A Python ``int`` (not bool), ``>= min``; ``bind`` names its shape symbol."""
        return _Scalar("int", (int,), bind=bind, min=min, **kw)

    @staticmethod
    def float(**kw):
        """A Python ``float`` (NaN and inf allowed)."""
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


# scikit-learn sets feature_names_in_ when fitted on a DataFrame: allowed everywhere.
# ``set_output`` stores its choice in ``_sklearn_output_config``: restored too, so that a
# saved pandas pipeline still produces (and its steps still expect) DataFrames.
_OUTPUT_CONFIG = "_sklearn_output_config"
_COMMON_ATTRS = {"feature_names_in_": spec.str_array(shape=("n_features",), optional=True),
                 _OUTPUT_CONFIG: spec.dict(spec.str(), keys=("transform",), optional=True)}
_OUTPUT_CONFIG_VALUES = ("default", "pandas", "polars")
_PRIVATE_STATE = frozenset(("_n_features_out", _OUTPUT_CONFIG))


_ATTRS: dict[type, dict] = {}    # class -> declaration given to register(attrs=...)
_CHECKED: dict[type, dict] = {}  # class -> checked declaration (cache)


def _declaration(cls):
    """The checked ``{name: spec}`` declaration of a registered class."""
    attrs = _CHECKED.get(cls)
    if attrs is not None:
        return attrs
    declared = _ATTRS.get(cls, getattr(cls, "_persist_attrs", None))
    if not isinstance(declared, dict):
        raise TypeError(
            f"{cls.__qualname__} is registered for sparsekm files but declares no fitted "
            "attributes: give it a class attribute _persist_attrs = {name: spec...} "
            "(see docs/persistence.md, 'Adding a class')."
        )
    attrs = {**{k: v for k, v in _COMMON_ATTRS.items() if k not in dir(cls)}, **declared}
    for name, s in attrs.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("__") \
                or (not name.endswith("_") and name not in _PRIVATE_STATE):
            raise TypeError(f"{cls.__qualname__}._persist_attrs: {name!r} is not a fitted "
                            "attribute name (an identifier ending in '_', not a dunder).")
        if name in dir(cls):
            raise TypeError(f"{cls.__qualname__}._persist_attrs: {name!r} is defined on the "
                            "class (a method, property or class attribute); it cannot be state.")
        if not isinstance(s, _Attr):
            raise TypeError(f"{cls.__qualname__}._persist_attrs[{name!r}] must be built with "
                            "sparsekm.persistence.spec.")
    _CHECKED[cls] = attrs
    return attrs


_STATE_CHECKS: dict[type, object] = {}  # class -> check(est) raising ValueError
_TEMPLATES: dict[type, tuple] = {}       # class -> parameters holding an unfitted estimator


def register(cls=None, *, name=None, attrs=None, check=None, templates=()):
    """Class decorator: allow :func:`load` to rebuild instances of ``cls``.

    The class must be constructible from ``get_params()`` and declare the fitted
    attributes it restores: a class attribute ``_persist_attrs = {name: spec...}``
    built with :class:`spec`, or (for a class you do not own) ``attrs=``. ``name``
    is the stored class name (default ``module.qualname``). ``check(est)`` (optional)
    validates the rebuilt fitted state and raises ``ValueError`` naming what is wrong.
    ``templates`` names the parameters that hold an *unfitted* registered estimator
    (``OneVsRestClassifier.estimator``): only its constructor parameters are stored.
    Constructor parameters are validated on load with the class's
    ``_parameter_constraints`` (scikit-learn's). See ``docs/persistence.md``.
    """
    def deco(c):
        stored = name or f"{c.__module__}.{c.__qualname__}"
        _CLASSES[stored] = c
        _NAMES[c] = stored
        if attrs is not None:
            _ATTRS[c] = attrs
        if check is not None:
            _STATE_CHECKS[c] = check
        if templates:
            _TEMPLATES[c] = tuple(templates)
        _CHECKED.pop(c, None)
        return c

    return deco if cls is None else deco(cls)


def _finite(est, *names):
    for name in names:
        a = getattr(est, name)
        if a is not None and not np.all(np.isfinite(a)):
            raise ValueError(f"{name} holds non-finite values (NaN or inf).")


def _n_samples_ok(n):
    n = np.asarray(n)
    if not np.all(np.isfinite(n)) or not np.all(n > 0):  # a sum of sample weights may be < 1
        raise ValueError(f"n_samples_seen_ must be > 0; found {n.min() if n.size else n!r}.")


def _check_standard_scaler(est):
    """StandardScaler: finite statistics, ``scale_`` recomputed from ``var_``."""
    _finite(est, "mean_", "var_", "scale_")
    _n_samples_ok(est.n_samples_seen_)
    if est.with_mean and est.mean_ is None:
        raise ValueError("with_mean=True but mean_ is None.")
    if not est.with_std:
        if est.scale_ is not None or est.var_ is not None:
            raise ValueError("with_std=False but scale_/var_ are set.")
        return
    if est.scale_ is None or est.var_ is None or est.mean_ is None:
        raise ValueError("with_std=True needs mean_, var_ and scale_.")
    if np.any(est.var_ < 0) or np.any(est.scale_ <= 0):
        raise ValueError("var_ must be >= 0 and scale_ > 0 (a zero scale divides by zero).")
    from sklearn.preprocessing._data import _handle_zeros_in_scale, _is_constant_feature

    constant = _is_constant_feature(est.var_, est.mean_, est.n_samples_seen_)
    want = _handle_zeros_in_scale(np.sqrt(est.var_), copy=True, constant_mask=constant)
    if not np.allclose(est.scale_, want, rtol=1e-12, atol=0):
        raise ValueError("scale_ is not the square root of var_ (as fit computes it): the "
                         "statistics were edited (e.g. mean_ and scale_ swapped).")


def _check_minmax_scaler(est):
    """MinMaxScaler: finite; ``data_range_ = data_max_ - data_min_``; ``scale_``, ``min_`` derived."""
    _finite(est, "min_", "scale_", "data_min_", "data_max_", "data_range_")
    _n_samples_ok(est.n_samples_seen_)
    lo, hi = est.feature_range
    if not lo < hi:
        raise ValueError(f"feature_range {est.feature_range} must be increasing.")
    from sklearn.preprocessing._data import _handle_zeros_in_scale

    if not np.array_equal(est.data_range_, est.data_max_ - est.data_min_) \
            or np.any(est.data_range_ < 0):
        raise ValueError("data_range_ is not data_max_ - data_min_ (>= 0).")
    scale = (hi - lo) / _handle_zeros_in_scale(est.data_range_, copy=True)
    if not np.allclose(est.scale_, scale, rtol=1e-12, atol=0) \
            or not np.allclose(est.min_, lo - est.data_min_ * scale, rtol=1e-12, atol=1e-300):
        raise ValueError("scale_ and min_ do not follow from data_min_, data_range_ and "
                         "feature_range: the statistics were edited.")


def _check_pca(est):
    """PCA: finite, non-negative variances, ``explained_variance_ = S**2 / (n - 1)``."""
    _finite(est, "components_", "explained_variance_", "explained_variance_ratio_",
            "singular_values_", "mean_", "noise_variance_")
    n_comp, n_feat = est.components_.shape
    if est.n_samples_ < 1 or n_comp > min(n_feat, est.n_samples_):
        raise ValueError(f"{n_comp} components for {n_feat} features and {est.n_samples_} "
                         "samples.")
    ev, ratio = est.explained_variance_, est.explained_variance_ratio_
    if np.any(ev < 0) or np.any(est.singular_values_ < 0) or est.noise_variance_ < 0 \
            or np.any(ratio < 0) or ratio.sum() > 1 + 1e-6:
        raise ValueError("variances and singular values must be >= 0 and the variance "
                         "ratios sum to at most 1.")
    if est.n_samples_ > 1:
        rtol = 1e-4 if ev.dtype == np.float32 else 1e-8
        if not np.allclose(ev, est.singular_values_**2 / (est.n_samples_ - 1), rtol=rtol,
                           atol=1e-12 * max(float(ev.max(initial=0.0)), 1e-300)):
            raise ValueError("explained_variance_ is not singular_values_**2 / (n_samples_ - 1).")
    norms = np.linalg.norm(est.components_, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-3):
        raise ValueError("the rows of components_ are not unit vectors.")


def _check_label_binarizer(est):
    if est.y_type_ not in ("binary", "multiclass", "multilabel-indicator"):
        raise ValueError(f"unknown y_type_ {str(est.y_type_)[:40]!r}.")
    if not est.neg_label < est.pos_label:
        raise ValueError("neg_label must be smaller than pos_label.")
    if est.classes_.size < 1 or np.unique(est.classes_).size != est.classes_.size:
        raise ValueError("classes_ must be distinct labels.")


def _check_members(est, want):
    """Meta-estimators: the number of fitted members and their input width."""
    n = len(est.classes_)
    if n < 2 or len(est.estimators_) != want(n):
        raise ValueError(f"{len(est.estimators_)} fitted estimator(s) for {n} classes "
                         f"(expected {want(n) if n >= 2 else 'at least 2 classes'}).")
    for i, member in enumerate(est.estimators_):
        if getattr(member, "n_features_in_", est.n_features_in_) != est.n_features_in_:
            raise ValueError(f"estimators_[{i}] expects {member.n_features_in_} features, "
                             f"the classifier {est.n_features_in_}.")
        if getattr(member, "_estimator_type", None) != "classifier" and \
                not hasattr(member, "classes_"):
            raise ValueError(f"estimators_[{i}] is not a classifier.")


def _check_ovr(est):
    lb = est.label_binarizer_
    if lb.y_type_ == "multilabel-indicator":
        raise ValueError("multilabel one-vs-rest models are not supported.")
    if not np.array_equal(lb.classes_, est.classes_):
        raise ValueError("classes_ differs from label_binarizer_.classes_.")
    _check_members(est, lambda n: 1 if n == 2 else n)


def _check_ovo(est):
    if est.pairwise_indices_ is not None:
        raise ValueError("pairwise_indices_ must be None (precomputed kernels are not stored).")
    _check_members(est, lambda n: n * (n - 1) // 2)


def _register_sklearn():
    """Declarations for the scikit-learn steps a deployed pipeline usually holds."""
    if "sklearn.pipeline.Pipeline" in _CLASSES:
        return
    from sklearn.decomposition import PCA
    from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import LabelBinarizer, MinMaxScaler, StandardScaler

    scaler = {
        "mean_": spec.array("f", ("n_features",), nullable=True),
        "var_": spec.array("f", ("n_features",), nullable=True),
        "scale_": spec.array("f", ("n_features",), nullable=True),
        "n_features_in_": spec.int(bind="n_features"),
        "n_samples_seen_": spec.one_of(spec.int(), spec.float(min=0.0),
                                       spec.array("iuf", ("n_features",))),
    }
    minmax = {
        "min_": spec.array("f", ("n_features",)),
        "scale_": spec.array("f", ("n_features",)),
        "data_min_": spec.array("f", ("n_features",)),
        "data_max_": spec.array("f", ("n_features",)),
        "data_range_": spec.array("f", ("n_features",)),
        "n_features_in_": spec.int(bind="n_features"),
        "n_samples_seen_": spec.int(),
    }
    pca = {
        "components_": spec.array("f", ("n_components", "n_features")),
        "explained_variance_": spec.array("f", ("n_components",)),
        "explained_variance_ratio_": spec.array("f", ("n_components",)),
        "singular_values_": spec.array("f", ("n_components",)),
        "mean_": spec.array("f", ("n_features",)),
        "n_components_": spec.int(bind="n_components"),
        "n_samples_": spec.int(),
        "noise_variance_": spec.float(),
        "n_features_in_": spec.int(bind="n_features"),
    }
    binarizer = {
        "classes_": spec.array("biufU", ("n_classes",)),
        "y_type_": spec.str(),
        "sparse_input_": spec.bool(),
    }
    ovr = {
        "estimators_": spec.list(spec.estimator(n_features="n_features")),
        "classes_": spec.array("biufU", ("n_classes",)),
        "label_binarizer_": spec.estimator("sklearn.preprocessing.LabelBinarizer"),
        "n_features_in_": spec.int(bind="n_features"),
    }
    ovo = {
        "estimators_": spec.tuple(spec.estimator(n_features="n_features")),
        "classes_": spec.array("biufU", ("n_classes",)),
        "pairwise_indices_": spec.list(spec.array("iu", (None,)), nullable=True),
        "n_features_in_": spec.int(bind="n_features"),
    }
    register(StandardScaler, name="sklearn.preprocessing.StandardScaler", attrs=scaler,
             check=_check_standard_scaler)
    register(MinMaxScaler, name="sklearn.preprocessing.MinMaxScaler", attrs=minmax,
             check=_check_minmax_scaler)
    register(PCA, name="sklearn.decomposition.PCA", attrs=pca, check=_check_pca)
    register(LabelBinarizer, name="sklearn.preprocessing.LabelBinarizer", attrs=binarizer,
             check=_check_label_binarizer)
    # Wrapping registered estimators only: their members are registered, fitted estimators.
    register(OneVsRestClassifier, name="sklearn.multiclass.OneVsRestClassifier", attrs=ovr,
             check=_check_ovr, templates=("estimator",))
    register(OneVsOneClassifier, name="sklearn.multiclass.OneVsOneClassifier", attrs=ovo,
             check=_check_ovo, templates=("estimator",))
    # A Pipeline's fitted state lives in its steps (its ``steps`` parameter).
    register(Pipeline, name="sklearn.pipeline.Pipeline", attrs={})


def _import_registries():
    import importlib

    for mod in ("sparsekm.models", "sparsekm.approx", "sparsekm.multiclass"):
        importlib.import_module(mod)
    _register_sklearn()


# -- encoding -----------------------------------------------------------------------
def _is_dask_collection(obj):
    return type(obj).__module__.startswith("dask.") and hasattr(obj, "dask")


class _Encoder:
    def __init__(self):
        from .expansion import KernelExpansion
        from .kernels import Kernel

        self.Kernel, self.KernelExpansion = Kernel, KernelExpansion
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, arr, where):
        arr = np.asarray(arr)
        if arr.dtype.kind not in _DTYPE_KINDS or arr.dtype.fields is not None:
            raise TypeError(f"Cannot save {where}: arrays of dtype {arr.dtype} cannot be stored "
                            "(object arrays would need pickle).")
        name = f"a{len(self.arrays)}"
        # Memory order is kept (BLAS results depend on it: round trips are bit-exact).
        fortran = arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous
        self.arrays[name] = arr if fortran else np.ascontiguousarray(arr)
        return {"__type__": "ndarray", "ref": name}

    def encode(self, obj, where="object"):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            return float(obj)
        if isinstance(obj, np.ndarray):
            return self.array(obj, where)
        if isinstance(obj, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"__type__": "tuple",
                    "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            if not all(isinstance(k, str) for k in obj):
                raise TypeError(f"Cannot save {where}: dictionary keys must be strings.")
            return {"__type__": "dict",
                    "items": {k: self.encode(v, f"{where}.{k}") for k, v in obj.items()}}
        if isinstance(obj, self.Kernel):
            return {"__type__": "kernel", "spec": obj.to_dict()}
        if isinstance(obj, self.KernelExpansion):
            return {"__type__": "expansion",
                    "vectors": self.array(obj.vectors, f"{where}.vectors"),
                    "coef": self.array(obj.coef, f"{where}.coef"),
                    "kernel": self.encode(obj.kernel, f"{where}.kernel"),
                    "intercept": self.encode(obj.intercept, f"{where}.intercept")}
        name = _NAMES.get(type(obj))
        if name is None and type(obj).__module__.startswith("sklearn."):
            _register_sklearn()
            name = _NAMES.get(type(obj))
        if name is not None:
            return self.estimator(obj, name, where)
        if _is_dask_collection(obj):
            raise TypeError(
                f"Cannot save {where}: it is a dask array, whose values live on a dask "
                f"cluster (sparsekm never computes one on the client behind your back); "
                f"compute it or drop it before saving.")
        raise TypeError(
            f"Cannot save {where} of type {type(obj).__name__}: sparsekm files hold arrays, "
            "numbers, strings, kernels, kernel expansions, registered estimators and "
            "Pipelines of them (scikit-learn: StandardScaler, MinMaxScaler, PCA) only."
        )

    def estimator(self, obj, name, where):
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        cls = type(obj)
        attrs = _declaration(cls)
        try:
            check_is_fitted(obj)
        except NotFittedError:
            raise ValueError(f"Cannot save {where}: this {cls.__name__} is not fitted "
                             "(sparsekm files hold fitted models).") from None
        undeclared = sorted(k for k in vars(obj)
                            if k.endswith("_") and not k.startswith("__") and k not in attrs)
        if undeclared:
            raise TypeError(f"Cannot save {where}: {cls.__name__} has fitted attribute(s) "
                            f"{undeclared} not declared in {cls.__name__}._persist_attrs.")
        state = {}
        for k, s in attrs.items():
            if k in vars(obj):
                if getattr(s, "omit_dask", False) and _is_dask_collection(vars(obj)[k]):
                    continue  # n-sized state on the cluster, not needed to predict
                state[k] = self.encode(s.encode_value(vars(obj)[k]), f"{where}.{k}")
            elif not s.optional:
                raise ValueError(f"Cannot save {where}: {cls.__name__} lacks the fitted "
                                 f"attribute {k!r}.")
        # Estimators whose parameters hold objects sparsekm files cannot store (e.g. a
        # wrapped scikit-learn SVC) return storable parameters from _persist_params().
        return {"__type__": "estimator", "class": name,
                "params": self.params(obj, cls, where), "state": state}

    def params(self, obj, cls, where):
        params = obj._persist_params() if hasattr(obj, "_persist_params") else \
            obj.get_params(deep=False)
        templates = {k: params.pop(k) for k in _TEMPLATES.get(cls, ()) if k in params}
        node = self.encode(params, f"{where}.params")
        # load() checks every parameter (_params_problem): a value fit accepted or ignored
        # (degree=0 under an RBF kernel, fit_intercept=1) would make a file it refuses
        problem = _params_problem(cls, {**params, **templates})
        if problem is not None:
            raise ValueError(f"Cannot save {where}: {problem} load() would refuse the file; "
                             "set the parameter to a valid value (set_params) and save again.")
        for k, v in templates.items():
            name = _NAMES.get(type(v))
            if name is None:
                raise TypeError(f"Cannot save {where}: its {k!r} is a {type(v).__name__}, "
                                "not a registered (sparsekm) estimator.")
            node["items"][k] = {"__type__": "template", "class": name,
                                "params": self.params(v, type(v), f"{where}.{k}")}
        return node


def _check_key(key):
    if key is None:
        return None
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"key must be bytes (or str); got {type(key).__name__}.")
    key = bytes(key)
    if not key:
        raise ValueError("key must not be empty.")
    return key


def _manifest_tag(key, digests):
    """HMAC-SHA256 over ``(name, length, sha256)`` of every member, in name order."""
    mac = hmac.new(key, _HMAC_CONTEXT, hashlib.sha256)
    for name in sorted(digests):
        size, digest = digests[name]
        raw = name.encode("utf-8")
        mac.update(len(raw).to_bytes(8, "big") + raw + size.to_bytes(8, "big") + digest)
    return mac.hexdigest()


class _HashingWriter:
    def __init__(self, fh):
        self.fh, self.sha, self.size = fh, hashlib.sha256(), 0

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        return self.fh.write(data)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _tmp_pattern(base):
    return re.compile(re.escape(f".{base}.") + r"[A-Za-z0-9_]{1,64}" + re.escape(_TMP_SUFFIX))


def _remove_orphans(directory, base, own_tmp):
    """Remove temporary files that crashed saves to the same path left behind.

    Only names ``.<base>.<random>.skm-tmp`` (what :func:`save` creates), regular files
    owned by this user, not newer than this save's own temporary file and not locked:
    every save holds an exclusive ``flock`` on its temporary file until it is renamed,
    so a locked one belongs to a save still running (a dead process holds no lock).
    Returns the names removed.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks, leave them
        return []
    pattern, removed = _tmp_pattern(base), []
    try:
        own_mtime = os.stat(own_tmp).st_mtime_ns
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        full = os.path.join(directory, name)
        if not pattern.fullmatch(name) or full == own_tmp:
            continue
        try:
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() \
                    or st.st_mtime_ns > own_mtime:
                continue
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a save in progress
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(full)):
                os.unlink(full)
                removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _lock(fd):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _save_error(exc, path):
    """The same kind of OSError, naming the target path instead of the temporary file."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        reason = "no space left on device (free some space or save elsewhere)"
    # OSError(errno, message) becomes the matching subclass (PermissionError, ...)
    return OSError(exc.errno, f"cannot save to {path!r}: {reason}; any previous file there "
                              "is left intact")


def save(obj, path, *, key=None, force=False):
    """Save ``obj`` to ``path`` in sparsekm's safe format (see module docstring).

    The file is written to a new temporary file ``.<name>.<random>.skm-tmp`` in the same
    directory (created exclusively, never through a symlink, and locked while written),
    flushed to disk and then atomically moved to ``path``; if anything fails the
    temporary file is removed and any previous file at ``path`` is left untouched.
    Temporary files that earlier saves to the same path left behind when their process
    was killed are removed. Replacing a file keeps its permission bits.

    Parameters
    ----------
    obj : KernelExpansion, fitted sparsekm estimator, Pipeline, Kernel, array, or nested
        dict/list/tuple of these
    path : str or os.PathLike
        Destination file; ``.skm`` is the conventional suffix.
    key : bytes or str, optional
        Secret key: the file then carries an HMAC-SHA256 tag over the names, sizes and
        contents of its members, and ``load(path, key=key)`` refuses it if any of them
        was changed.
    force : bool, default=False
        Replace ``path`` even if it is read-only (no write permission bit); its mode is
        kept.

    Raises
    ------
    TypeError
        If ``obj`` holds something sparsekm files cannot store.
    ValueError
        If an estimator in ``obj`` is not fitted, or the file would hold random
        projections that :func:`load` refuses (over the projection budget).
    IsADirectoryError
        If ``path`` is a directory.
    PermissionError
        If ``path`` is read-only and ``force`` is False.
    OSError
        If writing fails (disk full, ...): the message names ``path``.
    """
    from . import __version__

    key = _check_key(key)
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a directory; give a file name such as "
                                f"{os.path.join(path, 'model.skm')!r}.")
    try:
        old = os.lstat(path)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise _save_error(exc, path) from exc
    if old is not None and stat.S_ISREG(old.st_mode) and not old.st_mode & 0o222 and not force:
        raise PermissionError(errno.EACCES, f"cannot save to {path!r}: the file is read-only "
                              f"(mode {stat.filemode(old.st_mode)}); pass force=True (CLI "
                              "--force) to replace it")
    enc = _Encoder()
    tree = enc.encode(obj)
    meta = {"format": _FORMAT, "schema_version": SCHEMA_VERSION, "sparsekm_version": __version__,
            "object": tree, "arrays": {}}
    for name, arr in enc.arrays.items():
        fortran = not arr.flags.c_contiguous
        flat = (arr.T if fortran else arr).reshape(-1).view(np.uint8)  # the stored bytes
        meta["arrays"][name] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                                "sha256": hashlib.sha256(flat).hexdigest()}
        if fortran:
            meta["arrays"][name]["order"] = "F"
    meta_bytes = json.dumps(meta, sort_keys=True).encode("utf-8")
    if len(meta_bytes) > _MAX_META_BYTES:
        raise ValueError(f"Cannot save: the metadata would be {len(meta_bytes)} bytes (limit "
                         f"{_MAX_META_BYTES}); store large data as arrays.")
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=_TMP_SUFFIX, dir=directory)
    except OSError as exc:
        raise _save_error(exc, path) from exc
    try:
        _lock(fd)
        _remove_orphans(directory, base, tmp)
        try:
            with os.fdopen(os.dup(fd), "wb") as fh:
                with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                    digests = {_META: (len(meta_bytes), hashlib.sha256(meta_bytes).digest())}
                    zf.writestr(_META, meta_bytes)
                    for name, arr in enc.arrays.items():
                        member = f"arrays/{name}.npy"
                        with zf.open(member, "w", force_zip64=arr.nbytes > 2**30) as out:
                            w = _HashingWriter(out)
                            np.lib.format.write_array(w, arr, allow_pickle=False)
                        digests[member] = (w.size, w.sha.digest())
                    if key is not None:
                        zf.writestr(_SIGNATURE, json.dumps(
                            {"algorithm": "HMAC-SHA256", "tag": _manifest_tag(key, digests)}))
                fh.flush()
                os.fsync(fh.fileno())
                size = fh.tell()
            mode = stat.S_IMODE(old.st_mode) & 0o777 if old is not None and \
                stat.S_ISREG(old.st_mode) else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError as exc:
            raise _save_error(exc, path) from exc
        # Everything save writes, load reads: the same projection budget, on the real size.
        need = _saved_projection_bytes(tree)
        budget = ALLOCATION_FACTOR * size + PROJECTION_ALLOWANCE
        if need > budget:
            raise ValueError(f"Cannot save to {path!r}: its random projections need about "
                             f"{need} bytes to rebuild, over the {budget} bytes load() allows "
                             f"for a {size}-byte file (PROJECTION_ALLOWANCE); use a smaller "
                             "projection (fewer dimensions s).")
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _save_error(exc, path) from exc
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    finally:
        os.close(fd)
    try:  # make the rename durable; not possible everywhere (e.g. Windows)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - platform dependent
        pass


def _raise_value_error(msg):
    raise ValueError(f"Cannot save: {msg}")


def _saved_projection_bytes(tree):
    """What :meth:`_Decoder.kernel` will count for ``tree``: distinct kernel specs only."""
    seen, total, stack = set(), 0, [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("__type__") == "kernel" and "spec" in node:
                ident = json.dumps(node["spec"], sort_keys=True)
                if ident not in seen:
                    seen.add(ident)
                    total += _projection_bytes(node["spec"], _raise_value_error)
                continue
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return total


# -- decoding -----------------------------------------------------------------------
def _nominal_bytes(shape, itemsize):
    """Bytes of the array with every zero dimension counted as one."""
    n = itemsize
    for s in shape:
        n *= max(s, 1)
    return n


_EOCD = struct.Struct("<4s4H2LH")         # end of central directory record (22 bytes)
_EOCD64_LOCATOR = struct.Struct("<4sLQL")   # ZIP64 end of central directory locator (20)
_EOCD64 = struct.Struct("<4sQ2H2L4Q")       # ZIP64 end of central directory record (56)
_CENTRAL = struct.Struct("<4s6H3L5H2L")     # central directory file header (46)
_LOCAL = struct.Struct("<4s5H3L2H")         # local file header (30)


def _zip_directory(fh, file_size, path):
    """``(n_entries, cd_offset, cd_size)`` from the archive's end records, checked.

    Read the way :mod:`zipfile` finds them, but before :mod:`zipfile` parses the
    directory (it builds one object per entry, whatever their number): the declared
    entry count and then the entries actually present in the directory are counted
    here, with nothing kept per entry, and more than ``_MAX_MEMBERS`` is refused.
    """
    def fail(msg):
        raise FormatError(f"{path}: {msg}")

    if file_size < _EOCD.size:
        fail("not a sparsekm file (too short to be a ZIP archive).")
    tail_len = min(file_size, _EOCD.size + 0xFFFF)
    fh.seek(file_size - tail_len)
    tail = fh.read(tail_len)
    if tail[-_EOCD.size:-_EOCD.size + 4] == b"PK\x05\x06" and tail[-2:] == b"\0\0":
        i = len(tail) - _EOCD.size
    else:  # zipfile then takes the last signature in the final 64 KiB (an archive comment)
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or i + _EOCD.size > len(tail):
            fail("not a sparsekm file (no ZIP end-of-directory record).")
    _, disk, cd_disk, n_disk, n_entries, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, i)
    eocd_pos = file_size - tail_len + i
    end_of_cd = eocd_pos
    if eocd_pos >= _EOCD64_LOCATOR.size + _EOCD64.size:
        fh.seek(eocd_pos - _EOCD64_LOCATOR.size)
        sig, disk64, _, n_disks = _EOCD64_LOCATOR.unpack(fh.read(_EOCD64_LOCATOR.size))
        if sig == b"PK\x06\x07":  # zipfile then reads the ZIP64 record just before it
            if disk64 != 0 or n_disks > 1:
                fail("multi-disk ZIP archives are not sparsekm files.")
            fh.seek(eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size)
            rec = _EOCD64.unpack(fh.read(_EOCD64.size))
            if rec[0] == b"PK\x06\x06":
                disk, cd_disk, n_disk, n_entries, cd_size, cd_offset = rec[4:10]
                end_of_cd = eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size
    if disk != 0 or cd_disk != 0 or n_disk != n_entries:
        fail("multi-disk ZIP archives are not sparsekm files.")
    if n_entries > _MAX_MEMBERS:
        fail(f"the ZIP directory declares {n_entries} members; sparsekm files have at most "
             f"{_MAX_MEMBERS} (refused before reading the directory).")
    if cd_offset + cd_size != end_of_cd:
        fail("the ZIP central directory is not where its end record says (data prepended "
             "or the directory edited).")
    fh.seek(cd_offset)
    cd = fh.read(cd_size)
    count, pos = 0, 0
    while pos < len(cd):
        if count >= max(n_entries, 1) or pos + _CENTRAL.size > len(cd):
            fail(f"the ZIP directory holds more entries than the {n_entries} it declares.")
        h = _CENTRAL.unpack_from(cd, pos)
        if h[0] != b"PK\x01\x02":
            fail("malformed ZIP central directory.")
        pos += _CENTRAL.size + h[10] + h[11] + h[12]
        count += 1
    if count != n_entries or pos != len(cd):
        fail(f"the ZIP directory declares {n_entries} members but holds {count}.")
    return n_entries, cd_offset, cd_size


class _Archive:
    """Checked view of an opened sparsekm ZIP archive."""

    def __init__(self, zf, path, file_size, fh=None, directory=None):
        self.zf, self.path, self.file_size = zf, path, file_size
        self.budget = ALLOCATION_FACTOR * file_size + ALLOCATION_SLACK
        self.projection_budget = ALLOCATION_FACTOR * file_size + PROJECTION_ALLOWANCE
        self.projection_used = 0
        infos = zf.infolist()
        if directory is not None and len(infos) != directory[0]:
            self.fail(f"the ZIP directory declares {directory[0]} members but zipfile "
                      f"read {len(infos)}.")
        if not any(info.filename == _META for info in infos):
            self.fail(f"not a sparsekm file (no {_META}).")
        if len(infos) > _MAX_MEMBERS:
            self.fail(f"{len(infos)} archive members; sparsekm files have far fewer.")
        self.members = {}
        for info in infos:
            name = info.filename
            if name in self.members:
                self.fail(f"duplicate archive member {name!r}.")
            if name not in (_META, _SIGNATURE) and not _ARRAY_MEMBER.fullmatch(name):
                self.fail(f"unexpected archive member {name[:80]!r}.")
            if info.compress_type != zipfile.ZIP_STORED:
                self.fail(f"member {name!r} is compressed (method {info.compress_type}); "
                          "sparsekm files are always stored uncompressed.")
            if info.flag_bits & 0x1:
                self.fail(f"member {name!r} is encrypted.")
            if info.file_size != info.compress_size or info.file_size > file_size:
                self.fail(f"member {name!r} declares an impossible size ({info.file_size} bytes "
                          f"in a {file_size}-byte file).")
            self.members[name] = info
        if fh is not None and directory is not None:
            self.check_local_headers(fh, directory[1])

    def check_local_headers(self, fh, cd_offset):
        """Each member's local header must agree with its central-directory entry.

        Name, flags, method, CRC and sizes (ZIP64 sizes from the extra field) must be
        equal, and the members' data must lie, without overlap, before the directory:
        a tool reading local headers then sees exactly the bytes ``load`` checks.
        """
        end = 0
        for info in sorted(self.members.values(), key=lambda i: i.header_offset):
            name = info.filename
            if info.header_offset < end:
                self.fail(f"member {name!r} overlaps the previous member.")
            fh.seek(info.header_offset)
            raw = fh.read(_LOCAL.size)
            if len(raw) != _LOCAL.size:
                self.fail(f"member {name!r}: truncated local header.")
            sig, _, flags, method, _, _, crc, csize, usize, n_name, n_extra = _LOCAL.unpack(raw)
            local_name, extra = fh.read(n_name), fh.read(n_extra)
            if sig != b"PK\x03\x04" or len(extra) != n_extra:
                self.fail(f"member {name!r}: no local header at the offset the directory "
                          "gives.")
            if flags & 0x08:
                self.fail(f"member {name!r} uses a data descriptor; sparsekm files record "
                          "sizes in the local header.")
            if 0xFFFFFFFF in (csize, usize):
                csize, usize = self._zip64_sizes(extra, usize, csize, name)
            encoding = "utf-8" if flags & 0x800 else "cp437"
            try:
                local_name = local_name.decode(encoding)
            except UnicodeDecodeError:
                local_name = None
            if local_name != info.orig_filename or flags != info.flag_bits \
                    or method != info.compress_type or crc != info.CRC \
                    or csize != info.compress_size or usize != info.file_size:
                self.fail(f"member {name!r}: the local header (name {str(local_name)[:40]!r}, "
                          f"{usize} bytes, method {method}) disagrees with the central "
                          f"directory ({info.file_size} bytes, method {info.compress_type}); "
                          "the file was tampered with.")
            end = info.header_offset + _LOCAL.size + n_name + n_extra + csize
            if end > cd_offset:
                self.fail(f"member {name!r} runs into the ZIP central directory.")

    def _zip64_sizes(self, extra, usize, csize, name):
        pos = 0
        while pos + 4 <= len(extra):
            tag, n = struct.unpack_from("<2H", extra, pos)
            if tag == 1:
                fields = list(struct.unpack_from(f"<{n // 8}Q", extra, pos + 4))
                if usize == 0xFFFFFFFF and fields:
                    usize = fields.pop(0)
                if csize == 0xFFFFFFFF and fields:
                    csize = fields.pop(0)
                return csize, usize
            pos += 4 + n
        self.fail(f"member {name!r}: local header lacks its ZIP64 sizes.")

    def fail(self, msg):
        raise FormatError(f"{self.path}: {msg}")

    def stream(self, name):
        """Yield the member's bytes in chunks, never more than its stored size."""
        info = self.members[name]
        left = info.file_size
        with self.zf.open(info) as fh:
            while left > 0:
                chunk = fh.read(min(_CHUNK, left))
                if not chunk:
                    self.fail(f"member {name!r} is truncated.")
                left -= len(chunk)
                yield chunk

    def verify(self, key):
        if _SIGNATURE not in self.members:
            self.fail("no authentication tag: the file was saved without a key, but load() "
                      "was given one. Refusing to trust it.")
        raw = self.read_small(_SIGNATURE, 4096)
        try:
            sig = json.loads(raw)
            tag = sig["tag"]
            ok = sig["algorithm"] == "HMAC-SHA256" and isinstance(tag, str)
        except Exception:
            ok = False
        if not ok:
            self.fail("malformed authentication tag.")
        digests = {}
        for name in self.members:
            if name == _SIGNATURE:
                continue
            sha, size = hashlib.sha256(), 0
            for chunk in self.stream(name):
                sha.update(chunk)
                size += len(chunk)
            digests[name] = (size, sha.digest())
        if not hmac.compare_digest(_manifest_tag(key, digests).encode(), tag.encode("ascii", "replace")):
            self.fail("authentication failed: the HMAC-SHA256 tag does not match (wrong key, "
                      "or the file was modified after it was saved).")

    def read_small(self, name, cap):
        info = self.members[name]
        if info.file_size > cap:
            self.fail(f"member {name!r} is too large ({info.file_size} bytes; limit {cap}).")
        with self.zf.open(info) as fh:
            data = fh.read(cap + 1)  # a cap on the bytes actually read, whatever is declared
        if len(data) > cap:
            self.fail(f"member {name!r} holds more than {cap} bytes.")
        return data

    def check_specs(self, specs):
        if not isinstance(specs, dict):
            self.fail("malformed array table.")
        declared = {f"arrays/{name}.npy" for name in specs}
        present = {n for n in self.members if n not in (_META, _SIGNATURE)}
        if present - declared:
            self.fail(f"undeclared array member(s) {sorted(present - declared)[:5]}.")
        checked = {}
        for name, s in specs.items():
            if not isinstance(name, str) or not _ARRAY_MEMBER.fullmatch(f"arrays/{name}.npy"):
                self.fail(f"invalid array name {str(name)[:40]!r}.")
            member = f"arrays/{name}.npy"
            if member not in self.members:
                self.fail(f"array {name!r} is missing from the archive.")
            if not isinstance(s, dict) or not {"dtype", "shape", "sha256"} <= set(s) \
                    or not set(s) <= {"dtype", "shape", "sha256", "order"} \
                    or s.get("order", "C") not in ("C", "F"):
                self.fail(f"malformed declaration of array {name!r}.")
            try:
                dtype = np.dtype(s["dtype"]) if isinstance(s["dtype"], str) else None
            except Exception:
                dtype = None
            if dtype is None or dtype.kind not in _DTYPE_KINDS or dtype.fields is not None \
                    or dtype.itemsize == 0 or dtype.str != s["dtype"]:
                self.fail(f"array {name!r} declares an unsupported dtype {str(s['dtype'])[:40]!r}.")
            shape = s["shape"]
            if not isinstance(shape, list) or len(shape) > _MAX_NDIM or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                self.fail(f"array {name!r} declares an invalid shape {str(shape)[:80]}.")
            shape = tuple(shape)
            nominal = _nominal_bytes(shape, dtype.itemsize)
            if nominal > self.budget:
                self.fail(f"array {name!r} declares shape {shape} ({nominal} bytes counting zero "
                          f"dimensions as one), over the allocation budget of {self.budget} bytes "
                          f"for a {self.file_size}-byte file.")
            n_bytes = math.prod(shape) * dtype.itemsize
            if n_bytes > self.members[member].file_size:
                self.fail(f"array {name!r} claims {n_bytes} bytes but its archive member holds "
                          f"only {self.members[member].file_size}; the file is truncated or "
                          "tampered with.")
            if not isinstance(s["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", s["sha256"]):
                self.fail(f"array {name!r} has a malformed digest.")
            checked[name] = (dtype, shape, n_bytes, s["sha256"], s.get("order") == "F")
        return checked

    def read_array(self, name, dtype, shape, n_bytes, digest, fortran_order):
        member = f"arrays/{name}.npy"
        info = self.members[member]
        try:
            with self.zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    self.fail(f"unsupported .npy version {version} for array {name!r}.")
                if tuple(hshape) != shape or np.dtype(hdtype) != dtype \
                        or bool(fortran) != fortran_order:
                    self.fail(f"array {name!r} does not match its declared dtype/shape.")
                header = fh.tell()
                if header + n_bytes != info.file_size:
                    self.fail(f"array {name!r} has {info.file_size - header} data bytes, "
                              f"expected {n_bytes}.")
                buf = bytearray(n_bytes)
                view, got = memoryview(buf), 0
                while got < n_bytes:
                    k = fh.readinto(view[got:got + _CHUNK])
                    if not k:
                        self.fail(f"array {name!r} is truncated.")
                    got += k
                if fh.read(1):
                    self.fail(f"array {name!r} has trailing bytes.")
        except FormatError:
            raise
        except Exception as exc:
            self.fail(f"could not read array {name!r}: {exc}")
        if hashlib.sha256(buf).hexdigest() != digest:
            self.fail(f"checksum mismatch for array {name!r}; the file is corrupted.")
        if fortran_order:
            return np.frombuffer(buf, dtype=dtype).reshape(shape[::-1]).T
        return np.frombuffer(buf, dtype=dtype).reshape(shape)


# Parameters that would let a file reach the file system (joblib caches pickle into a
# ``memory`` folder and unpickle from it on a cache hit): refused unless None.
_NONE_ONLY_PARAMS = {"memory": "a cache folder is written and read back with pickle"}


def _params_problem(cls, params):
    """Why :func:`load` refuses these constructor parameters of ``cls`` (None: it does not).

    Parameters that reach the file system or run code (``memory``) must be None;
    numbers must be finite and integers at most 2**62; then scikit-learn's
    ``_parameter_constraints`` of the class (sparsekm estimators declare them too).
    :func:`save` applies the same check, so that it never writes a file that
    :func:`load` refuses.
    """
    from sklearn.utils._param_validation import (
        InvalidParameterError,
        validate_parameter_constraints,
    )

    from .expansion import KernelExpansion
    from .kernels import Kernel

    name = cls.__name__
    for k, v in params.items():
        if k in _NONE_ONLY_PARAMS and v is not None:
            return (f"{name}({k}={str(v)[:60]!r}) refused: {k} must be None in a "
                    f"sparsekm file ({_NONE_ONLY_PARAMS[k]}).")
        stack = [v]
        while stack:
            x = stack.pop()
            if isinstance(x, (list, tuple)):
                stack.extend(x)
            elif isinstance(x, dict):
                stack.extend(x.values())
            elif isinstance(x, bool) or x is None or isinstance(x, str):
                continue
            elif isinstance(x, int):
                if abs(x) > 2**62:
                    return f"{name}({k}=...) holds the integer {x}, implausibly large."
            elif isinstance(x, float):
                if not math.isfinite(x):
                    return f"{name}({k}={x!r}) refused: parameters must be finite."
            elif isinstance(x, np.ndarray):
                if x.dtype.kind in "fc" and not np.all(np.isfinite(x)):
                    return f"{name}({k}=...) holds non-finite values."
            elif callable(x) and not isinstance(x, (Kernel, KernelExpansion)):
                return f"{name}({k}=...) is callable; sparsekm files hold no code."
    constraints = getattr(cls, "_parameter_constraints", None)
    if isinstance(constraints, dict):
        try:
            validate_parameter_constraints(constraints, params, caller_name=name)
        except InvalidParameterError as exc:
            return f"invalid parameter: {exc}"
    return None

_JSON_SCALARS = frozenset((type(None), bool, int, float, str))  # what json.loads returns
_EXPANSION_KEYS = frozenset(("__type__", "vectors", "coef", "kernel", "intercept"))
_ESTIMATOR_KEYS = frozenset(("__type__", "class", "params", "state"))


class _Decoder:
    def __init__(self, archive, specs):
        from sklearn.utils.validation import check_is_fitted

        from .expansion import KernelExpansion
        from .kernels import kernel_from_dict

        self.archive, self.specs, self.path = archive, specs, archive.path
        self.KernelExpansion, self.kernel_from_dict = KernelExpansion, kernel_from_dict
        self.check_is_fitted = check_is_fitted
        self.cache: dict[str, np.ndarray] = {}
        self.kernels: dict[str, object] = {}

    def fail(self, msg):
        raise FormatError(f"{self.path}: {msg}")

    def array(self, node):
        if set(node) != {"__type__", "ref"}:
            self.fail("malformed array reference.")
        ref = node["ref"]
        if not isinstance(ref, str) or ref not in self.specs:
            self.fail(f"reference to undeclared array {str(ref)[:40]!r}.")
        if ref not in self.cache:
            self.cache[ref] = self.archive.read_array(ref, *self.specs[ref])
        return self.cache[ref]

    def decode(self, node):
        # JSON scalars are returned as they are, without a call per node, and the common
        # containers are tested first: decoding costs about as much as json.loads itself.
        t = type(node)
        if t in _JSON_SCALARS:
            return node
        decode = self.decode
        if t is list:
            return [v if type(v) in _JSON_SCALARS else decode(v) for v in node]
        if t is not dict:
            self.fail(f"malformed object tree near {str(node)[:80]!r}.")
        kind = node.get("__type__")
        if kind == "dict" or kind == "tuple":
            items = node.get("items")
            if len(node) != 2 or items is None:
                self.fail(f"malformed {kind} node.")
            if kind == "tuple":
                if type(items) is not list:
                    self.fail("malformed tuple node.")
                return tuple([v if type(v) in _JSON_SCALARS else decode(v) for v in items])
            if type(items) is not dict:
                self.fail("malformed dict node.")
            return {k: v if type(v) in _JSON_SCALARS else decode(v) for k, v in items.items()}
        if kind is None:
            self.fail(f"malformed object tree near {str(node)[:80]!r}.")
        if kind == "ndarray":
            return self.array(node)
        if kind == "kernel":
            return self.kernel(node)
        if kind == "expansion":
            return self.expansion(node)
        if kind == "estimator":
            return self.estimator(node)
        self.fail(f"unknown object type {str(kind)[:40]!r}.")

    def kernel(self, node):
        if set(node) != {"__type__", "spec"}:
            self.fail("malformed kernel node.")
        spec = node["spec"]
        try:
            ident = json.dumps(spec, sort_keys=True)
        except (TypeError, ValueError):
            self.fail("malformed kernel node.")
        if ident in self.kernels:  # the same kernel (kernel_ and expansion_.kernel): built once
            return self.kernels[ident]
        need = _projection_bytes(spec, self.fail)
        if need:
            self.archive.projection_used += need
            if self.archive.projection_used > self.archive.projection_budget:
                self.fail(f"kernel declares random projection(s) of {self.archive.projection_used}"
                          f" bytes (estimated peak to rebuild), over the projection budget of "
                          f"{self.archive.projection_budget} bytes for a {self.archive.file_size}"
                          "-byte file.")
        try:
            kernel = self.kernel_from_dict(spec)
        except (ValueError, TypeError, KeyError) as exc:
            self.fail(f"invalid kernel: {exc}")
        self.kernels[ident] = kernel
        return kernel

    def expansion(self, node):
        if set(node) != _EXPANSION_KEYS:
            self.fail("malformed expansion node.")
        vectors, coef = self.decode(node["vectors"]), self.decode(node["coef"])
        kernel, intercept = self.decode(node["kernel"]), self.decode(node["intercept"])
        for name, a, ndims in (("vectors", vectors, (2,)), ("coef", coef, (1, 2))):
            if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or a.ndim not in ndims:
                self.fail(f"expansion {name} must be a floating {ndims}-D array.")
        if coef.shape[0] != vectors.shape[0] or coef.dtype != vectors.dtype:
            self.fail(f"expansion coef {coef.shape} {coef.dtype} does not match vectors "
                      f"{vectors.shape} {vectors.dtype}.")
        if coef.ndim == 1:
            ok = isinstance(intercept, float)
        else:
            ok = isinstance(intercept, np.ndarray) and intercept.shape == (coef.shape[1],) \
                and intercept.dtype == np.float64
        if not ok:
            self.fail(f"expansion intercept does not match coef of shape {coef.shape}.")
        try:
            return self.KernelExpansion(vectors, coef, kernel, intercept)
        except (ValueError, TypeError) as exc:
            self.fail(f"invalid expansion: {exc}")

    def estimator(self, node):
        if set(node) != _ESTIMATOR_KEYS:
            self.fail("malformed estimator node.")
        name = node["class"]
        cls = _CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            self.fail(f"unknown estimator class {str(name)[:80]!r}; only registered classes load.")
        attrs = _declaration(cls)
        raw_params, raw_state = node["params"], node["state"]
        if not (isinstance(raw_params, dict) and raw_params.get("__type__") == "dict"
                and isinstance(raw_params.get("items"), dict)) or not isinstance(raw_state, dict):
            self.fail(f"malformed {cls.__name__} node.")
        allowed = set(cls._get_param_names())
        bad = sorted(set(raw_params["items"]) - allowed)
        if bad:
            self.fail(f"{cls.__name__} has no parameter(s) {bad[:5]}.")
        bad = sorted(set(raw_state) - set(attrs))
        if bad:
            self.fail(f"{cls.__name__} does not declare fitted attribute(s) {bad[:5]}; refusing "
                      "to set them (only declared state is restored).")
        missing = sorted(k for k, s in attrs.items() if not s.optional and k not in raw_state)
        if missing:
            self.fail(f"{cls.__name__} is missing fitted attribute(s) {missing[:5]}; is this "
                      "file really a fitted "
                      f"{cls.__name__}?")
        params = self.params(cls, raw_params["items"])
        binds = {}
        state = {k: attrs[k].check(self.decode(v), _Ctx(f"{self.path}: {cls.__name__}.{k}", binds))
                 for k, v in raw_state.items()}
        try:
            obj = cls(**params)
        except Exception as exc:
            self.fail(f"cannot construct {cls.__name__}: {exc}")
        for k, v in state.items():
            object.__setattr__(obj, k, v)
        self.validate(obj, cls)
        return obj

    def template(self, node):
        """An unfitted registered estimator (a meta-estimator's ``estimator`` parameter)."""
        if node is None:
            return None
        if not isinstance(node, dict) or set(node) != {"__type__", "class", "params"} \
                or node["__type__"] != "template":
            self.fail("malformed estimator template.")
        cls = _CLASSES.get(node["class"]) if isinstance(node["class"], str) else None
        raw = node["params"]
        if cls is None:
            self.fail(f"unknown estimator class {str(node['class'])[:80]!r}; only registered "
                      "classes load.")
        if not (isinstance(raw, dict) and raw.get("__type__") == "dict"
                and isinstance(raw.get("items"), dict)):
            self.fail(f"malformed {cls.__name__} template.")
        bad = sorted(set(raw["items"]) - set(cls._get_param_names()))
        if bad:
            self.fail(f"{cls.__name__} has no parameter(s) {bad[:5]}.")
        params = self.params(cls, raw["items"])
        try:
            return cls(**params)
        except Exception as exc:
            self.fail(f"cannot construct {cls.__name__}: {exc}")

    def params(self, cls, items):
        """Decoded and checked constructor parameters (templates decoded as templates)."""
        templates = _TEMPLATES.get(cls, ())
        params = self.decode({"__type__": "dict", "items": {
            k: v for k, v in items.items() if k not in templates}})
        for k in templates:
            if k in items:
                params[k] = self.template(items[k])
        self.check_params(cls, params)
        return params

    def check_params(self, cls, params):
        """Constructor parameters: safe values, then the class's own constraints
        (:func:`_params_problem`)."""
        problem = _params_problem(cls, params)
        if problem is not None:
            self.fail(problem)

    def validate(self, obj, cls):
        """Cross-attribute checks: a loaded estimator must look like a fitted one."""
        where = f"{cls.__name__}"
        try:
            self.check_is_fitted(obj)
        except Exception as exc:
            self.fail(f"the loaded {where} is not fitted: {exc}")
        d = vars(obj)
        config = d.get(_OUTPUT_CONFIG)
        if config is not None and not set(config.values()) <= set(_OUTPUT_CONFIG_VALUES):
            self.fail(f"{where}.{_OUTPUT_CONFIG} must map to one of {_OUTPUT_CONFIG_VALUES}.")
        check = _STATE_CHECKS.get(cls)
        if check is not None:
            try:
                check(obj)
            except (ValueError, TypeError, AttributeError) as exc:
                self.fail(f"the loaded {where} has inconsistent fitted state: {exc}")
        exp = d.get("expansion_")
        if exp is not None:
            if "kernel_" in d and d["kernel_"] != exp.kernel:
                self.fail(f"{where}.kernel_ differs from expansion_.kernel.")
            if "n_features_in_" in d and d["n_features_in_"] != exp.n_features:
                self.fail(f"{where}.n_features_in_ = {d['n_features_in_']} but expansion_ has "
                          f"{exp.n_features} features.")
            if "coef_" in d and not np.array_equal(d["coef_"].astype(exp.coef.dtype), exp.coef):
                self.fail(f"{where}.coef_ differs from expansion_.coef.")
            if "intercept_" in d and not np.array_equal(d["intercept_"], exp.intercept):
                self.fail(f"{where}.intercept_ differs from expansion_.intercept.")
            if "classes_" in d:
                n = len(d["classes_"])
                # one output per class (one-vs-rest), one per pair of classes (one-vs-one)
                want = 1 if n == 2 else (n * (n - 1) // 2 if d.get("scheme_") == "ovo" else n)
                if n < 2 or exp.n_outputs != want:
                    self.fail(f"{where} has {n} classes but expansion_ has {exp.n_outputs} "
                              f"output(s) (expected {want}).")
        if "classes_" in d and np.unique(d["classes_"]).size != len(d["classes_"]):
            self.fail(f"{where}.classes_ has repeated labels.")
        if _NAMES.get(cls) == "sklearn.pipeline.Pipeline":
            self.validate_pipeline(obj)

    def validate_pipeline(self, pipe):
        steps = pipe.steps
        if not isinstance(steps, list) or not steps:
            self.fail("Pipeline.steps must be a non-empty list.")
        n_out = None
        for i, step in enumerate(steps):
            if not (isinstance(step, tuple) and len(step) == 2 and isinstance(step[0], str)):
                self.fail(f"Pipeline step {i} is not a (name, estimator) pair.")
            est = step[1]
            if est is None or est == "passthrough":
                continue
            if isinstance(est, str) or type(est) not in _NAMES:
                self.fail(f"Pipeline step {step[0]!r} is not a registered estimator.")
            n_in = getattr(est, "n_features_in_", None)
            if n_out is not None and n_in is not None and n_in != n_out:
                self.fail(f"Pipeline step {step[0]!r} expects {n_in} features but the previous "
                          f"step produces {n_out}.")
            n_out = _n_features_out(est)


def _n_features_out(est):
    if hasattr(est, "components_"):
        return est.components_.shape[0]
    if _NAMES.get(type(est), "").startswith("sklearn.preprocessing."):
        return est.n_features_in_
    return None


def _int_field(value, name, fail):
    """A size written in a file: a JSON integer (not bool, float or string) in [1, 2**40]."""
    if type(value) is not int or not 1 <= value <= 2**40:
        fail(f"random projection {name} must be an integer in [1, 2**40]; found "
             f"{str(value)[:40]!r} ({type(value).__name__}).")
    return value


def _projection_bytes(node, fail, depth=0):
    """Estimated peak bytes to rebuild the random projection(s) a kernel spec describes.

    Every dict carrying ``signs`` (a :class:`~sparsekm.kernels.RandomProjection`) must
    give its sizes ``d`` and ``s`` as validated integers, and its packed signs must
    have exactly ``ceil(d s / 8)`` bytes: the size check is computed from those
    integers, never from what a later ``int()`` would make of a float or a string.
    """
    total = 0
    if depth > 64:
        fail("kernel description nested too deeply.")
    if isinstance(node, dict):
        if node.get("name") == "ProjectedKernel":
            params = node.get("params")
            projection = params.get("projection") if isinstance(params, dict) else None
            if not isinstance(projection, dict) or "signs" not in projection:
                fail("ProjectedKernel without a stored random projection.")
        if "signs" in node:
            d = _int_field(node.get("d"), "d", fail)
            s = _int_field(node.get("s"), "s", fail)
            signs = node.get("signs")
            n_packed = (d * s + 7) // 8
            if not isinstance(signs, str) or len(signs) != 4 * ((n_packed + 2) // 3):
                fail(f"random projection of {d} x {s} needs {n_packed} packed sign bytes "
                     f"({4 * ((n_packed + 2) // 3)} base64 characters); the file gives "
                     f"{len(signs) if isinstance(signs, str) else type(signs).__name__}.")
            for name in ("eps", "beta"):
                v = node.get(name)
                if v is not None and (type(v) not in (int, float) or not math.isfinite(v)):
                    fail(f"random projection {name} must be a finite number; found "
                         f"{str(v)[:40]!r}.")
            n_points = node.get("n_points")
            if n_points is not None:
                _int_field(n_points, "n_points", fail)
            total += _PROJECTION_PEAK_PER_SIGN * d * s
        for v in node.values():
            total += _projection_bytes(v, fail, depth + 1)
    elif isinstance(node, list):
        for v in node:
            total += _projection_bytes(v, fail, depth + 1)
    return total


def _open_regular(path):
    """Open ``path`` for reading only if it is a regular file (never blocks on a FIFO)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"No such file: {path!r}.") from None
    if stat.S_ISDIR(st.st_mode):
        raise FormatError(f"{path} is a directory, not a sparsekm file.")
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path} is not a regular file (a FIFO, socket or device); "
                          "sparsekm files are regular files.")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)  # the path may have been swapped between stat and open
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{path} is not a regular file.")
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def load(path, *, key=None, require_key=False):
    """Load an object written by :func:`save`.

    Parameters
    ----------
    path : str or os.PathLike
    key : bytes or str, optional
        The key the file was saved with: the file's HMAC-SHA256 tag is verified over
        the names, sizes and contents of all its members before anything is decoded,
        and a file without a tag or with a wrong one is refused.
    require_key : bool, default=False
        Refuse to load anything that is not verified with ``key``: without ``key``, a
        signed file and an unsigned file are both refused. When False, a signed file
        loaded without ``key`` loads with an :class:`UnverifiedSignatureWarning`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    FormatError
        (a ``ValueError``) if the file is not a valid sparsekm file: not a regular file
        or not a ZIP archive, too many members, local headers that disagree with the
        ZIP directory, compressed or oversized members, truncated, wrong schema
        version, duplicate JSON keys, checksum mismatch, arrays that do not match
        their declaration, shapes over the allocation budget, unknown classes,
        constructor parameters outside the class's constraints, undeclared or
        inconsistent fitted attributes, or (with ``key``) a missing or wrong
        authentication tag; with ``require_key=True`` and no ``key``, any file.

    Warns
    -----
    UnverifiedSignatureWarning
        When the file carries an authentication tag but no ``key`` was given.
    """
    key = _check_key(key)
    path = os.fspath(path)
    fh, file_size = _open_regular(path)
    with fh:
        directory = _zip_directory(fh, file_size, path)
        fh.seek(0)
        try:
            zf = zipfile.ZipFile(fh, "r")
        except Exception as exc:  # BadZipFile, EOFError, NotImplementedError (bad version), ...
            raise FormatError(f"{path} is not a sparsekm file (not a valid archive: {exc}).") \
                from None
        # The cyclic garbage collector would rescan the growing tree many times while
        # json.loads and the decoder build it (JSON trees hold no cycles): off meanwhile.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        with zf:
            try:
                return _load_archive(zf, path, file_size, key, require_key, fh, directory)
            except FormatError:
                raise
            except RecursionError:
                raise FormatError(f"{path}: object tree nested too deeply.") from None
            except Exception as exc:  # any other failure while rebuilding means bad content
                raise FormatError(f"{path}: invalid content ({type(exc).__name__}: {exc}).") \
                    from None
            finally:
                if gc_was_enabled:
                    gc.enable()


def _no_duplicate_keys(pairs):
    """``object_pairs_hook`` for :func:`json.loads`: a repeated key is a format error."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise FormatError(f"duplicate JSON key {k[:40]!r} (a repeated key would "
                                  "silently override the first).")
            seen.add(k)
    return d


_META_KEYS = frozenset(("format", "schema_version", "object", "arrays"))
_META_OPTIONAL = frozenset(("sparsekm_version",))


def _parse_meta(archive, raw):
    cost = _META_COST_PER_TOKEN * sum(raw.count(c) for c in (b"[", b"{", b",", b":")) \
        + _META_COST_PER_BYTE * len(raw)
    limit = ALLOCATION_FACTOR * archive.file_size + _META_ALLOWANCE
    if cost > limit:
        archive.fail(f"{_META} would cost about {cost} bytes to parse (its brackets, commas "
                     f"and colons), over the limit of {limit} bytes for a {archive.file_size}-"
                     "byte file; files written by save keep their bulk in arrays.")
    try:
        meta = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except RecursionError:
        raise
    except FormatError as exc:
        archive.fail(f"{_META}: {exc}")
    except Exception as exc:
        archive.fail(f"unreadable metadata ({exc}).")
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        archive.fail("not a sparsekm file (format tag missing).")
    version = meta.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        archive.fail(f"schema version {version!r}; this sparsekm reads version {SCHEMA_VERSION} "
                     "(an integer).")
    missing = sorted(_META_KEYS - set(meta))
    if missing:
        archive.fail(f"{_META} lacks {missing} (every sparsekm file has them).")
    unknown = sorted(set(meta) - _META_KEYS - _META_OPTIONAL)
    if unknown:
        archive.fail(f"{_META} has unknown key(s) {[str(k)[:40] for k in unknown[:5]]}.")
    return meta


def _load_archive(zf, path, file_size, key, require_key, fh=None, directory=None):
    archive = _Archive(zf, path, file_size, fh, directory)
    signed = _SIGNATURE in archive.members
    if key is not None:
        archive.verify(key)
    elif require_key:
        archive.fail("this file is signed; give its key (key=..., CLI --key-file) to verify "
                     "it: require_key=True refuses unverified loads." if signed else
                     "this file is not signed (no authentication tag) and require_key=True "
                     "refuses unverified loads.")
    elif signed:
        warnings.warn(f"{path} carries an HMAC-SHA256 tag that was not checked because no key "
                      "was given; pass key= (CLI --key-file) to verify it, or "
                      "require_key=True (CLI --require-key) to refuse unverified files.",
                      UnverifiedSignatureWarning, stacklevel=4)
    raw = archive.read_small(_META, min(_MAX_META_BYTES, file_size))
    meta = _parse_meta(archive, raw)
    specs = archive.check_specs(meta["arrays"])
    _import_registries()
    return _Decoder(archive, specs).decode(meta["object"])
