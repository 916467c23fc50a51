"""Budgets a deployer thinks in: bytes of flash and microseconds per row.

A kernel machine shipped as C (:mod:`sparsekm.c_export`) is its ``const`` arrays
and a loop over its ``n_vectors`` expansion vectors. Its size and its per-row
cost are both affine in ``n_vectors``:

* bytes (:func:`deployed_bytes`): ``n_vectors (n_features b + 4 n_outputs [+ 4])``
  for the vectors (``b`` = 4, 2, 1 bytes for float32, float16, int8; ``+ 4`` the
  int8 per-vector scale) and coefficients, plus the fixed part: ``4 n_outputs``
  thresholds, ``8 n_features`` per scaler step, ``4 n_features`` int8 per-feature
  scales, and the class labels (one pointer each plus the strings with their NUL);
* multiply-adds per row (:func:`macs_per_row`):
  ``n_steps n_features + n_vectors (n_features + n_outputs + c_kernel)``, with
  ``c_kernel`` = 20 for the kernel's profile (``exp``, ``tanh``, ``pow``) and 1
  for the linear kernel.

:func:`plan_budget` inverts both: the largest ``n_vectors`` that fits ``max_bytes``
and ``max_latency_us`` for each precision. Latency comes from a stated cost model
(``latency_target="cost model"``: ``macs_per_us`` multiply-adds per microsecond,
default 100, a 100 MHz microcontroller at one multiply-add per cycle) or from the
generated C code compiled and timed on this machine (``"this machine"``; reads a
clock, so it is never a default). ``sparsekm.compress(..., max_bytes=...,
max_latency_us=...)`` uses it to search size and precision together.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .quantize import PRECISIONS, storage_bytes

__all__ = ["deployed_bytes", "model_bytes", "macs_per_row", "plan_budget",
           "measure_c_latency", "LATENCY_TARGETS"]

LATENCY_TARGETS = ("cost model", "this machine")
_KERNEL_COST = 20


def _label_bytes(class_labels, n_classes, pointer_size):
    if class_labels is not None:
        labels = [str(c) for c in np.asarray(class_labels).tolist()]
        return len(labels) * int(pointer_size) + sum(len(s.encode("utf-8")) + 1 for s in labels)
    return int(n_classes) * (int(pointer_size) + 2)  # one-character labels, e.g. "0".."9"


def deployed_bytes(n_vectors, n_features, n_outputs, precision="float32", *,
                   scales="per-vector", n_scaler_steps=0, class_labels=None, n_classes=0,
                   pointer_size=4):
    """Bytes of the ``const`` arrays of an exported model, by part.

    Parameters
    ----------
    n_vectors, n_features : int
    n_outputs : int
        Outputs of the expansion (binary 1, one-vs-rest ``k``, one-vs-one ``k(k-1)/2``).
    precision : {"float32", "float16", "int8"}
    scales : {"per-vector", "per-feature"}
    n_scaler_steps : int, default=0
        StandardScaler/MinMaxScaler steps (two float32 arrays of ``n_features`` each).
    class_labels : array-like, default=None
        The labels as the C file stores them (``str`` of each); without them
        ``n_classes`` one-character labels are assumed.
    n_classes : int, default=0
    pointer_size : int, default=4
        ``sizeof(char *)`` on the target (4 on a 32-bit microcontroller).

    Returns
    -------
    dict
        ``vectors``, ``scales``, ``coef``, ``intercept``, ``scaler``, ``classes`` and
        ``total`` in bytes.
    """
    parts = storage_bytes(n_vectors, n_features, n_outputs, precision, scales)
    parts["scaler"] = 8 * int(n_features) * int(n_scaler_steps)
    parts["classes"] = _label_bytes(class_labels, n_classes, pointer_size) \
        if (class_labels is not None or n_classes) else 0
    parts["total"] = sum(parts.values())
    return parts


def model_bytes(model, precision="float32", *, scales="per-vector", pointer_size=4):
    """:func:`deployed_bytes` of ``model`` as :func:`sparsekm.c_export.to_c` writes it."""
    from .c_export import c_parts

    parts = c_parts(model)
    exp = parts.expansion
    return deployed_bytes(exp.n_terms, exp.n_features, exp.n_outputs, precision, scales=scales,
                          n_scaler_steps=len(parts.steps), class_labels=parts.classes,
                          pointer_size=pointer_size)


def macs_per_row(n_vectors, n_features, n_outputs, *, n_scaler_steps=0, linear=False):
    """Multiply-adds per row of the exported C code (module docstring's cost model)."""
    c = 1 if linear else _KERNEL_COST
    return int(n_scaler_steps) * int(n_features) + int(n_vectors) * (
        int(n_features) + int(n_outputs) + c)


def measure_c_latency(n_features, n_outputs, n_vectors, precision="float32", *,
                      scales="per-vector", kernel=None, n_rows=200, min_seconds=0.2,
                      compiler=None, flags=("-O2",), random_state=0):
    """Microseconds per row of the exported C code, compiled and timed on this machine.

    A random expansion of the given shape (``kernel`` default RBF) is exported,
    compiled with ``compiler`` (default ``cc``/``gcc``/``clang``) and timed by
    :func:`sparsekm.c_export.c_driver_source`'s loop over ``n_rows`` rows, repeated
    until ``min_seconds`` pass. Reads a clock: results vary with the machine's load.

    Raises
    ------
    RuntimeError
        Without a C compiler.
    """
    from .c_export import c_driver_source, export_c
    from .expansion import KernelExpansion
    from .kernels import RBF

    cc = compiler or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError("latency_target='this machine' compiles the C code: no C compiler "
                           "(cc, gcc or clang) was found; use latency_target='cost model'.")
    rng = np.random.default_rng(random_state)
    n = max(int(n_vectors), 1)
    coef = rng.standard_normal((n, n_outputs)) if n_outputs > 1 else rng.standard_normal(n)
    psi = KernelExpansion(rng.uniform(-1, 1, (n, n_features)), coef,
                          kernel if kernel is not None else RBF(1.0 / n_features),
                          np.zeros(n_outputs) if n_outputs > 1 else 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src, h = export_c(psi, tmp / "probe.c", name="probe", precision=precision,
                          scales=scales)
        (tmp / "drv.c").write_text(c_driver_source(h.name, "probe"))
        subprocess.run([cc, "-std=c99", *flags, "-o", str(tmp / "drv"), str(tmp / "drv.c"),
                        str(src), "-lm"], check=True, capture_output=True)
        with open(tmp / "rows.txt", "w") as fh:
            fh.write(f"{n_rows}\n")
            np.savetxt(fh, rng.uniform(-1, 1, (n_rows, n_features)).astype(np.float32),
                       fmt="%.9g")
        return time_driver(tmp / "drv", tmp / "rows.txt", n_rows, min_seconds)


def time_driver(exe, rows, n_rows, min_seconds=0.2):
    """Microseconds per row from the driver's timing mode (reps grown to ``min_seconds``)."""
    reps = 1
    while True:
        out = subprocess.run([str(exe), str(rows), str(reps)], capture_output=True, text=True,
                             check=True).stdout
        ns = float(out.split()[0])
        if ns * 1e-9 * reps * n_rows >= min_seconds or reps >= 1 << 20:
            return ns / 1000.0
        reps *= max(2, int(min_seconds / max(ns * 1e-9 * reps * n_rows, 1e-6)) + 1)


def plan_budget(n_features, n_outputs, scheme="binary", *, max_bytes=None, max_latency_us=None,
                precision=PRECISIONS, scales="per-vector", latency_target="cost model",
                macs_per_us=100.0, n_scaler_steps=0, class_labels=None, n_classes=None,
                linear=False, pointer_size=4, max_vectors=None):
    """The largest ``n_vectors`` within a budget of bytes and microseconds, per precision.

    Parameters
    ----------
    n_features : int
    n_outputs : int
        Expansion outputs (``"binary"`` 1, ``"ovr"`` ``k``, ``"ovo"`` ``k(k-1)/2``).
    scheme : {"binary", "ovr", "ovo", "scores"}, default="binary"
        Only for the number of class labels when neither ``class_labels`` nor
        ``n_classes`` is given.
    max_bytes : int, default=None
        Flash budget for the ``const`` arrays (:func:`deployed_bytes`).
    max_latency_us : float, default=None
        Per-row time budget.
    precision : str or tuple of str, default=("float32", "float16", "int8")
    scales : {"per-vector", "per-feature"}
    latency_target : {"cost model", "this machine"}, default="cost model"
        ``"cost model"``: :func:`macs_per_row` / ``macs_per_us``. ``"this machine"``:
        the C code timed here (:func:`measure_c_latency` at two sizes, a line through
        them).
    macs_per_us : float, default=100
    max_vectors : int, default=None
        Upper limit (e.g. the full model's number of vectors).

    Returns
    -------
    dict
        ``{precision: {"n_vectors", "bytes", "latency_us", "limited_by"}}`` and
        ``"conversion"``: one line per precision stating the arithmetic. A precision
        whose fixed part alone exceeds the budget gets ``n_vectors = 0``.

    Raises
    ------
    ValueError
        Without any budget, for a budget <= 0, or an unknown ``latency_target``.
    """
    if max_bytes is None and max_latency_us is None:
        raise ValueError("plan_budget needs max_bytes or max_latency_us.")
    for name, v in (("max_bytes", max_bytes), ("max_latency_us", max_latency_us)):
        if v is not None and not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a positive number; got {v!r}.")
    if latency_target not in LATENCY_TARGETS:
        raise ValueError(f"latency_target must be one of {list(LATENCY_TARGETS)}; got "
                         f"{latency_target!r}.")
    if not (isinstance(macs_per_us, (int, float)) and macs_per_us > 0):
        raise ValueError(f"macs_per_us must be a positive number; got {macs_per_us!r}.")
    precisions = (precision,) if isinstance(precision, str) else tuple(precision)
    if n_classes is None:
        n_classes = 0 if scheme == "scores" else _classes_from_outputs(scheme, n_outputs)
    out, lines = {}, []
    for p in precisions:
        kw = dict(scales=scales, n_scaler_steps=n_scaler_steps, class_labels=class_labels,
                  n_classes=n_classes, pointer_size=pointer_size)
        fixed = deployed_bytes(0, n_features, n_outputs, p, **kw)["total"]
        per_vec = deployed_bytes(1, n_features, n_outputs, p, **kw)["total"] - fixed
        limits = {}
        if max_bytes is not None:
            limits["bytes"] = max(0, math.floor((max_bytes - fixed) / per_vec))
            lines.append(f"{p}: {fixed} B fixed + {per_vec} B per vector <= {max_bytes} B "
                         f"-> n_vectors <= {limits['bytes']}")
        lat = _latency_model(n_features, n_outputs, p, scales, latency_target, macs_per_us,
                             n_scaler_steps, linear)
        if max_latency_us is not None:
            a, b = lat
            limits["latency"] = max(0, math.floor((max_latency_us - a) / b)) if b > 0 else 0
            lines.append(f"{p}: {a:.3g} us + {b:.3g} us per vector ({latency_target}) <= "
                         f"{max_latency_us} us -> n_vectors <= {limits['latency']}")
        if max_vectors is not None:
            limits["max_vectors"] = int(max_vectors)
        limited_by = min(limits, key=limits.get)
        n = limits[limited_by]
        out[p] = {"n_vectors": n, "bytes": deployed_bytes(n, n_features, n_outputs, p,
                                                          **kw)["total"],
                  "latency_us": lat[0] + lat[1] * n, "limited_by": limited_by}
    out["conversion"] = lines
    return out


def _classes_from_outputs(scheme, n_outputs):
    if scheme == "binary":
        return 2
    if scheme == "ovr":
        return int(n_outputs)
    if scheme == "ovo":  # k (k - 1) / 2 = n_outputs
        return int(round((1 + math.sqrt(1 + 8 * n_outputs)) / 2))
    raise ValueError(f"scheme must be 'binary', 'ovr', 'ovo' or 'scores'; got {scheme!r}.")


def _latency_model(n_features, n_outputs, precision, scales, target, macs_per_us,
                   n_scaler_steps, linear):
    """``(a, b)``: microseconds per row = ``a + b n_vectors``."""
    if target == "cost model":
        a = macs_per_row(0, n_features, n_outputs, n_scaler_steps=n_scaler_steps) / macs_per_us
        b = macs_per_row(1, n_features, n_outputs, linear=linear) / macs_per_us
        return a, b
    n1, n2 = 32, 256
    t1 = measure_c_latency(n_features, n_outputs, n1, precision, scales=scales)
    t2 = measure_c_latency(n_features, n_outputs, n2, precision, scales=scales)
    b = max((t2 - t1) / (n2 - n1), 1e-9)
    return max(t1 - b * n1, 0.0), b
