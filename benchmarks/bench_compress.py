"""The default ``sparsekm.compress`` call against its peer: CPU time and test error (issue 39).

Data sets: the embedded digits, USPS, USPS-784, ``usps65k`` (USPS with virtual
examples, 65,619 training rows) and ``many26`` (the 26-class stand-in of
``bench_many_classes.py``, its SVC's gamma and C as its CV chose them). For each data set
and budget: the one-vs-one ``SVC`` to compress (fitted on the
training rows less a stratified validation split), the peer (Nystrom with k-means or
uniform landmarks + LinearSVC, landmark kind and C chosen on the same validation rows;
every fit counted), and the default call ``compress(svc, X_val, y_val, n_vectors=b,
X_train=X_fit, y_train=y_fit, random_state=0)``. The target: the call's CPU seconds at
most ``max(3 * max(SVC fit, peer), 30 s)``; its test error within one binomial standard
error of the best peer's or better. Nothing is chosen on the test rows.

All seconds are CPU seconds of this process (``time.process_time``), the thread pools as
the environment sets them (run it with ``OMP_NUM_THREADS=1`` on a shared machine); the
1-minute load average is recorded before and after each row. With ``--baseline SRC`` the
same call is also run by the sparsekm found in ``SRC`` (e.g. the main branch's ``src``)
in a subprocess, for the test error and CPU time of the previous ``compress``.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_compress.py --datasets digits --budgets 100,250

Each row also gives the ratio of the call's CPU seconds to ``max(SVC fit, peer)``
(``ratio_to_reference``, the peer's seconds being both landmark kinds' fits with their C
search), whether the CPU target and the test-error target are met, and the chosen and
reported candidates (``compress_rows``: status and reason, e.g. a candidate refused by the
work bound).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _benchutil import write_results  # noqa: E402
from bench_fast_winners import nystroem_peer  # noqa: E402  (the same peer)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "compress.json"
SEED = 0
VAL_FRACTION = 0.15


def _data(name):
    from sparsekm import datasets
    if name == "digits":
        return datasets.load_digits_default(), 1 / 32, 10.0
    if name == "usps":
        return datasets.load_usps(), 1 / 128, 10.0
    if name == "usps784":  # USPS zoomed to 28 x 28 (the settings of bench_fast_winners)
        return datasets.load_usps_784(), 1 / 128 * 256 / 784, 10.0
    if name == "usps65k":  # USPS with virtual examples: 65,619 training rows, 2,007 test
        return datasets.load_usps_virtual(), 1 / 128, 10.0
    if name == "many26":
        # the 26-class stand-in of bench_many_classes (make_classification, 16 features,
        # 12,000 training / 8,000 test points) with the SVC's gamma and C that its 3-fold CV
        # on the training rows chose at every seed (results/many_classes.json)
        from bench_many_classes import data
        return data(), 0.25, 10.0
    raise ValueError(f"unknown data set {name!r}")


def _split(Xtr, ytr):
    from sklearn.model_selection import train_test_split
    return train_test_split(Xtr, ytr, test_size=VAL_FRACTION, stratify=ytr,
                            random_state=SEED)


def _peer(kind, X_fit, y_fit, X_val, y_val, X_test, y_test, gamma, budget):
    """Nystrom (``kind`` landmarks) + LinearSVC, C on the validation rows: the peer of
    ``bench_fast_winners`` (and ``bench_many_classes``); CPU s of all fits and validation
    predictions."""
    return {"kind": kind, **nystroem_peer(X_fit, y_fit, X_val, y_val, X_test, y_test, gamma,
                                          budget, landmarks=kind, seed=SEED)}


_CALL = """
import json, sys, time, warnings
import numpy as np
from sklearn.svm import SVC
warnings.simplefilter("ignore")
import sparsekm
d = np.load(sys.argv[1])
svc = SVC(C=float(d["C"]), gamma=float(d["gamma"])).fit(d["X_fit"], d["y_fit"])
t = time.process_time()
small = sparsekm.compress(svc, d["X_val"], d["y_val"], n_vectors=int(d["b"]),
                          X_train=d["X_fit"], y_train=d["y_fit"], random_state=0)
secs = time.process_time() - t
print(json.dumps({"seconds": secs, "n_vectors": int(small.n_vectors_),
                  "method": small.compress_report_["rows"][small.compress_report_["chosen"]]["method"],
                  "test_error": float(np.mean(small.predict(d["X_test"]) != d["y_test"]))}))
