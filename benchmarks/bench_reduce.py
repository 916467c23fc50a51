"""Benchmark: reduced-set construction time and prediction throughput on USPS.

Measures, in one run on this machine:

* the time to construct RS-25 (phase 1; phase 1 + 2; phase 1 + 3 backfitting sweeps; phase 1
  with the orthogonal step, ``step="orthogonal"``) for the ten one-vs-rest
  ``SVC(C=10, gamma=1/128)`` classifiers (issue target: under 2 minutes);
* test error of the RS-25 system (SVM threshold kept / per-classifier re-fit);
* prediction throughput of the RS-25 system against scikit-learn's
  ``OneVsRestClassifier(SVC).decision_function`` on the full system (target: at
  least 50x faster at <= 5.3% error).

Writes ``benchmarks/results/reduce.json``. Run: ``python benchmarks/bench_reduce.py``
(``--quick`` for a 2000-sample smoke run).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402


def _timed(fn, repeat=1):
    best_wall, best_cpu, out = np.inf, np.inf, None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return out, best_wall, best_cpu


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-vectors", type=int, default=25)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "reduce.json"))
    args = parser.parse_args(argv)

    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import KernelExpansion
    from sparsekm.datasets import load_usps
    from sparsekm.reduced_set import construct, refit_intercept

    Xtr, ytr, Xte, yte = load_usps()
    if args.quick:
        Xtr, ytr = Xtr[:2000], ytr[:2000]
    n = args.n_vectors

    ovr, t_svm, _ = _timed(lambda: OneVsRestClassifier(SVC(C=10, gamma=1 / 128)).fit(Xtr, ytr))
    E = KernelExpansion.from_estimator(ovr)
    sv_per = float(np.mean([e.support_vectors_.shape[0] for e in ovr.estimators_]))
    err_svm = float(np.mean(ovr.predict(Xte) != yte)) * 100

    res1, t1, c1 = _timed(lambda: construct(E, n, shared=False, random_state=0))
    res2, t2, c2 = _timed(lambda: construct(E, n, shared=False, refine=True, random_state=0))
    res3, t3, c3 = _timed(lambda: construct(E, n, shared=False, n_sweeps=3, random_state=0))
    res4, t4, c4 = _timed(lambda: construct(E, n, shared=False, step="orthogonal",
                                            random_state=0))

    def err(R):
        return float(np.mean(np.argmax(R.decision_function(Xte), axis=1) != yte)) * 100

    systems = {
        f"RS-{n}": res1.expansion,
        f"RS2-{n}": res2.expansion,
        f"RS-{n}+3sweeps": res3.expansion,
        f"RS-{n}-orthogonal": res4.expansion,
    }
    errors = {}
    for name, R in systems.items():
        errors[name] = {"b_kept": err(R), "b_refit_per_classifier": err(refit_intercept(R, Xtr, ytr))}

    # Throughput on the full test set (best of 5).
    _, t_sk, _ = _timed(lambda: ovr.decision_function(Xte), repeat=5)
    _, t_full, _ = _timed(lambda: E.decision_function(Xte), repeat=5)
    _, t_rs, _ = _timed(lambda: res2.expansion.decision_function(Xte), repeat=5)
    m = Xte.shape[0]
    out = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "note": "shared 2-core machine, loaded by other jobs while measuring"},
        "data": {"n_train": int(Xtr.shape[0]), "n_test": int(m)},
        "svm": {"fit_seconds": t_svm, "sv_per_classifier": sv_per,
                "distinct_sv": int(E.n_terms), "test_error_percent": err_svm},
        "construct": {
            f"RS-{n}": {"wall_seconds": t1, "cpu_seconds": c1,
                        "relative_objective_mean": float(np.mean(res1.relative_objective))},
            f"RS2-{n}": {"wall_seconds": t2, "cpu_seconds": c2,
                         "relative_objective_mean": float(np.mean(res2.relative_objective))},
            f"RS-{n}+3sweeps": {"wall_seconds": t3, "cpu_seconds": c3,
                                "relative_objective_mean": float(np.mean(res3.relative_objective))},
            f"RS-{n}-orthogonal": {
                "wall_seconds": t4, "cpu_seconds": c4,
                "relative_objective_mean": float(np.mean(res4.relative_objective))},
        },
        "test_error_percent": errors,
        "throughput_samples_per_second": {
            "sklearn_ovr_svc_full": m / t_sk,
            "sparsekm_full_expansion": m / t_full,
            f"sparsekm_RS-{n}": m / t_rs,
        },
        "speedup_vs_sklearn_full": t_sk / t_rs,
        "kernel_evaluations_per_sample": {"sklearn_full": int(sum(
            e.support_vectors_.shape[0] for e in ovr.estimators_)), "distinct_sv": int(E.n_terms),
            f"RS-{n}": int(res2.expansion.n_terms)},
        "targets": {"construct_seconds": 120, "speedup": 50, "error_percent": 5.3},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_results(Path(args.out), out, indent=2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
