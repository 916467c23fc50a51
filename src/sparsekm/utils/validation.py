"""Input and parameter validation with messages that name the offending argument.

Messages follow scikit-learn's template so users see the same wording they know::

    The 'gamma' parameter of RBF must be a float > 0. Got -1 instead.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_array", "check_finite_kernel_input", "check_scalar", "check_same_features",
           "float_dtype", "validate_X"]


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
        raise _dask_in_memory_error(X, name)
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


def check_finite_kernel_input(X, name="X", owner=None):
    """Refuse finite inputs so large that kernel computations overflow.

    Kernels work with squared norms ``||x||^2``, inner products and squared distances
    of the rows of ``X``; when ``||x||^2`` overflows ``X``'s dtype (``|x| > ~1e154`` in
    float64, ``~1e19`` in float32) these intermediate values are ``inf`` and the kernel
    values ``nan``, whatever the kernel's parameters. This says so instead of letting a
    later step blame a parameter (e.g. ``gamma="scale"`` becoming 0).
    """
    if X.size == 0 or X.dtype.kind != "f":
        return X
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("ij,ij->i", X, X) if X.ndim == 2 else X * X
    if not np.isfinite(sq).all():
        who = f" for {owner}" if owner else ""
        raise ValueError(
            f"{name} is finite but too large{who}: its squared norms ||x||^2 overflow "
            f"{X.dtype.name} (max |{name}| = {float(np.max(np.abs(X))):.3g}), so the kernel "
            "computation would produce non-finite intermediate values (overflow in the "
            f"squared distances / inner products). Rescale {name}, e.g. divide it by "
            f"max |{name}| (sklearn's StandardScaler itself overflows on such values)."
        )
    return X


def _explain_non_finite(X, owner, exc):
    """Raise a clearer error when whole columns of ``X`` are NaN or inf.

    A column that is non-finite in every row is rarely missing data: it is what a
    preceding step gives when it overflowed, e.g. ``StandardScaler`` on values above
    ~1e154, whose squares exceed float64's 1.8e308 and make ``var_``, ``scale_`` and
    the output NaN. Saying "Input X contains NaN" then blames the user's data.
    """
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return
    if A.ndim != 2 or A.shape[0] < 2:
        return
    bad = np.flatnonzero(~np.isfinite(A).any(axis=0))
    if bad.size == 0:
        return
    cols = ", ".join(str(int(c)) for c in bad[:8]) + (", ..." if bad.size > 8 else "")
    first = str(exc).split("\n")[0]
    raise ValueError(
        f"{first} {owner} got X whose column(s) [{cols}] are NaN or inf in every one of "
        f"its {A.shape[0]} rows: usually the mark of an overflow in a preceding step, not of "
        "missing values: e.g. StandardScaler in a Pipeline overflows on inputs larger than "
        "about 1e154 in magnitude (their squares exceed float64's 1.8e308) and outputs NaN. "
        "Check the raw input for huge values and rescale it (e.g. divide by its largest "
        "magnitude) before the scaler."
    ) from exc


def _dask_in_memory_error(X, name="X"):
    # Never pull a whole distributed array to the client behind the user's back.
    return TypeError(f"{name} is a {type(X).__module__}.{type(X).__name__} but this operation needs "
            f"{name} in memory: call {name}.compute() if it fits, or use a method with a "
            "distributed path (predict/transform of dask arrays, the fit of GreedyBasis, "
            "ApproxSVC, ApproxKFD, reduce_expansion; see sparsekm.approx.dask_fits).")


def check_labels(y, n_rows=None, name="y", rows_of="X"):
    """Class labels as an array: 1-D with one label per row of ``rows_of`` (when
    ``n_rows`` is given), finite when numeric.

    Checked before scikit-learn's ``type_of_target``, which casts float labels to int to
    see whether they are integral (a numpy ``RuntimeWarning`` on NaN or infinity) before
    its own error: the one check of every estimator, solver and ``compress`` that takes
    class labels.

    Raises
    ------
    ValueError
        ``"<name> must be 1-D with one label per row of <rows_of> (<n_rows>)..."`` or
        ``"<name> contains NaN; class labels must be finite."`` (or ``infinity``).
    """
    y = np.asarray(y)
    if n_rows is not None and (y.ndim != 1 or y.shape[0] != n_rows):
        raise ValueError(f"{name} must be 1-D with one label per row of {rows_of} "
                         f"({n_rows}); got shape {y.shape}.")
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        what = "NaN" if np.isnan(y).any() else "infinity"
        raise ValueError(f"{name} contains {what}; class labels must be finite.")
    return y


def _label_kind(v):
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (numbers.Number, np.number)):
        return "number"
    if isinstance(v, (str, bytes, np.str_, np.bytes_)):
        return "string"
    return type(v).__name__


def check_label_types(y, owner="estimator"):
    """Refuse class labels that mix types (``[1, "a", 2]``, numbers with strings).

    numpy would turn such a list into strings (the label ``1`` becomes ``"1"``, and
    ``predict`` then returns ``"1"``), and an object array fails in scikit-learn with a
    message about label types or sorting; this says what is wrong instead (a TypeError).
    Homogeneous arrays (any dtype but object) pass at once.
    """
    if y is None or isinstance(y, str) or hasattr(y, "dask"):
        return
    dtype = getattr(y, "dtype", None)
    if dtype is not None and getattr(dtype, "kind", "O") != "O":
        return
    try:
        values = np.asarray(y, dtype=object).ravel()
    except (TypeError, ValueError):
        return
    seen = {}
    for v in values:
        seen.setdefault(_label_kind(v), v)
        if len(seen) > 1:
            (k1, v1), (k2, v2) = list(seen.items())[:2]
            raise TypeError(
                f"{owner}: the class labels in y mix types ({k1} {v1!r} and {k2} {v2!r}); "
                "give labels of one type, all numbers or all strings (e.g. "
                "y.astype(str)).")


def validate_X(estimator, X, y="no_validation", *, reset=True, **kwargs):
    """scikit-learn's ``validate_data`` plus sparsekm's kernel-input check.

    Records (``reset=True``) or checks (``reset=False``) ``n_features_in_`` and
    ``feature_names_in_`` exactly as scikit-learn estimators do (a DataFrame with
    reordered or renamed columns raises, one without names after fitting with names
    warns), converts to C-ordered float64/float32, and refuses NaN/inf as well as finite values
    whose squared norms overflow (:func:`check_finite_kernel_input`).
    """
    from sklearn.utils.validation import validate_data

    if type(X).__module__.startswith("dask.") and hasattr(X, "dask"):
        raise _dask_in_memory_error(X)
    if not (isinstance(y, str) and y == "no_validation"):
        from sklearn.base import is_classifier

        if is_classifier(estimator):
            check_label_types(y, type(estimator).__name__)
    kwargs.setdefault("dtype", [np.float64, np.float32])
    # C order: a DataFrame gives a Fortran-ordered array, and the BLAS rounds
    # differently by layout; C order makes DataFrame and array inputs (and a model
    # stored from either and loaded back) compute bit for bit the same.
    kwargs.setdefault("order", "C")
    try:
        out = validate_data(estimator, X, y, reset=reset, **kwargs)
    except ValueError as exc:
        if "contains NaN" in str(exc) or "contains infinity" in str(exc):
            _explain_non_finite(X, type(estimator).__name__, exc)
        raise
    X_checked = out[0] if isinstance(out, tuple) else out
    check_finite_kernel_input(X_checked, owner=type(estimator).__name__)
    return out


class OutputContainerMixin:
    """``set_output`` that refuses ``transform="polars"`` when polars is not installed.

    scikit-learn accepts the choice and fails only at the first ``transform``; this
    says so where the choice is made. Put it before ``TransformerMixin`` in the bases.
    """

    def set_output(self, *, transform=None):
        if transform == "polars":
            import importlib.util

            if importlib.util.find_spec("polars") is None:
                raise ImportError(
                    f"{type(self).__name__}.set_output(transform='polars'): polars is not "
                    "installed here; install it (pip install polars) or choose "
                    "transform='pandas' or 'default'.")
        return super().set_output(transform=transform)
