"""Cost of the three winning reductions at budget 250, before and after the speed-ups (issue 25).

For each data set: the one-vs-rest SVC (the model to compress), the peer (Nyström with
k-means landmarks + LinearSVC, C chosen on a validation split of the training data,
every C's fit counted), and sparsekm's

* ``shared RS``: shared reduced-set construction, phase 1 (:func:`construct`,
  ``shared=True``);
* ``construct + refine``: the same followed by the joint phase 2 (L-BFGS over ``Z`` and
  every class's ``beta``);
* ``shared SLMC from RS``: SLMC with one shared ``Z`` started from the shared RS (its
  construction time included).

Each method runs twice: ``before`` (the library at git ``--before-ref``, default
:data:`BEFORE_REF`, the commit before the speed-ups, run by this script in a second
process on a temporary ``git worktree`` of it: inner SVM by an interior point on all
samples, warm active set limited to 6 steps; with the previous defaults, phase 2 until
scipy's ``ftol = 1e-14`` or 300 iterations, SLMC ``max_iter=100``, ``tol=1e-6``) and
``after`` (this checkout: working-set interior point, phase 2 stopped at ``refine_tol``,
SLMC stopped at ``slmc_tol``). All seconds are CPU seconds of this process (``time.process_time``;
``OMP_NUM_THREADS=1``), ratios are within one run; the 1-minute load average is
recorded beside them (the machine is shared). Nothing is chosen on the test set.

Usage::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_fast_winners.py --datasets usps,digits
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "fast_winners.json"
BUDGET = 250
SEED = 0
C_GRID = (0.1, 1.0, 10.0, 100.0)
VAL_FRACTION = 0.15
#: The "after" settings (see the module docstring).
AFTER = {"refine_tol": 1e-3, "refine_max_iter": 300, "slmc_tol": 1e-3, "slmc_max_iter": 100}
BEFORE = {"refine_tol": 1e-14, "refine_max_iter": 300, "slmc_tol": 1e-6, "slmc_max_iter": 100}
#: The "before" library: the parent of the commit that brought the working-set interior
#: point (2b5163d).
BEFORE_REF = "2b5163d^"


def _data(name):
    from sparsekm import datasets
    if name == "usps":
        return datasets.load_usps(), 1 / 128, 10.0
    if name == "usps784":
        return datasets.load_usps_784(), 1 / 128 * 256 / 784, 10.0
    if name == "digits":
        return datasets.load_digits_default(), 1 / 32, 10.0
    raise ValueError(f"unknown data set {name!r}")


def _cpu():
    return time.process_time()


def _load():
    return round(os.getloadavg()[0], 2)


def _error(expansion, X, y, classes):
    F = expansion.decision_function(X)
    return float(np.mean(classes[np.argmax(F, axis=1)] != y))


def _svc(Xtr, ytr, gamma, C):
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm.interop import expansion_from_estimator
    t = _cpu()
    svc = OneVsRestClassifier(SVC(C=C, gamma=gamma)).fit(Xtr, ytr)
    return svc, _cpu() - t, expansion_from_estimator(svc)


def _peer(Xtr, ytr, Xte, yte, gamma, budget):
    """Nyström (k-means landmarks) + LinearSVC, C on a validation split; all fits timed."""
    from sklearn.model_selection import train_test_split
    t = _cpu()
    X_fit, X_val, y_fit, y_val = train_test_split(Xtr, ytr, test_size=VAL_FRACTION,
                                                  stratify=ytr, random_state=SEED)
    r = nystroem_peer(X_fit, y_fit, X_val, y_val, Xte, yte, gamma, budget)
    r["seconds"] = _cpu() - t
    return r


def nystroem_peer(X_fit, y_fit, X_val, y_val, X_test, y_test, gamma, budget,
                  landmarks="kmeans", seed=SEED):
    """Nyström with ``budget`` k-means (or uniformly drawn) landmarks + LinearSVC fitted on
    ``X_fit``, C in ``C_GRID`` chosen on ``(X_val, y_val)`` (ties: the first); every fit
    timed (CPU s, the test predictions excluded)."""
    from scipy import linalg
    from sklearn.cluster import KMeans
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import LinearSVC
    t = _cpu()
    if landmarks == "kmeans":
        centres = KMeans(n_clusters=budget, n_init=1,
                         random_state=seed).fit(X_fit).cluster_centers_
    else:
        centres = X_fit[np.random.default_rng(seed).choice(X_fit.shape[0], budget,
                                                           replace=False)]
    w, V = linalg.eigh(rbf_kernel(centres, gamma=gamma))
    keep = w > 1e-12 * w.max()
    M = V[:, keep] / np.sqrt(w[keep])

    def tr(X):
        return rbf_kernel(X, centres, gamma=gamma) @ M
    F_fit, F_val = tr(X_fit), tr(X_val)
    best = None
    for C in C_GRID:
        clf = LinearSVC(C=C, max_iter=5000, random_state=seed).fit(F_fit, y_fit)
        err = float(np.mean(clf.predict(F_val) != y_val))
        if best is None or err < best[0]:
            best = (err, C, clf)
    seconds = _cpu() - t
    return {"seconds": seconds, "C": best[1], "val_error": best[0],
            "test_error": float(np.mean(best[2].predict(tr(X_test)) != y_test))}


def _methods(psi, Xtr, ytr, Xte, yte, gamma, C, classes, settings):
    from sparsekm.kernels import RBF
    from sparsekm.models import SLMC
    from sparsekm.reduced_set import construct, refine
    out = {}
    t = _cpu()
    rs = construct(psi, BUDGET, shared=True, random_state=SEED)
    t_rs = _cpu() - t
    out["shared RS"] = {"seconds": t_rs, "test_error": _error(rs.expansion, Xte, yte, classes),
                        "n_vectors": rs.expansion.n_terms}
    t = _cpu()
    ref = refine(psi, rs.expansion, max_iter=settings["refine_max_iter"],
                 tol=settings["refine_tol"])
    out["construct + refine"] = {"seconds": t_rs + _cpu() - t, "n_iter": int(ref.n_iter),
                                 "test_error": _error(ref.expansion, Xte, yte, classes),
                                 "objective": float(np.sum(ref.objective)),
                                 "n_vectors": ref.expansion.n_terms}
    Z0 = np.asarray(rs.expansion.vectors)
    t = _cpu()
    clf = SLMC(n_vectors=len(Z0), C=C, kernel=RBF(gamma), init=Z0, shared=True,
               max_iter=settings["slmc_max_iter"], tol=settings["slmc_tol"],
               random_state=SEED).fit(Xtr, ytr)
    out["shared SLMC from RS"] = {"seconds": t_rs + _cpu() - t, "n_iter": int(clf.n_iter_[0]),
                                  "test_error": float(np.mean(clf.predict(Xte) != yte)),
                                  "objective": float(clf.objective_.sum()),
                                  "n_vectors": clf.expansion_.n_terms}
    for row in out.values():
        row["load_1min"] = _load()
    return out


def _one_arm(name, settings):
    """The methods alone with ``settings`` (run in the "before" process): prints their rows
    as JSON on the last line."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    warnings.simplefilter("ignore", ConvergenceWarning)
    (Xtr, ytr, Xte, yte), gamma, C = _data(name)
    svc, _, psi = _svc(Xtr, ytr, gamma, C)
    rows = _methods(psi, Xtr, ytr, Xte, yte, gamma, C, svc.classes_, settings)
    print(json.dumps({"methods": rows}))


