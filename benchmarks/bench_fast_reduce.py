"""Benchmark: reduction time of RS-25 x 10 and the shared RS-250 against SVC training time.

Issue #14 target: the ten one-vs-rest classifiers' RS-25 (``construct``, 25 vectors
each) and the shared RS-250 (``construct(..., shared=True)``, 250 vectors for all ten
classes) each in <= 3x the time the full one-vs-rest ``SVC(C=10)`` takes to train, on
USPS (``gamma = 1/128``) and on USPS upsampled to 28x28 = 784 features
(:func:`sparsekm.datasets.load_usps_784`, ``gamma = 1/320``, the same kernel width
relative to the data). All times are measured side by side in one run, wall clock and
process CPU; the machine load (``os.getloadavg``) is recorded before and after each
data set. ``--compare usps`` also runs the previous one-term solver (the plain fixed-point
iteration stopped on the step size) with the same seed, for the before/after comparison
of objective and test error: the library at git ``--before-ref`` (default
:data:`BEFORE_REF`, the commit before the dedicated Gaussian solver), run by this script
in a second process on a temporary ``git worktree`` of it
(:func:`_benchutil.run_arm_at`), which trains its own SVC and reports its ratios to it
(the previous arm loads its data with that library: USPS only, as the 784-feature
loader came later).

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
from _benchutil import run_arm_at, write_results  # noqa: E402

#: The "previous" library: the parent of the commit that brought the batched Gaussian
#: one-term solver (cb411fe).
BEFORE_REF = "cb411fe^"


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _error(expansion, X, y, classes):
    return float(np.mean(classes[np.argmax(expansion.decision_function(X), axis=1)] != y))


def _svc(Xtr, ytr, gamma):
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import KernelExpansion

    ovr, w, c = _timed(lambda: OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(Xtr, ytr))
    return ovr, KernelExpansion.from_estimator(ovr), w, c


def _reductions(E, Xtr, ytr, Xte, yte, classes, svc_w, svc_c, seed):
    """RS-25 x 10 and the shared RS-250 with this process's library."""
    from sparsekm.reduced_set import construct, reduce_expansion, refit_intercept

    out = {}
    for key, fn in (("rs25x10", lambda: reduce_expansion(E, 25, method="construct",
                                                         shared=False, random_state=seed)),
                    ("shared250", lambda: construct(E, 250, shared=True, random_state=seed))):
        res, w, c = _timed(fn)
        R = refit_intercept(res.expansion, Xtr, ytr, classes=classes)
        out[key] = {
            "wall_s": w, "cpu_s": c, "objective_sum": float(np.sum(res.objective)),
            "relative_objective_mean": float(np.mean(res.relative_objective)),
            "test_error": _error(R, Xte, yte, classes), "n_vectors": int(R.n_terms),
            "ratio_wall": w / svc_w, "ratio_cpu": c / svc_c}
    return out


def _usps(quick):
    from sparsekm.datasets import load_usps
    Xtr, ytr, Xte, yte = load_usps()
    return (Xtr[:2000], ytr[:2000], Xte, yte) if quick else (Xtr, ytr, Xte, yte)


def _one_arm(spec):
    """The previous solver's rows (run in the "before" process): JSON on the last line."""
    Xtr, ytr, Xte, yte = _usps(spec["quick"])
    ovr, E, w, c = _svc(Xtr, ytr, spec["gamma"])
    if spec["seeds"] is None:
        out = _reductions(E, Xtr, ytr, Xte, yte, ovr.classes_, w, c, spec["seed"])
        out["svc"] = {"wall_s": w, "cpu_s": c}
    else:
        from sparsekm.reduced_set import reduce_expansion, refit_intercept
        out = {"rows": []}
        for seed in spec["seeds"]:
            res, w, c = _timed(lambda s=seed: reduce_expansion(E, 25, shared=False,
                                                               random_state=s))
            R = refit_intercept(res.expansion, Xtr, ytr, classes=ovr.classes_)
            out["rows"].append({"seed": seed, "solver": "previous", "cpu_s": c, "wall_s": w,
                                "objective_sum": float(np.sum(res.objective)),
                                "test_error": _error(R, Xte, yte, ovr.classes_)})
    print(json.dumps(out))


