"""One-vs-rest fits in parallel: sequential vs joblib (loky) vs a dask LocalCluster.

The ten one-vs-rest problems of the embedded digits (1,797 images of 8 x 8; the
papers' RBF width c = 0.5 d) are reduced with ``ReducedSetClassifier`` (RS
construction, ``n_vectors`` per class) and trained with ``SLMC`` (``n_vectors``
per class), each

* sequentially (``n_jobs=None``),
* with ``n_jobs=W`` on joblib's default process backend (loky),
* with ``joblib.parallel_backend("dask")`` on a ``LocalCluster`` of ``W`` worker
  processes x 1 thread,

each once untimed first (worker start-up and imports are not timed), then timed.

Reported: wall time of each ``fit``, the speed-up over sequential, and whether the
fitted machines are bit-identical to the sequential one (they must be). BLAS is
limited to one thread everywhere so that the comparison is about processes.

Writes ``benchmarks/results/parallel.json``. Usage::

    python benchmarks/bench_parallel.py [--workers 2] [--n-vectors 10]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import joblib  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from sparsekm.datasets import load_digits_default  # noqa: E402
from sparsekm.kernels import RBF  # noqa: E402
from sparsekm.models import SLMC, ReducedSetClassifier  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _timed_fit(make, X, y):
    t = time.perf_counter()
    model = make().fit(X, y)
    return model, time.perf_counter() - t


def _same(a, b):
    return bool(np.array_equal(a.expansion_.vectors, b.expansion_.vectors)
                and np.array_equal(a.expansion_.coef, b.expansion_.coef)
                and np.array_equal(a.expansion_.intercept, b.expansion_.intercept))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--n-vectors", type=int, default=10)
    parser.add_argument("--slmc-iter", type=int, default=30)
    args = parser.parse_args(argv)
    W = args.workers

    X, y, X_te, y_te = load_digits_default(random_state=0)
    gamma = 1.0 / (0.5 * X.shape[1])
    ovr = OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(X, y)
    systems = {
        "ReducedSetClassifier": lambda n_jobs=None: ReducedSetClassifier(
            ovr, n_vectors=args.n_vectors, random_state=0, n_jobs=n_jobs),
        "SLMC": lambda n_jobs=None: SLMC(
            n_vectors=args.n_vectors, C=10.0, kernel=RBF(gamma), max_iter=args.slmc_iter,
            random_state=0, n_jobs=n_jobs),
    }
    out = {"benchmark": "parallel one-vs-rest fits",
           "data": f"embedded digits, {X.shape[0]} x {X.shape[1]}, 10 classes",
           "n_vectors_per_class": args.n_vectors, "workers": W,
           "machine": platform.platform(), "cpu_count": os.cpu_count(),
           "note": "wall times on a shared machine; BLAS limited to 1 thread", "systems": {}}

    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=W, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
            Client(cluster):
        for name, make in systems.items():
            # Each path once untimed first: worker start-up and imports are not measured
            # (loky's pool and the cluster's workers are reused by the timed fit).
            make().fit(X, y)
            make(n_jobs=W).fit(X, y)
            with joblib.parallel_backend("dask"):
                make(n_jobs=W).fit(X, y)
            ref, t_seq = _timed_fit(make, X, y)
            par, t_loky = _timed_fit(lambda make=make: make(n_jobs=W), X, y)
            with joblib.parallel_backend("dask"):
                dsk, t_dask = _timed_fit(lambda make=make: make(n_jobs=W), X, y)
            out["systems"][name] = {
                "test_error": float(np.mean(ref.predict(X_te) != y_te)),
                "sequential_s": t_seq,
                f"loky_n_jobs={W}_s": t_loky, "loky_speedup": t_seq / t_loky,
                f"dask_localcluster_{W}_workers_s": t_dask, "dask_speedup": t_seq / t_dask,
                "loky_identical": _same(ref, par), "dask_identical": _same(ref, dsk),
            }
            print(name, json.dumps(out["systems"][name]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_results((RESULTS / "parallel.json"), out, indent=2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
