"""Phase 1 of the shared construction before and after the 2026-11-27 changes (issue 25).

Two changes to the batched Gaussian fixed point of eq. 19
(:func:`sparsekm.reduced_set._one_term.one_term_gaussian`):

* **cycle damping**: a step that reverses the previous one without shrinking is halved
  (``_one_term._REVERSAL``; ``-2`` switches it off, the previous iteration). With
  coefficients of both signs the plain iteration can cycle between two points until
  ``max_iter`` (on the embedded digits' one-vs-rest machine at 250 vectors, 77 of 250
  greedy terms ran to ``max_iter = 200``);
* **row blocks**: the products with a one-vs-one machine's coefficients run block by
  block over the classes' runs of rows (``construction._ROW_BLOCKS``).

Both paths run in this one process, interleaved, on: the embedded digits and USPS
(one-vs-rest SVC, 250 vectors, as ``bench_fast_winners.py``), and the one-vs-one SVC on
the first 10^4 and 3*10^4 virtual USPS digits (as ``bench_reduce_at_scale.py``; 300
vectors). Each row: CPU seconds of phase 1 (``construct(..., shared=True)``, no refine),
its fixed-point iterations, objective ``sum_k ||Psi_k - Psi'_k||^2`` and test error, for
``--seeds`` seeds. Writes ``benchmarks/results/phase1.json``.

Usage::

    OMP_NUM_THREADS=1 nice python benchmarks/bench_phase1.py
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "phase1.json"


def _switch(after):
    from sparsekm.reduced_set import _one_term, construction
    _one_term._REVERSAL = -0.8 if after else -2.0
    construction._ROW_BLOCKS = after


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


def main(argv=None):
    from sparsekm.interop import expansion_from_estimator
    from sparsekm.multiclass import ovr_decision_function
    from sparsekm.reduced_set import construct

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="digits,usps,virtual_10000,virtual_30000")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    res = {"timing": "CPU seconds (time.process_time) of one process",
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cases": {}}
    for name in args.cases.split(","):
        svc, svc_s, Xte, yte, scheme, budget = _case(name)
        psi = expansion_from_estimator(svc)
        case = {"scheme": scheme, "budget": budget, "n_sv": int(psi.n_terms),
                "n_outputs": int(psi.n_outputs), "svc_fit_s": svc_s, "rows": []}
        for seed in range(args.seeds if not name.endswith("30000") else 1):
            for after in (False, True):
                _switch(after)
                t = time.process_time()
                r = construct(psi, budget, shared=True, random_state=seed)
                s = time.process_time() - t
                F = r.expansion.decision_function(Xte)
                if scheme == "ovo":
                    F = ovr_decision_function(F, len(svc.classes_))
                err = float(np.mean(svc.classes_[np.argmax(F, axis=1)] != yte))
                row = {"code": "after" if after else "before", "seed": seed, "seconds": s,
                       "n_iter": int(r.n_iter), "objective": float(np.sum(r.objective)),
                       "test_error": err, "load_1min": round(os.getloadavg()[0], 2)}
                case["rows"].append(row)
                print(name, json.dumps(row), flush=True)
        _switch(True)
        for code in ("before", "after"):
            rows = [r for r in case["rows"] if r["code"] == code]
            case[code] = {k: float(np.mean([r[k] for r in rows]))
                          for k in ("seconds", "n_iter", "objective", "test_error")}
        case["speedup"] = case["before"]["seconds"] / case["after"]["seconds"]
        res["cases"][name] = case
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
