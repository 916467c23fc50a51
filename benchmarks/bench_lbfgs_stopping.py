"""Why the dask fit's test error grew with the rows: the L-BFGS iteration cap (issue 25).

``bench_dask_fit.py`` ran the squared-hinge L-BFGS of ``ApproxSVC(solver="lbfgs")`` for
a fixed 15 iterations: 3.29 % test error at 1e6 rows, 4.80 % at 1e7. This runs the same
fit in memory (same data generator, kernel, 50-vector greedy basis, C = 1) at 1e5 and 1e6
rows with the old cap (15), without a cap (1000 iterations, scipy's ftol = 1e-15), and
with the relative-change stopping rule (three consecutive iterations below ``tol``;
``ApproxSVC``'s new default for ``max_iter=-1`` on a dask array is ``tol = 1e-6``). The
dask path runs the
same L-BFGS on the same objective (``test_dask_fit.py`` checks equality), so the
iteration counts and errors carry over; its time per iteration is in ``dask_fit.json``.
CPU seconds of this process; test error on 1e5 fresh rows.

Usage::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_lbfgs_stopping.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "lbfgs_stopping.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
from _benchutil import write_results  # noqa: E402


def main():
    from bench_dask_fit import D, numpy_ringnorm

    from sparsekm.kernels import RBF
    from sparsekm.models import ApproxSVC, approx_svm
    Xt, yt = numpy_ringnorm(100000, 100000, seed=999)
    default = approx_svm._LBFGS_TOL
    rows = []
    settings = [("cap 15 (old bench)", 15, None), ("no cap (1000, ftol 1e-15)", 1000, None),
                ("tol 1e-4", -1, 1e-4), ("tol 1e-6 (dask default)", -1, 1e-6),
                ("tol 1e-8", -1, 1e-8)]
    for n in (100000, 1000000):
        X, y = numpy_ringnorm(n, 100000, seed=0)
        for label, max_iter, tol in settings:
            approx_svm._LBFGS_TOL = tol
            t = time.process_time()
            clf = ApproxSVC(C=1.0, n_basis=50, tol=0.0, kernel=RBF(1.0 / (2 * D)),
                            solver="lbfgs", max_iter=max_iter, random_state=0).fit(X, y)
            seconds = time.process_time() - t
            f = clf.decision_function(Xt)
            row = {"rows": n, "stopping": label, "max_iter": max_iter, "tol": tol,
                   "lbfgs_iterations": int(clf.n_iter_), "fit_cpu_s": seconds,
                   "test_error": float(np.mean(clf.classes_[(f > 0).astype(int)] != yt)),
                   "load_1min": os.getloadavg()[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            write_results(OUT, {"rows": rows, "meta": {
                "timing": "CPU seconds (time.process_time), OMP_NUM_THREADS=1",
                "data": "ringnorm generator (bench_dask_fit.numpy_ringnorm), 20 features, "
                        "C=1, 50-vector greedy basis, RBF(1/40); test: 1e5 fresh rows"}},
                indent=1)
    approx_svm._LBFGS_TOL = default


if __name__ == "__main__":
    main()
