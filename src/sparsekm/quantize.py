"""Quantized storage of a kernel expansion: float32, float16 or int8 vectors.

A deployed expansion ``f(x) = sum_j coef_j k(x, z_j) + b`` (eq. 1 of *Fast
approximation of support vector kernel expansions*) stores its vectors ``z_j``
(``n_terms x n_features`` numbers, the bulk of its size), its coefficients and its
thresholds. This module stores the vectors in a smaller number format and returns
the *dequantized* expansion: exactly the numbers a deployment computes with, so
that its error is measured in Python, on validation data, before shipping.

* ``"float32"``, ``"float16"``: the vectors rounded to the format (relative error
  at most ``2^-24`` and ``2^-11`` per entry, in the format's normal range).
* ``"int8"``: symmetric linear quantization ``z ~= s q``, ``q`` an integer in
  ``[-127, 127]``, with one scale ``s = max |z| / 127`` per vector
  (``scales="per-vector"``) or per feature (``"per-feature"``). Rounding to the
  nearest ``q`` gives the identity ``|z - s q| <= s / 2`` for every entry, the
  quantization step of the randomized-kernels paper's bounds: a kernel that is
  ``L``-Lipschitz in ``z`` (RBF: ``L = sqrt(2 gamma / e)``) changes by at most
  ``L ||z - s q||`` and the decision value by at most ``sum_j |coef_j|`` times that.

Coefficients and thresholds are stored in float32 whatever the precision (they are
``n_terms x n_outputs`` numbers against ``n_terms x n_features``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .expansion import KernelExpansion

__all__ = ["PRECISIONS", "SCALES", "QuantizedExpansion", "quantize_expansion",
           "storage_bytes", "quantization_error"]

PRECISIONS = ("float32", "float16", "int8")
SCALES = ("per-vector", "per-feature")
_ITEMSIZE = {"float32": 4, "float16": 2, "int8": 1}
_INT8_MAX = 127


def _check_precision(precision, scales):
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}; got {precision!r}.")
    if scales not in SCALES:
        raise ValueError(f"scales must be one of {list(SCALES)}; got {scales!r}.")


@dataclass(frozen=True)
class QuantizedExpansion:
    """An expansion in its stored form and the expansion it computes.

    Attributes
    ----------
    expansion : KernelExpansion
        The dequantized expansion (float64 arrays holding exactly the stored
        values): what a deployment evaluates.
    precision : {"float32", "float16", "int8"}
    scales : {"per-vector", "per-feature"}
        Where the int8 scales live (ignored for the float formats).
    codes : ndarray of shape (n_terms, n_features)
        The stored vectors: float32, float16 or int8.
    scale : ndarray of float32 or None
        int8 only: ``(n_terms,)`` (per vector) or ``(n_features,)`` (per feature).
    coef : ndarray of float32, shape (n_terms, n_outputs)
    intercept : ndarray of float32, shape (n_outputs,)
    """

    expansion: KernelExpansion
    precision: str
    scales: str
    codes: np.ndarray
    scale: np.ndarray | None
    coef: np.ndarray
    intercept: np.ndarray

    @property
    def nbytes(self):
        """Bytes of each stored array (``vectors``, ``scales``, ``coef``, ``intercept``)."""
        return {"vectors": int(self.codes.nbytes),
                "scales": 0 if self.scale is None else int(self.scale.nbytes),
                "coef": int(self.coef.nbytes), "intercept": int(self.intercept.nbytes)}


def storage_bytes(n_vectors, n_features, n_outputs, precision="float32", scales="per-vector"):
    """Bytes of an expansion's stored arrays, by part (see :attr:`QuantizedExpansion.nbytes`).

    ``vectors = n_vectors n_features b`` (``b`` = 4, 2, 1 bytes per entry for
    float32, float16, int8), ``scales = 4 n_vectors`` or ``4 n_features`` (int8),
    ``coef = 4 n_vectors n_outputs``, ``intercept = 4 n_outputs``.
    """
    _check_precision(precision, scales)
    n_vectors, n_features, n_outputs = int(n_vectors), int(n_features), int(n_outputs)
    n_scales = 0
    if precision == "int8":
        n_scales = n_vectors if scales == "per-vector" else n_features
    return {"vectors": n_vectors * n_features * _ITEMSIZE[precision], "scales": 4 * n_scales,
            "coef": 4 * n_vectors * n_outputs, "intercept": 4 * n_outputs}


def _to_float32(a, what):
    a = np.asarray(a, dtype=np.float64)
    if a.size and np.abs(a).max() > np.finfo(np.float32).max:
        raise ValueError(f"The expansion's {what} exceed the float32 range "
                         f"(max |value| {np.abs(a).max():.3g}); they cannot be stored in float32.")
    return a.astype(np.float32)


def _int8_codes(Z, scales):
    axis = 1 if scales == "per-vector" else 0
    amax = np.abs(Z).max(axis=axis) if Z.size else np.zeros(Z.shape[1 - axis])
    s = _to_float32(amax / _INT8_MAX, "vectors")
    s[s == 0] = 1.0  # an all-zero vector (feature): any scale represents it exactly
    s_b = s.astype(np.float64)[:, None] if axis == 1 else s.astype(np.float64)[None, :]
    q = np.clip(np.rint(Z / s_b), -_INT8_MAX, _INT8_MAX).astype(np.int8)
    return q, s, q.astype(np.float64) * s_b


def quantize_expansion(expansion, precision="float32", *, scales="per-vector"):
    """Store ``expansion``'s vectors in ``precision`` and return both forms.

    Parameters
    ----------
    expansion : KernelExpansion
    precision : {"float32", "float16", "int8"}, default="float32"
    scales : {"per-vector", "per-feature"}, default="per-vector"
        int8 only: one scale per expansion vector or one per feature.

    Returns
    -------
    QuantizedExpansion
        ``.expansion`` is the dequantized expansion (same kernel); for int8 every
        entry satisfies ``|z - s q| <= s / 2`` (module docstring).

    Raises
    ------
    ValueError
        For an unknown precision or scale layout, or values outside the format's
        range (float16: ``|z| > 65504``; float32 for coefficients and thresholds).
    TypeError
        For an ``expansion`` that is not a :class:`~sparsekm.KernelExpansion`.

    Examples
    --------
    >>> from sparsekm import KernelExpansion, RBF
    >>> psi = KernelExpansion([[0.5, -1.0], [0.25, 2.0]], [1.0, -1.0], RBF(0.5))
    >>> q = quantize_expansion(psi, "int8")
    >>> q.codes.tolist(), q.scale.tolist()
    ([[64, -127], [16, 127]], [0.007874015718698502, 0.015748031437397003])
    """
    if not isinstance(expansion, KernelExpansion):
        raise TypeError(f"quantize_expansion needs a KernelExpansion; got "
                        f"{type(expansion).__name__}.")
    _check_precision(precision, scales)
    Z = np.asarray(expansion.vectors, dtype=np.float64)
    scale = None
    if precision == "int8":
        codes, scale, deq = _int8_codes(Z, scales)
    elif precision == "float16":
        if Z.size and np.abs(Z).max() > np.finfo(np.float16).max:
            raise ValueError(f"The expansion's vectors exceed the float16 range (max |z| "
                             f"{np.abs(Z).max():.3g} > 65504); use float32 or int8.")
        codes = Z.astype(np.float16)
        deq = codes.astype(np.float64)
    else:
        codes = _to_float32(Z, "vectors")
        deq = codes.astype(np.float64)
    coef = np.asarray(expansion.coef, dtype=np.float64)
    coef32 = _to_float32(coef.reshape(coef.shape[0], expansion.n_outputs), "coefficients")
    intercept32 = _to_float32(np.atleast_1d(expansion.intercept), "thresholds")
    deq_coef = coef32.astype(np.float64).reshape(coef.shape)
    deq_b = intercept32.astype(np.float64)
    deq_exp = KernelExpansion(deq, deq_coef, expansion.kernel,
                              float(deq_b[0]) if coef.ndim == 1 else deq_b)
    return QuantizedExpansion(deq_exp, precision, scales, codes, scale, coef32, intercept32)


def quantization_error(expansion, quantized, X):
    """The decision-value error that storage adds, measured on ``X`` (validation data).

    Parameters
    ----------
    expansion : KernelExpansion
        The original expansion.
    quantized : QuantizedExpansion or KernelExpansion
        Its stored form (or the dequantized expansion).
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    dict
        ``max_abs`` and ``mean_abs`` of ``f_quantized(x) - f(x)`` over ``X`` and all
        outputs, and ``relative`` = ``max_abs / max |f(x)|``.
    """
    q = quantized.expansion if isinstance(quantized, QuantizedExpansion) else quantized
    f = np.asarray(expansion.decision_function(X), dtype=np.float64)
    g = np.asarray(q.decision_function(X), dtype=np.float64)
    diff = np.abs(g - f)
    scale = float(np.abs(f).max()) if f.size else 0.0
    max_abs = float(diff.max()) if diff.size else 0.0
    return {"max_abs": max_abs, "mean_abs": float(diff.mean()) if diff.size else 0.0,
            "relative": max_abs / scale if scale > 0 else 0.0}
