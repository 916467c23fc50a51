"""Benchmark: reduction time of RS-25 x 10 and the shared RS-250 against SVC training time.

Issue #14 target: the ten one-vs-rest classifiers' RS-25 (``construct``, 25 vectors
each) and the shared RS-250 (``construct(..., shared=True)``, 250 vectors for all ten
classes) each in <= 3x the time the full one-vs-rest ``SVC(C=10)`` takes to train, on
USPS (``gamma = 1/128``) and on USPS upsampled to 28x28 = 784 features
(:func:`sparsekm.datasets.load_usps_784`, ``gamma = 1/320``, the same kernel width
relative to the data). All times are measured side by side in one run, wall clock and
process CPU; the machine load (``os.getloadavg``) is recorded before and after each
data set. ``--compare usps`` also runs the previous one-term solver (the engine's plain
fixed-point iteration stopped on the step size, ``construction._FAST_GAUSSIAN = False``)
with the same seed, for the before/after comparison of objective and test error.

Writes ``benchmarks/results/fast_reduce.json``. Run:
``OMP_NUM_THREADS=1 nice -n 10 python benchmarks/bench_fast_reduce.py [--compare usps] [--quick]``.
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


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _error(expansion, X, y, classes):
    return float(np.mean(classes[np.argmax(expansion.decision_function(X), axis=1)] != y))


def run_dataset(name, Xtr, ytr, Xte, yte, gamma, *, compare, seed=0):
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import KernelExpansion
    from sparsekm.reduced_set import construct, reduce_expansion, refit_intercept
    from sparsekm.reduced_set import construction as cons

    out = {"dataset": name, "n_train": int(Xtr.shape[0]), "n_features": int(Xtr.shape[1]),
           "gamma": gamma, "C": 10.0, "load_before": list(os.getloadavg())}
    ovr, w, c = _timed(lambda: OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(Xtr, ytr))
    classes = ovr.classes_
    E = KernelExpansion.from_estimator(ovr)
    out["svc"] = {"wall_s": w, "cpu_s": c, "n_distinct_sv": int(E.n_terms),
                  "test_error": float(np.mean(ovr.predict(Xte) != yte))}
    variants = [("fast", True)] + ([("previous", False)] if compare else [])
    for label, fast in variants:
        cons._FAST_GAUSSIAN = fast
        try:
            res, w, c = _timed(lambda: reduce_expansion(E, 25, method="construct", shared=False,
                                                        random_state=seed))
            R = refit_intercept(res.expansion, Xtr, ytr, classes=classes)
            out[f"rs25x10_{label}"] = {
                "wall_s": w, "cpu_s": c, "objective_sum": float(np.sum(res.objective)),
                "relative_objective_mean": float(np.mean(res.relative_objective)),
                "test_error": _error(R, Xte, yte, classes), "n_vectors": int(R.n_terms),
                "ratio_wall": w / out["svc"]["wall_s"], "ratio_cpu": c / out["svc"]["cpu_s"]}
            print(name, label, "rs25x10", out[f"rs25x10_{label}"], flush=True)
            res, w, c = _timed(lambda: construct(E, 250, shared=True, random_state=seed))
            R = refit_intercept(res.expansion, Xtr, ytr, classes=classes)
            out[f"shared250_{label}"] = {
                "wall_s": w, "cpu_s": c, "objective_sum": float(np.sum(res.objective)),
                "relative_objective_mean": float(np.mean(res.relative_objective)),
                "test_error": _error(R, Xte, yte, classes), "n_vectors": int(R.n_terms),
                "ratio_wall": w / out["svc"]["wall_s"], "ratio_cpu": c / out["svc"]["cpu_s"]}
            print(name, label, "shared250", out[f"shared250_{label}"], flush=True)
        finally:
            cons._FAST_GAUSSIAN = True
    out["load_after"] = list(os.getloadavg())
    fast = [out["rs25x10_fast"], out["shared250_fast"]]
    out["target_ratio"] = 3.0
    out["meets_target_wall"] = bool(all(v["ratio_wall"] <= 3.0 for v in fast))
    out["meets_target_cpu"] = bool(all(v["ratio_cpu"] <= 3.0 for v in fast))
    return out


def seed_spread(Xtr, ytr, Xte, yte, gamma, seeds):
    """RS-25 x 10, fast and previous solver, over several seeds (objective and test error)."""
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import KernelExpansion
    from sparsekm.reduced_set import construction as cons
    from sparsekm.reduced_set import reduce_expansion, refit_intercept

    ovr = OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(Xtr, ytr)
    E = KernelExpansion.from_estimator(ovr)
    rows = []
    for seed in seeds:
        for label, fast in (("fast", True), ("previous", False)):
            cons._FAST_GAUSSIAN = fast
            try:
                res, w, c = _timed(lambda s=seed: reduce_expansion(E, 25, shared=False,
                                                                   random_state=s))
            finally:
                cons._FAST_GAUSSIAN = True
            R = refit_intercept(res.expansion, Xtr, ytr, classes=ovr.classes_)
            rows.append({"seed": seed, "solver": label, "cpu_s": c, "wall_s": w,
                         "objective_sum": float(np.sum(res.objective)),
                         "test_error": _error(R, Xte, yte, ovr.classes_)})
            print(rows[-1], flush=True)
    summary = {}
    for label in ("fast", "previous"):
        r = [x for x in rows if x["solver"] == label]
        summary[label] = {k: float(np.mean([x[k] for x in r]))
                          for k in ("cpu_s", "objective_sum", "test_error")}
    return {"rows": rows, "mean": summary, "seeds": list(seeds)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 2000 training samples")
    parser.add_argument("--compare", default="",
                        help="comma-separated data sets on which the previous one-term solver "
                             "also runs (before/after), e.g. 'usps'")
    parser.add_argument("--datasets", default="usps,usps784")
    parser.add_argument("--seed-spread", default="",
                        help="only RS-25 x 10 on USPS, fast and previous solver, for these "
                             "comma-separated seeds (writes --out)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                             "fast_reduce.json"))
    args = parser.parse_args(argv)

    from sparsekm.datasets import load_usps, load_usps_784

    if args.seed_spread:
        Xtr, ytr, Xte, yte = load_usps()
        out = {"load_before": list(os.getloadavg())}
        out.update(seed_spread(Xtr, ytr, Xte, yte, 1 / 128,
                               [int(v) for v in args.seed_spread.split(",")]))
        out["load_after"] = list(os.getloadavg())
        write_results(Path(args.out), out, indent=2)
        print(json.dumps(out["mean"], indent=2))
        return
    results = {"machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
               "quick": args.quick, "datasets": []}
    for name in args.datasets.split(","):
        Xtr, ytr, Xte, yte = load_usps() if name == "usps" else load_usps_784()
        gamma = 1 / 128 if name == "usps" else 1 / 320
        if args.quick:
            Xtr, ytr = Xtr[:2000], ytr[:2000]
        results["datasets"].append(run_dataset(name, Xtr, ytr, Xte, yte, gamma,
                                               compare=name in args.compare.split(",")))
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_results(Path(args.out), results, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
