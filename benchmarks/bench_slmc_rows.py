"""Wu's SLMC on a subsample of the rows: could the default search cut rows instead of
iterations? (issue 39, session 13).

On the 26-class stand-in of ``bench_many_classes.py`` at 250 vectors only the SLMC reaches
the issue's bar (the earlier compress's 5.03 % + one SE), and the default search's count
bound refuses it. This measures the cheaper form a bound could give it: the shared SLMC
started from the peer's k-means landmarks (``compress``'s ``slmc-peer``) at C = 10, fitted on
a stratified subsample of the fit rows (the split of ``bench_compress.py``), against the
same fit on all rows. Validation and test errors of the fitted model; CPU seconds of the
SLMC fit (this process, one BLAS thread).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_slmc_rows.py
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "slmc_rows.json"
sys.path.insert(0, str(ROOT / "benchmarks"))
from _benchutil import machine, write_results  # noqa: E402

#: (rows, L-BFGS iterations); None: all fit rows.
SETTINGS = ((2000, 10), (2000, 25), (4000, 10), (None, 3))
BUDGET = 250
C = 10.0
SEED = 0


def main():
    from bench_compress import _data, _split
    from sklearn.cluster import KMeans
    from sklearn.model_selection import train_test_split

    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC

    warnings.simplefilter("ignore")
    (Xtr, ytr, Xte, yte), gamma, _ = _data("many26")
    X_fit, X_val, y_fit, y_val = _split(Xtr, ytr)
    Z0 = KMeans(n_clusters=BUDGET, n_init=1, random_state=SEED).fit(X_fit).cluster_centers_
    rows = []
    for n_rows, iters in SETTINGS:
        if n_rows is None:
            idx = np.arange(y_fit.size)
        else:
            idx = np.sort(train_test_split(np.arange(y_fit.size), train_size=n_rows,
                                           stratify=y_fit, random_state=SEED)[0])
        t = time.process_time()
        clf = SLMC(n_vectors=BUDGET, C=C, kernel=RBF(gamma=gamma), init=Z0, max_iter=iters,
                   shared=True, random_state=SEED).fit(X_fit[idx], y_fit[idx])
        row = {"rows": int(idx.size), "lbfgs_iterations": int(np.max(clf.n_iter_)),
               "fit_cpu_s": time.process_time() - t,
               "val_error": float(np.mean(clf.predict(X_val) != y_val)),
               "test_error": float(np.mean(clf.predict(Xte) != yte)),
               "load_1min": os.getloadavg()[0]}
        rows.append(row)
        print(json.dumps(row), flush=True)
        write_results(OUT, {"rows": rows, "machine": machine(), "meta": {
            "data": "many26 (bench_compress._data), the fit/validation split of "
                    "bench_compress._split; test: its 8,000 held-out rows",
            "model": f"SLMC(shared, C={C:g}) from the k-means landmarks ({BUDGET}, "
                     f"random_state={SEED}), on a stratified subsample of the fit rows",
            "timing": "CPU seconds of the SLMC fit (time.process_time), OMP_NUM_THREADS=1"}})


if __name__ == "__main__":
    main()
