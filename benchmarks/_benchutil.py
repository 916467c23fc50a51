"""Helpers shared by the benchmarks.

Timing (best of several repeats, wall and process-CPU clocks, optionally interleaved
so that a burst of load from other jobs hits every contender alike), least-squares
fits with their coefficient of determination, and the machine description written
into every JSON file.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from scipy.optimize import nnls


def timed(fn, repeat=1):
    """Run ``fn`` ``repeat`` times; return (last result, best wall s, best CPU s)."""
    best_wall, best_cpu, out = np.inf, np.inf, None
    for _ in range(max(1, repeat)):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return out, best_wall, best_cpu


def timed_interleaved(fns, repeat):
    """Best wall and CPU seconds of each callable in ``fns`` (a dict), run round-robin.

    One call of every contender per round, ``repeat`` rounds: load from other jobs
    that comes and goes during the measurement affects all contenders alike.
    """
    wall = {k: np.inf for k in fns}
    cpu = {k: np.inf for k in fns}
    for fn in fns.values():  # warm-up (first-call allocations, imports)
        fn()
    for _ in range(max(1, repeat)):
        for k, fn in fns.items():
            w, c = time.perf_counter(), time.process_time()
            fn()
            wall[k] = min(wall[k], time.perf_counter() - w)
            cpu[k] = min(cpu[k], time.process_time() - c)
    return wall, cpu


def r_squared(y, y_hat):
    """Coefficient of determination of the fit ``y_hat`` to ``y``."""
    y, y_hat = np.asarray(y, float), np.asarray(y_hat, float)
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - y_hat) ** 2)) / ss_tot if ss_tot > 0 else 1.0


def linear_fit(x, t):
    """``t = intercept + slope x`` by least squares, with R^2 (in linear space)."""
    x, t = np.asarray(x, float), np.asarray(t, float)
    slope, intercept = np.polyfit(x, t, 1)
    return {"slope": float(slope), "intercept": float(intercept),
            "r2": r_squared(t, intercept + slope * x)}


def power_fit(x, t):
    """``log t = log c + p log x`` by least squares: the measured exponent ``p``."""
    lx, lt = np.log(np.asarray(x, float)), np.log(np.asarray(t, float))
    p, logc = np.polyfit(lx, lt, 1)
    return {"exponent": float(p), "coefficient": float(np.exp(logc)),
            "r2_loglog": r_squared(lt, logc + p * lx)}


def model_fit(features, t, names):
    """Non-negative least squares ``t ~ sum_k c_k features[:, k]``, relative residuals.

    The columns are the terms of an expected complexity (e.g. ``n m^2`` and
    ``n m d``); each row is scaled by ``1 / t`` so that small and large problems
    count alike (a fit of relative error). Returns the constants (seconds per unit
    of each term), the model's predictions and R^2 (log space).
    """
    F = np.asarray(features, float)
    t = np.asarray(t, float)
    coef, _ = nnls(F / t[:, None], np.ones_like(t))
    pred = F @ coef
    return {"terms": list(names), "seconds_per_unit": [float(c) for c in coef],
            "predicted_seconds": [float(p) for p in pred],
            "r2_loglog": r_squared(np.log(t), np.log(np.maximum(pred, 1e-300)))}


def plain_log_ticks(ax):
    """Plain-text tick labels on log axes (mathtext labels cost seconds per figure)."""
    from matplotlib import ticker

    class _Plain(ticker.LogFormatter):
        # LogFormatter's choice of which ticks to label, with four significant digits
        # (its own format rounds 0.44 and 0.46 both to "4e-01")
        def _num_to_string(self, x, vmin, vmax):
            return f"{x:.4g}"

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(_Plain(labelOnlyBase=False))
            axis.set_minor_formatter(_Plain(labelOnlyBase=False))


def machine(note=None):
    """Platform, CPU count, load averages and BLAS threads, for the JSON files."""
    from threadpoolctl import threadpool_info

    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1_5_15_min": [round(v, 2) for v in os.getloadavg()],
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "blas": [{k: p.get(k) for k in ("internal_api", "version", "num_threads")}
                 for p in threadpool_info() if p.get("user_api") == "blas"],
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "note": note or ("2 cores shared with other engineers' jobs: absolute times are "
                         "noisy; ratios measured side by side in one run are the figures "
                         "to trust"),
    }


def digits_data():
    """USPS with the papers' gamma = 1/128 when the data folder is found, else the
    embedded 8x8 digits with gamma = 1/32: ``(name, gamma, X_train, y_train, X_test, y_test)``."""
    from sparsekm.datasets import data_available, load_digits_default, load_usps

    if data_available("usps"):
        return ("usps", 1 / 128) + tuple(load_usps())
    return ("digits (embedded, USPS files not found)", 1 / 32) + tuple(load_digits_default())


class PeriodicSampler:
    """Calls ``self._sample()`` every ``interval`` seconds on a daemon thread while in a
    ``with`` block (and once at entry and exit). Subclasses implement ``_sample``."""

    def __init__(self, interval):
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        raise NotImplementedError

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()
        return False


def write_results(path, obj, **dump_kw):
    """Write a results file with its provenance: ``obj["provenance"] = stamp()``.

    The one way benchmarks write ``benchmarks/results/*.json`` (issue 38): commit,
    versions, BLAS library and kernel, numpy's CPU features, threads and load, from
    :func:`sparsekm._provenance.stamp`. A list of runs (one appended per call) gets
    the stamp on its last run. ``dump_kw`` go to :func:`json.dumps` (default
    ``indent=1``).
    """
    import json
    from pathlib import Path

    from sparsekm._provenance import stamp

    if isinstance(obj, dict):
        obj["provenance"] = stamp()
    elif isinstance(obj, list) and obj and isinstance(obj[-1], dict):
        obj[-1]["provenance"] = stamp()
    else:
        raise TypeError(f"write_results: a dict or a list of dicts, not {type(obj).__name__}")
    dump_kw.setdefault("indent", 1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, **dump_kw) + "\n")
    tmp.replace(path)
    return path


@contextlib.contextmanager
def checkout_at(ref):
    """The library as it was at git ``ref``: a temporary ``git worktree`` of this repository
    (detached, removed afterwards); yields its ``src`` folder.

    The benchmarks' "before" arms run the same measuring code against this checkout (the
    previous code path as it was the default then), rather than switches kept in the
    library for them."""
    root = Path(__file__).resolve().parents[1]
    tmp = Path(tempfile.mkdtemp(prefix="sparsekm-before-"))
    path = tmp / "checkout"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", str(path), ref],
                   check=True, capture_output=True, text=True)
    try:
        yield path / "src"
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(path)],
                       check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def run_arm_at(ref, script, argv):
    """Run ``script`` (a benchmark of this checkout) with ``argv`` in a fresh process that
    imports ``sparsekm`` from git ``ref`` (:func:`checkout_at`); returns the JSON object
    the script prints on its last line of output, with the commit it measured."""
    with checkout_at(ref) as src:
        env = {**os.environ, "PYTHONPATH": str(src)}  # not this checkout's src
        out = subprocess.run([sys.executable, str(script), *argv], env=env, check=True,
                             capture_output=True, text=True)
        commit = subprocess.run(["git", "-C", str(src.parent), "rev-parse", "HEAD"],
                                check=True, capture_output=True, text=True).stdout.strip()
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["commit"] = commit
    return row
