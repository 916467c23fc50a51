"""Kernel-expansion evaluation throughput vs scikit-learn, and RBF Gram rate vs GEMM.

One run measures, on the same machine and data:

* the float64 GEMM rate (GFLOP/s) of square 2048 x 2048 matrices;
* scikit-learn's ``OneVsRestClassifier(SVC).decision_function`` throughput on the
  USPS test set (ten binary machines, ~504 SVs each) and ours on the same model
  converted with ``KernelExpansion.from_estimator`` (each of the ~2640 distinct
  SVs evaluated once for all ten outputs, GEMM-based);
* the RBF Gram evaluation rate, as kernel evaluations/s x 2 d flops, as a fraction
  of the GEMM rate.

Targets (issue 2): ours >= 5x sklearn's throughput; RBF Gram >= 30 % of GEMM.
Falls back to the embedded digits when USPS is missing. Writes
``benchmarks/results/eval.json``.

Usage: ``python benchmarks/bench_eval.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import SVC
from threadpoolctl import threadpool_info

from sparsekm import KernelExpansion
from sparsekm.datasets import data_available, load_digits_default, load_usps
from sparsekm.kernels import RBF

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(func, repeat):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t0)
    return best


def gemm_gflops(repeat, n=2048, dtype=np.float64):
    rng = np.random.default_rng(0)
    A, B = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
    A @ B
    return 2 * n**3 / best_time(lambda: A @ B, repeat) / 1e9


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    if data_available("usps"):
        X_tr, y_tr, X_te, y_te = load_usps()
        dataset, gamma = "usps", 1 / 128
    else:
        X_tr, y_tr, X_te, y_te = load_digits_default()
        dataset, gamma = "digits (embedded)", 1 / 32
    d = X_tr.shape[1]

    t0 = time.perf_counter()
    ovr = OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(X_tr, y_tr)
    train_s = time.perf_counter() - t0
    psi = KernelExpansion.from_estimator(ovr)
    n_sv = [m.support_vectors_.shape[0] for m in ovr.estimators_]

    ours_scores = psi.decision_function(X_te)
    max_diff = float(np.abs(ours_scores - ovr.decision_function(X_te)).max())
    err = float(np.mean(ovr.classes_[ours_scores.argmax(axis=1)] != y_te))

    gemm = gemm_gflops(args.repeat)
    t_sk = best_time(lambda: ovr.decision_function(X_te), max(1, args.repeat // 2))
    t_ours = best_time(lambda: psi.decision_function(X_te), args.repeat)
    gemm_after = gemm_gflops(args.repeat)

    kernel = RBF(gamma)
    V = psi.vectors
    t_gram = best_time(lambda: kernel(X_te, V), args.repeat)
    evals_per_s = X_te.shape[0] * V.shape[0] / t_gram
    gram_gflops = evals_per_s * 2 * d / 1e9

    X32, V32 = X_te.astype(np.float32), V.astype(np.float32)
    t_gram32 = best_time(lambda: kernel(X32, V32), args.repeat)
    gemm32 = gemm_gflops(args.repeat, dtype=np.float32)

    gemm_ref = max(gemm, gemm_after)
    out = {
        "benchmark": "eval",
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": platform.platform(),
        "blas": [{k: p.get(k) for k in ("internal_api", "version", "num_threads")}
                 for p in threadpool_info() if p.get("user_api") == "blas"],
        "dataset": dataset,
        "n_test": int(X_te.shape[0]),
        "n_features": int(d),
        "sv_per_classifier_mean": float(np.mean(n_sv)),
        "sv_total_sklearn": int(sum(n_sv)),
        "distinct_sv_ours": int(psi.n_terms),
        "train_seconds": train_s,
        "test_error": err,
        "max_abs_diff_vs_sklearn": max_diff,
        "gemm_float64_gflops": gemm_ref,
        "gemm_float64_gflops_runs": [gemm, gemm_after],
        "sklearn_samples_per_s": X_te.shape[0] / t_sk,
        "ours_samples_per_s": X_te.shape[0] / t_ours,
        "speedup_vs_sklearn": t_sk / t_ours,
        "rbf_gram_evals_per_s": evals_per_s,
        "rbf_gram_gflops": gram_gflops,
        "rbf_gram_fraction_of_gemm": gram_gflops / gemm_ref,
        "rbf_gram_float32_evals_per_s": X_te.shape[0] * V.shape[0] / t_gram32,
        "float32_speedup": t_gram / t_gram32,
        "gemm_float32_gflops": gemm32,
        "targets": {"speedup_vs_sklearn": ">= 5", "rbf_gram_fraction_of_gemm": ">= 0.30"},
    }
    out["targets_met"] = {
        "speedup_vs_sklearn": out["speedup_vs_sklearn"] >= 5,
        "rbf_gram_fraction_of_gemm": out["rbf_gram_fraction_of_gemm"] >= 0.30,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "eval.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
