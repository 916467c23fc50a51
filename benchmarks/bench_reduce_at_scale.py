"""How the reduction's cost grows with the training set: USPS with virtual examples (issue 25).

Training sets: the first ``n`` of a seeded permutation of the 65,619 virtual USPS digits
(:func:`sparsekm.datasets.load_usps_virtual`; the 2007 test digits are the test set).
For each ``n`` and scheme (scikit-learn ``SVC`` one-vs-one, and one-vs-rest through
``OneVsRestClassifier``; ``C = 10``, ``gamma = 1/128``) the SVC is reduced to each
budget (distinct kernel evaluations per prediction, all classes together) with
``--method``:

* ``construct+refine`` (default): shared reduced-set construction (phase 1, one ``Z`` for
  every output) and the joint phase 2, default stopping rule;
* ``construct``: phase 1 only;
* ``compress``: ``sparsekm.compress(svc, X_val, y_val, n_vectors=budget, X_train, y_train)``
  itself (``method="auto"``, its default time limit), choosing on a validation set that
  shares no digit with the training set: ``VAL_FRACTION`` of the 7,291 original digits
  (stratified) are held out with all their shifts, the validation set is those originals,
  and the training sets are drawn from every version of the other digits (so the largest
  is 9 x 6,562 = 59,058 points, not 65,619). Its rows record the chosen method and the
  report's rows beside the times and errors.

A new method is one entry of ``METHODS``. Each row: n_train, scheme, budget, n_sv,
svc_fit_s, compress_s, error_full, error_small, the peer's (Nyström with k-means
landmarks + LinearSVC, C on a 15 % validation split, every C's fit counted) error and
seconds at the same budget, and the process's peak RSS after the row. Seconds are CPU
seconds of this process (``time.process_time``), the 1-minute load average is recorded
(the machine is shared).

The script is resumable: every finished row is written to the JSON at once and skipped
on the next run; the fitted SVCs are cached (pickle) in ``benchmarks/.cache/``.

Usage::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_reduce_at_scale.py \\
        --sizes 10000 30000 65619 --schemes ovr,ovo --budgets 250 1000
    python benchmarks/bench_reduce_at_scale.py --fit   # exponents from the rows present
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "reduce_at_scale.json"
CACHE = ROOT / "benchmarks" / ".cache" / "reduce_at_scale"
GAMMA, C = 1 / 128, 10.0
SEED = 0


def _cpu():
    return time.process_time()


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _data(n):
    from sparsekm.datasets import load_usps_virtual
    X, y, Xte, yte = load_usps_virtual()
    idx = np.random.default_rng(SEED).permutation(len(X))[:n]
    return X[idx], y[idx], Xte, yte


#: ``--method compress``: share of the original digits held out (with all their shifts) as
#: the validation set compress chooses on.
VAL_FRACTION = 0.1
N_ORIGINAL = 7291


def _data_grouped(n):
    """Training rows drawn from every version of 90 % of the original digits, and the
    other 10 % (unshifted) as validation: no digit is on both sides."""
    from sklearn.model_selection import train_test_split

    from sparsekm.datasets import load_usps_virtual
    X, y, Xte, yte = load_usps_virtual()
    n_versions = X.shape[0] // N_ORIGINAL
    fit_o, val_o = train_test_split(np.arange(N_ORIGINAL), test_size=VAL_FRACTION,
                                    stratify=y[:N_ORIGINAL], random_state=SEED)
    pool = (fit_o[None, :] + N_ORIGINAL * np.arange(n_versions)[:, None]).ravel()
    idx = np.random.default_rng(SEED).permutation(pool)[:n]
    return X[idx], y[idx], X[val_o], y[val_o], Xte, yte


def _svc(n, scheme, X, y, tag=""):
    """The fitted SVC, its CPU seconds (cached on disk: fits at 65k take long)."""
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC
    path = CACHE / f"svc_{scheme}_{n}{tag}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            return pickle.load(f)
    t = _cpu()
    svc = SVC(C=C, gamma=GAMMA, cache_size=1000)
    svc = (OneVsRestClassifier(svc) if scheme == "ovr" else svc).fit(X, y)
    out = (svc, _cpu() - t)
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(out, f)
    return out


def _predict(expansion, X, classes, scheme):
    from sparsekm.multiclass import ovr_decision_function
    F = expansion.decision_function(X)
    if scheme == "ovo":
        F = ovr_decision_function(F, len(classes))
    return classes[np.argmax(F, axis=1)]


def _construct(psi, budget, refine):
    from sparsekm.reduced_set import construct
    return construct(psi, budget, shared=True, refine=refine, random_state=SEED).expansion


METHODS = {
    "construct+refine": lambda psi, budget: _construct(psi, budget, True),
    "construct": lambda psi, budget: _construct(psi, budget, False),
}


def _peer(X, y, Xte, yte, budget):
    from bench_fast_winners import _peer as peer  # same peer, same C search
    r = peer(X, y, Xte, yte, GAMMA, budget)
    return r["test_error"], r["seconds"], r["C"]


def _compress_row(svc, X, y, X_val, y_val, b):
    """compress(auto) at budget ``b``: (classifier, report summary)."""
    import sparsekm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = sparsekm.compress(svc, X_val, y_val, n_vectors=b, X_train=X, y_train=y,
                                  random_state=SEED)
    rep = small.compress_report_
    rows = [{k: r[k] for k in ("method", "variant", "n_vectors", "val_error", "seconds",
                               "status", "reason")} for r in rep["rows"]]
    return small, {"chosen": rep["rows"][rep["chosen"]]["method"], "report": rows,
                   "time_limit_s": rep["time_limit"], "n_val": int(len(y_val))}


def run(sizes, schemes, budgets, method, out_path):
    from sparsekm.interop import expansion_from_estimator
    warnings.simplefilter("ignore")
    results = json.loads(out_path.read_text()) if out_path.exists() else {"rows": []}
    done = {(r["n_train"], r["scheme"], r["budget"], r["method"]) for r in results["rows"]}
    for n in sizes:
        X = None
        for scheme in schemes:
            todo = [b for b in budgets if (n, scheme, b, method) not in done]
            if not todo:
                continue
            if X is None:
                if method == "compress":
                    X, y, X_val, y_val, Xte, yte = _data_grouped(n)
                else:
                    X, y, Xte, yte = _data(n)
            n_fit = int(len(y))
            svc, svc_s = _svc(n_fit, scheme, X, y,
                              tag="_grouped" if method == "compress" else "")
            psi = expansion_from_estimator(svc)
            classes = svc.classes_
            err_full = float(np.mean(svc.predict(Xte) != yte))
            for b in todo:
                extra = {}
                t = _cpu()
                if method == "compress":
                    clf, extra = _compress_row(svc, X, y, X_val, y_val, b)
                    small = clf.expansion_
                    predict = clf.predict
                else:
                    small = METHODS[method](psi, b)
                    predict = lambda Z, small=small: _predict(small, Z, classes, scheme)  # noqa: E731
                compress_s = _cpu() - t
                peer_err, peer_s, peer_C = _peer(X, y, Xte, yte, b)
                row = {"n_train": n, "n_fit": n_fit, "scheme": scheme, "budget": b,
                       "method": method,
                       "n_sv": int(psi.n_terms), "n_outputs": int(psi.n_outputs),
                       "svc_fit_s": svc_s, "compress_s": compress_s,
                       "compress_over_svc": compress_s / svc_s,
                       "n_vectors": int(small.merge_duplicates().n_terms), "error_full": err_full,
                       "error_small": float(np.mean(predict(Xte) != yte)),
                       "peer_error": peer_err, "peer_s": peer_s, "peer_C": peer_C,
                       "peak_rss_mb": _peak_rss_mb(), "load_1min": os.getloadavg()[0],
                       **extra}
                results["rows"].append(row)
                out_path.parent.mkdir(parents=True, exist_ok=True)
                write_results(out_path, results, indent=1)
                print(json.dumps(row), flush=True)
    return results


def fit_exponents(results):
    """Least-squares log-log exponents: compress and SVC-fit seconds against n_sv, n_train
    (per scheme, budget, method) and against the budget (per n_train, scheme, method)."""
    rows = results["rows"]
    out = {}
    for key, xname, yname in (("compress_vs_n_sv", "n_sv", "compress_s"),
                              ("svc_fit_vs_n_train", "n_train", "svc_fit_s"),
                              ("compress_vs_n_train", "n_train", "compress_s")):
        per = {}
        for r in rows:
            per.setdefault((r["scheme"], r["budget"], r["method"]), []).append(
                (r[xname], r[yname]))
        fits = {}
        for (scheme, budget, method), pts in per.items():
            pts = sorted(set(pts))
            if len({p[0] for p in pts}) < 2:
                continue
            lx, ly = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            slope = float(np.polyfit(lx, ly, 1)[0])
            fits[f"{scheme}/{budget}/{method}"] = {"exponent": slope, "n_points": len(pts)}
        out[key] = fits
    per = {}
    for r in rows:  # cost against the budget, at fixed training set and scheme
        per.setdefault((r["n_train"], r["scheme"], r["method"]), []).append(
            (r["budget"], r["compress_s"]))
    out["compress_vs_budget"] = {
        f"{n}/{scheme}/{method}": {
            "exponent": float(np.polyfit(np.log([p[0] for p in pts]),
                                         np.log([p[1] for p in pts]), 1)[0]),
            "n_points": len(pts)}
        for (n, scheme, method), pts in per.items() if len({p[0] for p in pts}) >= 2}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10000, 30000, 65619])
    p.add_argument("--schemes", default="ovr,ovo")
    p.add_argument("--budgets", type=int, nargs="+", default=[250, 1000])
    p.add_argument("--method", default="construct+refine",
                   choices=sorted([*METHODS, "compress"]))
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--fit", action="store_true", help="only fit the exponents of the rows")
    args = p.parse_args(argv)
    out_path = Path(args.out)
    if args.fit:
        results = json.loads(out_path.read_text())
    else:
        results = run(args.sizes, args.schemes.split(","), args.budgets, args.method, out_path)
    results["exponents"] = fit_exponents(results)
    write_results(out_path, results, indent=1)
    print(json.dumps(results["exponents"], indent=1))


if __name__ == "__main__":
    main()