"""


def _baseline(src, arrays, tmp):
    np.savez(tmp, **arrays)
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", _CALL, str(tmp)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _env():
    import sklearn
    from threadpoolctl import threadpool_info

    import sparsekm
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=ROOT,
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "unknown", None
    try:
        from numpy.lib._utils_impl import _opt_info
        cpu = _opt_info()
    except Exception:  # noqa: BLE001 - numpy versions differ
        try:
            from numpy.core._multiarray_umath import __cpu_features__
            cpu = " ".join(k for k, v in __cpu_features__.items() if v)
        except Exception:  # noqa: BLE001
            cpu = "unknown"
    return {"commit": commit, "src_dirty": dirty, "python": platform.python_version(),
            "numpy": np.__version__, "sklearn": sklearn.__version__,
            "sparsekm": getattr(sparsekm, "__version__", "?"), "machine": platform.machine(),
            "n_cpus": os.cpu_count(), "numpy_cpu_features": cpu,
            "blas": [{k: p.get(k) for k in ("internal_api", "version", "architecture",
                                             "num_threads")} for p in threadpool_info()],
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}


def run(name, budgets, baseline=None, on_row=None):
    from sklearn.svm import SVC

    import sparsekm
    warnings.simplefilter("ignore")
    (Xtr, ytr, Xte, yte), gamma, C = _data(name)
    X_fit, X_val, y_fit, y_val = _split(Xtr, ytr)
    rows = []
    for b in budgets:
        load0 = os.getloadavg()[0]
        t = time.process_time()
        svc = SVC(C=C, gamma=gamma).fit(X_fit, y_fit)
        svc_s = time.process_time() - t
        svc_err = float(np.mean(svc.predict(Xte) != yte))
        peers = [_peer(k, X_fit, y_fit, X_val, y_val, Xte, yte, gamma, b)
                 for k in ("kmeans", "uniform")]
        peer = min(peers, key=lambda p: (p["val_error"], p["kind"] != "kmeans"))
        peer_s = sum(p["seconds"] for p in peers)  # the kind is chosen too: both count
        t = time.process_time()
        small = sparsekm.compress(svc, X_val, y_val, n_vectors=b, X_train=X_fit,
                                  y_train=y_fit, random_state=SEED)
        secs = time.process_time() - t
        rep = small.compress_report_
        err = float(np.mean(small.predict(Xte) != yte))
        se = float(np.sqrt(peer["test_error"] * (1 - peer["test_error"]) / yte.size))
        ref = max(svc_s, peer_s)
        target = max(3 * ref, 30.0)
        row = {"dataset": name, "budget": b, "n_fit": int(y_fit.size), "n_val": int(y_val.size),
               "n_test": int(yte.size), "svc_n_sv": int(svc.support_.size),
               "svc_fit_s": svc_s, "svc_test_error": svc_err, "peers": peers,
               "peer_kind": peer["kind"], "peer_test_error": peer["test_error"],
               "peer_s": peer_s, "compress_s": secs, "compress_test_error": err,
               "compress_n_vectors": int(small.n_vectors_),
               "compress_method": rep["rows"][rep["chosen"]]["method"],
               "compress_rows": [{k: r[k] for k in ("method", "variant", "n_vectors",
                                                    "val_error", "status", "reason")}
                                 for r in rep["rows"]],
               "ratio_to_reference": secs / ref, "target_s": target,
               "cpu_target_met": bool(secs <= target),
               "test_error_vs_peer_se": (err - peer["test_error"]) / se if se > 0 else None,
               "error_target_met": bool(err <= peer["test_error"] + se + 1e-12),
               "load_1min_before": round(load0, 2),
               "load_1min_after": round(os.getloadavg()[0], 2)}
        if baseline:
            row["baseline"] = _baseline(baseline, {
                "X_fit": X_fit, "y_fit": y_fit, "X_val": X_val, "y_val": y_val,
                "X_test": Xte, "y_test": yte, "C": C, "gamma": gamma, "b": b},
                OUT.parent / f".bench_compress_{name}_{b}.npz")
            (OUT.parent / f".bench_compress_{name}_{b}.npz").unlink(missing_ok=True)
        print(json.dumps({k: v for k, v in row.items()
                          if k not in ("peers", "compress_rows")}), flush=True)
        rows.append(row)
        if on_row is not None:  # written as it goes: a long run keeps its finished rows
            on_row(row)
    return rows


_SLMC = """
import json, os, time, warnings
warnings.simplefilter("ignore")
from sparsekm import datasets
from sparsekm.kernels import RBF
from sparsekm.models import SLMC
Xtr, ytr, _, _ = datasets.load_digits_default()
t, w = time.process_time(), time.perf_counter()
m = SLMC(n_vectors=50, C=10, kernel=RBF(1 / 32), shared=True, random_state=0).fit(Xtr, ytr)
print(json.dumps({"cpu_s": time.process_time() - t, "wall_s": time.perf_counter() - w,
                  "n_iter": int(m.n_iter_[0]), "load_1min": os.getloadavg()[0]}))
"""


def slmc_threads(sources):
    """``SLMC(n_vectors=50)`` on the embedded digits with ``OMP_NUM_THREADS=1`` and with the
    environment's default, for each sparsekm ``src`` folder (e.g. main's and this one)."""
    rows = []
    for src in sources:
        for omp in ("1", None):
            env = {**os.environ, "PYTHONPATH": str(src)}
            env.pop("OMP_NUM_THREADS", None)
            if omp is not None:
                env["OMP_NUM_THREADS"] = omp
            out = subprocess.run([sys.executable, "-c", _SLMC], env=env, check=True,
                                 capture_output=True, text=True).stdout
            rows.append({"src": str(src), "OMP_NUM_THREADS": omp,
                         **json.loads(out.strip().splitlines()[-1])})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", default="digits")
    p.add_argument("--budgets", default="100,250")
    p.add_argument("--baseline", default=None, metavar="SRC",
                   help="also run the compress of the sparsekm in SRC (a src folder)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--slmc-threads", default=None, metavar="SRC,SRC",
                   help="instead: the SLMC's CPU time with one and with the default number "
                        "of BLAS threads, for each sparsekm src folder given")
    args = p.parse_args(argv)
    if args.slmc_threads:
        result = {"env": _env(), "protocol": slmc_threads.__doc__,
                  "rows": slmc_threads(args.slmc_threads.split(","))}
        write_results(args.out, result)
        print(f"wrote {args.out}")
        return
    budgets = [int(b) for b in args.budgets.split(",")]
    result = {"env": _env(), "protocol": __doc__, "rows": []}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)

    def on_row(row):
        result["rows"].append(row)
        write_results(args.out, result)

    for name in args.datasets.split(","):
        run(name, budgets, args.baseline, on_row)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
