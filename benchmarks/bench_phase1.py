"""Phase 1 of the shared construction before and after the 2026-11-27 changes (issue 25).

Two changes to the batched Gaussian fixed point of eq. 19
(:func:`sparsekm.reduced_set._one_term.one_term_gaussian`):

* **cycle damping**: a step that reverses the previous one without shrinking is halved.
  With coefficients of both signs the plain iteration can cycle between two points until
  ``max_iter`` (on the embedded digits' one-vs-rest machine at 250 vectors, 77 of 250
  greedy terms ran to ``max_iter = 200``);
* **row blocks**: the products with a one-vs-one machine's coefficients run block by
  block over the classes' runs of rows.

``before`` is the library at git ``--before-ref`` (default :data:`BEFORE_REF`, the commit
before both changes), run by this script in a second process on a temporary ``git
worktree`` of it (:func:`_benchutil.run_arm_at`); ``after`` is this checkout. Both arms
run the same measuring code, one after the other, on: the embedded digits and USPS
(one-vs-rest SVC, 250 vectors, as ``bench_fast_winners.py``), and the one-vs-one SVC on
the first 10^4 and 3*10^4 virtual USPS digits (as ``bench_reduce_at_scale.py``; 300
vectors). Each row: CPU seconds of phase 1 (``construct(..., shared=True)``, no refine),
its fixed-point iterations, objective ``sum_k ||Psi_k - Psi'_k||^2`` and test error, for
``--seeds`` seeds. Writes ``benchmarks/results/phase1.json``.

``--ida banana,image,titanic`` instead: the single-output case of the Wu et al. tables'
RS cells (Rätsch's SVM per IDA split 1-10, ``construct`` to 5 % of its SVs, seeds 0-2,
both codes), recording the construction's own objective ``||Psi - Psi'||^2 / ||Psi||^2``
(eq. 4) and the test error with the SVM's threshold; written under ``"ida"``.

Usage::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_phase1.py
    OMP_NUM_THREADS=1 nice python benchmarks/bench_phase1.py --ida banana,image,titanic
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import run_arm_at, write_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "phase1.json"
#: The "before" library: the parent of the commit that brought the cycle damping and the
#: row blocks (67c380e).
BEFORE_REF = "67c380e^"


def _case(name):
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC

    from sparsekm import datasets
    if name in ("digits", "usps"):
        Xtr, ytr, Xte, yte = (datasets.load_digits_default() if name == "digits"
                              else datasets.load_usps())
        gamma = 1 / 32 if name == "digits" else 1 / 128
        t = time.process_time()
        svc = OneVsRestClassifier(SVC(C=10.0, gamma=gamma)).fit(Xtr, ytr)
        return svc, time.process_time() - t, Xte, yte, "ovr", 250
    n = int(name.split("_")[1])
    X, y, Xte, yte = datasets.load_usps_virtual()
    idx = np.random.default_rng(0).permutation(len(X))[:n]
    t = time.process_time()
    svc = SVC(C=10.0, gamma=1 / 128, cache_size=1000).fit(X[idx], y[idx])
    return svc, time.process_time() - t, Xte, yte, "ovo", 300


def _ida_rows(name, ratio, n_seeds, C, sigma):
    """The single-output RS cells of one IDA set (splits 1-10) with this process's library."""
    import warnings

    from sklearn.svm import SVC

    from sparsekm.datasets import load_ida
    from sparsekm.interop import expansion_from_estimator
    from sparsekm.reduced_set import construct
    rows = []
    for split in range(1, 11):
        Xtr, ytr, Xte, yte = load_ida(name, split)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svc = SVC(C=C, gamma=1.0 / sigma).fit(Xtr, ytr)
        psi = expansion_from_estimator(svc)
        n_z = max(1, int(round(ratio * psi.n_terms)))
        for seed in range(n_seeds):
            r = construct(psi, n_z, random_state=seed)
            f = r.expansion.decision_function(Xte) + svc.intercept_[0]
            rows.append({"split": split, "seed": seed, "n_z": n_z,
                         "objective_rel": float(np.sum(r.objective) / np.sum(r.norm2)),
                         "test_error": float(np.mean(np.where(f >= 0, 1, -1) != yte))})
    return rows


