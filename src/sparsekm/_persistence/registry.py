"""The registry: which classes load, their declarations, parameter and state checks."""

from __future__ import annotations

import math

import numpy as np

from .spec import _NAMES, _Attr, spec

_CLASSES: dict[str, type] = {}   # stored class name -> class


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
    # scikit-learn's type_of_target: at most 2 labels are "binary", more "multiclass"
    n = est.classes_.size
    if (est.y_type_ == "binary" and n > 2) or (est.y_type_ == "multiclass" and n <= 2):
        raise ValueError(f"y_type_ {est.y_type_!r} contradicts {n} classes_ (binary: at most "
                         "2 classes, multiclass: more).")


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

    from ..expansion import KernelExpansion
    from ..kernels import Kernel

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
