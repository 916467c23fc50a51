"""Where a number was computed: one stamp for every benchmark result and cached cell.

:func:`stamp` records what can change a floating-point result or a timing: the commit,
the package versions, the BLAS library and the compute kernel it chose (threadpoolctl),
numpy's own SIMD dispatch (:func:`numpy_cpu_features`), the thread counts and the load.
:func:`numpy_cpu_features` is also part of the reproduction cache's key
(:mod:`sparsekm.reproduce._cache`): with numpy's AVX-512 loops off, sums round
differently and the reproduced results change (measurement: CHANGELOG, issue 38).

Bottom layer: imports nothing of sparsekm but its version (:mod:`sparsekm._version`).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

__all__ = ["stamp", "numpy_cpu_features", "numpy_simd_signature", "STAMP_KEYS"]

#: the keys :func:`stamp` always writes (a value it cannot learn is None and named in
#: ``"unknown"``)
STAMP_KEYS = ("commit", "versions", "blas", "blas_kernel", "numpy_cpu_features", "threads",
              "load_average_1_5_15_min", "platform", "cpu")


def numpy_cpu_features():
    """numpy's SIMD dispatch in this process: the CPU features its loops use.

    Returns ``{"enabled": [...], "disabled": [...], "baseline": [...],
    "disabled_by_env": "..."}``: ``enabled`` are the features numpy found and uses,
    ``disabled`` those it knows but does not use (the CPU lacks them, or
    ``NPY_DISABLE_CPU_FEATURES`` turned them off), ``baseline`` the ones compiled in
    unconditionally. Sorted, so that the result can be part of a cache key.
    """
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as mu
    feats = dict(getattr(mu, "__cpu_features__", {}))
    return {"enabled": sorted(k for k, v in feats.items() if v),
            "disabled": sorted(k for k, v in feats.items() if not v),
            "baseline": sorted(getattr(mu, "__cpu_baseline__", [])),
            "disabled_by_env": os.environ.get("NPY_DISABLE_CPU_FEATURES", "")}


def numpy_simd_signature():
    """The dispatch targets numpy enabled in this process, as one string (``"X86_V3"``,
    ``"AVX512F+AVX512_SKX+..."``; ``"baseline"`` when none): what chooses numpy's loops,
    so what a cached number computed with numpy depends on besides the BLAS.

    The targets of ``__cpu_dispatch__`` that ``__cpu_features__`` marks enabled: off
    when the CPU lacks them or ``NPY_DISABLE_CPU_FEATURES`` names them.
    """
    try:
        from numpy._core import _multiarray_umath as mu
    except ImportError:  # numpy < 2
        from numpy.core import _multiarray_umath as mu
    feats = getattr(mu, "__cpu_features__", {})
    on = sorted(d for d in getattr(mu, "__cpu_dispatch__", []) if feats.get(d))
    return "+".join(on) or "baseline"


def _commit(root):
    """``git rev-parse --short HEAD`` of ``root`` (``+dirty`` with changes), or None."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, text=True,
                              capture_output=True, check=True, timeout=20).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, text=True, capture_output=True, check=True,
                               timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty.strip() else "") if head else None


def source_commit(root=None):
    """The commit of the git checkout sparsekm runs from (``root``: another checkout), as
    :func:`stamp` records it: 12 hex digits, ``+dirty`` with uncommitted changes; None
    when sparsekm is installed without a checkout."""
    if root is None:
        root = Path(__file__).resolve().parents[2]
    return _commit(root) if (Path(root) / ".git").exists() else None


def _versions():
    import numpy
    import scipy
    import sklearn

    from ._version import __version__

    out = {"python": platform.python_version(), "sparsekm": __version__,
           "numpy": numpy.__version__, "scipy": scipy.__version__,
           "scikit-learn": sklearn.__version__}
    for name in ("threadpoolctl", "joblib", "dask", "distributed", "torch", "onnxruntime",
                 "skl2onnx"):
        mod = sys.modules.get(name)  # only what this run imported: a stamp loads nothing
        if mod is not None:
            out[name] = getattr(mod, "__version__", None)
    return out


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def stamp(root=None, **extra):
    """The provenance block of a result: a JSON-ready dict.

    Parameters
    ----------
    root : path, optional
        The git checkout whose commit is recorded (default: the one sparsekm runs from,
        found from this file; None when sparsekm is installed without one).
    **extra
        More entries (e.g. ``note="..."``), written as given.

    Returns
    -------
    dict
        ``commit`` (``+dirty`` when the checkout has changes), ``versions``, ``blas``
        (every BLAS threadpoolctl sees: library, version, kernel ``architecture``,
        threads), ``blas_kernel``, ``numpy_cpu_features`` (:func:`numpy_cpu_features`),
        ``threads`` (the environment's thread limits, CPUs, the CPUs this process may
        use), ``load_average_1_5_15_min``, ``platform``, ``cpu``, and ``unknown``: the
        keys whose value could not be learned here.
    """
    from threadpoolctl import threadpool_info

    pools = threadpool_info()
    blas = [{k: p.get(k) for k in ("internal_api", "version", "architecture", "num_threads",
                                   "threading_layer")}
            | {"library": os.path.basename(p.get("filepath") or "") or None}
            for p in pools if p.get("user_api") == "blas"]
    kernels = sorted({b["architecture"] for b in blas if b.get("architecture")})
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        load = None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    out = {
        "commit": source_commit(root),
        "versions": _versions(),
        "blas": blas or None,
        "blas_kernel": ",".join(kernels) or None,
        "numpy_cpu_features": numpy_cpu_features(),
        "threads": {**{v: os.environ.get(v) for v in (
                        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                        "OPENBLAS_CORETYPE")},
                    "cpu_count": os.cpu_count(), "usable_cpus": usable,
                    "openmp": [p.get("num_threads") for p in pools
                               if p.get("user_api") == "openmp"]},
        "load_average_1_5_15_min": load,
        "platform": platform.platform(),
        "cpu": _cpu_model(),
    }
    out["unknown"] = [k for k in STAMP_KEYS if out[k] is None]
    out.update(extra)
    return out
