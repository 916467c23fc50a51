"""Shared SLMC at budget 250 on USPS: the inner-SVM speed-ups, before and after, in one run.

Issue 25 asks the shared SLMC (one ``Z`` for the ten one-vs-rest problems, started from
the shared reduced set) to cost at most 5x the full one-vs-rest SVC fit. Its cost is the
inner linear SVM solved exactly at every L-BFGS evaluation (``fixed_z.solve_features``).
This script times, in one process and in CPU seconds (``time.process_time``,
``OMP_NUM_THREADS=1``):

* the one-vs-rest ``SVC`` fit (the model to compress; three fits, the median is the
  reference of the ratios) and the shared RS construction (the start, :func:`construct`
  with ``shared=True``);
* ``SLMC(shared=True, init=<shared RS>, max_iter=100, tol=1e-3)`` (the settings of
  ``bench_fast_winners``'s "after") twice: ``before`` -- the library at git ``--before-ref``
  (default :data:`BEFORE_REF`, the commit before these speed-ups: full KKT system in the
  active set, undamped exchange, interior point run to convergence before its polish,
  interior point as the cold start), run by this script in a second process on a
  temporary ``git worktree`` of that commit -- and ``after`` -- this checkout (bordered
  Gram system, damped exchange with a more cautious retry, active-set polish of the
  interior iterates, capped libsvm + polish as the cold start), run twice (``after``,
  ``after_repeat``; the median is the figure of the ratios).

Both paths end every inner solve at an exact KKT point, so the L-BFGS trajectories agree
to rounding: the JSON records the largest relative difference of the two ``W`` histories,
the objectives, iterations and test errors, and how often each inner path ran. The
1-minute load average is recorded beside every timing (the machine is shared).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_slmc_speed.py
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _benchutil import machine, run_arm_at, write_results  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "slmc_speed.json"
BUDGET = 250
SEED = 0
GAMMA = 1 / 128
C = 10.0
SETTINGS = {"max_iter": 100, "tol": 1e-3}
SVC_REPEATS = 3
#: The "before" library: the parent of the commit that brought these speed-ups (b64bc80).
BEFORE_REF = "b64bc80^"


def _load():
    import os
    return round(os.getloadavg()[0], 2)


def _slmc(Xtr, ytr, Xte, yte, Z0):
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC
    from sparsekm.sparse_learning import svm_marginal as slmc_mod
    methods = collections.Counter()
    # (named ``_solve_features`` before issue 35)
    name = "solve_features" if hasattr(slmc_mod, "solve_features") else "_solve_features"
    original = getattr(slmc_mod, name)

    def counting(*a, **k):
        sol = original(*a, **k)
        methods[sol.extra["method"]] += 1
        return sol

    setattr(slmc_mod, name, counting)
    try:
        t = time.process_time()
        clf = SLMC(n_vectors=len(Z0), C=C, kernel=RBF(GAMMA), init=Z0, shared=True,
                   random_state=SEED, **SETTINGS).fit(Xtr, ytr)
        seconds = time.process_time() - t
    finally:
        setattr(slmc_mod, name, original)
    return clf, {"seconds": seconds, "load_1min": _load(), "n_iter": int(clf.n_iter_[0]),
                 "n_evaluations": int(sum(methods.values()) // len(clf.classes_)),
                 "objective": float(clf.objective_.sum()),
                 "test_error": float(np.mean(clf.predict(Xte) != yte)),
                 "inner_solver_paths": dict(methods)}


def _one_arm(z0_path):
    """The SLMC arm alone, on ``Z0`` from ``z0_path`` (run in the "before" process): prints
    its row and ``W`` history as JSON on the last line."""
    from sparsekm import datasets
    Xtr, ytr, Xte, yte = datasets.load_usps()
    clf, row = _slmc(Xtr, ytr, Xte, yte, np.load(z0_path))
    row["W_history"] = [float(v) for v in clf.W_history_[0]]
    print(json.dumps(row))


def run(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--before-ref", default=BEFORE_REF,
                   help="git commit of the 'before' library (default: %(default)s)")
    p.add_argument("--one-arm", metavar="Z0.npy", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one_arm:
        return _one_arm(args.one_arm)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import datasets
    from sparsekm.interop import expansion_from_estimator
    from sparsekm.reduced_set import construct
    warnings.simplefilter("ignore", ConvergenceWarning)
    Xtr, ytr, Xte, yte = datasets.load_usps()
    res = {"machine": machine(), "data": "USPS", "n_train": int(len(Xtr)),
           "n_test": int(len(Xte)), "gamma": GAMMA, "C": C, "budget": BUDGET,
           "slmc_settings": SETTINGS, "timing": "CPU seconds (time.process_time), one process"}
    fits = []
    for _ in range(SVC_REPEATS):  # the reference itself varies with the load: its median
        t = time.process_time()
        svc = OneVsRestClassifier(SVC(C=C, gamma=GAMMA)).fit(Xtr, ytr)
        fits.append(time.process_time() - t)
    res["svc_fit_s_all"] = fits
    res["svc_fit_s"] = svc_s = float(np.median(fits))
    res["svc_load_1min"] = _load()
    res["svc_test_error"] = float(np.mean(svc.predict(Xte) != yte))
    psi = expansion_from_estimator(svc)
    t = time.process_time()
    rs = construct(psi, BUDGET, shared=True, random_state=SEED)
    res["shared_rs_s"] = rs_s = time.process_time() - t
    Z0 = np.asarray(rs.expansion.vectors)
    runs, histories = {}, {}
    for label in ("before", "after", "after_repeat"):
        if label == "before":
            with tempfile.TemporaryDirectory() as tmp:
                np.save(Path(tmp) / "Z0.npy", Z0)
                row = run_arm_at(args.before_ref, __file__,
                                 ["--one-arm", str(Path(tmp) / "Z0.npy")])
            histories[label] = row.pop("W_history")
        else:
            model, row = _slmc(Xtr, ytr, Xte, yte, Z0)
            histories[label] = model.W_history_[0]
        row["ratio_slmc_to_svc_fit"] = row["seconds"] / svc_s
        row["ratio_rs_plus_slmc_to_svc_fit"] = (rs_s + row["seconds"]) / svc_s
        runs[label] = row
        print(label, json.dumps(row), flush=True)
    after_s = float(np.median([runs["after"]["seconds"], runs["after_repeat"]["seconds"]]))
    res["after_s_median"] = after_s
    res["ratio_slmc_to_svc_fit"] = after_s / svc_s
    res["ratio_rs_plus_slmc_to_svc_fit"] = (rs_s + after_s) / svc_s
    hb = np.asarray(histories["before"])
    ha = np.asarray(histories["after"])
    n = min(len(hb), len(ha))
    res["runs"] = runs
    res["speedup"] = runs["before"]["seconds"] / after_s
    res["W_history_max_rel_diff"] = float(np.max(np.abs(hb[:n] - ha[:n]) / np.abs(hb[:n])))
    res["W_history_rel_diff_first_10"] = float(np.max(np.abs(hb[:10] - ha[:10])
                                                      / np.abs(hb[:10])))
    res["load_1min_end"] = _load()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_results(out, res, indent=1, sort_keys=True)
    print(json.dumps({k: res[k] for k in ("svc_fit_s_all", "shared_rs_s", "speedup",
                                          "ratio_slmc_to_svc_fit",
                                          "ratio_rs_plus_slmc_to_svc_fit",
                                          "W_history_max_rel_diff")}))
    return res


if __name__ == "__main__":
    run()