def _case_rows(name, n_seeds):
    """Phase 1 on one case for ``n_seeds`` seeds with this process's library."""
    from sparsekm.interop import expansion_from_estimator
    from sparsekm.multiclass import ovr_decision_function
    from sparsekm.reduced_set import construct

    svc, svc_s, Xte, yte, scheme, budget = _case(name)
    psi = expansion_from_estimator(svc)
    case = {"scheme": scheme, "budget": budget, "n_sv": int(psi.n_terms),
            "n_outputs": int(psi.n_outputs), "svc_fit_s": svc_s, "rows": []}
    for seed in range(n_seeds):
        t = time.process_time()
        r = construct(psi, budget, shared=True, random_state=seed)
        s = time.process_time() - t
        F = r.expansion.decision_function(Xte)
        if scheme == "ovo":
            F = ovr_decision_function(F, len(svc.classes_))
        err = float(np.mean(svc.classes_[np.argmax(F, axis=1)] != yte))
        case["rows"].append({"seed": seed, "seconds": s, "n_iter": int(r.n_iter),
                             "objective": float(np.sum(r.objective)), "test_error": err,
                             "load_1min": round(os.getloadavg()[0], 2)})
        print(name, json.dumps(case["rows"][-1]), file=sys.stderr, flush=True)
    return case


def _one_arm(spec):
    """The rows of one arm (run in the "before" process): JSON on the last line."""
    if spec["kind"] == "ida":
        rows = _ida_rows(spec["name"], spec["ratio"], spec["seeds"], spec["C"], spec["sigma"])
        print(json.dumps({"rows": rows}))
    else:
        print(json.dumps(_case_rows(spec["name"], spec["seeds"])))


def _both(spec, before_ref):
    """(before, after): the arm at ``before_ref`` in its own process, then this checkout's."""
    before = run_arm_at(before_ref, __file__, ["--one-arm", json.dumps(spec)])
    after = (_ida_rows(spec["name"], spec["ratio"], spec["seeds"], spec["C"], spec["sigma"])
             if spec["kind"] == "ida" else _case_rows(spec["name"], spec["seeds"]))
    return before, after


def _ida(name, ratio, n_seeds, before_ref):
    """Both codes on the single-output RS cells of one IDA set (splits 1-10)."""
    from sparsekm.datasets import IDA_SVM_PARAMS
    C, sigma = IDA_SVM_PARAMS[name]
    spec = {"kind": "ida", "name": name, "ratio": ratio, "seeds": n_seeds, "C": C,
            "sigma": sigma}
    before, after = _both(spec, before_ref)
    rows = ([{**r, "code": "before", "commit": before["commit"]} for r in before["rows"]]
            + [{**r, "code": "after"} for r in after])
    out = {"ratio": ratio, "rows": rows}
    for code in ("before", "after"):
        sel = [r for r in rows if r["code"] == code]
        out[code] = {k: float(np.mean([r[k] for r in sel])) for k in ("objective_rel",
                                                                        "test_error")}
    # the same (split, seed) cell of both codes
    b = np.array([r["objective_rel"] for r in before["rows"]])
    a = np.array([r["objective_rel"] for r in after])
    out["after_lower_objective"] = int(np.sum(a < b * (1 - 1e-9)))
    out["after_higher_objective"] = int(np.sum(a > b * (1 + 1e-9)))
    print(name, json.dumps({k: v for k, v in out.items() if k != "rows"}), flush=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="digits,usps,virtual_10000,virtual_30000")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--ida", default=None, help="comma-separated IDA sets (see above)")
    p.add_argument("--ratio", type=float, default=0.05)
    p.add_argument("--before-ref", default=BEFORE_REF)
    p.add_argument("--one-arm", default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    if args.one_arm:
        return _one_arm(json.loads(args.one_arm))
    out = Path(args.out)
    if args.ida:
        res = json.loads(out.read_text()) if out.exists() else {}
        res["ida"] = {name: _ida(name, args.ratio, args.seeds, args.before_ref)
                      for name in args.ida.split(",")}
        out.parent.mkdir(parents=True, exist_ok=True)
        write_results(out, res, indent=1)
        return res
    res = json.loads(out.read_text()) if out.exists() else {}
    res = {"ida": res["ida"]} if "ida" in res else {}
    res |= {"timing": "CPU seconds (time.process_time) of one process per arm",
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cases": {}}
    for name in args.cases.split(","):
        n_seeds = args.seeds if not name.endswith("30000") else 1
        before, after = _both({"kind": "case", "name": name, "seeds": n_seeds},
                              args.before_ref)
        case = {k: after[k] for k in ("scheme", "budget", "n_sv", "n_outputs", "svc_fit_s")}
        case["rows"] = ([{"code": "before", "commit": before["commit"], **r}
                         for r in before["rows"]]
                        + [{"code": "after", **r} for r in after["rows"]])
        for code in ("before", "after"):
            rows = [r for r in case["rows"] if r["code"] == code]
            case[code] = {k: float(np.mean([r[k] for r in rows]))
                          for k in ("seconds", "n_iter", "objective", "test_error")}
        case["speedup"] = case["before"]["seconds"] / case["after"]["seconds"]
        res["cases"][name] = case
        out.parent.mkdir(parents=True, exist_ok=True)
        write_results(out, res, indent=1)
    return res


if __name__ == "__main__":
    main()