def run(name, which, before_slmc_iters=None, before_ref=BEFORE_REF):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    warnings.simplefilter("ignore", ConvergenceWarning)
    (Xtr, ytr, Xte, yte), gamma, C = _data(name)
    svc, svc_s, psi = _svc(Xtr, ytr, gamma, C)
    classes = svc.classes_
    res = {"n_train": int(len(Xtr)), "n_test": int(len(Xte)), "gamma": gamma, "C": C,
           "budget": BUDGET, "svc_fit_s": svc_s, "svc_n_sv": int(psi.n_terms),
           "svc_test_error": float(np.mean(svc.predict(Xte) != yte)), "load_1min": _load()}
    res["peer"] = _peer(Xtr, ytr, Xte, yte, gamma, BUDGET)
    ref_s = max(svc_s, res["peer"]["seconds"])
    res["reference_s"] = ref_s
    for label in which:
        settings = dict(AFTER if label == "after" else BEFORE)
        if label == "before" and before_slmc_iters:
            # the old SLMC path is slow: run fewer iterations, extrapolate per iteration
            settings["slmc_max_iter"] = before_slmc_iters
        if label == "after":
            rows = _methods(psi, Xtr, ytr, Xte, yte, gamma, C, classes, settings)
        else:
            arm = run_arm_at(before_ref, __file__,
                             ["--one-arm", name, "--settings", json.dumps(settings)])
            rows = arm["methods"]
            for row in rows.values():
                row["commit"] = arm["commit"]
        slmc = rows["shared SLMC from RS"]
        if label == "before" and before_slmc_iters:
            rs_s = rows["shared RS"]["seconds"]
            per_it = (slmc["seconds"] - rs_s) / max(1, slmc["n_iter"])
            slmc["measured_iterations"] = slmc["n_iter"]
            slmc["seconds_measured"] = slmc["seconds"]
            slmc["seconds"] = rs_s + per_it * BEFORE["slmc_max_iter"]
            slmc["note"] = (f"extrapolated: {slmc['n_iter']} iterations measured "
                            f"({per_it:.2f} s each), x {BEFORE['slmc_max_iter']}; test_error "
                            f"and objective are those after {slmc['n_iter']} iterations")
        for row in rows.values():
            row["ratio_to_svc_fit"] = row["seconds"] / svc_s
            row["ratio_to_reference"] = row["seconds"] / ref_s
        res[label] = {"settings": settings, "methods": rows}
        print(name, label, json.dumps(rows, indent=1), flush=True)
    return res