def _previous(spec, before_ref):
    if spec["dataset"] != "usps":
        raise ValueError(f"the previous solver's arm runs on USPS only, not {spec['dataset']!r}")
    from sparsekm.datasets import find_data_dir

    # the older library looks for the data beside its own (temporary) checkout
    root = find_data_dir()
    if root is not None:
        os.environ.setdefault("SPARSEKM_DATA", str(root))
    return run_arm_at(before_ref, __file__, ["--one-arm", json.dumps(spec)])


def run_dataset(name, Xtr, ytr, Xte, yte, gamma, *, compare, seed=0, quick=False,
                before_ref=BEFORE_REF):
    out = {"dataset": name, "n_train": int(Xtr.shape[0]), "n_features": int(Xtr.shape[1]),
           "gamma": gamma, "C": 10.0, "load_before": list(os.getloadavg())}
    ovr, E, w, c = _svc(Xtr, ytr, gamma)
    classes = ovr.classes_
    out["svc"] = {"wall_s": w, "cpu_s": c, "n_distinct_sv": int(E.n_terms),
                  "test_error": float(np.mean(ovr.predict(Xte) != yte))}
    for key, row in _reductions(E, Xtr, ytr, Xte, yte, classes, w, c, seed).items():
        out[f"{key}_fast"] = row
        print(name, "fast", key, row, flush=True)
    if compare:
        prev = _previous({"dataset": name, "quick": quick, "gamma": gamma, "seed": seed,
                          "seeds": None}, before_ref)
        for key in ("rs25x10", "shared250"):
            out[f"{key}_previous"] = {**prev[key], "commit": prev["commit"],
                                      "svc_of_its_process": prev["svc"]}
            print(name, "previous", key, out[f"{key}_previous"], flush=True)
    out["load_after"] = list(os.getloadavg())
    fast = [out["rs25x10_fast"], out["shared250_fast"]]
    out["target_ratio"] = 3.0
    out["meets_target_wall"] = bool(all(v["ratio_wall"] <= 3.0 for v in fast))
    out["meets_target_cpu"] = bool(all(v["ratio_cpu"] <= 3.0 for v in fast))
    return out


def seed_spread(Xtr, ytr, Xte, yte, gamma, seeds, before_ref=BEFORE_REF):
    """RS-25 x 10, fast and previous solver, over several seeds (objective and test error)."""
    from sparsekm.reduced_set import reduce_expansion, refit_intercept

    ovr, E, _, _ = _svc(Xtr, ytr, gamma)
    rows = []
    for seed in seeds:
        res, w, c = _timed(lambda s=seed: reduce_expansion(E, 25, shared=False, random_state=s))
        R = refit_intercept(res.expansion, Xtr, ytr, classes=ovr.classes_)
        rows.append({"seed": seed, "solver": "fast", "cpu_s": c, "wall_s": w,
                     "objective_sum": float(np.sum(res.objective)),
                     "test_error": _error(R, Xte, yte, ovr.classes_)})
        print(rows[-1], flush=True)
    prev = _previous({"dataset": "usps", "quick": False, "gamma": gamma, "seed": None,
                      "seeds": list(seeds)}, before_ref)
    rows += [{**r, "commit": prev["commit"]} for r in prev["rows"]]
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
    parser.add_argument("--before-ref", default=BEFORE_REF)
    parser.add_argument("--one-arm", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_arm:
        return _one_arm(json.loads(args.one_arm))

    from sparsekm.datasets import load_usps, load_usps_784

    if args.seed_spread:
        Xtr, ytr, Xte, yte = load_usps()
        out = {"load_before": list(os.getloadavg())}
        out.update(seed_spread(Xtr, ytr, Xte, yte, 1 / 128,
                               [int(v) for v in args.seed_spread.split(",")], args.before_ref))
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
                                               compare=name in args.compare.split(","),
                                               quick=args.quick, before_ref=args.before_ref))
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_results(Path(args.out), results, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
