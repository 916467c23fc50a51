"""The torch backend on a GPU against numpy on the CPU, on the same machine and data.

Run only where a CUDA device exists (in this project: the device machine lent to some
sessions, 16 CPU cores beside one H100 or H200). On USPS with its one-vs-rest SVC
(``C = 10``, ``gamma = 1/128``, 7,291 training digits, 2,640 distinct SVs, 10 outputs):

* ``eval``: ``decision_function`` of the full expansion on the 2,007 test digits, best of
  ``--repeat`` runs (wall clock; the GPU timings synchronise before the clock stops and
  include the transfer of the test digits and of the decision values back), float64
  and float32, numpy with all the machine's cores and with one, torch on CUDA;
* ``construct``: the shared reduced-set construction to ``--budget`` vectors (phase 1)
  and construction + joint refine (phases 1 + 2), numpy (all cores) and torch on CUDA,
  with the objective ``||Psi - Psi'||^2`` and the test error of each result (one run
  each: these take tens of seconds).

The two engines differ by the rounding of their GEMMs (and, in phase 1, the float32
GEMMs of the fast Gaussian one-term step); the objectives and errors show whether that
matters. Writes ``benchmarks/results/gpu.json`` (or ``--out``) after every row.

Usage::

    SPARSEKM_DATA=... python benchmarks/bench_gpu.py --out $OUT/gpu.json
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

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "gpu.json"


def _sync():
    import torch
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _best(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        _sync()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None):
    import torch
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.svm import SVC
    from threadpoolctl import threadpool_info, threadpool_limits

    from sparsekm import KernelExpansion, datasets
    from sparsekm.config import config_context
    from sparsekm.interop import expansion_from_estimator
    from sparsekm.reduced_set import construct

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--budget", type=int, default=250)
    p.add_argument("--device", default="cuda",
                   help="torch device (cpu: a dry run of the script where no GPU is)")
    p.add_argument("--n-train", type=int, default=None,
                   help="first n training digits only (a dry run); default all 7,291")
    p.add_argument("--virtual", type=int, default=None, metavar="N",
                   help="instead of USPS: the first N of a seeded permutation of the "
                        "65,619 virtual USPS digits (as bench_reduce_at_scale.py), a "
                        "one-vs-one SVC, and only the phase-1 rows")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("bench_gpu.py needs a CUDA device (torch.cuda.is_available() is False)")
    out = Path(args.out)
    res = {"machine": {"gpu": (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                               else None), "torch": torch.__version__,
                       "numpy": np.__version__, "cpu_count": os.cpu_count(),
                       "processor": platform.processor(),
                       "blas": sorted({(i["internal_api"], i.get("architecture"),
                                        i["num_threads"]) for i in threadpool_info()
                                       if i["user_api"] == "blas"}),
                       "load_1min": os.getloadavg()[0]},
           "rows": []}

    def record(row):
        res["rows"].append(row)
        out.parent.mkdir(parents=True, exist_ok=True)
        write_results(out, res, indent=1)
        print(json.dumps(row), flush=True)

    res["machine"]["device"] = args.device
    if args.virtual:
        from sparsekm.multiclass import ovr_decision_function
        Xtr, ytr, Xte, yte = datasets.load_usps_virtual()
        idx = np.random.default_rng(0).permutation(len(Xtr))[:args.virtual]
        Xtr, ytr = Xtr[idx], ytr[idx]
        svc = SVC(C=10.0, gamma=1 / 128, cache_size=1000)
    else:
        Xtr, ytr, Xte, yte = datasets.load_usps()
        Xtr, ytr = Xtr[:args.n_train], ytr[:args.n_train]
        svc = OneVsRestClassifier(SVC(C=10.0, gamma=1 / 128))
    t = time.perf_counter()
    svc.fit(Xtr, ytr)
    record({"what": "svc_fit", "n_train": int(len(ytr)),
            "scheme": "ovo" if args.virtual else "ovr", "seconds": time.perf_counter() - t,
            "test_error": float(np.mean(svc.predict(Xte) != yte))})
    psi = expansion_from_estimator(svc)
    classes = svc.classes_

    def err(expansion):
        F = expansion.decision_function(Xte)
        if args.virtual:
            F = ovr_decision_function(F, len(classes))
        return float(np.mean(classes[np.argmax(F, 1)] != yte))

    if args.virtual:
        for backend in ("torch", "numpy"):
            t = time.perf_counter()
            r = construct(psi, args.budget, shared=True, random_state=0, backend=backend,
                          device=args.device if backend == "torch" else None)
            _sync()
            record({"what": "construct", "n_sv": int(psi.n_terms),
                    "backend": f"torch_{args.device}" if backend == "torch"
                    else "numpy_all_cores", "budget": args.budget,
                    "seconds": time.perf_counter() - t,
                    "objective": float(np.sum(r.objective)), "test_error": err(r.expansion)})
        return res

    # -- evaluation -------------------------------------------------------------------
    F64 = psi.decision_function(Xte)
    for dtype in ("float64", "float32"):
        Xd = Xte.astype(dtype)
        pd = KernelExpansion(psi.vectors.astype(dtype), psi.coef.astype(dtype), psi.kernel,
                             intercept=psi.intercept)
        row = {"what": "eval", "dtype": dtype, "n_terms": int(psi.n_terms),
               "n_samples": int(Xte.shape[0])}
        row["numpy_all_cores_s"] = _best(lambda: pd.decision_function(Xd), args.repeat)
        with threadpool_limits(1):
            row["numpy_1_core_s"] = _best(lambda: pd.decision_function(Xd), args.repeat)
        with config_context(device=args.device):
            pd.decision_function(Xd[:10], backend="torch")  # warm-up: context, kernels
            row["torch_s"] = _best(lambda: pd.decision_function(Xd, backend="torch"),
                                   args.repeat)
            Ft = np.asarray(pd.decision_function(Xd, backend="torch"), dtype=np.float64)
        row["max_abs_diff_vs_numpy_f64"] = float(np.max(np.abs(Ft - F64)))
        row["speedup_vs_all_cores"] = row["numpy_all_cores_s"] / row["torch_s"]
        record(row)

    # -- construction ------------------------------------------------------------------
    for refine in (False, True):
        for backend in ("numpy", "torch"):
            kw = dict(shared=True, refine=refine, random_state=0, backend=backend)
            if backend == "torch":
                kw["device"] = args.device
            t = time.perf_counter()
            r = construct(psi, args.budget, **kw)
            _sync()
            s = time.perf_counter() - t
            record({"what": "construct+refine" if refine else "construct",
                    "backend": f"torch_{args.device}" if backend == "torch" else "numpy_all_cores",
                    "budget": args.budget, "seconds": s,
                    "objective": float(np.sum(r.objective)),
                    "test_error": err(r.expansion)})
    return res


if __name__ == "__main__":
    main()