def _repeats(runs, which):
    """Every run's seconds and ratios, their medians and ranges; the test errors of every
    run must be the same (same seeds): a difference is recorded, not averaged away."""
    out = {"n_runs": len(runs), "runs": []}
    for r in runs:
        row = {"svc_fit_s": r["svc_fit_s"], "peer_s": r["peer"]["seconds"],
               "reference_s": r["reference_s"], "load_1min": r["load_1min"]}
        for label in which:
            for m, v in r[label]["methods"].items():
                row[f"{label}: {m}"] = {"seconds": v["seconds"],
                                        "ratio_to_svc_fit": v["ratio_to_svc_fit"],
                                        "ratio_to_reference": v["ratio_to_reference"],
                                        "test_error": v["test_error"]}
        out["runs"].append(row)
    keys = [k for k in out["runs"][0] if isinstance(out["runs"][0][k], dict)]
    out["median"] = {}
    for k in keys:
        vals = {f: [run[k][f] for run in out["runs"]]
                for f in ("seconds", "ratio_to_svc_fit", "ratio_to_reference")}
        errs = sorted({run[k]["test_error"] for run in out["runs"]})
        out["median"][k] = {**{f: float(np.median(v)) for f, v in vals.items()},
                            **{f"{f}_range": [float(min(v)), float(max(v))]
                               for f, v in vals.items()},
                            "test_errors_seen": errs}
    for f in ("svc_fit_s", "peer_s", "reference_s"):
        out["median"][f] = float(np.median([run[f] for run in out["runs"]]))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="digits,usps")
    p.add_argument("--which", default="before,after")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--repeat", type=int, default=1,
                   help="run every measurement (SVC fit, peer, methods) this many times in "
                        "this process; the JSON keeps the first run's rows and, under "
                        "'repeats', every run's seconds and ratios with their median")
    p.add_argument("--before-slmc-iters", type=int, default=None,
                   help="run the old SLMC path for this many iterations only and "
                        "extrapolate its time to max_iter=100 (flagged in the JSON)")
    p.add_argument("--before-ref", default=BEFORE_REF,
                   help="git commit of the 'before' library (default: %(default)s)")
    p.add_argument("--one-arm", metavar="DATASET", help=argparse.SUPPRESS)
    p.add_argument("--settings", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one_arm:
        return _one_arm(args.one_arm, json.loads(args.settings))
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    results["_meta"] = {"machine": platform.processor() or platform.machine(),
                        "cpu_count": os.cpu_count(),
                        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                        "timing": "CPU seconds (time.process_time) of one process",
                        "after_settings": AFTER, "before_settings": BEFORE}
    for name in args.datasets.split(","):
        runs = [run(name, args.which.split(","), args.before_slmc_iters, args.before_ref)
                for _ in range(max(1, args.repeat))]
        results[name] = runs[0]
        if len(runs) > 1:
            results[name]["repeats"] = _repeats(runs, args.which.split(","))
        out.parent.mkdir(parents=True, exist_ok=True)
        write_results(out, results, indent=1, sort_keys=True)
    return results


if __name__ == "__main__":
    main()
