"""USPS: how many SVs per one-vs-rest classifier for a small (C, gamma) grid (training data only).

The papers' SVMs keep 254 SVs per classifier on average; ours (``SVC(C=10,
gamma=1/128)``, the papers' kernel and C) keep about 504. This script fits the ten
one-vs-rest SVMs on the 7291 training digits for a few (C, gamma) around the
papers' setting and records the mean number of SVs and the training error. No
test data is used. Writes ``benchmarks/results/usps_sv_grid.json``, which
``docs/results.md`` ("SV counts") quotes.

Run: ``OMP_NUM_THREADS=1 python benchmarks/bench_usps_sv_grid.py``.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC

from sparsekm.datasets import load_usps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402

GRID = [(10.0, 1 / 128), (100.0, 1 / 128), (1000.0, 1 / 128), (10.0, 1 / 256), (100.0, 1 / 256),
        (10.0, 1 / 64), (100.0, 1 / 64)]


def main():
    Xtr, ytr, _, _ = load_usps()
    rows = []
    for C, gamma in GRID:
        t0 = time.perf_counter()
        ovr = OneVsRestClassifier(SVC(C=C, gamma=gamma)).fit(Xtr, ytr)
        nsv = [int(e.support_vectors_.shape[0]) for e in ovr.estimators_]
        n_bound = [int(np.sum(np.abs(e.dual_coef_) >= C * (1 - 1e-8))) for e in ovr.estimators_]
        train_err = 100.0 * float(np.mean(ovr.predict(Xtr) != ytr))
        rows.append({"C": C, "gamma": gamma, "mean_n_sv": float(np.mean(nsv)), "n_sv": nsv,
                     "mean_n_bound_sv": float(np.mean(n_bound)),
                     "training_error_percent": train_err, "cv_error_percent": None,
                     "seconds": time.perf_counter() - t0})
        print(f"C={C:g} gamma={gamma:.6g}: {np.mean(nsv):.1f} SVs per classifier, "
              f"{np.mean(n_bound):.1f} at the bound, training error {train_err:.2f} %", flush=True)
    best = min(rows, key=lambda r: abs(r["mean_n_sv"] - 254))
    out = {"script": Path(__file__).name, "rows": rows,
           "conclusion": (f"Closest to the papers' 254: C = {best['C']:g}, gamma = "
                          f"{best['gamma']:.6g} with {best['mean_n_sv']:.1f} SVs per "
                          "classifier. The tables keep the papers' C = 10, gamma = 1/128 (the "
                          "setting the papers state), so the SV-count gap stays and is handled "
                          "by the equal-reduction-factor columns."),
           "machine": {"platform": platform.platform(),
                       "load_average_1_5_15_min": list(os.getloadavg())}}
    path = Path(__file__).resolve().parent / "results" / "usps_sv_grid.json"
    write_results(path, out, indent=1, sort_keys=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
