"""Input and parameter validation with messages that name the offending argument.

Messages follow scikit-learn's template so users see the same wording they know::

    The 'gamma' parameter of RBF must be a float > 0. Got -1 instead.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_array", "check_scalar", "check_same_features", "float_dtype"]


def float_dtype(*arrays):
    """Floating dtype for a computation: float32 if every input is float32, else float64."""
    if arrays and all(getattr(a, "dtype", None) == np.float32 for a in arrays):
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def check_array(X, name="X", *, ndim=2, dtype=None, allow_empty=False, copy=False):
    """Convert ``X`` to a finite floating ndarray of the given dimension.

    Parameters
    ----------
    X : array-like
        Input to check.
    name : str
        Argument name used in error messages.
    ndim : int or None
        Required number of dimensions (1 or 2); ``None`` accepts any.
    dtype : dtype or None
        Target dtype; ``None`` keeps float32/float64 as given and turns anything
        else (ints, bools) into float64.
    allow_empty : bool
        Whether zero rows are accepted.
    copy : bool
        Force a copy.

    Raises
    ------
    TypeError
        If ``X`` is not numeric (strings, objects, complex, sparse matrices).
    ValueError
        If ``X`` has the wrong number of dimensions, is empty, or contains NaN/inf.
    """
    if hasattr(X, "toarray") and hasattr(X, "nnz"):
        raise TypeError(f"{name} is a sparse matrix; sparsekm needs a dense array for {name}.")
    if type(X).__module__.startswith("dask.") and hasattr(X, "dask"):
        # Never pull a whole distributed array to the client behind the user's back.
        raise TypeError(
            f"{name} is a {type(X).__module__}.{type(X).__name__} but this operation needs "
            f"{name} in memory: call {name}.compute() if it fits, or use a method with a "
            "distributed path (predict/transform of dask arrays, the fit of GreedyBasis, "
            "ApproxSVC, ApproxKFD, reduce_expansion; see sparsekm.approx.distributed).")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} could not be converted to an array: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got an array of dtype {arr.dtype}.")
    if dtype is None:
        dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    arr = np.array(arr, dtype=dtype, copy=True) if copy else np.asarray(arr, dtype=dtype)
    if ndim is not None and arr.ndim != ndim:
        shape_word = {1: "a 1-D array", 2: "a 2-D array (n_samples, n_features)"}.get(ndim, f"{ndim}-D")
        hint = " Reshape with X.reshape(1, -1) for a single sample." if ndim == 2 and arr.ndim == 1 else ""
        raise ValueError(f"{name} must be {shape_word}; got shape {arr.shape}.{hint}")
    if not allow_empty and arr.size == 0 and (arr.ndim == 0 or arr.shape[0] == 0):
        raise ValueError(f"{name} is empty (shape {arr.shape}); at least one sample is required.")
    if ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {arr.shape}); at least one is required.")
    if not np.isfinite(arr).all():
        what = "NaN" if np.isnan(arr).any() else "infinity"
        raise ValueError(f"{name} contains {what}; sparsekm needs finite values in {name}.")
    return arr


def check_same_features(X, n_features, name="X", owner=None):
    """Raise the scikit-learn style feature-count error when the widths differ."""
    if X.shape[1] != n_features:
        who = f" {owner} is" if owner else " it is"
        raise ValueError(
            f"{name} has {X.shape[1]} features, but{who} expecting {n_features} features as input."
        )


def check_scalar(value, name, owner, *, kind="float", lower=None, upper=None,
                 lower_inclusive=True, upper_inclusive=True, allow_none=False):
    """Validate a scalar hyper-parameter; return it converted to ``float`` or ``int``.

    ``kind`` is ``"float"`` (any real number) or ``"int"`` (integers only).
    """
    if value is None and allow_none:
        return None
    if kind == "int":
        ok_type = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    else:
        ok_type = isinstance(value, numbers.Real) and not isinstance(value, bool)
    ok = ok_type and bool(np.isfinite(value))
    if ok and lower is not None:
        ok = value >= lower if lower_inclusive else value > lower
    if ok and upper is not None:
        ok = value <= upper if upper_inclusive else value < upper
    if not ok:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be "
            f"{_describe(kind, lower, upper, lower_inclusive, upper_inclusive, allow_none)}. "
            f"Got {value!r} instead."
        )
    return int(value) if kind == "int" else float(value)


def _describe(kind, lower, upper, lower_inc, upper_inc, allow_none):
    noun = "an int" if kind == "int" else "a float"
    if lower is not None and upper is not None:
        lo = "[" if lower_inc else "("
        hi = "]" if upper_inc else ")"
        text = f"{noun} in the range {lo}{lower}, {upper}{hi}"
    elif lower is not None:
        text = f"{noun} {'>=' if lower_inc else '>'} {lower}"
    elif upper is not None:
        text = f"{noun} {'<=' if upper_inc else '<'} {upper}"
    else:
        text = f"{noun} (finite)"
    return text + (" or None" if allow_none else "")
